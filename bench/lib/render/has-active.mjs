/**
 * @module bench/lib/render/has-active
 * Figure 2 (bench/has-active.mjs): `hasActiveSync`, `hasActive` and `latestMark` by the number of
 * marks stored, and the guard's worst case, a 30-day store. Its rows of the Targets table, and
 * its section: the per-store-size table and the 30-day store's tables.
 */
import { fmtSpread, fmtUs, fmtX } from '../stats.mjs'
import { missedBy, verdict } from './verdict.mjs'

/**
 * Figure 2's target rows: sync and async latency flat over store sizes; the 30-day store's first
 * call does no file work on the JS thread.
 * @param {any} H the has-active section's result
 * @returns {string[][]}
 */
export function hasActiveTargets(H) {
  /** @type {string[][]} */
  const rows = []
  const meds = H.counts.map((/** @type {any} */ c) => c.sync.median)
  const T = H.thirtyDays
  if (T) meds.push(T.steady.sync.median)
  const worst = Math.max(...meds)
  const flat = worst / Math.min(...meds)
  const top = T ? T.marks : H.counts.at(-1).count
  rows.push([
    `2. hasActiveSync, ${H.counts[0].count}–${Math.max(top, H.counts.at(-1).count)} marks (incl. the 30-day store)`,
    '≤ 5 µs median, flat',
    `${fmtUs(Math.min(...meds))}–${fmtUs(worst)} (max/min ${fmtX(flat)})`,
    worst <= 5 && flat <= 2 ? verdict(true) : `${verdict(false)}${worst > 5 ? ` by ${fmtX(worst / 5)}` : ' (not flat)'}`,
  ])
  const ameds = H.counts.map((/** @type {any} */ c) => c.async.median)
  if (T) ameds.push(T.steady.async.median)
  const aworst = Math.max(...ameds)
  rows.push([
    `2. hasActive (async), same`,
    '≤ 5 µs median, flat',
    `${fmtUs(Math.min(...ameds))}–${fmtUs(aworst)}`,
    aworst <= 5 ? verdict(true) : missedBy(aworst / 5),
  ])
  if (T) {
    rows.push([
      `2. the guard's worst case: first hasActive on a 30-day store (${T.marks} marks, ${((T.fileBytes + T.journalBytes) / 1048576).toFixed(1)} MiB with its journal), fresh process`,
      'no file work on the JS thread',
      `the call holds the JS thread ${fmtUs(T.cold.callUs.median)} (${fmtUs(T.cold.secondCallUs.median)} once the async runtime runs); answer after ${T.cold.answerMs.median.toFixed(0)} ms (loaded off-thread); longest event-loop delay meanwhile ${T.cold.maxLagMs.median.toFixed(1)} ms`,
      T.cold.syncThrew ? verdict(true) : verdict(false),
    ])
  }
  return rows
}

/**
 * Figure 2's section.
 * @param {any} H the has-active section's result
 * @returns {string[]} Markdown lines
 */
export function hasActiveSection(H) {
  return [...hasActiveBySize(H), ...(H.thirtyDays ? thirtyDayStore(H.thirtyDays) : [])]
}

/** Per-call latency of each call by the number of marks stored. @param {any} H */
function hasActiveBySize(H) {
  const L = []
  L.push('## 2. `hasActive` (every turn end)', '')
  L.push(`Per-call latency from memory; batch means (${H.counts[0].syncBatch} sync / ${H.counts[0].asyncBatch} async calls per batch, ${H.counts[0].rounds} batches). Store ref as the plugin passes it (\`{path, maxMarksPerSession, maxAgeDays}\`) unless noted. "first load": the first \`hasActive\` in this process (the file read off-thread, the promise waiting for it).`, '')
  L.push('| marks stored | file | first load | hasActiveSync | hasActiveSync (path string) | hasActive (async) | latestMark (async; the turn guard calls it) | a sync export doing nothing, same loop |')
  L.push('|---|---|---|---|---|---|---|---|')
  for (const c of H.counts) {
    L.push(`| ${c.count} | ${(c.fileBytes / 1024).toFixed(0)} KiB | ${fmtUs(c.firstLoad)} | ${fmtSpread(c.sync)} | ${fmtSpread(c.syncString)} | ${fmtSpread(c.async)} | ${fmtSpread(c.latestMark)} | ${c.trivial ? fmtSpread(c.trivial) : '—'} |`)
  }
  L.push('')
  return L
}

/**
 * The guard's worst case: first calls in fresh processes on a 30-day store, the steady state on
 * it, and single calls while the store works on its files.
 * @param {any} T the has-active result's `thirtyDays`
 */
function thirtyDayStore(T) {
  const L = []
  L.push(`### The guard's worst case: a 30-day store`, '')
  L.push(
    `${T.marks} marks: ${T.inFile} in the store file (${(T.fileBytes / 1048576).toFixed(1)} MiB) and ${T.inJournal} plus ${T.stamps} stamps in its journal (${(T.journalBytes / 1048576).toFixed(1)} MiB, just under the size at which it is folded in: the most a load can meet). ` +
      'Sized for heavy use: 20 sessions a day × 50 checkpoints each, for the 30 days `maxAgeDays` keeps. ' +
      `First calls in fresh processes (${T.firstCallRuns} each, alternating):`,
    '',
  )
  L.push('| | the call holds the JS thread | answer | longest event-loop delay meanwhile |', '|---|---|---|---|')
  const msSpread = (/** @type {any} */ x) => `${x.median.toFixed(1)} ms [${x.p10.toFixed(1)}–${x.p90.toFixed(1)}]`
  L.push(`| cold: the process's first \`hasActive\`, nothing loaded (also starts the addon's async runtime; hasActiveSync meanwhile: ${T.cold.syncThrew ? '`STORE_LOADING`' : 'did not throw'}) | ${fmtSpread(T.cold.callUs)} | ${msSpread(T.cold.answerMs)} | ${msSpread(T.cold.maxLagMs)} |`)
  L.push(`| cold, the runtime already running (a second copy of the store) | ${fmtSpread(T.cold.secondCallUs)} | ${msSpread(T.cold.secondAnswerMs)} | ${msSpread(T.cold.secondMaxLagMs)} |`)
  L.push(`| mount: \`openStore\` (load + fold the journal into the file), off-thread | — | ${T.mount.openMs.median.toFixed(1)} ms [${T.mount.openMs.p10.toFixed(1)}–${T.mount.openMs.p90.toFixed(1)}] | |`)
  L.push(`| then the first \`hasActive\` | ${fmtSpread(T.mount.callUs)} | ${fmtSpread(T.mount.answerUs)} | |`)
  L.push('')
  const w = T.duringWork
  L.push(
    `Steady state on it: hasActiveSync ${fmtSpread(T.steady.sync)}, hasActive ${fmtSpread(T.steady.async)}, latestMark ${fmtSpread(T.steady.latestMark)}. ` +
      `Single \`hasActiveSync\` calls on it, timed one by one (${w.singleCalls}+ per row), while the store works on its files on other threads — and, as the control, while the same work runs on a copy at another path (same CPU contention, no lock shared with the reads):`,
    '',
  )
  L.push('| while | median | p99 | p99.9 | max |', '|---|---|---|---|---|')
  const row = (/** @type {string} */ what, /** @type {any} */ x) => L.push(`| ${what} | ${fmtUs(x.median)} | ${fmtUs(x.p99)} | ${fmtUs(x.p999)} | ${fmtUs(x.max)} |`)
  row('nothing', w.idle)
  row(`this process appends marks to it (${w.appends.appended} appends)`, w.appends)
  row(`… to the control copy (${w.appendsControl.appended} appends)`, w.appendsControl)
  row(`this process re-reads it whole (${w.rereads.reread}×, after another process rewrote its file)`, w.rereads)
  row(`… the control copy (${w.rereadsControl.reread}×)`, w.rereadsControl)
  L.push('')
  return L
}
