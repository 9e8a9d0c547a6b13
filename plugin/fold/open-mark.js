/**
 * @module plugin/fold/open-mark
 * Whether a session's latest checkpoint mark still waits for its fold. The store says so until
 * the mark is stamped folded; the session log knows better as soon as the fold's report is
 * committed, and a stamp lost between the two (a crash, a store write that failed) leaves the
 * store behind the log. The log wins: a mark whose report the log holds — on the surface, or
 * replaced since by a compaction (dsh-fold's or DSH's) — is folded, and its missing stamp is
 * written here. Asking the model to rewind it would only fold whatever came after the
 * compaction (the user's next request with it) into a second report of the same mark.
 *
 * Read by the turn guard (`./rewind.js`) and by the compaction backend, which does not cut into
 * an open mark's exploration. The checkpoint service may be dsh-fold's or another one with the
 * reference's `latestMark`/`completeFold` (a mark's `foldedAt` null or absent while active, as
 * the addon reads it).
 */
import { withLog } from '../shared/mirror.js'

/**
 * The session's latest mark while its fold is still to do, else `undefined`.
 * @param {{latestMark(sessionId: string): Promise<any>, completeFold?(sessionId: string, markId: number): Promise<unknown>}} checkpoint
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @param {{warn?: (format: string, ...args: unknown[]) => void}} [logger] told when a lost stamp cannot be written now
 * @returns {Promise<{id: number, logLength: number, objective?: string | null} | undefined>}
 */
export async function openMark(checkpoint, session, logger) {
  const mark = await checkpoint.latestMark(session.id)
  if (!mark || mark.foldedAt != null) return undefined
  if (withLog(session).native.reportOf(mark.id, mark.logLength) === null) return mark
  // Folded, stamp lost: finish it. A store that still fails is no reason to fold again; the
  // next rewind (or this check, at the next turn's end) tries once more.
  try {
    await checkpoint.completeFold?.(session.id, mark.id)
  } catch (e) {
    logger?.warn?.('checkpoint %d is folded in the session log but its stamp could not be written: %s', mark.id, /** @type {Error} */ (e)?.message ?? e)
  }
  return undefined
}
