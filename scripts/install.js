// @ts-check
/**
 * @module scripts/install
 * The package's `install` step. A user's install finds the prebuilt binary (the platform
 * package, or a `.node` file beside index.js) and does nothing. A source checkout without a
 * binary builds one with `napi build --platform --release`, which needs the Rust toolchain;
 * when neither a binary nor a toolchain is there, it says so and fails loudly.
 */
'use strict'
const { spawnSync } = require('node:child_process')
const { existsSync } = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')

function loads() {
  const probe = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(root)})`], { stdio: 'pipe' })
  return probe.status === 0
}

if (loads()) process.exit(0)

if (!existsSync(path.join(root, 'Cargo.toml'))) {
  console.error('dsh-fold: no prebuilt binary for this platform (%s-%s) and no sources to build one.', process.platform, process.arch)
  process.exit(1)
}
const cargo = spawnSync('cargo', ['--version'], { stdio: 'pipe' })
if (cargo.status !== 0) {
  console.error('dsh-fold: no prebuilt binary for this platform and no Rust toolchain (cargo) to build one.')
  process.exit(1)
}
console.error('dsh-fold: no prebuilt binary found, building from source (napi build --platform --release)...')
// @napi-rs/cli exports no path to its bin; find it through its package.json.
const napi = path.join(path.dirname(require.resolve('@napi-rs/cli/package.json', { paths: [root] })), 'dist', 'cli.js')
const build = spawnSync(process.execPath, [napi, 'build', '--platform', '--release'], { cwd: root, stdio: 'inherit' })
process.exit(build.status ?? 1)
