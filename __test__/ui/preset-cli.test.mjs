/**
 * `dsh-fold preset install | remove | status`, run as a real process against the REAL installed
 * DSH 0.1.0-rc.8 host of the e2e harness (`ensureHost()`): the preset is derived from that
 * host's shipped `code` preset and checked with the host's own YAML dialect (js-yaml + the
 * loader's `!!js` type). Host discovery is exercised the way a user meets it: the links a real
 * `dsh` launch writes into `$DSH_HOME/profiles/node_modules` (the harness's `init` boot), and
 * `--host`. Broken hosts are copies of the real one with one thing taken away or altered.
 * Every refusal and error path checks its exit code, its error code, and that nothing under
 * `$DSH_HOME` changed; `--force` paths check that the user's files survive in the backup.
 * Needs the installed host: skipped (with this reason) under DSH_FOLD_SKIP_E2E.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the preset commands need the installed DSH host of the e2e harness' : false

/** @type {{node22: string, hostDir: string}} */
let host
/** The real `@deepseek-ai/dsh` folder and its parsed `code` preset rows. */
let dshDir = ''
/** @type {(text: string) => any} */
let parse
const temps = []
const temp = (/** @type {string} */ prefix) => { const d = mkdtempSync(path.join(tmpdir(), prefix)); temps.push(d); return d }

/** Run the CLI with a clean environment (no inherited DSH_HOME; HOME in a temp folder). */
function cli (/** @type {string[]} */ args, /** @type {Record<string, string>} */ env = {}) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(DSH_|NODE_TEST_CONTEXT$)/.test(k)))
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...base, HOME: temp('dsh-fold-home-'), ...env } })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) }
}

/** Every file under `dir` with its sha256 (links recorded as links), for "nothing changed". */
function tree (/** @type {string} */ dir) {
  if (!existsSync(dir)) return {}
  /** @type {Record<string, string>} */
  const out = {}
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath ?? entry.path, entry.name)
    const rel = path.relative(dir, full)
    if (entry.isSymbolicLink()) out[rel] = 'link'
    else if (entry.isFile()) out[rel] = createHash('sha256').update(readFileSync(full)).digest('hex')
    else if (entry.isDirectory()) out[rel + '/'] = 'dir'
  }
  return out
}

const presetDir = (/** @type {string} */ dshHome) => path.join(dshHome, '.agent-presets', 'block-ptc')
const codePreset = () => path.join(dshDir, 'config', 'agent-presets', 'code', 'agent.cordis.yml')

/** A host folder: a copy of the real dsh package (config altered by `edit`) beside links to its YAML dialect. */
function fakeHost (/** @type {(dir: string) => void} */ edit) {
  const dir = temp('dsh-fold-fakehost-')
  const pkg = path.join(dir, 'node_modules', '@deepseek-ai', 'dsh')
  mkdirSync(pkg, { recursive: true })
  cpSync(path.join(dshDir, 'package.json'), path.join(pkg, 'package.json'))
  cpSync(path.join(dshDir, 'config'), path.join(pkg, 'config'), { recursive: true })
  const real = path.join(host.hostDir, 'node_modules')
  symlinkSync(path.join(real, 'js-yaml'), path.join(dir, 'node_modules', 'js-yaml'))
  symlinkSync(path.join(real, '@deepseek-ai', 'cordis-plugin-include'), path.join(dir, 'node_modules', '@deepseek-ai', 'cordis-plugin-include'))
  edit(pkg)
  return dir
}

describe('dsh-fold preset (real installed host)', { skip: SKIP }, () => {
  before(async () => {
    const { ensureHost } = await import('../e2e/harness/install.mjs')
    host = ensureHost()
    dshDir = path.join(host.hostDir, 'node_modules', '@deepseek-ai', 'dsh')
    const require = createRequire(path.join(dshDir, 'package.json'))
    const yaml = await import(pathToFileURL(require.resolve('js-yaml')).href)
    const { entryListSchema } = await import(pathToFileURL(require.resolve('@deepseek-ai/cordis-plugin-include')).href)
    parse = (text) => yaml.load(text, { schema: entryListSchema })
  }, { timeout: 45 * 60_000 })
  after(() => { for (const d of temps) rmSync(d, { recursive: true, force: true }) })

  test('install: the host\'s code preset with presentation `both` and the block rows, its comments kept', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    const shipped = tree(path.dirname(path.dirname(codePreset())))
    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^installed block-ptc at /)
    const dir = presetDir(dshHome)
    assert.deepEqual(readdirSync(dir).sort(), ['.dsh-fold.json', 'agent.cordis.yml', 'preset.yml'])

    const source = readFileSync(codePreset(), 'utf8')
    const text = readFileSync(path.join(dir, 'agent.cordis.yml'), 'utf8')
    const want = parse(source)
    const at = want.findIndex((/** @type {any} */ row) => row.id === 'tool-presentation')
    assert.equal(want[at].config.mode, 'code', 'rc.8 ships Code Mode as presentation `code`')
    want[at].config.mode = 'both'
    want.push({ id: 'block', name: 'dsh-fold/block' })
    assert.deepEqual(parse(text), want)
    // Every comment line of the host file is still there, in order.
    const comments = (/** @type {string} */ t) => t.split('\n').filter((l) => /^\s*#/.test(l))
    const kept = comments(text)
    let i = 0
    for (const line of comments(source)) { i = kept.indexOf(line, i); assert.ok(i >= 0, `lost comment: ${line}`) }
    // `!!js` expressions survive verbatim (the loader evaluates them per platform).
    assert.match(text, /disabled: !!js process\.platform === 'win32'/)

    const meta = readFileSync(path.join(dir, 'preset.yml'), 'utf8')
    assert.match(meta, /^name: Block PTC$/m)
    const record = JSON.parse(readFileSync(path.join(dir, '.dsh-fold.json'), 'utf8'))
    assert.equal(record.by, 'dsh-fold')
    assert.equal(record.host.version, '0.1.0-rc.8')
    assert.equal(record.source.sha256, createHash('sha256').update(source).digest('hex'))
    assert.equal(record.commentsKept, true)
    assert.equal(record.files['agent.cordis.yml'], createHash('sha256').update(text).digest('hex'))
    assert.equal(statSync(dir).mode & 0o777, 0o700)
    for (const f of readdirSync(dir)) assert.equal(statSync(path.join(dir, f)).mode & 0o777, 0o600, f)
    assert.deepEqual(tree(path.dirname(path.dirname(codePreset()))), shipped, 'the shipped presets were touched')
    assert.deepEqual(readdirSync(path.join(dshHome, '.agent-presets')), ['block-ptc'], 'no temp or backup folder left behind')
  })

  test('the host is found through $DSH_HOME/profiles, as a real dsh launch links it', async () => {
    const { hostEnv, runBoot } = await import('../e2e/harness/host.mjs')
    const dshHome = temp('dsh-fold-dshhome-')
    const init = await runBoot({ node22: host.node22, hostDir: host.hostDir, env: hostEnv({ home: path.dirname(dshHome), dshHome }), cwd: dshHome, timeoutMs: 120_000, echo: false, spec: { mode: 'init', profile: 'web' } })
    assert.equal(init.code, 0, init.stderr)
    assert.ok(lstatSync(path.join(dshHome, 'profiles', 'node_modules', '@deepseek-ai', 'dsh')).isSymbolicLink())
    const r = cli(['preset', 'install'], { DSH_HOME: dshHome })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /host found resolved from .*profiles/)
    const s = cli(['preset', 'status', '--json'], { DSH_HOME: dshHome }).json()
    assert.equal(s.state, 'installed')
    assert.equal(s.host.dir, dshDir)
    assert.equal(s.matchesHost, true)
    assert.deepEqual(s.profilesWithDshFold, [])
  })

  test('status tracks the host: an updated code preset no longer matches', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    assert.equal(cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir]).code, 0)
    const same = cli(['preset', 'status', '--dsh-home', dshHome, '--host', host.hostDir])
    assert.equal(same.code, 0)
    assert.match(same.stdout, /installed by dsh-fold, unmodified/)
    assert.match(same.stdout, /matches the host's current code preset: yes/)
    const newer = fakeHost((pkg) => writeFileSync(path.join(pkg, 'config/agent-presets/code/agent.cordis.yml'), readFileSync(codePreset(), 'utf8') + '\n# a newer host\n'))
    const s = cli(['preset', 'status', '--dsh-home', dshHome, '--host', newer, '--json'])
    assert.equal(s.code, 0)
    assert.equal(s.json().matchesHost, false)
    assert.match(cli(['preset', 'status', '--dsh-home', dshHome, '--host', newer]).stdout, /matches the host's current code preset: no/)
    // Re-installing against the newer host refreshes it (the old one was unmodified: no backup).
    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', newer])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^replaced block-ptc/)
    assert.equal(cli(['preset', 'status', '--dsh-home', dshHome, '--host', newer, '--json']).json().matchesHost, true)
    assert.ok(!existsSync(path.join(dshHome, '.agent-presets', '.dsh-fold-backups')))
  })

  test('re-install over an unmodified preset from the same host writes nothing', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    assert.equal(cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir]).code, 0)
    const before = tree(dshHome)
    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir])
    assert.equal(r.code, 0)
    assert.match(r.stdout, /already up to date/)
    assert.deepEqual(tree(dshHome), before)
  })

  test('a user-edited preset: install and remove refuse without --force; --force keeps the user\'s file in a backup', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    assert.equal(cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir]).code, 0)
    const file = path.join(presetDir(dshHome), 'agent.cordis.yml')
    const mine = readFileSync(file, 'utf8').replace('mode: both', 'mode: both # my tweak') + '\n# my own notes\n'
    writeFileSync(file, mine)
    writeFileSync(path.join(presetDir(dshHome), 'NOTES.md'), 'mine\n')
    const before = tree(dshHome)

    const s = cli(['preset', 'status', '--dsh-home', dshHome, '--host', host.hostDir, '--json']).json()
    assert.equal(s.state, 'modified')
    assert.deepEqual(s.changed.sort(), ['NOTES.md (added)', 'agent.cordis.yml (edited)'])

    for (const verb of ['install', 'remove']) {
      const r = cli(['preset', verb, '--dsh-home', dshHome, ...(verb === 'install' ? ['--host', host.hostDir] : [])])
      assert.equal(r.code, 1, `${verb}: ${r.stderr}`)
      assert.match(r.stderr, /^dsh-fold: PRESET_MODIFIED: .*agent\.cordis\.yml \(edited\).*--force/)
      assert.deepEqual(tree(dshHome), before, `${verb} without --force changed something`)
    }

    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir, '--force'])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /your previous folder was moved to .*\.dsh-fold-backups/)
    const backups = path.join(dshHome, '.agent-presets', '.dsh-fold-backups')
    const [backup] = readdirSync(backups)
    assert.match(backup, /^block-ptc-\d{4}-/)
    assert.equal(readFileSync(path.join(backups, backup, 'agent.cordis.yml'), 'utf8'), mine)
    assert.equal(readFileSync(path.join(backups, backup, 'NOTES.md'), 'utf8'), 'mine\n')
    assert.equal(cli(['preset', 'status', '--dsh-home', dshHome, '--host', host.hostDir, '--json']).json().state, 'installed')

    // Edit again, then remove --force: moved to the backups, never deleted.
    writeFileSync(file, 'my second edit\n')
    const gone = cli(['preset', 'remove', '--dsh-home', dshHome, '--force'])
    assert.equal(gone.code, 0, gone.stderr)
    assert.ok(!existsSync(presetDir(dshHome)))
    const kept = readdirSync(backups).map((b) => readFileSync(path.join(backups, b, 'agent.cordis.yml'), 'utf8'))
    assert.ok(kept.includes('my second edit\n') && kept.includes(mine))
  })

  test('a block-ptc folder dsh-fold did not write is refused (PRESET_FOREIGN), and backed up under --force', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    const dir = presetDir(dshHome)
    mkdirSync(dir, { recursive: true })
    writeFileSync(path.join(dir, 'agent.cordis.yml'), '- id: mine\n  name: my-plugin\n')
    const before = tree(dshHome)
    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /^dsh-fold: PRESET_FOREIGN: .*no \.dsh-fold\.json install record/)
    assert.deepEqual(tree(dshHome), before)
    assert.equal(cli(['preset', 'remove', '--dsh-home', dshHome]).code, 1)
    assert.deepEqual(tree(dshHome), before)
    assert.equal(cli(['preset', 'status', '--dsh-home', dshHome, '--json']).json().state, 'foreign')
    const forced = cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir, '--force'])
    assert.equal(forced.code, 0, forced.stderr)
    const backups = path.join(dshHome, '.agent-presets', '.dsh-fold-backups')
    assert.equal(readFileSync(path.join(backups, readdirSync(backups)[0], 'agent.cordis.yml'), 'utf8'), '- id: mine\n  name: my-plugin\n')
  })

  test('a symbolic link named block-ptc is foreign: never followed, moved (not its target) under --force', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    const target = temp('dsh-fold-linktarget-')
    writeFileSync(path.join(target, 'agent.cordis.yml'), 'x\n')
    mkdirSync(path.join(dshHome, '.agent-presets'), { recursive: true })
    symlinkSync(target, presetDir(dshHome))
    const r = cli(['preset', 'remove', '--dsh-home', dshHome])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /PRESET_FOREIGN: .*symbolic link/)
    assert.equal(cli(['preset', 'remove', '--dsh-home', dshHome, '--force']).code, 0)
    assert.equal(readFileSync(path.join(target, 'agent.cordis.yml'), 'utf8'), 'x\n', 'the link target was touched')
  })

  test('remove: an unmodified preset goes, an absent one is reported, nothing else is touched', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    mkdirSync(path.join(dshHome, '.agent-presets', 'my-preset'), { recursive: true })
    writeFileSync(path.join(dshHome, '.agent-presets', 'my-preset', 'agent.cordis.yml'), '[]\n')
    assert.equal(cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir]).code, 0)
    const r = cli(['preset', 'remove', '--dsh-home', dshHome])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^removed /)
    assert.deepEqual(readdirSync(path.join(dshHome, '.agent-presets')), ['my-preset'])
    const again = cli(['preset', 'remove', '--dsh-home', dshHome])
    assert.equal(again.code, 0)
    assert.match(again.stdout, /is not installed/)
  })

  test('no host anywhere: HOST_NOT_FOUND (66), nothing written; status still reports the preset', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    const r = cli(['preset', 'install', '--dsh-home', dshHome])
    assert.equal(r.code, 66)
    assert.match(r.stderr, /^dsh-fold: HOST_NOT_FOUND: no installed DeepSeek Harness host .*pass --host DIR/)
    assert.deepEqual(tree(dshHome), {})
    const bad = cli(['preset', 'install', '--dsh-home', dshHome, '--host', path.join(dshHome, 'nowhere')])
    assert.equal(bad.code, 66)
    assert.match(bad.stderr, /HOST_NOT_FOUND: --host /)
    const s = cli(['preset', 'status', '--dsh-home', dshHome, '--json'])
    assert.equal(s.code, 0)
    assert.equal(s.json().state, 'absent')
    assert.match(s.json().hostError, /^HOST_NOT_FOUND/)
  })

  test('a host without the code preset: CODE_PRESET_NOT_FOUND (66)', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    const noCode = fakeHost((pkg) => rmSync(path.join(pkg, 'config/agent-presets/code'), { recursive: true }))
    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', noCode])
    assert.equal(r.code, 66)
    assert.match(r.stderr, /^dsh-fold: CODE_PRESET_NOT_FOUND: .*ships no `code` preset/)
    assert.deepEqual(tree(dshHome), {})
  })

  test('a code preset that does not parse, is not a row list, or has no tool-presentation row: 65, nothing written', () => {
    const cases = [
      ['CODE_PRESET_UNREADABLE', 'does not parse', '- id: x\n  name: [unclosed\n'],
      ['CODE_PRESET_UNREADABLE', 'not a list of plugin rows', 'persona: {}\n'],
      ['CODE_PRESET_UNEXPECTED', 'no enabled `tool-presentation` row', readFileSync(codePreset(), 'utf8').replace(/- id: tool-presentation[\s\S]*$/, '')],
      ['CODE_PRESET_UNEXPECTED', 'no enabled `tool-presentation` row', readFileSync(codePreset(), 'utf8').replace("name: '@deepseek-ai/dsh-agent-tool-presentation'", "name: '@deepseek-ai/dsh-agent-tool-presentation'\n  disabled: true")],
      ['CODE_PRESET_UNEXPECTED', 'already has a row with id block', readFileSync(codePreset(), 'utf8') + '\n- id: block\n  name: someone-else\n'],
    ]
    for (const [code, why, text] of cases) {
      const dshHome = temp('dsh-fold-dshhome-')
      const broken = fakeHost((pkg) => writeFileSync(path.join(pkg, 'config/agent-presets/code/agent.cordis.yml'), text))
      const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', broken])
      assert.equal(r.code, 65, r.stderr)
      assert.ok(r.stderr.startsWith(`dsh-fold: ${code}: `) && r.stderr.includes(why), r.stderr)
      assert.deepEqual(tree(dshHome), {})
    }
  })

  test('a host whose YAML dialect cannot be loaded: HOST_UNREADABLE (65)', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    const dir = temp('dsh-fold-fakehost-')
    const pkg = path.join(dir, 'node_modules', '@deepseek-ai', 'dsh')
    mkdirSync(pkg, { recursive: true })
    cpSync(path.join(dshDir, 'package.json'), path.join(pkg, 'package.json'))
    cpSync(path.join(dshDir, 'config'), path.join(pkg, 'config'), { recursive: true })
    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', dir])
    assert.equal(r.code, 65)
    assert.match(r.stderr, /^dsh-fold: HOST_UNREADABLE: cannot load the host's YAML dialect/)
    assert.deepEqual(tree(dshHome), {})
  })

  test('a tool-presentation row in a shape the text edit does not know is re-serialized, still exact', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    const flow = fakeHost((pkg) => {
      const file = path.join(pkg, 'config/agent-presets/code/agent.cordis.yml')
      writeFileSync(file, readFileSync(file, 'utf8').replace(/  config:\n    mode: code\n?/, '  config: {mode: code}\n'))
    })
    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', flow])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /comments could not be kept/)
    const rows = parse(readFileSync(path.join(presetDir(dshHome), 'agent.cordis.yml'), 'utf8'))
    const want = parse(readFileSync(codePreset(), 'utf8'))
    want.find((/** @type {any} */ row) => row.id === 'tool-presentation').config.mode = 'both'
    assert.deepEqual(rows, [...want, { id: 'block', name: 'dsh-fold/block' }])
    assert.equal(JSON.parse(readFileSync(path.join(presetDir(dshHome), '.dsh-fold.json'), 'utf8')).commentsKept, false)
  })

  test('an .agent-presets that cannot hold folders: WRITE_FAILED (73), nothing lost', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    writeFileSync(path.join(dshHome, '.agent-presets'), 'not a folder\n')
    const r = cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir])
    assert.equal(r.code, 73, r.stderr)
    assert.match(r.stderr, /^dsh-fold: WRITE_FAILED: /)
    assert.equal(readFileSync(path.join(dshHome, '.agent-presets'), 'utf8'), 'not a folder\n')
  })

  test('usage errors exit 64 and write nothing', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    for (const args of [['preset'], ['preset', 'frob'], ['preset', 'install', 'extra'], ['preset', 'install', '--dsh-home'], ['preset', 'install', '--dsh-home', ''],
      ['preset', 'status', '--force'], ['preset', 'remove', '--host', host.hostDir], ['preset', 'install', '--bogus']]) {
      const r = cli(args, { DSH_HOME: dshHome })
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`)
      assert.deepEqual(tree(dshHome), {})
    }
  })
})
