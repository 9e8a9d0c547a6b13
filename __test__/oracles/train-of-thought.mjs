// @ts-check
/**
 * @module __test__/oracles/train-of-thought
 * What the model needs after a compaction, read from the recorded trajectory around it, and
 * whether the post-compaction context (the checkpoint and the tail it kept) has it. The oracle of
 * issue 30 item 3, written INDEPENDENTLY of the checkpoint's code: nothing here imports or
 * mirrors `crates/fold-core/src` or `plugin/compaction`. The compaction test
 * (`__test__/compaction/train-of-thought.test.mjs`) and `bench/compaction.mjs` grade with it.
 *
 * - **Latest intent**: the model's last text before the cut (the last assistant message of the
 *   replaced range with text; its text blocks joined). It is *carried* when the context holds it
 *   verbatim (runs of whitespace compared as one space): the whole text when it is at most
 *   `INTENT_WHOLE` chars, else its first and its last `INTENT_END` chars (a long text's opening
 *   says what it is about, its end what comes next). Code blocks count like prose.
 * - **Names**: the identifiers, paths and symbols the model itself wrote — in its texts and in
 *   its call arguments (every string value: a command, a path, an edit's body) — of these shapes:
 *   a path token (rooted — `/tmp/x`, `./a`, `~/b` — or with two slashes, or ending in a
 *   file extension: `src/a.py`) or a file name with an extension (`setup.cfg`); a snake-case name (`_parse_header`, `MAX_LEN`); a camel-case name
 *   (`parseHeader`, `FoldError`, `HTTPServer`); a qualified name (`self.mask`, `np.ndarray`,
 *   `Foo::bar`); a one-token code span in its text (`` `mask` ``). At least 4 chars, with a
 *   letter; not a number, a version or a URL.
 * - **Names in play**: of the names the model wrote in the replaced range, those it writes again
 *   in its next `NEXT_MESSAGES` assistant messages after the compaction (what it really did
 *   next). Each is *present* when the context has it as a whole token (no letter, digit or `_`
 *   on either side).
 * - The context: the checkpoint's text and the model-visible text of the kept tail (texts, call
 *   arguments as written, tool outputs).
 */

/** A text at most this long is carried only whole. */
export const INTENT_WHOLE = 600
/** Of a longer text, its first and last this many chars must be carried. */
export const INTENT_END = 300
/** How many of the model's next messages say what it needed. */
export const NEXT_MESSAGES = 6

/** Runs of whitespace as one space, trimmed. @param {string} s */
const squash = (s) => s.replace(/\s+/g, ' ').trim()

/** The text blocks of a message, joined. @param {any} message */
export const textOfMessage = (message) =>
  (message?.content ?? [])
    .filter((/** @type {any} */ b) => b?.type === 'text')
    .map((/** @type {any} */ b) => b.text)
    .join('\n')

/**
 * The model's last text in `messages` (model order), or `undefined` when none has text.
 * @param {any[]} messages
 */
export function latestText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
    if (m?.role !== 'assistant') continue
    const text = textOfMessage(m).trim()
    if (text) return text
  }
  return undefined
}

/**
 * Whether `context` carries `text` (see the module docs).
 * @param {string} text @param {string} context
 */
export function intentCarried(text, context) {
  const t = squash(text)
  const c = squash(context)
  if (t.length <= INTENT_WHOLE) return c.includes(t)
  return c.includes(t.slice(0, INTENT_END).trim()) && c.includes(t.slice(-INTENT_END).trim())
}

const EXT = 'py|pyi|pyx|rs|toml|lock|json|jsonl|js|mjs|cjs|ts|tsx|jsx|md|rst|txt|ini|cfg|yml|yaml|sh|c|h|cc|cpp|hpp|go|mod|sum|java|kt|rb|php|cs|html|css|sql|xml|csv|log|out|diff|patch|in'
const SLASHED = /(?<![\w.\/~@+:-])(?:~\/|\.{1,2}\/|\/)?[\w@+.-]+(?:\/[\w@+.-]+)+\/?/g
const FILE = new RegExp(`(?<![\\w.\\/~@+-])[A-Za-z_][\\w-]*\\.(?:${EXT})(?![\\w/])`, 'g')
const SNAKE = /\b_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*\b|\b_{1,2}[A-Za-z][A-Za-z0-9]*_{0,2}\b/g
const CAMEL = /\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b/g
const QUALIFIED = /\b[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+\b/g
const SPAN = /`([^`\s]{3,80})`/g
const NOT_A_NAME = /^(?:https?|ftp|file|www)[:.]|^\d[\d.]*$|^v?\d+(?:\.\d+)+|^(?:e\.g|i\.e|etc)$/i

/** @param {string} tok @param {Set<string>} out */
function add(tok, out) {
  const t = tok.replace(/^[,;:]+|[.,;:/]+$/g, '')
  if (t.length < 4 || !/[A-Za-z]/.test(t) || NOT_A_NAME.test(t)) return
  out.add(t)
}

/** A path token: rooted (`/`, `./`, `../`, `~/`), with two slashes, or a file name with an extension. @param {string} tok */
function pathLike(tok) {
  const t = tok.replace(/[.\-/]+$/, '')
  const last = t.slice(t.lastIndexOf('/') + 1)
  return /^(?:\/|\.{1,2}\/|~\/)/.test(t) || t.split('/').length > 2 || new RegExp(`\\.(?:${EXT})$`).test(last)
}

/**
 * The names of one string the model wrote.
 * @param {string} s @param {boolean} prose the model's text (code spans count)
 * @param {Set<string>} out
 */
function namesOfString(s, prose, out) {
  const plain = s.replace(/\b(?:https?|ftp):\/\/\S+/g, ' ')
  for (const [m] of plain.matchAll(SLASHED)) if (pathLike(m)) add(m, out)
  for (const re of [FILE, SNAKE, CAMEL, QUALIFIED]) for (const [m] of plain.matchAll(re)) add(m, out)
  if (prose) for (const [, m] of plain.matchAll(SPAN)) add(m, out)
}

/** @param {any} v @param {Set<string>} out */
function namesOfValue(v, out) {
  if (typeof v === 'string') namesOfString(v, false, out)
  else if (Array.isArray(v)) v.forEach((x) => namesOfValue(x, out))
  else if (v && typeof v === 'object') Object.values(v).forEach((x) => namesOfValue(x, out))
}

/**
 * The names the model wrote in `messages` (its assistant messages: texts and call arguments).
 * @param {any[]} messages @returns {Set<string>}
 */
export function namesOf(messages) {
  /** @type {Set<string>} */
  const out = new Set()
  for (const m of messages) {
    if (m?.role !== 'assistant') continue
    for (const b of m.content ?? []) {
      if (b.type === 'text') namesOfString(b.text, true, out)
      else if (b.type === 'tool-call') {
        let args = b.arguments
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args)
          } catch {
            // Raw arguments: scanned as the string they are.
          }
        }
        namesOfValue(args, out)
      }
    }
  }
  return out
}

/**
 * Whether `name` occurs in `context` as a whole token.
 * @param {string} name @param {string} context
 */
export function namePresent(name, context) {
  const word = /[A-Za-z0-9_]/
  for (let i = context.indexOf(name); i !== -1; i = context.indexOf(name, i + 1)) {
    const before = i === 0 ? '' : context[i - 1]
    const after = context[i + name.length] ?? ''
    if (!word.test(before) && !word.test(after)) return true
  }
  return false
}

/**
 * The model-visible text of messages: texts, call arguments as written, tool outputs.
 * @param {any[]} messages
 */
export function visibleText(messages) {
  const parts = []
  /** @param {any[]} blocks */
  const walk = (blocks) => {
    for (const b of blocks ?? []) {
      if (b.type === 'text') parts.push(b.text)
      else if (b.type === 'tool-call') parts.push(`${b.name} ${typeof b.arguments === 'string' ? b.arguments : JSON.stringify(b.arguments)}`)
      else if (b.type === 'tool-result') walk(b.content)
    }
  }
  for (const m of messages) walk(m.content)
  return parts.join('\n')
}

/** The note a later checkpoint appends to the heading of condensed work it carries again. */
const CARRIED_NOTE = /(?: \(condensed earlier(?:; recall returns its lines)?\)|（之前已压缩(?:；recall 可取回原文)?）)+$/m

/**
 * The chars of a checkpoint's text that are its own: its parts (split before each `### `
 * heading line) that no earlier checkpoint of the range holds as written (a carried part of
 * condensed work counts as carried with its heading's note taken off).
 * @param {string} text @param {string[]} earlier the texts of the earlier checkpoints in the range
 */
export function ownChars(text, earlier) {
  let own = 0
  for (const part of text.split(/\n(?=### )/)) {
    const plain = part.replace(CARRIED_NOTE, '')
    const nl = plain.indexOf('\n')
    const [head, body] = nl < 0 ? [plain, ''] : [plain.slice(0, nl), plain.slice(nl + 1)]
    if (!earlier.some((t) => t.includes(head) && t.includes(body))) own += part.length
  }
  return own
}

/**
 * One compaction graded against what the model did next.
 * @param {{range: any[], carried: any[], context: any[], next: any[], rangeTokens: number}} input
 *   `range`: the replaced range's own messages (not those an earlier checkpoint in it carries);
 *   `carried`: the earlier checkpoints in the range; `context`: the messages the model sees after
 *   the compaction (the checkpoint first, then the kept tail); `next`: the model's next assistant
 *   messages as recorded; `rangeTokens`: the range's price
 * @param {(message: any) => number} estimate the host meter's price of a message
 */
export function gradeCompaction({ range, carried, context, next, rangeTokens }, estimate) {
  const text = visibleText(context)
  const tail = visibleText(context.slice(1))
  const checkpoint = visibleText(context.slice(0, 1))
  const latest = latestText(range)
  const wrote = namesOf(range)
  const again = namesOf(next.filter((m) => m?.role === 'assistant').slice(0, NEXT_MESSAGES))
  const needed = [...again].filter((n) => wrote.has(n))
  const beyondTail = needed.filter((n) => !namePresent(n, tail))
  const earlierTokens = carried.reduce((n, m) => n + estimate(m), 0)
  const own = ownChars(checkpoint, carried.map((m) => visibleText([m])))
  return {
    intent: latest === undefined ? undefined : { text: latest, carried: intentCarried(latest, text) },
    names: { needed, missing: needed.filter((n) => !namePresent(n, text)), beyondTail, beyondTailMissing: beyondTail.filter((n) => !namePresent(n, checkpoint)) },
    size: { checkpointTokens: estimate(context[0]), rangeTokens, ownTokens: Math.ceil(own / 4), newRangeTokens: rangeTokens - earlierTokens },
  }
}

/**
 * The figures over a session's compactions: latest intent carried, names in play present (and,
 * of those the tail does not hold, the checkpoint's share), the checkpoint over its range
 * (median) and its own part over the range's new part (median).
 * @param {ReturnType<typeof gradeCompaction>[]} graded
 */
export function trainFigures(graded) {
  const median = (/** @type {number[]} */ xs) => {
    const v = [...xs].sort((a, b) => a - b)
    return v.length ? v[Math.floor((v.length - 1) / 2)] : NaN
  }
  const withIntent = graded.filter((g) => g.intent)
  const count = (/** @type {(g: ReturnType<typeof gradeCompaction>) => number} */ f) => graded.reduce((n, g) => n + f(g), 0)
  return {
    compactions: graded.length,
    intent: { carried: withIntent.filter((g) => g.intent?.carried).length, total: withIntent.length },
    names: { present: count((g) => g.names.needed.length - g.names.missing.length), total: count((g) => g.names.needed.length) },
    beyondTail: { present: count((g) => g.names.beyondTail.length - g.names.beyondTailMissing.length), total: count((g) => g.names.beyondTail.length) },
    ratio: median(graded.map((g) => g.size.checkpointTokens / g.size.rangeTokens)),
    ownRatio: median(graded.filter((g) => g.size.newRangeTokens > 0).map((g) => g.size.ownTokens / g.size.newRangeTokens)),
  }
}
