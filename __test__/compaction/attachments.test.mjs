/**
 * Every block of a user message survives a compaction (issue 30 item 5): a prompt carrying a
 * screenshot — DSH's real `ImageBlock` (`@deepseek-ai/dsh-llm`'s content type, its attachment an
 * `ImageAttachmentRef` with `@deepseek-ai/dsh-attachment`'s `AttachmentId`) — is carried into the
 * checkpoint with its words: the image block itself, where it stood, after a line naming it; a
 * later checkpoint that carries the first carries the image too; recall finds the image's line by
 * its name or attachment id; DSH's session, compaction and token-meter invariants accept every
 * event. On the real agent loop.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { AttachmentId } from '@deepseek-ai/dsh-attachment'
import { createUserMessage } from '@deepseek-ai/dsh-llm'

import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt } from './harness.mjs'

/** @type {import('@deepseek-ai/dsh-llm').ImageBlock} */
const SCREENSHOT = {
  type: 'image',
  attachment: { attachmentId: AttachmentId('att-7f3a91'), mediaType: 'image/png', bytes: 48_213, width: 1280, height: 720, name: 'checkout-page.png' },
}

/** Two probes per step, a closing text every 6 steps. @param {any} _o @param {number} n */
const exploring = (_o, n) => (n % 7 === 6 ? { text: `Round ${Math.floor(n / 7)} done.` } : { calls: [probe(`a${n}`, `src/a${n}.ts`), probe(`b${n}`, `src/b${n}.ts`)] })

describe('a user message with an image, through compaction', () => {
  it('carries the image block itself where it stood, names it, carries it again, and recall finds it', async () => {
    const model = new PressureModel({ contextWindow: 9000, script: exploring })
    const root = await bootHost({ model })
    const { default: Recall } = await import('../../plugin/recall/recall.js')
    await root.plugin(Recall, {})
    const agent = await agentOn(root, 'attachments')
    agent.followup(
      createUserMessage({
        content: [{ type: 'text', text: 'The total is wrong on this page:' }, SCREENSHOT, { type: 'text', text: 'Fix the rounding in src/cart.ts.' }],
        source: { kind: 'user' },
      }),
    )
    await agent.whenIdle()
    await prompt(agent, 'Now check the tax lines too.')
    const compactions = compactionsOf(agent.session)
    assert.ok(compactions.length >= 2, `${compactions.length} compactions`)
    const withImage = compactions.filter((c) => c.replacement.data.content.some((/** @type {any} */ b) => b.type === 'image'))
    assert.ok(withImage.length >= 2, 'the image was not carried into the first checkpoint and again into a later one')
    for (const c of withImage) {
      const content = c.replacement.data.content
      const i = content.findIndex((/** @type {any} */ b) => b.type === 'image')
      // The block itself, unchanged; the text before it ends with the words before it and the
      // line naming it; the words after it follow.
      assert.deepEqual(content[i], SCREENSHOT)
      assert.equal(content[i - 1].type, 'text')
      assert.match(content[i - 1].text, /The total is wrong on this page:\n\[image checkout-page\.png · image\/png · 1280×720 · 47 KB · attachment att-7f3a91\]\n$/)
      assert.match(content[i + 1].text, /^Fix the rounding in src\/cart\.ts\./)
      // The summary event records the same blocks.
      assert.deepEqual(c.summary.data.summary, content)
      // The meter prices the image block.
      assert.ok(root.tokenMeter.estimateMessage(c.replacement.data) > root.tokenMeter.estimateMessage({ ...c.replacement.data, content: content.filter((/** @type {any} */ b) => b.type !== 'image') }))
    }
    // Recall points to it, by name and by attachment id (the line is recall's too).
    const id = withImage[0].summary.data.compactionId
    for (const query of ['checkout-page.png', 'att-7f3a91']) {
      const r = await root.recall.recall(agent.session, { compaction: id, query })
      assert.ok(r.matches > 0, query)
      assert.match(r.text, /user message attachment/)
    }
  })

  it('a paste cut to its head and tail keeps its image, and the image in a message of another language is named in that language', async () => {
    const model = new PressureModel({ contextWindow: 9000, script: exploring })
    const root = await bootHost({ model, config: { pasteChars: 600, language: 'zh' } })
    const agent = await agentOn(root, 'attachments-cut')
    const paste = `Logs follow.\n${'x=1 y=2 z=3\n'.repeat(200)}End of logs.`
    agent.followup(createUserMessage({ content: [{ type: 'text', text: paste }, SCREENSHOT], source: { kind: 'user' } }))
    await agent.whenIdle()
    const [first] = compactionsOf(agent.session)
    assert.ok(first, 'no compaction')
    const content = first.replacement.data.content
    assert.deepEqual(content.filter((/** @type {any} */ b) => b.type === 'image'), [SCREENSHOT])
    const text = content.filter((/** @type {any} */ b) => b.type === 'text').map((/** @type {any} */ b) => b.text).join('')
    assert.match(text, /此处省略了这条消息的 \d+ 个字符/)
    assert.match(text, /End of logs\.\n\[图片 checkout-page\.png · image\/png · 1280×720 · 47 KB · 附件 att-7f3a91\]\n$/m)
  })
})
