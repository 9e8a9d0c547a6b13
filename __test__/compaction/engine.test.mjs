/**
 * The `dsh-fold/compaction` backend on real DSH parts: pressure from the real AgentLoop +
 * TokenMeter + SessionStore, `/compact` through the real dsh-command-compact, overflow recovery,
 * the bracket and the lock as DSH's invariant companions check them.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { ManualCompactionError } from '@deepseek-ai/dsh-compaction'

import { addon } from '../../plugin/shared/addon.js'

import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt, protocolProblems, textOf } from './harness.mjs'

/** A turn of `steps` steps, each probing two files, then a final answer. @param {number} steps */
const exploring = (steps, tag = 'p') => (/** @type {any} */ _o, /** @type {number} */ n) =>
  n % (steps + 1) === steps ? { text: `Done with turn ${Math.floor(n / (steps + 1))}: the checksum fix goes in src/${tag}.rs.` } : { calls: [probe(`${tag}${n}a`, `src/${tag}/${n}a.rs`), probe(`${tag}${n}b`, `src/${tag}/${n}b.rs`)] }

describe('pressure on the real agent loop', () => {
  it('compacts at a step boundary with zero model calls, under the threshold, every call with its result', async () => {
    const model = new PressureModel({ contextWindow: 8000, script: exploring(8) })
    const root = await bootHost({ model })
    const agent = await agentOn(root)
    await prompt(agent, 'Find why the checksum fails in src/p and fix it. Keep the public API unchanged.')
    const session = agent.session
    const compactions = compactionsOf(session)
    assert.ok(compactions.length >= 1, 'no compaction happened')
    assert.equal(model.summaryRequests.length, 0, 'a model call was made for the summary')
    for (const c of compactions) {
      assert.equal(c.start.type, 'compaction/start')
      assert.equal(c.summary.type, 'compaction/summary')
      assert.equal(c.end.type, 'compaction/end')
      assert.equal(c.end.data.error, undefined)
      assert.equal(typeof c.start.data.turn, 'number')
      assert.equal(c.replacement.data.source.compactionId, c.start.data.compactionId)
      assert.equal(c.summary.data.provider, 'dsh-fold')
      assert.ok(c.replacement.data.source.foldCompaction)
    }
    // Every request after the compaction was protocol-valid and under the window.
    for (const request of model.requests) assert.deepEqual(protocolProblems(request.messages), [])
    const measured = root.tokenMeter.measure(session)
    assert.ok(measured.totalTokens < 8000, `still ${measured.totalTokens} tokens`)
    // The user's words are in the summary word for word.
    const summary = textOf(compactions[0].replacement.data)
    assert.match(summary, /Find why the checksum fails in src\/p and fix it\. Keep the public API unchanged\./)
    assert.match(summary, /<compacted-summary>/)
    assert.match(summary, /error: src\/p\/\d+a\.rs: checksum mismatch at line 7/)
  })

  it('prices a pass as DSH\'s meter does: the range\'s tokens out, the summary\'s in (so a relieving pass is not measured again)', async () => {
    const model = new PressureModel({ contextWindow: 8000, script: exploring(12) })
    const root = await bootHost({ model })
    const agent = await agentOn(root)
    /** @type {{before: number, after: number, computed: number}[]} */
    const passes = []
    let before = 0
    let computed = 0
    root.on('session/event', (/** @type {any} */ session, /** @type {any} */ e) => {
      if (session !== agent.session) return
      if (e.type === 'compaction/start') before = root.tokenMeter.measure(session).totalTokens
      if (e.type === 'compaction/summary') computed = before - e.data.shadowedTokenCount
      if (e.type === 'user/message' && e.surfaceOp?.op === 'replace') computed += root.tokenMeter.estimateMessage(e.data)
      if (e.type === 'compaction/end' && !e.data.error) passes.push({ before, after: root.tokenMeter.measure(session).totalTokens, computed })
    })
    await prompt(agent, 'Find why the checksum fails in src/p and fix it.')
    assert.ok(passes.length >= 2, `${passes.length} passes`)
    for (const p of passes) assert.equal(p.computed, p.after, JSON.stringify(p))
  })

  it('compaction-basic on the same session calls the model for its summary', async () => {
    const model = new PressureModel({ contextWindow: 8000, script: exploring(8) })
    const root = await bootHost({ model, backend: 'basic' })
    const agent = await agentOn(root)
    await prompt(agent, 'Find why the checksum fails in src/p and fix it.')
    assert.ok(compactionsOf(agent.session).length >= 1)
    assert.ok(model.summaryRequests.length >= 1)
    assert.equal(model.summaryRequests[0].purpose, 'compaction')
  })

  it('does nothing below the threshold', async () => {
    const model = new PressureModel({ contextWindow: 200_000, script: exploring(3) })
    const root = await bootHost({ model })
    const agent = await agentOn(root)
    await prompt(agent, 'Look around.')
    assert.equal(compactionsOf(agent.session).length, 0)
  })

  it('with auto: false only /compact compacts', async () => {
    const model = new PressureModel({ contextWindow: 8000, script: exploring(8) })
    const root = await bootHost({ model, config: { auto: false } })
    const agent = await agentOn(root)
    await prompt(agent, 'Look around.')
    assert.equal(compactionsOf(agent.session).length, 0)
  })
})

describe('/compact through the real dsh-command-compact', () => {
  it('compacts between turns in a standalone bracket and flushes', async () => {
    const model = new PressureModel({ contextWindow: 200_000, script: exploring(4) })
    const root = await bootHost({ model })
    const agent = await agentOn(root)
    await prompt(agent, 'First task: map src/p.')
    await prompt(agent, 'Second task: now src/q.')
    const execution = await root.commands.execute(agent, '/compact', [], AbortSignal.timeout(10_000))
    assert.equal(execution.result.kind, 'success', execution.result.text)
    assert.match(execution.result.text, /^Compacted \d+ history items/)
    const [c] = compactionsOf(agent.session)
    assert.equal(c.start.data.turn, null)
    assert.equal(c.replacement.data.source.sourceCommandId, c.start.data.sourceCommandId)
    assert.ok(c.start.data.sourceCommandId)
    assert.deepEqual(protocolProblems(agent.session.deriveMessages()), [])
    // The next turn runs on the compacted surface.
    await prompt(agent, 'Third task.')
    assert.deepEqual(protocolProblems(model.requests.at(-1).messages), [])
  })

  it('says there is nothing to compact on a fresh session', async () => {
    const model = new PressureModel({ contextWindow: 200_000, script: () => ({ text: 'hi' }) })
    const root = await bootHost({ model })
    const agent = await agentOn(root)
    await prompt(agent, 'Hello.')
    const execution = await root.commands.execute(agent, '/compact', [], AbortSignal.timeout(10_000))
    assert.equal(execution.result.text, 'No compactable history yet.')
  })

  it('is busy while another producer holds a live bracket, and a stale one before session/end-seed does not block', async () => {
    const model = new PressureModel({ contextWindow: 200_000, script: exploring(4) })
    const root = await bootHost({ model })
    const agent = await agentOn(root)
    await prompt(agent, 'Map src/p.')
    const session = agent.session
    session.append('compaction/start', { compactionId: 'other-producer', turn: null })
    await assert.rejects(root.compaction.compactNow(agent, AbortSignal.timeout(10_000)), (e) => e instanceof ManualCompactionError && e.code === 'busy')
    const execution = await root.commands.execute(agent, '/compact', [], AbortSignal.timeout(10_000))
    assert.match(execution.result.text, /active compaction/)
    assert.equal(compactionsOf(session).length, 0)
  })
})

describe('context overflow', () => {
  it('recovers from the provider\'s context-overflow error by compacting and retrying', async () => {
    let refused = false
    const model = new PressureModel({
      contextWindow: 1_000_000,
      script: exploring(5),
      fail: (/** @type {any} */ _o, /** @type {number} */ n) => {
        if (n === 4 && !refused) {
          refused = true
          return { code: 'CONTEXT_WINDOW_EXCEEDED', message: 'maximum context length exceeded' }
        }
        return undefined
      },
    })
    const root = await bootHost({ model })
    const agent = await agentOn(root)
    await prompt(agent, 'Map src/p.')
    assert.ok(refused)
    const [c] = compactionsOf(agent.session)
    assert.ok(c, 'no compaction after the overflow')
    assert.equal(c.replacement.data.source.foldCompaction.trigger, 'context-overflow')
    assert.ok(model.requests.length >= 6, 'the refused request was not retried')
    assert.deepEqual(protocolProblems(model.requests.at(-1).messages), [])
  })
})

describe('the llm summarizer', () => {
  it('makes one call routed and framed as compaction-basic does, and carries the user\'s words beside it', async () => {
    const model = new PressureModel({ contextWindow: 8000, script: exploring(8), summarize: () => ({ text: '- probed src/p; checksum mismatch in every file' }) })
    const root = await bootHost({ model, config: { summarizer: 'llm' } })
    const agent = await agentOn(root)
    await prompt(agent, 'Find why the checksum fails in src/p.')
    const [c] = compactionsOf(agent.session)
    assert.ok(c)
    const request = model.summaryRequests[0]
    assert.equal(request.purpose, 'compaction')
    assert.deepEqual([request.provider, request.model], ['scripted', 'm1'])
    assert.equal(c.summary.data.llmStreamCall, true)
    assert.equal(c.summary.data.provider, 'scripted')
    assert.equal(c.replacement.data.source.foldCompaction.summarizer, 'llm')
    const text = textOf(c.replacement.data)
    assert.match(text, /checksum mismatch in every file/)
    assert.match(text, /Find why the checksum fails in src\/p\./)
    assert.equal(model.summaryRequests.length, compactionsOf(agent.session).length)
  })

  it('falls back to the extractive summary when the call fails', async () => {
    const model = new PressureModel({ contextWindow: 8000, script: exploring(8), summarize: () => [{ type: 'finish', reason: { kind: 'error', failure: { code: 'PROVIDER_ERROR', message: 'upstream 500' } } }] })
    model.summarize = () => {
      throw new Error('upstream 500')
    }
    const root = await bootHost({ model, config: { summarizer: 'llm' } })
    const agent = await agentOn(root)
    await prompt(agent, 'Find why the checksum fails in src/p.')
    const [c] = compactionsOf(agent.session)
    assert.ok(c, 'the fallback did not land')
    assert.equal(c.replacement.data.source.foldCompaction.summarizer, 'extractive')
    assert.equal(c.summary.data.provider, 'dsh-fold')
  })
})

describe('compactRegion and configuration', () => {
  it('compacts an explicit balanced range inside the open turn, and refuses an unbalanced one', async () => {
    /** @type {any} */
    let result
    /** @type {unknown} */
    let refused
    const model = new PressureModel({
      contextWindow: 200_000,
      script: async (/** @type {any} */ _o, /** @type {number} */ n) => {
        if (n < 4) return { calls: [probe(`q${n}`, `src/q/${n}.rs`)] }
        return { text: 'done' }
      },
    })
    const root = await bootHost({ model })
    root.on('agent/pre-step', async (/** @type {any} */ { agent }, /** @type {() => any} */ next) => {
      const nodes = agent.session.surface.nodes
      if (!result && nodes.length >= 7) {
        refused = await root.compaction.compactRegion(nodes[1], nodes[1], agent).then(() => undefined, (e) => e)
        result = await root.compaction.compactRegion(nodes[1], nodes[4], agent)
      }
      return next()
    })
    const agent = await agentOn(root)
    await prompt(agent, 'Map src/q.')
    assert.match(String(refused), /not a balanced boundary/)
    assert.ok(result, 'no compaction')
    assert.equal(result.shadowedSeqs.length, 4)
    assert.deepEqual(protocolProblems(agent.session.deriveMessages()), [])
    assert.equal(compactionsOf(agent.session)[0].start.data.turn, 1)
  })

  it('every entry point checks its range with DSH\'s toolPairingBalancedBefore/After at commit time: a planned range that would split a call from its result is refused, nothing written', async () => {
    // The planner (the addon, on the session's mirror) made to return a range that starts at a
    // tool result whose call stays outside: what a planner or mirror defect would hand over.
    const plan = addon.planCompaction
    /** The session being compacted. @type {any} */
    let session
    let split = 0
    addon.planCompaction = (/** @type {any[]} */ ...args) => {
      const p = plan(...args)
      const seqs = p ? Array.from(p.seqs) : []
      const at = seqs.findIndex((s, i) => i > 0 && session.events[s]?.type === 'tool/result')
      if (at < 0) return p
      split++
      return { ...p, seqs: Uint32Array.from(seqs.slice(at)), start: seqs[at], startPos: p.startPos + at }
    }
    try {
      // `/compact`: refused (`commit`), nothing appended.
      const quiet = await bootHost({ model: new PressureModel({ contextWindow: 200_000, script: exploring(4) }) })
      const manual = await agentOn(quiet)
      session = manual.session
      await prompt(manual, 'First task: map src/p.')
      await prompt(manual, 'Second task: now src/q.')
      const seq = session.seq
      const refused = await quiet.compaction.compactNow(manual, AbortSignal.timeout(10_000)).then(() => null, (e) => e)
      assert.ok(refused instanceof ManualCompactionError, String(refused))
      assert.equal(refused.code, 'commit')
      assert.match(String(refused.cause?.message), /toolPairingBalancedBefore\/After/)
      assert.equal(session.seq, seq, 'nothing was appended: no bracket, no replacement')
      // Pressure at the step boundaries of a real turn: every pass refused, the turn goes on uncompacted.
      const pressed = await agentOn(await bootHost({ model: new PressureModel({ contextWindow: 8000, script: exploring(8) }) }))
      session = pressed.session
      const before = split
      await prompt(pressed, 'Find why the checksum fails in src/p and fix it.')
      assert.ok(split > before, 'pressure planned a compaction')
      assert.deepEqual(compactionsOf(session), [])
      assert.deepEqual(protocolProblems(session.deriveMessages()), [])
    } finally {
      addon.planCompaction = plan
    }
  })

  it('fails at load on a bad configuration, naming the key', async () => {
    const model = new PressureModel({ contextWindow: 8000, script: exploring(2) })
    for (const [config, pattern] of /** @type {const} */ ([
      [{ retainRatio: 0.9 }, /retainRatio \(0\.9\) must be less than thresholdRatio/],
      [{ retainRatio: 0.1, retainTokens: 100 }, /mutually exclusive/],
      [{ summarizer: 'gpt' }, /summarizer/],
      [{ summarizationProvider: 'x' }, /set together/],
      [{ modelPolicies: [{ provider: 'a', model: 'b' }, { provider: 'a', model: 'b' }] }, /duplicate model policy/],
      [{ intentChars: -1 }, /intentChars \(-1\) must be an integer >= 0/],
      [{ namesChars: 12.5 }, /namesChars \(12\.5\) must be an integer >= 0/],
    ])) {
      const { resolveConfig } = await import('../../plugin/compaction/config.js')
      assert.throws(() => resolveConfig(config), (e) => e.code === 'INVALID_CONFIG' && pattern.test(e.message), JSON.stringify(config))
    }
    await assert.rejects(async () => {
      const root = await bootHost({ model, config: { thresholdRatio: 2 } })
      root.compaction.config
    })
  })
})

describe('/compact when the selected span changes during an llm summary', () => {
  it('fails `changed`, records the attempt in a closed bracket, and leaves the surface as it was', async () => {
    /** @type {any} */
    let agentRef
    const model = new PressureModel({
      contextWindow: 200_000,
      script: exploring(4),
      summarize: () => {
        // Another producer rewrites a message inside the selected span while the call runs.
        const session = agentRef.session
        const target = session.surface.nodes[1]
        session.append('user/message', { role: 'user', id: 'rewritten', content: [{ type: 'text', text: 'rewritten' }], source: { kind: 'plugin', plugin: 'rewind', markId: 99 } }, { surfaceOp: { op: 'replace', start: target, end: session.surface.nodes[2] }, sourceEventSeqs: [target, session.surface.nodes[2]] })
        return { text: 'a summary' }
      },
    })
    const root = await bootHost({ model, config: { summarizer: 'llm' } })
    const agent = (agentRef = await agentOn(root))
    await prompt(agent, 'Map src/p.')
    await prompt(agent, 'And src/q.')
    await assert.rejects(root.compaction.compactNow(agent, AbortSignal.timeout(10_000)), (e) => e instanceof ManualCompactionError && e.code === 'changed')
    const events = agent.session.events
    const end = events.findLast((/** @type {any} */ e) => e.type === 'compaction/end')
    assert.match(end.data.error, /changed/)
    assert.equal(compactionsOf(agent.session).length, 0)
  })
})
