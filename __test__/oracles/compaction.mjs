// @ts-check
/**
 * @module __test__/oracles/compaction
 * What the compaction policy must see of a real DSH `Session`'s surface, described from the
 * session alone, from scratch at every call: the oracle `__test__/compaction/mirror.test.mjs`
 * holds the session mirror and the backend's overlay (`plugin/shared/mirror.js`,
 * `plugin/compaction/overlay.js`) to. It was the plugin's compaction snapshot builder
 * (`plugin/compaction/snapshot.js`, the version 4 format of `crates/fold-core/src/wire/`) until
 * the mirror became the policy's only input (issue 31); it no longer ships. Per node: its kind,
 * where it came from (the agent's work, the user, a rewind report, a block summary, an earlier
 * compaction summary of ours or of another backend), its token price from DSH's meter, its
 * visible chars, its call links and its block ids, a work node's fact chars (when its report
 * facts were read, report-facts.js) and an earlier checkpoint's core. The rules of what the
 * backend's own messages carry (`carriedText`, `carriedCore`, `knownFactChars`,
 * `isOwnCheckpointSource`) are the plugin's, shared on purpose: the oracle checks how the
 * session is described, not the summary's wording.
 */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'

import { knownFactChars } from '../../plugin/compaction/report-facts.js'
import { isOwnCheckpointSource } from '../../plugin/compaction/source.js'
import { carriedCore, carriedText } from '../../plugin/compaction/summary.js'
import { visibleChars } from '../../plugin/shared/meter.js'
import { eventLog, isRewindReportSource } from '../../plugin/shared/session.js'

/** @param {any} message */
const textOf = (message) =>
  (message?.content ?? [])
    .filter((/** @type {any} */ b) => b?.type === 'text')
    .map((/** @type {any} */ b) => b.text)
    .join('')

const KIND = { other: 0, user: 1, assistant: 2, toolResult: 3 }
/** The policy's sources (`fold_core::compaction::Source`). */
export const SOURCE = Object.freeze({ work: 0, user: 1, rewindReport: 2, blockSummary: 3, compactionSummary: 4, foreignSummary: 5 })

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
 * @typedef {object} PolicyNode what the policy reads of one surface node
 * @property {number} seq
 * @property {number} kind 0 other, 1 user, 2 assistant, 3 tool result
 * @property {number} source one of `SOURCE`
 * @property {number} origin
 * @property {number} tokens DSH's meter's price
 * @property {number} chars visible chars (an earlier checkpoint of ours: what a later one carries of it)
 * @property {number} core an earlier checkpoint of ours: its core; else `chars`
 * @property {number} link assistant: calls opened; tool result: 1 + opener seq (0 unknown)
 * @property {string[] | null} blocks block ids (an assistant's block calls', a block summary's carried), null for none
 * @property {number | null} facts a work node's fact chars, when its report facts were read after its step
 */

/**
 * What the compaction policy must read of `session` now, node by node in model order.
 * @param {any} session
 * @param {{nodes: readonly {seq: number, tokens: number}[]}} measurement DSH's `tokenMeter.measure(session)`
 * @param {{blockToolName?: string}} [options]
 * @returns {PolicyNode[]}
 */
export function compactionFacts(session, measurement, options = {}) {
  const facts = new SessionFacts()
  const log = eventLog(session)
  const blockToolName = options.blockToolName ?? 'block_run_code'
  // Call ids are resolved against openers anywhere in the log (a result's call may be off the
  // surface): every assistant event is read for its call ids.
  for (const event of log) if (event?.type === 'assistant/message') for (const b of event.data?.message?.content ?? []) if (b?.type === 'tool-call' && typeof b.id === 'string') facts.openers.set(b.id, event.seq)
  const nodes = session.surface.nodes
  const priced = measurement.nodes
  if (priced.length !== nodes.length) throw new Error('compaction oracle: the token meter\'s surface does not match the session surface')
  return nodes.map((/** @type {number} */ seq, /** @type {number} */ i) => {
    if (priced[i].seq !== seq) throw new Error('compaction oracle: the token meter\'s surface does not match the session surface')
    const f = describe(facts, log, seq, blockToolName)
    // A work node's fact chars, when its report facts were read after its step.
    const factChars = f.source === SOURCE.work ? knownFactChars(session, seq) : undefined
    const carries = f.kind === KIND.assistant || f.source === SOURCE.blockSummary
    return {
      seq,
      kind: f.kind,
      source: f.source,
      origin: f.origin,
      tokens: priced[i].tokens,
      chars: f.chars,
      core: f.core,
      link: f.link,
      blocks: carries && f.blocks.length > 0 ? f.blocks : null,
      facts: factChars ?? null,
    }
  })
}
