/**
 * @module plugin/shared/session
 * What every feature reads off a DSH `Session` directly: the live event log, the messages of a
 * region, and the sources that mark a rewind's own messages. Surface facts (order, pairing,
 * origins, prices, block ids) are the session mirror's (`./mirror.js`), not read here.
 */

/** The source of every fold's report message (a report also names its `markId`). */
export const REWIND_REPORT_SOURCE = Object.freeze({ kind: 'plugin', plugin: 'rewind' })
/** The source of the turn guard's warning: the same marker family, as the reference has it. */
export const REWIND_GUARD_SOURCE = Object.freeze({ kind: 'plugin', plugin: 'rewind' })

/** Whether a message source marks a rewind report (or the guard's warning). @param {unknown} source */
export function isRewindReportSource(source) {
  const s = /** @type {{kind?: unknown, plugin?: unknown} | null} */ (source)
  return typeof s === 'object' && s !== null && s.kind === 'plugin' && s.plugin === 'rewind'
}

/**
 * The session's live event log without copying it. DSH rc.8 keeps it in `session.log`
 * (`session.events` is an O(n) frozen copy rebuilt after every append); later versions
 * expose `snapshotEvents()`.
 * @param {any} session
 * @returns {readonly any[]}
 */
export function eventLog(session) {
  const log = session.log
  if (Array.isArray(log) && log.length === session.seq) return log
  return session.snapshotEvents?.() ?? session.events
}

/**
 * The model-visible messages of a region, in model order; empty assistant nodes are skipped.
 * @param {any} session
 * @param {ArrayLike<number>} seqs
 */
export function regionMessages(session, seqs) {
  const log = eventLog(session)
  const messages = []
  for (let i = 0; i < seqs.length; i++) {
    const message = session.deriveEventMessage(log[seqs[i]])
    if (message) messages.push(message)
  }
  return messages
}
