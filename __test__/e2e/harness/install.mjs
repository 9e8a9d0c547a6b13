/**
 * @module install
 *
 * Contract: `ensureHost()` makes sure a Node 22 binary and the pinned
 * DeepSeek Harness host are installed under `<repo>/.e2e-cache/` and returns
 * `{node22, hostDir}`: `node22` is an absolute path to a Node >= 22 binary,
 * `hostDir` a folder whose `node_modules` holds `@deepseek-ai/dsh` and every
 * package the `headless` profile loads. Idempotent: each part lives in a
 * folder named by a hash of its pins (`node-<hash>/`, `host-<hash>/`) and is
 * ready only once its `.ready` stamp exists, so a changed pin installs afresh
 * and an interrupted install is redone (it builds in a temp folder and renames
 * it into place). Concurrent callers (parallel test files) serialize on a
 * `<kind>.lock` file holding the installer's pid; a dead holder's lock is broken. Needs only Node 20 + npm and the npm registry. Progress and
 * the cold install time go to stderr. Set `DSH_E2E_CACHE` to move the cache.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, rmSync, renameSync, writeFileSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const HERE = dirname(fileURLToPath(import.meta.url))
export const CACHE = resolve(process.env.DSH_E2E_CACHE ?? join(HERE, '../../../.e2e-cache'))

/** The Node package for this platform (a registry package shipping bin/node). */
export const NODE_PIN = [`node-${process.platform}-${process.arch}@22.23.5`]

const DSH = '0.1.0-rc.8'
const HOST_EXTRAS = [
  'dsh-anonymous-user-id', 'dsh-atomic-write', 'dsh-bash-local', 'dsh-code-runtime',
  'dsh-compaction', 'dsh-fs', 'dsh-invariants', 'dsh-output-retention', 'dsh-sandbox',
  'dsh-scope', 'dsh-session-telemetry', 'dsh-session-title-llm', 'dsh-shell', 'dsh-spill',
  'dsh-subagent-in-process-driver', 'dsh-timeout', 'dsh-workflow',
]
/** The host pins; `npm install` on all of them at once is the recipe known to finish. */
export const HOST_PIN = [
  `@deepseek-ai/dsh@${DSH}`, '@deepseek-ai/cordis-plugin-group@1.0.4',
  ...HOST_EXTRAS.map((n) => `@deepseek-ai/${n}@${DSH}`),
]
const NPM_FLAGS = ['--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error']

const log = (msg) => process.stderr.write(`[e2e install] ${msg}\n`)
const stamp = (pins) => createHash('sha256').update(JSON.stringify(pins)).digest('hex').slice(0, 12)

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
const alive = (pid) => { try { process.kill(pid, 0); return true } catch (e) { return e.code === 'EPERM' } }

/** Take `<CACHE>/<kind>.lock` (pid inside), waiting out a live holder and breaking a dead one's. */
function lock (kind) {
  const file = join(CACHE, `${kind}.lock`)
  for (let waited = 0; ; waited++) {
    try { writeFileSync(file, String(process.pid), { flag: 'wx' }); return () => rmSync(file, { force: true }) } catch (e) { if (e.code !== 'EEXIST') throw e }
    const holder = Number(readFileSync(file, 'utf8'))
    if (holder && !alive(holder)) { rmSync(file, { force: true }); continue }
    if (waited % 20 === 0) log(`waiting for pid ${holder} to finish installing ${kind}`)
    sleep(500)
  }
}

/** Install `pins` into `<CACHE>/<kind>-<hash>/` unless its `.ready` stamp exists; returns the folder. */
function ensurePart (kind, pins) {
  const dir = join(CACHE, `${kind}-${stamp(pins)}`)
  if (existsSync(join(dir, '.ready'))) return dir
  mkdirSync(CACHE, { recursive: true })
  const unlock = lock(kind)
  try { return existsSync(join(dir, '.ready')) ? dir : installPart(kind, pins, dir) } finally { unlock() }
}

function installPart (kind, pins, dir) {
  const tmp = `${dir}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp)
  writeFileSync(join(tmp, 'package.json'), JSON.stringify({ name: `e2e-${kind}`, private: true }))
  log(`installing ${kind}: ${pins.join(' ')}`)
  const t0 = performance.now()
  execFileSync('npm', ['install', ...NPM_FLAGS, ...pins], { cwd: tmp, stdio: ['ignore', 'inherit', 'inherit'] })
  log(`cold install of ${kind} took ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  writeFileSync(join(tmp, '.ready'), JSON.stringify({ pins, at: new Date().toISOString() }))
  rmSync(dir, { recursive: true, force: true })
  renameSync(tmp, dir)
  // Drop other versions of this part (stale pins, dead temp folders).
  for (const name of readdirSync(CACHE)) {
    if (name.startsWith(`${kind}-`) && join(CACHE, name) !== dir) rmSync(join(CACHE, name), { recursive: true, force: true })
  }
  return dir
}

let ready
/** @returns {{node22: string, hostDir: string}} (memoized per process) */
export function ensureHost () {
  if (ready) return ready
  const t0 = performance.now()
  const nodeDir = ensurePart('node', NODE_PIN)
  const node22 = join(nodeDir, 'node_modules', NODE_PIN[0].replace(/@[^@]*$/, ''), 'bin', 'node')
  const version = execFileSync(node22, ['--version'], { encoding: 'utf8' }).trim()
  if (Number(version.slice(1).split('.')[0]) < 22) throw new Error(`${node22} is ${version}, need >= 22`)
  const hostDir = ensurePart('host', HOST_PIN)
  log(`ready in ${((performance.now() - t0) / 1000).toFixed(1)} s: node ${version}, host ${hostDir}`)
  ready = { node22, hostDir }
  return ready
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(ensureHost()))
