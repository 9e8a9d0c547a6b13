/**
 * @module __test__/report.test
 * `extractiveReport` through the addon, on real session fixtures: regions recorded into a real
 * DSH `Session` with real command outputs (see fixtures/report/generate.mjs), replayed here into a
 * real `@deepseek-ai/dsh-session` Session when it is installed (its `deriveMessages()` must give
 * the fixture back). The checks are mechanical and independent of the Rust code: every file
 * path, command, error line and last output line the region holds is found verbatim in the
 * report; the same input gives the same bytes (also in another process); the report is shorter
 * than the region's model-visible text; a zh run uses the zh section names.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, it } from 'node:test'

const require = createRequire(import.meta.url)
const addonPath = path.resolve(import.meta.dirname, '..')
const fold = require(addonPath)
const fixtureDir = path.join(import.meta.dirname, 'fixtures', 'report')

const SECTIONS = {
  en: ['## Findings', '## Files and Artifacts', '## Decisions', '## Unresolved Questions', '## Recommended Next Step'],
  zh: ['## 发现', '## 文件与产物', '## 决策', '## 未解决的问题', '## 建议的下一步'],
}

/** The real DSH message constructors and Session, or null when the packages are not installed. */
async function realDsh() {
  try {
    const llm = await import('@deepseek-ai/dsh-llm')
    const { Session, SessionId } = await import('@deepseek-ai/dsh-session')
    return { llm, Session, SessionId }
  } catch (e) {
    if (e?.code === 'ERR_MODULE_NOT_FOUND') return null
    throw e
  }
}
const dsh = await realDsh()

/**
 * Replays region messages into a real Session (real constructors, real append validation) and
 * returns `deriveMessages()` without the fresh ids.
 */
function replay(messages) {
  const { llm, Session, SessionId } = dsh
  const session = Session.create(SessionId('report-test'))
  let step = 0
  for (const m of messages) {
    const result = m.content.length === 1 && m.content[0].type === 'tool-result' ? m.content[0] : null
    if (m.role === 'assistant') {
      const { kind, ...source } = m.source
      const message = llm.createAssistantMessage({ content: m.content.map((b) => (b.type === 'tool-call' ? { ...b, id: llm.CallId(b.id) } : b)), source })
      session.append('assistant/message', { turn: 1, step: ++step, message }, { surfaceOp: 'append' })
    } else if (result) {
      const message = llm.createToolResultMessage({ callId: llm.CallId(result.toolCallId), content: result.content, isError: result.isError })
      session.append('tool/result', { turn: 1, step, message }, { surfaceOp: 'append' })
    } else {
      session.append('user/message', llm.createUserMessage({ content: m.content, source: m.source }), { surfaceOp: 'append' })
    }
  }
  return session.deriveMessages().map(({ id, ...m }) => m)
}

/** @returns {{name: string, language: 'en' | 'zh', messages: any[]}[]} */
function fixtures() {
  return readdirSync(fixtureDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => ({ name: f, language: f.includes('.zh.') ? 'zh' : 'en', messages: JSON.parse(readFileSync(path.join(fixtureDir, f), 'utf8')) }))
}

// ---- an independent reading of the region ------------------------------------------------------

/** Tool calls with their parsed arguments and outputs, in order. */
function calls(messages) {
  const byId = new Map()
  const out = []
  for (const m of messages) {
    for (const b of m.content) {
      if (b.type === 'tool-call') {
        const c = { name: b.name, args: typeof b.arguments === 'string' ? JSON.parse(b.arguments) : b.arguments, outputs: [] }
        byId.set(b.id, c)
        out.push(c)
      } else if (b.type === 'tool-result') {
        byId.get(b.toolCallId).outputs.push({ text: b.content.filter((x) => x.type === 'text').map((x) => x.text).join('\n'), isError: b.isError })
      }
    }
  }
  return out
}

/** The fold's shrink meter: text, reasoning, call arguments, tool outputs (UTF-16 units). */
function visibleChars(messages) {
  let n = 0
  const blocks = (bs) => {
    for (const b of bs) {
      if (b.type === 'text' || b.type === 'reasoning') n += b.text.length
      else if (b.type === 'tool-call') n += typeof b.arguments === 'string' ? b.arguments.length : JSON.stringify(b.arguments).length
      else if (b.type === 'tool-result') blocks(b.content)
    }
  }
  for (const m of messages) blocks(m.content)
  return n
}

const EXT = 'rs|toml|lock|json|js|mjs|cjs|ts|md|ini|py|go|sh|txt|yml|yaml'
const IN_DIR = new RegExp(`(?<![\\w.@+/~:-])((?:\\.{1,2}/|/|~/)?(?:[\\w@+-][\\w.@+-]*/)+[\\w@+-][\\w.@+-]*\\.(?:${EXT}))(?![\\w/@+-])`, 'g')
const BARE = new RegExp(`(?<![\\w.@+/~:-])([A-Za-z][\\w-]*\\.(?:${EXT}))(?![\\w./@+-])`, 'g')

/** File paths: `path` arguments whole, and `dir/file.ext` or `file.ext` tokens in arguments, outputs and assistant text. */
function paths(messages) {
  const found = new Set()
  const scan = (s) => {
    for (const re of [IN_DIR, BARE]) for (const m of s.matchAll(re)) found.add(m[1])
  }
  for (const c of calls(messages)) {
    if (typeof c.args.path === 'string') found.add(c.args.path)
    scan(JSON.stringify(Object.values(c.args)))
    for (const o of c.outputs) scan(o.text)
  }
  for (const m of messages) if (m.role === 'assistant') for (const b of m.content) if (b.type === 'text') scan(b.text)
  return [...found]
}

/** Commands: every `command` argument. */
const commands = (messages) => calls(messages).map((c) => c.args.command).filter((c) => typeof c === 'string')

const CUES = ['error', 'err!', 'fail', 'panic', 'exception', 'traceback', 'fatal', 'abort', 'denied', 'not found', 'no such file', 'cannot', "can't", 'unable to', 'segmentation fault', 'timed out']
const SYMBOLS = ['✗', '✘', '❌']
/** A cue at a word start (`error:`, `FAILED`) or ending a name before one colon (`TypeError:`). */
function isErrorLine(line) {
  const l = line.toLowerCase()
  for (const c of CUES) {
    for (let i = l.indexOf(c); i !== -1; i = l.indexOf(c, i + 1)) {
      const wordStart = i === 0 || !/[a-z]/.test(l[i - 1])
      const nameColon = l[i + c.length] === ':' && l[i + c.length + 1] !== ':'
      if (wordStart || nameColon) return true
    }
  }
  return SYMBOLS.some((s) => line.includes(s))
}
const readsFiles = (name) => /read|view|open|cat/i.test(name) && !/bash|shell|exec|terminal|command|run/i.test(name)

/** Error lines of every output but successful file reads. */
function errorLines(messages) {
  return calls(messages).flatMap((c) =>
    c.outputs
      .filter((o) => o.isError || !readsFiles(c.name))
      .flatMap((o) => o.text.split('\n').map((l) => l.trim()).filter((l) => l && isErrorLine(l))),
  )
}

/** The last line with a letter or digit of every output. */
const lastLines = (messages) =>
  calls(messages).flatMap((c) => c.outputs.map((o) => o.text.split('\n').map((l) => l.trim()).filter((l) => /[\p{L}\p{N}]/u.test(l)).at(-1)).filter(Boolean))

function assertKeeps(report, what, items, prefix = 200) {
  assert.ok(items.length > 0, `the fixture has ${what}`)
  for (const item of items) assert.ok(report.includes(item.slice(0, prefix)), `report lacks ${what} ${JSON.stringify(item)}:\n${report}`)
}

function assertSections(report, language) {
  let at = 0
  for (const h of SECTIONS[language]) {
    const i = report.indexOf(`${h}\n`, at)
    assert.ok(i >= at, `no ${h} after offset ${at}:\n${report}`)
    at = i + h.length
  }
  const other = language === 'en' ? 'zh' : 'en'
  for (const h of SECTIONS[other]) assert.ok(!report.includes(h), `${language} report has ${h}`)
}

const report = (messages, options) => fold.extractiveReport(JSON.stringify(messages), options)
const throwsCode = (fn, code) => assert.throws(fn, (e) => { assert.equal(e.code, code, e.message); assert.ok(fold.isFoldError(e)); return true })

// ---- the suites --------------------------------------------------------------------------------

describe('extractiveReport on real session fixtures', () => {
  it('the fixtures are exactly what a real DSH Session derives', { skip: dsh ? false : '@deepseek-ai/dsh-session is not installed' }, () => {
    for (const f of fixtures()) assert.deepEqual(replay(f.messages), f.messages, f.name)
  })

  for (const f of fixtures().filter((f) => !f.name.startsWith('wide'))) {
    describe(f.name, () => {
      const messages = dsh ? replay(f.messages) : f.messages
      const text = report(messages, { language: f.language })

      it('keeps every file path, command and error line verbatim', () => {
        assertKeeps(text, 'path', paths(messages))
        for (const cmd of commands(messages)) assertKeeps(text, 'command line', cmd.split('\n').slice(0, 1))
        assertKeeps(text, 'error line', errorLines(messages))
      })

      it('keeps the last line of each output', () => assertKeeps(text, 'last line', lastLines(messages), 150))

      it('is deterministic, also in another process', () => {
        assert.equal(report(messages, { language: f.language }), text)
        const json = JSON.stringify(messages)
        const other = execFileSync(process.execPath, ['-e', `process.stdout.write(require(${JSON.stringify(addonPath)}).extractiveReport(require('fs').readFileSync(0, 'utf8'), { language: ${JSON.stringify(f.language)} }))`], { input: json, encoding: 'utf8' })
        assert.equal(other, text)
      })

      it('shrinks: shorter than the region it replaces, within every budget', () => {
        const visible = visibleChars(messages)
        assert.ok(text.length < visible, `${text.length} >= ${visible}`)
        for (const maxChars of [visible - 1, 2000, 1000, 600]) {
          const r = report(messages, { language: f.language, maxChars })
          assert.ok(r.length <= Math.min(maxChars, visible - 1), `${r.length} > ${maxChars}`)
          assertSections(r, f.language)
        }
      })

      it(`uses the ${f.language} section names, in order`, () => assertSections(text, f.language))
    })
  }

  it('a zh run of an English region uses the zh section names', () => {
    const f = fixtures().find((f) => f.language === 'en' && !f.name.startsWith('wide'))
    const zh = report(f.messages, { language: 'zh' })
    assertSections(zh, 'zh')
    assert.ok(zh.includes('- 错误与失败：'))
    assertSections(report(f.messages), 'en')
  })

  it('a region too wide for the budget keeps arguments, commands and errors first and says what it left out', () => {
    const f = fixtures().find((f) => f.name.startsWith('wide'))
    const text = report(f.messages)
    assert.ok(text.length <= 4000 && text.length < visibleChars(f.messages))
    for (const cmd of commands(f.messages)) assert.ok(text.includes(`- $ ${cmd}`), cmd)
    assertKeeps(text, 'error line', errorLines(f.messages))
    assert.match(text, /`packages\/pkg-99\/src`/)
    assert.match(text, /_\[extractive report: \d+ of \d+ items omitted to fit 4000 chars\]_\n$/)
  })
})

describe('extractiveReport input and errors', () => {
  it('reads the flat {role: "tool", callId} shape and object arguments too', () => {
    const messages = [
      { role: 'assistant', content: [{ type: 'tool-call', id: 'c1', name: 'shell', arguments: { command: 'pytest -x tests/test_api.py' } }] },
      { role: 'tool', callId: 'c1', isError: true, content: [{ type: 'text', text: `${'collected 12 items\n'.repeat(30)}FAILED tests/test_api.py::test_login - AssertionError: 401 != 200` }] },
      { role: 'assistant', content: [{ type: 'text', text: 'The login test fails with 401. Next, check the token fixture in tests/conftest.py.' }] },
    ]
    const text = report(messages)
    for (const s of ['- $ pytest -x tests/test_api.py', 'FAILED tests/test_api.py::test_login - AssertionError: 401 != 200', '`tests/conftest.py`', 'Next, check the token fixture']) assert.ok(text.includes(s), s)
  })

  it('skips unknown block types', () => {
    const base = [{ role: 'assistant', content: [{ type: 'text', text: `Looked at src/index.ts. ${'x'.repeat(400)}` }] }]
    const withImage = [{ role: 'user', content: [{ type: 'image', attachment: { id: 'a' } }] }, { ...base[0], content: [...base[0].content, { type: 'plugin-card', data: {} }] }]
    assert.equal(report(withImage).replace('Folded 2 messages', 'Folded 1 messages'), report(base))
  })

  it('throws INVALID_ARGUMENT for what is not a region or bad options', () => {
    throwsCode(() => fold.extractiveReport([]), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('not json'), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('{"role":"user"}'), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('[{"role":"robot","content":[]}]'), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('[{"role":"user"}]'), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('[]', { language: 'fr' }), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('[]', { maxChars: 0 }), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('[]', { maxChars: 10.5 }), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('[]', { maxChars: '4000' }), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReport('[]', 'zh'), 'INVALID_ARGUMENT')
    assert.throws(() => fold.extractiveReport('[1]'), /message 0/)
  })

  it('throws SHRINK when not even the skeleton fits', () => {
    throwsCode(() => report([{ role: 'assistant', content: [{ type: 'text', text: 'Done, nothing found.' }] }]), 'SHRINK')
    const f = fixtures()[0]
    throwsCode(() => report(f.messages, { maxChars: 50 }), 'SHRINK')
  })

  it('takes milliseconds on a 4 MiB region', (t) => {
    const all = JSON.stringify(fixtures().flatMap((f) => f.messages)).slice(1, -1)
    const copies = Math.ceil((4 << 20) / all.length)
    const json = `[${Array.from({ length: copies }, (_, k) => all.replaceAll('"call_', `"k${k}_`)).join(',')}]`
    let best = Infinity
    for (let i = 0; i < 3; i++) {
      const t = performance.now()
      const text = fold.extractiveReport(json)
      best = Math.min(best, performance.now() - t)
      assert.ok(text.length <= 4000)
    }
    const mbs = json.length / 1048576 / (best / 1000)
    t.diagnostic(`extractiveReport: ${(json.length / 1048576).toFixed(1)} MiB in ${best.toFixed(1)} ms (${mbs.toFixed(0)} MB/s)`)
    assert.ok(best < 2000, `${best} ms`)
  })
})
