/**
 * The bracket and the lock across producers and process lifetimes, on real DSH parts: a
 * bracket left open by a crash does not block after the session is restored (DSH's
 * `session/end-seed` makes it stale), a persisted compaction replays to the same surface, a
 * compaction declines while a rewind holds the session's fold lock, and a block summary waits
 * while this backend's bracket is open.
 */
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'
import { describe, it } from 'node:test'

import { ManualCompactionError } from '@deepseek-ai/dsh-compaction'
import { SessionId, adoptSessionEvent, interruptedTurnClosers } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'

import { addon } from '../../plugin/shared/addon.js'
import { isRewindReportSource } from '../../plugin/shared/session.js'
import Checkpoint from '../../plugin/fold/checkpoint.js'
import Rewind from '../../plugin/fold/rewind.js'
import { tempStore } from '../helpers/tmp.mjs'
import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt, protocolProblems } from './harness.mjs'
import { planBlocks } from '../helpers/planners.mjs'

/** A gate a test opens. */
function gate() {
  /** @type {() => void} */
  let open = () => {}
  const opened = new Promise((/** @type {(v?: any) => void} */ resolve) => (open = resolve))
  return { open, opened }
}

/** Whether `promise` has settled after the event loop went round a few times (no timing asserted). */
async function settledYet(/** @type {Promise<any>} */ promise) {
  let settled = false
  promise.then(() => (settled = true), () => (settled = true))
  for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 10))
  return settled
}

/** A fresh checkpoint store file. */
const storeFile = () => tempStore()

/** Waits until `check()` holds. @param {() => boolean} check */
async function until(check) {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((r) => setTimeout(r, 2))
  assert.ok(check(), 'timed out waiting')
}

const explore = (/** @type {number} */ k) => (/** @type {any} */ _o, /** @type {number} */ n) =>
  n % (k + 1) === k ? { text: 'Done.' } : { calls: [probe(`x${n}`, `src/x/${n}.rs`)] }

/** A host whose `llm` compaction summary hangs until `held.open()`. */
async function hangingHost(extra = {}) {
  const held = gate()
  const model = new PressureModel({ contextWindow: 6000, script: explore(8), summarize: async () => (await held.opened, { text: 'the scripted summary' }) })
  const root = await bootHost({ model, config: { summarizer: 'llm' }, ...extra })
  return { root, model, held }
}

describe('a restart with an open bracket', () => {
  it('is busy while live, and stale (not blocking) once the restored session is seeded', async () => {
    const { root, model, held } = await hangingHost()
    const agent = await agentOn(root, 'crashing')
    const turn = prompt(agent, 'Explore src/x.')
    await until(() => model.summaryRequests.length === 1)
    const session = agent.session
    const open = session.events.findLast((/** @type {any} */ e) => e.type === 'compaction/start')
    assert.ok(open && !session.events.some((/** @type {any} */ e) => e.type === 'compaction/end' && e.data.compactionId === open.data.compactionId))
    // Live: every entry point reports busy; nothing is written.
    const length = session.events.length
    await assert.rejects(root.compaction.compactRegion(session.surface.nodes[0], session.surface.nodes[0], agent), (e) => e instanceof ManualCompactionError && e.code === 'busy')
    assert.equal(session.events.length, length)
    // The process dies here: the log as it stands is what persistence restores.
    const crashed = JSON.parse(JSON.stringify(session.events))
    held.open()
    await turn

    const seed = [...crashed, ...interruptedTurnClosers(crashed).map(adoptSessionEvent)]
    const fresh = await hangingHost()
    fresh.held.open()
    const { agent: restored } = await fresh.root.agents.create({ sessionId: SessionId('restored'), seed, agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
    const execution = await fresh.root.commands.execute(restored, '/compact', [], AbortSignal.timeout(10_000))
    assert.equal(execution.result.kind, 'success', execution.result.text)
    const mine = compactionsOf(restored.session).at(-1)
    assert.ok(mine.start.seq > seed.length - 1, 'the new bracket follows the restored log')
    assert.equal(mine.end.data.error, undefined)
    assert.deepEqual(protocolProblems(restored.session.deriveMessages()), [])
  })
})

describe('the persisted bracket', () => {
  it('replays to the same surface, meter and four events', async () => {
    const model = new PressureModel({ contextWindow: 6000, script: explore(8) })
    const root = await bootHost({ model })
    const agent = await agentOn(root, 'persisted')
    await prompt(agent, 'Explore src/x.')
    const compactions = compactionsOf(agent.session)
    assert.ok(compactions.length >= 1)
    const persisted = JSON.parse(JSON.stringify(agent.session.events))
    const other = await bootHost({ model: new PressureModel({ contextWindow: 6000, script: explore(8) }) })
    const replayed = other.sessions.create('replayed', { seed: persisted })
    assert.deepEqual(replayed.surface.nodes, agent.session.surface.nodes)
    assert.deepEqual(replayed.deriveMessages(), agent.session.deriveMessages())
    assert.equal(other.tokenMeter.measure(replayed).surfaceTokens, root.tokenMeter.measure(agent.session).surfaceTokens)
    for (const c of compactionsOf(replayed)) {
      assert.deepEqual([c.start.type, c.summary.type, c.replacement.type, c.end.type], ['compaction/start', 'compaction/summary', 'user/message', 'compaction/end'])
      assert.deepEqual(c.replacement.sourceEventSeqs.slice(0, 2), [c.start.seq, c.summary.seq])
    }
  })
})

describe('one lock shared with rewind and block mode', () => {
  it('a compaction declines while a rewind holds the session\'s fold lock', async () => {
    const reportCall = gate()
    const during = gate()
    let step = 0
    const model = new PressureModel({
      contextWindow: 6000,
      script: async (/** @type {any} */ options) => {
        const last = options.messages.at(-1)
        // The rewind's report call: its instruction is the last message.
        if (last?.source?.plugin === 'rewind' && /Write a report/.test(JSON.stringify(last.content))) {
          during.open()
          await reportCall.opened
          return { text: '## Findings\n- the report' }
        }
        step++
        if (step === 1) return { calls: [{ id: 'cp', name: 'checkpoint', args: { objective: 'map src/x' } }] }
        if (step < 4) return { calls: [probe(`x${step}`, `src/x/${step}.rs`)] }
        if (step === 4) return { calls: [{ id: 'rw', name: 'rewind', args: {} }] }
        return { text: 'Done.' }
      },
    })
    const store = tempStore()
    const root = await bootHost({
      model,
      config: { auto: false },
      before: async (r) => {
        await r.plugin(Checkpoint, { store })
        await r.plugin(Rewind, {})
      },
    })
    const agent = await agentOn(root, 'folding')
    const turn = prompt(agent, 'Map src/x, then fold it.')
    await during.opened
    assert.equal(addon.foldInProgress('folding'), true)
    const length = agent.session.events.length
    assert.equal(await root.compaction.compactIfNeeded(agent, 'context-overflow', AbortSignal.timeout(5000)), null)
    assert.equal(agent.session.events.length, length, 'a compaction wrote during a fold')
    reportCall.open()
    await turn
    assert.equal(addon.foldInProgress('folding'), false)
  })

  it('a rewind waits while this backend\'s bracket is open and folds right after its compaction/end; nothing is written inside', async () => {
    const store = storeFile()
    const afterCompaction = gate()
    const { root, model, held } = await hangingHost({
      before: async (/** @type {any} */ r) => {
        await r.plugin(Checkpoint, { store })
        await r.plugin(Rewind, { summarizer: 'extractive' })
      },
    })
    // Once the compaction is under way, the agent's next request waits until the test lets it
    // go, so the rewind's fold and the turn's next step do not race.
    const script = model.script
    model.script = async (/** @type {any} */ o, /** @type {number} */ n) => {
      if (model.summaryRequests.length > 0) await afterCompaction.opened
      return script(o, n)
    }
    const agent = await agentOn(root, 'rewind-waits')
    const session = agent.session
    // The exploration the rewind folds starts with the turn.
    await addon.mark(store, 'rewind-waits', session.seq)
    const turn = prompt(agent, 'Explore src/x.')
    await until(() => model.summaryRequests.length === 1)
    const start = session.events.findLast((/** @type {any} */ e) => e.type === 'compaction/start')
    const length = session.events.length
    const pending = root.rewind.rewind(agent)
    assert.equal(await settledYet(pending), false, 'the rewind did not wait for this backend\'s live bracket')
    assert.equal(session.events.length, length, 'the rewind wrote inside the bracket')
    assert.equal(await root.checkpoint.hasActive('rewind-waits'), true)

    held.open()
    const result = await pending
    const end = session.events.find((/** @type {any} */ e) => e.type === 'compaction/end' && e.data.compactionId === start.data.compactionId)
    assert.ok(end && end.data.error === undefined, 'the compaction committed')
    // Inside the bracket: only the compaction's own summary and replacement.
    assert.deepEqual(session.events.slice(start.seq + 1, end.seq).map((/** @type {any} */ e) => e.type), ['compaction/summary', 'user/message'])
    assert.equal(result.markId, 1)
    const report = session.events.findLast((/** @type {any} */ e) => isRewindReportSource(e.data?.source))
    assert.ok(report.seq > end.seq, 'the rewind\'s report landed after the bracket closed')
    assert.equal(await root.checkpoint.hasActive('rewind-waits'), false)
    afterCompaction.open()
    await turn
    assert.deepEqual(protocolProblems(session.deriveMessages()), [])
  })

  it('while a rewind folds, /compact is busy, pressure and overflow decline, and nothing is written; after it, /compact runs', async () => {
    const store = storeFile()
    const reportCall = gate()
    const reporting = gate()
    const model = new PressureModel({
      contextWindow: 200_000,
      script: async (/** @type {any} */ options, /** @type {number} */ n) => {
        const last = options.messages.at(-1)
        if (last?.source?.plugin === 'rewind' && /Write a report/.test(JSON.stringify(last.content))) {
          reporting.open()
          await reportCall.opened
          return { text: '## Findings\n- the report' }
        }
        return n < 6 ? { calls: [probe(`x${n}`, `src/x/${n}.rs`)] } : { text: 'Done.' }
      },
    })
    const root = await bootHost({
      model,
      before: async (r) => {
        await r.plugin(Checkpoint, { store })
        await r.plugin(Rewind, {})
      },
    })
    const agent = await agentOn(root, 'folding-idle')
    const session = agent.session
    await addon.mark(store, 'folding-idle', session.seq)
    await prompt(agent, 'Explore src/x.')
    assert.equal(compactionsOf(session).length, 0)
    // From here the routed model reports a small window: the session is over the threshold, so
    // only the fold's lock keeps the automatic paths from compacting.
    model.contextWindow = 6000
    const folding = root.rewind.rewind(agent)
    await reporting.opened
    assert.equal(addon.foldInProgress('folding-idle'), true)
    const length = session.events.length
    const nodes = [...session.surface.nodes]
    await assert.rejects(root.compaction.compactNow(agent, AbortSignal.timeout(5000)), (e) => e instanceof ManualCompactionError && e.code === 'busy' && /a rewind of this session is in progress/.test(e.message))
    const execution = await root.commands.execute(agent, '/compact', [], AbortSignal.timeout(5000))
    assert.equal(execution.result.kind, 'error')
    assert.match(execution.result.text, /active compaction, or the agent is not idle/)
    assert.equal(await root.compaction.compactIfNeeded(agent, 'pressure', AbortSignal.timeout(5000)), null)
    assert.equal(await root.compaction.compactIfNeeded(agent, 'context-overflow', AbortSignal.timeout(5000)), null)
    // The command runtime logs the refused /compact (command/run, command/done); no compaction event.
    assert.deepEqual(session.events.slice(length).map((/** @type {any} */ e) => e.type), ['command/run', 'command/done'], 'a compaction wrote during a fold')
    assert.deepEqual([...session.surface.nodes], nodes)
    reportCall.open()
    assert.equal((await folding).markId, 1)
    assert.equal(addon.foldInProgress('folding-idle'), false)
    const after = await root.commands.execute(agent, '/compact', [], AbortSignal.timeout(5000))
    assert.equal(after.result.kind, 'success', after.result.text)
  })

  it('a block summary waits while this backend\'s bracket is open', async () => {
    const { root, model, held } = await hangingHost({
      before: (/** @type {any} */ r) =>
        r.tools.register(
          defineTool({
            name: 'block_run_code',
            description: 'Test stand-in for block mode\'s tool: its ids tag the message.',
            parameters: { ids: { type: 'array', items: { type: 'string' } }, code: { type: 'string' }, description: { type: 'string' } },
            output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
            execute: async () => 'x'.repeat(3000),
          }),
        ),
    })
    model.script = (/** @type {any} */ _o, /** @type {number} */ n) =>
      n < 8 ? { calls: [{ id: `b${n}`, name: 'block_run_code', args: { ids: ['A'], code: 'return 1', description: 'work' } }] } : { text: 'Done.' }
    const agent = await agentOn(root, 'blocks')
    const turn = prompt(agent, 'Work in block A.')
    await until(() => model.summaryRequests.length === 1)
    const plan = planBlocks(agent.session, ['A'], agent.session.seq)
    assert.equal(plan.status, 'pending')
    assert.equal(plan.waitFor, 'compaction')
    held.open()
    await turn
  })
})
