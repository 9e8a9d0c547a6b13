/**
 * @module __test__/install.test
 * `npm install` where no prebuilt binary fits and no Rust toolchain is on PATH must fail with one
 * clear message that names this platform (napi's name, e.g. `linux-x64-gnu`) and says what to
 * install — never a stack of loader errors, never a half-built package. Each case runs real npm
 * on real tarballs (`npm pack` of this repo) in a temp project, with a PATH holding only `node`,
 * `npm` and `sh`, as scripts/pack.mjs's verifyInstall does; the cases that npm cannot stage
 * offline run the package's install script directly in the layout npm would leave.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'

const ROOT = path.resolve(import.meta.dirname, '..')
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

/** This machine's napi platform name, worked out here independently of scripts/install.js. */
function expectedPlatform() {
  const { platform, arch } = process
  if (platform === 'linux') return `linux-${arch}-${process.report.getReport().header.glibcVersionRuntime ? 'gnu' : 'musl'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}
const PLATFORM = expectedPlatform()

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
  const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  rootTarball = path.join(dir, JSON.parse(out)[0].filename)
})
after(() => rmSync(dir, { recursive: true, force: true }))

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

/** The lines the install script printed. @param {{stdout: string, stderr: string}} r */
const messages = (r) => `${r.stdout}\n${r.stderr}`.split('\n').filter((l) => l.startsWith('dsh-fold:'))

/** Every `.node` file under `p`. @param {string} p @returns {string[]} */
const binaries = (p) => readdirSync(p, { recursive: true }).map(String).filter((f) => f.endsWith('.node'))

describe('npm install without a prebuilt binary or a Rust toolchain', () => {
  it('the published package without its platform package: one message naming the platform and the source route', () => {
    const p = project('published')
    const r = npmInstall(p, [rootTarball])
    assert.notEqual(r.status, 0, 'npm install must fail')
    const said = messages(r)
    assert.equal(said.length, 1, `exactly one message, got:\n${said.join('\n')}`)
    assert.match(said[0], new RegExp(`no prebuilt binary for ${PLATFORM} \\(npm package dsh-fold-${PLATFORM}\\)`))
    assert.match(said[0], /Rust toolchain \(https:\/\/rustup\.rs\)/)
    assert.doesNotMatch(`${r.stdout}${r.stderr}`, /Cannot find native binding|building from source/)
    assert.deepEqual(binaries(p), [], 'nothing was built')
  })

  it('a source checkout without cargo: one message naming the platform and saying to install Rust with rustup', () => {
    const p = path.join(dir, 'checkout')
    mkdirSync(path.join(p, 'scripts'), { recursive: true })
    for (const f of ['index.js', 'Cargo.toml', 'scripts/install.js']) copyFileSync(path.join(ROOT, f), path.join(p, f))
    // The checkout's own manifest, less what npm would download before the install step runs.
    const { devDependencies, peerDependencies, peerDependenciesMeta, ...manifest } = pkg
    void devDependencies, peerDependencies, peerDependenciesMeta
    writeFileSync(path.join(p, 'package.json'), JSON.stringify(manifest, null, 2))
    const r = npmInstall(p, [])
    assert.notEqual(r.status, 0, 'npm install must fail')
    const said = messages(r)
    assert.equal(said.length, 1, `exactly one message, got:\n${said.join('\n')}`)
    assert.match(said[0], new RegExp(`no prebuilt binary for ${PLATFORM} \\(no dsh-fold\\.${PLATFORM}\\.node here, no dsh-fold-${PLATFORM} package\\)`))
    assert.match(said[0], /`cargo` is not on PATH\. Install Rust with rustup \(https:\/\/rustup\.rs\)/)
    assert.deepEqual(binaries(p), [], 'nothing was built')
  })

  it('a platform package whose binary does not load: one message with the loader reason, nothing built', () => {
    const plat = path.join(dir, `dsh-fold-${PLATFORM}`)
    mkdirSync(plat)
    const name = `dsh-fold.${PLATFORM}.node`
    writeFileSync(path.join(plat, 'package.json'), JSON.stringify({ name: `dsh-fold-${PLATFORM}`, version: pkg.version, main: name, files: [name] }))
    writeFileSync(path.join(plat, name), 'this is not a shared library\n'.repeat(8))
    const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: plat, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    const p = project('broken-binary')
    const r = npmInstall(p, [path.join(dir, JSON.parse(out)[0].filename), rootTarball])
    assert.notEqual(r.status, 0, 'npm install must fail')
    const said = messages(r)
    assert.equal(said.length, 1, `exactly one message, got:\n${said.join('\n')}`)
    assert.match(said[0], new RegExp(`the prebuilt binary for ${PLATFORM} \\(dsh-fold-${PLATFORM}, .*\\) is installed but does not load: Error: `))
    if (process.platform === 'linux') assert.match(said[0], /invalid ELF header|file too short/)
    assert.match(said[0], new RegExp(`npm install dsh-fold-${PLATFORM}@${pkg.version.replaceAll('.', '\\.')}`))
  })

  it('a published package listing this platform as an optional dependency: says to reinstall with optional dependencies', () => {
    // npm would fetch the (unpublished) platform package to stage this; the layout it leaves
    // when optional dependencies are omitted is built by hand and the install script run in it.
    const p = path.join(dir, 'omitted', 'node_modules', 'dsh-fold')
    mkdirSync(path.join(p, 'scripts'), { recursive: true })
    for (const f of ['index.js', 'scripts/install.js']) copyFileSync(path.join(ROOT, f), path.join(p, f))
    writeFileSync(path.join(p, 'package.json'), JSON.stringify({ ...pkg, optionalDependencies: { [`dsh-fold-${PLATFORM}`]: pkg.version, 'dsh-fold-plan9-x64': pkg.version } }))
    const r = spawnSync('sh', ['-c', 'node scripts/install.js'], { cwd: p, env, encoding: 'utf8' })
    assert.equal(r.status, 1)
    const said = messages(r)
    assert.equal(said.length, 1, `exactly one message, got:\n${said.join('\n')}`)
    assert.match(said[0], new RegExp(`no prebuilt binary for ${PLATFORM}: its package dsh-fold-${PLATFORM} was not installed\\. It is an optional dependency: reinstall without --omit=optional`))
  })

  it('an unsupported platform of a published package: lists the prebuilt platforms', () => {
    const p = path.join(dir, 'unsupported', 'node_modules', 'dsh-fold')
    mkdirSync(path.join(p, 'scripts'), { recursive: true })
    for (const f of ['index.js', 'scripts/install.js']) copyFileSync(path.join(ROOT, f), path.join(p, f))
    writeFileSync(path.join(p, 'package.json'), JSON.stringify({ ...pkg, optionalDependencies: { 'dsh-fold-plan9-x64': pkg.version, 'dsh-fold-haiku-x64': pkg.version } }))
    const r = spawnSync('sh', ['-c', 'node scripts/install.js'], { cwd: p, env, encoding: 'utf8' })
    assert.equal(r.status, 1)
    const said = messages(r)
    assert.equal(said.length, 1, `exactly one message, got:\n${said.join('\n')}`)
    assert.match(said[0], new RegExp(`no prebuilt binary for ${PLATFORM} \\(npm package dsh-fold-${PLATFORM}\\); prebuilt platforms: plan9-x64, haiku-x64\\. Build it from source`))
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
