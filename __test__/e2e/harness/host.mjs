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
 * Composition is the shipped `bin/host/boot.mjs` (what `dsh-fold try` runs): the `dsh`
 * bin's `runProfile` MINUS the two user-patch watchers (why: that file's contract); the
 * spawning, the profile install and the environment are `bin/host/launch.mjs`'s.
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
import { execFileSync } from 'node:child_process'
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureHost } from './install.mjs'
import {
  dshPackageOf, hostEnv as launchEnv, installBundles, initProfile, listFiles, runBoot as launch, sessionLogs,
  storageRows, toPatchList,
} from '../../../bin/host/launch.mjs'

export { installBundles, listFiles, sessionLogs, storageRows, toPatchList }

const DUMMY_KEY = 'sk-e2e-dummy-key'

/**
 * The hermetic environment of one host run: the caller's minus any DSH_*, DEEPSEEK_* and
 * NODE_TEST_CONTEXT (a developer's real endpoint or key, node:test wiring), plus the run's
 * HOME/DSH_HOME, telemetry off, full permissions, a dummy key, `baseUrl`, then `env`.
 * @param {{home: string, dshHome: string, baseUrl?: string, env?: Record<string, string>}} options
 */
export function hostEnv ({ home, dshHome, baseUrl, env = {} }) {
  return launchEnv({
    home,
    dshHome,
    env: { DSH_PERMISSION_MODE: 'danger-full-access', DEEPSEEK_API_KEY: DUMMY_KEY, ...(baseUrl ? { DEEPSEEK_BASE_URL: baseUrl } : {}), ...env },
  })
}

/** Run Node 22 on the boot script; resolves with the exit facts and captured output. */
export function runBoot ({ node22, hostDir, spec, env, cwd, timeoutMs, echo, onStart }) {
  return launch({ node22, dshPackage: dshPackageOf(hostDir), spec, env, cwd, timeoutMs, onStart, onOutput: echo ? (d) => process.stderr.write(d) : undefined })
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
  // The host's own temp files (spilled outputs, subprocess folders) stay in the run's root.
  mkdirSync(join(root, 'tmp'), { recursive: true })
  const fullEnv = hostEnv({ home, dshHome, baseUrl, env: { TMPDIR: join(root, 'tmp'), ...env } })
  const profileDir = join(dshHome, 'profiles', profile)
  const base = { node22, hostDir, env: fullEnv, cwd, timeoutMs, echo }
  if (bundles.length > 0) {
    await initProfile({ node22, dshPackage: dshPackageOf(hostDir), profile, env: fullEnv, cwd })
    installBundles(profileDir, bundles, { log: (m) => process.stderr.write(`[e2e host] ${m}\n`) })
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

/** Decode one session log with the host's own codec. @returns {{header: object, events: object[]}} */
export function readSessionLog (file) {
  const { node22, hostDir } = ensureHost()
  const script = join(hostDir, 'dsh-e2e-read-log.mjs')
  if (!existsSync(script) || readFileSync(script, 'utf8') !== READ_LOG_SOURCE) writeFileSync(script, READ_LOG_SOURCE)
  return JSON.parse(execFileSync(node22, [script, file], { encoding: 'utf8', maxBuffer: 1 << 30 }))
}

