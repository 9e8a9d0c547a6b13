/**
 * @module __test__/report.test
 * `extractiveReport` through the addon, on real session fixtures: regions recorded into a real
 * DSH `Session` with real command outputs (see fixtures/report/generate.mjs), replayed here into a
 * real `@deepseek-ai/dsh-session` Session when it is installed (its `deriveMessages()` must give
 * the fixture back). The checks are mechanical and independent of the Rust code (the facts come
 * from bin/report-facts.mjs): every file path the agent named, command and error line the region
 * holds is found verbatim in the report; the same input gives the same bytes (also in another
 * process); the report is shorter than the region's model-visible text and within every budget;
 * a zh run uses the zh section names. The recorded agent trajectories are graded in
 * report-trajectories.test.mjs.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { addon as fold, addonPath } from '../plugin/shared/addon.js'

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

const { regionFacts, visibleChars } = await import('../bin/report-facts.mjs')

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

      it('keeps every path the agent named, command line and error line verbatim', () => {
        const facts = regionFacts(messages)
        assertKeeps(text, 'path', facts.paths)
        assertKeeps(text, 'command line', facts.commands)
        assertKeeps(text, 'error line', facts.errors)
      })

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
    assert.match(zh, / → 退出码 \d+\n/)
    assertSections(report(f.messages), 'en')
  })

  it('a wide listing is one line; under pressure commands and errors come first and the report says what it left out', () => {
    const f = fixtures().find((f) => f.name.startsWith('wide'))
    const facts = regionFacts(f.messages)
    const text = report(f.messages)
    assert.ok(text.length < visibleChars(f.messages) / 2, `${text.length}`)
    assert.match(text, /- \$ find packages -type f \| sort → 120 entries\n/)
    assert.ok(!text.includes('packages/pkg-42/src/index.ts'), 'the listing\'s names are not copied')
    assertKeeps(text, 'command line', facts.commands)
    assertKeeps(text, 'error line', facts.errors)
    const tight = report(f.messages, { maxChars: 600 })
    assert.ok(tight.length <= 600)
    assertKeeps(tight, 'command line', facts.commands)
    assertKeeps(tight, 'error line', facts.errors)
    assert.match(tight, /_\[extractive report: \d+ of \d+ items omitted to fit 600 chars\]_\n$/)
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
})

describe('the report from facts kept message by message (reportFacts, extractiveReportOf)', () => {
  it('writes the same bytes as extractiveReport over the same messages, for every fixture and trajectory window', async () => {
    const { loadSegments } = await import('../bin/report-facts.mjs')
    const regions = [...fixtures().map((f) => f.messages), ...loadSegments().map((s) => s.messages)]
    let compared = 0
    for (const messages of regions) {
      const facts = messages.map((m) => fold.reportFacts(JSON.stringify(m)))
      assert.equal(facts.reduce((n, f) => n + f.visibleChars, 0) > 0, true)
      for (const [a, b] of [[0, messages.length], [1, Math.min(messages.length, 12)], [Math.floor(messages.length / 2), messages.length]]) {
        for (const options of [undefined, { language: 'zh' }, { maxChars: 900 }]) {
          const whole = (() => {
            try {
              return fold.extractiveReport(JSON.stringify(messages.slice(a, b)), options)
            } catch (e) {
              return `${/** @type {any} */ (e).code}`
            }
          })()
          const merged = (() => {
            try {
              return fold.extractiveReportOf(facts.slice(a, b), options)
            } catch (e) {
              return `${/** @type {any} */ (e).code}`
            }
          })()
          assert.equal(merged, whole)
          compared++
        }
      }
    }
    assert.ok(compared > 300, `${compared}`)
  })

  it('refuses what is not one message, a list of facts, or good options, with INVALID_ARGUMENT', () => {
    throwsCode(() => fold.reportFacts(42), 'INVALID_ARGUMENT')
    throwsCode(() => fold.reportFacts('not json'), 'INVALID_ARGUMENT')
    throwsCode(() => fold.reportFacts('[{"role":"user","content":[]}]'), 'INVALID_ARGUMENT')
    throwsCode(() => fold.reportFacts('{"role":"robot","content":[]}'), 'INVALID_ARGUMENT')
    const good = fold.reportFacts(JSON.stringify({ role: 'assistant', content: [{ type: 'text', text: 'Read src/a.rs and src/b.rs; both fine.' }] }))
    throwsCode(() => fold.extractiveReportOf('facts'), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReportOf([good, { visibleChars: 3 }]), 'INVALID_ARGUMENT')
    // An instance of another class of the addon is not a ReportFacts.
    throwsCode(() => fold.extractiveReportOf([good, new (class ReportFacts {})()]), 'INVALID_ARGUMENT')
    throwsCode(() => fold.extractiveReportOf([good], { language: 'fr' }), 'INVALID_ARGUMENT')
    assert.throws(() => fold.extractiveReportOf([good, null]), /facts\[1\] must be a ReportFacts/)
    // The empty region: bounded by maxChars alone, as extractiveReport's.
    assert.equal(fold.extractiveReportOf([], { maxChars: 4000 }), fold.extractiveReport('[]', { maxChars: 4000 }))
  })
})
