/**
 * The extractive checkpoint's condensed tool work, written from facts read once per message
 * (plugin/compaction/report-facts.js), on the real agent loop: each work message is read after
 * the step that produced it and never inside a compaction's bracket, and every condensed run is
 * byte for byte the extractive report of its messages (`extractiveReport` over their JSON, the
 * rewind's path).
 */
import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'

import { addon } from '../../plugin/shared/addon.js'
import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt } from './harness.mjs'

/** A turn of `steps` steps, each probing two files, then a final answer. @param {number} steps */
const exploring = (steps) => (/** @type {any} */ _o, /** @type {number} */ n) =>
  n % (steps + 1) === steps ? { text: `Done with turn ${Math.floor(n / (steps + 1))}: the fix goes in src/p.rs.` } : { calls: [probe(`p${n}a`, `src/p/${n}a.rs`), probe(`p${n}b`, `src/p/${n}b.rs`)] }

const original = { reportFacts: addon.reportFacts, extractiveReportOf: addon.extractiveReportOf }
afterEach(() => Object.assign(addon, original))

describe('the checkpoint from facts read once per message', () => {
  it('reads each work message once, outside every bracket, and writes each run as extractiveReport would', async () => {
    const model = new PressureModel({ contextWindow: 8000, script: exploring(30) })
    const root = await bootHost({ model })
    let inBracket = false
    root.on('session/event', (/** @type {any} */ _s, /** @type {any} */ e) => {
      if (e.type === 'compaction/start') inBracket = true
      if (e.type === 'compaction/end') inBracket = false
    })
    /** @type {Map<string, number>} */
    const reads = new Map()
    let readsInBracket = 0
    /** @type {WeakMap<object, string>} */
    const messageOf = new WeakMap()
    addon.reportFacts = (/** @type {string} */ json) => {
      reads.set(json, (reads.get(json) ?? 0) + 1)
      if (inBracket) readsInBracket++
      const facts = original.reportFacts(json)
      messageOf.set(facts, json)
      return facts
    }
    let runs = 0
    addon.extractiveReportOf = (/** @type {any[]} */ facts, /** @type {any} */ options) => {
      const text = original.extractiveReportOf(facts, options)
      const region = `[${facts.map((f) => messageOf.get(f)).join(',')}]`
      assert.equal(text, addon.extractiveReport(region, options), 'a condensed run differs from the report of its messages')
      runs++
      return text
    }
    const agent = await agentOn(root)
    await prompt(agent, 'Find why the checksum fails in src/p and fix it.')
    const compactions = compactionsOf(agent.session)
    assert.ok(compactions.length >= 2, `${compactions.length} compactions`)
    assert.ok(runs >= compactions.length, `${runs} condensed runs`)
    assert.equal(readsInBracket, 0, 'a message was read for the report inside a compaction')
    assert.deepEqual([...reads.values()].filter((n) => n > 1), [], 'a message was read more than once')
    // Every condensed run of every checkpoint is in its text.
    for (const c of compactions) assert.match(c.replacement.data.content[0].text, /### Tool work \(seq \d+–\d+\), condensed\n## Findings/)
  })
})
