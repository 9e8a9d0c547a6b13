/**
 * @module bench/has-active
 * Figure 2, `hasActive` (run at every turn end): per-call latency from memory with 10 to
 * 100,000 marks stored — `hasActiveSync` (the turn guard can use it) and async `hasActive`,
 * plus async `latestMark` (what plugin/rewind.js's turn guard calls today).
 *
 * Each store file is written directly in the store's layout (building 100,000 marks through
 * `mark` would be 100,000 durable rewrites), with 4 marks per session; half the sessions'
 * newest mark is folded. The first call loads the file (timed separately: "first load").
 * Queries rotate over 256 session ids (a third active, a third folded, a third unknown), with
 * the store given as the plugin gives it (`{path, maxMarksPerSession, maxAgeDays}`); the
 * string form is measured too.
 *
 * Per-call times are batch means: B calls back to back (sync) or awaited one after another
 * (async), timed as a whole and divided by B, repeated R times; the table reports the median
 * and spread of those per-call means.
 */
import { mkdirSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'

import { check, emit, load, log, parseArgs, removeDir, tmpfsDir } from './lib/common.mjs'
import { addon } from './lib/ours.mjs'
import { now, quiesce, summarize, us } from './lib/stats.mjs'

const { quick, out } = parseArgs()
const COUNTS = quick ? [10, 10_000] : [10, 100, 1_000, 10_000, 100_000]
const ROUNDS = quick ? 3 : 25
const SYNC_BATCH = quick ? 2_000 : 20_000
const ASYNC_BATCH = quick ? 200 : 2_000
const MARKS_PER_SESSION = 4

const dir = tmpfsDir('has-active')
const result = { quick, load: { start: load() }, counts: /** @type {any[]} */ ([]) }

try {
  for (const count of COUNTS) {
    const r = await measure(count)
    result.counts.push(r)
    log(
      `${count} marks: hasActiveSync ${r.sync.median.toFixed(2)} µs, hasActive ${r.async.median.toFixed(1)} µs, ` +
        `latestMark ${r.latestMark.median.toFixed(1)} µs, first load ${r.firstLoad.toFixed(0)} µs`,
    )
  }
} finally {
  removeDir(dir)
}
result.load.end = load()
emit(out, result)

/** @param {number} count */
async function measure(count) {
  const file = path.join(dir, `m${count}`, 'checkpoint.json')
  const sessions = Math.ceil(count / MARKS_PER_SESSION)
  /** @type {Record<string, any>} */
  const marks = {}
  const t = Date.now() - 60_000
  let id = 0
  for (let s = 0; s < sessions; s++) {
    for (let k = 0; k < MARKS_PER_SESSION && id < count; k++) {
      id++
      const newest = k === MARKS_PER_SESSION - 1 || id === count
      marks[id] = {
        id,
        sessionId: `sess-${s}`,
        logLength: 100 * k,
        objective: 'look into it',
        createdAt: t + id,
        foldedAt: newest && s % 2 === 1 ? t + id + 1 : k < MARKS_PER_SESSION - 1 ? t + id + 1 : null,
      }
    }
  }
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  writeFileSync(file, JSON.stringify({ unit: { name: 'checkpoint', version: 1 }, global: { nextId: count + 1 }, tables: { marks } }), {
    mode: 0o600,
  })
  const store = { path: file, maxMarksPerSession: 64, maxAgeDays: 30 }

  // 256 ids: active (even sessions), folded (odd sessions), unknown.
  const ids = []
  const evens = Math.ceil(sessions / 2)
  const odds = Math.floor(sessions / 2)
  for (let i = 0; i < 256; i++) {
    const pick = (i * 7919) >>> 0
    if (i % 3 === 0) ids.push(`sess-${2 * (pick % evens)}`)
    else if (i % 3 === 1 && odds > 0) ids.push(`sess-${2 * (pick % odds) + 1}`)
    else ids.push(`unknown-${i}`)
  }

  let t0 = now()
  const first = await addon.hasActive(store, ids[0])
  const firstLoad = us(t0, now())
  check(first === true, `sess-0 is active in the ${count}-mark store`)
  check(addon.hasActiveSync(store, 'unknown-x') === false, 'unknown session is not active')
  if (sessions > 1) check(addon.hasActiveSync(store, 'sess-1') === false, 'a folded session is not active')

  /** @type {Record<string, number[]>} */
  const samples = { sync: [], syncString: [], async: [], latestMark: [] }
  let sink = 0
  for (let round = -2; round < ROUNDS; round++) {
    await quiesce(5)
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
    samples.sync.push(sync)
    samples.syncString.push(syncString)
    samples.async.push(async)
    samples.latestMark.push(latest)
  }
  check(sink > 0, 'queries ran')
  return {
    count,
    sessions,
    fileBytes: statSync(file).size,
    firstLoad,
    rounds: ROUNDS,
    syncBatch: SYNC_BATCH,
    asyncBatch: ASYNC_BATCH,
    sync: summarize(samples.sync),
    syncString: summarize(samples.syncString),
    async: summarize(samples.async),
    latestMark: summarize(samples.latestMark),
  }
}
