/**
 * `dsh-fold economics` prices compactions next to folds: dsh-fold/compaction's (no call) and
 * compaction-basic's (its summary call), each on a session the real agent loop compacted.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { Session, SessionId } from '@deepseek-ai/dsh-session'
import { createUserMessage } from '@deepseek-ai/dsh-llm'

import { DEFAULT_PRICES, analyze, findFolds } from '../../bin/economics-price.mjs'
import { renderText } from '../../bin/economics-text.mjs'
import { INSTRUCTIONS } from '../../plugin/fold/summarize.js'
import { INSTRUCTIONS as COMPACTION } from '../../plugin/compaction/summary.js'
import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt } from './harness.mjs'

const steps = (/** @type {any} */ _o, /** @type {number} */ n) => (n % 9 === 8 ? { text: 'Done.' } : { calls: [probe(`e${n}`, `src/e/${n}.rs`)] })

describe('economics of compactions', () => {
  for (const backend of /** @type {const} */ (['fold', 'basic'])) {
    it(`prices ${backend === 'fold' ? 'dsh-fold/compaction' : 'compaction-basic'}'s compactions with their summary calls`, async () => {
      const model = new PressureModel({ contextWindow: 6000, script: steps })
      const root = await bootHost({ model, backend })
      const agent = await agentOn(root, `econ-${backend}`)
      await prompt(agent, 'Audit src/e.')
      await prompt(agent, 'And once more.')
      const events = agent.session.events
      const found = findFolds(events).filter((f) => f.kind === 'compaction')
      assert.equal(found.length, compactionsOf(agent.session).length)
      assert.ok(found.length >= 1)
      const a = analyze({
        events,
        session: agent.session,
        emptySession: Session.create(SessionId('empty')),
        meter: root.tokenMeter,
        prices: DEFAULT_PRICES,
        instructions: { ...INSTRUCTIONS, compaction: COMPACTION.en },
        createUserMessage,
      })
      for (const c of a.folds.filter((f) => f.kind === 'compaction')) {
        assert.equal(c.backend, backend === 'fold' ? 'dsh-fold' : 'compaction-basic')
        assert.ok(c.tokensFreed > 0, `${c.name} freed ${c.tokensFreed}`)
        if (backend === 'fold') assert.equal(c.reportCall, null)
        else {
          assert.ok(c.reportCall.input > c.foldedTokens, 'the summary call replays the range')
          assert.ok(c.reportCall.cost > 0)
        }
      }
      // The totals compare with and without folds only: compactions apply in both.
      assert.equal(a.totals.with.cost, a.totals.without.cost)
      const text = renderText(a, { sessionId: 'x', events: events.length })
      assert.match(text, new RegExp(`${found.length} compactions?`))
      assert.match(text, backend === 'fold' ? /summary call: none \(extractive summary, no model call\)/ : /summary call: [\d,]+ input/)
    })
  }
})
