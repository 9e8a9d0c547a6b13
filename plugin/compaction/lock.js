/**
 * @module plugin/compaction/lock
 * DSH's compaction lock as the log records it (`@deepseek-ai/dsh-compaction` README,
 * "Blocking"): the latest `compaction/start` without a later `compaction/end` is live — another
 * compaction (of any producer: basic, block mode, this backend) holds the session — unless a
 * newer `session/end-seed` shows it is stale evidence of an earlier process lifecycle. Also the
 * open turn, which owns an automatic bracket. Each session's log is read once, forward, as it
 * grows (a step boundary reads only the events since the last one).
 */
import { eventLog } from '../shared/surface.js'

/**
 * @typedef {object} BracketFacts
 * @property {number} scanned log length read so far
 * @property {any} unmatched the latest `compaction/start` with no later end, if any
 * @property {number} endSeed the latest `session/end-seed`'s seq, or -1
 * @property {number | null} openTurn
 */

/** @type {WeakMap<object, BracketFacts>} the log is append-only: each session is read once, forward */
const cache = new WeakMap()

/**
 * @param {any} session
 * @returns {{liveStart: any | undefined, openTurn: number | null}} the live unmatched start, if any; the open turn
 */
export function bracketState(session) {
  const log = eventLog(session)
  let facts = cache.get(session)
  if (!facts || facts.scanned > log.length) cache.set(session, (facts = { scanned: 0, unmatched: undefined, endSeed: -1, openTurn: null }))
  for (let i = facts.scanned; i < log.length; i++) {
    const e = log[i]
    switch (e.type) {
      case 'compaction/start':
        facts.unmatched = e
        break
      case 'compaction/end':
        facts.unmatched = undefined
        break
      case 'session/end-seed':
        facts.endSeed = e.seq
        break
      case 'turn/start':
        facts.openTurn = e.data?.turn ?? null
        break
      case 'turn/end':
        facts.openTurn = null
        break
    }
  }
  facts.scanned = log.length
  const liveStart = facts.unmatched !== undefined && !(facts.endSeed > facts.unmatched.seq) ? facts.unmatched : undefined
  return { liveStart, openTurn: facts.openTurn }
}
