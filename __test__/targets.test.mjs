/**
 * @module __test__/targets.test
 * The prebuilt targets are declared in four places that must agree: scripts/targets.mjs (what
 * `npm run build:targets` runs), `.github/workflows/release.yml` (what the release builds and
 * tests), package.json's `napi.targets` (what `napi artifacts`/`napi prepublish` expect) and
 * `npm/<platform>/package.json` (what users install). This suite parses each and fails on any
 * drift: a build row whose command differs from the script's, a target without a test job, a
 * platform package with the wrong name, os, cpu, libc or binary.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, it } from 'node:test'
import { readObjectFile } from '../scripts/objfile.mjs'
import { recordBuilt } from '../scripts/build-targets.mjs'
import { SUITES, checkHeaders, testTarget } from '../scripts/test-targets.mjs'
import { MACOSX_DEPLOYMENT_TARGET, TARGETS, binaryName, findTarget, releaseCommand } from '../scripts/targets.mjs'
import { APT } from '../scripts/target-tools.mjs'

const ROOT = path.resolve(import.meta.dirname, '..')
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
// js-yaml comes with @napi-rs/cli (a devDependency), which parses YAML configs with it.
const yaml = createRequire(createRequire(import.meta.url).resolve('@napi-rs/cli/package.json'))('js-yaml')
const workflow = yaml.load(readFileSync(path.join(ROOT, '.github', 'workflows', 'release.yml'), 'utf8'))
const released = TARGETS.filter((t) => t.runner !== null)

/** @param {string} command a `node --test` line @returns {string[]} suite names */
const suitesOf = (command) => [...command.matchAll(/__test__\/(\w+)\.test\.mjs/g)].map((m) => m[1])

describe('release.yml', () => {
  it('builds every release target with the command build:targets runs, on its runner', () => {
    const rows = workflow.jobs.build.strategy.matrix.settings
    assert.deepEqual(rows.map((/** @type {any} */ r) => r.target).sort(), released.map((t) => t.triple).sort())
    for (const t of released) {
      const row = rows.find((/** @type {any} */ r) => r.target === t.triple)
      assert.equal(row.build, releaseCommand(t), `${t.triple}: build command`)
      assert.equal(row.host, t.runner, `${t.triple}: runner`)
    }
  })

  it('installs the cross tools through build-targets.mjs on Linux, and gives each macOS build the floor the script does', () => {
    const steps = workflow.jobs.build.steps
    const tools = steps.find((/** @type {any} */ s) => /build-targets\.mjs --tools/.test(s.run ?? ''))
    assert.ok(tools, 'a step runs scripts/build-targets.mjs --tools')
    assert.equal(tools.if, "runner.os == 'Linux'")
    assert.match(tools.run, /--tools \$\{\{ matrix\.settings\.target \}\} >> "\$GITHUB_PATH"/)
    const build = steps.findIndex((/** @type {any} */ s) => s.name === 'Build')
    assert.ok(steps.indexOf(tools) < build, 'tools before the build')
    const buildStep = steps[build]
    assert.equal(buildStep.env.MACOSX_DEPLOYMENT_TARGET, '${{ matrix.settings.macos }}')
    for (const t of released) {
      const row = workflow.jobs.build.strategy.matrix.settings.find((/** @type {any} */ r) => r.target === t.triple)
      assert.deepEqual(Object.keys(t.env), t.platform.startsWith('darwin') ? ['MACOSX_DEPLOYMENT_TARGET'] : [], `${t.triple}: env`)
      assert.equal(row.macos, t.env.MACOSX_DEPLOYMENT_TARGET, `${t.triple}: MACOSX_DEPLOYMENT_TARGET`)
    }
    assert.deepEqual(MACOSX_DEPLOYMENT_TARGET, { x64: '10.13', arm64: '11.0' })
  })

  it('tests every Linux target in a container of its own platform, musl on Alpine', () => {
    const job = workflow.jobs['test-linux-binding']
    const linux = released.filter((t) => t.platform.startsWith('linux'))
    assert.deepEqual([...job.strategy.matrix.target].sort(), linux.map((t) => t.triple).sort())
    assert.deepEqual(job.needs, ['build'])
    const run = job.steps.find((/** @type {any} */ s) => /docker run/.test(s.run ?? '')).run
    assert.match(run, /--platform \$\{\{ startsWith\(matrix\.target, 'aarch64'\) && 'linux\/arm64' \|\| 'linux\/amd64' \}\}/)
    assert.match(run, /node:\$\{\{ matrix\.node \}\}-\$\{\{ endsWith\(matrix\.target, 'musl'\) && 'alpine' \|\| 'slim' \}\}/)
    assert.deepEqual(suitesOf(run), SUITES.native)
    assert.ok(job.steps.some((/** @type {any} */ s) => s.with?.name === 'bindings-${{ matrix.target }}' && s.with?.path === '.'))
  })

  it('tests macOS (both archs) and Windows MSVC on their runners', () => {
    const job = workflow.jobs['test-macos-windows-binding']
    const rows = job.strategy.matrix.settings
    const others = released.filter((t) => !t.platform.startsWith('linux'))
    assert.deepEqual(rows.map((/** @type {any} */ r) => r.target).sort(), others.map((t) => t.triple).sort())
    for (const r of rows) {
      const t = /** @type {import('../scripts/targets.mjs').Target} */ (others.find((x) => x.triple === r.target))
      assert.equal(r.host, t.runner, `${r.target}: test runner`)
      assert.equal(r.architecture, r.target.startsWith('aarch64') ? 'arm64' : 'x64')
      assert.deepEqual(suitesOf(r.suites), t.platform.startsWith('win32') ? SUITES.windows : SUITES.native, `${r.target}: suites`)
    }
    const run = job.steps.find((/** @type {any} */ s) => /node --test/.test(s.run ?? '')).run
    assert.equal(run, 'node --test --test-concurrency=1 ${{ matrix.settings.suites }}')
  })

  it('pins every action to a commit and names its release beside it; no checkout keeps the token', () => {
    const text = readFileSync(path.join(ROOT, '.github', 'workflows', 'release.yml'), 'utf8')
    const uses = text.split('\n').filter((l) => /^\s*-?\s*uses:/.test(l))
    assert.ok(uses.length > 0)
    for (const l of uses) assert.match(l, /uses: [\w-]+\/[\w-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$/, l)
    for (const [name, job] of Object.entries(workflow.jobs)) {
      for (const step of /** @type {any} */ (job).steps.filter((/** @type {any} */ s) => /^actions\/checkout@/.test(s.uses ?? ''))) {
        assert.equal(step.with?.['persist-credentials'], false, `${name}: checkout with persist-credentials: false`)
      }
    }
  })

  it('publishes only after every build and test job', () => {
    const jobs = Object.keys(workflow.jobs).filter((j) => j !== 'publish')
    assert.deepEqual([...workflow.jobs.publish.needs].sort(), jobs.sort())
    assert.equal(workflow.jobs.publish.if, "startsWith(github.ref, 'refs/tags/v')")
  })

  it('a tag that does not name package.json\'s version fails in a cheap first job, before any build', () => {
    const job = workflow.jobs.version
    assert.ok(job, 'a version job')
    assert.equal(job.needs, undefined, 'it waits for nothing')
    assert.deepEqual(job.steps.map((/** @type {any} */ s) => s.uses?.replace(/@.*/, '') ?? 'run'), ['actions/checkout', 'actions/setup-node', 'run'], 'no npm ci, no toolchain: release.mjs version needs Node alone')
    const run = job.steps.at(-1).run
    assert.match(run, /node scripts\/release\.mjs version "\$GITHUB_REF_NAME"/)
    for (const j of ['build', 'test']) assert.deepEqual(workflow.jobs[j].needs, ['version'], `${j} waits for the version check`)
    // What the step runs, as it runs on a mistagged push: exit 1 with the reason.
    const bad = spawnSync('sh', ['-c', run], { cwd: ROOT, env: { ...process.env, GITHUB_REF_TYPE: 'tag', GITHUB_REF_NAME: 'v9.9.9' }, encoding: 'utf8' })
    assert.equal(bad.status, 1)
    assert.match(bad.stderr, /the tag v9\.9\.9 does not name package\.json's version/)
    const good = spawnSync('sh', ['-c', run], { cwd: ROOT, env: { ...process.env, GITHUB_REF_TYPE: 'tag', GITHUB_REF_NAME: `v${pkg.version}` }, encoding: 'utf8' })
    assert.equal(good.status, 0, good.stderr)
    const branch = spawnSync('sh', ['-c', run], { cwd: ROOT, env: { ...process.env, GITHUB_REF_TYPE: 'branch', GITHUB_REF_NAME: 'main' }, encoding: 'utf8' })
    assert.equal(branch.status, 0, branch.stderr)
  })

  it('publishes through scripts/release.mjs, after the rehearsal\'s install checks pass on the same artifacts, with provenance', () => {
    const job = workflow.jobs.publish
    const steps = job.steps
    const at = (/** @type {RegExp} */ re) => steps.findIndex((/** @type {any} */ s) => re.test(s.run ?? ''))
    const download = steps.findIndex((/** @type {any} */ s) => /^actions\/download-artifact@/.test(s.uses ?? ''))
    const apt = at(/apt-get install/)
    const rehearse = at(/release:rehearse/)
    const publish = at(/scripts\/release\.mjs publish/)
    assert.ok(download >= 0 && steps[download].with.path === 'artifacts', 'the artifacts are downloaded into artifacts/')
    assert.equal(steps[rehearse].run, 'npm run release:rehearse -- --artifacts artifacts')
    assert.equal(steps[publish].run, 'node scripts/release.mjs publish --artifacts artifacts --tag "$GITHUB_REF_NAME" --provenance')
    assert.ok(download < apt && apt < rehearse && rehearse < publish, 'download, Debian packages, rehearsal, then the real publish')
    // The packages the install checks would otherwise skip (arm64 under qemu, musl's loader).
    assert.deepEqual(steps[apt].run.split(/--no-install-recommends /)[1].split(' ').sort(), [...APT.arm64, ...APT.musl].sort())
    assert.deepEqual(steps[publish].env, { NODE_AUTH_TOKEN: '${{ secrets.NPM_TOKEN }}' })
    assert.equal(job.permissions['id-token'], 'write', 'provenance is signed with the job\'s OIDC token')
    assert.ok(!steps.some((/** @type {any} */ s) => /napi (artifacts|prepublish)|npm publish/.test(s.run ?? '')), 'no publish step of its own: release.mjs is the one publish path')
    assert.ok(!/registry-url|registry\.npmjs|https?:\/\/(?!github\.com)/.test(readFileSync(path.join(ROOT, '.github', 'workflows', 'release.yml'), 'utf8').replace(/^\s*#.*$/gm, '')), 'no registry host in the workflow')
  })
})

describe('package.json and npm/<platform>/', () => {
  it('napi.targets lists exactly the release targets', () => {
    assert.deepEqual([...pkg.napi.targets].sort(), released.map((t) => t.triple).sort())
  })

  it('each release target has its platform package, named and constrained as the loader and npm need', () => {
    for (const t of released) {
      const manifest = JSON.parse(readFileSync(path.join(ROOT, 'npm', t.platform, 'package.json'), 'utf8'))
      const [os, cpu, abi] = t.platform.split('-')
      assert.equal(manifest.name, `${pkg.name}-${t.platform}`)
      assert.equal(manifest.version, pkg.version, `${t.platform}: version`)
      assert.equal(manifest.main, binaryName(t))
      assert.deepEqual(manifest.files, [binaryName(t)])
      assert.deepEqual(manifest.os, [os])
      assert.deepEqual(manifest.cpu, [cpu])
      if (os === 'linux') assert.deepEqual(manifest.libc, [abi === 'musl' ? 'musl' : 'glibc'])
      else assert.equal(manifest.libc, undefined)
    }
  })

  it('npm run build:targets / test:targets run the scripts, and their outputs are ignored by git', () => {
    assert.equal(pkg.scripts['build:targets'], 'node scripts/build-targets.mjs')
    assert.equal(pkg.scripts['test:targets'], 'node scripts/test-targets.mjs')
    const ignored = spawnSync('git', ['check-ignore', '-q', 'target-cross/targets.json', 'npm/linux-arm64-gnu/dsh-fold.linux-arm64-gnu.node'], { cwd: ROOT })
    if (ignored.status === 128 || !existsSync(path.join(ROOT, '.git'))) return // not a git checkout: nothing to ignore
    assert.equal(ignored.status, 0, 'git must ignore target-cross/ and built binaries')
  })
})

describe('bench/TARGETS.md, the record docs/building.md quotes', () => {
  it('a cold build sets its cold time, a warm rebuild its warm time beside it; a failed build and the other targets keep their rows', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-targets-record-'))
    try {
      const file = path.join(dir, 'TARGETS.md')
      const x64 = /** @type {any} */ ({ triple: 'x86_64-unknown-linux-gnu', platform: 'linux-x64-gnu' })
      const arm = /** @type {any} */ ({ triple: 'aarch64-unknown-linux-gnu', platform: 'linux-arm64-gnu' })
      const rowOf = (/** @type {string} */ platform) => readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith(`| ${platform} |`))?.split(' | ').slice(0, 5).join(' | ')
      recordBuilt([{ ...arm, status: 'built', bytes: 2_113_088, seconds: 189.4, cold: true }, { ...x64, status: 'built', bytes: 2_307_640, seconds: 315.2, cold: true }], file)
      assert.equal(rowOf('linux-x64-gnu'), '| linux-x64-gnu | `x86_64-unknown-linux-gnu` | 2,254 KiB (2,307,640 bytes) | 315 s | –')
      recordBuilt([{ ...x64, status: 'built', bytes: 2_307_000, seconds: 76.1, cold: false }, { ...arm, status: 'failed', reason: 'linker missing' }], file)
      assert.equal(rowOf('linux-x64-gnu'), '| linux-x64-gnu | `x86_64-unknown-linux-gnu` | 2,253 KiB (2,307,000 bytes) | 315 s | 76 s')
      assert.equal(rowOf('linux-arm64-gnu'), '| linux-arm64-gnu | `aarch64-unknown-linux-gnu` | 2,064 KiB (2,113,088 bytes) | 189 s | –')
      const order = readFileSync(file, 'utf8').split('\n').filter((l) => /^\| linux-/.test(l)).map((l) => l.split(' | ')[0])
      assert.deepEqual(order, ['| linux-x64-gnu', '| linux-arm64-gnu'], 'rows in scripts/targets.mjs order')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('build:targets and test:targets refuse what they cannot stand behind', () => {
  it('an unknown target is named with the known ones; build-targets exits 64 on it', () => {
    assert.throws(() => findTarget('plan9-x64'), /unknown target plan9-x64; known: linux-x64-gnu, linux-arm64-gnu, .*win32-x64-gnu/)
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build-targets.mjs'), 'plan9-x64'], { encoding: 'utf8' })
    assert.equal(r.status, 64)
    assert.match(r.stderr, /unknown target plan9-x64/)
  })

  it('a target never built, unbuildable, or whose build failed: a row that says so and runs nothing', () => {
    const msvc = testTarget(findTarget('win32-x64-msvc'), {})
    assert.match(msvc.built, /^no: MSVC needs Microsoft's CRT/)
    assert.deepEqual(msvc.steps, [])
    const fresh = testTarget(findTarget('linux-x64-musl'), {})
    assert.equal(fresh.built, 'no: not built yet (npm run build:targets)')
    const failed = testTarget(findTarget('linux-x64-musl'), {
      'linux-x64-musl': { triple: 'x86_64-unknown-linux-musl', platform: 'linux-x64-musl', status: 'failed', command: 'x', reason: 'napi build exited 101' },
    })
    assert.equal(failed.built, 'no: napi build exited 101')
    assert.deepEqual(failed.steps, [])
  })

  it('a binary that is not the one build:targets recorded is not tested', () => {
    const row = testTarget(findTarget('darwin-x64'), {
      'darwin-x64': { triple: 'x86_64-apple-darwin', platform: 'darwin-x64', status: 'built', command: 'x', bytes: 1, seconds: 1, sha256: 'not-this-one' },
    })
    assert.equal(row.steps.length, 1)
    assert.equal(row.steps[0].ok, false)
    assert.match(String(row.steps[0].detail), /is gone$|changed since build:targets \(sha256 [0-9a-f]{12}, recorded not-this-one\)/)
  })
})

describe("test:targets' header checks fail a binary built for something else", () => {
  const dev = path.join(ROOT, 'dsh-fold.linux-x64-gnu.node')
  const why = existsSync(dev) ? null : 'no dev build at the root (npm run build makes dsh-fold.linux-x64-gnu.node)'

  it('the dev build (host glibc, x64 ELF) passed off as other targets', { skip: why ?? false }, () => {
    assert.throws(() => checkHeaders(findTarget('linux-arm64-gnu'), dev), /architecture is x64, expected arm64/)
    assert.throws(() => checkHeaders(findTarget('linux-x64-musl'), dev), /musl's libc\.so is the only library a musl binary may need/)
    assert.throws(() => checkHeaders(findTarget('darwin-x64'), dev), /not a Mach-O dylib\/bundle: elf shared-object/)
    assert.throws(() => checkHeaders(findTarget('win32-x64-gnu'), dev), /not a PE DLL: elf shared-object/)
    const info = readObjectFile(dev)
    assert.ok('versionNeeds' in info)
    const newest = Object.values(info.versionNeeds ?? {}).flat().filter((v) => v.startsWith('GLIBC_')).map((v) => v.slice(6).split('.').map(Number))
    const above = newest.some(([major, minor = 0]) => major > 2 || (major === 2 && minor > 17))
    if (above) assert.throws(() => checkHeaders(findTarget('linux-x64-gnu'), dev), /above glibc 2\.17/)
    else assert.match(checkHeaders(findTarget('linux-x64-gnu'), dev), /newest GLIBC_2\./)
  })
})

describe('a tool this machine cannot install is reported as such, not as a failure', () => {
  const root = process.getuid?.() === 0
  const setpriv = spawnSync('setpriv', ['--version']).status === 0
  const why = !root ? 'needs root, to drop to the user nobody' : !setpriv ? 'needs setpriv (util-linux) to drop to the user nobody' : false
  const asNobody = (/** @type {string[]} */ command) => spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...command], { encoding: 'utf8', env: { ...process.env, HOME: '/tmp' } })

  it('a missing Debian package for a user who is not root: ToolUnavailable naming the packages and the command that enables the step (never sudo)', { skip: why }, () => {
    // nobody runs a copy of the two modules in a directory it can read: the checkout may sit under
    // a private one (mktemp -d makes them 0700).
    const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-nobody-'))
    chmodSync(dir, 0o755)
    for (const f of ['target-tools.mjs', 'targets.mjs']) copyFileSync(path.join(ROOT, 'scripts', f), path.join(dir, f))
    const tools = path.join(dir, 'target-tools.mjs')
    const script = `import(${JSON.stringify(tools)}).then((m) => { try { m.ensureApt(['dsh-fold-no-such-package']); console.log('installed?') } catch (e) { console.log(e.name + ': ' + e.message) } })`
    const r = asNobody([process.execPath, '-e', script])
    rmSync(dir, { recursive: true, force: true })
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.trim(), 'ToolUnavailable: Debian packages dsh-fold-no-such-package are missing and only root may install them; to enable this step: sudo apt-get install -y --no-install-recommends dsh-fold-no-such-package')
  })
})
