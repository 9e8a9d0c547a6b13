/**
 * @module bench/mark
 * Figure 3, durable `mark` vs the disk floor, on a real disk directory (bench/tmp/, not
 * tmpfs), in the same run, interleaved.
 *
 * The floor is one atomic durable file write done the cheapest way from JS, on the same
 * directory: `open(temp, 'wx', 0600)` → write → `fsync` → close → `rename` over the target →
 * `fsync` the directory (synchronous calls, no thread hop). It is measured twice per round:
 * with a payload the size of a one-session store file ("small floor"), and with a payload the
 * size of the store file `mark` is rewriting at that moment ("same-size floor").
 *
 * Cases:
 * - `steady`: one session, the default 64-mark cap, warmed up past the cap (the file holds
 *   64 marks and every mark prunes one): a user's store.
 * - `10k`: the file starts with 10,000 marks (200 sessions × 50) and `mark` adds to one of
 *   them (the store rewrites all 10,000 each time).
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'

import { check, diskDir, emit, load, log, parseArgs, removeDir } from './lib/common.mjs'
import { addon } from './lib/ours.mjs'
import { now, quiesce, summarize, us } from './lib/stats.mjs'

const { quick, out } = parseArgs()
const ROUNDS = quick ? 4 : 60
let tempCounter = 0
const dir = diskDir('mark')
const result = { quick, load: { start: load() }, dir: path.relative(process.cwd(), dir), cases: /** @type {any[]} */ ([]) }

try {
  result.cases.push(await measure('steady', 0))
  result.cases.push(await measure('10k', 10_000))
} finally {
  removeDir(dir)
}
result.load.end = load()
emit(out, result)

/**
 * One atomic durable write of `bytes` over `target`, as cheaply as JS can.
 * @param {string} target @param {Buffer} bytes
 */
function floorWrite(target, bytes) {
  const temp = `${target}.${process.pid}.${tempCounter++}.tmp`
  const fd = openSync(temp, 'wx', 0o600)
  try {
    writeSync(fd, bytes)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(temp, target)
  const d = openSync(path.dirname(target), 'r')
  try {
    fsyncSync(d)
  } finally {
    closeSync(d)
  }
}

/**
 * @param {string} name @param {number} preload marks already in the file
 */
async function measure(name, preload) {
  const caseDir = path.join(dir, name)
  mkdirSync(caseDir, { recursive: true, mode: 0o700 })
  const file = path.join(caseDir, 'checkpoint.json')
  const store = { path: file, maxMarksPerSession: 64, maxAgeDays: 30 }
  const session = 'sess-0'
  if (preload > 0) {
    /** @type {Record<string, any>} */
    const marks = {}
    const t = Date.now() - 60_000
    for (let id = 1; id <= preload; id++) {
      marks[id] = { id, sessionId: `sess-${(id - 1) % 200}`, logLength: 10 * id, objective: 'look into it', createdAt: t + id, foldedAt: t + id + 1 }
    }
    writeFileSync(file, JSON.stringify({ unit: { name: 'checkpoint', version: 1 }, global: { nextId: preload + 1 }, tables: { marks } }), { mode: 0o600 })
  } else {
    // Past the 64-mark cap: every further mark prunes one.
    for (let i = 0; i < 70; i++) await addon.mark(store, session, i, 'look into it')
  }
  // The payloads of the floor: a one-session store, and the file as it is now.
  const smallBytes = Buffer.from(
    JSON.stringify({
      unit: { name: 'checkpoint', version: 1 },
      global: { nextId: 2 },
      tables: { marks: { 1: { id: 1, sessionId: session, logLength: 1, objective: 'look into it', createdAt: Date.now(), foldedAt: null } } },
    }),
  )
  const floorTarget = path.join(caseDir, 'floor.json')
  /** @type {Record<string, number[]>} */
  const samples = { mark: [], floorSmall: [], floorSame: [] }
  let sameBytes = Buffer.alloc(0)
  let logLength = 1000
  for (let round = -3; round < ROUNDS; round++) {
    sameBytes = Buffer.alloc(statSync(file).size, 0x20)
    const order = [0, 1, 2].map((k) => (k + round + 3) % 3)
    for (const which of order) {
      await quiesce(2)
      const t0 = now()
      if (which === 0) {
        const m = await addon.mark(store, session, logLength++, 'look into it')
        check(m.logLength === logLength - 1, 'mark returns its anchor')
      } else if (which === 1) floorWrite(floorTarget, smallBytes)
      else floorWrite(floorTarget, sameBytes)
      const t = us(t0, now())
      if (round >= 0) samples[['mark', 'floorSmall', 'floorSame'][which]].push(t)
    }
  }
  const latest = await addon.latestMark(store, session)
  check(latest?.logLength === logLength - 1, 'the last mark is the latest')
  const marksNow = (await addon.listMarks(store)).length
  const stats = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]))
  log(
    `${name}: mark ${stats.mark.median.toFixed(0)} µs, floor ${stats.floorSmall.median.toFixed(0)} µs (${smallBytes.length} B), ` +
      `same-size floor ${stats.floorSame.median.toFixed(0)} µs (${sameBytes.length} B), ${marksNow} marks`,
  )
  return { name, preload, rounds: ROUNDS, marksInFile: marksNow, fileBytes: sameBytes.length, smallBytes: smallBytes.length, ...stats }
}
