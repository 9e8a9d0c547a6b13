/**
 * @module bench/mark
 * Figure 3, durable `mark` vs the disk floor, on a real disk directory (bench/tmp/, not
 * tmpfs), in the same run, interleaved.
 *
 * Two floors, each the cheapest way from JS to make one change durable, on the same directory
 * (synchronous calls, no thread hop):
 * - the rewrite floor ("the disk floor" of the targets): one atomic durable file write —
 *   `open(temp, 'wx', 0600)` → write → `fsync` → close → `rename` over the target → `fsync` the
 *   directory — of a one-mark store file;
 * - the append floor: `open(file, 'a')` → write one journal-sized line (~200 B) → `fdatasync` →
 *   close: the least a durable append costs, which is what a mark is now.
 *
 * Cases:
 * - `steady`: one session, the default 64-mark cap, warmed up past the cap (every mark prunes
 *   one): a user's store.
 * - `10k`: the store starts with 10,000 marks (200 sessions × 50) in its file, and `mark` adds
 *   to one of them.
 * Marks are journal appends; once the journal outgrows the file (and 64 KiB) the mark that
 * finds it so also folds it into the file, after its caller has its answer. That rewrite is
 * timed on its own (`compactStore` of the 10k store, interleaved with the rest) and spread
 * over the marks between two rewrites ("amortized").
 */
import { closeSync, fdatasyncSync, fsyncSync, mkdirSync, openSync, renameSync, statSync, writeSync } from 'node:fs'
import path from 'node:path'

import { check, diskDir, emit, load, log, parseArgs, removeDir } from './lib/common.mjs'
import { addon } from './lib/ours.mjs'
import { now, quiesce, summarize, us } from './lib/stats.mjs'
import { makeMarks, writeStore } from './lib/store-files.mjs'

const { quick, out } = parseArgs()
const ROUNDS = quick ? 4 : 60
/** Bytes of journal between two rewrites of a store file of `fileBytes` (commit.rs). */
const compactAfter = (/** @type {number} */ fileBytes) => Math.max(64 << 10, fileBytes)
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
function rewriteFloor(target, bytes) {
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
 * One durable append of `bytes` to `target`, as cheaply as JS can.
 * @param {string} target @param {Buffer} bytes
 */
function appendFloor(target, bytes) {
  const fd = openSync(target, 'a', 0o600)
  try {
    writeSync(fd, bytes)
    fdatasyncSync(fd)
  } finally {
    closeSync(fd)
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
    writeStore(file, makeMarks(preload, { perSession: 50 }))
    await addon.mark(store, session, 1, 'look into it') // the first write starts the journal
  } else {
    // Past the 64-mark cap: every further mark prunes one.
    for (let i = 0; i < 70; i++) await addon.mark(store, session, i, 'look into it')
  }
  // The payloads of the floors: a one-session store, and a journal line of a mark.
  const smallBytes = Buffer.from(
    JSON.stringify({
      unit: { name: 'checkpoint', version: 2 },
      global: { nextId: 2 },
      tables: { marks: { 1: { id: 1, sessionId: session, logLength: 1, objective: 'look into it', createdAt: Date.now(), foldedAt: null } } },
    }),
  )
  const lineBytes = Buffer.from(
    `01234567 ${JSON.stringify({ changes: [{ op: 'mark', mark: { id: 10001, sessionId: session, logLength: 1000, objective: 'look into it', createdAt: Date.now(), foldedAt: null } }] })}\n`,
  )
  const floorTarget = path.join(caseDir, 'floor.json')
  const appendTarget = path.join(caseDir, 'floor.journal')
  const kinds = ['mark', 'rewriteFloor', 'appendFloor', 'compaction']
  /** @type {Record<string, number[]>} */
  const samples = Object.fromEntries(kinds.map((k) => [k, []]))
  let logLength = 1000
  let rewritesSeen = 0
  let lastIno = statSync(file).ino
  for (let round = -3; round < ROUNDS; round++) {
    const order = kinds.map((_, k) => kinds[(k + round + 3) % kinds.length])
    for (const which of order) {
      if (which === 'compaction' && (preload === 0 || quick)) continue
      await quiesce(2)
      const t0 = now()
      if (which === 'mark') {
        const m = await addon.mark(store, session, logLength++, 'look into it')
        check(m.logLength === logLength - 1, 'mark returns its anchor')
      } else if (which === 'rewriteFloor') rewriteFloor(floorTarget, smallBytes)
      else if (which === 'appendFloor') appendFloor(appendTarget, lineBytes)
      else await addon.compactStore(store)
      const t = us(t0, now())
      if (round >= 0) samples[which].push(t)
      // A new inode after a mark: that mark's commit rewrote the file (the journal was due).
      const ino = statSync(file).ino
      if (which === 'mark' && ino !== lastIno) rewritesSeen++
      lastIno = ino
    }
  }
  const latest = await addon.latestMark(store, session)
  check(latest?.logLength === logLength - 1, 'the last mark is the latest')
  const marksNow = (await addon.listMarks(store)).length
  const fileBytes = statSync(file).size
  const journalBytes = statSync(`${file}.journal`).size
  const stats = Object.fromEntries(Object.entries(samples).filter(([, v]) => v.length).map(([k, v]) => [k, summarize(v)]))
  // A rewrite of the file comes once per `compactAfter(fileBytes)` bytes of journal.
  const marksPerRewrite = Math.floor(compactAfter(fileBytes) / lineBytes.length)
  const amortizedUs = stats.compaction ? stats.compaction.median / marksPerRewrite : undefined
  log(
    `${name}: mark ${stats.mark.median.toFixed(0)} µs, rewrite floor ${stats.rewriteFloor.median.toFixed(0)} µs, append floor ${stats.appendFloor.median.toFixed(0)} µs` +
      (stats.compaction ? `, compaction ${stats.compaction.median.toFixed(0)} µs every ~${marksPerRewrite} marks (+${amortizedUs?.toFixed(1)} µs per mark)` : '') +
      `, ${marksNow} marks, file ${fileBytes} B + journal ${journalBytes} B`,
  )
  return { name, preload, rounds: ROUNDS, marksInStore: marksNow, fileBytes, journalBytes, smallBytes: smallBytes.length, lineBytes: lineBytes.length, marksPerRewrite, amortizedUs, rewritesDuringMarks: rewritesSeen, ...stats }
}
