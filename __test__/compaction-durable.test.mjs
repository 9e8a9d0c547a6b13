/**
 * `dsh-fold compaction enable | disable` never tear a profile's patch (issue 30 item 1: crash-safe
 * like `preset`): the real CLI, reading a real profile with the real host (the e2e harness's
 * pinned install), is killed with SIGKILL at the entry of each file-system call it makes in the
 * profile's folder (strace's syscall tampering: __test__/helpers/strace.mjs). Right after the
 * kill the profile's `cordis.patch.yml` holds the old bytes or the new ones, whole; the next run
 * of the same command finishes with the right bytes, its install record consistent, and no
 * temporary file left. A write error (EIO, EACCES at the rename) is WRITE_FAILED (73) with the
 * old file untouched.
 *
 * Needs the installed host (skipped under DSH_FOLD_SKIP_E2E) and strace with ptrace permitted
 * (installed with apt-get as root when missing; skipped otherwise, naming the command).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { KILL_AT, killedCall, straceUnavailable, syscalls, TRACED } from './helpers/strace.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the compaction command reads profiles with a real DSH host' : false
const USER_PATCH = '# my settings\n- id: tool-recall\n  config: {maxChars: 4000}\n'

describe('compaction enable and disable killed with SIGKILL at every file-system call (real CLI, strace)', { skip: SKIP }, () => {
  /** @type {string | undefined} */
  let unavailable
  /** @type {{node22: string, hostDir: string}} */
  let host
  /** @type {string} */
  let tmp
  /** A DSH home whose `headless` profile has dsh-fold; each case works on a copy. */
  let template = ''
  let copies = 0

  before(async () => {
    unavailable = straceUnavailable('compaction-durable')
    if (unavailable) return
    const { ensureHost } = await import('./e2e/harness/install.mjs')
    const { pack } = await import('../scripts/pack.mjs')
    const launch = await import('../bin/host/launch.mjs')
    host = ensureHost()
    tmp = mkdtempSync(path.join(tmpdir(), 'dsh-fold-compaction-durable-'))
    const tarballs = pack(path.join(tmp, 'pack'))
    template = path.join(tmp, 'template', '.dsh')
    mkdirSync(template, { recursive: true })
    const env = launch.hostEnv({ home: path.dirname(template), dshHome: template })
    await launch.initProfile({ node22: host.node22, dshPackage: launch.dshPackageOf(host.hostDir), profile: 'headless', env, cwd: tmp })
    launch.installBundles(path.join(template, 'profiles', 'headless'), [tarballs.platform, tarballs.root], { log: () => {} })
  }, { timeout: 600_000 })
  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true })
  })

  /** A fresh copy of the template home. */
  function home() {
    const to = path.join(tmp, `home-${++copies}`, '.dsh')
    mkdirSync(path.dirname(to), { recursive: true })
    cpSync(template, to, { recursive: true, verbatimSymlinks: true })
    return to
  }
  const profileDir = (/** @type {string} */ dshHome) => path.join(dshHome, 'profiles', 'headless')
  const patchOf = (/** @type {string} */ dshHome) => path.join(profileDir(dshHome), 'cordis.patch.yml')
  const bytes = (/** @type {string} */ file) => (existsSync(file) ? readFileSync(file, 'utf8') : null)
  const temps = (/** @type {string} */ dshHome) => readdirSync(profileDir(dshHome)).filter((n) => n.includes('dsh-fold-new-'))
  const hasRecord = (/** @type {string} */ dshHome) => existsSync(path.join(profileDir(dshHome), '.dsh-fold-compaction.json'))
  const env = (/** @type {string} */ dshHome) => ({ ...process.env, HOME: path.dirname(dshHome), DSH_HOME: dshHome, PATH: `${path.dirname(host.node22)}${path.delimiter}${process.env.PATH}` })

  /** @param {string} dshHome @param {string[]} args */
  function cli(dshHome, args) {
    const r = spawnSync(process.execPath, [BIN, 'compaction', ...args], { encoding: 'utf8', env: env(dshHome) })
    return { code: r.status, stdout: r.stdout, stderr: r.stderr }
  }

  /** A strace line with this run's variable parts out: the home, pids in temporary names, fd numbers. @param {string} line @param {string} dshHome */
  const normal = (line, dshHome) =>
    line
      .replace(/^\d+ +/, '')
      .replaceAll(dshHome, '$HOME')
      .replace(/dsh-fold-new-\d+/g, 'dsh-fold-new-PID')
      .replace(/\b\d+</g, 'FD<')
      .replace(/ <unfinished \.\.\.>$/, '')
      .replace(/\) += .*$/, '')

  /**
   * @typedef {object} Scenario
   * @property {string} name
   * @property {(dshHome: string) => void} setup
   * @property {string[]} args
   */
  /** @type {Scenario[]} */
  const SCENARIOS = [
    { name: 'enable over the user\'s own patch', setup: (d) => writeFileSync(patchOf(d), USER_PATCH), args: ['enable'] },
    { name: 'enable where the profile has no patch file', setup: (d) => rmSync(patchOf(d)), args: ['enable'] },
    {
      name: 'disable of a file unchanged since enable (put back byte for byte)',
      setup: (d) => {
        writeFileSync(patchOf(d), USER_PATCH)
        assert.equal(cli(d, ['enable']).code, 0)
      },
      args: ['disable'],
    },
    {
      name: 'disable of a file edited since enable (the block removed)',
      setup: (d) => {
        writeFileSync(patchOf(d), USER_PATCH)
        assert.equal(cli(d, ['enable']).code, 0)
        appendFileSync(patchOf(d), '- id: tool-checkpoint\n  config: {maxMarksPerSession: 32}\n')
      },
      args: ['disable'],
    },
  ]

  for (const sc of SCENARIOS) {
    test(`${sc.name}: every kill leaves the old file or the new one, and the next run finishes`, { timeout: 1_800_000 }, (t) => {
      if (unavailable) return t.skip(unavailable)
      const recordHome = home()
      sc.setup(recordHome)
      const old = bytes(patchOf(recordHome))
      const recordLog = path.join(tmp, `record-${copies}.txt`)
      const clean = spawnSync('strace', ['-f', '-qq', '-y', '-e', `trace=${TRACED}`, '-o', recordLog, process.execPath, BIN, 'compaction', ...sc.args], { encoding: 'utf8', env: env(recordHome) })
      assert.equal(clean.status, 0, clean.stderr)
      const end = bytes(patchOf(recordHome))
      assert.notEqual(end, old)
      const blockAtEnd = end !== null && end.includes('# >>> dsh-fold compaction')
      assert.equal(hasRecord(recordHome), blockAtEnd)
      const calls = syscalls(readFileSync(recordLog, 'utf8'))
      const main = calls[0].pid
      const points = calls.filter((c) => c.pid === main && KILL_AT.has(c.name) && c.line.includes(profileDir(recordHome)))
      assert.ok(points.length >= 4, `too few kill points:\n${points.map((p) => p.line).join('\n')}`)

      const seen = new Set()
      for (const point of points) {
        const dshHome = home()
        sc.setup(dshHome)
        const log = path.join(tmp, `kill-${copies}.txt`)
        const killed = spawnSync('strace', ['-f', '-qq', '-y', '-e', `trace=${TRACED}`, '-e', `inject=${point.name}:signal=KILL:when=${point.n}`, '-o', log, process.execPath, BIN, 'compaction', ...sc.args], { encoding: 'utf8', env: env(dshHome) })
        const what = `killed at ${normal(point.line, recordHome)}`
        assert.ok(killed.status === null ? killed.signal === 'SIGKILL' : killed.status === 137, `${what}: the CLI was not killed (${killed.status}, ${killed.signal}): ${killed.stdout}${killed.stderr}`)
        const hit = killedCall(readFileSync(log, 'utf8'))
        assert.equal(hit && normal(hit, dshHome), normal(point.line, recordHome), what)

        const now = bytes(patchOf(dshHome))
        assert.ok(now === old || now === end, `${what}: the patch is torn:\n${now}`)
        seen.add(now === old ? 'old' : 'new')

        const next = cli(dshHome, sc.args)
        assert.equal(next.code, 0, `${what}: the next run failed: ${next.stderr}`)
        assert.equal(bytes(patchOf(dshHome)), end, what)
        assert.deepEqual(temps(dshHome), [], `${what}: temporary files left`)
        assert.equal(hasRecord(dshHome), blockAtEnd, `${what}: the install record does not match the file`)
      }
      t.diagnostic(`${points.length} kill points; the file right after a kill: ${[...seen].join(', ')}`)
    })
  }

  test('a write that fails is WRITE_FAILED (73) with the old file in place, and the next run finishes', { timeout: 600_000 }, (t) => {
    if (unavailable) return t.skip(unavailable)
    for (const [args, at, errno] of /** @type {const} */ ([
      [['enable'], /^rename\("\$HOME\/profiles\/headless\/\.cordis\.patch\.yml\.dsh-fold-new-PID", "\$HOME\/profiles\/headless\/cordis\.patch\.yml"/, 'EACCES'],
      [['enable'], /^pwrite64\(FD<\$HOME\/profiles\/headless\/\.cordis\.patch\.yml\.dsh-fold-new-PID>/, 'ENOSPC'],
      [['disable'], /^rename\("\$HOME\/profiles\/headless\/\.cordis\.patch\.yml\.dsh-fold-new-PID", "\$HOME\/profiles\/headless\/cordis\.patch\.yml"/, 'EIO'],
    ])) {
      const setup = (/** @type {string} */ d) => {
        writeFileSync(patchOf(d), USER_PATCH)
        if (args[0] === 'disable') assert.equal(cli(d, ['enable']).code, 0)
      }
      const recordHome = home()
      setup(recordHome)
      const recordLog = path.join(tmp, `record-${copies}.txt`)
      assert.equal(spawnSync('strace', ['-f', '-qq', '-y', '-e', `trace=${TRACED}`, '-o', recordLog, process.execPath, BIN, 'compaction', ...args], { env: env(recordHome) }).status, 0)
      const calls = syscalls(readFileSync(recordLog, 'utf8'))
      const point = calls.find((c) => c.pid === calls[0].pid && at.test(normal(c.line, recordHome)))
      assert.ok(point, `no call matches ${at}`)
      const dshHome = home()
      setup(dshHome)
      const old = bytes(patchOf(dshHome))
      const r = spawnSync('strace', ['-f', '-qq', '-e', `trace=${point.name}`, '-e', `inject=${point.name}:error=${errno}:when=${point.n}`, '-o', '/dev/null', process.execPath, BIN, 'compaction', ...args], { encoding: 'utf8', env: env(dshHome) })
      assert.equal(r.status, 73, `${args[0]} with ${errno} at ${at}: ${r.stdout}${r.stderr}`)
      assert.match(r.stderr, new RegExp(`^dsh-fold: WRITE_FAILED: .*${errno}`))
      assert.equal(bytes(patchOf(dshHome)), old, 'the old file is in place')
      assert.deepEqual(temps(dshHome), [])
      const next = cli(dshHome, args)
      assert.equal(next.code, 0, next.stderr)
      assert.deepEqual(temps(dshHome), [])
    }
  })

  test('a temporary file of a dead dsh-fold is deleted by the next run; one of a running process is left alone', { timeout: 120_000 }, (t) => {
    if (unavailable) return t.skip(unavailable)
    const dshHome = home()
    const dead = path.join(profileDir(dshHome), '.cordis.patch.yml.dsh-fold-new-999999999')
    const live = path.join(profileDir(dshHome), `.cordis.patch.yml.dsh-fold-new-${process.pid}`)
    writeFileSync(dead, 'half written')
    writeFileSync(live, 'being written')
    const r = cli(dshHome, ['enable'])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^finished an interrupted run: deleted \.cordis\.patch\.yml\.dsh-fold-new-999999999, left by an interrupted run\n/)
    assert.deepEqual(temps(dshHome), [path.basename(live)])
  })
})
