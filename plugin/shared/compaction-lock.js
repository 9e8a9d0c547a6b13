/**
 * @module plugin/shared/compaction-lock
 * DSH's durable compaction lock, read from a session's append-only log exactly as DSH's own
 * compaction reads it (`@deepseek-ai/dsh-compaction-basic`'s entry-state check, rc.8): the
 * lock is held by the latest `compaction/start` when no `compaction/end` came after it, and a
 * `session/end-seed` after that start makes it stale (the session was restored or forked after
 * a crash inside the bracket: nobody is left to close it). A stale start does not block.
 *
 * One rule, used by every producer here: block mode's log reading (plugin/block/log.js) and
 * snapshot (plugin/block/surface.js) fold each event through `compactionLock`, and the session
 * mirror (crates/fold-core/src/mirror.rs) applies the same rule to each event it is fed; a rewind
 * asks `liveCompaction(session)` — the mirror's answer — before it folds and again at its commit
 * (plugin/fold/). Each event of a session is looked at once.
 */
import { withLog } from './mirror.js'

/**
 * The lock after `event`, given the lock before it: the seq of the live `compaction/start`, or
 * `undefined` when no compaction holds the session.
 * @param {number | undefined} held @param {{type: string, seq: number}} event
 * @returns {number | undefined}
 */
export function compactionLock(held, event) {
  switch (event.type) {
    case 'compaction/start':
      return event.seq
    case 'compaction/end':
    case 'session/end-seed':
      return undefined
    default:
      return held
  }
}

/**
 * The seq of the `compaction/start` holding `session`'s compaction lock now, or `undefined`: the
 * session mirror's answer (it applies the same rule to each event as it is appended), so asking
 * costs no walk of the log.
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @returns {number | undefined}
 */
export function liveCompaction(session) {
  return withLog(session).native.openCompaction() ?? undefined
}

/**
 * Resolves once no compaction holds `session`'s lock (at once when none does), watching the
 * session's events through `ctx`'s `session/event`. Bounded: `timeoutMs` without a release
 * rejects with `COMPACTION_BUSY` (a coded dsh-fold error); an abort rejects with the signal's
 * reason, as `fetch` does.
 * @param {any} ctx a cordis context that sees the session's events
 * @param {any} session
 * @param {{timeoutMs: number, signal?: AbortSignal, what?: string}} options `what` names the
 *   waiting operation in the error ("the rewind")
 * @returns {Promise<void>}
 */
export function compactionReleased(ctx, session, { timeoutMs, signal, what = 'the operation' }) {
  const held = liveCompaction(session)
  if (held === undefined) return Promise.resolve()
  if (signal?.aborted) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    /** @type {() => void} */
    let stopListening = () => {}
    const finish = (/** @type {unknown} */ error) => {
      clearTimeout(timer)
      stopListening()
      signal?.removeEventListener('abort', onAbort)
      if (error === undefined) resolve()
      else reject(error)
    }
    const onAbort = () => finish(signal?.reason)
    const timer = setTimeout(() => {
      const start = liveCompaction(session)
      const error = Object.assign(
        new Error(
          `another producer's compaction of this session (compaction/start at seq ${start ?? held}) held DSH's compaction lock for ${timeoutMs} ms; ${what} did not run: nothing was written and the mark is still active`,
        ),
        { name: 'FoldError', code: 'COMPACTION_BUSY' },
      )
      finish(error)
    }, timeoutMs)
    signal?.addEventListener('abort', onAbort, { once: true })
    const dispose = ctx.on('session/event', (/** @type {any} */ s) => {
      if ((s === session || s?.id === session.id) && liveCompaction(session) === undefined) finish(undefined)
    })
    stopListening = typeof dispose === 'function' ? dispose : () => {}
  })
}
