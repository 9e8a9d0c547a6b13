// @ts-check
/**
 * @module scripts/release
 * The release's publish path, one implementation for the release workflow and the rehearsal
 * (scripts/rehearse.mjs), which runs it against a local registry first.
 *
 * Version rules (`releaseVersion`): what is published is package.json's version, the same for
 * the root and every platform package; a tag (`v1.2.3`, or `refs/tags/v1.2.3`) must name exactly
 * it, else the release stops before anything is built; a prerelease (`1.2.3-rc.1`) goes out under
 * the dist-tag `next` (npm refuses a prerelease without a tag), a release under `latest`.
 *
 * `publishRelease({artifacts, registry, ...})`, given a folder of prebuilt binaries laid out as
 * the workflow's `download-artifact` leaves them (`<dir>/bindings-<triple>/dsh-fold.<platform>.node`;
 * any depth works):
 * 1. stages the user's package in a temp folder (scripts/pack.mjs `stageRoot`: no lifecycle
 *    script, no devDependencies) with `npm/<platform>/` for each binary found, `napi.targets`
 *    narrowed to those platforms (napi's steps refuse a target without its binary);
 * 2. `napi artifacts --output-dir <dir>` moves each binary into its `npm/<platform>/`;
 * 3. `napi prepublish -t npm --no-gh-release` sets every platform package to the root's version,
 *    publishes them, and writes the root's `optionalDependencies`;
 * 4. when binaries are missing (the rehearsal cannot build MSVC, or `--targets` picked a subset),
 *    the root still declares every release target, as the release's root does: a platform
 *    package absent from the registry is then what users of the other platforms meet, and must
 *    not break their install;
 * 5. `npm publish <stage> --ignore-scripts --access public --tag <dist-tag>`.
 * npm runs with a temp userconfig naming `registry` and its token as `${NODE_AUTH_TOKEN}` (npm
 * expands it; the token is never written); provenance is on when asked (`--provenance`: npm
 * signs with the workflow's OIDC token). The stage is removed before it returns, whatever
 * happened.
 *
 * Provenance and `repository` (`sourceRepository`): the registry refuses a provenance-signed
 * package whose manifest's `repository.url` does not name the repository the workflow ran in
 * (npm's E422). The checkout names no repository (its home is wherever it is pushed), so every
 * staged manifest, the root's and each platform package's, gets the one GitHub Actions says it
 * runs in (`$GITHUB_SERVER_URL/$GITHUB_REPOSITORY`); a package.json `repository` that names
 * another stops the release, and provenance outside Actions stops it before anything is staged.
 *
 *   node scripts/release.mjs version [TAG]                 check TAG against package.json; prints
 *                                                           `version=…` and `dist-tag=…` lines
 *   node scripts/release.mjs publish --artifacts DIR [--provenance]
 *                                                           publish to the configured npm registry
 *                                                           with $NODE_AUTH_TOKEN
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { ROOT, checkoutManifest, platformDependencies, stagePlatform, stageRoot } from './pack.mjs'
import { TARGETS } from './targets.mjs'

/** A release that must not go out: a bad tag, a bad version, a missing binary. */
export class ReleaseError extends Error {
  name = 'ReleaseError'
}

/** semver's shape (no build metadata: npm drops it). */
const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/

/**
 * The version a release publishes and its dist-tag; `ref` (a tag name or ref) must name it.
 * @param {{version: string}} pkg @param {string} [ref] e.g. `v0.1.0`, `refs/tags/v0.1.0`
 * @returns {{version: string, distTag: 'latest' | 'next', prerelease: boolean}}
 */
export function releaseVersion(pkg, ref) {
  const m = SEMVER.exec(pkg.version ?? '')
  if (!m) throw new ReleaseError(`package.json's version ${JSON.stringify(pkg.version)} is not a semver version (x.y.z or x.y.z-pre)`)
  if (ref !== undefined && ref !== '') {
    const tag = ref.replace(/^refs\/tags\//, '')
    if (tag !== `v${pkg.version}`) {
      throw new ReleaseError(`the tag ${tag} does not name package.json's version ${pkg.version}: tag v${pkg.version} to release it, or set the version (npm version …) and tag that commit`)
    }
  }
  const prerelease = m[4] !== undefined
  return { version: pkg.version, distTag: prerelease ? 'next' : 'latest', prerelease }
}

/**
 * The prebuilt binaries under `dir`, by platform (`dsh-fold.<platform>.node`, any depth).
 * @param {string} dir @returns {Map<string, string>} platform → file
 */
export function findArtifacts(dir) {
  const pkg = checkoutManifest()
  const prefix = `${pkg.napi?.binaryName ?? pkg.name}.`
  /** @type {Map<string, string>} */
  const found = new Map()
  for (const rel of readdirSync(dir, { recursive: true }).map(String)) {
    const base = path.basename(rel)
    if (!base.startsWith(prefix) || !base.endsWith('.node')) continue
    const platform = base.slice(prefix.length, -'.node'.length)
    if (found.has(platform)) throw new ReleaseError(`two binaries for ${platform} under ${dir}: ${found.get(platform)} and ${path.join(dir, rel)}`)
    found.set(platform, path.join(dir, rel))
  }
  return found
}

/**
 * The repository every published manifest names: GitHub Actions' own (`GITHUB_SERVER_URL`,
 * `GITHUB_REPOSITORY`), as npm's provenance check wants it; null outside Actions. Throws when
 * package.json names another repository, or when provenance is asked outside Actions.
 * @param {any} pkg @param {Record<string, string | undefined>} env @param {boolean} provenance
 * @returns {{type: 'git', url: string} | null}
 */
export function sourceRepository(pkg, env, provenance) {
  const server = env.GITHUB_SERVER_URL
  const repo = env.GITHUB_REPOSITORY
  if (!server || !repo) {
    if (provenance) throw new ReleaseError('provenance is signed by GitHub Actions: --provenance runs only in a workflow (GITHUB_SERVER_URL and GITHUB_REPOSITORY are unset)')
    return null
  }
  const url = `git+${server.replace(/\/$/, '')}/${repo}.git`
  const declared = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url
  const bare = (/** @type {string} */ u) => u.replace(/^git\+/, '').replace(/\.git$/, '').toLowerCase()
  if (declared && bare(declared) !== bare(url)) {
    throw new ReleaseError(`package.json's repository ${declared} is not the repository this workflow runs in (${url}): npm refuses the provenance of a package whose repository.url differs`)
  }
  return { type: 'git', url }
}

/**
 * An npm userconfig for `registry`: the registry and its token, read from $NODE_AUTH_TOKEN.
 * @param {string} registry @returns {string}
 */
export function npmrcFor(registry) {
  const u = new URL(registry)
  return `registry=${u.href}\n//${u.host}${u.pathname}:_authToken=\${NODE_AUTH_TOKEN}\n`
}

/**
 * @typedef {object} Step
 * @property {string} command as printed
 * @property {number} seconds
 */

/**
 * Runs one command of the publish path, printed first; throws on a non-zero exit.
 * @param {string[]} argv @param {{cwd: string, env: Record<string, string | undefined>, label: string[], steps: Step[], signal?: AbortSignal}} o
 */
function step(argv, { cwd, env, label, steps, signal }) {
  const shown = label.join(' ')
  process.stderr.write(`[release] $ ${shown}\n`)
  const t0 = performance.now()
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ReleaseError('interrupted'))
    const child = spawn(argv[0], argv.slice(1), { cwd, env, stdio: ['ignore', 'inherit', 'inherit'] })
    const abort = () => child.kill('SIGTERM')
    signal?.addEventListener('abort', abort, { once: true })
    child.once('error', reject)
    child.once('exit', (code, sig) => {
      signal?.removeEventListener('abort', abort)
      steps.push({ command: shown, seconds: (performance.now() - t0) / 1000 })
      if (code === 0) resolve(undefined)
      else reject(new ReleaseError(`\`${shown}\` ${signal?.aborted ? 'was interrupted' : `failed (${code === null ? `killed by ${sig}` : `exit ${code}`})`}`))
    })
  })
}

/**
 * @typedef {object} Published
 * @property {string} version
 * @property {string} distTag
 * @property {string[]} platforms the platform packages published (with a binary)
 * @property {string[]} missing release targets' platforms published without a package
 * @property {Record<string, string>} optionalDependencies what the root declares
 * @property {{type: 'git', url: string} | null} repository what every manifest names (in Actions)
 * @property {Step[]} steps the commands run, in order, with their times
 */

/**
 * Publishes the root and the platform packages of `artifacts` to `registry`.
 * @param {{artifacts: string, registry: string, token?: string, provenance?: boolean, tag?: string, complete?: boolean, signal?: AbortSignal}} o
 *   `token` (else $NODE_AUTH_TOKEN), `tag`, a git tag to check the version against, `complete`:
 *   refuse unless every release target has its binary (the real release)
 * @returns {Promise<Published>}
 */
export async function publishRelease({ artifacts, registry, token = process.env.NODE_AUTH_TOKEN, provenance = false, tag, complete = false, signal }) {
  const pkg = checkoutManifest()
  const { version, distTag } = releaseVersion(pkg, tag)
  const repository = sourceRepository(pkg, process.env, provenance)
  if (!token) throw new ReleaseError(`no token for ${registry}: set NODE_AUTH_TOKEN`)
  const stamp = repository ? { repository } : {}
  const binaries = findArtifacts(path.resolve(artifacts))
  const released = TARGETS.filter((t) => pkg.napi.targets.includes(t.triple))
  const unknown = [...binaries.keys()].filter((p) => !released.some((t) => t.platform === p))
  if (unknown.length > 0) throw new ReleaseError(`binaries for targets the release does not ship (package.json napi.targets): ${unknown.join(', ')}`)
  const publishing = released.filter((t) => binaries.has(t.platform))
  if (publishing.length === 0) throw new ReleaseError(`no binary under ${artifacts} (looked for ${pkg.napi.binaryName}.<platform>.node)`)
  const missing = released.filter((t) => !binaries.has(t.platform)).map((t) => t.platform)
  if (complete && missing.length > 0) throw new ReleaseError(`no binary for ${missing.join(', ')} under ${artifacts}: a release ships every target of package.json's napi.targets`)

  const stage = mkdtempSync(path.join(tmpdir(), 'dsh-fold-release-'))
  /** @type {Step[]} */
  const steps = []
  try {
    const root = path.join(stage, 'dsh-fold')
    const { manifest } = stageRoot(root)
    writeFileSync(path.join(root, 'package.json'), `${JSON.stringify({ ...manifest, ...stamp, napi: { ...manifest.napi, targets: publishing.map((t) => t.triple) } }, null, 2)}\n`)
    for (const t of publishing) stagePlatform(path.join(root, 'npm', t.platform), t.platform, null, stamp)
    const npmrc = path.join(stage, 'npmrc')
    writeFileSync(npmrc, npmrcFor(registry))
    /** @type {Record<string, string | undefined>} */
    const env = {
      ...process.env,
      NODE_AUTH_TOKEN: token,
      npm_config_userconfig: npmrc,
      npm_config_registry: registry,
      npm_config_tag: distTag,
      npm_config_provenance: provenance ? 'true' : 'false',
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
    }
    const napi = path.join(path.dirname(createRequire(import.meta.url).resolve('@napi-rs/cli/package.json')), 'dist', 'cli.js')
    const at = path.resolve(artifacts)
    await step([process.execPath, napi, 'artifacts', '--cwd', root, '--output-dir', at], { cwd: ROOT, env, label: ['napi', 'artifacts', '--output-dir', path.relative(ROOT, at) || '.'], steps, signal })
    await step([process.execPath, napi, 'prepublish', '--cwd', root, '-t', 'npm', '--no-gh-release'], { cwd: ROOT, env, label: ['napi', 'prepublish', '-t', 'npm', '--no-gh-release'], steps, signal })
    const written = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
    const expected = platformDependencies(pkg, publishing.map((t) => t.triple))
    if (JSON.stringify(written.optionalDependencies) !== JSON.stringify(expected)) {
      throw new ReleaseError(`napi prepublish wrote optionalDependencies ${JSON.stringify(written.optionalDependencies)}, scripts/pack.mjs expects ${JSON.stringify(expected)}: npm run pack and the release disagree`)
    }
    // The root declares every release target, as the release's does (step 4 above).
    const optionalDependencies = platformDependencies(pkg)
    writeFileSync(path.join(root, 'package.json'), `${JSON.stringify({ ...written, napi: pkg.napi, optionalDependencies }, null, 2)}\n`)
    for (const f of readdirSync(root)) if (f.endsWith('.node')) rmSync(path.join(root, f)) // napi artifacts also copies them to the root; `files` leaves them out anyway
    await step(['npm', 'publish', root, '--ignore-scripts', '--access', 'public', '--tag', distTag, ...(provenance ? ['--provenance'] : [])], { cwd: stage, env, label: ['npm', 'publish', '--ignore-scripts', '--access', 'public', '--tag', distTag, ...(provenance ? ['--provenance'] : [])], steps, signal })
    return { version, distTag, platforms: publishing.map((t) => t.platform), missing, optionalDependencies, repository, steps }
  } finally {
    rmSync(stage, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [verb, ...args] = process.argv.slice(2)
  const usage = 'Usage: node scripts/release.mjs version [TAG] | publish --artifacts DIR [--provenance] [--tag TAG]'
  try {
    if (verb === 'version') {
      if (args.length > 1) throw new ReleaseError(usage)
      const v = releaseVersion(checkoutManifest(), args[0])
      console.log(`version=${v.version}\ndist-tag=${v.distTag}`)
    } else if (verb === 'publish') {
      const at = args.indexOf('--artifacts')
      const tagAt = args.indexOf('--tag')
      const artifacts = at >= 0 ? args[at + 1] : undefined
      if (!artifacts || !existsSync(artifacts) || !statSync(artifacts).isDirectory()) throw new ReleaseError(`${usage}\n--artifacts must name a folder of prebuilt binaries`)
      const registry = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' }).trim()
      const r = await publishRelease({ artifacts, registry, provenance: args.includes('--provenance'), tag: tagAt >= 0 ? args[tagAt + 1] : undefined, complete: true })
      console.log(`published dsh-fold@${r.version} (${r.distTag}) and ${r.platforms.map((p) => `dsh-fold-${p}`).join(', ')}${r.missing.length ? `; no binary for ${r.missing.join(', ')}` : ''}`)
    } else {
      throw new ReleaseError(usage)
    }
  } catch (e) {
    console.error(e instanceof ReleaseError ? `release: ${e.message}` : /** @type {Error} */ (e).stack)
    process.exit(e instanceof ReleaseError ? 1 : 70)
  }
}

