/**
 * @module plugin/compaction/lock
 * The open turn of a session, which owns an automatic compaction bracket, read from its
 * append-only log once, forward, as it grows (a step boundary reads only the events since the
 * last one). DSH's compaction lock itself is not read here: every producer of this package
 * (this backend, a rewind, block mode) reads it through the one shared rule,
 * plugin/shared/compaction-lock.js, as the session mirror answers it (`liveCompaction`).
 */
import { eventLog } from '../shared/session.js'

/** @type {WeakMap<object, {scanned: number, openTurn: number | null}>} the log is append-only: each session is read once, forward */
const turns = new WeakMap()

/**
 * The open turn of `session`: the latest `turn/start`'s turn when no `turn/end` came after it.
 * @param {any} session @returns {number | null}
 */
export function openTurn(session) {
  const log = eventLog(session)
  let facts = turns.get(session)
  if (!facts || facts.scanned > log.length) turns.set(session, (facts = { scanned: 0, openTurn: null }))
  for (let i = facts.scanned; i < log.length; i++) {
    const e = log[i]
    if (e.type === 'turn/start') facts.openTurn = e.data?.turn ?? null
    else if (e.type === 'turn/end') facts.openTurn = null
  }
  facts.scanned = log.length
  return facts.openTurn
}
