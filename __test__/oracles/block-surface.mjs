// @ts-check
/**
 * @module __test__/oracles/block-surface
 * What block mode's planner must see of a real DSH `Session`'s surface, described from the
 * session alone: the oracle the session mirror's block facts are held to after every step of
 * random sessions (`__test__/mirror.test.mjs`). It was the plugin's version 2 snapshot builder
 * (`plugin/block/surface.js`) until the mirror became the only input of every planner (issue
 * 31); it no longer ships, and it reads DSH's event vocabulary itself (it imports nothing of
 * `plugin/shared/mirror.js`). Only which ids a logged block call tags is the plugin's own rule,
 * shared on purpose (`callBlockIds`, `plugin/block/args.js`: the validation a call meets and the
 * attribution its log entry gets must not disagree).
 *
 * Facts (those of the core's v2 snapshot format, `crates/fold-core/src/surface.rs`), per surface
 * node in model order:
 * - `protected`: a system or developer message (by the message's role or its source's kind), or
 *   a surface event of a type other than the three message types;
 * - `userAuthored`: a `user/message` appended (not a replacement), except block mode's own note
 *   naming summaries it did not apply (`source.blockNotice.requestSeqs`);
 * - `provenance`: `BlockSummary` (a replacement `user/message` whose source has `blockPtc`),
 *   `Replacement` (any other replacement `user/message` or `tool/result`), else `Appended`;
 * - `ids`: an assistant's block ids (of its block tool's calls, call after call, repeats kept), a
 *   block summary's carried ids (`blockPtc.remaining`), another replacement's covered ids (the
 *   ids of the events it cites, in order of first appearance); `null` for none.
 *
 * And `openCompaction`: DSH's compaction lock, read as DSH's compaction reads it — the latest
 * `compaction/start` with no `compaction/end` after it, unless a `session/end-seed` followed it.
 */
import { callBlockIds } from '../../plugin/block/args.js'

const MESSAGE_TYPES = new Set(['user/message', 'assistant/message', 'tool/result'])
const SYSTEM = new Set(['system', 'developer'])

/**
 * @typedef {object} OracleBlockNode
 * @property {number} seq
 * @property {boolean} protected
 * @property {boolean} userAuthored
 * @property {'Appended' | 'BlockSummary' | 'Replacement'} provenance
 * @property {string[] | null} ids
 */

/**
 * The block facts of `session`'s surface.
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @param {{blockToolName?: string}} [options] the tool whose calls carry block ids
 * @returns {{eventCount: number, openCompaction: boolean, nodes: OracleBlockNode[]}}
 */
export function describeBlockSurface(session, { blockToolName = 'block_run_code' } = {}) {
  const log = session.events
  /** @type {Map<number, string[]>} the ids each described event carries, by seq */
  const idsAt = new Map()
  let lock = false
  for (const event of log) {
    if (event.type === 'compaction/start') lock = true
    else if (event.type === 'compaction/end' || event.type === 'session/end-seed') lock = false
    const ids = eventIds(event, log, idsAt, blockToolName)
    if (ids.length > 0) idsAt.set(event.seq, ids)
  }
  const nodes = session.surface.nodes.map((/** @type {number} */ seq) => {
    const event = log[seq]
    const replacement = event.surfaceOp?.op === 'replace'
    const message = event.type === 'user/message' ? event.data : event.data?.message
    const source = message?.source
    const blockSummary = event.type === 'user/message' && replacement && typeof source?.blockPtc === 'object' && source.blockPtc !== null
    /** @type {OracleBlockNode['provenance']} */
    const provenance = blockSummary ? 'BlockSummary' : replacement && event.type !== 'assistant/message' && MESSAGE_TYPES.has(event.type) ? 'Replacement' : 'Appended'
    return {
      seq,
      protected: !MESSAGE_TYPES.has(event.type) || SYSTEM.has(message?.role) || SYSTEM.has(source?.kind),
      userAuthored: event.type === 'user/message' && !replacement && !Array.isArray(source?.blockNotice?.requestSeqs),
      provenance,
      ids: idsAt.get(seq) ?? null,
    }
  })
  return { eventCount: log.length, openCompaction: lock, nodes }
}

/**
 * The ids `event` carries: an assistant's block calls', a block summary's carried ids, or the
 * ids a replacement covered (of the events it cites, described before it).
 * @param {any} event @param {readonly any[]} log @param {Map<number, string[]>} idsAt @param {string} blockToolName
 * @returns {string[]}
 */
function eventIds(event, log, idsAt, blockToolName) {
  const replacement = event.surfaceOp?.op === 'replace'
  if (event.type === 'assistant/message') {
    const calls = (event.data?.message?.content ?? []).filter((/** @type {any} */ b) => b?.type === 'tool-call' && b.name === blockToolName)
    return calls.flatMap((/** @type {any} */ b) => callBlockIds(b.arguments))
  }
  if (!replacement || (event.type !== 'user/message' && event.type !== 'tool/result')) return []
  const block = event.type === 'user/message' ? event.data?.source?.blockPtc : undefined
  if (typeof block === 'object' && block !== null) {
    return Array.isArray(block.remaining) ? block.remaining.filter((/** @type {unknown} */ id) => typeof id === 'string' && id !== '') : []
  }
  /** @type {Set<string>} */
  const covered = new Set()
  for (const s of Array.isArray(event.sourceEventSeqs) ? event.sourceEventSeqs : []) {
    if (!Number.isInteger(s) || s < 0 || s >= event.seq || !MESSAGE_TYPES.has(log[s]?.type)) continue
    for (const id of idsAt.get(s) ?? []) covered.add(id)
  }
  return [...covered]
}
