/**
 * @module plugin/recall/log
 * What a session's own log says was folded, for the `recall` tool. The append-only log keeps
 * every original event; a fold only appends a replacement `user/message` whose
 * `sourceEventSeqs` name what it shadowed. Two producers are recalled:
 *
 * - a rewind fold: source `{kind:'plugin', plugin:'rewind', markId}`, sources = the folded
 *   surface nodes in model order;
 * - a block commit: source `{kind:'plugin', plugin:'compact', compactionId, blockPtc:
 *   {remaining, closed, requestSeq}}`, sources = `[compaction/start, compaction/summary,
 *   ...shadowed]`;
 * - a compaction by any backend (dsh-fold/compaction, DSH's compaction-basic, another): a
 *   replacement whose source is DSH's compaction checkpoint (`plugin: 'compact'`) without
 *   `blockPtc`, named by its `compactionId`, sources as a block commit's.
 *
 * A region's original messages are its sources that are messages, in order, with every nested
 * fold, block summary or compaction among them opened up into its own originals (recursively;
 * in a compaction's region, a rewind report or block summary it took in is also read as
 * written, before its originals):
 * a block closed in two steps (`S[B] C B --[B]--> T`) recalls B's early messages from inside
 * `S`, and a compaction that took an earlier one in recalls what that one replaced. Any other
 * replacement is kept as the message it is.
 *
 * The index is built once per session and caught up incrementally, like `surface.js`; it
 * reads only `eventLog(session)` — never another session, never a file.
 */
import { eventLog, isRewindReportSource } from '../shared/surface.js'

const MESSAGE_TYPES = new Set(['user/message', 'assistant/message', 'tool/result'])

/**
 * @typedef {object} FoldedRegion
 * @property {'fold' | 'block' | 'compaction'} kind
 * @property {number} seq the replacement's seq
 * @property {number[]} sources its `sourceEventSeqs`
 * @property {number} [markId] a fold's mark
 * @property {string[]} [closed] a block commit's closed ids
 * @property {string[]} [remaining] a block commit's inherited ids
 * @property {string} [compactionId] a compaction's id
 * @property {boolean} [ours] a compaction written by dsh-fold/compaction
 */

/** A block commit's source (what `plugin/block/block.js` writes). @param {any} source */
export function isBlockCommitSource(source) {
  return (
    typeof source === 'object' &&
    source !== null &&
    source.kind === 'plugin' &&
    source.plugin === 'compact' &&
    typeof source.blockPtc === 'object' &&
    source.blockPtc !== null
  )
}

/** A compaction checkpoint of any backend (DSH's marker), not a block commit. @param {any} source */
export function isCompactionSource(source) {
  return typeof source === 'object' && source !== null && source.kind === 'plugin' && source.plugin === 'compact' && !isBlockCommitSource(source)
}

/** @param {unknown} v @returns {string[]} */
const strings = (v) => (Array.isArray(v) ? v.filter((x) => typeof x === 'string') : [])

class LogIndex {
  size = 0
  /** @type {FoldedRegion[]} in log order */
  regions = []
  /** @type {Map<number, FoldedRegion>} replacement seq → region */
  bySeq = new Map()
  /** @type {Map<string, string>} tool call id → tool name */
  callNames = new Map()

  /** @param {readonly any[]} log */
  catchUp(log) {
    for (let seq = this.size; seq < log.length; seq++) this.describe(log[seq])
    this.size = log.length
  }

  /** @param {any} event */
  describe(event) {
    if (event.type === 'assistant/message') {
      for (const block of event.data?.message?.content ?? []) {
        if (block?.type === 'tool-call' && typeof block.id === 'string') this.callNames.set(block.id, block.name)
      }
      return
    }
    if (event.type !== 'user/message' || event.surfaceOp?.op !== 'replace' || !Array.isArray(event.sourceEventSeqs)) return
    const source = event.data?.source
    /** @type {FoldedRegion | undefined} */
    let region
    if (isRewindReportSource(source) && Number.isSafeInteger(source.markId)) {
      region = { kind: 'fold', seq: event.seq, sources: [...event.sourceEventSeqs], markId: source.markId }
    } else if (isBlockCommitSource(source)) {
      const { closed, remaining } = source.blockPtc
      region = { kind: 'block', seq: event.seq, sources: [...event.sourceEventSeqs], closed: strings(closed), remaining: strings(remaining) }
    } else if (isCompactionSource(source)) {
      const compactionId = typeof source.compactionId === 'string' ? source.compactionId : `seq-${event.seq}`
      region = { kind: 'compaction', seq: event.seq, sources: [...event.sourceEventSeqs], compactionId, ours: typeof source.foldCompaction === 'object' && source.foldCompaction !== null }
    }
    if (!region) return
    this.regions.push(region)
    this.bySeq.set(event.seq, region)
  }
}

/** @type {WeakMap<object, LogIndex>} */
const cache = new WeakMap()

/**
 * The session's log index, caught up to the log's end.
 * @param {any} session
 */
export function logIndex(session) {
  let index = cache.get(session)
  if (!index) cache.set(session, (index = new LogIndex()))
  index.catchUp(eventLog(session))
  return index
}

/**
 * The seqs of a region's original messages, in model order (nested folds and block summaries
 * opened up; non-message sources such as a commit's `compaction/*` events left out).
 * @param {any} session @param {FoldedRegion} region
 * @returns {number[]}
 */
export function originalSeqs(session, region) {
  const log = eventLog(session)
  const index = logIndex(session)
  /** @type {number[]} */
  const out = []
  const seen = new Set()
  /** @param {number[]} sources */
  const walk = (sources) => {
    for (const seq of sources) {
      const event = log[seq]
      if (!event || seen.has(seq) || !MESSAGE_TYPES.has(event.type)) continue
      seen.add(seq)
      const nested = index.bySeq.get(seq)
      // In a compaction, a rewind report or block summary it took in is the model's own text,
      // carried into the summary as written: it is read back as written too, then opened into
      // what it replaced. (A fold or block region reads only originals; a nested compaction
      // summary's carried parts are the very messages it opens into.)
      if (nested && region.kind === 'compaction' && nested.kind !== 'compaction') out.push(seq)
      if (nested) walk(nested.sources)
      else out.push(seq)
    }
  }
  walk(region.sources)
  return out
}

/**
 * @typedef {object} RecallText
 * @property {number} seq the event it comes from
 * @property {string} label what it is: `assistant text`, `assistant reasoning`, `read call`,
 *   `read result`, `bash result (error)`, `user message`, ...
 * @property {string} text the exact model-visible text (call arguments as written)
 */

/**
 * The texts of a region's original messages, in model order: one per text, reasoning and
 * tool-call block of an assistant message, one per tool result and per user message.
 * @param {any} session @param {FoldedRegion} region
 * @returns {RecallText[]}
 */
export function regionTexts(session, region) {
  const log = eventLog(session)
  const { callNames } = logIndex(session)
  /** @type {RecallText[]} */
  const out = []
  for (const seq of originalSeqs(session, region)) {
    const event = log[seq]
    const message = session.deriveEventMessage(event)
    if (!message) continue
    for (const block of message.content ?? []) {
      switch (block?.type) {
        case 'text':
          out.push({ seq, label: event.type === 'assistant/message' ? 'assistant text' : userLabel(message), text: block.text })
          break
        case 'reasoning':
          out.push({ seq, label: 'assistant reasoning', text: block.text })
          break
        case 'tool-call':
          out.push({ seq, label: `${block.name} call`, text: typeof block.arguments === 'string' ? block.arguments : JSON.stringify(block.arguments ?? {}) })
          break
        case 'tool-result': {
          const name = callNames.get(block.toolCallId) ?? 'tool'
          out.push({ seq, label: `${name} result${block.isError ? ' (error)' : ''}`, text: resultText(block.content) })
          break
        }
      }
    }
  }
  return out
}

/** @param {any} message */
function userLabel(message) {
  const source = message.source
  if (source?.kind === 'plugin' && typeof source.plugin === 'string') return `${source.plugin} message`
  if (typeof source?.kind === 'string' && source.kind !== 'user') return `${source.kind} message`
  return 'user message'
}

/** A tool result's text parts, joined by newlines. @param {any} content */
function resultText(content) {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .map((/** @type {any} */ b) => (typeof b?.text === 'string' ? b.text : b?.type === 'tool-result' ? resultText(b.content) : ''))
    .filter((t) => t !== '')
    .join('\n')
}
