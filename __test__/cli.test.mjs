/**
 * The `dsh-fold` command, run as a real process (`node bin/dsh-fold.mjs ...`).
 *
 * Fixtures (`__test__/fixtures/cli/`, written by the REAL `@deepseek-ai/dsh-session-persistence-jsonl`
 * backend and the REAL checkpoint store, see `generate.mjs` there): one agent turn persisted as
 * `session.jsonl.zstd` (several zstd frames, packed chunk rows) and as `session.jsonl`, the store
 * `checkpoint.json` marked mid-call by the checkpoint call, and bad logs/stores under `bad/`.
 * `expected.json` records what the generator put in.
 *
 * Every test runs on its own copy of the fixtures (mtimes set far in the past) and checks after
 * each run that no file was written, touched, created or removed: the command never writes.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { addon } from '../plugin/shared/addon.js'
import { reportBody } from '../plugin/fold/words.js'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const FIXTURES = path.join(ROOT, '__test__', 'fixtures', 'cli')

/** What the generator recorded. */
const EXPECTED = JSON.parse(readFileSync(path.join(FIXTURES, 'expected.json'), 'utf8'))
const SESSION = EXPECTED.sessionId
const MARK = EXPECTED.mark
const EN = ['## Findings', '## Files and Artifacts', '## Decisions', '## Unresolved Questions', '## Recommended Next Step']
const ZH = ['## 发现', '## 文件与产物', '## 决策', '## 未解决的问题', '## 建议的下一步']
const FIXTURE_FILES = [
  'session.jsonl.zstd',
  'session.jsonl',
  'checkpoint.json',
  'bad/truncated.jsonl.zstd',
  'bad/version99.jsonl',
  'bad/corrupt-line.jsonl',
  'bad/empty.jsonl',
  'bad/corrupt-store.json',
]
const PAST = new Date('2020-01-02T03:04:05Z')

/**
 * @typedef {{code: number | null, signal: string | null, stdout: string, stderr: string}} Run
 */

/** Runs the command. `env` adds to the environment (DSH_HOME defaults to an empty temp dir). */
function cli(/** @type {string[]} */ args, /** @type {Record<string, string>} */ env = {}) {
  return /** @type {Promise<Run>} */ (
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
      // A net for a command that hangs, not a time limit: under load (2 cores shared by several
      // runs) a command starting with DSH's packages took over 20 s.
      const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
      child.on('error', reject)
      child.on('close', (code, signal) => {
        clearTimeout(timer)
        resolve({ code, signal, stdout, stderr })
      })
    })
  )
}

/** Every file and folder under `dir`: bytes (hash), size, mode and mtime. */
function snapshot(/** @type {string} */ dir) {
  /** @type {Record<string, string>} */
  const out = {}
  for (const rel of readdirSync(dir, { recursive: true }).map(String).sort()) {
    const file = path.join(dir, rel)
    const st = statSync(file)
    out[rel] = st.isDirectory()
      ? `dir ${st.mode}`
      : `${createHash('sha256').update(readFileSync(file)).digest('hex')} ${st.size} ${st.mode} ${st.mtimeMs}`
  }
  return out
}

/**
 * A private copy of the fixtures: `ws.file(rel)` is a path in it; `ws.run(args)` runs the
 * command with DSH_HOME = `ws.home` (an empty profile unless a test fills it) and asserts that
 * nothing under the workspace changed.
 * @param {import('node:test').TestContext} t
 */
function workspace(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-cli-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const home = path.join(dir, 'home')
  mkdirSync(home)
  for (const rel of FIXTURE_FILES) {
    const to = path.join(dir, rel)
    mkdirSync(path.dirname(to), { recursive: true })
    cpSync(path.join(FIXTURES, rel), to)
  }
  const ws = {
    dir,
    home,
    file: (/** @type {string} */ rel) => path.join(dir, rel),
    /** Writes a file of the workspace, dated in the past like the fixtures. */
    write(/** @type {string} */ rel, /** @type {string | Buffer} */ data) {
      mkdirSync(path.dirname(ws.file(rel)), { recursive: true })
      writeFileSync(ws.file(rel), data)
      ws.age()
    },
    /** Dates every file and folder in the past, so a write (or a touch) shows in the mtime. */
    age() {
      for (const rel of readdirSync(dir, { recursive: true }).map(String)) utimesSync(path.join(dir, rel), PAST, PAST)
      utimesSync(dir, PAST, PAST)
    },
    /** @param {string[]} args @param {Record<string, string>} [env] */
    async run(args, env = {}) {
      const before = snapshot(dir)
      const r = await cli(args, { DSH_HOME: home, ...env })
      assert.deepEqual(snapshot(dir), before, `dsh-fold ${args.join(' ')} changed files under ${dir}`)
      assert.equal(r.signal, null, `killed by ${r.signal}: ${r.stderr}`)
      return r
    },
    /** Runs and expects `code`; returns the run. @param {string[]} args @param {number} code @param {Record<string, string>} [env] */
    async expect(args, code, env) {
      const r = await ws.run(args, env)
      assert.equal(r.code, code, `dsh-fold ${args.join(' ')} exited ${r.code}, expected ${code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`)
      return r
    },
    /** Runs with --json, expects exit 0, parses stdout. @param {string[]} args */
    async json(args) {
      return JSON.parse((await ws.expect([...args, '--json'], 0)).stdout)
    },
  }
  ws.age()
  return ws
}

/** The storage rows of a persisted log (header first), from its decoded text. */
const rowsOf = (/** @type {string} */ text) =>
  text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))

/** The plain-JSONL fixture's events by seq (none of the region's message events is packed). */
function plainEvents() {
  const [, ...rows] = rowsOf(readFileSync(path.join(FIXTURES, 'session.jsonl'), 'utf8'))
  return new Map(rows.filter((r) => typeof r.seq === 'number').map((r) => [r.seq, r]))
}

/** The region a fold from the fixture mark selects: the exploration between the checkpoint pair and the rewind step. */
function expectedRegion() {
  const events = plainEvents()
  const rewindStep = EXPECTED.nodes.find((/** @type {number} */ s) =>
    events.get(s)?.data?.message?.content?.some((/** @type {any} */ b) => b.type === 'tool-call' && b.name === 'rewind'),
  )
  const checkpointResult = EXPECTED.nodes.find((/** @type {number} */ s) => events.get(s)?.data?.message?.source?.callId === 'call_ckpt')
  const seqs = EXPECTED.nodes.filter((/** @type {number} */ s) => s > checkpointResult && s < rewindStep)
  // Model-visible chars, counted here from the raw log lines: text, tool-call arguments, tool outputs.
  let chars = 0
  /** @type {any[]} */
  const calls = []
  /** @type {any[]} */
  const outputs = []
  for (const s of seqs) {
    const e = events.get(s)
    for (const block of e.data.message.content) {
      if (block.type === 'text') chars += block.text.length
      if (block.type === 'tool-call') {
        chars += block.arguments.length
        calls.push({ name: block.name, args: JSON.parse(block.arguments) })
      }
      if (block.type === 'tool-result') {
        for (const c of block.content) chars += c.text.length
        outputs.push({ isError: block.isError, text: block.content.map((/** @type {any} */ c) => c.text).join('\n') })
      }
    }
  }
  return { seqs, chars, calls, outputs }
}

const FOLD_FIELDS = ['sessionId', 'markId', 'anchor', 'foldedNodes', 'start', 'end', 'foldedChars', 'reportChars', 'charsSaved', 'report']
const pick = (/** @type {any} */ o) => Object.fromEntries(FOLD_FIELDS.map((k) => [k, o[k]]))

describe('dsh-fold', { concurrency: Math.max(2, Math.min(6, availableParallelism() * 2)) }, () => {
  describe('the fixtures', () => {
    test('are a real persisted session: multi-frame zstd with packed chunk rows, the same log as the .jsonl, a mid-call mark', () => {
      const zbytes = readFileSync(path.join(FIXTURES, 'session.jsonl.zstd'))
      let frames = 0
      for (let i = zbytes.indexOf(Buffer.from([0x28, 0xb5, 0x2f, 0xfd])); i >= 0; i = zbytes.indexOf(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), i + 1)) frames++
      assert.ok(frames >= 4, `expected a header frame plus one frame per append batch, found ${frames} zstd magic numbers`)
      const zrows = rowsOf(addon.decodeZstd(zbytes).toString('utf8'))
      const prows = rowsOf(readFileSync(path.join(FIXTURES, 'session.jsonl'), 'utf8'))
      assert.deepEqual(
        zrows.map((r) => `${r.type}@${r.seq ?? r.seq0}`),
        prows.map((r) => `${r.type}@${r.seq ?? r.seq0}`),
        'both files hold the same rows',
      )
      const types = new Set(zrows.map((r) => r.type))
      for (const t of ['session', 'text-chunks', 'tool-call-chunks', 'assistant/chunk', 'assistant/message', 'tool/call', 'tool/result']) assert.ok(types.has(t), `no ${t} row`)
      assert.equal(zrows[0].id, SESSION)
      assert.equal(zrows[0].version, 0)
      const all = plainEvents()
      // The checkpoint tool marks between its own tool/call and tool/result; its result is the mark.
      assert.equal(all.get(MARK.logLength - 1).type, 'tool/call')
      assert.equal(all.get(MARK.logLength - 1).data.name, 'checkpoint')
      const ckptResult = all.get(MARK.logLength)
      assert.equal(ckptResult.data.message.source.callId, 'call_ckpt')
      assert.deepEqual(JSON.parse(ckptResult.data.message.content[0].content[0].text), { id: MARK.id, logLength: MARK.logLength })
      // The rewind call is open: logged, never answered.
      const last = prows.at(-1)
      assert.equal(last.type, 'tool/call')
      assert.equal(last.data.name, 'rewind')
      const store = JSON.parse(readFileSync(path.join(FIXTURES, 'checkpoint.json'), 'utf8'))
      assert.deepEqual(store.unit, { name: 'checkpoint', version: 1 })
      const mark = store.tables.marks[String(MARK.id)]
      assert.equal(mark.sessionId, SESSION)
      assert.equal(mark.logLength, MARK.logLength)
      assert.equal(mark.objective, EXPECTED.objective)
      assert.equal(mark.foldedAt, null)
      const objective = JSON.parse(all.get(MARK.logLength - 1).data.arguments).objective
      assert.equal(objective, mark.objective, 'the mark carries the checkpoint call objective')
      for (const rel of FIXTURE_FILES) assert.ok(statSync(path.join(FIXTURES, rel)).size <= 16_384, `${rel} is small`)
    })
  })

  describe('usage', () => {
    test('--help, -h and `help` print the usage and exit 0', async (t) => {
      const ws = workspace(t)
      // `VERB --help` prints that subcommand's usage only (cli-conventions.test.mjs).
      for (const args of [['--help'], ['-h'], ['help']]) {
        const r = await ws.expect(args, 0)
        assert.match(r.stdout, /^Usage: dsh-fold <subcommand>/)
        assert.match(r.stdout, /Usage:/)
        for (const verb of ['dsh-fold demo', 'dsh-fold marks', 'dsh-fold fold FILE']) assert.ok(r.stdout.includes(verb), `${args}: no ${verb}`)
        assert.match(r.stdout, /64 bad usage/)
        assert.equal(r.stderr, '')
      }
    })

    test('an unknown verb, no verb, an unknown option or a missing value exit 64', async (t) => {
      const ws = workspace(t)
      const cases = [
        [['frobnicate'], /unknown command frobnicate[\s\S]*Usage:/],
        [[], /Usage:/],
        [['marks', '--bogus'], /unknown option --bogus/],
        [['fold', ws.file('session.jsonl'), '--anchor=3'], /unknown option --anchor=3/],
        [['marks', '--store'], /--store needs a value/],
        [['marks', '--session'], /--session needs a value/],
        [['fold', ws.file('session.jsonl'), '--anchor'], /--anchor needs a value/],
        [['demo', '--lang'], /--lang needs a value/],
        [['demo', '--lang', 'fr'], /--lang must be en or zh/],
        [['fold'], /fold needs a FILE/],
      ]
      for (const [args, message] of cases) {
        const r = await ws.expect(/** @type {string[]} */ (args), 64)
        assert.match(r.stderr, /** @type {RegExp} */ (message))
        assert.match(r.stderr, /^dsh-fold: /)
      }
    })

    test('an --anchor that is not a decimal integer in the engine range exits 64 (never read as 0)', async (t) => {
      const ws = workspace(t)
      for (const anchor of ['', '-1', '1e1', '0x10', ' 5', '2.5', 'abc', '4294967295', '99999999999']) {
        const r = await ws.expect(['fold', ws.file('session.jsonl'), '--anchor', anchor], 64)
        assert.match(r.stderr, /--anchor must be an integer from 0 to 4294967294/, `--anchor ${JSON.stringify(anchor)}`)
      }
    })
  })

  describe('demo', () => {
    test('shows before/after and the report with its sections', async (t) => {
      const ws = workspace(t)
      const r = await ws.expect(['demo'], 0)
      const before = r.stdout.match(/before the fold: (\d+) surface nodes, (\d+) model-visible chars/)
      const after = r.stdout.match(/after the fold: +(\d+) surface nodes, (\d+) model-visible chars \((\d+)% less\)/)
      assert.ok(before && after, r.stdout)
      assert.ok(Number(before[1]) > Number(after[1]))
      assert.ok(Number(before[2]) > Number(after[2]))
      assert.match(r.stdout, /folded \d+ nodes \(seq \d+\.\.\d+, \d+ chars\) into a \d+-char extractive report in [\d.]+ ms; mark \d+ folded/)
      assert.match(r.stdout, /--- the report the model now sees instead of the exploration ---/)
      let at = -1
      for (const h of EN) {
        const i = r.stdout.indexOf(`\n${h}\n`)
        assert.ok(i > at, `section ${h} missing or out of order`)
        at = i
      }
      assert.equal(r.stderr, '')
    })

    test('--json: the fold shrinks the history and the report is shorter than the region', async (t) => {
      const ws = workspace(t)
      const out = await ws.json(['demo'])
      assert.ok(out.before.chars > out.after.chars, JSON.stringify(out))
      assert.ok(out.before.nodes > out.after.nodes)
      assert.ok(out.result.reportChars < out.result.foldedChars, JSON.stringify(out.result))
      assert.ok(out.result.foldedNodes > 0)
      // The model reads the report in its frame; reportChars counts the report alone.
      assert.equal(out.result.reportChars, reportBody(out.report).length)
      assert.ok(out.report.startsWith('[Checkpoint 1 — find why cargo test -p parser fails] A report extracted'), out.report.slice(0, 120))
      assert.equal(typeof out.foldMs, 'number')
      for (const h of EN) assert.ok(out.report.includes(h), `no ${h}`)
      // The surface lost the folded nodes and gained the report.
      assert.equal(out.after.nodes, out.before.nodes - out.result.foldedNodes + 1)
    })

    test('--lang zh writes the report with the Chinese section names', async (t) => {
      const ws = workspace(t)
      const out = await ws.json(['demo', '--lang', 'zh'])
      for (const h of ZH) assert.ok(out.report.includes(`${h}\n`), `no ${h}`)
      for (const h of EN) assert.ok(!out.report.includes(h), `English ${h} in the zh report`)
    })
  })

  describe('marks', () => {
    test('lists every mark, newest first: id, active/folded, session, logLength, age, objective', async (t) => {
      const ws = workspace(t)
      const r = await ws.expect(['marks', '--store', ws.file('checkpoint.json')], 0)
      const lines = r.stdout.trimEnd().split('\n')
      assert.equal(lines.length, 2, r.stdout)
      const [mine, other] = lines.map((l) => l.split('\t'))
      assert.deepEqual(mine.slice(0, 4), [`#${MARK.id}`, 'active', SESSION, `logLength ${MARK.logLength}`])
      assert.match(mine[4], /^\d+[smhd] ago$/)
      assert.equal(mine[5], EXPECTED.objective)
      assert.deepEqual(other.slice(0, 3), [`#${EXPECTED.otherMark.id}`, 'folded', EXPECTED.otherSessionId])
      assert.match(other[4], /^\d+[smhd] ago$/)
      assert.equal(other[5], EXPECTED.otherMark.objective)
    })

    test('--session filters; a session with no marks says so and exits 0', async (t) => {
      const ws = workspace(t)
      const store = ws.file('checkpoint.json')
      const r = await ws.expect(['marks', '--store', store, '--session', SESSION], 0)
      assert.equal(r.stdout.trimEnd().split('\n').length, 1)
      assert.ok(r.stdout.startsWith(`#${MARK.id}\tactive\t${SESSION}\t`))
      const o = await ws.expect(['marks', '--store', store, '--session', EXPECTED.otherSessionId], 0)
      assert.ok(o.stdout.startsWith(`#${EXPECTED.otherMark.id}\tfolded\t`))
      assert.ok(!o.stdout.includes(SESSION))
      const none = await ws.expect(['marks', '--store', store, '--session', 'nobody'], 0)
      assert.equal(none.stdout.trim(), `no marks for session nobody in ${store}`)
      assert.match((await ws.expect(['marks', '--store', store, '--session', ''], 64)).stderr, /--session needs a non-empty session id/)
    })

    test('--json is the store marks, newest first', async (t) => {
      const ws = workspace(t)
      const store = JSON.parse(readFileSync(ws.file('checkpoint.json'), 'utf8'))
      const want = Object.values(store.tables.marks).sort((a, b) => b.id - a.id)
      const list = await ws.json(['marks', '--store', ws.file('checkpoint.json')])
      assert.deepEqual(
        list.map((/** @type {any} */ m) => ({ ...m, objective: m.objective ?? undefined })),
        want.map((m) => ({ ...m, objective: m.objective ?? undefined })),
      )
      const one = await ws.json(['marks', '--store', ws.file('checkpoint.json'), '--session', SESSION])
      assert.deepEqual(
        one.map((/** @type {any} */ m) => m.id),
        [MARK.id],
      )
    })

    test('reads the default store under $DSH_HOME/storages', async (t) => {
      const ws = workspace(t)
      await ws.expect(['marks'], 66)
      ws.write('home/storages/checkpoint.json', readFileSync(ws.file('checkpoint.json')))
      const r = await ws.expect(['marks', '--session', SESSION], 0)
      assert.ok(r.stdout.startsWith(`#${MARK.id}\tactive\t${SESSION}\t`))
    })

    test('a missing store exits 66; a corrupt store or a folder exits 65 with the error code', async (t) => {
      const ws = workspace(t)
      const missing = await ws.expect(['marks', '--store', ws.file('nope/checkpoint.json')], 66)
      assert.match(missing.stderr, /no checkpoint store at .*nope\/checkpoint\.json/)
      const corrupt = await ws.expect(['marks', '--store', ws.file('bad/corrupt-store.json')], 65)
      assert.match(corrupt.stderr, /STORE_CORRUPT/)
      assert.match(corrupt.stderr, /corrupt-store\.json/)
      const folder = await ws.expect(['marks', '--store', ws.file('bad')], 65)
      assert.match(folder.stderr, /STORE_IO/)
      ws.write('newer.json', JSON.stringify({ unit: { name: 'checkpoint', version: 3 }, global: { nextId: 1 }, tables: { marks: {} } }))
      assert.match((await ws.expect(['marks', '--store', ws.file('newer.json')], 65)).stderr, /STORE_VERSION/)
    })
  })

  describe('fold', () => {
    test('the .zstd and the .jsonl give the same region and report, from the session mark', async (t) => {
      const ws = workspace(t)
      const store = ws.file('checkpoint.json')
      const z = await ws.json(['fold', ws.file('session.jsonl.zstd'), '--store', store])
      const j = await ws.json(['fold', ws.file('session.jsonl'), '--store', store])
      assert.deepEqual(pick(z), pick(j))
      const region = expectedRegion()
      assert.deepEqual(
        { sessionId: z.sessionId, markId: z.markId, anchor: z.anchor, foldedNodes: z.foldedNodes, start: z.start, end: z.end, foldedChars: z.foldedChars },
        { sessionId: SESSION, markId: MARK.id, anchor: MARK.logLength, foldedNodes: region.seqs.length, start: region.seqs[0], end: region.seqs.at(-1), foldedChars: region.chars },
      )
      assert.equal(z.reportChars, z.report.length)
      assert.ok(z.reportChars < z.foldedChars)
      assert.equal(z.charsSaved, z.foldedChars - z.reportChars)
      for (const h of EN) assert.ok(z.report.includes(`${h}\n`), `no ${h}`)
      // The retention figures of the fold it dry-runs, graded by bin/report-facts.mjs.
      assert.equal(z.reportRatio, z.reportChars / z.foldedChars)
      for (const kind of ['paths', 'commands', 'errors']) {
        const k = z.retention[kind]
        assert.ok(Number.isInteger(k.kept) && k.kept <= k.total && k.total > 0, `${kind}: ${JSON.stringify(k)}`)
      }
      assert.deepEqual(z.retention, j.retention)
      const text = await ws.run(['fold', ws.file('session.jsonl'), '--store', store])
      assert.match(text.stdout, /the report keeps paths \d+\/\d+, commands \d+\/\d+, error lines \d+\/\d+ of the region's/)
    })

    test('--anchor N: both files agree, with no store at all; the mark anchor gives the mark region', async (t) => {
      const ws = workspace(t)
      const viaMark = await ws.json(['fold', ws.file('session.jsonl'), '--store', ws.file('checkpoint.json')])
      for (const anchor of [0, MARK.logLength]) {
        const z = await ws.json(['fold', ws.file('session.jsonl.zstd'), '--anchor', String(anchor)])
        const j = await ws.json(['fold', ws.file('session.jsonl'), '--anchor', String(anchor)])
        assert.deepEqual(pick(z), pick(j), `anchor ${anchor}`)
        assert.equal(z.anchor, anchor)
        assert.equal(z.markId, null)
        if (anchor === MARK.logLength) assert.deepEqual({ ...pick(z), markId: MARK.id }, pick(viaMark))
        if (anchor === 0) {
          assert.equal(z.start, EXPECTED.nodes[0], 'anchor 0 folds from the first surface node')
          assert.ok(z.foldedNodes > viaMark.foldedNodes)
        }
      }
    })

    test('the report holds every path, command and error line of the region, verbatim', async (t) => {
      const ws = workspace(t)
      const out = await ws.json(['fold', ws.file('session.jsonl.zstd'), '--store', ws.file('checkpoint.json')])
      const region = expectedRegion()
      // Read mechanically from the region's own calls and outputs, then checked against the generator's list.
      const paths = [...new Set(region.calls.map((c) => c.args.path).filter(Boolean))]
      const commands = region.calls.map((c) => c.args.command).filter(Boolean)
      const errorLines = region.outputs.filter((o) => o.isError).flatMap((o) => o.text.split('\n').filter((l) => /\b(error|FAILED|panicked)\b/.test(l)))
      const outputPaths = region.outputs.flatMap((o) => [...o.text.matchAll(/^(crates\/[\w/.-]+\.rs):\d+:/gm)].map((m) => m[1]))
      assert.deepEqual([...new Set([...paths, ...outputPaths])].sort(), [...EXPECTED.paths].sort())
      assert.deepEqual(commands, EXPECTED.commands)
      assert.deepEqual(errorLines, EXPECTED.errorLines)
      for (const p of [...paths, ...outputPaths]) assert.ok(out.report.includes(p), `report lacks path ${p}`)
      for (const c of commands) assert.ok(out.report.includes(c), `report lacks command ${c}`)
      for (const l of errorLines) assert.ok(out.report.split('\n').some((line) => line.trim() === `- ${l}`), `report lacks error line ${l}`)
      const files = out.report.slice(out.report.indexOf('## Files and Artifacts'), out.report.indexOf('## Decisions'))
      for (const p of paths) assert.ok(files.includes(`\`${p}\``), `Files and Artifacts lacks ${p}`)
      // The checkpoint pair and the rewind step stay outside the fold.
      assert.ok(!out.report.includes(EXPECTED.objective), 'the checkpoint call is not folded')
      assert.ok(!out.report.includes('is_xid_start'), 'the rewind step is not folded')
    })

    test('text output: the dry-run summary, then the report (and --lang zh)', async (t) => {
      const ws = workspace(t)
      const r = await ws.expect(['fold', ws.file('session.jsonl.zstd'), '--store', ws.file('checkpoint.json')], 0)
      const region = expectedRegion()
      assert.ok(r.stdout.startsWith(`session ${SESSION}: ${EXPECTED.events} events, ${EXPECTED.nodes.length} surface nodes; anchor ${MARK.logLength} (mark ${MARK.id})\n`), r.stdout)
      assert.match(
        r.stdout,
        new RegExp(`would fold ${region.seqs.length} nodes \\(seq ${region.seqs[0]}\\.\\.${region.seqs.at(-1)}, ${region.chars} chars\\) into a \\d+-char report \\(\\d+%\\): \\d+ chars saved \\(dry run: nothing written\\)`),
      )
      for (const h of EN) assert.ok(r.stdout.includes(`\n${h}\n`))
      const zh = await ws.json(['fold', ws.file('session.jsonl'), '--store', ws.file('checkpoint.json'), '--lang', 'zh'])
      for (const h of ZH) assert.ok(zh.report.includes(h), `no ${h}`)
      for (const l of EXPECTED.errorLines) assert.ok(zh.report.includes(l), 'the zh report copies the same lines')
    })

    test('reads the session folder (session.jsonl.zstd first, else session.jsonl); a folder with neither exits 66', async (t) => {
      const ws = workspace(t)
      const args = ['--store', ws.file('checkpoint.json')]
      const want = pick(await ws.json(['fold', ws.file('session.jsonl'), ...args]))
      ws.write('zdir/session.jsonl.zstd', readFileSync(ws.file('session.jsonl.zstd')))
      ws.write('zdir/session.jsonl', readFileSync(ws.file('bad/corrupt-line.jsonl')))
      ws.write('pdir/session.jsonl', readFileSync(ws.file('session.jsonl')))
      assert.deepEqual(pick(await ws.json(['fold', ws.file('zdir'), ...args])), want, 'the .zstd is read first')
      assert.deepEqual(pick(await ws.json(['fold', ws.file('pdir'), ...args])), want)
      ws.write('edir/notes.txt', 'nothing here')
      assert.match((await ws.expect(['fold', ws.file('edir'), ...args], 66)).stderr, /holds no session\.jsonl\.zstd or session\.jsonl/)
    })

    test('uses the default store under $DSH_HOME/storages; with no store, the log\'s own checkpoint call; a named store that is missing exits 66', async (t) => {
      const ws = workspace(t)
      const noStore = await ws.json(['fold', ws.file('session.jsonl')])
      assert.equal(noStore.markFrom, 'log')
      assert.match(noStore.notes[0], /no checkpoint store at .*home\/storages\/checkpoint\.json; using the log's latest checkpoint call/)
      ws.write('home/storages/checkpoint.json', readFileSync(ws.file('checkpoint.json')))
      const out = await ws.json(['fold', ws.file('session.jsonl.zstd')])
      assert.equal(out.markFrom, 'store')
      assert.equal(out.markId, MARK.id)
      assert.equal(out.anchor, MARK.logLength)
      assert.match((await ws.expect(['fold', ws.file('session.jsonl'), '--store', ws.file('nope.json')], 66)).stderr, /no checkpoint store at .*nope\.json/)
    })

    test('a missing file exits 66; a newer format, an empty file exit 65; a torn zstd frame or a torn line is read with a warning (session-log.test.mjs)', async (t) => {
      const ws = workspace(t)
      const store = ['--store', ws.file('checkpoint.json')]
      assert.match((await ws.expect(['fold', ws.file('nope/session.jsonl.zstd'), ...store], 66)).stderr, /no such file: .*nope\/session\.jsonl\.zstd/)
      for (const [file, message] of [
        ['bad/truncated.jsonl.zstd', /warning: .*truncated\.jsonl\.zstd: the last zstd frame \(frame \d+, byte \d+\) is incomplete/],
        ['bad/corrupt-line.jsonl', /warning: .*corrupt-line\.jsonl: line \d+ is not a valid event record and no completed turn follows it/],
      ]) {
        // Read (not refused): the dry run goes on over the complete events (the cut line leaves a
        // region too small to shrink, SHRINK, or only the user's request, which a fold leaves in
        // place, EMPTY_REGION: exit 1).
        const r = await ws.run(['fold', ws.file(/** @type {string} */ (file)), '--anchor', '0'])
        assert.ok(r.code === 0 || (r.code === 1 && /SHRINK|EMPTY_REGION/.test(r.stderr)), `${file}: exit ${r.code}: ${r.stderr}`)
        assert.match(r.stderr, /** @type {RegExp} */ (message))
      }
      const cases = [
        ['bad/version99.jsonl', /session format version 99, newer than the 0 this DSH reads/],
        ['bad/empty.jsonl', /empty\.jsonl is empty/],
      ]
      for (const [i, [file, message]] of cases.entries()) {
        // The log is refused before any store is read: with the mark's store or with --anchor.
        const how = i % 2 ? ['--anchor', '0'] : store
        const r = await ws.expect(['fold', ws.file(/** @type {string} */ (file)), ...how], 65)
        assert.match(r.stderr, /** @type {RegExp} */ (message))
        assert.equal(r.stdout, '')
      }
      // Zero bytes named .zstd, and a .zstd that is not zstd.
      ws.write('empty.jsonl.zstd', '')
      assert.match((await ws.expect(['fold', ws.file('empty.jsonl.zstd'), '--anchor', '0'], 65)).stderr, /is empty/)
      ws.write('plain.jsonl.zstd', readFileSync(ws.file('session.jsonl')))
      assert.match((await ws.expect(['fold', ws.file('plain.jsonl.zstd'), '--anchor', '0'], 65)).stderr, /is not zstd-compressed/)
      // A log that does not start with a session header.
      ws.write('headless.jsonl', readFileSync(ws.file('session.jsonl'), 'utf8').split('\n').slice(1).join('\n'))
      assert.match((await ws.expect(['fold', ws.file('headless.jsonl'), '--anchor', '0'], 65)).stderr, /does not start with a session header/)
      // A corrupt or newer store is the store's error, 65.
      assert.match((await ws.expect(['fold', ws.file('session.jsonl'), '--store', ws.file('bad/corrupt-store.json')], 65)).stderr, /STORE_CORRUPT/)
    })

    test('no mark for the session in the store exits 1 with NO_CHECKPOINT', async (t) => {
      const ws = workspace(t)
      const store = JSON.parse(readFileSync(ws.file('checkpoint.json'), 'utf8'))
      for (const id of Object.keys(store.tables.marks)) if (store.tables.marks[id].sessionId === SESSION) delete store.tables.marks[id]
      assert.equal(Object.keys(store.tables.marks).length, 1, 'the other session keeps its mark')
      ws.write('others.json', JSON.stringify(store))
      const r = await ws.expect(['fold', ws.file('session.jsonl.zstd'), '--store', ws.file('others.json')], 1)
      assert.match(r.stderr, new RegExp(`NO_CHECKPOINT: session ${SESSION} has no mark`))
      assert.equal(r.stdout, '')
    })

    test('an --anchor past the end, or a mark already folded, exits 1 with EMPTY_REGION', async (t) => {
      const ws = workspace(t)
      for (const [file, anchor] of [
        ['session.jsonl.zstd', EXPECTED.events],
        ['session.jsonl', EXPECTED.events],
        ['session.jsonl.zstd', 4294967294],
      ]) {
        const r = await ws.expect(['fold', ws.file(String(file)), '--anchor', String(anchor)], 1)
        assert.match(r.stderr, /EMPTY_REGION: no surface nodes after the checkpoint mark/)
        assert.equal(r.stdout, '')
      }
      // The real rewind refuses a folded latest mark (EMPTY_REGION); the dry run says the same.
      const store = JSON.parse(readFileSync(ws.file('checkpoint.json'), 'utf8'))
      store.tables.marks[String(MARK.id)].foldedAt = store.tables.marks[String(MARK.id)].createdAt + 1000
      ws.write('folded.json', JSON.stringify(store))
      const r = await ws.expect(['fold', ws.file('session.jsonl.zstd'), '--store', ws.file('folded.json')], 1)
      assert.match(r.stderr, new RegExp(`EMPTY_REGION: checkpoint mark ${MARK.id} .*already folded`))
    })

    test('never writes: the logs and the store keep their bytes and mtimes, and no file appears', async (t) => {
      // Every ws.run above asserts this after each run; here the store is also the default one.
      const ws = workspace(t)
      ws.write('home/storages/checkpoint.json', readFileSync(ws.file('checkpoint.json')))
      const before = snapshot(ws.dir)
      await ws.expect(['fold', ws.file('session.jsonl.zstd')], 0)
      await ws.expect(['marks'], 0)
      assert.deepEqual(snapshot(ws.dir), before)
      assert.deepEqual(readdirSync(ws.file('home/storages')), ['checkpoint.json'], 'no lock or temp file')
      assert.equal(statSync(ws.file('checkpoint.json')).mtimeMs, PAST.getTime())
    })
  })
})
