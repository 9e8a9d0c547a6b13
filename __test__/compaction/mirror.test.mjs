/**
 * The policy reads the session mirror (`planCompaction(mirror, params, overlay)`), and the
 * compaction snapshot described from the session alone is its oracle: at every step boundary of
 * real sessions — tool work, block-tagged calls, an active checkpoint mark, a finished fold, the
 * backend's own compactions carried by later ones — both give the same plan, under pressure
 * and for `/compact`.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { defineTool } from '@deepseek-ai/dsh-tools'

import { compactionOverlay } from '../../plugin/compaction/overlay.js'
import { compactionSnapshot } from '../../plugin/compaction/snapshot.js'
import Checkpoint from '../../plugin/fold/checkpoint.js'
import Rewind from '../../plugin/fold/rewind.js'
import { addon } from '../../plugin/shared/addon.js'
import { mirrorOf } from '../../plugin/shared/mirror.js'
import { tempStore } from '../helpers/tmp.mjs'
import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt } from './harness.mjs'

describe('the mirror and the snapshot give the same plan', () => {
  it('at every step boundary of a session with blocks, a mark, a fold and compactions', async () => {
    const store = tempStore()
    // Per turn: a checkpoint, probes, block-tagged calls, then (every other turn) a rewind.
    const script = (/** @type {any} */ _o, /** @type {number} */ n) => {
      const k = n % 9
      const turn = Math.floor(n / 9)
      if (k === 0) return { calls: [{ id: `cp${n}`, name: 'checkpoint', args: { objective: `turn ${turn}` } }] }
      if (k < 4) return { calls: [probe(`p${n}`, `src/t${turn}/${k}.rs`)] }
      if (k < 7) return { calls: [{ id: `b${n}`, name: 'block_run_code', args: { ids: [`B${turn}`], code: 'return 1', description: 'work' } }] }
      if (k === 7 && turn % 2 === 0) return { calls: [{ id: `rw${n}`, name: 'rewind', args: {} }] }
      if (k === 7) return { calls: [probe(`q${n}`, `src/t${turn}/q.rs`)] }
      return { text: `Done with turn ${turn}: see src/t${turn}/1.rs.` }
    }
    const model = new PressureModel({ contextWindow: 9000, script })
    const root = await bootHost({
      model,
      before: async (r) => {
        await r.plugin(Checkpoint, { store })
        await r.plugin(Rewind, { summarizer: 'extractive' })
        r.tools.register(
          defineTool({
            name: 'block_run_code',
            description: 'Test stand-in for block mode\'s tool: its ids tag the message.',
            parameters: { ids: { type: 'array', items: { type: 'string' } }, code: { type: 'string' }, description: { type: 'string' } },
            output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
            execute: async () => `error: block output line\n${'x'.repeat(1500)}`,
          }),
        )
      },
    })
    const agent = await agentOn(root, 'oracle')
    const session = agent.session
    let compared = 0
    /** @type {string[]} */
    const differences = []
    const compare = async () => {
      const mark = await root.checkpoint.latestMark(session.id)
      const anchors = mark && mark.foldedAt === null ? [mark.logLength] : []
      const measurement = root.tokenMeter.measure(session)
      const snapshot = compactionSnapshot(session, measurement, { anchors })
      const mirror = mirrorOf(session).native
      const overlay = compactionOverlay(session, anchors)
      for (const params of [
        { trigger: 'pressure', totalTokens: measurement.totalTokens, thresholdTokens: 7200, retainTokens: 1440, maxSummaryTokens: 8192, pasteChars: 4000 },
        { trigger: 'manual', totalTokens: measurement.totalTokens, thresholdTokens: 0, retainTokens: 0, maxSummaryTokens: 8192, pasteChars: 4000 },
      ]) {
        const fromMirror = addon.planCompaction(mirror, params, overlay)
        const fromSnapshot = addon.planCompaction(snapshot, params)
        try {
          assert.deepEqual(fromMirror, fromSnapshot)
        } catch (e) {
          differences.push(`${params.trigger} at log length ${session.events.length}: ${/** @type {Error} */ (e).message.slice(0, 600)}`)
        }
        compared++
      }
    }
    /** @type {Promise<void>[]} */
    const pending = []
    root.on('session/event', (/** @type {any} */ s, /** @type {any} */ e) => {
      if (s === session && e.type === 'step/end') pending.push(new Promise((resolve) => queueMicrotask(() => compare().then(resolve, resolve))))
    })
    for (let t = 0; t < 4; t++) await prompt(agent, `Turn ${t}: work through src/t${t}.`)
    await Promise.all(pending)
    assert.ok(compactionsOf(session).length >= 2, `${compactionsOf(session).length} compactions`)
    assert.ok(compared >= 40, `${compared} comparisons`)
    assert.deepEqual(differences, [])
  })
})
