// @ts-check
/**
 * @module scripts/install
 * The checkout's `install` script: `npm install` in a clone builds the addon when no binary
 * loads. It is not in the published package (scripts/pack.mjs gives users a manifest without
 * lifecycle scripts; plugin/shared/binary.js explains a missing binary there, at load).
 *
 * A binary that loads (built earlier, or a platform package): nothing to do. Otherwise it builds
 * one with `napi build --platform --release`, which needs the Rust toolchain; without one it fails
 * with exactly one message, which names this platform the way the loader and the
 * `dsh-fold-<platform>` packages do (e.g. `linux-arm64-musl`) and says what to do:
 * - the platform package is installed but its binary does not load: the loader's reason;
 * - no cargo on PATH: install Rust with rustup;
 * - cargo on PATH that cannot run (rustup with no default toolchain, a broken install): that
 *   `cargo --version` failed, with cargo's own first line (and rustup's `help:` line).
 */
'use strict'
const { spawnSync } = require('node:child_process')
const { existsSync, readFileSync } = require('node:fs')
const path = require('node:path')
const { pathToFileURL } = require('node:url')

const root = path.join(__dirname, '..')
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
const binaryName = (pkg.napi && pkg.napi.binaryName) || pkg.name

/** @param {string} message */
function fail(message) {
  console.error(message.startsWith('dsh-fold: ') ? message : `dsh-fold: ${message}`)
  process.exit(1)
}

async function main() {
  const probe = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(root)})`], { stdio: 'pipe', encoding: 'utf8' })
  if (probe.status === 0) return 0
  const binary = await import(pathToFileURL(path.join(root, 'plugin', 'shared', 'binary.js')).href)
  const platform = binary.platformName()
  const platformPackage = `${pkg.name}-${platform}`
  let installed = false
  try {
    require.resolve(`${platformPackage}/package.json`, { paths: [root] })
    installed = true
  } catch {
    // not installed: build
  }
  if (installed || !existsSync(path.join(root, 'Cargo.toml'))) fail(binary.explainMissingBinary(root, new Error(probe.stderr)))

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
  return build.status ?? 1
}

main().then((code) => process.exit(code))
