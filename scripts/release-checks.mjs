// @ts-check
/**
 * @module scripts/release-checks
 * The rehearsal's install checks: dsh-fold installed BY NAME from a registry (the rehearsal's
 * verdaccio, or any URL) the way users will install it, each in a clean environment — a
 * temporary HOME, DSH_HOME and TMPDIR, fresh npm and pnpm caches, no npm_*, CARGO*, RUSTUP*,
 * DSH_* or DEEPSEEK_* variables, and a PATH of links to node, npm, sh (plus the host's and
 * pnpm's bin folders where a check needs them) and /usr/bin:/bin, on which `cargo`, `rustc` and
 * `rustup` are checked to be absent. Each check records every command it ran, its time and its
 * output, for the transcript.
 *
 * - `profile`: `dsh plugin --profile headless add dsh-fold` with the host as the README installs
 *   it (pnpm, 0.1.0-rc.8, the HMR override and row; __test__/helpers/readme-host.mjs), then
 *   `dsh-fold doctor` (every check ✓, the registry line finding the published version),
 *   `dsh-fold try --profile headless` (the scripted model) and `dsh-fold try` (a temporary home,
 *   into which try repacks this pnpm-installed copy).
 *   No warning may appear (pnpm's "Ignored build scripts", dsh's "declares no dsh.bundle").
 * - `npm-node20`, `npm-node22`: `npm install dsh-fold` in an empty project on each Node; then
 *   `require('dsh-fold')` must load `dsh-fold-linux-x64-gnu`'s binary, the one published.
 * - per other published platform: `npm install dsh-fold --os --cpu --libc` must resolve exactly
 *   its package, whose binary passes scripts/test-targets.mjs's header checks; linux-arm64-gnu is
 *   then loaded by Node for arm64 under qemu (scripts/target-tools.mjs), linux-x64-musl linked by
 *   Debian's musl loader.
 * - per release target the registry lacks (MSVC here): the same resolution for that platform,
 *   to say what its users would meet; the other checks passing is the proof that a missing
 *   platform package breaks no other platform's install.
 * The proof that nothing was built: the PATH probe, no lifecycle script in the published root,
 * exactly one `.node` file in each install, byte-equal to the published binary, no `target/`.
 */
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

import { checkHeaders, muslLoad } from './test-targets.mjs'
import { ToolUnavailable, ensureArm64Emulation, ensureForeignNode } from './target-tools.mjs'
import { binaryName, findTarget } from './targets.mjs'

/** The README's HMR row (README step 3), which rc.8's `dsh` launcher needs. */
const HMR_ROW = "- insert:\n    - id: launcher-hmr\n      name: '@deepseek-ai/cordis-plugin-hmr'\n      config: { root: [] }\n"
/** Loads dsh-fold and prints which Node and which binary did, as JSON (run with `node -e`). */
const LOAD_SCRIPT = "const m = require('dsh-fold'); console.log(JSON.stringify({node: process.version, arch: process.arch, binary: Object.keys(require.cache).find((f) => f.endsWith('.node')), codes: m.foldErrorCodes().length}))"
/** Variables of the caller's that a clean environment drops. */
const DROP = /^(PATH|HOME|TMPDIR|TMP|TEMP|XDG_.*|NODE_PATH|NODE_OPTIONS|NODE_TEST_CONTEXT|CARGO.*|RUSTUP.*|RUSTC.*|npm_.*|NPM_.*|PNPM_.*|DSH_.*|DEEPSEEK_.*)$/i

/**
 * @typedef {object} Command
 * @property {string} cmd as shown
 * @property {number} seconds
 * @property {number | null} code
 * @property {string} output stdout + stderr, trimmed
 */

/**
 * @typedef {object} Check
 * @property {string} name
 * @property {boolean} ok
 * @property {string} summary one line
 * @property {Command[]} commands
 * @property {string[]} [notes]
 */

/** @param {string} file */
const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex')

/** Every `.node` file under `dir` (not following links, skipping pnpm's content store). @param {string} dir */
function nodeFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.node'))
    .map((e) => path.join(e.parentPath ?? /** @type {any} */ (e).path, e.name))
    .filter((f) => !f.includes(`${path.sep}.local${path.sep}share${path.sep}pnpm${path.sep}`))
}

/** A clean environment in a fresh temp folder. */
class Sandbox {
  /**
   * @param {string} name @param {{registry: string, node: string, extraPath?: string[], signal?: AbortSignal}} o
   *   `signal`: once aborted (Ctrl-C), a running command's group is stopped and none starts
   */
  constructor(name, { registry, node, extraPath = [], signal }) {
    this.signal = signal
    this.dir = realpathSync(mkdtempSync(path.join(tmpdir(), `dsh-fold-rehearse-${name}-`)))
    this.home = path.join(this.dir, 'home')
    const bin = path.join(this.dir, 'bin')
    for (const d of [this.home, bin, path.join(this.dir, 'tmp')]) mkdirSync(d, { recursive: true })
    const npmCli = realpathSync(spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim())
    symlinkSync(node, path.join(bin, 'node'))
    symlinkSync(npmCli, path.join(bin, 'npm'))
    symlinkSync('/bin/sh', path.join(bin, 'sh'))
    /** @type {Record<string, string>} */
    this.env = {
      ...Object.fromEntries(Object.entries(process.env).filter(([k, v]) => !DROP.test(k) && v !== undefined)),
      HOME: this.home,
      DSH_HOME: path.join(this.home, '.dsh'),
      TMPDIR: path.join(this.dir, 'tmp'),
      PATH: [bin, ...extraPath, '/usr/bin', '/bin'].join(path.delimiter),
      npm_config_registry: registry,
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      DSH_TELEMETRY_DISABLED: '1',
    }
    /** @type {Command[]} */
    this.commands = []
  }

  /** `command -v` of the Rust tools in this environment: empty when none is reachable. */
  rustOnPath() {
    const r = spawnSync('sh', ['-c', 'for t in cargo rustc rustup; do command -v $t; done; true'], { env: this.env, encoding: 'utf8' })
    return r.stdout.trim()
  }

  /**
   * Runs `script` with `sh -c` in `cwd` (default HOME), recorded; resolves the command.
   * @param {string} script @param {{cwd?: string, timeoutMs?: number, signal?: AbortSignal}} [o]
   * @returns {Promise<Command>}
   */
  run(script, { cwd = this.home, timeoutMs = 600_000, signal = this.signal } = {}) {
    const t0 = performance.now()
    return new Promise((resolve) => {
      if (signal?.aborted) {
        const command = { cmd: script, seconds: 0, code: null, output: 'not run: interrupted' }
        this.commands.push(command)
        return resolve(command)
      }
      const child = spawn('sh', ['-c', script], { cwd, env: this.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
      let output = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (output += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (output += d))
      const kill = (/** @type {NodeJS.Signals} */ s) => {
        try {
          process.kill(-(/** @type {number} */ (child.pid)), s)
        } catch {
          // gone
        }
      }
      const stop = () => {
        kill('SIGTERM')
        setTimeout(() => kill('SIGKILL'), 5000).unref()
      }
      const timer = setTimeout(stop, timeoutMs)
      signal?.addEventListener('abort', stop, { once: true })
      child.once('close', (code) => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', stop)
        const command = { cmd: script, seconds: (performance.now() - t0) / 1000, code, output: output.trim() }
        this.commands.push(command)
        resolve(command)
      })
    })
  }

  remove() {
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** @param {boolean} cond @param {string} message */
function check(cond, message) {
  if (!cond) throw new Error(message)
}

/**
 * Runs `body` in a fresh sandbox and turns it into a Check (a thrown error fails it).
 * @param {string} name @param {ConstructorParameters<typeof Sandbox>[1]} o
 * @param {(s: Sandbox) => Promise<{summary: string, notes?: string[]}>} body
 * @returns {Promise<Check>}
 */
async function inSandbox(name, o, body) {
  const s = new Sandbox(name, o)
  try {
    const rust = s.rustOnPath()
    check(rust === '', `the clean PATH reaches a Rust tool: ${rust}`)
    const { summary, notes } = await body(s)
    return { name, ok: true, summary, commands: s.commands, notes: ['no cargo, rustc or rustup on PATH (command -v finds none)', ...(notes ?? [])] }
  } catch (e) {
    return { name, ok: false, summary: /** @type {Error} */ (e).message, commands: s.commands }
  } finally {
    s.remove()
  }
}

/** Lines of npm's or pnpm's output that are warnings. @param {string} output */
const warnings = (output) => output.split('\n').filter((l) => /\bWARN\b|npm warn|warning:|Ignored build scripts|approve-builds|deprecated/i.test(l))

/**
 * @typedef {object} Published
 * @property {string} registry
 * @property {string} version
 * @property {Record<string, string>} binaries platform → sha256 of the published binary
 * @property {Record<string, string>} files platform → the published binary (a local copy)
 * @property {string[]} missing release platforms the registry lacks
 * @property {boolean} rootHasLifecycleScripts
 * @property {string | null} repository the root's `repository.url` (set in GitHub Actions)
 * @property {string[]} repositoryMismatch packages whose `repository.url` is not the root's
 */

/**
 * Loads dsh-fold in `project` with the sandbox's node and checks the binary that loaded.
 * @param {Sandbox} s @param {string} project @param {string} platform @param {Published} pub
 */
async function requireCheck(s, project, platform, pub) {
  const r = await s.run(`node -e ${JSON.stringify(LOAD_SCRIPT)}`, { cwd: project })
  check(r.code === 0, `require('dsh-fold') failed: ${r.output}`)
  const got = JSON.parse(r.output.split('\n').at(-1) ?? '{}')
  const expected = path.join(project, 'node_modules', `dsh-fold-${platform}`, binaryName(findTarget(platform)))
  check(realpathSync(got.binary) === realpathSync(expected), `loaded ${got.binary}, not ${expected}`)
  check(sha256(got.binary) === pub.binaries[platform], `the loaded binary is not the published dsh-fold-${platform}'s`)
  return got
}

/**
 * The one `.node` file of an install: it must be the published binary of `platform`.
 * @param {string} dir @param {string} platform @param {Published} pub
 */
function onlyPublishedBinary(dir, platform, pub) {
  const files = nodeFiles(dir)
  check(files.length === 1, `expected exactly one .node file in the install, found ${files.length}: ${files.join(', ')}`)
  check(sha256(files[0]) === pub.binaries[platform], `${files[0]} is not the published dsh-fold-${platform} binary`)
  check(!readdirSync(dir, { recursive: true }).map(String).some((f) => /(^|\/)target\/(release|debug)\//.test(f)), 'a cargo build folder is in the install')
  return `one .node file, byte-equal to the published dsh-fold-${platform}: ${path.relative(dir, files[0])}`
}

/**
 * By name into a DSH profile, then doctor and try.
 * @param {Published} pub @param {{node22: string, hostBin: string, pnpm: string}} host @param {AbortSignal} [signal]
 */
export function profileCheck(pub, host, signal) {
  return inSandbox('profile', { registry: pub.registry, node: host.node22, extraPath: [host.hostBin, path.dirname(host.pnpm)], signal }, async (s) => {
    mkdirSync(s.env.DSH_HOME, { recursive: true })
    writeFileSync(path.join(s.env.DSH_HOME, 'cordis.patch.yml'), HMR_ROW)
    const add = await s.run('dsh plugin --profile headless add dsh-fold', { signal })
    check(add.code === 0, `dsh plugin add failed (exit ${add.code}): ${add.output}`)
    const extra = add.output.split('\n').filter((l) => /^dsh: /.test(l) && !/^dsh: initialized profile headless at /.test(l))
    check(extra.length === 0 && warnings(add.output).length === 0, `dsh plugin add warned:\n${[...extra, ...warnings(add.output)].join('\n')}`)
    const profile = path.join(s.env.DSH_HOME, 'profiles', 'headless')
    s.env.PATH = `${path.join(profile, 'node_modules', '.bin')}${path.delimiter}${s.env.PATH}`
    const version = await s.run('dsh-fold --version')
    check(version.code === 0 && version.output.includes(pub.version), `dsh-fold --version: ${version.output}`)
    const doctor = await s.run('dsh-fold doctor', { signal })
    check(doctor.code === 0 && /^(\d+) of \1 checks pass$/m.test(doctor.output) && !/^✗/m.test(doctor.output), `doctor did not pass every check:\n${doctor.output}`)
    check(doctor.output.includes(`✓ registry ${pub.registry}: dsh-fold ${pub.version}, `), `doctor did not find dsh-fold ${pub.version} on the registry it installs from:\n${doctor.output}`)
    const tried = await s.run('dsh-fold try --profile headless', { signal })
    check(tried.code === 0 && /^done in .* fold of mark 1/m.test(tried.output), `try --profile headless failed (exit ${tried.code}):\n${tried.output.split('\n').slice(-20).join('\n')}`)
    // A temporary DSH home: try repacks this installed (pnpm-linked) copy into it.
    const fresh = await s.run('dsh-fold try', { signal })
    check(fresh.code === 0 && /^done in .* fold of mark 1/m.test(fresh.output) && /installed from this installed copy/.test(fresh.output), `try in a temporary home failed (exit ${fresh.code}):\n${fresh.output.split('\n').slice(-20).join('\n')}`)
    const installed = realpathSync(path.join(profile, 'node_modules', 'dsh-fold'))
    const peers = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')).peerDependencies ?? {}
    const resolved = spawnSync(host.node22, ['-e', `const r = require('module').createRequire(${JSON.stringify(path.join(installed, 'package.json'))}); const out = {}; for (const p of ${JSON.stringify(Object.keys(peers))}) { try { out[p] = require(r.resolve(p + '/package.json')).version } catch (e) { out[p] = null } } console.log(JSON.stringify(out))`], { env: s.env, encoding: 'utf8' })
    const versions = JSON.parse(resolved.stdout || '{}')
    const dsh = Object.entries(versions).filter(([p]) => /^@deepseek-ai\/dsh-/.test(p))
    check(dsh.length > 0 && dsh.every(([, v]) => v === '0.1.0-rc.8'), `the profile's dsh-fold resolves DSH packages other than 0.1.0-rc.8: ${JSON.stringify(versions)}`)
    return {
      summary: `dsh plugin add ${add.seconds.toFixed(1)} s, doctor ${doctor.output.match(/(\d+ of \d+) checks pass/)?.[1]}, try ${tried.seconds.toFixed(1)} s, try in a temporary home ${fresh.seconds.toFixed(1)} s`,
      notes: [onlyPublishedBinary(s.home, 'linux-x64-gnu', pub), `the DSH packages dsh-fold imports resolve, from the profile, to the host's: ${Object.entries(versions).map(([p, v]) => `${p}@${v}`).join(', ')}`, 'no warning from pnpm or dsh'],
    }
  })
}

/**
 * `npm install dsh-fold` in an empty project on `node`, loaded there.
 * @param {Published} pub @param {string} name @param {string} node @param {AbortSignal} [signal]
 */
export function npmCheck(pub, name, node, signal) {
  return inSandbox(name, { registry: pub.registry, node, signal }, async (s) => {
    const project = path.join(s.home, 'project')
    mkdirSync(project)
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'project', private: true }))
    const install = await s.run('npm install dsh-fold', { cwd: project, signal })
    check(install.code === 0, `npm install failed (exit ${install.code}): ${install.output}`)
    check(warnings(install.output).length === 0, `npm install warned:\n${warnings(install.output).join('\n')}`)
    const ls = await s.run('npm ls --all', { cwd: project })
    check(ls.code === 0, `npm ls --all reports a problem: ${ls.output}`)
    const got = await requireCheck(s, project, 'linux-x64-gnu', pub)
    return { summary: `Node ${got.node}: npm install ${install.seconds.toFixed(1)} s, require loads ${path.relative(project, got.binary)}`, notes: [onlyPublishedBinary(project, 'linux-x64-gnu', pub)] }
  })
}

/** npm's `--os/--cpu/--libc` for a platform. @param {string} platform */
function npmPlatformFlags(platform) {
  const [os, cpu, abi] = platform.split('-')
  return [`--os=${os}`, `--cpu=${cpu}`, ...(os === 'linux' ? [`--libc=${abi === 'musl' ? 'musl' : 'glibc'}`] : [])]
}

/**
 * What `npm install dsh-fold` resolves for another platform (and, for linux-arm64-gnu, what
 * Node for arm64 under qemu loads; for linux-x64-musl, what musl's loader links).
 * @param {Published} pub @param {string} platform @param {AbortSignal} [signal]
 */
export function platformCheck(pub, platform, signal) {
  return inSandbox(platform, { registry: pub.registry, node: process.execPath, signal }, async (s) => {
    const project = path.join(s.home, 'project')
    mkdirSync(project)
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'project', private: true }))
    const install = await s.run(`npm install dsh-fold ${npmPlatformFlags(platform).join(' ')}`, { cwd: project, signal })
    check(install.code === 0, `npm install failed (exit ${install.code}): ${install.output}`)
    check(warnings(install.output).length === 0, `npm install warned:\n${warnings(install.output).join('\n')}`)
    const modules = path.join(project, 'node_modules')
    const platforms = readdirSync(modules).filter((n) => n.startsWith('dsh-fold-'))
    if (!pub.binaries[platform]) {
      check(platforms.length === 0, `installed ${platforms.join(', ')} for ${platform}`)
      return { summary: `no dsh-fold-${platform} on the registry: npm install succeeds with no platform package (exit 0, no warning); its users would get dsh-fold without a binary` }
    }
    check(platforms.length === 1 && platforms[0] === `dsh-fold-${platform}`, `resolved ${platforms.join(', ') || 'no platform package'}, not dsh-fold-${platform}`)
    const target = findTarget(platform)
    const binary = path.join(modules, `dsh-fold-${platform}`, binaryName(target))
    const notes = [onlyPublishedBinary(project, platform, pub), `headers: ${checkHeaders(target, binary)}`]
    if (platform === 'linux-x64-musl') {
      try {
        notes.push(muslLoad(binary))
      } catch (e) {
        if (!(e instanceof ToolUnavailable)) throw e
        notes.push(`not linked by musl's loader: ${e.message}`)
      }
    }
    if (platform === 'linux-arm64-gnu') {
      try {
        const env = ensureArm64Emulation()
        const node = ensureForeignNode('linux-arm64')
        s.env.QEMU_LD_PREFIX = env.QEMU_LD_PREFIX
        symlinkSync(node, path.join(s.dir, 'bin', 'node-arm64'))
        const r = await s.run(`node-arm64 -e ${JSON.stringify(LOAD_SCRIPT)}`, { cwd: project, signal })
        check(r.code === 0, `Node for arm64 could not load it: ${r.output}`)
        const got = JSON.parse(r.output.split('\n').at(-1) ?? '{}')
        check(got.arch === 'arm64' && realpathSync(got.binary) === realpathSync(binary), `under qemu: ${r.output}`)
        notes.push(`Node ${got.node} for arm64 under qemu loads ${path.relative(project, got.binary)}`)
      } catch (e) {
        if (!(e instanceof ToolUnavailable)) throw e
        notes.push(`not run under qemu: ${e.message}`)
      }
    }
    return { summary: `npm install ${npmPlatformFlags(platform).join(' ')} resolves dsh-fold-${platform} (${install.seconds.toFixed(1)} s)`, notes }
  })
}

/** @param {string} url @param {string} file */
async function download(url, file) {
  const r = await fetch(url)
  if (!r.ok) throw new Error(`GET ${url}: ${r.status}`)
  writeFileSync(file, Buffer.from(await r.arrayBuffer()))
}

/**
 * What `registry` holds for dsh-fold: the root's version and manifest, and each platform
 * package's binary (downloaded, unpacked, hashed) — what the checks compare installs against.
 * @param {string} registry @param {string[]} releasePlatforms @param {string} dir a scratch folder
 * @returns {Promise<Published & {sizes: Record<string, number>}>}
 */
export async function readPublished(registry, releasePlatforms, dir) {
  const doc = await (await fetch(`${registry}dsh-fold`)).json()
  const version = doc['dist-tags']?.latest ?? doc['dist-tags']?.next
  const root = doc.versions?.[version]
  if (!root) throw new Error(`${registry} has no dsh-fold`)
  /** @type {Record<string, number>} */
  const sizes = {}
  const tgz = path.join(dir, 'dsh-fold.tgz')
  await download(root.dist.tarball, tgz)
  sizes['dsh-fold'] = readFileSync(tgz).length
  /** @type {Record<string, string>} */
  const binaries = {}
  /** @type {Record<string, string>} */
  const files = {}
  const missing = []
  const repository = root.repository?.url ?? null
  const repositoryMismatch = []
  for (const platform of releasePlatforms) {
    const r = await fetch(`${registry}dsh-fold-${platform}`)
    if (r.status === 404) {
      missing.push(platform)
      continue
    }
    const pdoc = await r.json()
    const v = pdoc.versions?.[version]
    if (!v) throw new Error(`${registry} has dsh-fold-${platform} but not at ${version}`)
    if ((v.repository?.url ?? null) !== repository) repositoryMismatch.push(`dsh-fold-${platform} (${v.repository?.url ?? 'none'})`)
    const file = path.join(dir, `dsh-fold-${platform}.tgz`)
    await download(v.dist.tarball, file)
    sizes[`dsh-fold-${platform}`] = readFileSync(file).length
    const out = path.join(dir, platform)
    mkdirSync(out)
    const x = spawnSync('tar', ['xzf', file, '-C', out], { encoding: 'utf8' })
    if (x.status !== 0) throw new Error(`cannot unpack ${file}: ${x.stderr}`)
    const binary = path.join(out, 'package', binaryName(findTarget(platform)))
    if (!existsSync(binary)) throw new Error(`dsh-fold-${platform}@${version} holds no ${path.basename(binary)}`)
    binaries[platform] = sha256(binary)
    files[platform] = binary
  }
  const lifecycle = ['preinstall', 'install', 'postinstall', 'prepare'].filter((k) => root.scripts?.[k])
  return { registry, version, binaries, files, missing, sizes, rootHasLifecycleScripts: lifecycle.length > 0, repository, repositoryMismatch }
}
