// @ts-check
/**
 * @module bin/host/find
 * Finding what a user has installed, for `dsh-fold try` and `doctor`: the DeepSeek Harness host
 * (`@deepseek-ai/dsh`), a Node >= 22 to run it, and the DSH home. Read-only.
 *
 * `findInstalledHost` (try, doctor, compaction) finds the host, in order: from `dsh` on PATH
 * (`hostOnPath`: `<bin>/../@deepseek-ai/dsh`, which holds for npm's and pnpm's
 * `node_modules/.bin`, or the package the executable resolves to, for a global install); then as
 * `findHost` does. `findHost` (preset, and the fallback above): `--host DIR` (the
 * `@deepseek-ai/dsh` package folder or a folder whose `node_modules` holds it); else the package
 * Node resolves from `$DSH_HOME/profiles/<profile>/` (or `$DSH_HOME/profiles/`), where every
 * `dsh` launch links its packages; else the one it resolves from where this dsh-fold is
 * installed (a bundle inside a profile).
 *
 * Errors are `HostError {code, exit}`: HOST_NOT_FOUND (66), HOST_UNREADABLE (65).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const HOST_PACKAGE = '@deepseek-ai/dsh'
/** This dsh-fold's `bin/` folder: the last place a host is resolved from. */
const HERE = path.dirname(path.dirname(fileURLToPath(import.meta.url)))

export class HostError extends Error {
  /** @param {string} code @param {string} message @param {number} exit */
  constructor(code, message, exit) {
    super(message)
    this.code = code
    this.exit = exit
  }
}

/** `~/x` for paths under the home folder, for shorter lines. @param {string} p */
export const tilde = (p) => (p.startsWith(homedir() + path.sep) ? `~${p.slice(homedir().length)}` : p)

/** `$DSH_HOME` as the host resolves it: `--dsh-home`, else the environment, else `~/.dsh`. @param {string} [given] */
export function dshHomeOf(given) {
  const explicit = given ?? process.env.DSH_HOME
  return path.resolve(explicit && explicit !== '' ? explicit : path.join(homedir(), '.dsh'))
}

/** @param {string} dir @returns {{dir: string, version: string} | null} */
function hostAt(dir) {
  try {
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))
    if (manifest?.name !== HOST_PACKAGE || typeof manifest.version !== 'string') return null
    return { dir: realpathSync(dir), version: manifest.version }
  } catch {
    return null
  }
}

/** Every executable named `name` on PATH, in PATH order. @param {string} name */
export function onPath(name) {
  const out = []
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    const file = path.join(dir, name)
    try {
      if (statSync(file).isFile()) out.push(file)
    } catch {
      // not in this PATH entry
    }
  }
  return out
}

/**
 * The installed host, or null.
 * @param {{dshHome: string, profile?: string}} options
 * @returns {Promise<{dir: string, version: string, how: string} | null>}
 */
export async function findInstalledHost({ dshHome, profile }) {
  const fromPath = hostOnPath()
  if (fromPath) return fromPath
  try {
    return findHost({ profile }, dshHome)
  } catch (e) {
    if (e instanceof HostError) return null
    throw e
  }
}

/**
 * The installed host as `dsh-fold preset` finds it (see the module's header).
 * @param {{host?: string, profile?: string}} opts @param {string} dshHome
 * @returns {{dir: string, version: string, how: string}}
 */
export function findHost(opts, dshHome) {
  /** @type {string[]} */
  const looked = []
  /** @type {string | null} */
  let dir = null
  let how = ''
  if (opts.host !== undefined) {
    const given = path.resolve(opts.host)
    looked.push(given)
    const own = path.join(given, 'package.json')
    if (existsSync(own) && readJson(own)?.name === HOST_PACKAGE) dir = given
    else if (existsSync(path.join(given, 'node_modules', ...HOST_PACKAGE.split('/'), 'package.json'))) dir = path.join(given, 'node_modules', ...HOST_PACKAGE.split('/'))
    how = '--host'
    if (!dir) throw new HostError('HOST_NOT_FOUND', `--host ${opts.host}: neither the ${HOST_PACKAGE} package folder nor a folder whose node_modules holds it`, 66)
  } else {
    const profiles = path.join(dshHome, 'profiles')
    const start = opts.profile ? path.join(profiles, opts.profile) : profiles
    looked.push(`${HOST_PACKAGE} resolvable from ${start}`)
    dir = packageDir(start, HOST_PACKAGE)
    how = `resolved from ${start}`
    if (!dir) {
      looked.push(`${HOST_PACKAGE} resolvable from ${HERE}`)
      dir = packageDir(HERE, HOST_PACKAGE)
      how = `resolved from dsh-fold's own install (${HERE})`
    }
    if (!dir) {
      throw new HostError('HOST_NOT_FOUND', `no installed DeepSeek Harness host (${HOST_PACKAGE}) found; looked at: ${looked.join('; ')}. Run \`dsh\` once with DSH_HOME=${dshHome} (it links its packages into profiles/node_modules) or pass --host DIR`, 66)
    }
  }
  dir = realpathSync(dir)
  const manifest = readJson(path.join(dir, 'package.json'))
  if (manifest?.name !== HOST_PACKAGE || typeof manifest.version !== 'string') {
    throw new HostError('HOST_UNREADABLE', `${path.join(dir, 'package.json')} is not the ${HOST_PACKAGE} manifest`, 65)
  }
  return { dir, version: manifest.version, how }
}

/** @param {string} file @returns {any} */
function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
}

/** The host `dsh` on PATH runs, or null. @returns {{dir: string, version: string, how: string} | null} */
export function hostOnPath() {
  for (const bin of onPath('dsh')) {
    const candidates = [path.join(path.dirname(bin), '..', ...HOST_PACKAGE.split('/'))]
    try {
      candidates.push(path.join(path.dirname(realpathSync(bin)), '..'))
    } catch {
      // a dangling link: only the first candidate
    }
    for (const dir of candidates) {
      const host = hostAt(dir)
      if (host) return { ...host, how: `\`dsh\` on PATH (${bin})` }
    }
  }
  return null
}

/** The major version of a Node binary, or 0 when it does not run. @param {string} node */
export function nodeMajor(node) {
  const r = spawnSync(node, ['--version'], { encoding: 'utf8', timeout: 20_000 })
  return r.status === 0 ? Number(/^v(\d+)/.exec(r.stdout.trim())?.[1] ?? 0) : 0
}

/** A Node >= 22 the user has: this process's, else the first `node` on PATH. @returns {{node: string, version: string} | null} */
export function findNode22() {
  if (Number(process.versions.node.split('.')[0]) >= 22) return { node: process.execPath, version: process.version }
  for (const node of onPath('node')) {
    if (nodeMajor(node) >= 22) return { node, version: spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim() }
  }
  return null
}

/** The folder of package `name` as Node resolves it from `fromDir` (its node_modules chain), or null. @param {string} fromDir @param {string} name */
export function packageDir(fromDir, name) {
  for (let at = fromDir; ; at = path.dirname(at)) {
    const candidate = path.join(at, 'node_modules', ...name.split('/'))
    if (existsSync(path.join(candidate, 'package.json'))) return realpathSync(candidate)
    if (path.dirname(at) === at) return null
  }
}

/** Whether `dir` holds a DSH profile (its package.json). @param {string} dir */
export const isProfile = (dir) => existsSync(path.join(dir, 'package.json'))
