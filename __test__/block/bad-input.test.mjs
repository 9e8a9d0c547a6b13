// Block mode's error paths on real DeepSeek Harness parts (Node >= 22). Every bad input gets a
// clear, coded error and changes nothing: the session's log length and surface are compared
// before and after each refused call. Calls go through the real ToolRuntime (`tools.execute`)
// with a parent token, exactly as a program's sub-call does, on a session built by a real
// agent turn; a few also run inside real programs to show what the model reads.
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'

import { defineTool } from '@deepseek-ai/dsh-tools'

import Block from '../../plugin/block/block.js'
import { agentOn, blockCall, bootBlockHost, commitsOf, createUserMessage, dispatchesOf, prompt, resultOf, shape, stateOf, textOf, valueOf } from './harness.mjs'

/** One sub-call as a program would make it; resolves the tool's final result. */
async function subCall(/** @type {any} */ root, /** @type {any} */ agent, /** @type {string} */ name, /** @type {object} */ args, { direct = false } = {}) {
  const parent = direct ? {} : { parent: Symbol('program') }
  return root.tools.execute({ callId: `bad:${name}`, name, arguments: args, agent, ...parent, signal: new AbortController().signal })
}

describe('bad input to block_summary changes nothing', () => {
  /** @type {any} */ let root
  /** @type {any} */ let agent
  before(async () => {
    ;({ root } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['B'], 'return await tools.lookup({key: "beta"})')] },
        { text: 'two open blocks' },
      ],
    }))
    agent = await agentOn(root)
    await prompt(agent, 'open A and B')
  })

  const cases = [
    ['an empty ids list', { ids: [], summary: 's' }, 'INVALID_ARGUMENT', /`ids` is empty/],
    ['a duplicate id', { ids: ['A', 'A'], summary: 's' }, 'INVALID_ARGUMENT', /listed twice/],
    ['a blank id', { ids: ['A', ' '], summary: 's' }, 'INVALID_ARGUMENT', /must not be empty/],
    ['both id and ids', { id: 'A', ids: ['A'], summary: 's' }, 'INVALID_ARGUMENT', /not both/],
    ['neither id nor ids', { summary: 's' }, 'INVALID_ARGUMENT', /name the blocks/],
    ['an empty summary', { ids: ['A'], summary: '  \n' }, 'INVALID_ARGUMENT', /`summary` is empty/],
    ['an unknown id', { ids: ['A', 'Z'], summary: 's' }, 'UNKNOWN_BLOCK', /Z/],
    // What a program can pass for the price of one call: refused by the list's length, in a short message.
    ['200,000 ids', { ids: Array.from({ length: 200_000 }, (_, i) => `id-${i}`), summary: 's' }, 'INVALID_ARGUMENT', /names 200000 blocks; one call names at most 256\./],
    ['an id of 100,000 characters', { ids: ['A', 'q'.repeat(100_000)], summary: 's' }, 'INVALID_ARGUMENT', /^INVALID_ARGUMENT: block id "q{39}… is 100000 characters long; a block id has at most 256/],
    ['a repeated long id', { ids: ['r'.repeat(200), 'r'.repeat(200)], summary: 's' }, 'INVALID_ARGUMENT', /^INVALID_ARGUMENT: block id "r{39}… is listed twice/],
    ['256 unknown ids', { ids: Array.from({ length: 256 }, (_, i) => `u${i}`), summary: 's' }, 'UNKNOWN_BLOCK', /"u11" and 244 more;/],
    // The schema DSH validates before the tool body runs: its own code, INVALID_ARGS.
    ['a non-string id', { ids: ['A', 7], summary: 's' }, 'INVALID_ARGS', /ids/],
    ['a non-string summary', { ids: ['A'], summary: 42 }, 'INVALID_ARGS', /summary/],
    ['no summary', { ids: ['A'] }, 'INVALID_ARGS', /summary/],
  ]
  for (const [what, args, code, message] of cases) {
    it(`${what}: ${code}`, async () => {
      const was = stateOf(agent.session)
      const result = await subCall(root, agent, 'block_summary', /** @type {object} */ (args))
      assert.equal(result.isError, true)
      assert.equal(result.error.info?.code, code, result.error.message)
      assert.match(result.error.message, /** @type {RegExp} */ (message))
      assert.ok(result.error.message.length < 600, `${result.error.message.length} chars`)
      if (code !== 'INVALID_ARGS') assert.match(result.error.message, new RegExp(`^${code}: `))
      assert.deepEqual(stateOf(agent.session), was)
    })
  }

  it('a call outside a program (no parent token): the seed\'s refusal', async () => {
    const was = stateOf(agent.session)
    const result = await subCall(root, agent, 'block_summary', { ids: ['A'], summary: 's' }, { direct: true })
    assert.equal(result.isError, true)
    assert.equal(result.error.message, 'In block mode only `block_run_code` may be called directly')
    assert.deepEqual(stateOf(agent.session), was)
  })

  it('inside a program, the model reads the code, what happened and what to do', async () => {
    const { root: host, model } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['A'], 'try { await tools.block_summary({ids: ["Q"], summary: "x"}) } catch (e) { return e.message }')] },
        { text: 'ok' },
      ],
    })
    const a = await agentOn(host)
    await prompt(a, 'unknown id')
    assert.match(resultOf(a.session, 'c2')?.text ?? '', /UNKNOWN_BLOCK: .*Q.* Name ids your `block_run_code` calls carried; nothing was closed\./s)
    assert.deepEqual(commitsOf(a.session), [])
    assert.equal(shape(model.requests[2].messages), 'user assistant(block_run_code) tool assistant(block_run_code) tool')
  })
})

describe('a range that crosses a protected message', () => {
  it('is rejected whole: PROTECTED, nothing replaced', async () => {
    const { root } = await bootBlockHost({
      tools: (host) =>
        host.tools.register(
          defineTool({
            name: 'system_says',
            description: 'Test: a host-level system message joins the conversation at the next step.',
            parameters: { text: { type: 'string', required: true } },
            output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
            execute: async ({ text }, exec) => {
              exec.agent.steer(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'system' } }))
              return 'queued'
            },
          }),
        ),
      script: [
        { calls: [blockCall('c1', ['A'], 'await tools.lookup({key: "alpha"}); return await tools.system_says({text: "Policy: never delete files."})')] },
        { calls: [blockCall('c2', ['A'], 'return await tools.lookup({key: "beta"})')] },
        { text: 'ok' },
      ],
    })
    const agent = await agentOn(root)
    await prompt(agent, 'across a system message')
    assert.ok(agent.session.deriveMessages().some((/** @type {any} */ m) => m.source?.kind === 'system'))
    const was = stateOf(agent.session)
    const result = await subCall(root, agent, 'block_summary', { ids: ['A'], summary: 's' })
    assert.equal(result.isError, true)
    assert.equal(result.error.info?.code, 'PROTECTED', result.error.message)
    assert.match(result.error.message, /^PROTECTED: .* Nothing was replaced/s)
    assert.deepEqual(stateOf(agent.session), was)
  })
})

describe('bad input to block_run_code runs no program and opens no block', () => {
  const cases = [
    ['an empty ids list', { ids: [] }, /`ids` is empty/],
    ['a duplicate id', { ids: ['A', 'A'] }, /listed twice/],
    ['257 ids', { ids: Array.from({ length: 257 }, (_, i) => `id-${i}`) }, /names 257 blocks; one call names at most 256/],
    ['a description of 5,000 characters', { ids: ['A'], description: 'd'.repeat(5000) }, /`description` is 5000 characters long/],
    ['both id and ids', { id: 'A', ids: ['A'] }, /not both/],
    ['neither id nor ids', {}, /name the blocks/],
    ['a zero timeout', { ids: ['A'], timeoutMs: 0 }, /timeoutMs/],
    ['a timeout past maxTimeoutMs', { ids: ['A'], timeoutMs: 600_001 }, /timeoutMs/],
  ]
  for (const [what, extra, message] of cases) {
    it(`${what}: INVALID_ARGUMENT`, async () => {
      const { root, model } = await bootBlockHost({
        script: [
          { calls: [{ id: 'c1', name: 'block_run_code', args: { description: 'bad', code: 'return await tools.lookup({key: "alpha"})', ...extra } }] },
          { text: 'ok' },
        ],
      })
      const agent = await agentOn(root)
      await prompt(agent, 'bad block call')
      const r = resultOf(agent.session, 'c1')
      assert.equal(r?.isError, true)
      assert.match(r?.text ?? '', /INVALID_ARGUMENT: /)
      assert.match(r?.text ?? '', /** @type {RegExp} */ (message))
      assert.match(r?.text ?? '', /Fix the arguments and call again\./)
      assert.ok(!agent.session.events.some((/** @type {any} */ e) => e.type.startsWith('tool/code-dispatch')), 'the program ran')
      assert.ok(!textOf(model.requests[1].messages.at(-1)).includes('flux capacitor'))
      // Invalid ids tag nothing: there is no block A to close. (A call refused for its timeout
      // or its description had valid ids: it belongs to A, and closing A takes it with it.)
      const closing = await subCall(root, agent, 'block_summary', { ids: ['A'], summary: 's' })
      if ('timeoutMs' in extra || 'description' in extra) assert.equal(closing.value?.replaced, 2, closing.error?.message)
      else assert.equal(closing.error?.info?.code, 'UNKNOWN_BLOCK', closing.error?.message)
    })
  }
})

describe('a deferred summary that can no longer land', () => {
  it('is stale when the user spoke inside its range after it was written: logged in a closed bracket, nothing replaced', async () => {
    /** @type {string | undefined} */
    let foreign
    const { root, model } = await bootBlockHost({
      tools: (host) => {
        host.tools.register(
          defineTool({
            name: 'foreign',
            description: 'Test: another producer\'s compaction bracket.',
            parameters: { action: { type: 'string', required: true, enum: ['start', 'end'] } },
            output: { schema: { type: 'integer' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
            execute: async ({ action }, exec) => {
              const session = exec.agent.session
              const turn = session.events.findLast((/** @type {any} */ e) => e.type === 'turn/start').data.turn
              if (action === 'start') foreign = `foreign-${session.seq}`
              return session.append(`compaction/${action}`, { compactionId: foreign, turn, ...(action === 'end' ? { error: 'test producer' } : {}) }).seq
            },
          }),
        )
        host.tools.register(
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
      },
      script: [
        { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
        // The summary of A waits: another producer's compaction is open. Then the user speaks.
        { calls: [blockCall('c2', ['A'], 'await tools.foreign({action: "start"}); const r = await tools.block_summary({ids: ["A"], summary: "alpha needs 1.21 GW"}); await tools.user_says({text: "Also check gamma."}); return r')] },
        // More work in A after the user's message, then the other compaction ends.
        { calls: [blockCall('c3', ['A'], 'await tools.lookup({key: "gamma"}); return await tools.foreign({action: "end"})')] },
        { text: 'ok' },
      ],
    })
    const agent = await agentOn(root)
    await prompt(agent, 'stale')
    const session = agent.session
    const answer = valueOf(dispatchesOf(session, 'c2').find((d) => d.name === 'block_summary'))
    assert.equal(answer.pending, true)
    assert.deepEqual(commitsOf(session), [], 'a stale summary replaced something')
    assert.equal(session.surface.replaceGeneration, 0)
    const ends = session.events.filter((/** @type {any} */ e) => e.type === 'compaction/end' && e.data.blockPtc)
    assert.equal(ends.length, 1)
    assert.match(ends[0].data.error, /^STALE: /)
    assert.deepEqual(ends[0].data.blockPtc, { closed: ['A'], requestSeq: answer.requestSeq })
    const start = session.events[ends[0].seq - 1]
    assert.equal(start.type, 'compaction/start')
    assert.equal(start.data.compactionId, ends[0].data.compactionId)
    // The model still sees everything, the user's message included.
    const last = model.requests[3].messages
    assert.ok(last.some((/** @type {any} */ m) => m.role === 'user' && textOf(m) === 'Also check gamma.'))
    assert.equal(last.filter((/** @type {any} */ m) => m.content.some((/** @type {any} */ b) => b.type === 'tool-call')).length, 3)
  })
})

describe('a host without what block mode needs fails at mount, naming it', () => {
  it('tools presented natively: refuses to mount, naming DSH_TOOLS_MODE=both', async () => {
    const { root } = await bootBlockHost({ mode: 'native', block: false })
    await assert.rejects(root.plugin(Block).await(), /presents tools as "native".*needs "both".*DSH_TOOLS_MODE=both/s)
    assert.equal(root.tools.get('block_run_code'), undefined)
  })

  it('tools presented as code only: refuses to mount', async () => {
    const { root } = await bootBlockHost({ mode: 'code', block: false })
    await assert.rejects(root.plugin(Block).await(), /presents tools as "code".*needs "both"/s)
  })

  it('no code runtime: the plugin waits on `codeRuntime`, which DSH\'s boot audit reports by name', async () => {
    const { root } = await bootBlockHost({ codeRuntime: false, mode: 'native', block: false })
    const fiber = root.plugin(Block)
    await new Promise((resolve) => setImmediate(resolve))
    // What `assertEntriesActivated` in @deepseek-ai/dsh-app-boot reads for a pending entry.
    const missing = Object.keys(fiber.inject).filter((service) => fiber.ctx.get(service) === undefined)
    assert.deepEqual(missing, ['codeRuntime'])
    assert.equal(root.tools.get('block_run_code'), undefined)
  })
})
