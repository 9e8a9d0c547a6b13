/**
 * @module plugin/compaction/overlay
 * What the compaction policy needs beside the session mirror (`plugin/shared/mirror.js`, which
 * describes the surface for every planner but keeps nothing of this backend's own): the
 * overlay `planCompaction(mirror, params, overlay)` reads (`CompactionOverlay`, rules in
 * `crates/fold-core/src/compaction/mod.rs`, rule 6).
 *
 * - `anchors`: the active checkpoint marks' log lengths (the caller's, from the checkpoint row).
 * - `facts`: per surface node, 1 + the fact chars of the work messages whose report facts were
 *   read after their step (`report-facts.js`), 0 where not read (the policy then sizes that
 *   run's report by its natural size).
 * - `ours`: `(seq, chars, core)` of each earlier checkpoint of ours on the surface — what a later
 *   checkpoint carries of it (`carriedText`) and its core (`carriedCore`) — computed once per
 *   checkpoint event and kept with it.
 * - `notes`: the seqs of plugin notes on the surface (a `user/message` a plugin appended, such as
 *   a turn guard's warning): transient context, condensed with the work around it, not carried
 *   as the user's words.
 *
 * One pass over the surface's seqs with a lookup each; no message is read here but our own
 * checkpoints, once.
 */
import { knownFactChars } from './report-facts.js'
import { isOwnCheckpointSource } from './source.js'
import { carriedCore, carriedText } from './summary.js'
import { eventLog } from '../shared/session.js'

/** @type {WeakMap<object, {chars: number, core: number}>} our checkpoint event → its sizes */
const carried = new WeakMap()

/** @param {any} message */
const textOf = (message) =>
  (message?.content ?? [])
    .filter((/** @type {any} */ b) => b?.type === 'text')
    .map((/** @type {any} */ b) => b.text)
    .join('')

/**
 * What a later checkpoint carries of our checkpoint `event`, and its core.
 * @param {any} event
 */
export function carriedSizes(event) {
  let sizes = carried.get(event)
  if (!sizes) {
    const text = textOf(event.data)
    const chars = carriedText(text).length
    carried.set(event, (sizes = { chars, core: Math.min(chars, carriedCore(text).length) }))
  }
  return sizes
}

/**
 * The overlay of `session`'s surface as it is now.
 * @param {any} session @param {number[]} anchors
 * @returns {import('../../index.js').CompactionOverlay}
 */
export function compactionOverlay(session, anchors) {
  const log = eventLog(session)
  const nodes = session.surface.nodes
  const facts = new Uint32Array(nodes.length)
  /** @type {number[]} */
  const ours = []
  /** @type {number[]} */
  const notes = []
  for (let i = 0; i < nodes.length; i++) {
    const seq = nodes[i]
    const f = knownFactChars(session, seq)
    if (f !== undefined) facts[i] = Math.min(f, 0xffff_fffd) + 1
    const event = log[seq]
    if (event?.type !== 'user/message') continue
    if (event.surfaceOp?.op === 'replace') {
      if (isOwnCheckpointSource(event.data?.source)) {
        const { chars, core } = carriedSizes(event)
        ours.push(seq, chars, core)
      }
    } else if (event.data?.source?.kind === 'plugin') notes.push(seq)
  }
  return { anchors: Uint32Array.from(anchors.filter((a) => Number.isInteger(a) && a >= 0)), facts, ours: Uint32Array.from(ours), notes: Uint32Array.from(notes) }
}
