/**
 * @module web
 *
 * Contract: `startWebHost(options)` boots a REAL DeepSeek Harness host (the pinned install
 * from `install.mjs`, on Node 22) with the `web` profile (bundles `@deepseek-ai/dsh-base` +
 * `@deepseek-ai/dsh-web-app`: the web UI, the HTTP API, the preset roster), composed exactly
 * as `host.mjs` composes headless (the `dsh` bin's `runProfile` minus the user-patch
 * watchers), bound to `127.0.0.1` on a port the OS picks (`--port 0 --no-open`). It resolves
 * once the host prints `dsh web: http://127.0.0.1:N`, with `{url, api, stop, stdout(),
 * stderr(), root, home, dshHome, cwd, profileDir, cleanup()}`; it rejects (after killing the
 * process group) when the host exits or stays silent for `readyMs` first, the error carrying
 * the host's output.
 *
 * The run's temp root, environment (`hostEnv`), `bundles` (tarballs installed into the
 * profile as `dsh plugin add` does) and `patchRows` (one `--patch` overlay) are the
 * headless harness's. `beforeBoot({dshHome, home, root, cwd, profileDir})` runs after the
 * profile exists and before the host starts (e.g. to install a preset into `$DSH_HOME`).
 *
 * `api(method, payload)` is the browser's own transport: `POST /api/<method>` with a
 * `client-request` envelope; it resolves the `value` of an `ok` result and throws with
 * the host's error otherwise. `stop()` stops the host the one graceful way (launch.mjs's
 * `stopGroup`: SIGTERM to its process group, SIGKILL after `HOST_SHUTDOWN_GRACE_MS`) and
 * resolves when the process has exited; `cleanup()` removes the
 * temp root (call it after `stop()`). A caller process that exits without `stop()` kills the
 * host's group on its way out.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureHost } from './install.mjs'
import { hostEnv, installBundles, runBoot, toPatchList } from './host.mjs'
import { bootScript, dshPackageOf, killGroup, stopGroup } from '../../../bin/host/launch.mjs'

const READY_LINE = /dsh web: (http:\/\/127\.0\.0\.1:\d+)/

/**
 * @param {{baseUrl?: string, bundles?: string[], patchRows?: object[] | Function, env?: Record<string, string>,
 *   cwd?: string, readyMs?: number, echo?: boolean,
 *   beforeBoot?: (paths: {dshHome: string, home: string, root: string, cwd: string, profileDir: string}) => unknown}} [options]
 */
export async function startWebHost ({ baseUrl, bundles = [], patchRows = [], env = {}, cwd, readyMs = 120_000,
  echo = process.env.DSH_E2E_ECHO === '1', beforeBoot } = {}) {
  const { node22, hostDir } = ensureHost()
  const profile = 'web'
  const root = mkdtempSync(join(tmpdir(), 'dsh-web-'))
  const home = join(root, 'home')
  const dshHome = join(home, '.dsh')
  cwd = cwd ?? join(root, 'work')
  mkdirSync(dshHome, { recursive: true })
  mkdirSync(cwd, { recursive: true })
  const fullEnv = hostEnv({ home, dshHome, baseUrl, env })
  const profileDir = join(dshHome, 'profiles', profile)
  const cleanup = () => rmSync(root, { recursive: true, force: true })
  const init = await runBoot({ node22, hostDir, env: fullEnv, cwd, timeoutMs: readyMs, echo, spec: { mode: 'init', profile } })
  if (init.code !== 0) throw new Error(`web profile init failed (${init.code}): ${init.stderr}`)
  if (bundles.length > 0) installBundles(profileDir, bundles)
  const paths = { dshHome, home, root, cwd, profileDir }
  await beforeBoot?.(paths)
  const rows = typeof patchRows === 'function' ? patchRows(paths) : patchRows
  const patchFiles = []
  if (rows.length > 0) {
    patchFiles.push(join(root, 'web.patch.yml'))
    writeFileSync(patchFiles[0], JSON.stringify(toPatchList(rows), null, 2) + '\n') // JSON is YAML
  }
  const spec = { mode: 'boot', profile, patchFiles, args: ['--host', '127.0.0.1', '--port', '0', '--no-open'] }
  const child = spawn(node22, [bootScript, JSON.stringify({ ...spec, dshPackage: dshPackageOf(hostDir) })], { cwd, env: fullEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  /** @type {Promise<{code: number | null, signal: string | null}>} */
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })))
  // A caller that dies without stop() (a crash, an uncaught assertion) must not leave a server behind.
  const orphanGuard = () => killGroup(child.pid, 'SIGKILL')
  process.once('exit', orphanGuard)
  exited.then(() => process.off('exit', orphanGuard))
  const stop = () => stopGroup(child.pid, exited)
  const url = await new Promise((resolve, reject) => {
    const fail = (/** @type {string} */ why) => { stop().then(() => reject(new Error(`${why}\nstdout: ${stdout}\nstderr: ${stderr.slice(-6000)}`))) }
    const timer = setTimeout(() => fail(`the web host printed no URL within ${readyMs} ms`), readyMs)
    child.stdout.on('data', (d) => {
      stdout += d
      if (echo) process.stderr.write(d)
      const m = READY_LINE.exec(stdout)
      if (m) { clearTimeout(timer); resolve(m[1]) }
    })
    child.stderr.on('data', (d) => { stderr += d; if (echo) process.stderr.write(d) })
    exited.then(({ code, signal }) => { clearTimeout(timer); fail(`the web host exited (code ${code}, signal ${signal}) before serving`) })
  })
  let rpc = 0
  /** @param {string} method @param {object} payload */
  const api = async (method, payload = {}) => {
    const res = await fetch(`${url}/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'client-request', rpcId: `t${++rpc}`, method, payload }),
    })
    const text = await res.text()
    let body
    try { body = JSON.parse(text) } catch { throw new Error(`${method}: HTTP ${res.status}, not JSON: ${text.slice(0, 500)}`) }
    if (!body?.result?.ok) throw new Error(`${method}: HTTP ${res.status}: ${JSON.stringify(body?.result?.error ?? body).slice(0, 2000)}`)
    return body.result.value
  }
  return { url, api, stop, stdout: () => stdout, stderr: () => stderr, ...paths, cleanup }
}
