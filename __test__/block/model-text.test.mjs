// Block mode's texts under renamed tools and Chinese (issue 32 item 6), on the real parts (Node 22:
// DSH's worker-thread code runtime): the block row sets no `language`, so it follows the rewind
// row's `reportLanguage: zh`; its tools are `run_block` and `close_block`, recall is `dig`. Every
// text the model reads — the section, the wire tool's and the SDK's descriptions, the refusals, the
// pending note, the summary's frame, a failure, the note on a summary that was not applied — is
// Chinese and names no tool by its default name; the program language is the runtime's.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

import { Checkpoint, Recall, Rewind } from '../../plugin/index.js'
import { WORDS, runtimeName } from '../../plugin/block/words.js'
import { tempStore } from '../helpers/dsh.mjs'
import { assertSpeaks } from '../helpers/model-text.mjs'
import { blockCost } from '../helpers/standing-cost.mjs'
import { agentOn, bootBlockHost, dispatchesOf, prompt, resultOf, textOf, valueOf } from './harness.mjs'

const RUN = 'run_block'
const CLOSE = 'close_block'

/** A `run_block` call. @param {string} id @param {string[]} ids @param {string} code */
const run = (id, ids, code) => ({ id, name: RUN, args: { ids, description: `程序 ${id}`, code } })
const close = (/** @type {string[]} */ ids, /** @type {string} */ summary) => `return await tools.${CLOSE}(${JSON.stringify({ ids, summary })})`

/** A host in block mode, renamed, following the rewind row's Chinese. @param {any[]} script */
async function host(script) {
  const booted = await bootBlockHost({ script, block: { toolName: RUN, summaryToolName: CLOSE } })
  await booted.root.plugin(Checkpoint, { store: tempStore() })
  await booted.root.plugin(Rewind, { reportLanguage: 'zh' })
  await booted.root.plugin(Recall, { toolName: 'dig' })
  return booted
}

describe('block mode speaks the configured names and language', () => {
  it('the section, the wire tool and the SDK declarations', async () => {
    const { root, model } = await host([{ text: '好。' }])
    await prompt(await agentOn(root), '你好')
    const request = model.requests[0]
    const { sections } = await root.systemPrompt.assemble()
    const section = sections.find((/** @type {any} */ s) => s.name === `tool:${RUN}`).text
    assertSpeaks('the section', section)
    assert.match(section, /`await tools\.close_block\(\{"ids": \["<id>"\], "summary": "\.\.\."\}\)`/)
    assert.match(section, /`await tools\.dig\(\{"block": "<id>", "query": "文本或 \/正则\/"\}\)`/)
    const wire = request.tools.find((/** @type {any} */ t) => t.name === RUN)
    assertSpeaks('the wire description', wire.description)
    assert.match(wire.description, /运行一段 TypeScript 程序/, 'the worker runtime runs TypeScript')
    for (const [key, p] of Object.entries(wire.parameters.properties)) assertSpeaks(`${RUN}.${key}`, /** @type {any} */ (p).description)
    const sdk = root.tools.sdkSchemas().find((/** @type {any} */ t) => t.name === CLOSE)
    assertSpeaks('the SDK declaration', sdk.description)
    for (const [key, p] of Object.entries(sdk.parameters.properties)) assertSpeaks(`${CLOSE}.${key}`, /** @type {any} */ (p).description)
    assert.ok(section.includes('## 区块模式'))
  })

  it('the refusals, the pending note, the frame, a failure', async () => {
    const { root } = await host([
      { calls: [{ id: 'd1', name: 'lookup', args: { key: 'alpha' } }] },
      { calls: [run('c1', ['A'], `try { await tools.${RUN}({ids: ["B"], description: "套娃", code: "return 1"}) } catch (e) { return e.message }`)] },
      { calls: [run('c2', ['A'], `await tools.lookup({key: "alpha"}); ${close(['A'], '电容需要 1.21 GW')}`)] },
      { calls: [run('c3', ['B'], close(['nope'], '不存在的区块'))] },
      { text: '完成。' },
    ])
    const agent = await agentOn(root)
    await prompt(agent, '读一下笔记')
    assertSpeaks('the direct-call refusal', resultOf(agent.session, 'd1')?.text ?? '')
    assert.match(resultOf(agent.session, 'd1')?.text ?? '', /区块模式下只能直接调用 `run_block`/)
    assertSpeaks('the nested refusal', resultOf(agent.session, 'c1')?.text ?? '')
    const pending = valueOf(dispatchesOf(agent.session, 'c2').find((d) => d.name === CLOSE))
    assertSpeaks('the pending note', pending.note)
    const summary = agent.session.events.find((/** @type {any} */ e) => e.type === 'user/message' && e.data.source?.blockPtc)
    const body = textOf(summary.data)
    assertSpeaks('the summary frame', body.split('\n').slice(0, 2).join('\n'))
    const failed = dispatchesOf(agent.session, 'c3').find((d) => d.name === CLOSE)
    assert.equal(failed.isError, true)
    const text = failed.content.map((/** @type {any} */ b) => b.text ?? '').join('')
    assert.match(text, /^(Error: )?UNKNOWN_BLOCK: /)
    assertSpeaks('the failure', text)
  })

  it('every entry of the words, both languages, renamed; the runtime language', () => {
    const n = { run: RUN, summary: CLOSE, recall: 'dig' }
    for (const language of /** @type {const} */ (['zh', 'en'])) {
      const w = WORDS[language]
      const texts = [
        w.section(n),
        w.recallSection(n),
        w.runTool(n, 'Python'),
        ...Object.values(w.runParams).map((p) => (typeof p === 'function' ? p(1000) : p)),
        w.summaryTool(n),
        ...Object.values(w.summaryParams),
        w.directCall(n),
        w.nested(n),
        w.onlyInProgram(n),
        w.pending('the range has a call without its result yet'),
        w.notApplied('A, B', 'STALE: a user message arrived'),
        w.notAppliedSummary('A'),
        w.frame.intro,
        w.failure('UNKNOWN_BLOCK: block x has no message', w.next.UNKNOWN_BLOCK(n)),
        w.failure('the range crosses a protected message', w.next.PROTECTED()),
        w.failure('stale', w.next.STALE(n)),
        w.failure('bad', w.next.INVALID_ARGUMENT()),
      ]
      texts.forEach((text, i) => assertSpeaks(`${language} block entry ${i}`, text, language))
    }
    assert.equal(runtimeName('python'), 'Python')
    assert.equal(runtimeName('typescript'), 'TypeScript')
    assert.match(WORDS.en.runTool(n, runtimeName('python')), /^Run a Python program/)
  })
})

describe('block mode\'s standing cost', () => {
  it('is what docs/block-mode.md (en and zh) says it is', async () => {
    const [alone, withFold] = await blockCost()
    const n = (/** @type {number} */ x) => x.toLocaleString('en-US')
    const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
    const said = {
      'block-mode.md': `${n(alone.total)} alone (section ${n(alone.sections)}, wire tool ${n(alone.tools)}, SDK ${n(alone.sdk)}), ${n(withFold.total)} with the checkpoint, rewind and recall rows`,
      'block-mode.zh.md': `单独为 ${n(alone.total)}（section ${n(alone.sections)}、线上工具 ${n(alone.tools)}、SDK ${n(alone.sdk)}），加上 checkpoint、rewind 与 recall 行为 ${n(withFold.total)}`,
    }
    for (const [page, sentence] of Object.entries(said)) {
      const text = readFileSync(path.join(root, 'docs', page), 'utf8').replace(/\s+/g, ' ')
      assert.ok(text.includes(sentence), `${page} does not say: ${sentence}`)
    }
  })
})
