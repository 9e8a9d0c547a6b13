/**
 * @module bench/has-active
 * Figure 2, the turn guard's store read (`hasActive` / `latestMark`, at every turn end).
 *
 * 1. Steady state, 10 to 100,000 marks stored: per-call latency from memory of
 *    `hasActiveSync`, async `hasActive` and async `latestMark` (what plugin/fold/rewind.js's guard
 *    calls). Store files are written directly in the store's layout (bench/lib/store-files.mjs),
 *    4 marks per session, half the sessions' newest mark folded; queries rotate over 256
 *    session ids (a third active, a third folded, a third unknown), the store given as the
 *    plugin gives it (`{path, maxMarksPerSession, maxAgeDays}`), and as a path string.
 * 2. The guard's worst case, a 30-day store: 30,000 marks, 20,000 of them in the store file and
 *    10,000 (plus 10,000 stamps) in a journal just under the size at which it is folded in —
 *    the most a load can find. Sized for heavy use: 20 sessions a day × 50 checkpoints each,
 *    for the 30 days the default `maxAgeDays` keeps (the 64-marks-per-session cap never binds
 *    at 50). Measured in fresh processes (the first load is per process):
 *    - cold: the first `hasActive` with nothing loaded: how long the call itself holds the JS
 *      thread, when its answer arrives (the load runs off-thread), and the longest event-loop
 *      delay while it loads (perf_hooks' monitorEventLoopDelay, 1 ms resolution); the process's
 *      first async call also starts the addon's async runtime, so the same is measured again
 *      on a second copy of the store once it runs;
 *    - mount: `openStore` at plugin mount (the load plus folding the journal into the file),
 *      then the first `hasActive`.
 *    Then, in this process: the steady state on that store, and single `hasActiveSync` calls
 *    timed one by one while the store does file work on other threads — appends by this
 *    process, and full re-reads (another process rewrites the file, then `listMarks` here
 *    reads it whole): a reader that waited for a parse would show it in the maximum.
 *    And recall's owner lookup on that store (which session a mark id belongs to, asked when a
 *    `recall({fold: id})` names a fold this session does not have): before round 3 it listed the
 *    whole store (`listMarks(store, null)`, then a scan); now `findMark(store, id)`, one mark's
 *    lookup from memory. Both timed in this run, interleaved, on the same ids (ms per call).
 *
 * Per-call times of section 1 and the steady state are batch means (B calls back to back or
 * awaited one after another, divided by B), repeated R times; median and spread of those.
 *
 * Run as `node bench/has-active.mjs --child <cold|mount> <store file>`, it is the fresh
 * process of section 2 and prints one JSON line.
 */
import { spawn, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

import { check, emit, load, log, parseArgs, removeDir, tmpfsDir } from './lib/common.mjs'
import { addon } from './lib/ours.mjs'
import { now, quiesce, summarize, us } from './lib/stats.mjs'
import { makeMarks, writeStore } from './lib/store-files.mjs'

const SELF = fileURLToPath(import.meta.url)
const REF = (/** @type {string} */ file) => ({ path: file, maxMarksPerSession: 64, maxAgeDays: 30 })

if (process.argv[2] === '--child') {
  await child(/** @type {'cold' | 'mount'} */ (process.argv[3]), process.argv[4], process.argv[5])
  process.exit(0)
}

const { quick, out } = parseArgs()
const COUNTS = quick ? [10, 10_000] : [10, 100, 1_000, 10_000, 100_000]
const ROUNDS = quick ? 3 : 25
const SYNC_BATCH = quick ? 2_000 : 20_000
const ASYNC_BATCH = quick ? 200 : 2_000
const THIRTY_DAYS = quick ? { base: 2_000, journal: 1_000 } : { base: 20_000, journal: 10_000 }
const FIRST_CALL_RUNS = quick ? 1 : 7
const SINGLE_CALLS = quick ? 2_000 : 20_000

const dir = tmpfsDir('has-active')
const result = {
  quick,
  load: { start: load() },
  counts: /** @type {any[]} */ ([]),
  thirtyDays: /** @type {any} */ (null),
}

try {
  for (const count of COUNTS) {
    const file = path.join(dir, `m${count}`, 'checkpoint.json')
    writeStore(file, makeMarks(count))
    const r = await steadyState(file, Math.ceil(count / 4))
    result.counts.push({ count, fileBytes: statSync(file).size, ...r })
    log(`${count} marks: hasActiveSync ${r.sync.median.toFixed(2)} µs, hasActive ${r.async.median.toFixed(1)} µs, latestMark ${r.latestMark.median.toFixed(1)} µs, first load ${r.firstLoad.toFixed(0)} µs`)
  }
  result.thirtyDays = await thirtyDays()
} finally {
  removeDir(dir)
}
result.load.end = load()
emit(out, result)

// ---------------------------------------------------------------------------------------------

/** 256 session ids: active (even sessions), folded (odd sessions), unknown. @param {number} sessions */
function queryIds(sessions) {
  const ids = []
  const evens = Math.ceil(sessions / 2)
  const odds = Math.floor(sessions / 2)
  for (let i = 0; i < 256; i++) {
    const pick = (i * 7919) >>> 0
    if (i % 3 === 0) ids.push(`sess-${2 * (pick % evens)}`)
    else if (i % 3 === 1 && odds > 0) ids.push(`sess-${2 * (pick % odds) + 1}`)
    else ids.push(`unknown-${i}`)
  }
  return ids
}

/** Loads `file` (timed: "first load", in this process) and measures the reads from memory. */
async function steadyState(/** @type {string} */ file, /** @type {number} */ sessions) {
  const store = REF(file)
  const ids = queryIds(sessions)
  let t0 = now()
  const first = await addon.hasActive(store, ids[0])
  const firstLoad = us(t0, now())
  check(first === true, `sess-0 is active in ${file}`)
  check(addon.hasActiveSync(store, 'unknown-x') === false, 'unknown session is not active')
  if (sessions > 1) check(addon.hasActiveSync(store, 'sess-1') === false, 'a folded session is not active')

  /** @type {Record<string, number[]>} */
  const samples = { trivial: [], sync: [], syncString: [], async: [], latestMark: [] }
  let sink = 0
  for (let round = -2; round < ROUNDS; round++) {
    await quiesce(5)
    // The same loop around a sync export that does nothing: what any call costs right now
    // (a busy machine raises both).
    t0 = now()
    for (let i = 0; i < SYNC_BATCH; i++) if (addon.isFoldError(ids[i & 255])) sink++
    const trivial = us(t0, now()) / SYNC_BATCH
    t0 = now()
    for (let i = 0; i < SYNC_BATCH; i++) if (addon.hasActiveSync(store, ids[i & 255])) sink++
    const sync = us(t0, now()) / SYNC_BATCH
    t0 = now()
    for (let i = 0; i < SYNC_BATCH; i++) if (addon.hasActiveSync(file, ids[i & 255])) sink++
    const syncString = us(t0, now()) / SYNC_BATCH
    t0 = now()
    for (let i = 0; i < ASYNC_BATCH; i++) if (await addon.hasActive(store, ids[i & 255])) sink++
    const async = us(t0, now()) / ASYNC_BATCH
    t0 = now()
    for (let i = 0; i < ASYNC_BATCH; i++) if ((await addon.latestMark(store, ids[i & 255]))?.foldedAt === null) sink++
    const latest = us(t0, now()) / ASYNC_BATCH
    if (round < 0) continue
    samples.trivial.push(trivial)
    samples.sync.push(sync)
    samples.syncString.push(syncString)
    samples.async.push(async)
    samples.latestMark.push(latest)
  }
  check(sink > 0, 'queries ran')
  return {
    sessions,
    firstLoad,
    rounds: ROUNDS,
    syncBatch: SYNC_BATCH,
    asyncBatch: ASYNC_BATCH,
    trivial: summarize(samples.trivial),
    sync: summarize(samples.sync),
    syncString: summarize(samples.syncString),
    async: summarize(samples.async),
    latestMark: summarize(samples.latestMark),
  }
}

/** The 30-day store: written once, then measured from fresh processes and from this one. */
async function thirtyDays() {
  const file = path.join(dir, 'thirty-days', 'checkpoint.json')
  const { base, journal } = THIRTY_DAYS
  const t = Date.now() - 29 * 86_400_000
  const marks = makeMarks(base, { perSession: 50, createdAt: t })
  const later = makeMarks(journal, { perSession: 50, firstId: base + 1, sessionPrefix: 'late-', createdAt: t + 20 * 86_400_000 })
  // The journal as writers leave it: each mark appended active, each stamped later.
  const journaled = later.map((m) => ({ ...m, foldedAt: null }))
  const folds = later.filter((m) => m.foldedAt !== null).map((m) => ({ id: m.id, foldedAt: m.foldedAt }))
  const sizes = writeStore(file, marks, { marks: journaled, folds })
  check(sizes.journalBytes < Math.max(64 << 10, sizes.fileBytes), 'the journal is under the size at which it is folded in')
  const total = base + journal

  /** @type {{cold: any[], mount: any[]}} */
  const runs = { cold: [], mount: [] }
  for (let i = 0; i < FIRST_CALL_RUNS; i++) {
    for (const mode of /** @type {const} */ (i % 2 ? ['mount', 'cold'] : ['cold', 'mount'])) {
      // A copy: openStore folds the journal into the file, and the cold child loads a second
      // store too (its first call also starts the addon's async runtime, once per process).
      const target = path.join(dir, `${mode}-${i}`, 'checkpoint.json')
      mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 })
      copyFileSync(file, target)
      copyFileSync(`${file}.journal`, `${target}.journal`)
      await quiesce(20)
      const r = spawnSync(process.execPath, ['--expose-gc', SELF, '--child', mode, target, file], { encoding: 'utf8' })
      check(r.status === 0, `the ${mode} child ran: ${r.stderr}`)
      const sample = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}')
      check(sample.marks === total, `the ${mode} child saw all ${total} marks (${sample.marks})`)
      runs[mode].push(sample)
      removeDir(path.dirname(target))
    }
  }
  const pick = (/** @type {any[]} */ samples, /** @type {string} */ key) => summarize(samples.map((s) => s[key]))
  const cold = {
    callUs: pick(runs.cold, 'callUs'),
    answerMs: pick(runs.cold, 'answerMs'),
    maxLagMs: pick(runs.cold, 'maxLagMs'),
    secondCallUs: pick(runs.cold, 'secondCallUs'),
    secondAnswerMs: pick(runs.cold, 'secondAnswerMs'),
    secondMaxLagMs: pick(runs.cold, 'secondMaxLagMs'),
    syncThrew: runs.cold.every((s) => s.syncThrew === 'STORE_LOADING'),
  }
  const mount = { openMs: pick(runs.mount, 'openMs'), callUs: pick(runs.mount, 'callUs'), answerUs: pick(runs.mount, 'answerUs') }
  log(
    `30 days (${total} marks): cold first hasActive holds the JS thread ${cold.callUs.median.toFixed(0)} µs, answers after ${cold.answerMs.median.toFixed(0)} ms, ` +
      `max event-loop delay ${cold.maxLagMs.median.toFixed(1)} ms; openStore ${mount.openMs.median.toFixed(0)} ms then first hasActive ${mount.answerUs.median.toFixed(1)} µs`,
  )

  const steady = await steadyState(file, Math.ceil(base / 50))
  const duringWork = await readersDuringFileWork(file)
  const w = duringWork
  log(
    `30 days steady: hasActiveSync ${steady.sync.median.toFixed(2)} µs; single calls p99 / max: idle ${w.idle.p99.toFixed(1)} / ${w.idle.max.toFixed(0)} µs, ` +
      `appends ${w.appends.p99.toFixed(1)} / ${w.appends.max.toFixed(0)} µs (control ${w.appendsControl.p99.toFixed(1)} / ${w.appendsControl.max.toFixed(0)}), ` +
      `re-reads ${w.rereads.p99.toFixed(1)} / ${w.rereads.max.toFixed(0)} µs (control ${w.rereadsControl.p99.toFixed(1)} / ${w.rereadsControl.max.toFixed(0)})`,
  )
  const owner = await ownerLookup(file, total)
  log(
    `30 days owner lookup: findMark ${owner.findMark.median.toFixed(4)} ms, listMarks + scan (before) ${owner.listMarks.median.toFixed(2)} ms ` +
      `(${(owner.listMarks.median / owner.findMark.median).toFixed(0)}x)`,
  )
  return { marks: total, inFile: base, inJournal: journal, stamps: folds.length, ...sizes, firstCallRuns: FIRST_CALL_RUNS, cold, mount, steady, duringWork, owner }
}

/**
 * Recall's owner lookup, the old way (the whole listing, then a scan) and the new (`findMark`),
 * interleaved on the same ids; each call's time in ms.
 * @param {string} file @param {number} total
 */
async function ownerLookup(file, total) {
  const store = REF(file)
  await addon.openStore(store)
  const reps = quick ? 5 : 40
  const times = { listMarks: /** @type {number[]} */ ([]), findMark: /** @type {number[]} */ ([]) }
  await quiesce()
  for (let i = 0; i < reps; i++) {
    const id = 1 + ((i * 7919) % total)
    let t0 = now()
    const listed = (await addon.listMarks(store, null)).find((/** @type {any} */ m) => m.id === id)
    times.listMarks.push(us(t0, now()) / 1000)
    t0 = now()
    const found = await addon.findMark(store, id)
    times.findMark.push(us(t0, now()) / 1000)
    check(listed !== undefined && JSON.stringify(found) === JSON.stringify(listed), `findMark(${id}) answers what the listing holds`)
  }
  check((await addon.findMark(store, total + 1)) === null, 'an unknown id is null')
  return { marks: total, listMarks: summarize(times.listMarks), findMark: summarize(times.findMark), n: reps, unit: 'ms' }
}

/**
 * Single `hasActiveSync` calls timed one by one (each call its own sample) on the 30-day store
 * while nothing else runs, while this process appends marks, and while it re-reads a store
 * whole after another process rewrote it. Each busy condition runs twice: on the store being
 * read, and, as the control, on a copy at another path (the same work competing for the same
 * two cores, sharing no lock with the reads). A reader that waited for a write or a parse would
 * show up as the first of each pair being slower than its control; the scheduler's ticks
 * (4 ms on this kernel) show up in both.
 * @param {string} file
 */
async function readersDuringFileWork(file) {
  const control = path.join(dir, 'control', 'checkpoint.json')
  mkdirSync(path.dirname(control), { recursive: true, mode: 0o700 })
  copyFileSync(file, control)
  copyFileSync(`${file}.journal`, `${control}.journal`)
  const store = REF(file)
  const ids = queryIds(100)
  await addon.openStore(REF(control))
  const sample = async (/** @type {() => boolean} */ busy) => {
    const times = []
    let i = 0
    while (times.length < SINGLE_CALLS || busy()) {
      const t0 = now()
      addon.hasActiveSync(store, ids[i++ & 255])
      times.push(us(t0, now()))
      if ((i & 63) === 0) await new Promise((r) => setImmediate(r)) // let settled promises run
    }
    return times
  }
  const spread = (/** @type {number[]} */ times) => {
    const sorted = [...times].sort((a, b) => a - b)
    return { ...summarize(times), p99: sorted[Math.floor(sorted.length * 0.99)], p999: sorted[Math.floor(sorted.length * 0.999)] }
  }
  const appending = async (/** @type {string} */ target) => {
    let writing = true
    let appended = 0
    const writer = (async () => {
      while (writing) await addon.mark(REF(target), 'bench-writer', appended++)
    })()
    const times = await sample(() => appended < 200)
    writing = false
    await writer
    return { ...spread(times), appended }
  }
  const rereading = async (/** @type {string} */ target) => {
    const compactor = `require(${JSON.stringify(path.resolve(path.dirname(SELF), '..'))}).compactStore(${JSON.stringify(target)})`
    let reread = 0
    let finished = false
    const work = (async () => {
      for (let k = 0; k < (quick ? 2 : 6); k++) {
        await new Promise((resolve, reject) => spawn(process.execPath, ['-e', compactor], { stdio: 'ignore' }).on('exit', (c) => (c === 0 ? resolve(undefined) : reject(new Error(`compactor exit ${c}`)))))
        check((await addon.listMarks(REF(target))).length > 0, 'the re-read listing has marks')
        reread++
      }
    })().finally(() => (finished = true))
    const times = await sample(() => !finished)
    await work
    return { ...spread(times), reread }
  }

  await quiesce(20)
  const idle = spread(await sample(() => false))
  const out = { singleCalls: SINGLE_CALLS, idle, appends: {}, appendsControl: {}, rereads: {}, rereadsControl: {} }
  for (const [key, run] of /** @type {const} */ ([
    ['appends', () => appending(file)],
    ['appendsControl', () => appending(control)],
    ['rereadsControl', () => rereading(control)],
    ['rereads', () => rereading(file)],
  ])) {
    await quiesce(20)
    out[key] = await run()
  }
  return out
}

// ---- the fresh process of section 2 ----------------------------------------------------------

/** @param {'cold' | 'mount'} mode @param {string} file @param {string} second another copy of the store */
async function child(mode, file, second) {
  const store = REF(file)
  const out = /** @type {Record<string, any>} */ ({})
  globalThis.gc?.()
  await new Promise((r) => setTimeout(r, 30))
  if (mode === 'cold') {
    const lag = monitorEventLoopDelay({ resolution: 1 })
    lag.enable()
    const t0 = now()
    const pending = addon.hasActive(store, 'sess-0')
    out.callUs = us(t0, now())
    try {
      addon.hasActiveSync(store, 'sess-0')
      out.syncThrew = null
    } catch (e) {
      out.syncThrew = /** @type {any} */ (e).code
    }
    const active = await pending
    out.answerMs = us(t0, now()) / 1000
    lag.disable()
    out.maxLagMs = lag.max / 1e6
    check(active === true, 'sess-0 is active')
    // The same cold load of another store, now that the async runtime runs.
    await new Promise((r) => setTimeout(r, 30))
    const lag2 = monitorEventLoopDelay({ resolution: 1 })
    lag2.enable()
    const t1 = now()
    const pending2 = addon.hasActive(REF(second), 'sess-0')
    out.secondCallUs = us(t1, now())
    check((await pending2) === true, 'sess-0 is active in the second store')
    out.secondAnswerMs = us(t1, now()) / 1000
    lag2.disable()
    out.secondMaxLagMs = lag2.max / 1e6
  } else {
    let t0 = now()
    await addon.openStore(store)
    out.openMs = us(t0, now()) / 1000
    t0 = now()
    const pending = addon.hasActive(store, 'sess-0')
    out.callUs = us(t0, now())
    check((await pending) === true, 'sess-0 is active')
    out.answerUs = us(t0, now())
  }
  out.marks = (await addon.listMarks(store)).length
  console.log(JSON.stringify(out))
}
