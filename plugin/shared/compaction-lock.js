/**
 * @module plugin/shared/compaction-lock
 * DSH's durable compaction lock, read from a session's append-only log exactly as DSH's own
 * compaction reads it (`@deepseek-ai/dsh-compaction-basic`'s entry-state check, rc.8): the
 * lock is held by the latest `compaction/start` when no `compaction/end` came after it, and a
 * `session/end-seed` after that start makes it stale (the session was restored or forked after
 * a crash inside the bracket: nobody is left to close it). A stale start does not block.
 *
 * One rule, and one reader: the session mirror. It applies the rule to each event it is fed
 * (crates/fold-core/src/mirror/mod.rs, by the event's log class), and a mirror rebuilt from a
 * session learns the lock by folding the log through `compactionLock` (plugin/shared/mirror.js,
 * its log index). Every producer asks the mirror (`liveCompaction` in plugin/shared/mirror.js):
 * the rewind (before it folds and at its commit), the compaction backend, and block mode (a
 * summary that cannot land is logged failed only outside another producer's bracket).
 */

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
