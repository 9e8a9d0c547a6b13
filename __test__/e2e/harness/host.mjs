/**
 * @module host
 *
 * Contract: `runHost(options)` boots a REAL DeepSeek Harness host (the pinned
 * install from `install.mjs`, on Node 22) with the `headless` profile, hands
 * it `task` as the user prompt, waits for the process to exit and resolves
 * `{code, signal, timedOut, ms, stdout, stderr, root, home, dshHome, cwd,
 * profileDir, cleanup()}`. It never rejects for a host failure: a non-zero
 * exit is data. Each run gets a fresh temp root (`root/home` is HOME,
 * `root/home/.dsh` is DSH_HOME, `root/work` the default cwd) that survives the
 * run so a test can read the session log; `cleanup()` removes it. It rejects
 * only when the setup fails (profile init, `npm install` of `bundles`).
 *
 * Environment: the caller's minus any DSH_*, DEEPSEEK_* and NODE_TEST_CONTEXT,
 * plus HOME, DSH_HOME, DSH_TELEMETRY_DISABLED=1,
 * DSH_PERMISSION_MODE=danger-full-access, DEEPSEEK_BASE_URL=`baseUrl`,
 * DEEPSEEK_API_KEY=<dummy>, then `env` (which wins).
 *
 * Composition is the `dsh` bin's `runProfile` (bundle layers in
 * `dsh.profile.bundles` order, the profile's `cordis.patch.yml`,
 * `$DSH_HOME/cordis.patch.yml`, `--patch` overlays, the agent-presets root and
 * the telemetry switch, then `boot()` from `@deepseek-ai/dsh-app-boot` with
 * `provideCmdline` and the launch environment) MINUS the two user-patch
 * watchers. The rc.8 bin creates `@deepseek-ai/cordis-plugin-hmr` for them
 * and checks `ctx.get('hmr')` as soon as `loader.create` resolves, while the
 * HMR fiber is still loading (state 1; it is active ~ms later), so it dies
 * with "user patch-layer watching requires the Cordis HMR service". A
 * one-shot run never edits its patch files, so nothing is lost.
 *
 * `patchRows` (an array, or `({dshHome, root, cwd}) => array`) is written as
 * one `--patch` overlay: entries with a `name` are plugin rows and are
 * gathered into one `{insert: [...]}`; any other entry (`{id, config}`,
 * `{id, disabled: true}`, `{insert: [...]}`) passes through as a patch.
 * Names may be absolute paths or packages resolvable from the profile.
 * `bundles` (tarball paths from `npm pack`) are installed into the profile
 * the way `dsh plugin add` does: a `file:` dependency in the profile's
 * package.json, `npm install` in the profile directory (pnpm's role; peers
 * come from `profiles/node_modules`, the host's fallback links), then every
 * installed dependency that declares `dsh.bundle` is appended to
 * `dsh.profile.bundles`. A tarball that is not a bundle stays a plain
 * dependency (e.g. a napi platform package).
 *
 * `root` (a previous run's `root`) runs again in that run's HOME, DSH_HOME and cwd, so a
 * second boot sees the first one's profile and persisted sessions (a restart); `onStart(pid)`
 * is called with the host's pid (its process group's id) once it is spawned, so a test can
 * kill it mid-run (`process.kill(-pid, 'SIGKILL')`).
 *
 * Helpers: `storageRows(dshHome)` (the DSH storage rows headless lacks),
 * `sessionLogs(dshHome)` / `readSessionLog(file)` (the durable session log,
 * `$DSH_HOME/sessions/--<cwd>--/<id>/session.jsonl.zstd`, decoded on Node 22
 * with the host's own codec into `{header, events}`), `listFiles(dir)`.
 */
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync, existsSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { ensureHost } from './install.mjs'

/** The `runProfile` composition minus the watchers; runs on Node 22 from the host folder. */
const BOOT_SOURCE = String.raw`// Written by __test__/e2e/harness/host.mjs: dsh runProfile minus the user-patch watchers.
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { boot, composeEntries, healProfilesModuleFallback, initProfile, installFailLoud, loadLayeredEnv,
  loadOptionalPatches, loadOverlayPatches, loadProfile, resolveProfileDir, PROFILE_TEMPLATES,
  DEFAULT_PROFILE_BUNDLES } from '@deepseek-ai/dsh-app-boot'
import { resolveDshHome } from '@deepseek-ai/dsh-home-paths'
import { DSH_LAUNCH_ENVIRONMENT_KEY } from '@deepseek-ai/dsh-launch-environment'
import { provideCmdline } from '@deepseek-ai/dsh-cmdline'

const t0 = performance.now()
const spec = JSON.parse(process.argv[2])
const NAME = 'dsh'
const ANCHOR = fileURLToPath(new URL('./node_modules/@deepseek-ai/dsh/package.json', import.meta.url))
const PRESETS = fileURLToPath(new URL('./node_modules/@deepseek-ai/dsh/config/agent-presets/', import.meta.url))
if (spec.mode === 'init') {
  initProfile(resolveProfileDir(spec.profile), PROFILE_TEMPLATES[spec.profile] ?? DEFAULT_PROFILE_BUNDLES)
  healProfilesModuleFallback(ANCHOR)
  process.exit(0)
}
const environment = loadLayeredEnv(NAME)
healProfilesModuleFallback(ANCHOR)
const profile = loadProfile(NAME, spec.profile, ANCHOR)
const rootConfig = join(profile.dir, 'cordis.yml')
writeFileSync(rootConfig, '[]\n')
const homePatches = loadOptionalPatches(NAME, join(resolveDshHome(), 'cordis.patch.yml')) ?? []
const overlays = spec.patchFiles.flatMap((file) => loadOverlayPatches(NAME, resolve(file)))
const bundlePatches = profile.layers.flatMap((layer) => layer.patches)
const rows = new Map()
for (const row of composeEntries([bundlePatches, profile.patches, homePatches, overlays])) if (typeof row.id === 'string') rows.set(row.id, row)
if (rows.has('agent-presets')) overlays.push({ id: 'agent-presets', config: { ...rows.get('agent-presets')?.config, roots: [{ path: PRESETS, trust: 'system' }] } })
if ((process.env.DSH_TELEMETRY_DISABLED ?? '') !== '' && rows.has('session-telemetry-otel')) overlays.push({ id: 'session-telemetry-otel', disabled: true })

let app
let pending
const shutdown = (code, force) => {
  if (pending) { if (force) process.exit(code); return }
  const timer = setTimeout(() => process.exit(code), 5000)
  pending = Promise.resolve().then(() => app?.fiber.dispose()).then(
    () => { clearTimeout(timer); if (force) process.exit(code); else process.exitCode = code },
    () => process.exit(code))
}
process.on('SIGTERM', () => shutdown(0, true))
process.on('SIGINT', () => shutdown(130, true))
installFailLoud(NAME, process, async () => { await app?.fiber.dispose() })
app = await boot(NAME, rootConfig, structuredClone([...bundlePatches, ...profile.patches, ...homePatches, ...overlays]), (ctx) => {
  app = ctx
  ctx.provide(DSH_LAUNCH_ENVIRONMENT_KEY, environment)
  provideCmdline(ctx, { args: spec.args, exit: (code) => shutdown(code, false) })
})
process.stderr.write('[dsh-e2e] tree settled in ' + (performance.now() - t0).toFixed(0) + ' ms\n')
`

const DUMMY_KEY = 'sk-e2e-dummy-key'

/** Write the boot script into the host folder (bare imports resolve from its node_modules). */
function bootFile (hostDir) {
  const file = join(hostDir, 'dsh-e2e-boot.mjs')
  if (!existsSync(file) || readFileSync(file, 'utf8') !== BOOT_SOURCE) writeFileSync(file, BOOT_SOURCE)
  return file
}

/** Plugin rows (entries with a `name`) gathered into one insert; other patches verbatim. */
export function toPatchList (rows) {
  const inserts = rows.filter((r) => typeof r.name === 'string' && r.insert === undefined)
  const rest = rows.filter((r) => !inserts.includes(r))
  return [...(inserts.length > 0 ? [{ insert: inserts }] : []), ...rest]
}

/** Rows mounting DSH storage the way the web-app bundle does (headless has none). */
export function storageRows (dshHome) {
  return [
    { id: 'storage', name: '@deepseek-ai/dsh-storage' },
    { id: 'storage-json', name: '@deepseek-ai/dsh-storage-json', config: { root: join(dshHome, 'storages') } },
    { id: 'storage-domain', name: '@deepseek-ai/dsh-storage-domain', config: { backend: 'json' } },
  ]
}

/** The package.json inside an `npm pack` tarball. */
function tarballManifest (tarball) {
  return JSON.parse(execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }))
}

/**
 * Install `tarballs` into `profileDir` as `dsh plugin add` would, with npm in pnpm's place.
 * @returns {string[]} the package names that joined `dsh.profile.bundles`
 */
export function installBundles (profileDir, tarballs) {
  const manifestPath = join(profileDir, 'package.json')
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
  const names = tarballs.map((t) => {
    const { name } = tarballManifest(t)
    manifest.dependencies = { ...manifest.dependencies, [name]: `file:${resolve(t)}` }
    return name
  })
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n')
  execFileSync('npm', ['install', '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'],
    { cwd: profileDir, stdio: ['ignore', 'ignore', 'inherit'] })
  const bundles = manifest.dsh.profile.bundles
  const added = []
  for (const name of names) {
    const installed = JSON.parse(readFileSync(join(profileDir, 'node_modules', name, 'package.json'), 'utf8'))
    if (installed.dsh?.bundle?.patch === undefined) { process.stderr.write(`[e2e host] ${name} declares no dsh.bundle: plain dependency\n`); continue }
    if (!bundles.includes(name)) bundles.push(name)
    added.push(name)
  }
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n')
  return added
}

/** Run Node 22 on the boot script; resolves with the exit facts and captured output. */
function runBoot ({ node22, hostDir, spec, env, cwd, timeoutMs, echo, onStart }) {
  return new Promise((resolvePromise) => {
    const t0 = performance.now()
    const child = spawn(node22, [bootFile(hostDir), JSON.stringify(spec)], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    onStart?.(child.pid)
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d; if (echo) process.stderr.write(d) })
    child.stderr.on('data', (d) => { stderr += d; if (echo) process.stderr.write(d) })
    let timedOut = false
    const kill = (sig) => { try { process.kill(-child.pid, sig) } catch { /* ESRCH: the group is already gone */ } }
    const timer = setTimeout(() => { timedOut = true; kill('SIGTERM'); setTimeout(() => kill('SIGKILL'), 3000).unref() }, timeoutMs)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      kill('SIGKILL') // stray grandchildren (shells the agent started) die with the run
      resolvePromise({ code, signal, timedOut, ms: Math.round(performance.now() - t0), stdout, stderr })
    })
  })
}

/**
 * @param {{task: string, baseUrl?: string, patchRows?: object[] | Function, bundles?: string[],
 *   env?: Record<string,string>, cwd?: string, timeoutMs?: number, profile?: string,
 *   args?: string[], echo?: boolean, root?: string, onStart?: (pid: number) => void}} options
 */
export async function runHost ({ task, baseUrl, patchRows = [], bundles = [], env = {}, cwd, timeoutMs = 120_000,
  profile = 'headless', args, echo = process.env.DSH_E2E_ECHO === '1', root, onStart } = {}) {
  const { node22, hostDir } = ensureHost()
  root = root ?? mkdtempSync(join(tmpdir(), 'dsh-e2e-'))
  const home = join(root, 'home')
  const dshHome = join(home, '.dsh')
  cwd = cwd ?? join(root, 'work')
  mkdirSync(dshHome, { recursive: true })
  mkdirSync(cwd, { recursive: true })
  // Hermetic: no inherited DSH_*/DEEPSEEK_* (a developer's real endpoint or key) and no node:test wiring.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(DSH_|DEEPSEEK_|NODE_TEST_CONTEXT$)/.test(k)))
  const fullEnv = {
    ...inherited, HOME: home, DSH_HOME: dshHome, DSH_TELEMETRY_DISABLED: '1',
    DSH_PERMISSION_MODE: 'danger-full-access', DEEPSEEK_API_KEY: DUMMY_KEY,
    ...(baseUrl ? { DEEPSEEK_BASE_URL: baseUrl } : {}), ...env,
  }
  const profileDir = join(dshHome, 'profiles', profile)
  const base = { node22, hostDir, env: fullEnv, cwd, timeoutMs, echo }
  if (bundles.length > 0) {
    const init = await runBoot({ ...base, spec: { mode: 'init', profile } })
    if (init.code !== 0) throw new Error(`profile init failed (${init.code}): ${init.stderr}`)
    installBundles(profileDir, bundles)
  }
  const rows = typeof patchRows === 'function' ? patchRows({ dshHome, root, cwd }) : patchRows
  const patchFiles = []
  if (rows.length > 0) {
    patchFiles.push(join(root, `e2e-${Date.now()}.patch.yml`))
    writeFileSync(patchFiles[0], JSON.stringify(toPatchList(rows), null, 2) + '\n') // JSON is YAML
  }
  const result = await runBoot({ ...base, onStart, spec: { mode: 'boot', profile, patchFiles, args: args ?? [task] } })
  return { ...result, root, home, dshHome, cwd, profileDir, cleanup: () => rmSync(root, { recursive: true, force: true }) }
}

/** Decodes one session log (zstd frames or raw JSONL, packed chunk rows expanded); Node 22 only. */
const READ_LOG_SOURCE = String.raw`// Written by __test__/e2e/harness/host.mjs: print a DSH session log as JSON.
import { readFileSync } from 'node:fs'
import { zstdDecompressSync } from 'node:zlib'
import { decodeStorageRecord } from '@deepseek-ai/dsh-session'
/** Complete Zstandard frames of a buffer (node:zlib decodes only the first frame of a concatenation). */
function * frames (buf) {
  let at = 0
  while (at + 6 <= buf.length && buf.readUInt32LE(at) === 0xFD2FB528) {
    const start = at
    const fhd = buf[at + 4]
    const single = (fhd & 32) !== 0
    const fcs = [single ? 1 : 0, 2, 4, 8][fhd >>> 6]
    at += 5 + (single ? 0 : 1) + [0, 1, 2, 4][fhd & 3] + fcs
    for (let last = false; !last;) {
      const block = buf.readUIntLE(at, 3)
      last = (block & 1) === 1
      at += 3 + (((block >>> 1) & 3) === 1 ? 1 : block >>> 3)
    }
    if (fhd & 4) at += 4
    if (at > buf.length) return // torn tail: the host would repair it; we stop at the committed prefix
    yield buf.subarray(start, at)
  }
}
const file = process.argv[2]
const bytes = readFileSync(file)
const text = file.endsWith('.zstd') ? [...frames(bytes)].map((f) => zstdDecompressSync(f).toString('utf8')).join('') : bytes.toString('utf8')
const [header, ...records] = text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line))
process.stdout.write(JSON.stringify({ header, events: records.flatMap((r) => decodeStorageRecord(r)) }))
`

/**
 * The durable session logs of a run: `$DSH_HOME/sessions/--<cwd>--/<session-id>/session.jsonl.zstd`
 * (the headless profile's `session-persistence-jsonl` row, root `dshHomePath('sessions')`).
 */
export function sessionLogs (dshHome) {
  return listFiles(join(dshHome, 'sessions')).filter((f) => /session\.jsonl(\.zstd)?$/.test(f))
}

/** Decode one session log with the host's own codec. @returns {{header: object, events: object[]}} */
export function readSessionLog (file) {
  const { node22, hostDir } = ensureHost()
  const script = join(hostDir, 'dsh-e2e-read-log.mjs')
  if (!existsSync(script) || readFileSync(script, 'utf8') !== READ_LOG_SOURCE) writeFileSync(script, READ_LOG_SOURCE)
  return JSON.parse(execFileSync(node22, [script, file], { encoding: 'utf8', maxBuffer: 1 << 30 }))
}

/** Every file under `dir` (recursively), for finding what a run persisted. */
export function listFiles (dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => join(d.parentPath ?? d.path, d.name))
}
