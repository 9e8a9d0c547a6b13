// @ts-check
/**
 * @module bin/host/launch
 * Running a real DeepSeek Harness host from dsh-fold: `dsh-fold try` and the test harness
 * share these. The host runs in its own process group on Node >= 22 (`boot.mjs`, the
 * `runProfile` composition minus the user-patch watchers); nothing here imports a host package.
 *
 * - `bootScript` is the path of `boot.mjs`; `bootSpec(...)` its argument.
 * - `runBoot({node22, dshPackage, spec, env, cwd, timeoutMs})` spawns it and resolves
 *   `{code, signal, timedOut, ms, stdout, stderr}` (never rejects for a host failure: an exit is
 *   data); the whole process group is killed when it exits or times out (shells the agent
 *   started die with it). `onStart(pid)` gets the group's id, `onOutput(chunk, stream)` the
 *   output as it arrives.
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
 * @property {number} ms
 * @property {string} stdout
 * @property {string} stderr
 */

/**
 * Runs the boot script on Node 22 in its own process group.
 * @param {{node22: string, dshPackage: string, spec: object, env: Record<string, string>, cwd: string,
 *   timeoutMs?: number, onStart?: (pid: number) => void, onOutput?: (chunk: string, stream: 'stdout' | 'stderr') => void}} options
 * @returns {Promise<BootResult>}
 */
export function runBoot({ node22, dshPackage, spec, env, cwd, timeoutMs = 120_000, onStart, onOutput }) {
  return new Promise((resolvePromise) => {
    const t0 = performance.now()
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
    const kill = (/** @type {NodeJS.Signals} */ sig) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, sig)
      } catch {
        // ESRCH: the group is already gone
      }
    }
    const timer = setTimeout(() => {
      timedOut = true
      kill('SIGTERM')
      setTimeout(() => kill('SIGKILL'), 3000).unref()
    }, timeoutMs)
    // A caller that dies first (Ctrl-C on `dsh-fold try`) takes the host's group with it.
    const orphanGuard = () => kill('SIGKILL')
    process.once('exit', orphanGuard)
    child.on('error', (e) => {
      stderr += `${e.message}\n`
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      process.off('exit', orphanGuard)
      kill('SIGKILL')
      resolvePromise({ code, signal, timedOut, ms: Math.round(performance.now() - t0), stdout, stderr })
    })
  })
}

/**
 * Creates `$DSH_HOME/profiles/<profile>/` (and the host's fallback links) as the `dsh` bin does.
 * @param {{node22: string, dshPackage: string, profile: string, env: Record<string, string>, cwd: string}} options
 */
export async function initProfile({ node22, dshPackage, profile, env, cwd }) {
  const init = await runBoot({ node22, dshPackage, env, cwd, timeoutMs: 60_000, spec: { mode: 'init', profile } })
  if (init.code !== 0) throw new Error(`creating the ${profile} profile failed (exit ${init.code}): ${init.stderr.trim()}`)
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
