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
 * mirror (crates/fold-core/src/mirror.rs) applies the same rule to each event it is fed; the
 * rewind (before it folds and at its commit) and the compaction backend ask the mirror
 * (`liveCompaction` in plugin/shared/mirror.js), so each event of a session is looked at once.
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
