/**
 * @module bench/lib/common
 * What every benchmark section shares: its command line, scratch directories (tmpfs and a
 * real-disk directory), the machine's load, and writing its JSON result.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const BENCH_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
export const ROOT = path.dirname(BENCH_DIR)

/** `--quick`, `--out FILE` and `--key=value` options of a section. */
export function parseArgs(argv = process.argv.slice(2)) {
  /** @type {Record<string, string | boolean>} */
  const opts = {}
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (!a.startsWith('--')) continue
    const eq = a.indexOf('=')
    if (eq > 0) opts[a.slice(2, eq)] = a.slice(eq + 1)
    else if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) opts[a.slice(2)] = argv[++i]
    else opts[a.slice(2)] = true
  }
  return { quick: opts.quick === true, out: typeof opts.out === 'string' ? opts.out : undefined, opts }
}

/** A fresh directory on tmpfs (/dev/shm; falls back to the OS temp dir). @param {string} tag */
export function tmpfsDir(tag) {
  const base = process.platform === 'linux' ? '/dev/shm' : os.tmpdir()
  return mkdtempSync(path.join(base, `dsh-fold-bench-${tag}-`))
}

/** A fresh directory on the real disk, under bench/tmp/ (git-ignored). @param {string} tag */
export function diskDir(tag) {
  const base = path.join(BENCH_DIR, 'tmp')
  mkdirSync(base, { recursive: true })
  return mkdtempSync(path.join(base, `${tag}-`))
}

/** @param {string} dir */
export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true })
}

/** 1-minute load average (a busy shared machine shows here). */
export const load = () => Number(os.loadavg()[0].toFixed(2))

/**
 * Writes the section's result (JSON) to `--out`, or prints it.
 * @param {string | undefined} out @param {any} result
 */
export function emit(out, result) {
  const json = JSON.stringify(result, null, 2)
  if (out) writeFileSync(out, json)
  else console.log(json)
}

/** Logs progress to stderr (stdout may carry the result). @param {...any} args */
export const log = (...args) => console.error('  ', ...args)

/** Throws when a correctness check of the benchmark fails (these are asserted even with --quick). */
export function check(cond, /** @type {string} */ what) {
  if (!cond) throw new Error(`bench check failed: ${what}`)
}
