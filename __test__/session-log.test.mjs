/**
 * Reading DSH session logs as the host reads them (issue 22, item 9): `bin/session-log.mjs`,
 * the one reader of `dsh-fold fold` and `economics`, against logs written by the real DSH
 * persistence backend (the CLI fixture, zstd and JSONL, and the log the real headless host
 * persisted in the e2e recall scenario), damaged the ways a crash and a disk damage them.
 *
 * The oracle is DSH itself: `@deepseek-ai/dsh-session-persistence-jsonl`'s own `readPrefix`
 * (from the pinned host, on its Node 22) reads every damaged file too, and the two must agree —
 * the same events when the host would open the log (a torn last line or frame: the committed
 * prefix), a refusal when it would refuse (damage before a completed turn, a bad frame).
 */
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { decodeStorageRecord, SESSION_FORMAT_VERSION } from '@deepseek-ai/dsh-session'

import { addon } from '../plugin/shared/addon.js'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const CLI_LOG = path.join(ROOT, '__test__', 'fixtures', 'cli', 'session.jsonl')
const CLI_ZSTD = path.join(ROOT, '__test__', 'fixtures', 'cli', 'session.jsonl.zstd')
const HOST_ZSTD = path.join(ROOT, '__test__', 'fixtures', 'economics', 'e2e-recall.session.jsonl.zstd')
/** What Rust's Debug output looks like; an error a user reads must never contain it. */
const DEBUG_TEXT = /Error \{|kind: |BlockContentReadError|BadMagicNumber|UnexpectedEof|\w+Error\(/

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd])
/** The oracle needs the pinned host (Node 22 and DSH's persistence backend), which the e2e step installs. */
const ORACLE_SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the oracle is the pinned DSH host\'s own reader' : false

/** Byte offsets of every zstd frame start (the magic at a frame boundary) of a real log. @param {Buffer} b */
function frameStarts(b) {
  const out = []
  for (let i = b.indexOf(ZSTD_MAGIC); i >= 0; i = b.indexOf(ZSTD_MAGIC, i + 1)) out.push(i)
  return out
}

/** The damaged logs: [name, bytes]. Every one is derived from a log DSH itself wrote. */
function damagedLogs() {
  const jsonl = readFileSync(CLI_LOG, 'utf8')
  const lines = jsonl.split('\n').filter((l) => l !== '')
  const hostText = addon.decodeZstd(readFileSync(HOST_ZSTD)).toString('utf8')
  const hostLines = hostText.split('\n').filter((l) => l !== '')
  const zstd = readFileSync(CLI_ZSTD)
  const starts = frameStarts(zstd)
  const lastFrame = starts.at(-1)
  /** @type {Array<[string, Buffer | string]>} */
  const logs = [
    ['intact.jsonl', jsonl],
    ['intact.jsonl.zstd', zstd],
    // A crash mid-append: the last line has no newline, cut anywhere in it.
    ['torn-last-line.jsonl', jsonl.slice(0, jsonl.length - Math.floor(lines.at(-1).length / 2) - 1)],
    ['torn-last-line-at-newline.jsonl', jsonl.slice(0, -1)],
    // The host's log: its last line is the turn/end, cut.
    ['host-torn-turn-end.jsonl', `${hostLines.slice(0, -1).join('\n')}\n${hostLines.at(-1).slice(0, 20)}`],
    // A damaged complete line with no completed turn after it: DSH drops it and what follows.
    ['damaged-tail-line.jsonl', `${[...lines.slice(0, -3), lines.at(-3).slice(0, 30), ...lines.slice(-2)].join('\n')}\n`],
    // Damage before the turn that completed: refused.
    ['damaged-middle-line.jsonl', `${[...hostLines.slice(0, 40), '{"type":"tool/res', ...hostLines.slice(41)].join('\n')}\n`],
    ['seq-gap-middle.jsonl', `${[...hostLines.slice(0, 40), ...hostLines.slice(41)].join('\n')}\n`],
    ['blank-line-middle.jsonl', `${[...hostLines.slice(0, 40), '', ...hostLines.slice(40)].join('\n')}\n`],
    // A crash mid-frame: the last zstd frame cut, at several points.
    ['torn-last-frame.jsonl.zstd', zstd.subarray(0, zstd.length - 40)],
    ['torn-frame-header.jsonl.zstd', zstd.subarray(0, lastFrame + 6)],
    ['torn-frame-magic.jsonl.zstd', zstd.subarray(0, lastFrame + 2)],
    ['torn-host-frame.jsonl.zstd', readFileSync(HOST_ZSTD).subarray(0, readFileSync(HOST_ZSTD).length - 7)],
    // Damage inside a complete frame (a flipped payload byte: the checksum fails), and garbage after the frames.
    ['flipped-byte.jsonl.zstd', Buffer.concat([zstd.subarray(0, starts[2] + 20), Buffer.from([zstd[starts[2] + 20] ^ 0xff]), zstd.subarray(starts[2] + 21)])],
    ['garbage-after.jsonl.zstd', Buffer.concat([zstd, Buffer.from('this is not zstd at all')])],
    // Not a log: a plain JSONL named .zstd, nothing at all, a header line cut.
    ['plain-named.jsonl.zstd', jsonl],
    ['empty.jsonl', ''],
    ['empty.jsonl.zstd', Buffer.alloc(0)],
    ['torn-header.jsonl', lines[0].slice(0, 40)],
  ]
  return logs
}

describe('session logs read as the host reads them', () => {
  /** @type {string} */
  let dir
  /** @type {Record<string, {events?: number, error?: string}>} */
  let oracle
  /** @type {typeof import('../bin/session-log.mjs')} */
  let reader
  before(async () => {
    reader = await import('../bin/session-log.mjs')
    dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-logs-'))
    for (const [name, bytes] of damagedLogs()) writeFileSync(path.join(dir, name), bytes)
    if (ORACLE_SKIP) return
    // DSH's own reader, on the pinned host's Node 22.
    const { ensureHost } = await import('./e2e/harness/install.mjs')
    const { node22, hostDir } = ensureHost()
    const pkg = pathToFileURL(path.join(hostDir, 'node_modules', '@deepseek-ai', 'dsh-session-persistence-jsonl', 'lib', 'index.js')).href
    const script = path.join(dir, 'oracle.mjs')
    writeFileSync(script, `
import { readFileSync } from 'node:fs'
const { JsonlSessionPersistence } = await import(${JSON.stringify(pkg)})
const out = {}
for (const file of process.argv.slice(2)) {
  const buffer = readFileSync(file)
  const self = Object.assign(Object.create(JsonlSessionPersistence.prototype), {
    compression: file.endsWith('.zstd') ? 'zstd' : 'none',
    readStableFile: async () => ({ buffer, revision: 0 }),
    assertStoredIdentity: async () => {},
  })
  try { out[file.split('/').pop()] = { events: (await self.readPrefix(file)).events.length } }
  catch (e) { out[file.split('/').pop()] = { error: e.message } }
}
process.stdout.write(JSON.stringify(out))
`)
    oracle = JSON.parse(execFileSync(node22, [script, ...damagedLogs().map(([n]) => path.join(dir, n))], { encoding: 'utf8' }))
  }, { timeout: 600_000 })
  after(() => rmSync(dir, { recursive: true, force: true }))

  const read = (/** @type {string} */ name) => reader.readSessionLog(path.join(dir, name), { decodeStorageRecord, formatVersion: SESSION_FORMAT_VERSION })

  test('the oracle sees what each damage means: intact, a torn tail, or a refusal', { skip: ORACLE_SKIP }, () => {
    assert.ok(oracle['intact.jsonl'].events > 50)
    assert.equal(oracle['intact.jsonl.zstd'].events, oracle['intact.jsonl'].events)
    for (const name of ['torn-last-line.jsonl', 'torn-last-frame.jsonl.zstd', 'damaged-tail-line.jsonl', 'host-torn-turn-end.jsonl']) {
      assert.ok(oracle[name].events > 0, `${name}: ${JSON.stringify(oracle[name])}`)
    }
    for (const name of ['damaged-middle-line.jsonl', 'seq-gap-middle.jsonl', 'flipped-byte.jsonl.zstd', 'garbage-after.jsonl.zstd', 'plain-named.jsonl.zstd', 'empty.jsonl']) {
      assert.ok(oracle[name].error, `${name}: DSH refuses it (${JSON.stringify(oracle[name])})`)
    }
  })

  test('every log reads to the events DSH reads, or is refused where DSH refuses it', { skip: ORACLE_SKIP }, () => {
    for (const [name] of damagedLogs()) {
      const want = oracle[name]
      /** @type {any} */
      let got
      try {
        got = read(name)
      } catch (e) {
        assert.ok(e instanceof reader.LogError, `${name}: not a LogError: ${/** @type {Error} */ (e).stack}`)
        assert.ok(want.error, `${name}: we refuse (${/** @type {Error} */ (e).message}) where DSH reads ${want.events} events`)
        continue
      }
      assert.ok(!want.error, `${name}: we read ${got.events.length} events where DSH refuses: ${want.error}`)
      assert.equal(got.events.length, want.events, `${name}: events`)
    }
  })

  test('a torn tail reads to the last complete record with one warning line; an intact log has none', () => {
    assert.equal(read('intact.jsonl').warning, null)
    assert.equal(read('intact.jsonl.zstd').warning, null)
    for (const [name, pattern] of [
      ['torn-last-line.jsonl', /torn-last-line\.jsonl: line \d+ is torn \(no newline: what a crash mid-write leaves\); read the \d+ complete events before it/],
      ['torn-last-line-at-newline.jsonl', /line \d+ is torn/],
      ['damaged-tail-line.jsonl', /line \d+ is not a valid event record and no completed turn follows it \(an unfinished write\); read the \d+ complete events before it/],
      ['torn-last-frame.jsonl.zstd', /torn-last-frame\.jsonl\.zstd: the last zstd frame \(frame \d+, byte \d+\) is incomplete \(what a crash mid-write leaves\); read the \d+ complete events before it/],
      ['torn-frame-magic.jsonl.zstd', /the last zstd frame \(frame \d+, byte \d+\) is incomplete/],
    ]) {
      const { warning } = read(/** @type {string} */ (name))
      assert.match(String(warning), /** @type {RegExp} */ (pattern), name)
      assert.ok(!String(warning).includes('\n'), `${name}: one line`)
    }
  })

  test('damage before the tail is refused naming the line or the frame, in a sentence', () => {
    for (const [name, pattern] of [
      ['damaged-middle-line.jsonl', /damaged-middle-line\.jsonl: line 41 is not a valid event record, and the completed turn at line \d+ comes after it: the log is damaged before its tail/],
      ['seq-gap-middle.jsonl', /seq-gap-middle\.jsonl: line 41 jumps from seq \d+ to seq \d+ \(events are missing\), and the completed turn at line \d+ comes after it/],
      ['blank-line-middle.jsonl', /line 41 is not a valid event record/],
      ['flipped-byte.jsonl.zstd', /flipped-byte\.jsonl\.zstd: zstd frame 2 \(byte \d+\) is damaged: /],
      ['garbage-after.jsonl.zstd', /garbage-after\.jsonl\.zstd: byte \d+ is not the start of a zstd frame \(after frame \d+; it holds 'this is not zstd'\)/],
      ['plain-named.jsonl.zstd', /plain-named\.jsonl\.zstd is not zstd-compressed \(it starts with '\{"type":"session'\): a plain session\.jsonl named \.zstd\? Rename it to \.jsonl/],
      ['empty.jsonl', /empty\.jsonl is empty/],
      ['empty.jsonl.zstd', /empty\.jsonl\.zstd is empty/],
      ['torn-header.jsonl', /torn-header\.jsonl: its first line \(the session header\) is incomplete/],
    ]) {
      assert.throws(() => read(/** @type {string} */ (name)), (/** @type {any} */ e) => {
        assert.ok(e instanceof reader.LogError, String(e))
        assert.match(e.message, /** @type {RegExp} */ (pattern), name)
        assert.ok(!DEBUG_TEXT.test(e.message), `${name}: debug output in "${e.message}"`)
        assert.equal(e.code, 'LOG_CORRUPT')
        return true
      })
    }
  })

  test('the addon\'s zstd errors are sentences, never Rust debug output', () => {
    for (const [name] of damagedLogs().filter(([n]) => n.endsWith('.zstd'))) {
      try {
        addon.decodeZstd(readFileSync(path.join(dir, name)))
      } catch (e) {
        assert.ok(!DEBUG_TEXT.test(/** @type {Error} */ (e).message), `${name}: ${/** @type {Error} */ (e).message}`)
      }
    }
  })

  test('dsh-fold fold: a torn log folds with the warning on stderr (exit 0); damage before the tail exits 65 naming the line', () => {
    const torn = spawnSync(process.execPath, [BIN, 'fold', path.join(dir, 'torn-last-frame.jsonl.zstd'), '--anchor', '0', '--json'], { encoding: 'utf8' })
    assert.equal(torn.status, 0, torn.stderr)
    assert.match(torn.stderr, /^dsh-fold: warning: .*torn-last-frame\.jsonl\.zstd: the last zstd frame .* is incomplete/)
    assert.equal(torn.stderr.trim().split('\n').length, 1)
    JSON.parse(torn.stdout)
    const bad = spawnSync(process.execPath, [BIN, 'fold', path.join(dir, 'damaged-middle-line.jsonl'), '--anchor', '0'], { encoding: 'utf8' })
    assert.equal(bad.status, 65)
    assert.match(bad.stderr, /^dsh-fold: .*damaged-middle-line\.jsonl: line 41 is not a valid event record/)
    const eco = spawnSync(process.execPath, [BIN, 'economics', path.join(dir, 'host-torn-turn-end.jsonl')], { encoding: 'utf8' })
    assert.match(eco.stderr, /^dsh-fold: warning: .*host-torn-turn-end\.jsonl: line 86 is torn/)
  })

  test('dsh-fold fold on a log torn before any exploration after the mark says what the readable part holds and why nothing folds (EMPTY_REGION, exit 1); it names no rewind call', () => {
    const lines = readFileSync(CLI_LOG, 'utf8').split('\n').filter((l) => l !== '')
    const records = lines.map((l) => JSON.parse(l))
    const text = (/** @type {any} */ r) => JSON.stringify(r.data?.message?.content ?? '')
    // The checkpoint's own result, and the model's next step (its calls' results torn off).
    const checkpointResult = records.findIndex((r) => r.type === 'tool/result' && /\\"logLength\\"/.test(text(r)))
    const nextStep = records.findIndex((r, i) => i > checkpointResult && r.type === 'assistant/message')
    assert.ok(checkpointResult > 0 && nextStep > checkpointResult)
    const home = path.join(dir, 'no-store-home')
    for (const [name, keep, holds, why] of [
      ['torn-after-checkpoint.jsonl', checkpointResult + 1, /holds after the mark only the checkpoint call's own result \(seq \d+\); /, /the checkpoint's call and result stay visible/],
      ['torn-mid-step.jsonl', nextStep + 1, /holds after the mark only the checkpoint call's own result \(seq \d+\) and the model's step at seq \d+, whose 2 tool calls have no result; /, /a step still waiting for its results is never folded/],
    ]) {
      const file = path.join(dir, String(name))
      writeFileSync(file, `${lines.slice(0, Number(keep)).join('\n')}\n${lines[Number(keep)].slice(0, 20)}`)
      const r = spawnSync(process.execPath, [BIN, 'fold', file], { encoding: 'utf8', env: { ...process.env, DSH_HOME: home } })
      assert.equal(r.status, 1, r.stderr)
      const [warning, error, ...rest] = r.stderr.trim().split('\n')
      assert.match(warning, /^dsh-fold: warning: .* is torn/)
      assert.deepEqual(rest, [], r.stderr)
      assert.match(error, /^dsh-fold: EMPTY_REGION: nothing to fold after checkpoint mark \d+ \(log length \d+, read from the log's checkpoint call\): /)
      assert.match(error, /the readable part \(seq 0\.\.\d+; the torn tail after it is dropped\)/)
      assert.match(error, /** @type {RegExp} */ (holds))
      assert.match(error, /** @type {RegExp} */ (why))
      assert.doesNotMatch(error, /rewind call/, 'a dry run has no rewind call')
      assert.equal(r.stdout, '')
    }
  })
})
