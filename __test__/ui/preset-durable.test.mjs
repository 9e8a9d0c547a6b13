/**
 * `dsh-fold preset install | remove` never lose a user's file (issue 22 item 7), run as real
 * processes against the REAL installed DSH 0.1.0-rc.8 host of the e2e harness (`ensureHost()`):
 *
 * - a file the user put in the preset folder is the user's whatever its name — also
 *   `constructor`, `toString` or `__proto__`, names an `in` test finds on every plain object —
 *   and an install record naming files outside the folder is not dsh-fold's;
 * - the replace is atomic, and every crash leaves the old or the new preset: the real CLI is
 *   killed with SIGKILL at the entry of each file-system call it makes under `.agent-presets/`
 *   (strace's syscall tampering stops the unmodified CLI there: no test hook ships in the
 *   published code), the folder is checked right after the kill, and the next real run must
 *   finish with the right preset, no leftovers, and every user file kept.
 *
 * Needs the installed host (skipped under DSH_FOLD_SKIP_E2E, like preset-cli) and strace with
 * ptrace permitted: when strace is missing this suite installs it with apt-get as root, and skips
 * otherwise, naming the command (`apt-get install -y strace`).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { KILL_AT, killedCall, straceUnavailable, syscalls, TRACED } from '../helpers/strace.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the preset commands need the installed DSH host of the e2e harness' : false

/** @type {{node22: string, hostDir: string}} */
let host
const temps = []
const temp = (/** @type {string} */ prefix) => {
  const d = mkdtempSync(path.join(tmpdir(), prefix))
  temps.push(d)
  return d
}

/** The CLI's environment: no inherited DSH_HOME; HOME in a temp folder. */
const cliEnv = () => ({ ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(DSH_|NODE_TEST_CONTEXT$)/.test(k))), HOME: temp('dsh-fold-home-') })

/** Run the CLI. @param {string[]} args */
function cli(args) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: cliEnv() })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) }
}

/** Every file under `dir` with its sha256 (dirs marked), for "exactly this content". */
function tree(/** @type {string} */ dir) {
  if (!existsSync(dir)) return null
  /** @type {Record<string, string>} */
  const out = {}
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath ?? entry.path, entry.name)
    const rel = path.relative(dir, full)
    if (entry.isFile()) out[rel] = createHash('sha256').update(readFileSync(full)).digest('hex')
    else if (entry.isDirectory()) out[`${rel}/`] = 'dir'
    else out[rel] = 'other'
  }
  return out
}

const presets = (/** @type {string} */ dshHome) => path.join(dshHome, '.agent-presets')
const presetDir = (/** @type {string} */ dshHome) => path.join(presets(dshHome), 'block-ptc')
const backupsOf = (/** @type {string} */ dshHome) => {
  const dir = path.join(presets(dshHome), '.dsh-fold-backups')
  return existsSync(dir) ? readdirSync(dir).map((name) => tree(path.join(dir, name))) : []
}

describe('preset files named like Object.prototype members (real installed host)', { skip: SKIP }, () => {
  before(async () => {
    const { ensureHost } = await import('../e2e/harness/install.mjs')
    host = ensureHost()
  }, { timeout: 45 * 60_000 })
  after(() => {
    for (const d of temps) rmSync(d, { recursive: true, force: true })
  })

  for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    test(`a file the user added named ${name} makes the preset modified: remove refuses, --force keeps it in a backup`, () => {
      const dshHome = temp('dsh-fold-dshhome-')
      assert.equal(cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir]).code, 0)
      writeFileSync(path.join(presetDir(dshHome), name), 'my notes\n')
      const mine = tree(presetDir(dshHome))

      const s = cli(['preset', 'status', '--dsh-home', dshHome, '--host', host.hostDir, '--json']).json()
      assert.equal(s.state, 'modified')
      assert.deepEqual(s.changed, [`${name} (added)`])

      const refused = cli(['preset', 'remove', '--dsh-home', dshHome])
      assert.equal(refused.code, 1, refused.stdout)
      assert.match(refused.stderr, new RegExp(`^dsh-fold: PRESET_MODIFIED: .*${name.replace(/_/g, '_')} \\(added\\)`))
      assert.deepEqual(tree(presetDir(dshHome)), mine, 'remove without --force changed the folder')

      const forced = cli(['preset', 'remove', '--dsh-home', dshHome, '--force'])
      assert.equal(forced.code, 0, forced.stderr)
      assert.ok(!existsSync(presetDir(dshHome)))
      assert.deepEqual(backupsOf(dshHome), [mine], 'the user\'s file was not kept')
    })
  }

  test('an install record naming files outside the folder is not dsh-fold\'s: foreign, nothing read or removed without --force', () => {
    const dshHome = temp('dsh-fold-dshhome-')
    assert.equal(cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir]).code, 0)
    const outside = path.join(dshHome, 'outside.txt')
    writeFileSync(outside, 'not the preset\n')
    const recordFile = path.join(presetDir(dshHome), '.dsh-fold.json')
    for (const files of [{ '../../outside.txt': createHash('sha256').update('not the preset\n').digest('hex') }, { 'agent.cordis.yml': 42 }, ['agent.cordis.yml']]) {
      const record = JSON.parse(readFileSync(recordFile, 'utf8'))
      writeFileSync(recordFile, JSON.stringify({ ...record, files }))
      const before = tree(dshHome)
      const s = cli(['preset', 'status', '--dsh-home', dshHome, '--host', host.hostDir, '--json']).json()
      assert.equal(s.state, 'foreign', JSON.stringify(files))
      assert.match(s.why, /install record/)
      assert.equal(cli(['preset', 'remove', '--dsh-home', dshHome]).code, 1)
      assert.deepEqual(tree(dshHome), before)
      writeFileSync(recordFile, JSON.stringify(record))
    }
  })
})

// ---- crash safety: the real CLI killed at every file-system call --------------------------

/** A line with this run's variable parts taken out: the home folder, pids in step names, fd numbers. @param {string} line @param {string} dshHome */
const normal = (line, dshHome) =>
  line
    .replace(/^\d+ +/, '')
    .replaceAll(dshHome, '$HOME')
    .replace(/\.block-ptc\.(new|old|trash|tmp)-\d+/g, '.block-ptc.$1-PID')
    .replace(/block-ptc-\d{4}-\d\d-\d\dT[\d-]+Z(-\d+)?/g, 'block-ptc-TIME')
    .replace(/\b\d+</g, 'FD<')
    .replace(/ <unfinished \.\.\.>$/, '')
    .replace(/\) += .*$/, '')

/** The source of the installed host's `code` preset, and a copy of the host whose `code` preset differs by a comment. */
function hosts() {
  const dsh = path.join(host.hostDir, 'node_modules', '@deepseek-ai', 'dsh')
  const source = readFileSync(path.join(dsh, 'config', 'agent-presets', 'code', 'agent.cordis.yml'), 'utf8')
  const older = temp('dsh-fold-olderhost-')
  const pkg = path.join(older, 'node_modules', '@deepseek-ai', 'dsh')
  mkdirSync(path.join(older, 'node_modules', '@deepseek-ai'), { recursive: true })
  cpSync(path.join(dsh, 'package.json'), path.join(pkg, 'package.json'))
  cpSync(path.join(dsh, 'config'), path.join(pkg, 'config'), { recursive: true })
  writeFileSync(path.join(pkg, 'config', 'agent-presets', 'code', 'agent.cordis.yml'), `# an older host's code preset\n${source}`)
  const real = path.join(host.hostDir, 'node_modules')
  spawnSync('ln', ['-s', path.join(real, 'js-yaml'), path.join(older, 'node_modules', 'js-yaml')])
  spawnSync('ln', ['-s', path.join(real, '@deepseek-ai', 'cordis-plugin-include'), path.join(older, 'node_modules', '@deepseek-ai', 'cordis-plugin-include')])
  return { sourceSha: createHash('sha256').update(source).digest('hex'), older }
}

/**
 * What the preset folder holds: 'absent', 'old' (exactly the tree before the run), 'new' (a whole
 * preset from the current host: every recorded file present and matching, nothing else), or
 * 'other' (anything else: torn, half-written).
 * @param {string} dir @param {Record<string, string> | null} old @param {string} sourceSha
 */
function classify(dir, old, sourceSha) {
  const now = tree(dir)
  if (now === null) return 'absent'
  if (old !== null && JSON.stringify(now) === JSON.stringify(old)) return 'old'
  try {
    const record = JSON.parse(readFileSync(path.join(dir, '.dsh-fold.json'), 'utf8'))
    const names = Object.keys(record.files)
    const whole = names.every((name) => now[name] === record.files[name]) && Object.keys(now).sort().join('\n') === [...names, '.dsh-fold.json'].sort().join('\n')
    if (whole && record.source.sha256 === sourceSha) return 'new'
  } catch {
    // no record, or a torn one
  }
  return 'other'
}

/** The step folders in `.agent-presets`. @param {string} dshHome */
const stepFolders = (dshHome) => (existsSync(presets(dshHome)) ? readdirSync(presets(dshHome)).filter((n) => n.startsWith('.block-ptc.')) : [])

describe('preset install and remove killed with SIGKILL at every file-system call (real CLI, strace)', { skip: SKIP }, () => {
  /** @type {string | undefined} */
  let unavailable
  /** @type {ReturnType<typeof hosts>} */
  let h
  before(async () => {
    const { ensureHost } = await import('../e2e/harness/install.mjs')
    host = ensureHost()
    unavailable = straceUnavailable('preset-durable')
    if (!unavailable) h = hosts()
  }, { timeout: 45 * 60_000 })
  after(() => {
    for (const d of temps) rmSync(d, { recursive: true, force: true })
  })

  /**
   * @typedef {object} Scenario
   * @property {string} name
   * @property {(dshHome: string) => void} setup what is on disk before the run
   * @property {(dshHome: string) => string[]} args the command killed (and run again after)
   * @property {'new' | 'absent'} end what the folder holds once the command succeeds
   * @property {boolean} userData whether the old folder holds the user's own files (never deleted)
   */
  /** @type {Scenario[]} */
  const SCENARIOS = [
    { name: 'a first install', setup: () => {}, args: (d) => ['preset', 'install', '--dsh-home', d, '--host', host.hostDir], end: 'new', userData: false },
    {
      name: 'an install over the unmodified preset of an older host',
      setup: (d) => assert.equal(cli(['preset', 'install', '--dsh-home', d, '--host', h.older]).code, 0),
      args: (d) => ['preset', 'install', '--dsh-home', d, '--host', host.hostDir],
      end: 'new',
      userData: false,
    },
    {
      name: 'install --force over a preset the user edited',
      setup: (d) => {
        assert.equal(cli(['preset', 'install', '--dsh-home', d, '--host', h.older]).code, 0)
        writeFileSync(path.join(presetDir(d), 'agent.cordis.yml'), '- id: mine\n  name: my-plugin\n')
        writeFileSync(path.join(presetDir(d), 'constructor'), 'my notes\n')
      },
      args: (d) => ['preset', 'install', '--dsh-home', d, '--host', host.hostDir, '--force'],
      end: 'new',
      userData: true,
    },
    {
      name: 'remove of an unmodified preset',
      setup: (d) => assert.equal(cli(['preset', 'install', '--dsh-home', d, '--host', host.hostDir]).code, 0),
      args: (d) => ['preset', 'remove', '--dsh-home', d],
      end: 'absent',
      userData: false,
    },
    {
      name: 'remove --force of a preset the user edited',
      setup: (d) => {
        assert.equal(cli(['preset', 'install', '--dsh-home', d, '--host', host.hostDir]).code, 0)
        writeFileSync(path.join(presetDir(d), 'NOTES.md'), 'mine\n')
      },
      args: (d) => ['preset', 'remove', '--dsh-home', d, '--force'],
      end: 'absent',
      userData: true,
    },
  ]

  for (const sc of SCENARIOS) {
    test(`${sc.name}: every kill leaves the old or the new preset, and the next run finishes cleanly`, (t) => {
      if (unavailable) return t.skip(unavailable)
      // A clean run under strace: the calls the CLI makes under .agent-presets, in order.
      const recordHome = temp('dsh-fold-dshhome-')
      sc.setup(recordHome)
      const recordLog = path.join(temp('dsh-fold-strace-'), 'record.txt')
      const clean = spawnSync('strace', ['-f', '-qq', '-y', '-e', `trace=${TRACED}`, '-o', recordLog, process.execPath, BIN, ...sc.args(recordHome)], { encoding: 'utf8', env: cliEnv() })
      assert.equal(clean.status, 0, clean.stderr)
      assert.equal(classify(presetDir(recordHome), null, h.sourceSha), sc.end)
      const calls = syscalls(readFileSync(recordLog, 'utf8'))
      const main = calls[0].pid
      const points = calls.filter((c) => c.pid === main && KILL_AT.has(c.name) && c.line.includes(`${recordHome}/.agent-presets`))
      assert.ok(points.length >= (sc.end === 'new' ? 8 : 2), `too few kill points:\n${points.map((p) => p.line).join('\n')}`)

      const seen = new Set()
      for (const point of points) {
        const dshHome = temp('dsh-fold-dshhome-')
        sc.setup(dshHome)
        const old = tree(presetDir(dshHome))
        const log = path.join(temp('dsh-fold-strace-'), 'kill.txt')
        const killed = spawnSync('strace', ['-f', '-qq', '-y', '-e', `trace=${TRACED}`, '-e', `inject=${point.name}:signal=KILL:when=${point.n}`, '-o', log, process.execPath, BIN, ...sc.args(dshHome)], { encoding: 'utf8', env: cliEnv() })
        const what = `killed at ${normal(point.line, recordHome)}`
        assert.ok(killed.status === null ? killed.signal === 'SIGKILL' : killed.status === 137, `${what}: the CLI was not killed (${killed.status}, ${killed.signal}): ${killed.stdout}${killed.stderr}`)
        // The kill hit the very call the clean run made at that point.
        const hit = killedCall(readFileSync(log, 'utf8'))
        assert.equal(hit && normal(hit, dshHome), normal(point.line, recordHome), what)

        // Right after the kill: the old preset or the new one, in place — or, between the two
        // renames, the old one whole beside an empty place.
        const state = classify(presetDir(dshHome), old, h.sourceSha)
        const aside = stepFolders(dshHome).filter((n) => n.startsWith('.block-ptc.old-'))
        const asideWhole = aside.length === 1 && JSON.stringify(tree(path.join(presets(dshHome), aside[0]))) === JSON.stringify(old)
        const wasOld = state === 'old' || (old === null && state === 'absent')
        assert.ok(wasOld || state === (sc.end === 'new' ? 'new' : 'absent') || (state === 'absent' && asideWhole), `${what}: the preset folder is ${state}; beside it: ${stepFolders(dshHome).join(', ')}`)
        if (sc.userData) {
          const places = [tree(presetDir(dshHome)), ...aside.map((n) => tree(path.join(presets(dshHome), n))), ...backupsOf(dshHome)]
          assert.ok(places.some((p) => JSON.stringify(p) === JSON.stringify(old)), `${what}: the user's folder is nowhere whole`)
        }
        seen.add(wasOld ? 'old' : state === 'absent' && asideWhole ? 'old aside' : state)

        // The next run (the same command, no strace) finishes: the right preset, no leftovers,
        // the user's folder kept exactly once, an unmodified one not kept at all.
        const next = cli(sc.args(dshHome))
        assert.equal(next.code, 0, `${what}: the next run failed: ${next.stderr}`)
        assert.equal(classify(presetDir(dshHome), null, h.sourceSha), sc.end, what)
        assert.deepEqual(stepFolders(dshHome), [], `${what}: leftovers after the next run`)
        const kept = backupsOf(dshHome).filter((b) => JSON.stringify(b) === JSON.stringify(old))
        assert.equal(kept.length, sc.userData ? 1 : 0, `${what}: the old folder is in the backups ${kept.length} times`)
        assert.equal(backupsOf(dshHome).length, kept.length, `${what}: something else went to the backups`)
      }
      t.diagnostic(`${points.length} kill points; states right after a kill: ${[...seen].join(', ')}`)
    })
  }

  /**
   * Runs `args` on a home `setup` prepares, with the call matching `at` (a normalized strace
   * line, found in a clean run first) failing with `errno`: the real CLI meets a real error there.
   * @param {(dshHome: string) => void} setup @param {(dshHome: string) => string[]} args @param {RegExp} at @param {string} errno
   */
  function failAt(setup, args, at, errno) {
    const recordHome = temp('dsh-fold-dshhome-')
    setup(recordHome)
    const recordLog = path.join(temp('dsh-fold-strace-'), 'record.txt')
    assert.equal(spawnSync('strace', ['-f', '-qq', '-y', '-e', `trace=${TRACED}`, '-o', recordLog, process.execPath, BIN, ...args(recordHome)], { env: cliEnv() }).status, 0)
    const calls = syscalls(readFileSync(recordLog, 'utf8'))
    const point = calls.find((c) => c.pid === calls[0].pid && at.test(normal(c.line, recordHome)))
    assert.ok(point, `no call matches ${at}`)
    const dshHome = temp('dsh-fold-dshhome-')
    setup(dshHome)
    const old = tree(presetDir(dshHome))
    const r = spawnSync('strace', ['-f', '-qq', '-e', `trace=${point.name}`, '-e', `inject=${point.name}:error=${errno}:when=${point.n}`, '-o', '/dev/null', process.execPath, BIN, ...args(dshHome)], { encoding: 'utf8', env: cliEnv() })
    return { dshHome, old, code: r.status, stderr: r.stderr, stdout: r.stdout }
  }

  test('every write error is a WRITE_FAILED (73) that loses nothing, and the next run finishes', (t) => {
    if (unavailable) return t.skip(unavailable)
    const older = (/** @type {string} */ d) => assert.equal(cli(['preset', 'install', '--dsh-home', d, '--host', h.older]).code, 0)
    const install = (/** @type {string} */ d) => ['preset', 'install', '--dsh-home', d, '--host', host.hostDir]
    const finishes = (/** @type {string} */ dshHome) => {
      const next = cli(install(dshHome))
      assert.equal(next.code, 0, next.stderr)
      assert.equal(classify(presetDir(dshHome), null, h.sourceSha), 'new')
      assert.deepEqual(stepFolders(dshHome), [])
    }

    // The new preset cannot be renamed in: the old one goes back in place, the new one is discarded.
    const renameIn = failAt(older, install, /^rename\("\$HOME\/\.agent-presets\/\.block-ptc\.new-PID", "\$HOME\/\.agent-presets\/block-ptc"/, 'EACCES')
    assert.equal(renameIn.code, 73, renameIn.stderr)
    assert.match(renameIn.stderr, /^dsh-fold: WRITE_FAILED: cannot put the preset in place at .*: EACCES/)
    assert.deepEqual(tree(presetDir(renameIn.dshHome)), renameIn.old)
    assert.deepEqual(stepFolders(renameIn.dshHome), [])
    finishes(renameIn.dshHome)

    // The folder cannot be flushed after the renames: said, and the next run finishes the rest.
    const flush = failAt(older, install, /^fsync\(FD<\$HOME\/\.agent-presets>/, 'EIO')
    assert.equal(flush.code, 73, flush.stderr)
    assert.match(flush.stderr, /^dsh-fold: WRITE_FAILED: the preset is in place at .*could not be flushed/)
    assert.equal(classify(presetDir(flush.dshHome), null, h.sourceSha), 'new')
    finishes(flush.dshHome)

    // The replaced preset cannot be deleted: the new one is in, the old one waits beside it.
    const trash = failAt(older, install, /^rename\("\$HOME\/\.agent-presets\/\.block-ptc\.old-PID", "\$HOME\/\.agent-presets\/\.block-ptc\.trash-PID"/, 'EIO')
    assert.equal(trash.code, 73, trash.stderr)
    assert.match(trash.stderr, /^dsh-fold: WRITE_FAILED: installed .*, but cannot delete the previous folder, left at .*\.block-ptc\.old-\d+/)
    assert.equal(classify(presetDir(trash.dshHome), null, h.sourceSha), 'new')
    assert.deepEqual(stepFolders(trash.dshHome).map((n) => n.replace(/\d+$/, 'PID')), ['.block-ptc.old-PID'])
    finishes(trash.dshHome)

    // remove cannot move the preset to the trash: it stays whole, in place.
    const current = (/** @type {string} */ d) => assert.equal(cli(install(d)).code, 0)
    const rm = failAt(current, (d) => ['preset', 'remove', '--dsh-home', d], /^rename\("\$HOME\/\.agent-presets\/block-ptc", "\$HOME\/\.agent-presets\/\.block-ptc\.trash-PID"/, 'EIO')
    assert.equal(rm.code, 73, rm.stderr)
    assert.match(rm.stderr, /^dsh-fold: WRITE_FAILED: cannot remove .*: EIO/)
    assert.deepEqual(tree(presetDir(rm.dshHome)), rm.old)
    assert.deepEqual(stepFolders(rm.dshHome), [])

    // An interrupted run's leftover cannot be put back: refused before anything else, nothing deleted.
    const interrupted = (/** @type {string} */ d) => {
      older(d)
      cpSync(presetDir(d), path.join(presets(d), '.block-ptc.old-999999999'), { recursive: true })
      rmSync(presetDir(d), { recursive: true })
    }
    const putBack = failAt(interrupted, install, /^rename\("\$HOME\/\.agent-presets\/\.block-ptc\.old-PID", "\$HOME\/\.agent-presets\/block-ptc"/, 'EACCES')
    assert.equal(putBack.code, 73, putBack.stderr)
    assert.match(putBack.stderr, /^dsh-fold: WRITE_FAILED: cannot finish the interrupted install or remove under .*: EACCES/)
    assert.deepEqual(stepFolders(putBack.dshHome), ['.block-ptc.old-999999999'])
    assert.ok(!existsSync(presetDir(putBack.dshHome)))
    const next = cli(install(putBack.dshHome))
    assert.equal(next.code, 0, next.stderr)
    assert.match(next.stdout, /^finished an interrupted run: put back the preset an interrupted run had set aside \(\.block-ptc\.old-999999999\)\nreplaced block-ptc/)
    assert.deepEqual(stepFolders(putBack.dshHome), [])
  })

  test('leftovers of a dsh-fold still running are left alone; those of a dead one are cleaned by the next run', async (t) => {
    if (unavailable) return t.skip(unavailable)
    const dshHome = temp('dsh-fold-dshhome-')
    assert.equal(cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir]).code, 0)
    // Another dsh-fold mid-install: a live process of ours (reaped by us once killed).
    const live = spawn('sleep', ['60'], { stdio: 'ignore' })
    const pid = /** @type {number} */ (live.pid)
    try {
      const theirs = path.join(presets(dshHome), `.block-ptc.new-${pid}`)
      mkdirSync(theirs)
      writeFileSync(path.join(theirs, 'agent.cordis.yml'), 'being written\n')
      // An older dsh-fold's temp folder, of a process long gone.
      const legacy = path.join(presets(dshHome), '.block-ptc.tmp-999999999')
      mkdirSync(legacy)
      const s = cli(['preset', 'status', '--dsh-home', dshHome, '--host', host.hostDir, '--json']).json()
      assert.deepEqual(s.leftovers, ['.block-ptc.tmp-999999999'])
      const r = cli(['preset', 'remove', '--dsh-home', dshHome])
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /finished an interrupted run: deleted a half-written preset \(\.block-ptc\.tmp-999999999\)/)
      assert.deepEqual(stepFolders(dshHome), [`.block-ptc.new-${pid}`], 'a running process\'s folder was touched')
      live.kill('SIGKILL')
      await once(live, 'exit')
      const again = cli(['preset', 'install', '--dsh-home', dshHome, '--host', host.hostDir])
      assert.equal(again.code, 0, again.stderr)
      assert.deepEqual(stepFolders(dshHome), [])
    } finally {
      live.kill('SIGKILL')
    }
  })
})
