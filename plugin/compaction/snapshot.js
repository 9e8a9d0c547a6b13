/**
 * @module plugin/compaction/snapshot
 * Describes a real DSH `Session`'s surface to the compaction policy (the snapshot format is
 * documented in `crates/fold-core/src/compaction.rs`): per node, its kind, where it came from
 * (the agent's work, the user, a rewind report, a block summary, an earlier compaction summary
 * of ours or of another backend), its token price from DSH's meter, its visible chars, its call
 * links and its block ids, a work node's fact chars (when its report facts were read,
 * report-facts.js) and an earlier checkpoint's core; and the anchors of the active checkpoint
 * marks.
 *
 * The backend plans on the session mirror (`planCompaction(mirror, params, overlay)`,
 * overlay.js); this snapshot is the same input described from the session alone, from scratch
 * at every call (no cache): the oracle the tests hold the mirror's plan to, and the input of a
 * host without a mirror.
 */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'

import { isOwnCheckpointSource } from './source.js'
import { visibleChars } from '../shared/meter.js'
import { eventLog, isRewindReportSource } from '../shared/session.js'
import { knownFactChars } from './report-facts.js'
import { carriedCore, carriedText } from './summary.js'

/** @param {any} message */
const textOf = (message) =>
  (message?.content ?? [])
    .filter((/** @type {any} */ b) => b?.type === 'text')
    .map((/** @type {any} */ b) => b.text)
    .join('')

const FORMAT = 4
const NODE_WORDS = 9
const KIND = { other: 0, user: 1, assistant: 2, toolResult: 3 }
export const SOURCE = Object.freeze({ work: 0, user: 1, rewindReport: 2, blockSummary: 3, compactionSummary: 4, foreignSummary: 5 })

export { OWN_MARKER, isOwnCheckpointSource } from './source.js'

/**
 * @typedef {object} EventFacts
 * @property {number} kind
 * @property {number} source
 * @property {number} origin
 * @property {number} chars
 * @property {number} core our earlier checkpoint: its chars with what it carried as pointers; else `chars`
 * @property {number} link assistant: calls opened; tool result: 1 + opener seq (0 unknown)
 * @property {string[]} blocks block ids (assistant: its block calls'; block summary: carried)
 */

class SessionFacts {
  /** @type {Map<number, EventFacts>} */
  bySeq = new Map()
  /** @type {Map<string, number>} call id → opener seq */
  openers = new Map()
  /** @type {Map<string, number>} block id → number */
  blockNumbers = new Map()
}

/** @param {any} event */
function sourceOf(event) {
  if (event.type !== 'user/message') return SOURCE.work
  const source = event.data?.source
  if (event.surfaceOp?.op === 'replace') {
    if (isRewindReportSource(source) && Number.isSafeInteger(source?.markId)) return SOURCE.rewindReport
    if (isCompactCheckpointSource(source ?? {})) {
      if (source.blockPtc) return SOURCE.blockSummary
      return isOwnCheckpointSource(source) ? SOURCE.compactionSummary : SOURCE.foreignSummary
    }
    return SOURCE.foreignSummary
  }
  // Plugin notes (a turn guard's warning) are transient context, not the user's words.
  return source?.kind === 'plugin' ? SOURCE.work : SOURCE.user
}

/**
 * @param {SessionFacts} facts @param {readonly any[]} log @param {number} seq @param {string} blockToolName
 * @returns {EventFacts}
 */
function describe(facts, log, seq, blockToolName) {
  const known = facts.bySeq.get(seq)
  if (known) return known
  const event = log[seq]
  let origin = seq
  if (event.surfaceOp?.op === 'replace') {
    for (const s of event.sourceEventSeqs ?? []) if (Number.isInteger(s) && s >= 0 && s < origin) origin = s
    const start = event.surfaceOp.start
    if (Number.isInteger(start) && start < seq && log[start]) origin = Math.min(origin, describe(facts, log, start, blockToolName).origin)
  }
  /** @type {EventFacts} */
  const out = { kind: KIND.other, source: sourceOf(event), origin, chars: 0, core: 0, link: 0, blocks: [] }
  switch (event.type) {
    case 'user/message':
      out.kind = KIND.user
      // Our own earlier checkpoint weighs what a later one carries of it (summary.js): whole, or
      // at its core (its carried reports as pointers).
      if (out.source === SOURCE.compactionSummary) {
        const text = textOf(event.data)
        out.chars = carriedText(text).length
        out.core = Math.min(out.chars, carriedCore(text).length)
      } else out.chars = visibleChars(event.data?.content)
      if (out.source === SOURCE.blockSummary) out.blocks = strings(event.data.source.blockPtc?.remaining)
      break
    case 'assistant/message': {
      out.kind = KIND.assistant
      const content = event.data?.message?.content ?? []
      out.chars = visibleChars(content)
      for (const block of content) {
        if (block?.type !== 'tool-call') continue
        out.link++
        if (typeof block.id === 'string') facts.openers.set(block.id, seq)
        if (block.name === blockToolName) out.blocks.push(...blockIds(block.arguments))
      }
      break
    }
    case 'tool/result': {
      out.kind = KIND.toolResult
      const message = event.data?.message
      out.chars = visibleChars(message?.content)
      const opener = facts.openers.get(message?.source?.callId ?? message?.content?.[0]?.toolCallId)
      out.link = opener === undefined || opener >= seq ? 0 : opener + 1
      break
    }
  }
  if (out.source !== SOURCE.compactionSummary) out.core = out.chars
  facts.bySeq.set(seq, out)
  return out
}

/** @param {unknown} v @returns {string[]} */
const strings = (v) => (Array.isArray(v) ? v.filter((x) => typeof x === 'string' && x.length > 0) : [])

/** A `block_run_code` call's ids (`ids`, or the legacy `id`). @param {unknown} raw */
function blockIds(raw) {
  let args = raw
  if (typeof raw === 'string') {
    try {
      args = JSON.parse(raw)
    } catch {
      // Arguments that are not JSON tag no block.
      return []
    }
  }
  const a = /** @type {any} */ (args)
  return [...new Set([...strings(a?.ids), ...(typeof a?.id === 'string' && a.id ? [a.id] : [])])]
}

/**
 * The compaction snapshot of `session` now.
 * @param {any} session
 * @param {{nodes: readonly {seq: number, tokens: number}[]}} measurement DSH's `tokenMeter.measure(session)`
 * @param {{anchors?: number[], blockToolName?: string}} [options] active marks' log lengths
 * @returns {Uint32Array}
 */
export function compactionSnapshot(session, measurement, options = {}) {
  const facts = new SessionFacts()
  const log = eventLog(session)
  const blockToolName = options.blockToolName ?? 'block_run_code'
  // Call ids are resolved against openers anywhere in the log (a result's call may be off the
  // surface), as the mirror resolves them: every assistant event is read for its call ids.
  for (const event of log) if (event?.type === 'assistant/message') for (const b of event.data?.message?.content ?? []) if (b?.type === 'tool-call' && typeof b.id === 'string') facts.openers.set(b.id, event.seq)
  const nodes = session.surface.nodes
  const priced = measurement.nodes
  if (priced.length !== nodes.length) throw new Error('compaction: the token meter\'s surface does not match the session surface')
  const anchors = (options.anchors ?? []).filter((a) => Number.isInteger(a) && a >= 0)
  /** @type {number[][]} */
  const sets = []
  /** @type {Map<string, number>} */
  const setIndex = new Map()
  const words = new Uint32Array(5 + anchors.length + nodes.length * NODE_WORDS)
  words.set([FORMAT, log.length, 0, nodes.length, anchors.length])
  words.set(anchors, 5)
  let w = 5 + anchors.length
  for (let i = 0; i < nodes.length; i++) {
    const seq = nodes[i]
    if (priced[i].seq !== seq) throw new Error('compaction: the token meter\'s surface does not match the session surface')
    const f = describe(facts, log, seq, blockToolName)
    let set = 0
    if (f.blocks.length > 0) {
      const members = f.blocks.map((id) => {
        let k = facts.blockNumbers.get(id)
        if (k === undefined) facts.blockNumbers.set(id, (k = facts.blockNumbers.size))
        return k
      })
      const key = members.join(',')
      let s = setIndex.get(key)
      if (s === undefined) {
        setIndex.set(key, (s = sets.length))
        sets.push(members)
      }
      set = s + 1
    }
    words[w] = seq
    words[w + 1] = f.kind | (f.source << 2)
    words[w + 2] = f.link
    words[w + 3] = f.origin
    words[w + 4] = Math.min(priced[i].tokens, 0xffff_ffff)
    words[w + 5] = f.chars
    words[w + 6] = set
    // A work node's fact chars, when its report facts were read after its step (0: unknown).
    const factChars = f.source === SOURCE.work ? knownFactChars(session, seq) : undefined
    words[w + 7] = factChars === undefined ? 0 : Math.min(factChars, 0xffff_fffd) + 1
    words[w + 8] = f.core
    w += NODE_WORDS
  }
  const tail = [sets.length]
  for (const s of sets) tail.push(s.length, ...s)
  const out = new Uint32Array(words.length + tail.length)
  out.set(words)
  out.set(tail, words.length)
  return out
}
