/**
 * @module plugin/compaction/lock
 * DSH's compaction lock as the log records it (`@deepseek-ai/dsh-compaction` README,
 * "Blocking"): the latest `compaction/start` without a later `compaction/end` is live — another
 * compaction (of any producer: basic, block mode, this backend) holds the session — unless a
 * newer `session/end-seed` shows it is stale evidence of an earlier process lifecycle. Also the
 * open turn, which owns an automatic bracket. Read from the log's tail back; stops as soon as
 * all three are known.
 */
import { eventLog } from '../shared/surface.js'

/**
 * @param {any} session
 * @returns {{liveStart: any | undefined, openTurn: number | null}} the live unmatched start, if any; the open turn
 */
export function bracketState(session) {
  const log = eventLog(session)
  /** @type {any} */
  let unmatched
  let bracketKnown = false
  let endSeed = -1
  let endSeedKnown = false
  /** @type {number | null} */
  let openTurn = null
  let turnKnown = false
  for (let i = log.length - 1; i >= 0 && !(bracketKnown && endSeedKnown && turnKnown); i--) {
    const e = log[i]
    if (!endSeedKnown && e.type === 'session/end-seed') {
      endSeed = e.seq
      endSeedKnown = true
    }
    if (!bracketKnown) {
      if (e.type === 'compaction/start') {
        unmatched = e
        bracketKnown = true
      } else if (e.type === 'compaction/end') bracketKnown = true
    }
    if (!turnKnown) {
      if (e.type === 'turn/start') {
        openTurn = e.data?.turn ?? null
        turnKnown = true
      } else if (e.type === 'turn/end') turnKnown = true
    }
  }
  const liveStart = unmatched !== undefined && !(endSeed > unmatched.seq) ? unmatched : undefined
  return { liveStart, openTurn }
}
