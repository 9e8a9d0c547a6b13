// `recall` in block mode (issue 22 item 6), on real DeepSeek Harness parts, Node >= 22 (see
// harness.mjs): block mode lets the model call only `block_run_code` directly, so the recall hint
// that ends a block summary (or a rewind report written inside a program), and block mode's prompt
// section, must say how to call recall inside a program. The scripted model follows the hint
// literally — it takes the call the hint spells out, fills in its own query, and makes the call
// the way the hint says (a program of the tool the hint names, or a direct call) — and the test
// checks that it gets the block's exact lines back, in English and in Chinese.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { Checkpoint, Recall, Rewind } from '../../plugin/index.js'
import { tempStore } from '../helpers/dsh.mjs'
import { NOTES, agentOn, blockCall, bootBlockHost, commitsOf, prompt, resultOf, textOf } from './harness.mjs'

/** The query placeholder of the hint, in each language. */
const PLACEHOLDER = /"(text or \/regex\/|文本或 \/正则\/)"/

/**
 * What a model does with the recall hint at the end of the latest message carrying one: takes
 * the backticked call it spells out, puts its own query in place of the placeholder, and makes
 * that call exactly as the hint says — inside a program of the tool named right before it when the
 * call is written `await tools.<name>(…)`, else directly.
 * @param {any[]} messages the request's messages @param {string} callId @param {string} query
 */
function followHint(messages, callId, query) {
  const text = messages.map(textOf).findLast((t) => t.includes('\n\n↩ '))
  assert.ok(text, 'no message carries the recall hint')
  const line = text.slice(text.lastIndexOf('\n\n↩ ') + 2).split('\n')[0]
  const spans = [...line.matchAll(/`([^`]+)`/g)].map((m) => m[1])
  const at = spans.findIndex((s) => /\brecall\(/.test(s))
  assert.ok(at >= 0, `the hint spells out no recall call: ${line}`)
  assert.match(spans[at], PLACEHOLDER)
  const filled = spans[at].replace(PLACEHOLDER, JSON.stringify(query))
  if (filled.startsWith('await tools.')) {
    return { calls: [{ id: callId, name: spans[at - 1], args: { ids: ['recall'], description: 'read back a closed block', code: `return ${filled}` } }] }
  }
  const direct = /^([\w.-]+)\((.*)\)$/s.exec(filled)
  assert.ok(direct, `not a call: ${filled}`)
  return { calls: [{ id: callId, name: direct[1], args: JSON.parse(direct[2]) }] }
}

for (const language of /** @type {const} */ (['en', 'zh'])) {
  describe(`recall in block mode (${language})`, () => {
    it('the model follows the block summary\'s recall hint literally and gets the closed block\'s exact lines', async () => {
      const { root, model } = await bootBlockHost({
        block: { language },
        script: [
          { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "beta"})')] },
          { calls: [blockCall('c2', ['A'], 'return await tools.block_summary({ids: ["A"], summary: "A: read the build note."})')] },
          (/** @type {any} */ options) => followHint(options.messages, 'c3', 'ZEBRA'),
          { text: 'done' },
        ],
      })
      await root.plugin(Recall)
      const agent = await agentOn(root)
      await prompt(agent, 'find the build id, close the block, then look it up again')

      const answer = resultOf(agent.session, 'c3')
      assert.ok(answer, 'the recall call has no result')
      assert.equal(answer.isError, false, answer.text)
      assert.match(answer.text, /1 line in block A match ZEBRA:/)
      assert.ok(answer.text.includes(NOTES.beta), answer.text)
      // And the model read them in its next request.
      assert.ok(textOf(model.requests[3].messages.at(-1)).includes(NOTES.beta))

      const [commit] = commitsOf(agent.session)
      assert.ok(commit, 'the block was not closed')
      const body = textOf(commit.replacement.data)
      assert.match(body, language === 'en' ? /inside a `block_run_code` program, `await tools\.recall\(\{"block": "A", "query": "text or \/regex\/"\}\)`/ : /在 `block_run_code` 程序中，`await tools\.recall\(\{"block": "A", "query": "文本或 \/正则\/"\}\)`/)
    })

    it('the prompt section says how to call recall inside a program when recall is mounted, and says nothing of it otherwise', async () => {
      const { root, model } = await bootBlockHost({ block: { language }, script: [{ text: 'hi' }, { text: 'hi' }] })
      await prompt(await agentOn(root, 'without'), 'hello')
      const without = model.requests[0].system
      assert.doesNotMatch(without, /tools\.recall/)
      await root.plugin(Recall, { toolName: 'dig' })
      await prompt(await agentOn(root, 'with'), 'hello')
      const section = model.requests[1].system
      // JSON-style arguments: a TypeScript and a Python program write the call alike.
      assert.match(section, /`await tools\.dig\(\{"block": "<id>", "query": "[^"]+"\}\)`/)
      assert.match(section, language === 'en' ? /inside a `block_run_code` program/ : /在 `block_run_code` 程序中/)
    })
  })
}

describe('a rewind inside a program', () => {
  it('writes a report whose recall hint says to call recall from a program of the tool that ran it; followed literally, it returns the folded lines', async () => {
    const { root } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', ['A'], 'await tools.checkpoint({objective: "read the notes"}); return 1')] },
        // Enough output that the extractive report is shorter than what it folds.
        { calls: [blockCall('c2', ['A'], 'const b = await tools.lookup({key: "beta"}); return [b, ...Array.from({length: 40}, (_, i) => `line ${i} of the notes`)].join("\\n")')] },
        { calls: [blockCall('c3', ['A'], 'return await tools.rewind({})')] },
        (/** @type {any} */ options) => followHint(options.messages, 'c4', 'ZEBRA'),
        { text: 'done' },
      ],
    })
    await root.plugin(Checkpoint, { store: tempStore() })
    await root.plugin(Rewind, { summarizer: 'extractive' })
    await root.plugin(Recall)
    const agent = await agentOn(root)
    await prompt(agent, 'read with a checkpoint')
    const report = agent.session.events.find((/** @type {any} */ e) => e.type === 'user/message' && e.data.source?.plugin === 'rewind' && e.surfaceOp?.op === 'replace')
    assert.ok(report, 'nothing was folded')
    assert.match(textOf(report.data), /inside a `block_run_code` program, `await tools\.recall\(\{"fold": 1, "query": "text or \/regex\/"\}\)`/)
    const answer = resultOf(agent.session, 'c4')
    assert.equal(answer?.isError, false, answer?.text)
    assert.ok(answer?.text.includes(NOTES.beta), answer?.text)
  })
})
