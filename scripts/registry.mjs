// @ts-check
/**
 * @module scripts/registry
 * A real npm registry on 127.0.0.1 for the release rehearsal: verdaccio, from npm at
 * `VERDACCIO_PIN` (6.8.x runs on Node 20), installed once into the tools cache
 * (scripts/target-tools.mjs `cachedDir`).
 *
 * `writeConfig(dir)` writes `dir/config.yaml` with its storage in `dir/storage/`: the packages
 * `dsh-fold` and `dsh-fold-*` are local only (published here, never fetched from elsewhere,
 * any token may publish them), every other package is proxied from the npm registry this
 * machine's npm is configured with (`npm config get registry`, read at run time: no registry
 * host is written into a committed file), and its tarballs are not kept. The storage is
 * verdaccio's own layout (`storage/dsh-fold/package.json` + tarballs,
 * `storage/.verdaccio-db.json`), so any verdaccio pointed at the config serves the same release.
 *
 * `startRegistry(dir, {port})` starts verdaccio on `config.yaml` (port 0: a free one), in its own
 * process group, and resolves once it answers `/-/ping`: `{url, port, pid, stop()}`. `stop()`
 * asks it to shut down (SIGTERM, which it handles with `VERDACCIO_HANDLE_KILL_SIGNALS`: the
 * server closes and the process exits 0), waits up to `STOP_GRACE_MS`, and only then kills the
 * group; it resolves once the process is gone, saying which it was. Its log (JSON lines) goes to `dir/verdaccio.log`.
 * `pruneStorage(dir)` removes what verdaccio cached from the uplink (package documents of
 * dependencies), leaving the packages published here.
 */
import { execFileSync, spawn } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import path from 'node:path'

import { cachedDir, log } from './target-tools.mjs'

export const VERDACCIO_PIN = 'verdaccio@6.8.0'
/** How long verdaccio may take to close after SIGTERM before its group is killed. */
export const STOP_GRACE_MS = 10_000
/** How long a start may take (a cold first start reads its plugins). */
const START_TIMEOUT_MS = 60_000
/** The packages this registry owns. */
export const LOCAL_PACKAGES = ['dsh-fold', 'dsh-fold-*']

/** The verdaccio binary, installed from npm on first use. */
export function ensureVerdaccio() {
  const dir = cachedDir(VERDACCIO_PIN.replace('@', '-'), (tmp) => {
    log(`installing ${VERDACCIO_PIN} from npm (the rehearsal's registry)`)
    writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'rehearsal-verdaccio', private: true }))
    execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', VERDACCIO_PIN], { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'] })
  })
  return path.join(dir, 'node_modules', 'verdaccio', 'bin', 'verdaccio')
}

/** The npm registry this machine's npm uses (the uplink), with its trailing slash. */
export function upstreamRegistry() {
  const url = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim()
  return url.endsWith('/') ? url : `${url}/`
}

/**
 * Writes `dir/config.yaml` (and creates `dir/storage/`).
 * @param {string} dir @param {{uplink?: string}} [o] @returns {string} the config file
 */
export function writeConfig(dir, { uplink = upstreamRegistry() } = {}) {
  mkdirSync(path.join(dir, 'storage'), { recursive: true })
  const local = LOCAL_PACKAGES.map((p) => `  '${p}':\n    access: $all\n    publish: $all\n    unpublish: $all\n`).join('')
  const config = `# The release rehearsal's registry (scripts/registry.mjs writes this file; scripts/rehearse.mjs runs it).
# dsh-fold's packages are published here and only here; everything else comes from the uplink,
# the registry this machine's npm is configured with.
storage: ./storage
auth:
  htpasswd:
    file: ./htpasswd
    max_users: -1
uplinks:
  npm:
    url: ${uplink}
    cache: false
packages:
${local}  '**':
    access: $all
    publish: $authenticated
    proxy: npm
server:
  keepAliveTimeout: 5
log: { type: stdout, format: json, level: warn }
`
  const file = path.join(dir, 'config.yaml')
  writeFileSync(file, config)
  return file
}

/** A free TCP port on 127.0.0.1. @returns {Promise<number>} */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const address = s.address()
      s.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** @param {string} url */
async function answers(url) {
  try {
    const r = await fetch(`${url}-/ping`, { signal: AbortSignal.timeout(2000) })
    return r.ok
  } catch {
    return false
  }
}

/**
 * @typedef {object} Registry
 * @property {string} url `http://127.0.0.1:PORT/`
 * @property {number} port
 * @property {number} pid
 * @property {() => Promise<Stopped>} stop graceful, then forced; idempotent
 */

/**
 * Starts verdaccio on `dir/config.yaml`.
 * @param {string} dir @param {{port?: number}} [o] @returns {Promise<Registry>}
 */
export async function startRegistry(dir, { port = 0 } = {}) {
  const bin = ensureVerdaccio()
  const config = path.join(dir, 'config.yaml')
  if (!existsSync(config)) throw new Error(`no registry config at ${config} (writeConfig writes it)`)
  // A free port chosen here can be taken before verdaccio binds it: try again on another.
  for (let attempt = 1; ; attempt++) {
    const chosen = port || (await freePort())
    const url = `http://127.0.0.1:${chosen}/`
    const logFd = openSync(path.join(dir, 'verdaccio.log'), 'a')
    const child = spawn(process.execPath, [bin, '--config', config, '--listen', `127.0.0.1:${chosen}`], {
      cwd: dir,
      detached: true, // its own group: the rehearsal decides when it stops, a terminal's Ctrl-C does not
      stdio: ['ignore', logFd, logFd],
      env: { ...process.env, VERDACCIO_HANDLE_KILL_SIGNALS: 'true', NODE_NO_WARNINGS: '1' },
    })
    closeSync(logFd)
    /** @type {number | null} */
    let exitCode = null
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve((exitCode = code ?? (signal ? 128 : 1)))))
    const t0 = performance.now()
    while (exitCode === null && !(await answers(url))) {
      if (performance.now() - t0 > START_TIMEOUT_MS) {
        await stopChild(child, exited)
        throw new Error(`verdaccio did not answer on ${url} within ${START_TIMEOUT_MS / 1000} s (log: ${path.join(dir, 'verdaccio.log')})`)
      }
      await sleep(200)
    }
    if (exitCode === null) {
      let stopping = null
      return {
        url,
        port: chosen,
        pid: /** @type {number} */ (child.pid),
        stop: () => (stopping ??= stopChild(child, exited)),
      }
    }
    // exit 2: "cannot create http server" (the port was taken meanwhile)
    if (port || attempt >= 3 || exitCode !== 2) throw new Error(`verdaccio exited ${exitCode} at start on ${url} (log: ${path.join(dir, 'verdaccio.log')})`)
  }
}

/**
 * How a stop ended: `graceful` when verdaccio exited on its own after SIGTERM (its `code`),
 * else it was killed after STOP_GRACE_MS.
 * @typedef {{graceful: boolean, code: number | null, text: string}} Stopped
 */

/**
 * SIGTERM the child's group, wait for its exit up to STOP_GRACE_MS, then SIGKILL the group.
 * @param {import('node:child_process').ChildProcess} child @param {Promise<unknown>} exited
 * @returns {Promise<Stopped>}
 */
async function stopChild(child, exited) {
  if (child.exitCode !== null || child.signalCode !== null) return { graceful: true, code: child.exitCode, text: `had exited (${child.exitCode ?? child.signalCode})` }
  const group = -(/** @type {number} */ (child.pid))
  const signal = (/** @type {NodeJS.Signals} */ s) => {
    try {
      process.kill(group, s)
    } catch {
      // the group is gone
    }
  }
  signal('SIGTERM')
  const graceful = await Promise.race([exited.then(() => true), sleep(STOP_GRACE_MS).then(() => false)])
  if (!graceful) {
    log(`verdaccio (pid ${child.pid}) did not exit within ${STOP_GRACE_MS / 1000} s of SIGTERM: killing it`)
    signal('SIGKILL')
    await exited
    return { graceful: false, code: null, text: `killed (SIGKILL) ${STOP_GRACE_MS / 1000} s after SIGTERM` }
  }
  return { graceful: true, code: child.exitCode, text: `exit ${child.exitCode ?? child.signalCode} after SIGTERM` }
}

/**
 * Removes the uplink's cached package documents from `dir/storage`, keeping the local packages
 * and verdaccio's own database. @param {string} dir @returns {string[]} what stays
 */
export function pruneStorage(dir) {
  const storage = path.join(dir, 'storage')
  const local = (/** @type {string} */ name) => name === 'dsh-fold' || name.startsWith('dsh-fold-')
  const kept = []
  for (const name of existsSync(storage) ? readdirSync(storage) : []) {
    if (name.startsWith('.') || local(name)) kept.push(name)
    else rmSync(path.join(storage, name), { recursive: true, force: true })
  }
  return kept
}
