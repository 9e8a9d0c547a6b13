// Block mode (`dsh-fold/block`) on real DeepSeek Harness parts, Node >= 22: a real AgentLoop
// drives a scripted model that issues real `block_run_code` programs, run by the real
// WorkerThreadCodeRuntime through the real ToolRuntime in `both` mode; DSH's invariant
// companions check every event. Each test asserts on the real log, the real surface, DSH's own
// token meter, and the next request the model receives.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { defineTool } from '@deepseek-ai/dsh-tools'

import {
  NOTES,
  agentOn,
  assertMeterAgrees,
  blockCall,
  bootBlockHost,
  commitsOf,
  createUserMessage,
  dispatchesOf,
  meterAtEveryCommit,
  prompt,
  resultOf,
  shape,
  textOf,
  valueOf,
} from './harness.mjs'

const SUMMARY_A = 'Read alpha and beta: the capacitor needs 1.21 GW; the build id is ZEBRA-42.'
const REFUSAL = 'In block mode only `block_run_code` may be called directly'

/** The messages of the model's `n`-th request. @param {any} model @param {number} n */
const sent = (model, n) => model.requests[n].messages
/** A summary call inside a program, returning its result. @param {string[]} ids @param {string} summary */
const closeIn = (ids, summary) => `return await tools.block_summary(${JSON.stringify({ ids, summary })})`
/** The tool/result seq of a call. @param {any} session @param {string} id */
const resultSeq = (session, id) => /** @type {{seq: number}} */ (resultOf(session, id)).seq
/** The seq of the assistant message holding a call. @param {any} session @param {string} id */
const callSeq = (session, id) =>
  session.events.find((/** @type {any} */ e) => e.type === 'assistant/message' && e.data.message.content.some((/** @type {any} */ b) => b.id === id)).seq

/**
 * Test tools for "another producer": `foreign` opens or closes a compaction bracket of its own
 * (what DSH's compaction-basic writes while its summary call runs), `user_says` steers a user
 * message into the agent's next step.
 * @param {any} root
 */
function producerTools(root) {
  /** @type {string | undefined} */
  let open
  root.tools.register(
    defineTool({
      name: 'foreign',
      description: 'Test: open or close a compaction bracket of another producer.',
      parameters: { action: { type: 'string', required: true, enum: ['start', 'end'] } },
      output: { schema: { type: 'integer' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
      execute: async ({ action }, exec) => {
        const session = exec.agent.session
        const turn = session.events.findLast((/** @type {any} */ e) => e.type === 'turn/start').data.turn
        if (action === 'start') open = `foreign-${session.seq}`
        return session.append(`compaction/${action}`, { compactionId: open, turn, ...(action === 'end' ? { error: 'test producer' } : {}) }).seq
      },
    }),
  )
  root.tools.register(
    defineTool({
      name: 'user_says',
      description: 'Test: the user steers a message into the next step.',
      parameters: { text: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      execute: async ({ text }, exec) => {
        exec.agent.steer(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }))
        return 'queued'
      },
    }),
  )
}

describe('block_run_code delegates to the host run_code', () => {
  const PROGRAM = 'console.log("hello from the program"); const a = await tools.lookup({key: "alpha"}); return {a, n: 2}'
  const FAILING = 'await tools.lookup({key: "beta"}); throw new Error("boom in the program")'

  it('returns run_code\'s result unchanged: same content, errors, sub-call ids, under the same call id', async () => {
    const block = await bootBlockHost({
      script: [{ calls: [blockCall('c1', ['A'], PROGRAM)] }, { calls: [blockCall('c2', ['A'], FAILING)] }, { text: 'done' }],
    })
    const native = await bootBlockHost({
      block: false,
      script: [
        { calls: [{ id: 'c1', name: 'run_code', args: { description: 'program c1', code: PROGRAM } }] },
        { calls: [{ id: 'c2', name: 'run_code', args: { description: 'program c2', code: FAILING } }] },
        { text: 'done' },
      ],
    })
    const inBlock = await agentOn(block.root)
    const direct = await agentOn(native.root)
    await prompt(inBlock, 'read alpha')
    await prompt(direct, 'read alpha')

    for (const id of ['c1', 'c2']) {
      assert.deepEqual(resultOf(inBlock.session, id)?.text, resultOf(direct.session, id)?.text, `result of ${id}`)
      assert.equal(resultOf(inBlock.session, id)?.isError, id === 'c2')
      const strip = (/** @type {any[]} */ ds) => ds.map(({ rootCallId, parentCallId, subCallId, name, arguments: args, isError, content }) => ({ rootCallId, parentCallId, subCallId, name, args, isError, content }))
      assert.deepEqual(strip(dispatchesOf(inBlock.session, id)), strip(dispatchesOf(direct.session, id)))
    }
    assert.deepEqual(
      dispatchesOf(inBlock.session, 'c1').map((d) => [d.subCallId, d.parentCallId, d.rootCallId]),
      [['c1:code:1', 'c1', 'c1']],
    )
    assert.match(resultOf(inBlock.session, 'c1')?.text ?? '', new RegExp(`hello from the program\\n[\\s\\S]*${NOTES.alpha}`))
    assert.match(resultOf(inBlock.session, 'c2')?.text ?? '', /boom in the program/)
    // The model read the same tool messages in both hosts.
    const tools = (/** @type {any[]} */ ms) => ms.filter((m) => m.content.some((/** @type {any} */ b) => b.type === 'tool-result')).map(textOf)
    assert.deepEqual(tools(sent(block.model, 2)), tools(sent(native.model, 2)))
  })

  it('cuts a program short at its timeoutMs and says so', async () => {
    const { root } = await bootBlockHost({
      script: [{ calls: [blockCall('c1', ['A'], 'await new Promise(() => {})', { timeoutMs: 200 })] }, { text: 'gave up' }],
    })
    const agent = await agentOn(root)
    await prompt(agent, 'wait forever')
    const result = resultOf(agent.session, 'c1')
    assert.equal(result?.isError, true)
    assert.match(result?.text ?? '', /exceeded its timeoutMs budget \(200 ms\)/)
  })
})

describe('the test tools read what the model sends as data', () => {
  it('lookup: a key named like an Object.prototype member is no note', async () => {
    const { root } = await bootBlockHost({
      script: [{ calls: [blockCall('c1', ['A'], 'const out = []; for (const key of ["constructor", "toString", "__proto__", "alpha"]) { try { out.push(await tools.lookup({key})) } catch (e) { out.push(e.message) } } return out')] }, { text: 'done' }],
    })
    const agent = await agentOn(root)
    await prompt(agent, 'look up odd keys')
    const text = resultOf(agent.session, 'c1')?.text ?? ''
    for (const key of ['constructor', 'toString', '__proto__']) assert.match(text, new RegExp(`no note ${key}`))
    assert.ok(text.includes(NOTES.alpha))
  })
})

describe('the guard and the wire', () => {
  it('refuses direct calls to anything but block_run_code, and a nested block_run_code', async () => {
    const { root, model } = await bootBlockHost({
      script: [
        { calls: [{ id: 'd1', name: 'lookup', args: { key: 'alpha' } }] },
        {
          calls: [
            { id: 'd2', name: 'block_summary', args: { ids: ['A'], summary: 'x' } },
            { id: 'd3', name: 'run_code', args: { description: 'direct', code: 'return 1' } },
          ],
        },
        { calls: [blockCall('c1', ['A'], 'try { await tools.block_run_code({ids: ["B"], description: "nested", code: "return 1"}) } catch (e) { return e.message }')] },
        { text: 'done' },
      ],
    })
    const agent = await agentOn(root)
    await prompt(agent, 'try everything')
    for (const id of ['d1', 'd2', 'd3']) {
      const r = resultOf(agent.session, id)
      assert.equal(r?.isError, true, id)
      assert.match(r?.text ?? '', new RegExp(REFUSAL.replace(/[`.*]/g, '\\$&')), id)
    }
    assert.match(resultOf(agent.session, 'c1')?.text ?? '', /`block_run_code` cannot run inside a program/)
    // Nothing was summarized and no compaction lock was taken.
    assert.ok(!agent.session.events.some((/** @type {any} */ e) => e.type.startsWith('compaction/')))
    assert.equal(model.requests.length, 4)
  })

  it('sends only block_run_code on the wire, with the SDK listing block_summary and the block-mode section', async () => {
    const { root, model } = await bootBlockHost({ script: [{ text: 'hi' }] })
    await prompt(await agentOn(root), 'hello')
    const request = model.requests[0]
    assert.deepEqual(request.tools.map((/** @type {any} */ t) => t.name), ['block_run_code'])
    assert.match(request.system, /## Block mode/)
    assert.match(request.system, /block_summary/)
    assert.match(request.system, /lookup/) // the SDK still declares the host's tools
    const schema = request.tools[0].parameters
    assert.deepEqual(Object.keys(schema.properties).sort(), ['code', 'description', 'id', 'ids', 'timeoutMs'])
  })
})

describe('closing blocks', () => {
  it('a summary requested inside its own block is pending, then lands right after the program\'s result, before the next request', async () => {
    /** @type {number[]} */
    let priced = []
    const { root, model } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['A'], `await tools.lookup({key: "beta"}); ${closeIn(['A'], SUMMARY_A)}`)] },
        { text: 'The build id is ZEBRA-42.' },
      ],
    })
    const agent = await agentOn(root)
    const session = agent.session
    // DSH's own meter, read at the lock: the price of each node about to be replaced.
    root.on('session/event', (/** @type {any} */ s, /** @type {any} */ e) => {
      if (s === session && e.type === 'compaction/start') priced = root.tokenMeter.measure(s).nodes
    })
    await prompt(agent, 'What is the build id?')

    const [dispatch] = dispatchesOf(session, 'c2').filter((d) => d.name === 'block_summary')
    const answer = valueOf(dispatch)
    assert.equal(answer.pending, true)
    assert.equal(answer.replaced, 0)
    assert.equal(answer.tokensFreed, 0)
    assert.equal(typeof answer.requestSeq, 'number')
    assert.match(answer.note, /^Queued: /)

    const [commit] = commitsOf(session)
    assert.ok(commit, 'no commit in the log')
    const { start, summary, replacement, end } = commit
    // Four events, adjacent, right after c2's result and before the next model request.
    assert.ok(start.seq > resultSeq(session, 'c2'))
    assert.deepEqual([summary.seq, replacement.seq, end.seq], [start.seq + 1, start.seq + 2, start.seq + 3])
    // ... in the same step: the next step (and its model request) starts after the commit.
    assert.equal(session.events[end.seq + 1].type, 'step/end')
    assert.deepEqual([start.type, summary.type, replacement.type, end.type], ['compaction/start', 'compaction/summary', 'user/message', 'compaction/end'])
    const shadowed = [callSeq(session, 'c1'), resultSeq(session, 'c1'), callSeq(session, 'c2'), resultSeq(session, 'c2')]
    assert.deepEqual(summary.data.shadowedSeqs, shadowed)
    assert.deepEqual(summary.data.shadowedRange, { start: shadowed[0], end: shadowed[3] })
    assert.deepEqual(replacement.surfaceOp, { op: 'replace', start: shadowed[0], end: shadowed[3] })
    assert.deepEqual(replacement.sourceEventSeqs, [start.seq, summary.seq, ...shadowed])
    assert.equal(summary.data.provider, 'scripted')
    assert.equal(summary.data.model, 'm1')
    assert.equal(end.data.error, undefined)
    for (const e of [start, summary, end]) assert.equal(e.data.compactionId, replacement.data.source.compactionId)
    assert.equal(start.data.turn, 1)
    assert.deepEqual(replacement.data.source.blockPtc, { remaining: [], closed: ['A'], requestSeq: answer.requestSeq })
    assert.equal(replacement.data.source.plugin, 'compact')
    // The meter's price of the replaced nodes is the shadow price.
    const price = priced.filter((n) => shadowed.includes(n.seq)).reduce((t, n) => t + n.tokens, 0)
    assert.equal(summary.data.shadowedTokenCount, price)
    assertMeterAgrees(root, session)

    // The body: the agent's own summary, no `Block ids` line when none remain.
    const body = textOf(replacement.data)
    assert.match(body, /^<block-summary>\nThis is your own summary of your earlier work/)
    assert.ok(body.includes(SUMMARY_A) && body.endsWith('</block-summary>'))
    assert.doesNotMatch(body, /Block ids/)

    // The next request: the user's question and the summary; the block is gone.
    const next = sent(model, 2)
    assert.equal(shape(next), 'user summary')
    assert.equal(textOf(next[1]), body)
    assert.ok(!next.some((m) => textOf(m).includes(NOTES.beta)))
    assert.deepEqual([...session.surface.nodes].slice(0, 2), [session.events.find((/** @type {any} */ e) => e.type === 'user/message').seq, replacement.seq])
  })

  it('closes an earlier block from another block\'s program at once: {replaced, tokensFreed}', async () => {
    const { root, model } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['B'], `const r = await tools.block_summary({ids: ["A"], summary: "alpha needs 1.21 GW"}); return {r, b: await tools.lookup({key: "beta"})}`)] },
        { text: 'done' },
      ],
    })
    const agent = await agentOn(root)
    const before = { tokens: 0 }
    root.on('session/event', (/** @type {any} */ s, /** @type {any} */ e) => {
      if (s === agent.session && e.type === 'compaction/start') {
        const shadow = [callSeq(s, 'c1'), resultSeq(s, 'c1')]
        before.tokens = root.tokenMeter.measure(s).nodes.filter((/** @type {any} */ n) => shadow.includes(n.seq)).reduce((t, /** @type {any} */ n) => t + n.tokens, 0)
      }
    })
    await prompt(agent, 'read both')
    const answer = valueOf(dispatchesOf(agent.session, 'c2').find((d) => d.name === 'block_summary'))
    assert.deepEqual(answer, { replaced: 2, tokensFreed: before.tokens })
    assert.ok(before.tokens > 0)
    // Committed inside the program, before c2's result.
    const [commit] = commitsOf(agent.session)
    assert.ok(commit.end.seq < resultSeq(agent.session, 'c2'))
    assert.equal(shape(sent(model, 2)), 'user summary assistant(block_run_code) tool')
    assertMeterAgrees(root, agent.session)
  })

  it('carries the other ids of its range on (A A B A → S[B]), and a later summary closes them (S[B] → T)', async () => {
    const { root, model } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['B'], 'return await tools.lookup({key: "beta"})')] },
        { calls: [blockCall('c3', ['A'], closeIn(['A'], 'A: alpha needs 1.21 GW'))] },
        { calls: [blockCall('c4', ['C'], closeIn(['B'], 'B: build id ZEBRA-42'))] },
        { text: 'done' },
      ],
    })
    const agent = await agentOn(root)
    const meter = meterAtEveryCommit(root, agent.session)
    await prompt(agent, 'interleave')
    assert.equal(meter.commits, 2)
    assert.equal(meter.error, undefined)
    const [s, t] = commitsOf(agent.session)
    assert.deepEqual(s.replacement.data.source.blockPtc.remaining, ['B'])
    assert.match(textOf(s.replacement.data), /\nBlock ids: B\n/)
    assert.deepEqual(s.summary.data.shadowedSeqs, ['c1', 'c2', 'c3'].flatMap((id) => [callSeq(agent.session, id), resultSeq(agent.session, id)]))
    // The second summary replaces the first one alone (B appears nowhere else) and carries nothing.
    assert.deepEqual(t.summary.data.shadowedSeqs, [s.replacement.seq])
    assert.deepEqual(t.replacement.data.source.blockPtc, { remaining: [], closed: ['B'], requestSeq: t.replacement.data.source.blockPtc.requestSeq })
    const answer = valueOf(dispatchesOf(agent.session, 'c4').find((d) => d.name === 'block_summary'))
    assert.equal(answer.replaced, 1)
    assert.equal(answer.ids, undefined)
    assert.equal(shape(sent(model, 4)), 'user summary assistant(block_run_code) tool')
    assert.match(textOf(sent(model, 4)[1]), /B: build id ZEBRA-42/)
    assertMeterAgrees(root, agent.session)
  })

  it('takes the legacy `id` as ids: [id]', async () => {
    const { root, model } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', { id: 'A' }, 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', { id: 'A' }, 'return await tools.block_summary({id: "A", summary: "alpha needs 1.21 GW"})')] },
        { text: 'done' },
      ],
    })
    const agent = await agentOn(root)
    await prompt(agent, 'legacy')
    const [commit] = commitsOf(agent.session)
    assert.deepEqual(commit.replacement.data.source.blockPtc.closed, ['A'])
    assert.equal(commit.summary.data.shadowedSeqs.length, 4)
    assert.equal(shape(sent(model, 2)), 'user summary')
  })

  it('waits for another producer\'s open compaction, and lands when it ends', async () => {
    const { root, model } = await bootBlockHost({
      tools: producerTools,
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['B'], `await tools.foreign({action: "start"}); ${closeIn(['A'], 'alpha needs 1.21 GW')}`)] },
        (/** @type {any} */ options) => {
          // c2 is done, but the summary still waits: the other compaction holds the lock.
          assert.equal(shape(options.messages), 'user assistant(block_run_code) tool assistant(block_run_code) tool')
          return { calls: [blockCall('c3', ['B'], 'return await tools.foreign({action: "end"})')] }
        },
        { text: 'done' },
      ],
    })
    const agent = await agentOn(root)
    await prompt(agent, 'with a foreign compaction')
    const answer = valueOf(dispatchesOf(agent.session, 'c2').find((d) => d.name === 'block_summary'))
    assert.equal(answer.pending, true)
    assert.match(answer.note, /compaction/)
    const [commit] = commitsOf(agent.session)
    const foreignEnd = agent.session.events.find((/** @type {any} */ e) => e.type === 'compaction/end' && e.data.compactionId.startsWith('foreign-'))
    assert.ok(commit.start.seq > foreignEnd.seq)
    assert.equal(shape(sent(model, 3)), 'user summary assistant(block_run_code) tool assistant(block_run_code) tool')
    assertMeterAgrees(root, agent.session)
  })

  it('on a host without a token meter: lands all the same, priced by characters, and the result says so', async () => {
    const { root, model } = await bootBlockHost({
      meter: false,
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['B'], closeIn(['A'], 'alpha needs 1.21 GW'))] },
        { text: 'done' },
      ],
    })
    const agent = await agentOn(root)
    await prompt(agent, 'no meter')
    const answer = valueOf(dispatchesOf(agent.session, 'c2').find((d) => d.name === 'block_summary'))
    assert.equal(answer.replaced, 2)
    assert.match(answer.note, /No token meter is mounted.*characters \/ 4/)
    const [commit] = commitsOf(agent.session)
    assert.equal(commit.summary.data.shadowedTokenCount, answer.tokensFreed)
    assert.ok(answer.tokensFreed > 0)
    assert.equal(shape(sent(model, 2)), 'user summary assistant(block_run_code) tool')
  })

  it('speaks Chinese when configured: the prompt section, the summary frame and the notes', async () => {
    const { root, model } = await bootBlockHost({
      block: { language: 'zh' },
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['A'], closeIn(['A'], '电容需要 1.21 GW'))] },
        { text: '完成' },
      ],
    })
    const agent = await agentOn(root)
    await prompt(agent, '读一下')
    assert.match(model.requests[0].system, /## 区块模式/)
    const answer = valueOf(dispatchesOf(agent.session, 'c2').find((d) => d.name === 'block_summary'))
    assert.match(answer.note, /^已排队（`[^`]+`）。/)
    const body = textOf(sent(model, 2)[1])
    assert.match(body, /^<block-summary>\n以下是你自己对先前工作的总结/)
    assert.ok(body.includes('电容需要 1.21 GW'))
  })
})
