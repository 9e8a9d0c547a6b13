/**
 * @module __test__/install.test
 * Where no binary loads, one clear message that names this platform (napi's name, e.g.
 * `linux-x64-gnu`) and says what to do — never a stack of loader errors, never a half-built
 * package:
 * - the published package (scripts/pack.mjs's user package) runs nothing at install: npm
 *   installs it without a word, and the message comes when the addon loads
 *   (plugin/shared/binary.js, through plugin/shared/addon.js);
 * - a source checkout's `install` script (scripts/install.js) builds the addon, and says why it
 *   cannot when there is no Rust toolchain, or one that does not run.
 * Each case runs real npm on real tarballs in a temp project, with a PATH holding only `node`,
 * `npm` and `sh`; the cases npm cannot stage offline are laid out as npm would leave them.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'

import { stageRoot } from '../scripts/pack.mjs'

const ROOT = path.resolve(import.meta.dirname, '..')
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

/** This machine's napi platform name, worked out here independently of plugin/shared/binary.js. */
function expectedPlatform() {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}
const PLATFORM = expectedPlatform()
/** rustup's binary (its proxies, cargo among them, are links to it), when installed. */
const RUSTUP = (() => {
  const r = spawnSync('sh', ['-c', 'command -v rustup'], { encoding: 'utf8' })
  return r.status === 0 ? realpathSync(r.stdout.trim()) : null
})()
/** The files a checkout's install script needs, besides package.json. */
const CHECKOUT_FILES = ['index.js', 'Cargo.toml', 'scripts/install.js', 'plugin/package.json', 'plugin/shared/binary.js']

let dir = ''
let rootTarball = ''
/** @type {Record<string, string>} */
let env = {}

before(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'dsh-fold-install-test-')))
  const bin = path.join(dir, 'bin')
  mkdirSync(bin)
  const npmCli = realpathSync(execFileSync('which', ['npm'], { encoding: 'utf8' }).trim())
  symlinkSync(process.execPath, path.join(bin, 'node'))
  symlinkSync(npmCli, path.join(bin, 'npm'))
  symlinkSync('/bin/sh', path.join(bin, 'sh'))
  env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(PATH|NODE_PATH|NODE_OPTIONS|NODE_TEST_CONTEXT|CARGO.*|RUSTUP.*|npm_.*)$/i.test(k)))
  env.PATH = bin
  const probe = spawnSync('sh', ['-c', 'command -v cargo || command -v rustc'], { env, encoding: 'utf8' })
  assert.notEqual(probe.status, 0, `a Rust toolchain is still on the stripped PATH: ${probe.stdout}`)
  const staged = stageRoot(path.join(dir, 'stage')).dir
  const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: staged, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  rootTarball = path.join(dir, JSON.parse(out)[0].filename)
})
after(() => rmSync(dir, { recursive: true, force: true }))

/**
 * A source checkout with no binary: the loader, Cargo.toml, the install script and the checkout's
 * own manifest, less what npm would download before the install step runs. @param {string} name
 */
function checkout(name) {
  const p = path.join(dir, name)
  for (const f of CHECKOUT_FILES) {
    mkdirSync(path.dirname(path.join(p, f)), { recursive: true })
    copyFileSync(path.join(ROOT, f), path.join(p, f))
  }
  const { devDependencies, peerDependencies, peerDependenciesMeta, ...manifest } = pkg
  void devDependencies, peerDependencies, peerDependenciesMeta
  writeFileSync(path.join(p, 'package.json'), JSON.stringify(manifest, null, 2))
  return p
}

/** A fresh empty project folder. @param {string} name */
function project(name) {
  const p = path.join(dir, name)
  mkdirSync(p)
  writeFileSync(path.join(p, 'package.json'), JSON.stringify({ name: `install-test-${name}`, private: true }))
  return p
}

/** `npm install` in `cwd` with the stripped PATH; lifecycle scripts on, as for users. @param {string} cwd @param {string[]} args */
function npmInstall(cwd, args) {
  return spawnSync('npm', ['install', '--foreground-scripts', '--legacy-peer-deps', '--no-audit', '--no-fund', ...args], { cwd, env, encoding: 'utf8' })
}

/** The lines dsh-fold printed. @param {{stdout: string, stderr: string}} r */
const messages = (r) => `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => l.startsWith('dsh-fold:') || l.startsWith('Error: dsh-fold:')).map((l) => l.replace(/^Error: /, ''))

/** Every `.node` file under `p`. @param {string} p @returns {string[]} */
const binaries = (p) => readdirSync(p, { recursive: true }).map(String).filter((f) => f.endsWith('.node'))

/** Loads the addon the way the plugins and the CLI do, from the package at `pkgDir`. @param {string} pkgDir */
const loadAddon = (pkgDir) => spawnSync('node', ['--input-type=module', '-e', `await import(${JSON.stringify(path.join(pkgDir, 'plugin', 'shared', 'addon.js'))})`], { cwd: pkgDir, env, encoding: 'utf8' })

/** A published package's layout in node_modules, as npm leaves it: manifest `manifest`, no platform package. @param {string} name @param {object} manifest */
function publishedLayout(name, manifest) {
  const p = path.join(dir, name, 'node_modules', 'dsh-fold')
  for (const f of ['index.js', 'plugin/package.json', 'plugin/shared/addon.js', 'plugin/shared/binary.js']) {
    mkdirSync(path.dirname(path.join(p, f)), { recursive: true })
    copyFileSync(path.join(ROOT, f), path.join(p, f))
  }
  writeFileSync(path.join(p, 'package.json'), JSON.stringify(manifest))
  return p
}

describe('the published package runs nothing at install; a missing binary is explained when it loads', () => {
  it('without its platform package (the registry lacks it): installs silently, and loading names the platform and the package to install', () => {
    const p = project('published')
    const r = npmInstall(p, [rootTarball])
    assert.equal(r.status, 0, `npm install must succeed: ${r.stderr}`)
    assert.deepEqual(messages(r), [], 'the install itself says nothing')
    assert.doesNotMatch(`${r.stdout}${r.stderr}`, /install-scripts|approve|building from source/)
    const load = loadAddon(path.join(p, 'node_modules', 'dsh-fold'))
    assert.notEqual(load.status, 0)
    const said = messages(load)
    assert.equal(said.length, 1, `exactly one message, got:\n${load.stderr}`)
    assert.match(said[0], new RegExp(`no prebuilt binary for ${PLATFORM}: its package dsh-fold-${PLATFORM} is not installed\\. It is an optional dependency`))
    assert.deepEqual(binaries(p), [], 'nothing was built')
  })

  it('a platform package whose binary does not load: one message with the loader reason', () => {
    const plat = path.join(dir, `dsh-fold-${PLATFORM}`)
    mkdirSync(plat)
    const name = `dsh-fold.${PLATFORM}.node`
    writeFileSync(path.join(plat, 'package.json'), JSON.stringify({ name: `dsh-fold-${PLATFORM}`, version: pkg.version, main: name, files: [name] }))
    writeFileSync(path.join(plat, name), 'this is not a shared library\n'.repeat(8))
    const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: plat, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    const p = project('broken-binary')
    const r = npmInstall(p, [path.join(dir, JSON.parse(out)[0].filename), rootTarball])
    assert.equal(r.status, 0, `npm install must succeed: ${r.stderr}`)
    const load = loadAddon(path.join(p, 'node_modules', 'dsh-fold'))
    assert.notEqual(load.status, 0)
    const said = messages(load)
    assert.equal(said.length, 1, `exactly one message, got:\n${load.stderr}`)
    assert.match(said[0], new RegExp(`the prebuilt binary for ${PLATFORM} \\(dsh-fold-${PLATFORM}, .*\\) is installed but does not load: `))
    if (process.platform === 'linux') assert.match(said[0], /invalid ELF header|file too short/)
    assert.match(said[0], new RegExp(`npm install dsh-fold-${PLATFORM}@${pkg.version.replaceAll('.', '\\.')}`))
  })

  it('an unsupported platform of a published package: lists the prebuilt platforms and the source route', () => {
    const p = publishedLayout('unsupported', { ...pkg, scripts: undefined, optionalDependencies: { 'dsh-fold-plan9-x64': pkg.version, 'dsh-fold-haiku-x64': pkg.version } })
    const load = loadAddon(p)
    assert.notEqual(load.status, 0)
    const said = messages(load)
    assert.equal(said.length, 1, `exactly one message, got:\n${load.stderr}`)
    assert.match(said[0], new RegExp(`no prebuilt binary for ${PLATFORM} \\(npm package dsh-fold-${PLATFORM}\\); prebuilt platforms: plan9-x64, haiku-x64\\. Build it from source`))
    assert.match(said[0], /Rust toolchain \(https:\/\/rustup\.rs\)/)
  })
})

describe("a source checkout's npm install without a Rust toolchain that runs", () => {
  it('without cargo: one message naming the platform and saying to install Rust with rustup', () => {
    const p = checkout('checkout')
    const r = npmInstall(p, [])
    assert.notEqual(r.status, 0, 'npm install must fail')
    const said = messages(r)
    assert.equal(said.length, 1, `exactly one message, got:\n${said.join('\n')}`)
    assert.match(said[0], new RegExp(`no prebuilt binary for ${PLATFORM} \\(no dsh-fold\\.${PLATFORM}\\.node here, no dsh-fold-${PLATFORM} package\\)`))
    assert.match(said[0], /`cargo` is not on PATH\. Install Rust with rustup \(https:\/\/rustup\.rs\)/)
    assert.deepEqual(binaries(p), [], 'nothing was built')
  })

  it("cargo on PATH that cannot run (rustup with no default toolchain): says cargo failed, with cargo's own first line", { skip: RUSTUP ? false : 'needs rustup (its proxy is the cargo that cannot run)' }, () => {
    const p = checkout('checkout-no-toolchain')
    // rustup's own proxy named cargo, with a rustup home that holds no toolchain: what a user has
    // after installing rustup with `--default-toolchain none`, or after removing the default.
    const bin = path.join(dir, 'bin-rustup')
    mkdirSync(bin)
    for (const f of readdirSync(env.PATH)) symlinkSync(realpathSync(path.join(env.PATH, f)), path.join(bin, f))
    symlinkSync(/** @type {string} */ (RUSTUP), path.join(bin, 'cargo'))
    const rustupHome = path.join(dir, 'rustup-home-empty')
    mkdirSync(rustupHome)
    const r = spawnSync('npm', ['install', '--foreground-scripts', '--legacy-peer-deps', '--no-audit', '--no-fund'], { cwd: p, env: { ...env, PATH: bin, RUSTUP_HOME: rustupHome }, encoding: 'utf8' })
    assert.notEqual(r.status, 0, 'npm install must fail')
    const said = messages(r)
    assert.equal(said.length, 1, `exactly one message, got:\n${said.join('\n')}`)
    assert.doesNotMatch(said[0], /not on PATH/)
    assert.match(said[0], new RegExp(`no prebuilt binary for ${PLATFORM} \\(no dsh-fold\\.${PLATFORM}\\.node here, no dsh-fold-${PLATFORM} package\\)`))
    assert.match(said[0], /`cargo --version` failed \(exit 1\), saying "error: rustup could not choose a version of cargo to run/)
    assert.match(said[0], /rustup default stable/)
    assert.deepEqual(binaries(p), [], 'nothing was built')
  })
})

describe('npm install in a checkout on the oldest Node the README supports', () => {
  it('prints no EBADENGINE warning: every package the lock file installs accepts this Node', (t) => {
    // What `npm install` resolves, without building or fetching: a dry run of the lock file.
    const copy = mkdtempSync(path.join(tmpdir(), 'dsh-fold-engines-'))
    t.after(() => rmSync(copy, { recursive: true, force: true }))
    for (const f of ['package.json', 'package-lock.json']) copyFileSync(path.join(ROOT, f), path.join(copy, f))
    const r = spawnSync('npm', ['install', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: copy, encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    const warned = [...`${r.stdout}${r.stderr}`.matchAll(/EBADENGINE +package: '([^']+)'/g)].map((m) => m[1])
    assert.deepEqual(warned, [], `npm install warns that these packages do not support Node ${process.version}`)
  })
})
