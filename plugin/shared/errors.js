/**
 * @module plugin/shared/errors
 * How a dsh-fold failure reads to the model: the stable code first, then what happened,
 * then what to do next. The code is the contract; the advice is for the model.
 */
import { addon } from './addon.js'

/** @type {Record<string, string>} */
const NEXT_STEP = {
  NO_CHECKPOINT: 'Call `checkpoint` before an investigation, then `rewind` when it is done.',
  EMPTY_REGION: 'There is nothing to fold; continue, and call `checkpoint` before the next investigation.',
  UNBALANCED: 'Let the pending tool call finish, then call `rewind` again.',
  FOLD_IN_PROGRESS: 'A fold of this session is already running; do not call `rewind` again for it.',
  CHANGED: 'The context changed during the fold; call `rewind` again.',
  SHRINK: 'The exploration is already short; continue without folding it.',
  SUMMARIZE_FAILED: 'The report could not be written; call `rewind` again, or continue and fold later.',
  ABORTED: 'The fold was cancelled; nothing changed.',
  COMPACTION_BUSY: 'Another compaction of this session is still running; call `rewind` again once it has finished.',
  INTERNAL: 'This is a defect of dsh-fold, not of your call; nothing changed. Continue without folding.',
}

/** How many items a message lists before it says "and N more". */
const LISTED = 12

/**
 * A value the model sent, for an error message: JSON, cut to its first 40 characters, so a
 * message never grows with what it names.
 * @param {unknown} value
 */
export function brief(value) {
  let text
  try {
    text = typeof value === 'string' ? JSON.stringify(value.slice(0, 41)) : JSON.stringify(value)
  } catch {
    // A BigInt or a cycle: its type says enough.
    text = undefined
  }
  text ??= typeof value
  return text.length > 42 ? `${text.slice(0, 40)}…` : text
}

/**
 * `items` joined with ", ", at most 12 of them, then "and N more".
 * @param {readonly unknown[]} items @param {(item: any) => string} [show]
 */
export function listed(items, show = String) {
  const shown = items.slice(0, LISTED).map(show).join(', ')
  return items.length > LISTED ? `${shown} and ${items.length - LISTED} more` : shown
}

/** Whether `e` is a dsh-fold error (an `Error` with one of the addon's codes). */
export const isRewindError = (/** @type {unknown} */ e) => addon.isFoldError(e)

/**
 * A classified rewind failure, as the reference exports it: `code` is the stable contract
 * (`NO_CHECKPOINT`, `EMPTY_REGION`, `UNBALANCED`, `FOLD_IN_PROGRESS`, `CHANGED`, `SHRINK`, and
 * dsh-fold's own: `SUMMARIZE_FAILED`, `ABORTED`, `HOST_FAILED`, `STORE_*`, `INVALID_ARGUMENT`).
 * The addon builds its errors natively (`name` 'FoldError'); they are instances of this class
 * too (`instanceof` asks `isRewindError`), so `e instanceof RewindError` holds for every coded
 * rejection of `ctx.rewind` and `ctx.checkpoint`.
 */
export class RewindError extends Error {
  /** @param {string} code @param {string} message @param {ErrorOptions} [options] */
  constructor(code, message, options) {
    super(message, options)
    this.name = 'RewindError'
    /** @readonly */
    this.code = code
  }

  /** @param {unknown} value */
  static [Symbol.hasInstance](value) {
    return Function.prototype[Symbol.hasInstance].call(this, value) || (this === RewindError && isRewindError(value))
  }
}

/**
 * The `Error` a tool throws for a failure, so the model reads `CODE: what happened. What to do.`
 * `render` writes that text (the fold rows' is `failureText` of `plugin/fold/words.js`: in the
 * configured names and language, with the checkpoint's state); without it, the error's own message
 * and the generic next step of its code. The error keeps its `code` and has the original as `cause`.
 * @param {unknown} e
 * @param {(err: Error & {code: string}) => string} [render]
 */
export function toToolError(e, render) {
  if (!isRewindError(e)) return e
  const err = /** @type {Error & {code: string}} */ (e)
  let text
  if (render) text = render(err)
  else {
    const next = NEXT_STEP[err.code]
    // The addon's messages end without a full stop; without one the next step runs into them.
    const what = /[.!?。]$/.test(err.message) ? err.message : `${err.message}.`
    text = `${err.code}: ${what}${next ? ` ${next}` : ''}`
  }
  const tool = new Error(text, { cause: err })
  Object.assign(tool, { code: err.code })
  return tool
}
