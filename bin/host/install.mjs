// @ts-check
/**
 * @module bin/host/install
 * The pinned DeepSeek Harness host and a Node 22 to run it, installed from the npm registry
 * into a cache this module owns. `dsh-fold try` uses it when no host is installed; the test
 * harness uses it for every host it boots (one implementation, so what the tests boot is what
 * `try` boots).
 *
 * `ensureHost({cache})` returns `{node22, hostDir}`: `node22` an absolute path to a Node >= 22
 * binary, `hostDir` a folder whose `node_modules` holds `@deepseek-ai/dsh` and every package
 * the `headless` and `web` profiles load. Idempotent: each part lives in a folder named by a
 * hash of its pins (`node-<hash>/`, `host-<hash>/`) and is ready only once its `.ready` stamp
 * exists, so a changed pin installs afresh and an interrupted install is redone (it installs
 * into a temp folder `<kind>-<hash>.tmp-<pid>` and renames it into place). A fill that fails
 * removes its temp folder; the temp folders of installers that died (kill -9, a power cut) are
 * swept by the next call, while a live installer's stay. Concurrent callers serialize on a
 * `<kind>.lock` file holding the installer's pid; a dead holder's lock is broken. Needs only
 * Node (>= 20) and npm. Progress and the cold install time go to stderr, prefixed `log`'s way.
 *
 * Why this recipe (`npm install --legacy-peer-deps --ignore-scripts` of the host plus the
 * non-optional peers it would have resolved, named): a plain `npm install
 * @deepseek-ai/dsh@0.1.0-rc.8` spends more than ten minutes in npm's peer resolution; this
 * one finishes in about 40 s cold (451 packages, ~280 MB). The pins are part of the cache's
 * folder names: changing one reinstalls every cache that holds the old set.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'

/** The host version every pin follows. */
export const DSH_VERSION = '0.1.0-rc.8'
/** The Node package for this platform (a registry package shipping bin/node). */
export const NODE_PIN = [`node-${process.platform}-${process.arch}@22.23.5`]
const HOST_EXTRAS = [
  'dsh-anonymous-user-id', 'dsh-atomic-write', 'dsh-bash-local', 'dsh-code-runtime',
  'dsh-compaction', 'dsh-fs', 'dsh-invariants', 'dsh-output-retention', 'dsh-sandbox',
  'dsh-scope', 'dsh-session-telemetry', 'dsh-session-title-llm', 'dsh-shell', 'dsh-spill',
  'dsh-subagent-in-process-driver', 'dsh-timeout', 'dsh-workflow',
]
/** The host pins; `npm install` on all of them at once is the recipe known to finish. */
export const HOST_PIN = [
  `@deepseek-ai/dsh@${DSH_VERSION}`, '@deepseek-ai/cordis-plugin-group@1.0.4',
  ...HOST_EXTRAS.map((n) => `@deepseek-ai/${n}@${DSH_VERSION}`),
]
const NPM_FLAGS = ['--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error']

/** dsh-fold's own cache for `try`: `$DSH_FOLD_CACHE`, else `$XDG_CACHE_HOME/dsh-fold`, else `~/.cache/dsh-fold`. */
export function defaultCache() {
  if (process.env.DSH_FOLD_CACHE) return path.resolve(process.env.DSH_FOLD_CACHE)
  const xdg = process.env.XDG_CACHE_HOME
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(homedir(), '.cache'), 'dsh-fold')
}

const stamp = (/** @type {string[]} */ pins) => createHash('sha256').update(JSON.stringify(pins)).digest('hex').slice(0, 12)
const sleep = (/** @type {number} */ ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
const alive = (/** @type {number} */ pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return /** @type {any} */ (e).code === 'EPERM'
  }
}

/**
 * Takes `<cache>/<kind>.lock` (pid inside), waiting out a live holder and breaking a dead one's.
 * @param {string} cache @param {string} kind @param {(msg: string) => void} log
 */
function lock(cache, kind, log) {
  const file = path.join(cache, `${kind}.lock`)
  for (let waited = 0; ; waited++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' })
      return () => rmSync(file, { force: true })
    } catch (e) {
      if (/** @type {any} */ (e).code !== 'EEXIST') throw e
    }
    let holder = 0
    try {
      holder = Number(readFileSync(file, 'utf8'))
    } catch {
      continue // released between our attempt and this read: try again
    }
    if (holder && !alive(holder)) {
      rmSync(file, { force: true })
      continue
    }
    if (waited % 20 === 0) log(`waiting for pid ${holder} to finish installing ${kind}`)
    sleep(500)
  }
}

/** A cache entry that is an install in progress: `<kind>-<hash>.tmp-<pid>` (the pid is its installer's). */
const TEMP_NAME = /^.+-[0-9a-f]{12}\.tmp-(\d+)$/

/**
 * Removes the temp folders of installers that are gone (each names its installer's pid); a live
 * installer's stays. (A pid reused by another process keeps a dead installer's folder until that
 * process ends too: the check errs on the side of keeping.)
 * @param {string} cache
 */
function sweepDeadTemps(cache) {
  let names
  try {
    names = readdirSync(cache)
  } catch {
    return // no cache yet
  }
  for (const name of names) {
    const pid = Number(TEMP_NAME.exec(name)?.[1] ?? 0)
    if (pid && pid !== process.pid && !alive(pid)) rmSync(path.join(cache, name), { recursive: true, force: true })
  }
}

/**
 * Returns `<cache>/<kind>-<hash of pins>/`, filled by `fill(tmpDir)` first unless its `.ready`
 * stamp exists (the fill runs in a temp folder renamed into place, under the kind's lock; other
 * versions of the kind are removed after). The cache's one mechanism, for the host, Node and
 * whatever else a caller caches the same way.
 * @param {{cache: string, kind: string, pins: string[], fill: (dir: string) => void, log: (msg: string) => void}} options
 */
export function ensureCached({ cache, kind, pins, fill, log }) {
  const dir = path.join(cache, `${kind}-${stamp(pins)}`)
  sweepDeadTemps(cache)
  if (existsSync(path.join(dir, '.ready'))) return dir
  mkdirSync(cache, { recursive: true })
  const unlock = lock(cache, kind, log)
  try {
    if (existsSync(path.join(dir, '.ready'))) return dir
    const tmp = `${dir}.tmp-${process.pid}`
    rmSync(tmp, { recursive: true, force: true })
    mkdirSync(tmp)
    const t0 = performance.now()
    try {
      fill(tmp)
      writeFileSync(path.join(tmp, '.ready'), JSON.stringify({ pins, at: new Date().toISOString() }))
    } catch (e) {
      rmSync(tmp, { recursive: true, force: true })
      throw e
    }
    log(`cold install of ${kind} took ${((performance.now() - t0) / 1000).toFixed(1)} s`)
    rmSync(dir, { recursive: true, force: true })
    renameSync(tmp, dir)
    // Drop other versions of this kind (stale pins; `<kind>-<hash>` exactly, so a kind named
    // like another's prefix keeps its folders); temp folders are the sweep's.
    for (const name of readdirSync(cache)) {
      const version = name.startsWith(`${kind}-`) && /^[0-9a-f]{12}$/.test(name.slice(kind.length + 1))
      if (version && path.join(cache, name) !== dir) rmSync(path.join(cache, name), { recursive: true, force: true })
    }
    return dir
  } finally {
    unlock()
  }
}

/**
 * Installs `pins` from the npm registry into `<cache>/<kind>-<hash>/` unless it is there.
 * @param {string} cache @param {string} kind @param {string[]} pins @param {(msg: string) => void} log
 */
function ensurePart(cache, kind, pins, log) {
  return ensureCached({
    cache,
    kind,
    pins,
    log,
    fill: (tmp) => {
      writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: `dsh-fold-${kind}`, private: true }))
      log(`installing ${kind} from the npm registry into ${cache}: ${pins.join(' ')}`)
      execFileSync('npm', ['install', ...NPM_FLAGS, ...pins], { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'] })
    },
  })
}

/**
 * The cached Node 22 (installed on first use).
 * @param {{cache?: string, log?: (msg: string) => void}} [options]
 */
export function ensureNode22({ cache = defaultCache(), log = (m) => process.stderr.write(`[dsh-fold] ${m}\n`) } = {}) {
  const nodeDir = ensurePart(cache, 'node', NODE_PIN, log)
  const node22 = path.join(nodeDir, 'node_modules', NODE_PIN[0].replace(/@[^@]*$/, ''), 'bin', 'node')
  const version = execFileSync(node22, ['--version'], { encoding: 'utf8' }).trim()
  if (Number(version.slice(1).split('.')[0]) < 22) throw new Error(`${node22} is ${version}, need >= 22`)
  return { node22, version }
}

/**
 * Node 22 and the pinned host, installed into `cache` on first use.
 * @param {{cache?: string, log?: (msg: string) => void}} [options]
 * @returns {{node22: string, hostDir: string}}
 */
export function ensureHost({ cache = defaultCache(), log = (m) => process.stderr.write(`[dsh-fold] ${m}\n`) } = {}) {
  const t0 = performance.now()
  const { node22, version } = ensureNode22({ cache, log })
  const hostDir = ensurePart(cache, 'host', HOST_PIN, log)
  if (performance.now() - t0 > 1000) log(`ready in ${((performance.now() - t0) / 1000).toFixed(1)} s: node ${version}, host ${hostDir}`)
  return { node22, hostDir }
}
