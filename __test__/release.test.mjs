/**
 * @module __test__/release.test
 * The published package is the user's package, and the release's rules hold:
 * - `npm pack --dry-run` of the checkout lists only what users need (nothing under __test__,
 *   bench, crates, src, target*, npm, fixtures or corpora; no binary, no Rust), and the packed
 *   root (scripts/pack.mjs, the one way npm run pack, the rehearsal and the workflow make it)
 *   stays within its size budget;
 * - the user's manifest has no lifecycle script and no devDependencies, is not private, and
 *   declares one platform package per release target at its version; the checkout's is private
 *   (a plain `npm publish` there is refused) and keeps its build route;
 * - the DSH peers admit exactly the version dsh-fold is tested against (the devDependencies' pin);
 * - the version rules (scripts/release.mjs): a tag must name package.json's version; a
 *   prerelease goes out under `next`;
 * - `npm run release:rehearse` refuses bad options with its usage (exit 64).
 * The rehearsal itself (a real registry, by-name installs) runs in `npm test`'s own step.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { readFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'

import { ROOT_TARBALL_BUDGET, npmPack, rootFiles, rootProblems, stageRoot, userManifest } from '../scripts/pack.mjs'
import { ReleaseError, npmrcFor, releaseVersion, sourceRepository } from '../scripts/release.mjs'
import { TARGETS } from '../scripts/targets.mjs'

const ROOT = path.resolve(import.meta.dirname, '..')
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

describe('the published package is the user\'s package', () => {
  it('npm pack --dry-run of the checkout lists only what users need', () => {
    const files = rootFiles().map((f) => f.path)
    const bad = files.filter((f) => /(^|\/)(__test__|bench|crates|src|target[^/]*|npm|fixtures?|corpora|corpus)\/|\.node$|\.rs$|Cargo\.(toml|lock)$/.test(f))
    assert.deepEqual(bad, [])
    assert.deepEqual(rootProblems(files, userManifest(pkg)), [])
    for (const f of ['index.js', 'index.d.ts', 'cordis.patch.yml', 'bin/dsh-fold.mjs', 'plugin/index.js', 'plugin/shared/binary.js']) assert.ok(files.includes(f), f)
    assert.ok(!files.includes('scripts/install.js'), 'the checkout\'s build script is not shipped')
  })

  it('rootProblems catches a test, a fixture, a binary, a lifecycle script', () => {
    const files = rootFiles().map((f) => f.path)
    const problems = rootProblems([...files, '__test__/x.test.mjs', 'bench/fixtures/a.json', 'dsh-fold.linux-x64-gnu.node'], { ...userManifest(pkg), scripts: { install: 'node scripts/install.js' } })
    assert.equal(problems.length, 4, problems.join('\n'))
  })

  it('the packed root stays within its budget', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-release-test-'))
    try {
      const packed = npmPack(stageRoot(path.join(dir, 'root')).dir, dir)
      assert.ok(packed.size <= ROOT_TARBALL_BUDGET, `the root tarball is ${packed.size} bytes, over ${ROOT_TARBALL_BUDGET}`)
      const manifest = JSON.parse(readFileSync(path.join(dir, 'root', 'package.json'), 'utf8'))
      assert.equal(manifest.scripts, undefined)
      assert.equal(manifest.devDependencies, undefined)
      assert.equal(manifest.private, undefined)
      const released = TARGETS.filter((t) => t.runner !== null)
      assert.deepEqual(manifest.optionalDependencies, Object.fromEntries(released.map((t) => [`dsh-fold-${t.platform}`, pkg.version])))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('the checkout is private and keeps its build route', () => {
    assert.equal(pkg.private, true)
    assert.equal(pkg.scripts.install, 'node scripts/install.js')
    assert.equal(pkg.scripts['release:rehearse'], 'node scripts/rehearse.mjs')
  })

  it('the DSH peers admit exactly the tested version', () => {
    for (const [name, range] of Object.entries(pkg.peerDependencies)) {
      if (!/^@deepseek-ai\/dsh-/.test(name)) continue
      assert.equal(range, pkg.devDependencies[name], `${name}: the peer range is the pin tested against`)
    }
  })
})

describe('the release\'s version rules', () => {
  it('a tag must name package.json\'s version', () => {
    assert.deepEqual(releaseVersion({ version: '0.1.0' }, 'v0.1.0'), { version: '0.1.0', distTag: 'latest', prerelease: false })
    assert.deepEqual(releaseVersion({ version: '0.1.0' }, 'refs/tags/v0.1.0'), { version: '0.1.0', distTag: 'latest', prerelease: false })
    assert.throws(() => releaseVersion({ version: '0.1.0' }, 'v0.1.1'), (e) => e instanceof ReleaseError && /the tag v0\.1\.1 does not name package\.json's version 0\.1\.0/.test(e.message))
    assert.throws(() => releaseVersion({ version: 'one' }), ReleaseError)
  })

  it('a prerelease goes out under next', () => {
    assert.deepEqual(releaseVersion({ version: '0.2.0-rc.1' }, 'v0.2.0-rc.1'), { version: '0.2.0-rc.1', distTag: 'next', prerelease: true })
  })

  it('`release.mjs version TAG` fails early on a mismatch, with exit 1', () => {
    const ok = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'release.mjs'), 'version', `v${pkg.version}`], { encoding: 'utf8' })
    assert.equal(ok.status, 0, ok.stderr)
    assert.equal(ok.stdout, `version=${pkg.version}\ndist-tag=${/-/.test(pkg.version) ? 'next' : 'latest'}\n`)
    const bad = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'release.mjs'), 'version', 'v9.9.9'], { encoding: 'utf8' })
    assert.equal(bad.status, 1)
    assert.match(bad.stderr, /^release: the tag v9\.9\.9 does not name package\.json's version/)
  })

  it('every manifest names the repository the workflow runs in (npm refuses provenance otherwise)', () => {
    const actions = { GITHUB_SERVER_URL: 'https://github.com', GITHUB_REPOSITORY: 'owner/dsh-fold' }
    assert.deepEqual(sourceRepository({}, actions, true), { type: 'git', url: 'git+https://github.com/owner/dsh-fold.git' })
    assert.deepEqual(sourceRepository({ repository: 'https://github.com/Owner/dsh-fold' }, actions, true), { type: 'git', url: 'git+https://github.com/owner/dsh-fold.git' })
    assert.equal(sourceRepository({}, {}, false), null, 'outside Actions, without provenance: no repository is made up')
    assert.throws(() => sourceRepository({}, {}, true), (e) => e instanceof ReleaseError && /--provenance runs only in a workflow/.test(e.message))
    assert.throws(() => sourceRepository({ repository: { url: 'git+https://github.com/fork/dsh-fold.git' } }, actions, true), (e) => e instanceof ReleaseError && /is not the repository this workflow runs in/.test(e.message))
  })

  it('`release.mjs publish --provenance` outside a workflow stops before anything is staged', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-release-test-'))
    try {
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^GITHUB_/.test(k)))
      const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'release.mjs'), 'publish', '--artifacts', dir, '--provenance'], { env: { ...env, NODE_AUTH_TOKEN: 'x' }, encoding: 'utf8' })
      assert.equal(r.status, 1)
      assert.match(r.stderr, /^release: provenance is signed by GitHub Actions/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('the token never lands in a file: the userconfig names $NODE_AUTH_TOKEN', () => {
    assert.equal(npmrcFor('http://127.0.0.1:4873/'), 'registry=http://127.0.0.1:4873/\n//127.0.0.1:4873/:_authToken=${NODE_AUTH_TOKEN}\n')
  })
})

describe('npm run release:rehearse', () => {
  for (const [args, message] of [
    [['--targets', 'plan9-x64'], /--targets: unknown platform plan9-x64; release platforms: linux-x64-gnu, /],
    [['--built', '--artifacts', '.'], /--built and --artifacts exclude each other/],
    [['--port', 'x'], /--port: x is not a port number/],
    [['--frobnicate'], /Unknown option '--frobnicate'/],
  ]) {
    it(`refuses ${args.join(' ')} with its usage (exit 64)`, () => {
      const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'rehearse.mjs'), ...args], { encoding: 'utf8' })
      assert.equal(r.status, 64)
      assert.match(r.stderr, message)
      assert.match(r.stderr, /Usage: npm run release:rehearse/)
    })
  }
})
