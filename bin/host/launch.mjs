// @ts-check
/**
 * @module bin/host/launch
 * Running a real DeepSeek Harness host from dsh-fold: `dsh-fold try` and the test harness
 * share these. The host runs in its own process group on Node >= 22 (`boot.mjs`, the
 * `runProfile` composition minus the user-patch watchers); nothing here imports a host package.
 *
 * - `bootScript` is the path of `boot.mjs`; `bootSpec(...)` its argument.
 * - `runBoot({node22, dshPackage, spec, env, cwd, timeoutMs, interrupt})` spawns it and resolves
 *   `{code, signal, timedOut, interrupted, ms, stdout, stderr}` (never rejects for a host
 *   failure: an exit is data). A timeout, or the `interrupt` signal aborting (a Ctrl-C of the
 *   caller: the host runs in its own process group, so the terminal's SIGINT never reaches it),
 *   stops the host gracefully (`stopGroup`); whatever is left of its group when it exits is
 *   killed (shells the agent started die with it). `onStart(pid)` gets the group's id,
 *   `onOutput(chunk, stream)` the output as it arrives.
 * - `stopGroup(pid, exited, {signal, graceMs})` is the one graceful stop of a host (and of any
 *   process group we started that runs one: the web harness, the docs test's servers): the
 *   signal to the group, the leader's exit awaited for at most `HOST_SHUTDOWN_GRACE_MS`, then
 *   SIGKILL; `killGroup(pid, signal)` sends one signal to a group that may be gone.
 * - `initProfile(...)` creates `$DSH_HOME/profiles/<name>/` as the `dsh` bin does on first use.
 * - `installBundles(profileDir, tarballs)` installs `npm pack` tarballs into a profile the way
 *   `dsh plugin --profile NAME add` does, with npm in pnpm's place: `file:` dependencies in
 *   the profile's package.json, `npm install` there (peers come from `profiles/node_modules`,
 *   the host's fallback links), then every installed dependency declaring `dsh.bundle` joins
 *   `dsh.profile.bundles`. A tarball that is not a bundle stays a plain dependency.
 * - `hostEnv(...)` is a hermetic environment for one run; `toPatchList(rows)` turns plugin
 *   rows into one patch file's list; `storageRows(dshHome)` mounts DSH storage (headless has
 *   none); `sessionLogs(dshHome)` lists the durable session logs a run wrote.
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * How long boot.mjs lets the host's own shutdown (the disposal of its plugin tree, which writes
 * out the session log and closes the checkpoint store) run after a SIGINT or SIGTERM before it
 * exits anyway: the 5 s the `dsh` launcher gives it (`PROCESS_SHUTDOWN_TIMEOUT_MS` in
 * @deepseek-ai/dsh 0.1.0-rc.8), so a host run by dsh-fold shuts down as one run by `dsh`.
 */
export const HOST_DISPOSE_LIMIT_MS = 5_000

/**
 * How long a stopped host gets to exit before its group is killed: boot.mjs's own limit on its
 * shutdown, plus 5 s for what follows it on a loaded machine (the process's exit, the event
 * loop's last callbacks). A host that is still there after it is stuck past its own limit.
 */
export const HOST_SHUTDOWN_GRACE_MS = HOST_DISPOSE_LIMIT_MS + 5_000

/** Sends `signal` to the process group `pid`; a group already gone is no error. @param {number} pid @param {NodeJS.Signals} signal */
export function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal)
  } catch {
    // ESRCH: the group is gone
  }
}

/**
 * Stops the process group led by `pid` gracefully: `signal` to the group, the leader's exit
 * awaited (`exited`) for at most `graceMs`, then SIGKILL to the group; once the leader has
 * exited, SIGKILL to what is left of the group (children it left behind). Resolves with what
 * `exited` resolves to. Idempotent enough to call twice (a second call signals again).
 * @template T
 * @param {number} pid @param {Promise<T>} exited
 * @param {{signal?: NodeJS.Signals, graceMs?: number}} [options]
 * @returns {Promise<T>}
 */
export async function stopGroup(pid, exited, { signal = 'SIGTERM', graceMs = HOST_SHUTDOWN_GRACE_MS } = {}) {
  killGroup(pid, signal)
  const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), graceMs)
  try {
    return await exited
  } finally {
    clearTimeout(timer)
    killGroup(pid, 'SIGKILL')
  }
}

/** The boot script, run with Node >= 22. */
export const bootScript = fileURLToPath(new URL('./boot.mjs', import.meta.url))

/** The `@deepseek-ai/dsh` package folder of a host install folder (one whose node_modules holds it). @param {string} hostDir */
export const dshPackageOf = (hostDir) => path.join(hostDir, 'node_modules', '@deepseek-ai', 'dsh')

/**
 * The environment of one host run: `base` (default: this process's) minus any DSH_*,
 * DEEPSEEK_* and NODE_TEST_CONTEXT when `hermetic`, plus HOME/DSH_HOME, telemetry off, then
 * `env` (which wins).
 * @param {{home?: string, dshHome: string, env?: Record<string, string | undefined>, hermetic?: boolean, base?: NodeJS.ProcessEnv}} options
 * @returns {Record<string, string>}
 */
export function hostEnv({ home, dshHome, env = {}, hermetic = true, base = process.env }) {
  const inherited = Object.entries(base).filter(([k]) => !hermetic || !/^(DSH_|DEEPSEEK_|NODE_TEST_CONTEXT$)/.test(k))
  /** @type {Record<string, string>} */
  const out = {}
  for (const [k, v] of inherited) if (v !== undefined) out[k] = v
  if (home) out.HOME = home
  out.DSH_HOME = dshHome
  out.DSH_TELEMETRY_DISABLED = '1'
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete out[k]
    else out[k] = v
  }
  return out
}

/** Plugin rows (entries with a `name`) gathered into one insert; other patches verbatim. @param {any[]} rows */
export function toPatchList(rows) {
  const inserts = rows.filter((r) => typeof r.name === 'string' && r.insert === undefined)
  const rest = rows.filter((r) => !inserts.includes(r))
  return [...(inserts.length > 0 ? [{ insert: inserts }] : []), ...rest]
}

/** Writes `rows` as one patch file (JSON is YAML). @param {string} file @param {any[]} rows */
export function writePatchFile(file, rows) {
  writeFileSync(file, JSON.stringify(toPatchList(rows), null, 2) + '\n')
  return file
}

/** Rows mounting DSH storage the way the web-app bundle does (headless has none). @param {string} dshHome */
export function storageRows(dshHome) {
  return [
    { id: 'storage', name: '@deepseek-ai/dsh-storage' },
    { id: 'storage-json', name: '@deepseek-ai/dsh-storage-json', config: { root: path.join(dshHome, 'storages') } },
    { id: 'storage-domain', name: '@deepseek-ai/dsh-storage-domain', config: { backend: 'json' } },
  ]
}

/** The package.json inside an `npm pack` tarball. @param {string} tarball */
function tarballManifest(tarball) {
  return JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }))
}

/**
 * Installs `tarballs` into `profileDir` as `dsh plugin add` would, with npm in pnpm's place.
 * @param {string} profileDir @param {string[]} tarballs @param {{log?: (msg: string) => void}} [options]
 * @returns {string[]} the package names that joined `dsh.profile.bundles`
 */
export function installBundles(profileDir, tarballs, { log = (m) => process.stderr.write(`[dsh-fold] ${m}\n`) } = {}) {
  const manifestPath = path.join(profileDir, 'package.json')
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
  const names = tarballs.map((t) => {
    const { name } = tarballManifest(t)
    manifest.dependencies = { ...manifest.dependencies, [name]: `file:${path.resolve(t)}` }
    return name
  })
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n')
  execFileSync('npm', ['install', '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], {
    cwd: profileDir,
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const bundles = manifest.dsh.profile.bundles
  const added = []
  for (const name of names) {
    const installed = JSON.parse(readFileSync(path.join(profileDir, 'node_modules', name, 'package.json'), 'utf8'))
    if (installed.dsh?.bundle?.patch === undefined) {
      log(`${name} declares no dsh.bundle: plain dependency`)
      continue
    }
    if (!bundles.includes(name)) bundles.push(name)
    added.push(name)
  }
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n')
  return added
}

/**
 * @typedef {object} BootResult
 * @property {number | null} code
 * @property {NodeJS.Signals | null} signal
 * @property {boolean} timedOut
 * @property {boolean} interrupted the `interrupt` signal stopped it (or it was aborted before the start: nothing ran)
 * @property {number} ms
 * @property {string} stdout
 * @property {string} stderr
 */

/**
 * Runs the boot script on Node 22 in its own process group.
 * @param {{node22: string, dshPackage: string, spec: object, env: Record<string, string>, cwd: string,
 *   timeoutMs?: number, interrupt?: AbortSignal, onStart?: (pid: number) => void,
 *   onOutput?: (chunk: string, stream: 'stdout' | 'stderr') => void}} options
 * @returns {Promise<BootResult>}
 */
export function runBoot({ node22, dshPackage, spec, env, cwd, timeoutMs = 120_000, interrupt, onStart, onOutput }) {
  return new Promise((resolvePromise) => {
    const t0 = performance.now()
    if (interrupt?.aborted) {
      resolvePromise({ code: null, signal: null, timedOut: false, interrupted: true, ms: 0, stdout: '', stderr: '' })
      return
    }
    const child = spawn(node22, [bootScript, JSON.stringify({ ...spec, dshPackage })], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    if (child.pid !== undefined) onStart?.(child.pid)
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d
      onOutput?.(d, 'stdout')
    })
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d
      onOutput?.(d, 'stderr')
    })
    let timedOut = false
    let interrupted = false
    /** @type {Promise<void>} */
    const closed = new Promise((resolveClosed) => child.on('close', () => resolveClosed()))
    const stop = (/** @type {NodeJS.Signals} */ signal) => {
      if (child.pid !== undefined) stopGroup(child.pid, closed, { signal })
    }
    const timer = setTimeout(() => {
      timedOut = true
      stop('SIGTERM')
    }, timeoutMs)
    // The caller's Ctrl-C: SIGINT, as a terminal would send a host in the foreground.
    const onInterrupt = () => {
      interrupted = true
      stop('SIGINT')
    }
    interrupt?.addEventListener('abort', onInterrupt, { once: true })
    // A caller that exits without stopping the host (a crash, process.exit) takes the group with it.
    const orphanGuard = () => {
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL')
    }
    process.once('exit', orphanGuard)
    child.on('error', (e) => {
      stderr += `${e.message}\n`
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      interrupt?.removeEventListener('abort', onInterrupt)
      process.off('exit', orphanGuard)
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL') // what the host left in its group
      resolvePromise({ code, signal, timedOut, interrupted, ms: Math.round(performance.now() - t0), stdout, stderr })
    })
  })
}

/**
 * Creates `$DSH_HOME/profiles/<profile>/` (and the host's fallback links) as the `dsh` bin does.
 * Resolves `false` when `interrupt` stopped it.
 * @param {{node22: string, dshPackage: string, profile: string, env: Record<string, string>, cwd: string,
 *   interrupt?: AbortSignal, onStart?: (pid: number) => void}} options
 */
export async function initProfile({ node22, dshPackage, profile, env, cwd, interrupt, onStart }) {
  const init = await runBoot({ node22, dshPackage, env, cwd, timeoutMs: 60_000, interrupt, onStart, spec: { mode: 'init', profile } })
  if (init.interrupted) return false
  if (init.code !== 0) throw new Error(`creating the ${profile} profile failed (exit ${init.code}): ${init.stderr.trim()}`)
  return true
}

/**
 * The durable session logs of a DSH home: `$DSH_HOME/sessions/--<cwd>--/<session-id>/session.jsonl[.zstd]`.
 * @param {string} dshHome
 */
export function sessionLogs(dshHome) {
  return listFiles(path.join(dshHome, 'sessions')).filter((f) => /session\.jsonl(\.zstd)?$/.test(f))
}

/** Every file under `dir` (recursively). @param {string} dir */
export function listFiles(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => path.join(d.parentPath ?? /** @type {any} */ (d).path, d.name))
}
