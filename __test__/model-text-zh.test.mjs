// Names and language from configuration (issue 32 item 6): every text the checkpoint, rewind,
// recall and compaction rows write for the model, rendered on real DSH parts under renamed tools
// (`mark`, `fold.rewind`, `dig`) and `reportLanguage: zh` (the rows set no `language` of their
// own: they follow it). Each text fails the test if it names a tool by its default name, or holds
// an English sentence outside what it quotes as data (code spans, quoted user words, the report's
// own body, the folded lines recall returns). Block mode's texts: __test__/block/model-text.test.mjs.
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { Checkpoint, Recall, Rewind, isRewindReportSource } from '../plugin/index.js'
import { isReportInstruction } from '../plugin/fold/summarize.js'
import { WORDS, failureText, splitReportFrame } from '../plugin/fold/words.js'
import { hintLine } from '../plugin/recall/hint.js'
import { createUserMessage, runTurn, say, tempStore } from './helpers/dsh.mjs'
import { assertSpeaks, calls, resultOf, scriptedHost, textOf } from './helpers/model-text.mjs'

const NAMES = { checkpoint: 'mark', rewind: 'fold.rewind', recall: 'dig' }
const FILE = ['解析器源码：', ...Array.from({ length: 12 }, (_, i) => `第 ${i + 1} 行：规则${i} 读取下一个记号`), '第 13 行：跳过注释时多读了一个记号'].join('\n')

/**
 * A real host with the rows renamed, the rewind row in Chinese (the others follow it), and a
 * scripted model.
 * @param {any[]} replies @param {{report?: any, checkpoint?: object}} [o]
 */
function host(replies, { report = say('## 发现\n- 跳过注释时多读了一个记号。'), checkpoint = {} } = {}) {
  return scriptedHost({
    replies,
    report,
    done: say('完成。'),
    file: FILE,
    rows: async (root) => {
      await root.plugin(Checkpoint, { store: tempStore(), toolName: NAMES.checkpoint, ...checkpoint })
      await root.plugin(Rewind, { toolName: NAMES.rewind, reportLanguage: 'zh' })
      await root.plugin(Recall, { toolName: NAMES.recall })
    },
  })
}

describe('6. names and language from configuration (fold rows and recall)', () => {
  it('the section, every description and parameter description', async () => {
    const h = await host([say('好。')])
    await runTurn(h.agent, '你好')
    const [request] = h.agentRequests()
    const { sections } = await h.root.systemPrompt.assemble()
    const section = sections.find((/** @type {any} */ s) => s.name === 'tool:rewind')
    assertSpeaks('the section', section.text)
    assert.match(section.text, /`mark`/)
    assert.match(section.text, /`fold\.rewind`/)
    for (const name of Object.values(NAMES)) {
      const tool = request.tools.find((/** @type {any} */ t) => t.name === name)
      assert.ok(tool, name)
      assertSpeaks(`${name}'s description`, tool.description)
      for (const [key, p] of Object.entries(tool.parameters.properties ?? {})) assertSpeaks(`${name}.${key}`, /** @type {any} */ (p).description)
    }
  })

  it('the results, the report frame, the recall hint, the guard, a second checkpoint, the report call', async () => {
    const h = await host([
      calls('k1', NAMES.checkpoint, { objective: '找出解析器丢记号的原因' }),
      calls('p1', 'probe', { path: 'parser.js' }),
      (/** @type {any} */ agent) => {
        // The user writes while the second investigation starts: inside its span.
        agent.inject(createUserMessage({ content: [{ type: 'text', text: '只看 src 目录。' }], source: { kind: 'user' } }))
        return calls('k2', NAMES.checkpoint, { objective: '找出丢记号的原因' })
      },
      calls('p2', 'probe', { path: 'lexer.js' }),
      say('解析器在跳过注释时多读了一个记号。'), // answers with the checkpoint open: the guard
      calls('r1', NAMES.rewind),
      calls('q1', NAMES.recall, { fold: 'latest' }),
      calls('q2', NAMES.recall, { fold: 'latest', query: '注释' }),
      calls('q3', NAMES.recall, { fold: 99 }),
      say('完成。'),
    ])
    await runTurn(h.agent, '解析器为什么会丢掉最后一个记号？')
    const requests = h.agentRequests()
    const last = requests.at(-1)
    assertSpeaks('the checkpoint result', textOf(resultOf(last, 'k1')))
    assertSpeaks('the second checkpoint', textOf(resultOf(last, 'k2')))
    assert.match(textOf(resultOf(last, 'k2')), /检查点 1 仍未折叠/)
    const warning = requests.flatMap((r) => r.messages).find((/** @type {any} */ m) => m.source?.plugin === 'rewind' && m.source.markId === undefined)
    assertSpeaks('the guard', textOf(warning))
    assertSpeaks('the rewind result', textOf(resultOf(last, 'r1')))
    const report = last.messages.find((/** @type {any} */ m) => isRewindReportSource(m.source) && m.source.markId)
    const { head, body } = splitReportFrame(textOf(report))
    assertSpeaks('the report frame', head)
    assertSpeaks('the recall hint', body.slice(body.lastIndexOf('\n↩ ') + 1))
    assert.equal(body.slice(body.lastIndexOf('\n↩ ') + 1), hintLine(NAMES.recall, { fold: 2 }, 'zh'))
    // The recall answers: their headings and notes (the folded lines themselves are data).
    for (const id of ['q1', 'q2', 'q3']) {
      const answer = textOf(resultOf(last, id))
      for (const line of answer.split('\n').filter((l) => !/^\s/.test(l) && !l.startsWith('['))) assertSpeaks(`recall ${id}`, line)
    }
    assert.match(textOf(resultOf(last, 'q3')), /^Error: UNKNOWN_FOLD: /)
    // The report call's instruction (the user's words quoted as they were).
    const instruction = textOf(h.model.requests.find((r) => isReportInstruction(r.messages.at(-1))).messages.at(-1))
    assertSpeaks('the report instruction', instruction.replace(/^> .*$/gm, ''))
    assert.match(instruction, /^> 只看 src 目录。$/m)
  })

  it('every failure, and the checkpoint store failing', async () => {
    const mark = { id: 3, objective: '找出原因' }
    const codes = ['NO_CHECKPOINT', 'EMPTY_REGION', 'UNBALANCED', 'FOLD_IN_PROGRESS', 'CHANGED', 'SHRINK', 'SUMMARIZE_FAILED', 'ABORTED', 'COMPACTION_BUSY', 'HOST_FAILED', 'STORE_CORRUPT', 'STORE_VERSION', 'STORE_IO', 'STORE_LOADING', 'INVALID_ARGUMENT', 'INTERNAL', 'SOMETHING_NEW']
    for (const code of codes) {
      for (const state of /** @type {const} */ (['open', 'folded', 'none', 'unset', 'unknown'])) {
        assertSpeaks(`${code} (${state})`, failureText({ code, detail: 'an English detail from below', mark, state }, NAMES, 'zh'))
        assertSpeaks(`${code} (${state}, en)`, failureText({ code, detail: 'detail', mark, state }, NAMES, 'en'), 'en')
      }
    }
    for (const misconfigured of /** @type {const} */ (['route', 'provider', 'credentials'])) {
      assertSpeaks(`misconfigured ${misconfigured}`, failureText({ code: 'SUMMARIZE_FAILED', misconfigured, mark, state: 'open' }, NAMES, 'zh'))
    }
    assertSpeaks('failed twice', failureText({ code: 'HOST_FAILED', again: true, mark, state: 'open' }, NAMES, 'zh'))
    // A real failure of the checkpoint tool, and of the rewind tool.
    const store = tempStore()
    mkdirSync(path.dirname(store), { recursive: true })
    writeFileSync(store, '{"unit":')
    const h = await host([calls('k1', NAMES.checkpoint), calls('r1', NAMES.rewind), say('好。')], { checkpoint: { store } })
    await runTurn(h.agent, '看看')
    const last = h.agentRequests().at(-1)
    assertSpeaks('STORE_CORRUPT of the checkpoint tool', textOf(resultOf(last, 'k1')).replace(/^Error: /, ''))
    assertSpeaks('the rewind failure', textOf(resultOf(last, 'r1')).replace(/^Error: /, ''))
  })

  it('every entry of the words, under renamed tools, in both languages', () => {
    const mark = { id: 2, objective: '找出原因' }
    for (const language of /** @type {const} */ (['zh', 'en'])) {
      const w = WORDS[language]
      const texts = [
        w.section(NAMES),
        w.checkpointTool(NAMES),
        w.checkpointTool({ checkpoint: NAMES.checkpoint }),
        w.objective,
        w.rewindTool(NAMES),
        w.marked(2, undefined, NAMES),
        w.marked(2, 1, NAMES),
        w.marked(2, undefined, { checkpoint: NAMES.checkpoint }),
        w.folded({ markId: 2, foldedNodes: 1, foldedChars: 9, reportChars: 3 }),
        w.folded({ markId: 2, foldedNodes: 4, foldedChars: 9, reportChars: 3, report: 'extractive' }),
        w.frame(mark, false),
        w.frame(mark, true),
        w.frame({ id: 2 }, false),
        w.guard(mark, NAMES),
        w.guard({ id: 2 }, NAMES),
      ]
      texts.forEach((text, i) => assertSpeaks(`${language} entry ${i}`, text, language))
    }
  })
})

describe('6. the compaction checkpoint follows the names and the language', () => {
  it('its frame, headings and recall line are Chinese and name the configured recall tool; without recall, no text promises it', async () => {
    const { PressureModel, bootHost: bootPressure, agentOn, prompt, compactionsOf, probe } = await import('./compaction/harness.mjs')
    const exploring = (/** @type {any} */ _o, /** @type {number} */ n) => (n % 9 === 8 ? { text: '这一轮完成。' } : { calls: [probe(`p${n}a`, `src/p/${n}a.rs`), probe(`p${n}b`, `src/p/${n}b.rs`)] })
    for (const withRecall of [true, false]) {
      const model = new PressureModel({ contextWindow: 8000, script: exploring })
      const root = await bootPressure({
        model,
        before: async (r) => {
          await r.plugin(Checkpoint, { store: tempStore(), toolName: NAMES.checkpoint })
          await r.plugin(Rewind, { toolName: NAMES.rewind, reportLanguage: 'zh' })
          if (withRecall) await r.plugin(Recall, { toolName: NAMES.recall })
        },
      })
      const agent = await agentOn(root, `zh-compaction-${withRecall}`)
      await prompt(agent, '找出 src/p 中校验和失败的原因并修复。')
      await prompt(agent, '继续。')
      const compactions = compactionsOf(agent.session)
      assert.ok(compactions.length >= 1, 'no compaction happened')
      for (const c of compactions) {
        const text = textOf(c.replacement.data)
        // The checkpoint's own words: its preamble, its headings, its notes and pointers, the recall line.
        const own = text.split('\n').filter((l) => /^(### |↩ |这是|\[… )/.test(l) || /（之前已压缩）|因篇幅/.test(l))
        assert.ok(own.length >= 2, text)
        for (const line of own) assertSpeaks(`compaction line (recall ${withRecall})`, line.replace(/（seq [\d–]+）/g, ''))
        if (withRecall) assert.ok(text.includes(`\`${NAMES.recall}({"compaction": `), text)
        else assert.doesNotMatch(text, /recall|`dig`/i)
      }
    }
  })
})
