// @ts-check
/**
 * @module scripts/install
 * The package's `install` step. A user's install finds the prebuilt binary (the platform
 * package, or a `.node` file beside index.js) and does nothing. A source checkout without a
 * binary builds one with `napi build --platform --release`, which needs the Rust toolchain.
 * Every other case fails with exactly one message, which names this platform the way the
 * loader and the `dsh-fold-<platform>` packages do (e.g. `linux-arm64-musl`) and says what to
 * install:
 * - the platform package is installed but its binary does not load: the loader's reason;
 * - a published package whose platform package is missing: reinstall with optional
 *   dependencies if the platform has one, else the platforms that do and the source route;
 * - a source checkout without cargo: install Rust with rustup;
 * - a source checkout whose cargo is on PATH but cannot run (rustup with no default toolchain, a
 *   broken install): that `cargo --version` failed, with cargo's own first line (and rustup's
 *   `help:` line when it gives one).
 */
'use strict'
const { spawnSync } = require('node:child_process')
const { existsSync, readFileSync } = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
const binaryName = (pkg.napi && pkg.napi.binaryName) || pkg.name

/** Whether this Linux runs on musl: glibc reports its version in the process report. */
function isMusl() {
  const report = process.report && typeof process.report.getReport === 'function' ? process.report.getReport() : null
  const header = report && /** @type {any} */ (report).header
  return !(header && header.glibcVersionRuntime)
}

/** This machine's napi platform name, as in `dsh-fold.<platform>.node` and `dsh-fold-<platform>`. */
function platformName() {
  const { platform, arch } = process
  if (platform === 'linux') return arch === 'arm' ? `linux-arm-${isMusl() ? 'musleabihf' : 'gnueabihf'}` : `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'android' && arch === 'arm') return 'android-arm-eabi'
  return `${platform}-${arch}`
}

/** @param {string} message */
function fail(message) {
  console.error(`dsh-fold: ${message}`)
  process.exit(1)
}

const probe = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(root)})`], { stdio: 'pipe', encoding: 'utf8' })
if (probe.status === 0) process.exit(0)

const platform = platformName()
const platformPackage = `${pkg.name}-${platform}`
let installed = null
try {
  installed = require.resolve(`${platformPackage}/package.json`, { paths: [root] })
} catch {
  // not installed: handled below
}
if (installed) {
  // The loader's own error lists every candidate it tried; loading the package directly gives
  // the one reason that matters (an invalid file, a missing GLIBC_x.y, ...).
  const direct = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(path.dirname(installed))})`], { stdio: 'pipe', encoding: 'utf8' })
  const firstError = (/** @type {string} */ text) => (/^\w*Error\b.*$/m.exec(text) || [''])[0]
  const reason = firstError(direct.stderr) || firstError(probe.stderr) || `exit ${probe.status}`
  fail(`the prebuilt binary for ${platform} (${platformPackage}, ${path.dirname(installed)}) is installed but does not load: ${reason.trim()}. Reinstall it (npm install ${platformPackage}@${pkg.version}); if it still fails, this system is older or different than the binary needs (Linux gnu binaries need glibc 2.17 or newer) — report it with the message above.`)
}

if (!existsSync(path.join(root, 'Cargo.toml'))) {
  const published = Object.keys(pkg.optionalDependencies || {})
    .filter((n) => n.startsWith(`${pkg.name}-`))
    .map((n) => n.slice(pkg.name.length + 1))
  if (published.includes(platform)) {
    fail(`no prebuilt binary for ${platform}: its package ${platformPackage} was not installed. It is an optional dependency: reinstall without --omit=optional / --no-optional (npm: delete node_modules and package-lock.json made on another platform, then npm install).`)
  }
  const list = published.length > 0 ? published.join(', ') : 'none in this package'
  fail(`no prebuilt binary for ${platform} (npm package ${platformPackage}); prebuilt platforms: ${list}. Build it from source instead: clone the repository and run npm install there, which needs the Rust toolchain (https://rustup.rs).`)
}

const cargo = spawnSync('cargo', ['--version'], { stdio: 'pipe', encoding: 'utf8' })
const noBinary = `no prebuilt binary for ${platform} (no ${binaryName}.${platform}.node here, no ${platformPackage} package)`
if (cargo.error && /** @type {any} */ (cargo.error).code === 'ENOENT') {
  fail(`${noBinary} and no Rust toolchain to build one: \`cargo\` is not on PATH. Install Rust with rustup (https://rustup.rs), open a new shell so cargo is on PATH, and run npm install again.`)
}
if (cargo.status !== 0) {
  // cargo is there but does not run: rustup with no default toolchain, a broken install, a file
  // that is not executable. Its own words say which; rustup adds a `help:` line with the fix.
  const lines = `${cargo.stderr ?? ''}\n${cargo.stdout ?? ''}`.split('\n').map((l) => l.trim()).filter(Boolean)
  const how = cargo.error ? `could not be started (${/** @type {any} */ (cargo.error).code ?? cargo.error.message})` : `failed (${cargo.status === null ? `killed by ${cargo.signal}` : `exit ${cargo.status}`})`
  const said = [lines[0], lines.find((l, i) => i > 0 && /^help:/.test(l))].filter(Boolean).map((l) => `"${l}"`)
  fail(`${noBinary}, and the Rust toolchain on PATH cannot build one: \`cargo --version\` ${how}${said.length ? `, saying ${said.join(' and ')}` : ' and said nothing'}. Make cargo run (rustup with no toolchain: \`rustup default stable\`), then run npm install again.`)
}
console.error(`dsh-fold: no prebuilt binary for ${platform}, building from source (napi build --platform --release)...`)
// @napi-rs/cli exports no path to its bin; find it through its package.json.
const napi = path.join(path.dirname(require.resolve('@napi-rs/cli/package.json', { paths: [root] })), 'dist', 'cli.js')
const build = spawnSync(process.execPath, [napi, 'build', '--platform', '--release'], { cwd: root, stdio: 'inherit' })
process.exit(build.status ?? 1)
