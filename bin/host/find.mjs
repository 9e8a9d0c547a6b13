// @ts-check
/**
 * @module bin/host/find
 * Finding what a user has installed, for `dsh-fold try` and `doctor`: the DeepSeek Harness host
 * (`@deepseek-ai/dsh`), a Node >= 22 to run it, and the DSH home. Read-only.
 *
 * The host is found, in order: from `dsh` on PATH (`<bin>/../@deepseek-ai/dsh`, which holds for
 * npm's and pnpm's `node_modules/.bin`, or the package the executable resolves to, for a global
 * install); then as `dsh-fold preset` finds it (the package Node resolves from
 * `$DSH_HOME/profiles/<profile>/`, where every `dsh` launch links its packages, then from where
 * this dsh-fold is installed).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'

const HOST_PACKAGE = '@deepseek-ai/dsh'

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
  const { findHost, PresetError } = await import('../preset.mjs')
  try {
    return findHost({ profile }, dshHome)
  } catch (e) {
    if (e instanceof PresetError) return null
    throw e
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
