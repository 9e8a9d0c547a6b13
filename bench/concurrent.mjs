/**
 * @module bench/concurrent
 * Figure 4, group commit: 32 sessions marking concurrently in one process vs marks one at a
 * time, on a real disk directory (bench/tmp/).
 *
 * Each trial uses a fresh store file and writes the same marks both ways, so both face the
 * same file sizes:
 * - one at a time: 32 sessions × K marks, round-robin, each `mark` awaited before the next;
 * - concurrent: the 32 sessions each await their own K marks in a row, all 32 at once
 *   (`Promise.all`); the store's leader writes everything queued while the previous write
 *   was on its way to disk (one fsync'd rewrite for many marks).
 * Throughput = marks / wall time. Trials alternate the order of the two.
 */
import path from 'node:path'

import { check, diskDir, emit, load, log, parseArgs, removeDir } from './lib/common.mjs'
import { addon } from './lib/ours.mjs'
import { now, quiesce, summarize, us } from './lib/stats.mjs'

const { quick, out } = parseArgs()
const SESSIONS = 32
const PER_SESSION = quick ? 2 : 8
const TRIALS = quick ? 1 : 5

const dir = diskDir('concurrent')
const result = { quick, load: { start: load() }, sessions: SESSIONS, perSession: PER_SESSION, trials: TRIALS, serial: /** @type {any} */ (null), concurrent: /** @type {any} */ (null), ratio: /** @type {any} */ (null) }

try {
  /** @type {number[]} */
  const serial = []
  /** @type {number[]} */
  const concurrent = []
  let trial = 0
  for (let t = 0; t < TRIALS; t++) {
    const runs = t % 2 === 0 ? ['serial', 'concurrent'] : ['concurrent', 'serial']
    for (const how of runs) {
      const store = { path: path.join(dir, `t${trial++}`, 'checkpoint.json'), maxMarksPerSession: 64, maxAgeDays: 30 }
      // Load the (empty) store and create its directory outside the timed region.
      await addon.mark(store, 'warmup', 0)
      await quiesce(20)
      const t0 = now()
      if (how === 'serial') {
        for (let k = 0; k < PER_SESSION; k++) for (let s = 0; s < SESSIONS; s++) await addon.mark(store, `sess-${s}`, k)
      } else {
        await Promise.all(
          Array.from({ length: SESSIONS }, async (_, s) => {
            for (let k = 0; k < PER_SESSION; k++) await addon.mark(store, `sess-${s}`, k)
          }),
        )
      }
      const wall = us(t0, now())
      const marks = await addon.listMarks(store)
      check(marks.length === SESSIONS * PER_SESSION + 1, `${how}: every mark is stored (${marks.length})`)
      check(new Set(marks.map((m) => m.id)).size === marks.length, `${how}: ids are unique`)
      const rate = (SESSIONS * PER_SESSION) / (wall / 1e6)
      ;(how === 'serial' ? serial : concurrent).push(rate)
      log(`${how}: ${rate.toFixed(0)} marks/s (${(wall / 1e3).toFixed(0)} ms for ${SESSIONS * PER_SESSION})`)
    }
  }
  result.serial = summarize(serial)
  result.concurrent = summarize(concurrent)
  result.ratio = result.concurrent.median / result.serial.median
} finally {
  removeDir(dir)
}
result.load.end = load()
emit(out, result)
