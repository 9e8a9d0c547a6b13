/**
 * @module bench/lib/ours
 * dsh-fold's fold through the plugin's real path: the addon's `rewind` (from the package's
 * `index.js`) over `plugin/fold/host.js` `sessionHost` — `plugin/shared/surface.js` `surfaceSnapshot`
 * for the snapshot, and a `commit` that re-snapshots, checks `planMatches` and appends the
 * replacement with `session.append` — exactly what `plugin/fold/rewind.js` passes, minus cordis
 * and the summarizer choice. The benchmark's summarizer answers at once; it derives the
 * region's messages with `regionMessages` first, as the plugin's real summarizers do.
 */
import { addon } from '../../plugin/shared/addon.js'
import { sessionHost } from '../../plugin/fold/host.js'
import { regionMessages } from '../../plugin/shared/session.js'

export { addon }

const clock = () => process.hrtime.bigint()

/**
 * Where the time of one fold went, in µs: the host callbacks (JS); the rest is the addon's
 * (mark lookup, decode, selection, thread hops, the durable stamp, settling the promise).
 * @typedef {{snapshot: number, summarize: number, commit: number}} Probe
 */

/**
 * @param {any} store the addon's store ref
 * @param {any} session a real DSH Session
 * @param {string} callId the rewind call's id
 * @param {string} reportText
 * @param {Probe} [probe] accumulates the time spent in each callback
 */
export function oursRewind(store, session, callId, reportText, probe) {
  const summarize = async (/** @type {{seqs: Uint32Array}} */ region) => {
    regionMessages(session, region.seqs)
    return reportText
  }
  const host = /** @type {any} */ (sessionHost(session, summarize, { callId }))
  if (probe) {
    for (const key of /** @type {const} */ (['snapshot', 'summarize', 'commit'])) {
      const fn = host[key]
      host[key] = (/** @type {any[]} */ ...args) => {
        const t0 = clock()
        try {
          return fn(...args)
        } finally {
          probe[key] += Number(clock() - t0) / 1e3
        }
      }
    }
  }
  return addon.rewind(store, session.id, host, { maxSummarizationRetries: 2 })
}
