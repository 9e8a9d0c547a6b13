/**
 * `dsh-fold doctor` against a real installed host: the host as the README installs it (pnpm,
 * rc.8, the HMR override; __test__/helpers/readme-host.mjs) and, for the launcher's ✗, the host
 * as a plain npm install gets it (the e2e cache's, with HMR 1.0.19). Each DSH home is made the
 * way a user makes it: `dsh plugin --profile headless add <dsh-fold's packed tarballs>` (the
 * host's own plugin manager, pnpm), plus the README's HMR row in `$DSH_HOME/cordis.patch.yml`.
 *
 * One healthy profile (every check ✓, exit 0), then one broken on purpose per check, each
 * asserting its ✗, the fix it prints, and exit 1; and doctor writes nothing anywhere.
 *
 * The registry doctor asks is always a local one (`npm_config_registry`, which the profile's pnpm
 * reads too): a real verdaccio (scripts/registry.mjs) without dsh-fold unless a case says
 * otherwise, so the install fixes are the checkout's route, as for users today. The registry
 * cases: a verdaccio with dsh-fold published (the fixes turn to the by-name command, and running
 * one installs it), one without, one that accepts and never answers and a closed port (offline:
 * ✓, said so), one answering 503 (✗).
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: doctor checks a real installed DSH host' : false
const HMR_ROW = "- insert:\n    - id: launcher-hmr\n      name: '@deepseek-ai/cordis-plugin-hmr'\n      config: { root: [] }\n"

/** Every file under `dir` with its hash and mtime (symlinks by target), for "writes nothing". @param {string} dir */
function snapshot(dir) {
  /** @type {Record<string, string>} */
  const out = {}
  for (const rel of readdirSync(dir, { recursive: true }).map(String).filter((r) => !r.includes('node_modules')).sort()) {
    const st = statSync(path.join(dir, rel), { throwIfNoEntry: false })
    if (!st) continue
    out[rel] = st.isDirectory() ? 'dir' : `${createHash('sha256').update(readFileSync(path.join(dir, rel))).digest('hex')} ${st.mtimeMs}`
  }
  return out
}

describe('dsh-fold doctor on a real installed host', { skip: SKIP }, () => {
  /** @type {ReturnType<typeof import('./helpers/readme-host.mjs').ensureReadmeHost>} */
  let readme
  /** @type {{node22: string, hostDir: string}} */
  let npmHost
  /** @type {{root: string, platform: string}} */
  let tarballs
  /** @type {string} */
  let tmp
  /** @type {string} */
  let healthy
  /** The PATH a README user has: Node 22, the host's bin, pnpm, then the system's. */
  let userPath = ''
  /** Local registries: verdaccio with dsh-fold published, verdaccio without it. */
  /** @type {import('../scripts/registry.mjs').Registry} */
  let withFold
  /** @type {import('../scripts/registry.mjs').Registry} */
  let withoutFold

  before(async () => {
    const { ensureReadmeHost } = await import('./helpers/readme-host.mjs')
    const { ensureHost } = await import('./e2e/harness/install.mjs')
    const { pack } = await import('../scripts/pack.mjs')
    readme = ensureReadmeHost()
    npmHost = ensureHost()
    tmp = mkdtempSync(path.join(tmpdir(), 'dsh-fold-doctor-'))
    tarballs = pack(path.join(tmp, 'pack'))
    userPath = [path.dirname(readme.node22), readme.hostBin, path.dirname(readme.pnpm), process.env.PATH].join(path.delimiter)
    const { startRegistry, writeConfig } = await import('../scripts/registry.mjs')
    const registries = ['with', 'without'].map((name) => {
      writeConfig(path.join(tmp, `registry-${name}`))
      return startRegistry(path.join(tmp, `registry-${name}`))
    })
    ;[withFold, withoutFold] = await Promise.all(registries)
    const host = new URL(withFold.url).host
    for (const tgz of [tarballs.platform, tarballs.root]) {
      execFileSync('npm', ['publish', tgz, '--ignore-scripts', `--//${host}/:_authToken=doctor-test`], { env: { ...process.env, npm_config_registry: withFold.url }, stdio: ['ignore', 'ignore', 'pipe'] })
    }
    healthy = makeHome('healthy')
  }, { timeout: 600_000 })
  after(async () => {
    await Promise.all([withFold?.stop(), withoutFold?.stop()])
    rmSync(tmp, { recursive: true, force: true })
  })

  /** A DSH home with profile headless, dsh-fold added by the host's own `dsh plugin add`, and the README's HMR row. @param {string} name */
  function makeHome(name) {
    const dshHome = path.join(tmp, name, '.dsh')
    mkdirSync(dshHome, { recursive: true })
    writeFileSync(path.join(dshHome, 'cordis.patch.yml'), HMR_ROW)
    execFileSync('dsh', ['plugin', '--profile', 'headless', 'add', tarballs.root, tarballs.platform], {
      env: { ...process.env, HOME: path.join(tmp, name), DSH_HOME: dshHome, PATH: userPath, npm_config_store_dir: readme.storeDir },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    return dshHome
  }

  /** A copy of the healthy home to break. @param {string} name */
  function copyHome(name) {
    const to = path.join(tmp, name, '.dsh')
    mkdirSync(path.dirname(to), { recursive: true })
    cpSync(healthy, to, { recursive: true, verbatimSymlinks: true })
    return to
  }

  /**
   * Runs doctor; returns {code, checks (by id), stdout}.
   * @param {string} dshHome @param {{path?: string, env?: Record<string, string | undefined>, args?: string[]}} [options]
   */
  function doctor(dshHome, { path: PATH = userPath, env = {}, args = [] } = {}) {
    const full = { ...process.env, HOME: path.dirname(dshHome), DSH_HOME: dshHome, PATH, npm_config_registry: withoutFold.url, ...env }
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k]
    delete full.DSH_TOOLS_MODE
    if (env.DSH_TOOLS_MODE) full.DSH_TOOLS_MODE = env.DSH_TOOLS_MODE
    const text = spawnSync(process.execPath, [BIN, 'doctor', ...args], { env: full, encoding: 'utf8' })
    const json = spawnSync(process.execPath, [BIN, 'doctor', '--json', ...args], { env: full, encoding: 'utf8' })
    assert.equal(text.status, json.status, `text and --json agree on the exit\n${text.stdout}${text.stderr}`)
    const report = JSON.parse(json.stdout)
    return { code: text.status, stdout: text.stdout, stderr: text.stderr, report, checks: Object.fromEntries(report.checks.map((/** @type {any} */ c) => [c.id, c])) }
  }

  /** Asserts one ✗ (and that the rest is as healthy as the case allows). @param {ReturnType<typeof doctor>} r @param {string} id @param {RegExp} label @param {RegExp} [fix] */
  function failsOnly(r, id, label, fix) {
    assert.equal(r.code, 1, r.stdout)
    assert.equal(r.checks[id].ok, false, `${id} should fail:\n${r.stdout}`)
    assert.match(r.checks[id].label, label)
    if (fix) assert.match(r.checks[id].fix ?? '', fix)
    assert.match(r.stdout, new RegExp(`^✗ .*\\n(    fix: .*\\n)*`, 'm'))
    if (fix) assert.ok(r.stdout.includes(`    fix: ${r.checks[id].fix.split('\n')[0]}`), `the text shows the fix under the ✗:\n${r.stdout}`)
  }

  test('a healthy profile: every check ✓, exit 0, and doctor writes nothing', () => {
    const before = snapshot(path.dirname(healthy))
    const r = doctor(healthy)
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.equal(r.report.ok, true)
    assert.deepEqual(r.report.checks.map((/** @type {any} */ c) => c.id), ['node', 'host', 'launcher', 'profile', 'bundle', 'rows', 'compaction', 'profiles', 'block', 'preset', 'store', 'addon', 'registry'])
    for (const c of r.report.checks) assert.equal(c.ok, true, `${c.id}: ${c.label}`)
    assert.match(r.stdout, /^dsh-fold doctor: profile headless in /)
    assert.match(r.stdout, /✓ Node v22\./)
    assert.match(r.stdout, /✓ host @deepseek-ai\/dsh 0\.1\.0-rc\.8 at .* \(`dsh` on PATH/)
    assert.match(r.stdout, /✓ launcher: `dsh --profile headless` can start \(@deepseek-ai\/cordis-plugin-hmr 1\.0\.17 with registerConfig; HMR row launcher-hmr mounted at boot\)/)
    assert.match(r.stdout, /✓ rows: tool-checkpoint, tool-rewind, tool-recall, block-ui/)
    assert.match(r.stdout, /✓ addon: .*dsh-fold-linux-x64-gnu.*\.node loads/)
    assert.match(r.stdout, /✓ compaction: compaction-basic \(row compaction-basic, from @deepseek-ai\/dsh-base's bundle patch\); dsh-fold compaction enable --profile headless swaps in dsh-fold\/compaction; compacts at 0\.8 of the context window \(a 0\.16 tail kept\); one model call per compaction \(maxTokens 8192\)\n/)
    assert.match(r.stdout, /✓ other profiles: none in .*profiles\n/)
    assert.match(r.stdout, new RegExp(`✓ registry ${withoutFold.url}: no dsh-fold there yet \\(404\\)`))
    assert.match(r.stdout, /13 of 13 checks pass\n$/)
    assert.deepEqual(snapshot(path.dirname(healthy)), before, 'doctor wrote nothing')
  })

  test('node ✗: an older Node first on PATH (the test runner\'s)', (t) => {
    const major = Number(process.versions.node.split('.')[0])
    if (major >= 22) return t.skip(`the test runner's Node is ${process.version}; this case needs one older than 22 first on PATH`)
    const r = doctor(healthy, { path: [path.dirname(process.execPath), userPath].join(path.delimiter) })
    failsOnly(r, 'node', new RegExp(`Node ${process.version.replace(/\./g, '\\.')} at .*: the host and block mode need Node >= 22`), /npm install --prefix ~\/\.dsh-host --no-fund --no-audit node@22 pnpm@10/)
  })

  test('host ✗: no `dsh` on PATH and no host linked from the DSH home', () => {
    const bare = path.join(tmp, 'no-host', '.dsh')
    mkdirSync(bare, { recursive: true })
    const r = doctor(bare, { path: [path.dirname(readme.node22), process.env.PATH].join(path.delimiter) })
    failsOnly(r, 'host', /no DSH host \(@deepseek-ai\/dsh\) found/, /pnpm add @deepseek-ai\/dsh@0\.1\.0-rc\.8/)
    assert.equal(r.checks.profile.ok, false)
  })

  test('launcher ✗: HMR 1.0.19 (a plain npm install of the host), and no HMR row', () => {
    const npmPath = [path.dirname(npmHost.node22), path.join(npmHost.hostDir, 'node_modules', '.bin'), process.env.PATH].join(path.delimiter)
    const r = doctor(healthy, { path: npmPath })
    failsOnly(r, 'launcher', /stops at start \("user patch-layer watching requires the Cordis HMR service"\): @deepseek-ai\/cordis-plugin-hmr 1\.0\.19 has no registerConfig/, /npm install --legacy-peer-deps --ignore-scripts @deepseek-ai\/cordis-plugin-hmr@1\.0\.17/)
    const noRow = copyHome('no-hmr-row')
    rmSync(path.join(noRow, 'cordis.patch.yml'))
    const r2 = doctor(noRow)
    failsOnly(r2, 'launcher', /no HMR row is mounted at boot/, /printf .*launcher-hmr.* >> ~\/\.dsh\/cordis\.patch\.yml/)
    // The fix, run as printed, fixes it.
    execFileSync('sh', ['-c', r2.checks.launcher.fix], { env: { ...process.env, HOME: path.dirname(noRow) } })
    assert.equal(doctor(noRow).code, 0)
  })

  test('profile ✗ and bundle ✗: a profile that does not exist; one without dsh-fold; dsh-fold not listed', async () => {
    const r = doctor(healthy, { args: ['--profile', 'nope'] })
    failsOnly(r, 'profile', /no profile nope in /, /^npm run pack && dsh plugin --profile nope add \.\/target\/pack\/\*\.tgz   \(in a dsh-fold checkout: http:\/\/127\.0\.0\.1:\d+\/ has no dsh-fold yet\)$/)
    assert.equal(r.checks.bundle.ok, false)
    const bare = copyHome('bare-profile')
    const { hostEnv, initProfile } = await import('../bin/host/launch.mjs')
    await initProfile({ node22: readme.node22, dshPackage: readme.dshPackage, profile: 'work', env: hostEnv({ dshHome: bare }), cwd: bare })
    failsOnly(doctor(bare, { args: ['--profile', 'work'] }), 'bundle', /dsh-fold is not installed in profile work/, /npm run pack && dsh plugin --profile work add \.\/target\/pack\/\*\.tgz/)
    const unlisted = copyHome('unlisted')
    const manifestFile = path.join(unlisted, 'profiles', 'headless', 'package.json')
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'))
    manifest.dsh.profile.bundles = manifest.dsh.profile.bundles.filter((/** @type {string} */ b) => b !== 'dsh-fold')
    writeFileSync(manifestFile, JSON.stringify(manifest, null, 2))
    failsOnly(doctor(unlisted), 'bundle', /installed in profile headless but not listed in its dsh\.profile\.bundles/, /^npm run pack && dsh plugin --profile headless add \.\/target\/pack\/\*\.tgz/)
  })

  test('rows ✗: a row disabled in the profile\'s own patch', () => {
    const home = copyHome('disabled-row')
    writeFileSync(path.join(home, 'profiles', 'headless', 'cordis.patch.yml'), '- id: tool-recall\n  disabled: true\n')
    failsOnly(doctor(home), 'rows', /rows missing from profile headless: tool-recall \(dsh-fold\/recall\) disabled/, /remove the `disabled: true` of tool-recall/)
  })

  /** `dsh-fold compaction ARGS` on a home, as a user runs it. @param {string} dshHome @param {string[]} args */
  function compaction(dshHome, args) {
    const r = spawnSync(process.execPath, [BIN, 'compaction', ...args], { env: { ...process.env, HOME: path.dirname(dshHome), DSH_HOME: dshHome, PATH: userPath }, encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
  }

  test('compaction ✓: the backend each profile mounts, from which file, with its settings', async () => {
    const home = copyHome('compaction-enabled')
    compaction(home, ['enable', '--profile', 'headless'])
    const { hostEnv, initProfile } = await import('../bin/host/launch.mjs')
    await initProfile({ node22: readme.node22, dshPackage: readme.dshPackage, profile: 'work', env: hostEnv({ dshHome: home }), cwd: home })
    const r = doctor(home)
    assert.equal(r.code, 0, r.stdout)
    assert.match(r.checks.compaction.label, /^compaction: dsh-fold\/compaction \(row compaction-fold, from ~\/\.dsh\/profiles\/headless\/cordis\.patch\.yml, written by dsh-fold compaction enable\); compacts at 0\.8 of the context window \(a 0\.16 tail kept\); summarizer extractive \(no model call\); checkpoint cap 0\.15 of the window, at least 8192 tokens; language en$/)
    assert.equal(r.checks.profiles.label, 'other profiles: work (compaction-basic)')
  })

  test('profiles ✗: the old README\'s home-wide rows stop a profile without dsh-fold, so not every check passes', async () => {
    const home = copyHome('compaction-home-wide')
    const { hostEnv, initProfile } = await import('../bin/host/launch.mjs')
    await initProfile({ node22: readme.node22, dshPackage: readme.dshPackage, profile: 'work', env: hostEnv({ dshHome: home }), cwd: home })
    appendFileSync(path.join(home, 'cordis.patch.yml'), '- id: compaction-basic\n  disabled: true\n- insert:\n    - id: compaction-fold\n      name: dsh-fold/compaction\n')
    // The profile checked is fine, and says where its backend comes from...
    const r = doctor(home)
    failsOnly(r, 'profiles', /^other profiles: profile work does not start \("plugin\(s\) failed to load: dsh-fold\/compaction"\): it reads a dsh-fold\/compaction row from ~\/\.dsh\/cordis\.patch\.yml \(lines 5–9\), which every profile reads, and it does not have dsh-fold$/, /^delete lines 5–9 of ~\/\.dsh\/cordis\.patch\.yml \(the swap written where every profile reads it\)\ndsh-fold compaction enable --profile headless$/)
    assert.equal(r.checks.compaction.ok, true)
    assert.match(r.checks.compaction.label, /^compaction: dsh-fold\/compaction \(row compaction-fold, from ~\/\.dsh\/cordis\.patch\.yml\); .*; note: dsh-fold\/compaction is mounted from ~\/\.dsh\/cordis\.patch\.yml \(lines 5–9\), which every profile reads/)
    assert.match(r.stdout, /12 of 13 checks pass\n$/)
    // ...and the broken one, checked, fails its own compaction check.
    const work = doctor(home, { args: ['--profile', 'work'] })
    assert.equal(work.checks.compaction.ok, false)
    assert.match(work.checks.compaction.label, /^compaction: profile work does not start/)
    // The fix, as printed, makes every check pass.
    const lines = readFileSync(path.join(home, 'cordis.patch.yml'), 'utf8').split('\n')
    lines.splice(4, 5)
    writeFileSync(path.join(home, 'cordis.patch.yml'), lines.join('\n'))
    compaction(home, ['enable', '--profile', 'headless'])
    const fixed = doctor(home)
    assert.equal(fixed.code, 0, fixed.stdout)
    assert.equal(fixed.checks.profiles.label, 'other profiles: work (compaction-basic)')
  })

  test('compaction ✗: dsh-fold/compaction where dsh-fold is missing; a config the backend refuses', async () => {
    const home = copyHome('compaction-broken')
    const { hostEnv, initProfile } = await import('../bin/host/launch.mjs')
    await initProfile({ node22: readme.node22, dshPackage: readme.dshPackage, profile: 'work', env: hostEnv({ dshHome: home }), cwd: home })
    // The swap written by hand into a profile without dsh-fold.
    writeFileSync(path.join(home, 'profiles', 'work', 'cordis.patch.yml'), '- id: compaction-basic\n  disabled: true\n- insert:\n    - id: compaction-fold\n      name: dsh-fold/compaction\n')
    const r = doctor(home, { args: ['--profile', 'work'] })
    failsOnly(r, 'compaction', /^compaction: profile work does not start \("plugin\(s\) failed to load: dsh-fold\/compaction"\): it reads a dsh-fold\/compaction row from ~\/\.dsh\/profiles\/work\/cordis\.patch\.yml and it does not have dsh-fold$/, /^delete lines 1–5 of ~\/\.dsh\/profiles\/work\/cordis\.patch\.yml   \(or add dsh-fold: npm run pack && dsh plugin --profile work add \.\/target\/pack\/\*\.tgz\)$/)
    // Seen from headless, the same profile is the other one that would not start.
    const fromHeadless = doctor(home)
    failsOnly(fromHeadless, 'profiles', /^other profiles: profile work does not start/)
    // A config dsh-fold/compaction refuses at load.
    const bad = copyHome('compaction-bad-config')
    compaction(bad, ['enable', '--profile', 'headless'])
    const file = path.join(bad, 'profiles', 'headless', 'cordis.patch.yml')
    writeFileSync(file, readFileSync(file, 'utf8').replace('config: {}', 'config: {thresholdRatio: 0.1, retainRatio: 0.5}'))
    failsOnly(doctor(bad), 'compaction', /^compaction: profile headless's compaction-fold row fails at load: dsh-fold\/compaction: retainRatio \(0\.5\) must be less than thresholdRatio \(0\.1\)$/, /^fix the row's config in ~\/\.dsh\/profiles\/headless\/cordis\.patch\.yml/)
  })

  test('block ✗: block mode\'s row on without DSH_TOOLS_MODE=both; ✓ with it', () => {
    const home = copyHome('block')
    appendFileSync(path.join(home, 'cordis.patch.yml'), '- insert:\n    - id: block-mode\n      name: dsh-fold/block\n')
    const off = doctor(home)
    failsOnly(off, 'block', /block mode's row block-mode is on but the host will not run it: DSH_TOOLS_MODE is not set/, /export DSH_TOOLS_MODE=both/)
    assert.match(off.checks.rows.label, /block-mode \(block mode\)/)
    const on = doctor(home, { env: { DSH_TOOLS_MODE: 'both' } })
    assert.equal(on.code, 0, on.stdout)
    assert.match(on.checks.block.label, /block mode: row block-mode, Code Mode runtime code-runtime, tools presented as both \(DSH_TOOLS_MODE=both\)/)
  })

  test('preset ✗: the block-ptc preset edited after dsh-fold wrote it; ✓ when installed as written', () => {
    const home = copyHome('preset')
    const env = { ...process.env, DSH_HOME: home, PATH: userPath }
    execFileSync(process.execPath, [BIN, 'preset', 'install', '--profile', 'headless'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    const good = doctor(home)
    assert.equal(good.code, 0, good.stdout)
    assert.match(good.checks.preset.label, /installed by dsh-fold 0\.1\.0, matches the host's code preset/)
    appendFileSync(path.join(home, '.agent-presets', 'block-ptc', 'preset.yml'), '# my edit\n')
    failsOnly(doctor(home), 'preset', /edited since dsh-fold wrote it \(preset\.yml \(edited\)\)/, /dsh-fold preset install --force/)
  })

  test('store ✗: a checkpoint store that is not JSON; ✓ with its marks and journal size', async () => {
    const { addon } = await import('../plugin/shared/addon.js')
    const home = copyHome('store')
    const store = path.join(home, 'storages', 'checkpoint.json')
    await addon.mark(store, 'session-a', 4, 'look around')
    await addon.mark(store, 'session-b', 9)
    const good = doctor(home)
    assert.equal(good.code, 0, good.stdout)
    assert.match(good.checks.store.label, /checkpoint\.json: 2 marks \(2 active\), journal \d[\d,]* bytes/)
    writeFileSync(store, '{"unit":')
    rmSync(`${store}.journal`, { force: true })
    failsOnly(doctor(home), 'store', /cannot be read: STORE_CORRUPT: /, /mv .*checkpoint\.json .*checkpoint\.json\.bad/)
  })

  test('addon ✗: the profile\'s platform package removed', () => {
    const home = copyHome('addon')
    const modules = path.join(home, 'profiles', 'headless', 'node_modules')
    for (const name of readdirSync(modules)) if (name.startsWith('dsh-fold-')) rmSync(path.join(modules, name), { recursive: true, force: true })
    const pnpmStore = path.join(modules, '.pnpm')
    for (const name of readdirSync(pnpmStore, { withFileTypes: true })) if (name.name.startsWith('dsh-fold-linux')) rmSync(path.join(pnpmStore, name.name), { recursive: true, force: true })
    failsOnly(doctor(home), 'addon', /addon: the profile's dsh-fold has no binary that loads on linux-x64/, /^npm run pack && dsh plugin --profile headless add \.\/target\/pack\/\*\.tgz/)
    const byName = doctor(home, { env: { npm_config_registry: withFold.url } })
    failsOnly(byName, 'addon', /no binary that loads/, /^dsh plugin --profile headless add dsh-fold   \(installs the dsh-fold-linux-x64\* platform package\)$/)
  })

  test('registry ✓: one that has dsh-fold, and every install fix is then the by-name command, which works as printed', async () => {
    const home = copyHome('registry-has-it')
    const env = { npm_config_registry: withFold.url }
    const r = doctor(home, { env })
    assert.equal(r.code, 0, r.stdout)
    assert.equal(r.checks.registry.label, `registry ${withFold.url}: dsh-fold 0.1.0, what \`dsh plugin --profile headless add dsh-fold\` installs`)
    // A profile without dsh-fold: the fix names it by name, and that command installs it.
    const { hostEnv, initProfile } = await import('../bin/host/launch.mjs')
    await initProfile({ node22: readme.node22, dshPackage: readme.dshPackage, profile: 'work', env: hostEnv({ dshHome: home }), cwd: home })
    const missing = doctor(home, { env, args: ['--profile', 'work'] })
    failsOnly(missing, 'bundle', /dsh-fold is not installed in profile work/, /^dsh plugin --profile work add dsh-fold$/)
    execFileSync('sh', ['-c', missing.checks.bundle.fix], { env: { ...process.env, HOME: path.dirname(home), DSH_HOME: home, PATH: userPath, npm_config_store_dir: readme.storeDir, ...env }, stdio: ['ignore', 'ignore', 'pipe'] })
    const fixed = doctor(home, { env, args: ['--profile', 'work'] })
    assert.equal(fixed.code, 0, fixed.stdout)
    assert.match(fixed.checks.addon.label, /profiles\/work\/node_modules\/.*dsh-fold-linux-x64-gnu.*\.node loads/)
  })

  test('registry ✓: one without dsh-fold says so, and the fixes are the checkout\'s route', () => {
    const r = doctor(healthy, { args: ['--profile', 'nope'] })
    assert.equal(r.checks.registry.ok, true)
    assert.equal(r.checks.registry.label, `registry ${withoutFold.url}: no dsh-fold there yet (404), so not \`dsh plugin --profile nope add dsh-fold\`; a dsh-fold checkout's \`npm run pack\` tarballs install it`)
    for (const c of r.report.checks.filter((/** @type {any} */ c) => c.fix)) assert.doesNotMatch(c.fix, /add dsh-fold(\s|$)/, `${c.id}: no by-name fix while the registry lacks dsh-fold`)
  })

  test('registry ✓ offline: one that never answers, and a closed port, fail nothing; said so within the budget', async (t) => {
    const silent = createServer(() => {}) // accepts, never answers
    await new Promise((resolve) => silent.listen(0, '127.0.0.1', () => resolve(undefined)))
    t.after(() => silent.close())
    const closed = createServer()
    await new Promise((resolve) => closed.listen(0, '127.0.0.1', () => resolve(undefined)))
    const closedPort = /** @type {import('node:net').AddressInfo} */ (closed.address()).port
    await new Promise((resolve) => closed.close(() => resolve(undefined)))
    const hung = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (silent.address()).port}/`
    const r = doctor(healthy, { env: { npm_config_registry: hung } })
    assert.equal(r.code, 0, r.stdout)
    assert.equal(r.checks.registry.label, `registry ${hung}: no answer (no answer within 3 s): offline? Whether it has dsh-fold is unknown, so any install fix here uses a dsh-fold checkout's tarballs`)
    const refused = doctor(healthy, { env: { npm_config_registry: `http://127.0.0.1:${closedPort}/` }, args: ['--profile', 'nope'] })
    assert.equal(refused.checks.registry.ok, true)
    assert.match(refused.checks.registry.label, /: no answer \(ECONNREFUSED\): offline\?/)
    assert.match(refused.checks.profile.fix, /^npm run pack && dsh plugin --profile nope add \.\/target\/pack\/\*\.tgz   \(in a dsh-fold checkout: by name needs a registry that has dsh-fold\)$/)
  })

  test('registry ✗: an answer `dsh plugin add` cannot install from (503), with the command that shows npm\'s account of it', async (t) => {
    // In its own process: doctor runs synchronously here, and this process would answer nothing meanwhile.
    const down = spawn(process.execPath, ['-e', "const s = require('node:http').createServer((q, r) => r.writeHead(503, 'Service Unavailable').end()).listen(0, '127.0.0.1', () => console.log(s.address().port))"], { stdio: ['ignore', 'pipe', 'inherit'] })
    t.after(() => down.kill())
    const port = await new Promise((resolve) => down.stdout.once('data', (d) => resolve(String(d).trim())))
    const url = `http://127.0.0.1:${port}/`
    failsOnly(doctor(healthy, { env: { npm_config_registry: url } }), 'registry', new RegExp(`^registry ${url.replace(/\./g, '\\.')} answered HTTP 503 Service Unavailable: \`dsh plugin add\` cannot install from it$`), /^cd ~\/\.dsh\/profiles\/headless && npm view dsh-fold version   \(npm's own account of it/)
  })
})
