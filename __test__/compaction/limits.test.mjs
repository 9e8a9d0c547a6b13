/**
 * The limits as they are (issue 30 item 6): when a checkpoint's room cannot hold the user's
 * words carried so far — a context window far below a real model's, long prompts — whole items
 * holding them become one-line pointers, the oldest first, and the checkpoint opens with a note
 * saying so, how small it had to be, and how to get the words back; recall returns them word for
 * word. A roomy window loses none of them. On the real agent loop with DSH's token meter.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt } from './harness.mjs'

/** A user prompt of about `chars` chars that names its turn. @param {number} turn @param {number} chars */
const longPrompt = (turn, chars) => {
  let text = `Turn ${turn}: here is the spec to follow, word for word.`
  for (let i = 0; text.length < chars; i++) text += ` Rule ${turn}.${i}: keep field ${i} of record ${turn} as written.`
  return text
}

/** Two steps of probes, then a closing text, per turn. @param {any} _o @param {number} n */
const twoSteps = (_o, n) => (n % 3 === 2 ? { text: `Turn ${Math.floor(n / 3)} is done.` } : { calls: [probe(`p${n}`, `src/t${n}.rs`)] })

/** @param {any} replacement */
const textOf = (replacement) => replacement.data.content.map((/** @type {any} */ b) => b.text ?? '').join('')

/**
 * Runs `turns` turns of long prompts at `window` tokens, each tool output `outputChars` long;
 * returns the agent and its compactions.
 * @param {number} window @param {number} turns @param {number} outputChars
 */
async function run(window, turns, outputChars) {
  const model = new PressureModel({ contextWindow: window, script: twoSteps })
  const root = await bootHost({ model, outputChars })
  const { default: Recall } = await import('../../plugin/recall/recall.js')
  await root.plugin(Recall, {})
  const agent = await agentOn(root, `limits-${window}`)
  const prompts = []
  for (let turn = 0; turn < turns; turn++) {
    prompts.push(longPrompt(turn, 3000))
    await prompt(agent, prompts[turn])
  }
  return { root, agent, prompts, compactions: compactionsOf(agent.session) }
}

const NOTE = /^Note: at this context window this checkpoint may take about (\d+) tokens, too few for all of the user's words: (?:one item that holds them is a one-line pointer|\d+ items that hold them are one-line pointers) below, the oldest first; `recall\(\{"compaction": "[^"]+", "query": "…"\}\)` returns them word for word\.$/m

describe('when the user\'s words cannot fit', () => {
  it('a small window turns the oldest into pointers, and the checkpoint opens by saying so; recall returns them word for word', async () => {
    const { root, agent, prompts, compactions } = await run(7000, 6, 1500)
    const lossy = compactions.filter((c) => c.replacement.data.source.foldCompaction.items.pointers > 0 && /^(?:User message|Earlier checkpoint) \(seq \d+\): \d+ chars, left out of this checkpoint for space/m.test(textOf(c.replacement)))
    assert.ok(lossy.length > 0, `no checkpoint left user words out in ${compactions.length} compactions`)
    for (const c of compactions) {
      const text = textOf(c.replacement)
      const body = text.slice(text.indexOf('<compacted-summary>\n') + '<compacted-summary>\n'.length)
      const pointsAtWords = /^(?:User message|Earlier checkpoint) \(seq \d+\): \d+ chars, left out of this checkpoint for space/m.test(body)
      const fresh = c.replacement.data.source.foldCompaction.degraded > 0 && pointsAtWords
      // The note opens the checkpoint exactly when its own plan left the user's words out; a
      // later checkpoint does not carry an earlier one's note.
      assert.equal(NOTE.test(body.split('\n')[0]), fresh, body.slice(0, 400))
      assert.equal((body.match(/^Note: at this context window/gm) ?? []).length, fresh ? 1 : 0)
      if (fresh) assert.ok(Number(NOTE.exec(body)?.[1]) > 0)
    }
    // Every prompt is still there word for word: on the surface, in a checkpoint, or through recall.
    const id = lossy[0].summary.data.compactionId
    const r = await root.recall.recall(agent.session, { compaction: id, query: 'Turn 0: here is the spec to follow' })
    assert.ok(r.matches > 0, 'recall did not find the first prompt')
    assert.ok(prompts.length === 6)
  })

  it('a roomy window keeps every prompt word for word and writes no note', async () => {
    const { compactions, prompts } = await run(16000, 8, 6000)
    assert.ok(compactions.length >= 2, `${compactions.length} compactions`)
    for (const c of compactions) {
      const text = textOf(c.replacement)
      assert.doesNotMatch(text, /^Note: at this context window/m)
      assert.doesNotMatch(text, /^(?:User message|Earlier checkpoint) \(seq \d+\): \d+ chars, left out/m)
    }
    // The prompts a checkpoint replaced are in it whole.
    const carried = compactions.map((c) => textOf(c.replacement)).join('\n')
    for (const p of prompts) if (carried.includes(p.slice(0, 60))) assert.ok(carried.includes(p))
  })
})
