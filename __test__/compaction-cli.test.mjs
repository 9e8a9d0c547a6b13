/**
 * `dsh-fold compaction enable|disable|status` (issue 30 item 1) on a real profile pair booted by
 * the real host (the pinned install of the e2e harness, Node 22, composed by bin/host/boot.mjs as
 * `dsh --profile` composes it): `headless` with dsh-fold installed from its packed tarballs, and
 * `plain`, a bare profile (dsh-base + dsh-headless) without dsh-fold. Which backend a booted
 * host mounts is read from the host itself: a probe row (a plugin file injecting `compaction`)
 * writes `ctx.compaction`'s class while the scripted model answers the task.
 *
 * - enable writes the swap into that profile's own patch (the user's rows and comments kept):
 *   `headless` boots with FoldCompactionEngine, `plain` keeps starting with basic's; disable puts
 *   the file back byte for byte and `headless` boots with basic again;
 * - the old README's rows in the home-wide patch are what stop `plain` at start ("plugin(s)
 *   failed to load: dsh-fold/compaction"), which is why status flags them and enable refuses
 *   until they are moved; followed as printed, the fix makes both profiles start;
 * - the refusals (a profile without dsh-fold, one that does not exist, a flow-style file),
 *   disable of a file edited since enable, a file enable created, basic's config carried over,
 *   and usage errors.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the compaction command reads profiles with a real DSH host' : false

/** The swap rows the README had users append to the home-wide patch (before this command). */
const OLD_README_ROWS = '- id: compaction-basic\n  disabled: true\n- insert:\n    - id: compaction-fold\n      name: dsh-fold/compaction\n'
/** A user's own patch: a comment, a config row, the host's template list replaced. */
const USER_PATCH = '# my settings for this profile\n- id: tool-recall\n  config:\n    maxChars: 4000   # shorter answers\n'

/** A plugin row that records which class registered `ctx.compaction` in the host it boots in. */
const PROBE = `import { writeFileSync } from 'node:fs'
export const name = 'compaction-probe'
export const inject = ['compaction']
export function apply(ctx) {
  writeFileSync(process.env.DSH_FOLD_PROBE, JSON.stringify({ backend: ctx.compaction.constructor.name }))
}
`

describe('dsh-fold compaction on a real profile pair', { skip: SKIP }, () => {
  /** @type {{node22: string, hostDir: string}} */
  let host
  /** @type {{root: string, platform: string}} */
  let tarballs
  /** @type {string} */
  let tmp
  /** @type {typeof import('../bin/host/launch.mjs')} */
  let launch

  before(async () => {
    const { ensureHost } = await import('./e2e/harness/install.mjs')
    const { pack } = await import('../scripts/pack.mjs')
    launch = await import('../bin/host/launch.mjs')
    host = ensureHost()
    tmp = mkdtempSync(path.join(tmpdir(), 'dsh-fold-compaction-cli-'))
    tarballs = pack(path.join(tmp, 'pack'))
    writeFileSync(path.join(tmp, 'probe.mjs'), PROBE)
  }, { timeout: 600_000 })
  after(() => rmSync(tmp, { recursive: true, force: true }))

  let homes = 0
  /**
   * A DSH home with `headless` (dsh-fold installed as `dsh plugin add` installs it) and `plain`
   * (dsh-base and dsh-headless, no dsh-fold), made by the host's own profile init; with `web`,
   * the web app's profile too, dsh-fold in it.
   */
  async function makeHome({ web = false } = {}) {
    const home = path.join(tmp, `home-${++homes}`)
    const dshHome = path.join(home, '.dsh')
    mkdirSync(dshHome, { recursive: true })
    const env = launch.hostEnv({ home, dshHome })
    const dshPackage = launch.dshPackageOf(host.hostDir)
    await launch.initProfile({ node22: host.node22, dshPackage, profile: 'headless', env, cwd: home })
    launch.installBundles(path.join(dshHome, 'profiles', 'headless'), [tarballs.platform, tarballs.root], { log: () => {} })
    await launch.initProfile({ node22: host.node22, dshPackage, profile: 'plain', env, cwd: home })
    const manifest = path.join(dshHome, 'profiles', 'plain', 'package.json')
    const m = JSON.parse(readFileSync(manifest, 'utf8'))
    m.dsh.profile.bundles = ['@deepseek-ai/dsh-base', '@deepseek-ai/dsh-headless']
    writeFileSync(manifest, JSON.stringify(m, null, 2) + '\n')
    if (web) {
      await launch.initProfile({ node22: host.node22, dshPackage, profile: 'web', env, cwd: home })
      launch.installBundles(path.join(dshHome, 'profiles', 'web'), [tarballs.platform, tarballs.root], { log: () => {} })
    }
    return { home, dshHome, patch: (/** @type {string} */ profile) => path.join(dshHome, 'profiles', profile, 'cordis.patch.yml') }
  }

  /**
   * The command, as a user runs it: HOME and DSH_HOME of that home, Node 22 on PATH.
   * @param {{home: string, dshHome: string}} h @param {string[]} args
   */
  function cli(h, args) {
    const r = spawnSync(process.execPath, [BIN, 'compaction', ...args], {
      encoding: 'utf8',
      env: { ...process.env, HOME: h.home, DSH_HOME: h.dshHome, PATH: `${path.dirname(host.node22)}${path.delimiter}${process.env.PATH}` },
    })
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) }
  }

  /**
   * Boots `profile` with the probe row and one scripted answer; resolves the exit, stderr and the
   * class the host registered as `ctx.compaction` (null when the probe never ran).
   * @param {{home: string, dshHome: string}} h @param {string} profile
   */
  async function boot(h, profile) {
    const { sequence, startModelServer } = await import('./e2e/harness/model-server.mjs')
    const server = await startModelServer(sequence([{ content: 'Hello.' }], { title: 'probe' }))
    const probe = path.join(h.home, `probe-${profile}.json`)
    rmSync(probe, { force: true })
    const overlay = launch.writePatchFile(path.join(h.home, 'probe.patch.yml'), [{ id: 'compaction-probe', name: path.join(tmp, 'probe.mjs') }])
    try {
      const env = launch.hostEnv({ home: h.home, dshHome: h.dshHome, env: { DEEPSEEK_BASE_URL: server.url, DEEPSEEK_API_KEY: 'sk-test', DSH_PERMISSION_MODE: 'danger-full-access', DSH_FOLD_PROBE: probe } })
      const r = await launch.runBoot({ node22: host.node22, dshPackage: launch.dshPackageOf(host.hostDir), env, cwd: h.home, timeoutMs: 120_000, spec: { mode: 'boot', profile, patchFiles: [overlay], args: ['Say hello.'] } })
      return { code: r.code, stdout: r.stdout, stderr: r.stderr, backend: existsSync(probe) ? JSON.parse(readFileSync(probe, 'utf8')).backend : null }
    } finally {
      await server.close()
    }
  }

  test('enable swaps the backend in that profile only, the bare profile keeps starting, disable puts the file back byte for byte', { timeout: 600_000 }, async () => {
    const h = await makeHome()
    writeFileSync(h.patch('headless'), USER_PATCH)
    const before = readFileSync(h.patch('headless'))
    const plainBefore = readFileSync(h.patch('plain'))

    const s0 = cli(h, ['status', '--json'])
    assert.equal(s0.code, 0, s0.stderr)
    assert.deepEqual(s0.json().profiles.map((/** @type {any} */ p) => [p.profile, p.backend]), [['headless', 'compaction-basic'], ['plain', 'compaction-basic']])

    const on = cli(h, ['enable', '--profile', 'headless'])
    assert.equal(on.code, 0, on.stderr)
    assert.match(on.stdout, /^enabled dsh-fold\/compaction in profile headless: .*cordis\.patch\.yml now ends with the swap \(compaction-basic disabled, compaction-fold inserted\); your rows and comments there are kept/)
    assert.match(on.stdout, /summarizer extractive \(no model call\)/)
    const text = readFileSync(h.patch('headless'), 'utf8')
    assert.ok(text.startsWith(USER_PATCH), `the user's rows and comments come first, unchanged:\n${text}`)
    assert.match(text.slice(USER_PATCH.length), /^# >>> dsh-fold compaction .*\n(#.*\n)*- id: compaction-basic\n {2}disabled: true\n- insert:\n {4}- id: compaction-fold\n {6}name: dsh-fold\/compaction\n {6}config: \{\}\n# <<< dsh-fold compaction\n$/)
    assert.ok(!existsSync(path.join(h.dshHome, 'cordis.patch.yml')), 'the home-wide patch is never written')
    assert.deepEqual(readFileSync(h.patch('plain')), plainBefore, 'the bare profile\'s patch is not touched')

    const fold = await boot(h, 'headless')
    assert.equal(fold.code, 0, fold.stderr.slice(-3000))
    assert.equal(fold.backend, 'FoldCompactionEngine')
    const plain = await boot(h, 'plain')
    assert.equal(plain.code, 0, `the bare profile must keep starting:\n${plain.stderr.slice(-3000)}`)
    assert.equal(plain.backend, 'BasicCompactionEngine')

    const s1 = cli(h, ['status', '--json'])
    assert.equal(s1.code, 0, s1.stderr)
    const [headless, bare] = s1.json().profiles
    assert.equal(headless.backend, 'dsh-fold')
    assert.equal(headless.enabledByCommand, true)
    assert.deepEqual(headless.rows[0].from.map((/** @type {any} */ l) => l.kind), ['profile'])
    assert.equal(bare.backend, 'compaction-basic')
    assert.equal(bare.dshFold.installed, false)
    assert.equal(s1.json().ok, true)
    const st = cli(h, ['status'])
    assert.match(st.stdout, /^✓ headless: dsh-fold\/compaction \(row compaction-fold, from .*profiles\/headless\/cordis\.patch\.yml, written by dsh-fold compaction enable\)$/m)
    assert.match(st.stdout, /^✓ plain: compaction-basic \(row compaction-basic, from @deepseek-ai\/dsh-base's bundle patch\)$/m)

    const again = cli(h, ['enable', '--profile', 'headless'])
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stdout, /already compacts with dsh-fold\/compaction .*nothing written/)
    assert.equal(readFileSync(h.patch('headless'), 'utf8'), text)

    const off = cli(h, ['disable', '--profile', 'headless'])
    assert.equal(off.code, 0, off.stderr)
    assert.match(off.stdout, /put back byte for byte as it was before enable; it compacts with compaction-basic again/)
    assert.deepEqual(readFileSync(h.patch('headless')), before)
    assert.ok(!existsSync(path.join(h.dshHome, 'profiles', 'headless', '.dsh-fold-compaction.json')), 'the record goes with the block')
    assert.equal((await boot(h, 'headless')).backend, 'BasicCompactionEngine')
    const offAgain = cli(h, ['disable', '--profile', 'headless'])
    assert.equal(offAgain.code, 0, offAgain.stderr)
    assert.match(offAgain.stdout, /wrote nothing in .*; it compacts with compaction-basic; nothing changed/)
  })

  test('the old README\'s home-wide rows stop the bare profile at start; status flags them, enable refuses, and the printed fix makes both profiles start', { timeout: 600_000 }, async () => {
    const h = await makeHome()
    const home = path.join(h.dshHome, 'cordis.patch.yml')
    writeFileSync(home, `# my home-wide settings\n${OLD_README_ROWS}`)

    const broken = await boot(h, 'plain')
    assert.notEqual(broken.code, 0, 'the bare profile started with the home-wide row')
    assert.match(broken.stderr, /plugin\(s\) failed to load: dsh-fold\/compaction/)
    assert.equal((await boot(h, 'headless')).backend, 'FoldCompactionEngine', 'the profile with dsh-fold loads it')

    const s = cli(h, ['status'])
    assert.equal(s.code, 1, s.stdout)
    assert.match(s.stdout, /^✗ plain: dsh-fold\/compaction/m)
    assert.match(s.stdout, /error: profile plain does not start \("plugin\(s\) failed to load: dsh-fold\/compaction"\): it reads a dsh-fold\/compaction row from .*\.dsh\/cordis\.patch\.yml \(lines 2–6\), which every profile reads, and it does not have dsh-fold/)
    assert.match(s.stdout, /warning: dsh-fold\/compaction is mounted from .*\.dsh\/cordis\.patch\.yml \(lines 2–6\), which every profile reads/)
    assert.match(s.stdout, /fix: replace lines 2–6 of .*\.dsh\/cordis\.patch\.yml with the line \[\] \(the swap is all it holds, and the host needs a list there\)\n {4}fix: dsh-fold compaction enable --profile headless/)
    const json = cli(h, ['status', '--json']).json()
    assert.equal(json.ok, false)
    assert.deepEqual(json.profiles.find((/** @type {any} */ p) => p.profile === 'plain').problems.map((/** @type {any} */ p) => p.code), ['SWAP_CANNOT_LOAD'])

    const foreign = cli(h, ['disable', '--profile', 'headless'])
    assert.equal(foreign.code, 1)
    assert.match(foreign.stderr, /^dsh-fold: FOREIGN_ROWS: profile headless mounts dsh-fold\/compaction through rows dsh-fold compaction enable did not write: .*\.dsh\/cordis\.patch\.yml \(lines 2–6\); nothing was changed\. Remove those rows by hand \(in the home-wide patch they stop every profile without dsh-fold from starting\)\n$/)
    assert.equal(readFileSync(home, 'utf8'), `# my home-wide settings\n${OLD_README_ROWS}`)

    const refused = cli(h, ['enable', '--profile', 'headless'])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /^dsh-fold: HOME_WIDE_SWAP: .*cordis\.patch\.yml already swaps the backend \(lines 2–6: .*\); every profile reads that file.*Nothing was written/)

    // The fix, as printed: those lines replaced with [], then enable per profile.
    const lines = readFileSync(home, 'utf8').split('\n')
    lines.splice(1, 5, '[]')
    writeFileSync(home, lines.join('\n'))
    assert.equal(readFileSync(home, 'utf8'), '# my home-wide settings\n[]\n')
    assert.equal(cli(h, ['enable', '--profile', 'headless']).code, 0)
    const plain = await boot(h, 'plain')
    assert.equal(plain.code, 0, plain.stderr.slice(-3000))
    assert.equal(plain.backend, 'BasicCompactionEngine')
    assert.equal((await boot(h, 'headless')).backend, 'FoldCompactionEngine')
    assert.equal(cli(h, ['status']).code, 0)
  })

  test('refused, with nothing written: a profile without dsh-fold, one that does not exist, the web app\'s (per-preset compaction), a flow-style file', { timeout: 300_000 }, async () => {
    const h = await makeHome({ web: true })
    const plain = readFileSync(h.patch('plain'))
    const r = cli(h, ['enable', '--profile', 'plain'])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /^dsh-fold: NO_DSH_FOLD: profile plain: it does not have dsh-fold .*a dsh-fold\/compaction row there would not load and the profile would not start; nothing was written\. Add dsh-fold to it first: dsh plugin --profile plain add dsh-fold\n$/)
    assert.deepEqual(readFileSync(h.patch('plain')), plain)

    const missing = cli(h, ['enable', '--profile', 'nope'])
    assert.equal(missing.code, 66)
    assert.match(missing.stderr, /^dsh-fold: PROFILE_NOT_FOUND: no profile nope in .* \(its profiles: headless, plain, web\); create it with dsh-fold in it: dsh plugin --profile nope add dsh-fold/)
    assert.ok(!existsSync(path.join(h.dshHome, 'profiles', 'nope')))
    assert.equal(cli(h, ['status', '--profile', 'nope']).code, 66)

    const web = readFileSync(h.patch('web'))
    const s = cli(h, ['status', '--profile', 'web', '--json']).json().profiles[0]
    assert.equal(s.backend, 'presets')
    assert.equal(s.starts, true)
    const perPreset = cli(h, ['enable', '--profile', 'web'])
    assert.equal(perPreset.code, 1)
    assert.match(perPreset.stderr, /^dsh-fold: PER_PRESET: profile web mounts no compaction backend at the host: its agent presets each compose one .*nothing was written/)
    assert.deepEqual(readFileSync(h.patch('web')), web)

    writeFileSync(h.patch('headless'), '[{id: tool-recall, config: {maxChars: 4000}}]\n')
    const flow = cli(h, ['enable', '--profile', 'headless'])
    assert.equal(flow.code, 65)
    assert.match(flow.stderr, /^dsh-fold: PATCH_UNEDITABLE: .*not written in a form this command edits as text .*Add these rows at its end by hand:\n# >>> dsh-fold compaction/)
    assert.equal(readFileSync(h.patch('headless'), 'utf8'), '[{id: tool-recall, config: {maxChars: 4000}}]\n')

    writeFileSync(h.patch('headless'), '- id: [unclosed\n')
    const bad = cli(h, ['enable', '--profile', 'headless'])
    assert.equal(bad.code, 65, bad.stderr)
    assert.match(bad.stderr, /^dsh-fold: COMPOSE_FAILED: the host cannot compose profile headless: dsh: failed to parse overlay .*cordis\.patch\.yml: YAMLException: .*; nothing was written\n$/)
  })

  test('disable of a file edited since enable removes the block alone; a file enable created is deleted again; basic\'s config is carried over', { timeout: 300_000 }, async () => {
    const h = await makeHome()
    assert.equal(cli(h, ['enable', '--profile', 'headless']).code, 0)
    // The host's template `[]` was replaced by the block, its comments kept.
    const enabled = readFileSync(h.patch('headless'), 'utf8')
    assert.match(enabled, /^# Your patch layer for this dsh profile.*\n(#.*\n)*# >>> dsh-fold compaction/)
    assert.ok(!/^\[\]/m.test(enabled))
    // The user then configures the row in the block and adds a row of their own after it.
    writeFileSync(h.patch('headless'), `${enabled.replace('config: {}', 'config: {thresholdRatio: 0.5}')}- id: tool-recall\n  config: {maxChars: 4000}\n`)
    assert.match(cli(h, ['status', '--profile', 'headless']).stdout, /compacts at 0\.5 of the context window/)
    const off = cli(h, ['disable', '--profile', 'headless'])
    assert.equal(off.code, 0, off.stderr)
    assert.match(off.stdout, /kept with the block removed \(it was edited since enable\); it compacts with compaction-basic again\n {2}removed with the block: compaction-fold's config \{"thresholdRatio":0\.5\}/)
    const left = readFileSync(h.patch('headless'), 'utf8')
    assert.ok(left.startsWith('# Your patch layer for this dsh profile'), left)
    assert.ok(left.endsWith('overrides, disables, and insert lists; `!!js` expressions allowed).\n- id: tool-recall\n  config: {maxChars: 4000}\n'), left)

    // No file before enable: enable creates it, disable deletes it.
    rmSync(h.patch('headless'))
    assert.equal(cli(h, ['enable', '--profile', 'headless']).code, 0)
    assert.ok(readFileSync(h.patch('headless'), 'utf8').startsWith('# >>> dsh-fold compaction'))
    const gone = cli(h, ['disable', '--profile', 'headless'])
    assert.match(gone.stdout, /deleted \(there was no file before enable\)/)
    assert.ok(!existsSync(h.patch('headless')))

    // basic's own config keys go with the swap.
    writeFileSync(h.patch('headless'), '- id: compaction-basic\n  config: {thresholdRatio: 0.7, retainRatio: 0.1}\n')
    const carried = cli(h, ['enable', '--profile', 'headless'])
    assert.equal(carried.code, 0, carried.stderr)
    assert.match(carried.stdout, /carried over from compaction-basic's config: \{"thresholdRatio":0\.7,"retainRatio":0\.1\}\n {2}compacts at 0\.7 of the context window \(a 0\.1 tail kept\)/)
    assert.equal((await boot(h, 'headless')).backend, 'FoldCompactionEngine')
    // Without its own language, the backend speaks the rewind row's.
    appendFileSync(h.patch('headless'), '- id: tool-rewind\n  config: {toolName: rewind, reportLanguage: zh}\n')
    assert.match(cli(h, ['status', '--profile', 'headless']).stdout, /checkpoint cap 0\.15 of the window, at least 8192 tokens; language zh\n/)
  })

  test('usage errors exit 64 and read nothing', () => {
    const h = { home: tmp, dshHome: path.join(tmp, 'no-home') }
    for (const [args, message] of /** @type {const} */ ([
      [[], /compaction needs a enable\|disable\|status/],
      [['start'], /compaction needs enable, disable or status \(got start\)/],
      [['enable', 'headless'], /compaction enable takes no arguments \(got headless\)/],
      [['enable', '--profile', ''], /--profile needs a non-empty value/],
      [['enable', '--profile', '../x'], /--profile \.\.\/x: a profile name, not a path/],
      [['status', '--force'], /compaction does not take --force/],
    ])) {
      const r = cli(h, args)
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message)
    }
    assert.ok(!existsSync(h.dshHome))
  })
})
