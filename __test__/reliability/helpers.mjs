// @ts-check
/**
 * @module __test__/reliability/helpers
 * Shared pieces of the reliability suites: the addon, temp stores, a reader of the store file
 * and its journal that does not go through the addon (the format as the README documents it), surfaces as
 * session mirrors written by hand (../helpers/mirror-records.mjs), a JS RewindHost over one, tmpfs
 * mounts, and the child-process worker.
 *
 * Run as a script (`node helpers.mjs '<json spec>'`), this file IS the worker the crash and
 * concurrency suites spawn: it marks / stamps / folds in a loop and prints one line per
 * acknowledged operation, after its promise resolved:
 *   `m <id> <sessionId>`  a mark resolved       `f <id>`  completeFold resolved true
 *   `r <id>`              a rewind resolved (the fold happened; its stamp is queued, written
 *                         before any later write of the store)
 *   `c`                   compactStore resolved (the journal is in the store file)
 * and `ready` before the loop (then waits for a `go` line on stdin when `spec.waitGo`), `done` at the end.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { addon as fold, addonPath } from '../../plugin/shared/addon.js'
import { KIND, NONE, assistant, handMirror, mirrorHost, result, user } from '../helpers/mirror-records.mjs'

export { addonPath, fold }

export const HELPERS = fileURLToPath(import.meta.url)

// ---- temp places ---------------------------------------------------------------------------

/** Temp directories of this process, removed when it exits. */
const made = new Set()
process.on('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

/** A fresh temp directory under `base` (default: the OS temp dir), removed at exit. */
export function tempDir(prefix = 'dsh-fold-rel-', base = tmpdir()) {
  const dir = mkdtempSync(path.join(base, prefix))
  made.add(dir)
  return dir
}

/** A fresh store path (the directory is created by the first write). */
export const tempStore = (base = tmpdir()) => path.join(tempDir('dsh-fold-rel-', base), 'storages', 'checkpoint.json')

/** A tmpfs-backed directory when there is one (/dev/shm), else the OS temp dir. */
export function memoryBackedBase() {
  try {
    if (statSync('/dev/shm').isDirectory()) {
      rmSync(mkdtempSync('/dev/shm/dsh-fold-probe-'), { recursive: true })
      return '/dev/shm'
    }
  } catch {}
  return tmpdir()
}

// ---- the store files, read without the addon ------------------------------------------------

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

/** CRC-32 (IEEE), as the journal's lines carry it. @param {Buffer} bytes */
export function crc32(bytes) {
  let c = 0xffffffff
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

/** One journal line (`<crc> <json>\n`) for `value`, as the store writes it. */
export function journalLine(value) {
  const json = Buffer.from(JSON.stringify(value))
  return Buffer.concat([Buffer.from(`${crc32(json).toString(16).padStart(8, '0')} `), json, Buffer.from('\n')])
}

/**
 * Reads a journal as the README documents it, independently of the addon: whole lines
 * (`<crc> <json>\n` with a matching CRC) are kept; bad bytes with no whole line after them are
 * a torn tail (dropped); a bad line followed by a whole one is corruption (throws).
 * @param {Buffer} bytes
 * @returns {{id: string | null, changes: any[], valid: number, torn: boolean}}
 */
export function parseJournal(bytes) {
  /** @type {{at: number, line: Buffer}[]} */
  const lines = []
  for (let at = 0; at < bytes.length; ) {
    const nl = bytes.indexOf(0x0a, at)
    const end = nl < 0 ? bytes.length : nl + 1
    lines.push({ at, line: bytes.subarray(at, end) })
    at = end
  }
  const whole = (/** @type {Buffer} */ line) => {
    if (line.at(-1) !== 0x0a || line.length < 11 || line[8] !== 0x20) return null
    const crc = line.subarray(0, 8).toString('latin1')
    const json = line.subarray(9, line.length - 1)
    return /^[0-9a-f]{8}$/.test(crc) && parseInt(crc, 16) === crc32(json) ? JSON.parse(json.toString('utf8')) : null
  }
  const out = { id: /** @type {string | null} */ (null), changes: /** @type {any[]} */ ([]), valid: 0, torn: false }
  for (let i = 0; i < lines.length; i++) {
    const value = whole(lines[i].line)
    if (value === null) {
      if (lines.slice(i + 1).some(({ line }) => whole(line) !== null)) throw new Error(`journal byte ${lines[i].at}: damaged before a whole line`)
      out.torn = true
      return out
    }
    if (i === 0) {
      assert.equal(value.journal, 'checkpoint', 'journal header')
      assert.equal(value.version, 1, 'journal version')
      out.id = value.id
    } else {
      out.changes.push(...value.changes)
    }
    out.valid = lines[i].at + lines[i].line.length
  }
  return out
}

/**
 * The store as any reader sees it, read without the addon: the store file (what DSH tooling
 * reads: parsed, unit checked), with its journal (`<file>.journal`) replayed onto it.
 * @param {string} file
 * @returns {{nextId: number, marks: Map<number, {id: number, sessionId: string, logLength: number, foldedAt: number | null, createdAt: number}>, raw: Buffer, base: Map<number, any>, journal: ReturnType<typeof parseJournal>}}
 */
export function readStoreFile(file) {
  const raw = readFileSync(file)
  const doc = JSON.parse(raw.toString('utf8'))
  assert.equal(doc.unit?.name, 'checkpoint', `${file}: unit`)
  assert.ok([1, 2].includes(doc.unit?.version), `${file}: unit version ${doc.unit?.version}`)
  assert.equal(typeof doc.global?.nextId, 'number', `${file}: global.nextId`)
  const marks = new Map()
  for (const [key, mark] of Object.entries(doc.tables?.marks ?? {})) {
    assert.equal(String(mark.id), key, `${file}: mark key ${key}`)
    assert.ok(mark.id < doc.global.nextId, `${file}: mark ${mark.id} is not below nextId ${doc.global.nextId}`)
    marks.set(mark.id, mark)
  }
  const base = new Map(marks)
  let nextId = doc.global.nextId
  const journalFile = `${file}.journal`
  const journal = existsSync(journalFile) ? parseJournal(readFileSync(journalFile)) : { id: null, changes: [], valid: 0, torn: false }
  for (const change of journal.changes) {
    if (change.op === 'mark') {
      if (!marks.has(change.mark.id)) marks.set(change.mark.id, { ...change.mark })
      nextId = Math.max(nextId, change.mark.id + 1)
    } else if (change.op === 'fold') {
      const mark = marks.get(change.id)
      if (mark && mark.foldedAt === null) mark.foldedAt = change.foldedAt
    } else {
      assert.fail(`${journalFile}: unknown change ${JSON.stringify(change)}`)
    }
  }
  return { nextId, marks, raw, base, journal }
}

/**
 * The bytes and inode of the store file and its journal (a rename-over changes the inode even
 * for equal bytes), or null for each that does not exist.
 */
export function fileState(file) {
  const one = (/** @type {string} */ f) => (existsSync(f) ? { bytes: readFileSync(f).toString('base64'), ino: statSync(f).ino } : null)
  return { file: one(file), journal: one(`${file}.journal`) }
}

/** Temp files a write left next to the store (`.<name>.<pid>.<n>.tmp`). */
export function strayTempFiles(file) {
  const dir = path.dirname(file)
  const prefix = `.${path.basename(file)}.`
  if (!existsSync(dir)) return []
  return spawnSync('ls', ['-A', dir], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((f) => f.startsWith(prefix) && f.endsWith('.tmp'))
}

// ---- coded errors ----------------------------------------------------------------------------

/** Asserts `e` is a dsh-fold error with `code` (and a message matching `message`, if given). */
export function assertCoded(e, code, message) {
  assert.ok(fold.isFoldError(e), `not a fold error: ${e?.stack ?? e}`)
  assert.equal(e.code, code, e.message)
  if (message) assert.match(e.message, message)
  return true
}

/** Runs `call` (sync or async) and returns what it threw or rejected with, or fails. */
export async function failure(call) {
  let value
  try {
    value = await call()
  } catch (e) {
    return e
  }
  assert.fail(`expected a failure, got ${JSON.stringify(value)}`)
}

// ---- surface snapshots -----------------------------------------------------------------------

export { KIND, NONE, assistant, result, user }

/**
 * A surface as the session's mirror, and the rewind call's message (`current`: its seq).
 * @param {import('../helpers/mirror-records.mjs').HandNode[]} nodes in model order
 * @param {{events?: number, current?: number}} [options]
 */
export function surfaceOf(nodes, { events, current } = {}) {
  return { mirror: handMirror(nodes, { events }), current }
}

/**
 * The surface of one exploration, as a session would have it when `rewind` is called:
 * the user's request, the checkpoint call and result (the mark is taken at log length
 * `anchor` = their result's seq), `steps` explored call/result pairs of `chars` each, and the
 * assistant message carrying the rewind call (current, its call still open).
 */
export function explorationSurface(anchor = 3, { steps = 1, chars = 500 } = {}) {
  const nodes = [user(0, 40)]
  for (let s = 1; s < anchor - 1; s++) nodes.push(user(s, 5))
  nodes.push(assistant(anchor - 1, 1, 12), result(anchor, anchor - 1, 8))
  let seq = anchor + 1
  for (let i = 0; i < steps; i++, seq += 2) nodes.push(assistant(seq, 1, chars / 10), result(seq + 1, seq, chars))
  nodes.push(assistant(seq, 1, 10))
  return surfaceOf(nodes, { events: seq + 1, current: seq })
}

/**
 * A RewindHost over a fixed surface: `summarize` answers `report` at once, `commit` re-checks
 * with `planMatches` as a real host must. `over` replaces any callback.
 * @param {{mirror: any, current?: number}} surface
 * @param {Partial<import('../../index.js').RewindHost>} [over]
 */
export const jsHost = mirrorHost

// ---- tmpfs -----------------------------------------------------------------------------------

/**
 * Mounts a tmpfs of `size` on a fresh directory. Returns `{dir}` or `{reason}` (not root, no
 * mount(8), no permission in this container...).
 * @returns {{dir: string, reason?: undefined} | {dir?: undefined, reason: string}}
 */
export function mountTmpfs(size = '64k') {
  if (process.platform !== 'linux') return { reason: `tmpfs mounts need Linux (this is ${process.platform})` }
  if (process.getuid?.() !== 0) return { reason: 'mounting a tmpfs needs root' }
  const dir = tempDir('dsh-fold-tmpfs-')
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { encoding: 'utf8' })
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true })
    return { reason: `mount -t tmpfs failed: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}` }
  }
  return { dir }
}

/** `mount -o remount,<flags> dir`; returns an error string or null. */
export function remount(dir, flags) {
  const r = spawnSync('mount', ['-o', `remount,${flags}`, dir], { encoding: 'utf8' })
  return r.status === 0 ? null : (r.stderr || r.error?.message || `exit ${r.status}`).trim()
}

export function unmount(dir) {
  spawnSync('umount', [dir])
  rmSync(dir, { recursive: true, force: true })
}

// ---- memory ----------------------------------------------------------------------------------

/** A full GC when node was not started with --expose-gc. */
export async function collectGarbage() {
  const v8 = await import('node:v8')
  const vm = await import('node:vm')
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc')
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((r) => setImmediate(r))
  }
}

/**
 * One reading of the process's memory, in MiB: RSS; what of it is not V8's committed heap (the
 * addon, libuv, glibc's arenas); the heap V8 has committed; and the live JS heap.
 */
export function memoryMiB() {
  const { rss, heapTotal, heapUsed } = process.memoryUsage()
  const mib = (/** @type {number} */ bytes) => bytes / 1048576
  return { rss: mib(rss), native: mib(rss - heapTotal), committed: mib(heapTotal), live: mib(heapUsed) }
}

// ---- the worker ------------------------------------------------------------------------------

/**
 * @typedef {object} WorkerSpec
 * @property {string | {path: string, maxMarksPerSession?: number}} store
 * @property {string[]} sessions  one chain of operations per session, run concurrently
 * @property {number} [count]     operations per chain (default: until killed)
 * @property {'mark' | 'mark+complete' | 'mark+rewind' | 'mark+compact' | 'compact'} ops
 *   `mark+compact` marks then folds the journal into the store file (compactStore);
 *   `compact` only folds, `count` times
 * @property {boolean} [waitGo]   wait for a `go` line on stdin before starting
 * @property {Record<string, string>} [env]  extra environment (e.g. DSH_FOLD_TEST_FAULTS)
 */

/**
 * Spawns a worker; resolves when it exits with its acknowledged lines.
 * `onReady(child)` runs when it printed `ready`.
 * @param {WorkerSpec} spec
 * @param {(child: import('node:child_process').ChildProcess) => void} [onReady]
 * @returns {Promise<{code: number | null, signal: string | null, lines: string[], stderr: string}>}
 */
export function runWorker(spec, onReady) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HELPERS, JSON.stringify(spec)], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...spec.env } })
    let out = ''
    let stderr = ''
    let ready = false
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (d) => {
      out += d
      if (!ready && out.includes('ready\n')) {
        ready = true
        onReady?.(child)
      }
    })
    child.stderr.on('data', (d) => (stderr += d))
    child.stdin.on('error', () => {}) // EPIPE when it is killed before reading `go`
    child.on('error', reject)
    // 'close' (not 'exit'): every line the worker wrote before it died has been read.
    child.on('close', (code, signal) => resolve({ code, signal, lines: out.split('\n').filter(Boolean), stderr }))
  })
}

/** Groups a worker's lines: ids marked (with their session), stamped, folded, compactions. */
export function parseAcks(lines) {
  const marked = []
  const stamped = []
  const folded = []
  let compacted = 0
  for (const line of lines) {
    const [tag, id, session] = line.split(' ')
    if (tag === 'm') marked.push({ id: Number(id), session })
    else if (tag === 'f') stamped.push(Number(id))
    else if (tag === 'r') folded.push(Number(id))
    else if (tag === 'c') compacted++
  }
  return { marked, stamped, folded, compacted }
}

/** @param {WorkerSpec} spec */
async function worker(spec) {
  if (spec.waitGo) {
    const go = new Promise((resolve) => {
      let input = ''
      process.stdin.setEncoding('utf8')
      process.stdin.on('data', (d) => {
        input += d
        if (input.includes('go\n')) resolve(undefined)
      })
    })
    process.stdout.write('ready\n')
    await go
    process.stdin.pause()
  } else {
    process.stdout.write('ready\n')
  }
  const count = spec.count ?? Infinity
  // pipes are synchronous on Linux: once write() returns the parent will read the line
  const ack = (line) => process.stdout.write(`${line}\n`)
  const chain = async (session) => {
    const anchor = 3
    const snapshot = explorationSurface(anchor)
    for (let i = 0; i < count; i++) {
      if (spec.ops === 'compact') {
        await fold.compactStore(spec.store)
        ack('c')
        continue
      }
      const m = await fold.mark(spec.store, session, anchor, `step ${i}`)
      ack(`m ${m.id} ${session}`)
      if (spec.ops === 'mark+complete') {
        if (!(await fold.completeFold(spec.store, session, m.id))) throw new Error(`completeFold(${m.id}) was false`)
        ack(`f ${m.id}`)
      } else if (spec.ops === 'mark+rewind') {
        const r = await fold.rewind(spec.store, session, jsHost(snapshot))
        if (r.markId !== m.id) throw new Error(`rewind folded ${r.markId}, expected ${m.id}`)
        ack(`r ${m.id}`)
      } else if (spec.ops === 'mark+compact') {
        await fold.compactStore(spec.store)
        ack('c')
      }
    }
  }
  await Promise.all(spec.sessions.map(chain))
  ack('done')
}

if (process.argv[1] === HELPERS) {
  worker(JSON.parse(process.argv[2])).catch((e) => {
    process.stderr.write(`worker failed: ${e?.stack ?? e} (code ${e?.code})\n`)
    process.exit(3)
  })
}
