// @ts-check
/**
 * @module __test__/helpers/mirror-records
 * Session mirrors written by hand in the mirror's own record format (the load format of
 * `crates/fold-core/src/mirror/mod.rs`): the addon's tests of the planners' rules on surfaces a
 * DSH session rarely makes (seqs out of model order, orphans, replacements citing lower seqs, a
 * log of billions of events), and hosts of a fold over a fixed surface. A real session's mirror is
 * `plugin/shared/mirror.js`'s; this one states each node's facts directly.
 *
 * A node: `{seq, kind, chars?, link?, origin?, report?}` — `kind` 0 other, 1 user, 2 assistant,
 * 3 tool result; `link` an assistant's calls, a result's 1 + the seq of its call's assistant
 * (0: unknown); `origin` below `seq` makes it a replacement; `report: {markId, sources}` a rewind
 * report citing the message events `sources` (described on the surface or in `others`).
 */
import { addon } from '../../plugin/shared/addon.js'

export const NONE = 0xffff_ffff
export const KIND = { other: 0, user: 1, assistant: 2, result: 3 }
const LOAD_FORMAT = 3
const OP_APPEND = 1 << 2
const OP_REPLACE = 2 << 2
const SOURCE = { appended: 0, user: 1 << 8, rewind: 3 << 8, rewrite: 6 << 8 }

/**
 * @typedef {object} HandNode
 * @property {number} seq
 * @property {number} [kind]
 * @property {number} [chars]
 * @property {number} [link]
 * @property {number} [origin]
 * @property {{markId: number, sources: number[]}} [report]
 */

export const user = (/** @type {number} */ seq, chars = 10, extra = {}) => ({ seq, kind: KIND.user, chars, ...extra })
export const assistant = (/** @type {number} */ seq, /** @type {number} */ calls, chars = 10) => ({ seq, kind: KIND.assistant, chars, link: calls })
export const result = (/** @type {number} */ seq, /** @type {number | undefined} */ opener, chars = 10) => ({ seq, kind: KIND.result, chars, link: opener === undefined ? 0 : opener + 1 })

/**
 * One node's record, with its origin (a load's record carries it).
 * @param {HandNode} n @param {number[]} out
 */
function record(n, out) {
  const kind = n.kind ?? KIND.other
  const origin = n.origin ?? n.seq
  const replaced = n.report !== undefined || origin < n.seq
  const source = n.report ? SOURCE.rewind : replaced ? SOURCE.rewrite : kind === KIND.user ? SOURCE.user : SOURCE.appended
  const sources = n.report?.sources ?? []
  const markId = n.report?.markId ?? 0
  out.push(n.seq, kind | (replaced ? OP_REPLACE : OP_APPEND) | source, n.link ?? 0, n.chars ?? 0, NONE, 0, 0, markId % 2 ** 32, Math.floor(markId / 2 ** 32))
  out.push(0, 0, replaced ? Math.min(origin, ...sources) : NONE, origin, sources.length, ...sources)
}

/**
 * The words that rebuild a mirror of a log of `events` events whose surface is `nodes`, in model
 * order, as a host rebuilds one from its surface: `load` (`others`: events off the surface its
 * reports cite), then `log`, the replacements' records its log index learns (`loadLog`).
 * @param {HandNode[]} nodes
 * @param {{events?: number, others?: HandNode[]}} [options]
 */
export function handWords(nodes, { events, others = [] } = {}) {
  const count = events ?? Math.max(-1, ...nodes.map((n) => n.seq), ...others.map((n) => n.seq)) + 1
  const load = [LOAD_FORMAT, count, 0, nodes.length, others.length]
  for (const n of [...others].sort((x, y) => x.seq - y.seq)) record(n, load)
  for (const n of nodes) record(n, load)
  /** @type {number[]} */
  const log = []
  for (const n of [...nodes, ...others].sort((x, y) => x.seq - y.seq)) if (n.report !== undefined || (n.origin ?? n.seq) < n.seq) record(n, log)
  return { load: Uint32Array.from(load), log: Uint32Array.from(log) }
}

/**
 * A `SessionMirror` rebuilt from `handWords(nodes, options)`, its log index learnt
 * (`openCompaction`: the seq of a `compaction/start` with no end, or NONE), so a fold can read it.
 * @param {HandNode[]} nodes
 * @param {{events?: number, others?: HandNode[], openCompaction?: number}} [options]
 */
export function handMirror(nodes, options = {}) {
  const { load, log } = handWords(nodes, options)
  const mirror = new addon.SessionMirror()
  mirror.load(load)
  mirror.loadLog(options.openCompaction ?? NONE, log)
  return mirror
}

/**
 * A RewindHost over a fixed surface (the mirror and the rewind call's message): `summarize`
 * answers `report` at once, `commit` re-checks with `planMatches` as a real host must. `over`
 * replaces any callback.
 * @param {{mirror: any, current?: number}} surface
 * @param {Partial<import('../../index.js').RewindHost>} [over]
 */
export function mirrorHost({ mirror, current }, over = {}, report = 'the exploration, condensed') {
  return {
    current,
    snapshot: () => mirror,
    summarize: async () => report,
    commit: (/** @type {any} */ plan) => (addon.planMatches(plan, mirror, current) ? 'committed' : 'changed'),
    ...over,
  }
}
