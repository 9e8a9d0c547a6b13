// @ts-check
/**
 * @module bin/host/registry
 * Where `dsh plugin --profile NAME add dsh-fold` would get dsh-fold from, for `doctor`: the npm
 * registry the profile's pnpm reads, and whether it has dsh-fold. Read-only; one request.
 *
 * The registry is `npm config get registry` run in the profile's folder (or the home folder when
 * the profile does not exist yet, as `dsh plugin` creates it): the same `.npmrc` files (the
 * profile's, the user's, the global one) and `npm_config_registry` that pnpm reads there.
 * The question is one GET of its package document (`<registry>dsh-fold`, the abbreviated form
 * installs use), given `LOOKUP_TIMEOUT_MS` in all. The answer is one of:
 * - `published`: 200 with a `latest` dist-tag (or any version): its version;
 * - `absent`: 404 — not published there (dsh-fold's state until its first release);
 * - `offline`: no answer in time, a refused connection, an unknown host: the registry could not
 *   be asked, which says nothing about dsh-fold, and is not a fault of this machine's setup;
 * - `error`: an answer that is neither (401/403 without a login, 5xx, not a package document):
 *   `dsh plugin add` cannot install from it either;
 * - `unknown`: no `npm` to read the configuration with.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'

/** How long doctor waits for the registry, in all: short, so an offline machine is told at once. */
export const LOOKUP_TIMEOUT_MS = 3000
/** `npm config get` reads files only; a stuck npm is given this long. */
const CONFIG_TIMEOUT_MS = 15_000

/**
 * @typedef {object} RegistryAnswer
 * @property {'published' | 'absent' | 'offline' | 'error' | 'unknown'} state
 * @property {string} registry the URL asked ('' when unknown)
 * @property {string} [version] the version `add dsh-fold` installs (published)
 * @property {string} [why] what went wrong (offline, error, unknown)
 */

/**
 * The registry npm, and so pnpm, reads in `cwd`. @param {string} cwd
 * @returns {Promise<string | null>} with its trailing slash; null without npm
 */
export function configuredRegistry(cwd) {
  return new Promise((resolve) => {
    // Doctor writes nothing: no log file (logs-max 0), no cache folder made in HOME (a folder
    // that exists; `config get` reads files only); the registry settings are untouched.
    const env = { ...process.env, npm_config_update_notifier: 'false', npm_config_logs_max: '0', npm_config_cache: tmpdir() }
    const child = spawn('npm', ['config', 'get', 'registry'], { cwd, stdio: ['ignore', 'pipe', 'ignore'], env })
    const timer = setTimeout(() => child.kill('SIGTERM'), CONFIG_TIMEOUT_MS)
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d) => (out += d))
    child.once('error', () => resolve(null))
    child.once('close', (code) => {
      clearTimeout(timer)
      const url = out.trim()
      resolve(code === 0 && /^https?:\/\//.test(url) ? (url.endsWith('/') ? url : `${url}/`) : null)
    })
  })
}

/** A network failure's code, from fetch's error chain. @param {any} e */
function networkCode(e) {
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'TIMEOUT'
  let deepest = e
  for (let at = e; at; at = at.cause) {
    if (typeof at.code === 'string') return at.code
    deepest = at
  }
  return String(deepest?.message ?? deepest)
}

/**
 * Whether `registry` has `name`. @param {string} registry @param {{name?: string, timeoutMs?: number}} [o]
 * @returns {Promise<RegistryAnswer>}
 */
export async function lookup(registry, { name = 'dsh-fold', timeoutMs = LOOKUP_TIMEOUT_MS } = {}) {
  let r
  try {
    r = await fetch(`${registry}${name}`, { headers: { accept: 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8' }, signal: AbortSignal.timeout(timeoutMs) })
  } catch (e) {
    const code = networkCode(e)
    return { state: 'offline', registry, why: code === 'TIMEOUT' ? `no answer within ${timeoutMs / 1000} s` : code }
  }
  if (r.status === 404) {
    await r.body?.cancel()
    return { state: 'absent', registry }
  }
  if (r.status !== 200) {
    await r.body?.cancel()
    return { state: 'error', registry, why: `HTTP ${r.status}${r.statusText ? ` ${r.statusText}` : ''}` }
  }
  let doc
  try {
    doc = await r.json()
  } catch (e) {
    return { state: networkCode(e) === 'TIMEOUT' ? 'offline' : 'error', registry, why: `its answer for ${name} is not a package document` }
  }
  const version = doc?.['dist-tags']?.latest ?? Object.keys(doc?.versions ?? {}).at(-1)
  return version ? { state: 'published', registry, version } : { state: 'error', registry, why: `its ${name} document names no version` }
}

/**
 * The registry the profile in `profileDir` installs from, and whether it has dsh-fold.
 * @param {string} profileDir @param {{timeoutMs?: number}} [o] @returns {Promise<RegistryAnswer>}
 */
export async function dshFoldOnRegistry(profileDir, o = {}) {
  const registry = await configuredRegistry(existsSync(profileDir) ? profileDir : homedir())
  if (!registry) return { state: 'unknown', registry: '', why: 'no `npm` on PATH to read the registry configuration with' }
  return lookup(registry, o)
}
