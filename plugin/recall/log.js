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
 * A region's original messages are the messages it cites, in order, with every nested fold,
 * block summary or compaction among them opened up into its own originals (recursively; in a
 * compaction's region, a rewind report or block summary it took in is also read as written,
 * before its originals): a block closed in two steps (`S[B] C B --[B]--> T`) recalls B's early
 * messages from inside `S`, and a compaction that took an earlier one in recalls what that one
 * replaced. Any other replacement (a pruner's rewrite) is kept as the message it is.
 *
 * The listing is the session mirror's (`../shared/mirror.js`: its history of replacements, kept
 * as they are appended, each with the message events it cites); a compaction's id and producer
 * and the texts are read from `eventLog(session)` — never another session, never a file.
 */
import { attachmentLine, isAttachment } from '../shared/attachments.js'
import { withLog } from '../shared/mirror.js'
import { eventLog } from '../shared/session.js'

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

/**
 * @typedef {object} FoldedRegion
 * @property {'fold' | 'block' | 'compaction'} kind
 * @property {number} seq the replacement's seq
 * @property {number[]} sources the message events it cites
 * @property {number} [markId] a fold's mark
 * @property {string[]} [closed] a block commit's closed ids
 * @property {string[]} [remaining] a block commit's inherited ids
 * @property {string} [compactionId] a compaction's id
 * @property {boolean} [ours] a compaction written by dsh-fold/compaction
 */

/**
 * The session's folded and compacted regions, in log order (from its mirror's history of
 * replacements), and each by its replacement's seq.
 * @param {any} session
 * @returns {{regions: FoldedRegion[], bySeq: Map<number, FoldedRegion>}}
 */
export function logIndex(session) {
  const listed = withLog(session).native.replacements() ?? []
  const log = eventLog(session)
  /** @type {FoldedRegion[]} */
  const regions = []
  for (const r of listed) {
    if (r.kind === 'fold') regions.push({ kind: 'fold', seq: r.seq, sources: Array.from(r.sources), markId: r.markId ?? undefined })
    else if (r.kind === 'block') regions.push({ kind: 'block', seq: r.seq, sources: Array.from(r.sources), closed: r.closed ?? [], remaining: r.remaining ?? [] })
    else if (r.kind === 'compaction') {
      const source = log[r.seq]?.data?.source
      if (!isCompactionSource(source)) continue
      const compactionId = typeof source.compactionId === 'string' ? source.compactionId : `seq-${r.seq}`
      const ours = typeof source.foldCompaction === 'object' && source.foldCompaction !== null
      regions.push({ kind: 'compaction', seq: r.seq, sources: Array.from(r.sources), compactionId, ours })
    }
  }
  return { regions, bySeq: new Map(regions.map((r) => [r.seq, r])) }
}

/**
 * The seqs of a region's original messages, in model order (nested folds, block summaries and
 * compactions opened up; see the module docs).
 * @param {any} session @param {FoldedRegion} region
 * @returns {number[]}
 */
export function originalSeqs(session, region) {
  const { bySeq } = logIndex(session)
  /** @type {number[]} */
  const out = []
  const seen = new Set()
  /** @param {number[]} sources */
  const walk = (sources) => {
    for (const seq of sources) {
      if (seen.has(seq)) continue
      seen.add(seq)
      const nested = bySeq.get(seq)
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
 * The name of the tool whose call the result `seq` answers: the call in its opener's message.
 * @param {readonly any[]} log @param {any} mirror @param {number} seq @param {unknown} callId
 */
function toolName(log, mirror, seq, callId) {
  const callIn = (/** @type {number} */ at) => {
    const content = log[at]?.type === 'assistant/message' ? log[at].data?.message?.content : undefined
    return Array.isArray(content) ? content.find((b) => b?.type === 'tool-call' && b.id === callId) : undefined
  }
  const opener = mirror.opener(seq)
  let call = opener == null ? undefined : callIn(opener)
  // A mirror rebuilt from the surface has not described shadowed results: find the call.
  for (let at = seq - 1; call === undefined && at >= 0; at--) call = callIn(at)
  return typeof call?.name === 'string' ? call.name : 'tool'
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
 * tool-call block of an assistant message, one per tool result and per user message, and one
 * per image (or other attachment) a message carries, its line naming it (`attachmentLine`).
 * @param {any} session @param {FoldedRegion} region
 * @returns {RecallText[]}
 */
export function regionTexts(session, region) {
  const log = eventLog(session)
  const mirror = withLog(session).native
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
          const name = toolName(log, mirror, seq, block.toolCallId)
          out.push({ seq, label: `${name} result${block.isError ? ' (error)' : ''}`, text: resultText(block.content) })
          break
        }
        default:
          // An image (or another block a message carries beside its words): named by the line a
          // checkpoint names it by, so a query for its name or attachment id finds it.
          if (isAttachment(block)) out.push({ seq, label: `${userLabel(message)} attachment`, text: attachmentLine(block) })
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
