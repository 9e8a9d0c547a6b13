/**
 * @module bench/lib/ours
 * dsh-fold's fold through the plugin's real path: the addon's `rewind` (from the package's
 * `index.js`) over `plugin/fold/host.js` `sessionHost` — its `snapshot` brings the session's
 * mirror (`plugin/shared/mirror.js`) in step and hands it over, its `commit` re-checks the
 * region on the mirror when the log grew and appends the replacement with `session.append` —
 * exactly what `plugin/fold/rewind.js` passes, minus cordis and the summarizer choice. The
 * benchmark's summarizer answers at once; it derives the region's messages with
 * `regionMessages` first, as the plugin's real summarizers do.
 *
 * `mirrorHost()` is a real host for it: a cordis Context with DSH's SessionStore and the
 * plugin's mirror mounted, so a session `attach`ed to it is fed by the mirror's
 * `session/event` listener as each event is appended, exactly as in a DSH host.
 */
import { Context } from '@deepseek-ai/cordis'
import { SessionStore } from '@deepseek-ai/dsh-session'

import { addon } from '../../plugin/shared/addon.js'
import { sessionHost } from '../../plugin/fold/host.js'
import { mountMirror } from '../../plugin/shared/mirror.js'
import { regionMessages } from '../../plugin/shared/session.js'

export { addon }

/** A cordis host with DSH's session store and the plugin's session mirror mounted. */
export async function mirrorHost() {
  const root = new Context()
  await root.plugin(SessionStore)
  await new Promise((resolve) => setTimeout(resolve, 5))
  mountMirror(root)
  return root
}

/**
 * A new session attached to `root`'s store (its appends are published to the listeners), and
 * the disposer that detaches it again.
 * @param {any} root @param {string} id
 * @returns {{session: any, detach: () => void}}
 */
export function attach(root, id) {
  const sessions = root.sessions
  const session = sessions.prepare(id)
  const detach = sessions.enter(session)
  sessions.announce(session)
  return { session, detach }
}

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
