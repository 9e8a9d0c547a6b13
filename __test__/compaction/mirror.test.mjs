/**
 * The policy reads the session mirror and the backend's overlay (`planCompaction(mirror, params,
 * overlay)`: its only input), and what the policy must see, described from the session alone
 * (`__test__/oracles/compaction.mjs`), is their oracle: at every step boundary of real sessions
 * — tool work, block-tagged calls, an active checkpoint mark, a finished fold, the backend's own
 * compactions carried by later ones — every surface node's facts as the policy reads them off
 * the mirror and the overlay (the reading of `CompactionSurface::from_mirror`, spelled out
 * below) are the oracle's, and the policy plans on them, under pressure and for `/compact`.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { defineTool } from '@deepseek-ai/dsh-tools'

import { compactionOverlay } from '../../plugin/compaction/overlay.js'
import Checkpoint from '../../plugin/fold/checkpoint.js'
import Rewind from '../../plugin/fold/rewind.js'
import { addon } from '../../plugin/shared/addon.js'
import { mirrorOf } from '../../plugin/shared/mirror.js'
import { compactionFacts, SOURCE } from '../oracles/compaction.mjs'
import { tempStore } from '../helpers/tmp.mjs'
import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt } from './harness.mjs'

const KIND = /** @type {Record<string, number>} */ ({ Other: 0, User: 1, Assistant: 2, ToolResult: 3 })

/**
 * The policy's reading of the mirror's nodes with the overlay, as `CompactionSurface::from_mirror`
 * maps them: provenance onto the policy's sources (a plugin note the overlay lists is work; our
 * own checkpoint is the one the overlay sizes), the overlay's fact and carried sizes, a node the
 * meter did not price at 4 chars a token.
 * @param {any} mirror @param {import('../../index.js').CompactionOverlay} overlay
 */
function policyReading(mirror, overlay) {
  const nodes = JSON.parse(mirror.canonical()).nodes
  /** @type {Map<number, [number, number]>} */
  const ours = new Map()
  for (let i = 0; i < overlay.ours.length; i += 3) ours.set(overlay.ours[i], [overlay.ours[i + 1], overlay.ours[i + 2]])
  const notes = new Set(overlay.notes)
  const onSurface = new Set(nodes.map((/** @type {any} */ n) => n.seq))
  return nodes.map((/** @type {any} */ n, /** @type {number} */ pos) => {
    const kind = KIND[n.kind]
    const provenance = typeof n.source === 'string' ? n.source : Object.keys(n.source)[0]
    let source = SOURCE.work
    if (kind === KIND.User) {
      if (provenance === 'Injected' && notes.has(n.seq)) source = SOURCE.work
      else if (provenance === 'User' || provenance === 'Injected') source = SOURCE.user
      else if (provenance === 'RewindReport') source = SOURCE.rewindReport
      else if (provenance === 'BlockSummary') source = SOURCE.blockSummary
      else if (provenance === 'CompactionSummary') source = ours.has(n.seq) ? SOURCE.compactionSummary : SOURCE.foreignSummary
    }
    const [chars, core] = ours.get(n.seq) ?? [n.chars, n.chars]
    const carries = kind === KIND.Assistant || source === SOURCE.blockSummary
    const f = overlay.facts[pos] ?? 0
    return {
      seq: n.seq,
      kind,
      source,
      origin: n.origin,
      tokens: n.tokens ?? Math.floor(n.chars / 4) + 4,
      chars,
      core,
      opens: n.opens,
      opener: n.opener,
      blocks: carries && n.ids ? n.ids.map((/** @type {number[]} */ units) => String.fromCharCode(...units)) : null,
      facts: f > 0 && source === SOURCE.work ? f - 1 : null,
      onSurface,
    }
  })
}

describe('the policy reads off the mirror and the overlay what the oracle describes', () => {
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
      const oracle = compactionFacts(session, measurement)
      const mirror = mirrorOf(session).native
      const overlay = compactionOverlay(session, anchors)
      const read = policyReading(mirror, overlay)
      const at = `at log length ${session.events.length}`
      try {
        assert.deepEqual(read.map((n) => n.seq), oracle.map((n) => n.seq), `${at}: the surface`)
        for (const [i, o] of oracle.entries()) {
          const { onSurface, opens, opener, ...facts } = read[i]
          const link = o.kind === KIND.Assistant ? opens : o.kind === KIND.ToolResult ? (opener === null ? 0 : opener + 1) : 0
          // A result's call off the surface: the mirror names its opener only while it stands.
          const expected = o.kind === KIND.ToolResult && o.link > 0 && !onSurface.has(o.link - 1) ? { ...o, link: 0 } : o
          assert.deepEqual({ ...facts, link }, expected, `${at}: node ${i} (seq ${o.seq})`)
        }
      } catch (e) {
        differences.push(/** @type {Error} */ (e).message.slice(0, 600))
      }
      for (const params of [
        { trigger: 'pressure', totalTokens: measurement.totalTokens, thresholdTokens: 7200, retainTokens: 1440, maxSummaryTokens: 8192, pasteChars: 4000 },
        { trigger: 'manual', totalTokens: measurement.totalTokens, thresholdTokens: 0, retainTokens: 0, maxSummaryTokens: 8192, pasteChars: 4000 },
      ]) {
        const plan = addon.planCompaction(mirror, params, overlay)
        if (plan) assert.deepEqual(Array.from(plan.seqs), read.slice(plan.startPos, plan.endPos).map((n) => n.seq), `${at}: the plan's range`)
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

describe('the policy reads nothing but the mirror', () => {
  const params = { trigger: 'manual', totalTokens: 100, thresholdTokens: 0, retainTokens: 0, maxSummaryTokens: 8192, pasteChars: 4000 }
  const overlay = { anchors: new Uint32Array(0), facts: new Uint32Array(0), ours: new Uint32Array(0), notes: new Uint32Array(0) }
  /** @param {() => unknown} f @param {RegExp} says */
  const refused = (f, says) =>
    assert.throws(f, (/** @type {any} */ e) => {
      assert.equal(e.code, 'INVALID_ARGUMENT')
      assert.match(e.message, says)
      return true
    })

  it('a snapshot (any Uint32Array) is refused, naming the mirror', () => {
    // What compaction's snapshot format once carried: version 4, one event, no nodes, no sets.
    const words = Uint32Array.from([4, 1, 0, 0, 0, 0])
    refused(() => addon.planCompaction(words, params, overlay), /SessionMirror/)
    refused(() => addon.planCompactionRange(words, params, 0, 0, overlay), /SessionMirror/)
  })

  it('the mirror without its overlay is refused, naming the overlay', () => {
    const mirror = new addon.SessionMirror()
    refused(() => addon.planCompaction(mirror, params), /overlay must be \{anchors, facts, ours, notes\}/)
    refused(() => addon.planCompaction(mirror, params, { ...overlay, ours: [] }), /overlay\.ours must be a Uint32Array/)
  })
})
