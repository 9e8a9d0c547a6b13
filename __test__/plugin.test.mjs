// The dsh-fold DSH plugins (`tool-checkpoint`, `tool-rewind`) on the real DeepSeek Harness
// packages: a real cordis Context with the real LlmRuntime (a scripted LlmAdapter as the model),
// SessionStore, AgentRegistry, SystemPrompt, ToolRuntime and AgentLoop; real agents whose real
// Sessions are built event by event, or driven by real agent turns. Every behaviour of the
// reference suite (`@dpskh/tool-rewind`), on the newer contract (no plugin events in the log,
// failures write nothing, `{markId, foldedNodes, start, end, foldedChars, reportChars}`),
// plus the reference's known defects (compaction before the mark, parallel calls with the
// checkpoint, the turn guard that never held a turn).
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'

import { defineTool } from '@deepseek-ai/dsh-tools'

import { addon } from '../plugin/shared/addon.js'
import { toToolError } from '../plugin/shared/errors.js'
import { Checkpoint, CheckpointConfig, INSTRUCTIONS, Rewind, RewindConfig, isRewindReportSource, reportFrame } from '../plugin/index.js'
import { reportBody } from '../plugin/fold/words.js'
import { isReportInstruction, reportInstruction } from '../plugin/fold/summarize.js'
import {
  CallId,
  ScriptedModel,
  SessionBuilder,
  SessionId,
  bootHost,
  createUserMessage,
  probeTool,
  protocolProblems,
  runTurn,
  say,
  tempStore,
} from './helpers/dsh.mjs'
import { stampFailure } from './helpers/stamp.mjs'

// ---- fixtures -------------------------------------------------------------------------------

/** A 15-char report (the reference's exploration folds 25 chars into it). */
const REPORT = '## Findings\n- X'
/** The exploration's tool output: 23 chars; with the call's `{}` arguments, 25 model-visible chars. */
const OUTPUT = 'exploration output line'
const TOOLS = [{ name: 'bash', description: 'Run a command.', parameters: { type: 'object', properties: { cmd: { type: 'string' } } } }]
const SYSTEM = 'You are a test agent.'

/** A report call the test holds open: `wait()` (the model's answer) resolves `entered`, then waits for `release(reply)`. */
function gate() {
  const entered = Promise.withResolvers()
  const release = Promise.withResolvers()
  return { entered: entered.promise, release: release.resolve, wait: () => (entered.resolve(), release.promise) }
}

/** Whether a model request is the plugin's report call (the instruction rides last). */
const isReportRequest = (/** @type {any} */ options) => isReportInstruction(options.messages.at(-1))

/** A report as committed: in its frame (the exploration's mark is 1, "explore the failure"). */
const framed = (/** @type {string} */ report, mark = { id: 1, objective: 'explore the failure' }) => `${reportFrame(mark, false)}${report}`

/** The text of a message's text blocks. */
const textOf = (/** @type {any} */ message) =>
  (message?.content ?? []).filter((/** @type {any} */ b) => b.type === 'text').map((/** @type {any} */ b) => b.text).join('')

/** Whether a model-visible message is the turn guard's warning. */
const isWarning = (/** @type {any} */ m) => m.role === 'user' && m.source?.kind === 'plugin' && m.source?.plugin === 'rewind' && m.source.markId === undefined

/**
 * A real DSH host with both plugins mounted on a fresh checkpoint store; the scripted model
 * answers provider `scripted` (and `other`).
 * @param {{respond?: (options: any, n: number) => any, efforts?: string[], rewind?: object, checkpoint?: object}} [o]
 */
async function setup({ respond = () => say(REPORT), efforts, rewind = {}, checkpoint = {} } = {}) {
  const model = new ScriptedModel(respond, efforts ? { efforts } : {})
  const root = await bootHost(model)
  root.llm.registerAdapter(['other'], model)
  await root.plugin(Checkpoint, { store: tempStore(), ...checkpoint })
  await root.plugin(Rewind, rewind)
  return { root, model }
}

/** A real agent on a fresh, empty session. @param {any} root @param {string} id @param {object} [agentOptions] */
async function agentOf(root, id, agentOptions = { provider: 'scripted', model: 'm1' }) {
  const handle = await root.agents.create({ sessionId: SessionId(id), agentOptions, meta: { cwd: tmpdir() } })
  return handle.agent
}

/**
 * The reference's exploration session, on a real agent's session:
 *   0 turn/start · 1 user "Find the cause" · 2 step/start · 3 request/header → checkpoint at logLength 4
 *   4 assistant [bash call, `{}`] · 5 tool/result (23 chars) · 6 step/end · 7 step/start · 8 assistant [rewind call c2]
 * Region [4, 5], 2 nodes, 25 model-visible chars.
 * @param {any} root @param {any} agent
 * @param {{header?: {provider: string, model: string} | null, output?: string}} [o]
 */
async function exploration(root, agent, { header = { provider: 'scripted', model: 'm-header' }, output = OUTPUT } = {}) {
  const b = new SessionBuilder(agent.session)
  b.turn = 1
  b.logOnly('turn/start', { turn: 1 })
  b.user('Find the cause')
  b.logOnly('step/start', { turn: 1, step: 1 })
  if (header) b.header(header, { system: SYSTEM, tools: TOOLS })
  else b.logOnly('step/start', { turn: 1, step: 1 })
  const mark = await root.checkpoint.mark(agent.session, 'explore the failure')
  b.assistant({ calls: [{ id: 'c1', name: 'bash', args: {} }] })
  b.result('c1', output)
  b.logOnly('step/end', { turn: 1, step: 1 })
  b.logOnly('step/start', { turn: 1, step: 2 })
  b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
  return { b, mark, session: agent.session }
}

/** What a failed fold must leave exactly as it was. @param {any} root @param {any} session */
async function state(root, session) {
  return {
    seq: session.seq,
    nodes: [...session.surface.nodes],
    active: await root.checkpoint.hasActive(session.id),
  }
}

/** Asserts `promise` rejects with a dsh-fold error of `code`. @returns the error */
async function rejectsWith(/** @type {Promise<any>} */ promise, /** @type {string} */ code) {
  let error
  await assert.rejects(promise, (e) => {
    error = e
    assert.equal(/** @type {any} */ (e).code, code, /** @type {any} */ (e).message)
    assert.ok(addon.isFoldError(e), 'a classified dsh-fold error')
    return true
  })
  return /** @type {any} */ (error)
}

/** A real exploration tool for agent turns. */
const probe = probeTool((path) => `contents of ${path}: the parser drops the last token when the input ends in a comment`)

/**
 * A scripted model for agent turns: agent requests take the next queued reply (then `say('done')`);
 * report calls answer `report`.
 * @param {any[]} replies @param {any} [report]
 */
function script(replies, report = say(REPORT)) {
  const queue = [...replies]
  return (/** @type {any} */ options) => (isReportRequest(options) ? report : (queue.shift() ?? say('done')))
}
const agentRequests = (/** @type {ScriptedModel} */ model) => model.requests.filter((r) => !isReportRequest(r))
const reportRequests = (/** @type {ScriptedModel} */ model) => model.requests.filter(isReportRequest)
const callReply = (/** @type {string} */ id, /** @type {string} */ name, args = {}) => ({ calls: [{ id, name, args }] })

// ---- config -----------------------------------------------------------------------------------

describe('config', () => {
  it('fills the reference defaults for both plugins', () => {
    assert.deepEqual(RewindConfig({}), {
      toolName: 'rewind',
      maxTokens: 1024,
      maxSummarizationRetries: 2,
      reportLanguage: 'en',
      summarizer: 'llm',
      fallback: 'none',
      reportTimeoutMs: 180_000,
    })
    assert.deepEqual(CheckpointConfig({}), { toolName: 'checkpoint', maxMarksPerSession: 64, maxAgeDays: 30 })
  })

  it('keeps overrides of both plugins', () => {
    const rewind = RewindConfig({
      toolName: 'fold',
      maxTokens: 512,
      maxSummarizationRetries: 0,
      summarizationProvider: 'other',
      summarizationModel: 'deepseek-chat',
      reportLanguage: 'zh',
      summarizer: 'extractive',
      fallback: 'extractive',
    })
    assert.equal(rewind.toolName, 'fold')
    assert.equal(rewind.maxTokens, 512)
    assert.equal(rewind.maxSummarizationRetries, 0)
    assert.equal(rewind.summarizationProvider, 'other')
    assert.equal(rewind.summarizationModel, 'deepseek-chat')
    assert.equal(rewind.reportLanguage, 'zh')
    assert.equal(rewind.summarizer, 'extractive')
    assert.equal(rewind.fallback, 'extractive')
    const checkpoint = CheckpointConfig({ toolName: 'mark', store: '/tmp/x.json', maxMarksPerSession: 3, maxAgeDays: 1 })
    assert.deepEqual(checkpoint, { toolName: 'mark', store: '/tmp/x.json', maxMarksPerSession: 3, maxAgeDays: 1 })
  })

  it('rejects bad rows with a message naming the key', () => {
    const bad = [
      [RewindConfig, { maxSummarizationRetries: 9 }, 'maxSummarizationRetries'],
      [RewindConfig, { reportLanguage: 'fr' }, 'reportLanguage'],
      [RewindConfig, { maxTokens: 0 }, 'maxTokens'],
      [RewindConfig, { summarizer: 'abstractive' }, 'summarizer'],
      [RewindConfig, { fallback: 'llm' }, 'fallback'],
      [RewindConfig, { toolName: '' }, 'toolName'],
      [CheckpointConfig, { toolName: '' }, 'toolName'],
      [CheckpointConfig, { maxMarksPerSession: 0 }, 'maxMarksPerSession'],
      [CheckpointConfig, { maxAgeDays: 0 }, 'maxAgeDays'],
    ]
    for (const [schema, row, key] of bad) {
      assert.throws(() => /** @type {any} */ (schema)(row), (e) => String(/** @type {any} */ (e).message).includes(`$.${key}`), JSON.stringify(row))
    }
  })

  it('refuses to mount a plugin with a bad row, and provides no service', async () => {
    const root = await bootHost(new ScriptedModel(() => say(REPORT)))
    await root.plugin(Checkpoint, { store: tempStore() })
    // `ctx.plugin` returns a cordis Fiber (a thenable), so it is awaited inside an async function.
    await assert.rejects(async () => await root.plugin(Rewind, { maxSummarizationRetries: 9 }), /maxSummarizationRetries/)
    await assert.rejects(async () => await root.plugin(Rewind, { reportLanguage: 'fr' }), /reportLanguage/)
    assert.equal(root.get('rewind'), undefined)
    assert.equal(root.tools.get('rewind'), undefined)
  })

  it('mounts with overrides: the tool name, the store file and the report budget', async () => {
    const store = tempStore()
    const { root, model } = await setup({ checkpoint: { store, toolName: 'mark' }, rewind: { toolName: 'fold', maxTokens: 300 } })
    assert.ok(root.tools.get('mark'))
    assert.ok(root.tools.get('fold'))
    assert.equal(root.tools.get('checkpoint'), undefined)
    assert.equal(root.tools.get('rewind'), undefined)
    assert.equal(root.checkpoint.store.path, store)
    const agent = await agentOf(root, 'overrides')
    await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests[0].maxTokens, 300)
    assert.equal((await addon.listMarks(store, 'overrides')).length, 1)
  })
})

// ---- the fold -----------------------------------------------------------------------------------

// ---- DSH's compaction lock ------------------------------------------------------------------------

describe("DSH's compaction lock: a rewind waits for another producer's live compaction", () => {
  /** Whether `promise` has settled after the event loop went round a few times (no timing asserted). */
  const settledYet = async (/** @type {Promise<any>} */ promise) => {
    let settled = false
    promise.then(() => (settled = true), () => (settled = true))
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 10))
    return settled
  }

  it('waits while the bracket is live, folds right after its compaction/end', async () => {
    const { root, model } = await setup()
    const agent = await agentOf(root, 'lock-live')
    const { session } = await exploration(root, agent)
    const start = session.append('compaction/start', { compactionId: 'other-producer', turn: 1 })
    const before = await state(root, session)
    const pending = root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(await settledYet(pending), false, 'the rewind did not wait for the live bracket')
    assert.deepEqual(await state(root, session), before, 'nothing was written inside the bracket')
    assert.equal(model.requests.length, 0, 'no report was asked for while waiting')
    const end = session.append('compaction/end', { compactionId: 'other-producer', turn: 1 })
    const result = await pending
    assert.equal(result.markId, 1)
    const report = session.events.findLast((/** @type {any} */ e) => isRewindReportSource(e.data?.source))
    assert.ok(report.seq > end.seq && end.seq > start.seq, 'the report landed after the bracket closed')
  })

  it('a stale bracket (a session/end-seed after it: restored after a crash) does not block', async () => {
    const { root } = await setup()
    const crashed = await agentOf(root, 'lock-crashed')
    await exploration(root, crashed)
    crashed.session.append('compaction/start', { compactionId: 'died-mid-bracket', turn: 1 })
    // The session restored from that log: DSH marks the seed's end with session/end-seed.
    const { agent } = await root.agents.create({
      sessionId: SessionId('lock-restored'),
      seed: crashed.session.events,
      agentOptions: { provider: 'scripted', model: 'm1' },
      meta: { cwd: tmpdir() },
    })
    const restored = agent.session
    assert.equal(restored.events.at(-1).type, 'session/end-seed')
    assert.equal(restored.events.at(-2).type, 'compaction/start')
    await addon.mark(root.checkpoint.store, 'lock-restored', 4)
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.deepEqual({ ...result, markId: 0 }, { markId: 0, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
  })

  it('a bracket that stays open past reportTimeoutMs: COMPACTION_BUSY, nothing written, the mark still active', async () => {
    const { root, model } = await setup({ rewind: { reportTimeoutMs: 40 } })
    const agent = await agentOf(root, 'lock-busy')
    const { session } = await exploration(root, agent)
    const start = session.append('compaction/start', { compactionId: 'stuck', turn: 1 })
    const before = await state(root, session)
    const e = await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'COMPACTION_BUSY')
    assert.match(e.message, new RegExp(`compaction/start at seq ${start.seq}\\) held DSH's compaction lock for 40 ms; the rewind did not run`))
    assert.deepEqual(await state(root, session), before)
    assert.equal(model.requests.length, 0)
    // Through the tool, the model reads the code and what to do.
    assert.match(toToolError(e).message, /^COMPACTION_BUSY: .*call `rewind` again once it has finished\.$/)
  })

  it('an abort while waiting rejects with the signal\'s reason; nothing written', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'lock-abort')
    const { session } = await exploration(root, agent)
    session.append('compaction/start', { compactionId: 'slow', turn: 1 })
    const before = await state(root, session)
    const controller = new AbortController()
    const pending = root.rewind.rewind(agent, controller.signal, { callId: 'c2' })
    const reason = new Error('the user pressed stop')
    setTimeout(() => controller.abort(reason), 10)
    await assert.rejects(pending, (x) => x === reason)
    assert.deepEqual(await state(root, session), before)
  })

  it('a bracket opened while the report is written makes the commit CHANGED; the surface inside it is left alone', async () => {
    /** @type {any} */ let session
    const { root } = await setup({
      respond: () => {
        session.append('compaction/start', { compactionId: 'concurrent', turn: 1 })
        return say(REPORT)
      },
    })
    const agent = await agentOf(root, 'lock-during')
    ;({ session } = await exploration(root, agent))
    const nodes = [...session.surface.nodes]
    await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'CHANGED')
    assert.deepEqual([...session.surface.nodes], nodes)
    assert.equal(session.events.at(-1).type, 'compaction/start', 'nothing was appended after the bracket opened')
    assert.equal(await root.checkpoint.hasActive(session.id), true)
  })
})

describe('a full fold', () => {
  it("returns the reference's numbers on its exploration session", async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'explore')
    const { mark } = await exploration(root, agent)
    assert.deepEqual(mark, { id: 1, logLength: 4 })
    const result = await root.rewind.rewind(agent, new AbortController().signal, { callId: 'c2' })
    assert.deepEqual(result, { markId: 1, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
  })

  it('leaves the model user → report → rewind call, the report replacing the region', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    const messages = session.deriveMessages()
    assert.deepEqual(
      messages.map((/** @type {any} */ m) => m.content),
      [
        [{ type: 'text', text: 'Find the cause' }],
        [{ type: 'text', text: framed(REPORT) }],
        [{ type: 'tool-call', id: CallId('c2'), name: 'rewind', arguments: '{}' }],
      ],
    )
    const report = session.events.at(-1)
    assert.equal(report.type, 'user/message')
    assert.deepEqual(report.surfaceOp, { op: 'replace', start: 4, end: 5 })
    assert.deepEqual(report.sourceEventSeqs, [4, 5])
    assert.ok(isRewindReportSource(report.data.source))
    assert.equal(report.data.source.markId, 1)
    // The exploration stays in the durable log for audit.
    assert.equal(session.events[5].data.message.content[0].content[0].text, OUTPUT)
  })

  it('writes no plugin events: the mark adds nothing, the fold only its replacement user/message', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'explore')
    const session = agent.session
    new SessionBuilder(session).user('Find the cause')
    const beforeMark = session.seq
    await root.checkpoint.mark(session)
    assert.equal(session.seq, beforeMark)
    const b = new SessionBuilder(session)
    b.assistant({ calls: [{ id: 'c1', name: 'bash' }] })
    b.result('c1', OUTPUT)
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    const types = session.events.map((/** @type {any} */ e) => e.type)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.deepEqual(
      session.events.map((/** @type {any} */ e) => e.type),
      [...types, 'user/message'],
    )
    assert.ok(!session.events.some((/** @type {any} */ e) => /^(checkpoint|rewind)\//.test(e.type)))
  })

  it('stamps the mark folded: hasActive true → false, foldedAt set', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    assert.equal(await root.checkpoint.hasActive('explore'), true)
    assert.equal((await root.checkpoint.latestMark('explore')).foldedAt, null)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(await root.checkpoint.hasActive('explore'), false)
    assert.equal(root.checkpoint.hasActiveSync('explore'), false)
    const mark = await root.checkpoint.latestMark('explore')
    assert.equal(typeof mark.foldedAt, 'number')
    assert.ok(mark.foldedAt >= mark.createdAt)
  })

  // The lock is held by util-linux's flock(1), which Windows (test:targets under wine, the
  // release's Windows job) and macOS do not have; the wait is the same code on every platform.
  const noFlock = spawnSync('flock', ['--version']).error ? 'holds the store lock with flock(1), which this system has not' : false
  it('a host disposed right after a fold: its disposal waits for the fold\'s stamp (the checkpoint plugin closes the store), so the stamp is on disk once it resolves', { skip: noFlock }, async (t) => {
    const root = await bootHost(new ScriptedModel(() => say(REPORT)))
    const store = tempStore()
    const checkpoint = root.plugin(Checkpoint, { store })
    await checkpoint
    await root.plugin(Rewind, {})
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    // Another process holds the store's lock (shared, as a reader does): the stamp, written
    // after the fold resolved, waits for it.
    const holder = spawn('flock', ['--shared', `${store}.lock`, '--command', 'echo held; read _'], { stdio: ['pipe', 'pipe', 'inherit'] })
    t.after(() => holder.kill('SIGKILL'))
    await new Promise((resolve) => holder.stdout.once('data', resolve))
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    let disposed = false
    const disposing = checkpoint.dispose().then(() => (disposed = true))
    await new Promise((resolve) => setTimeout(resolve, 200))
    assert.equal(disposed, false, 'the disposal resolved while the stamp could not be written')
    holder.stdin.end() // the holder exits, its lock goes
    await disposing
    assert.match(readFileSync(`${store}.journal`, 'utf8'), /"op":"fold","id":1,/, 'the stamp is durable once the disposal resolved')
    rmSync(path.dirname(path.dirname(store)), { recursive: true, force: true })
  })

  it('folds the same region without the call id (the open rewind call at the tail stays out)', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    assert.deepEqual(await root.rewind.rewind(agent), { markId: 1, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
  })

  it('finishes the stamp of a fold committed before a crash, instead of folding its report again', async () => {
    const { root, model } = await setup()
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    // What the commit appends, left unstamped as by a process that died right after it.
    session.append(
      'user/message',
      createUserMessage({ content: [{ type: 'text', text: REPORT }], source: { kind: 'plugin', plugin: 'rewind', markId: 1 } }),
      { surfaceOp: { op: 'replace', start: 4, end: 5 }, sourceEventSeqs: [4, 5] },
    )
    assert.equal(await root.checkpoint.hasActive('explore'), true)
    const seq = session.seq
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.deepEqual(result, { markId: 1, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
    assert.equal(session.seq, seq, 'nothing appended')
    assert.equal(model.requests.length, 0, 'no second report')
    assert.equal(await root.checkpoint.hasActive('explore'), false)
  })

  it('a stamp that fails after the commit is no tool error: the result returns, the next rewind finishes it', async () => {
    const store = tempStore()
    const dir = path.dirname(store)
    const { root, model } = await setup({ checkpoint: { store } })
    const agent = await agentOf(root, 'stamp')
    const { session } = await exploration(root, agent)
    // Once the report lands, the store's folder becomes a file: every stamp write fails.
    const off = root.on('session/event', (/** @type {any} */ _s, /** @type {any} */ event) => {
      if (event.type === 'user/message' && isRewindReportSource(event.data.source)) {
        renameSync(dir, `${dir}.away`)
        writeFileSync(dir, 'not a folder')
      }
    })
    const lost = stampFailure(root, 1)
    let result
    try {
      result = await root.tools.execute({ callId: CallId('c2'), name: 'rewind', arguments: {}, signal: new AbortController().signal, agent })
      await lost.failed
    } finally {
      lost.stop()
      off()
      if (existsSync(`${dir}.away`)) {
        rmSync(dir)
        renameSync(`${dir}.away`, dir)
      }
    }
    assert.equal(result.isError, false, textOf(result))
    assert.deepEqual(result.value, { markId: 1, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
    assert.equal(await root.checkpoint.hasActive(session.id), true, 'the stamp is missing')
    const seq = session.seq
    assert.deepEqual(await root.rewind.rewind(agent, undefined, { callId: 'c2' }), result.value)
    assert.equal(session.seq, seq, 'the repair appends nothing')
    assert.equal(model.requests.length, 1, 'and makes no second report')
    assert.equal(await root.checkpoint.hasActive(session.id), false)
  })

  it('folds a mark only once: a second rewind is EMPTY_REGION and writes nothing', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    const before = await state(root, session)
    await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'EMPTY_REGION')
    assert.deepEqual(await state(root, session), before)
  })
})

// ---- the report call ----------------------------------------------------------------------------

describe('report call routing', () => {
  it("routes to the session header's model with maxTokens 1024 and the instruction last", async () => {
    const { root, model } = await setup()
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests.length, 1)
    const request = model.requests[0]
    assert.equal(request.provider, 'scripted')
    assert.equal(request.model, 'm-header')
    assert.equal(request.maxTokens, 1024)
    assert.equal(request.sessionId, session.id)
    // The region's two messages, then the instruction.
    assert.equal(request.messages.length, 3)
    assert.equal(request.messages[0].role, 'assistant')
    assert.equal(request.messages[0].content[0].name, 'bash')
    assert.equal(request.messages[1].content[0].toolCallId, 'c1')
    const last = request.messages.at(-1)
    assert.equal(last.role, 'user')
    // What the exploration was for, the user's request, the length target, then the fixed part.
    const instruction = reportInstruction({ markId: 1, objective: 'explore the failure', request: 'Find the cause', during: [], targetChars: 200 })
    assert.equal(textOf(last), instruction)
    assert.ok(instruction.endsWith(INSTRUCTIONS.en))
  })

  it('lets the configured provider/model win over the header and the agent', async () => {
    const { root, model } = await setup({ rewind: { summarizationProvider: 'other', summarizationModel: 'report-model', maxTokens: 256 } })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests[0].provider, 'other')
    assert.equal(model.requests[0].model, 'report-model')
    assert.equal(model.requests[0].maxTokens, 256)
  })

  it('writes the zh instruction when reportLanguage is zh', async () => {
    const { root, model } = await setup({ respond: () => say('## 发现\n- 原因'), rewind: { reportLanguage: 'zh' } })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(textOf(model.requests[0].messages.at(-1)), reportInstruction({ markId: 1, objective: 'explore the failure', request: 'Find the cause', during: [], targetChars: 200 }, 'zh'))
  })

  it("falls back to the agent's options when the session has no routed header", async () => {
    const { root, model } = await setup()
    const agent = await agentOf(root, 'explore', { provider: 'scripted', model: 'm-agent' })
    await exploration(root, agent, { header: null })
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests[0].provider, 'scripted')
    assert.equal(model.requests[0].model, 'm-agent')
  })

  for (const [name, agentOptions, rewind] of /** @type {const} */ ([
    ['agent options without a model', { provider: 'scripted' }, {}],
    ['agent options without a provider', { model: 'm1' }, {}],
    ['no route at all', {}, {}],
  ])) {
    it(`rejects ${name}, without a model call or a write`, async () => {
      const { root, model } = await setup({ rewind })
      const agent = await agentOf(root, 'explore', agentOptions)
      const { session } = await exploration(root, agent, { header: null })
      const before = await state(root, session)
      const error = await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'SUMMARIZE_FAILED')
      assert.ok(error.cause instanceof Error, "the route's own error is the cause")
      assert.equal(model.requests.length, 0, 'failed before any model call')
      assert.deepEqual(await state(root, session), before)
    })
  }

  for (const half of [{ summarizationProvider: 'other' }, { summarizationModel: 'report-model' }]) {
    it(`ignores a config naming only ${Object.keys(half)[0]}, as the reference does, warning once at mount`, async () => {
      const key = Object.keys(half)[0]
      const model = new ScriptedModel(() => say(REPORT))
      const root = await bootHost(model)
      /** @type {any[]} */
      const logged = []
      root.logger.exporter({ levels: { default: 3 }, export: (/** @type {any} */ m) => logged.push(m) })
      await root.plugin(Checkpoint, { store: tempStore() })
      await root.plugin(Rewind, half)
      const warnings = () => logged.filter((m) => m.type === 'warn' && String(m.args[0]).includes(key))
      assert.equal(warnings().length, 1)
      const agent = await agentOf(root, 'explore')
      await exploration(root, agent)
      await root.rewind.rewind(agent, undefined, { callId: 'c2' })
      await root.rewind.rewind(agent, undefined, { callId: 'c2' }).catch(() => undefined)
      assert.equal(model.requests[0].provider, 'scripted', "the session's route")
      assert.equal(model.requests[0].model, 'm-header')
      assert.equal(warnings().length, 1, 'once, at mount')
    })
  }

  it("passes the session's system prompt and tool schemas through", async () => {
    const { root, model } = await setup()
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    const header = session.requestHeader()
    assert.equal(header.system, SYSTEM)
    assert.equal(model.requests[0].system, header.system)
    assert.deepEqual(model.requests[0].tools, header.tools)
    assert.deepEqual(
      model.requests[0].tools.map((/** @type {any} */ t) => t.name),
      ['bash'],
    )
  })

  it("in a real turn, reuses the agent's last request's system prompt and tools (warm prefix)", async () => {
    const { root, model } = await setup({
      respond: script([callReply('k1', 'checkpoint', { objective: 'find the bug' }), callReply('p1', 'probe', { path: 'a.js' }), callReply('r1', 'rewind')]),
    })
    root.tools.register(probe)
    const agent = await agentOf(root, 'turn')
    await runTurn(agent, 'Why does the parser drop tokens?')
    const [report] = reportRequests(model)
    assert.ok(report, 'a report call was made')
    const header = agent.session.requestHeader()
    assert.equal(report.system, header.system)
    assert.deepEqual(report.tools, header.tools)
    const lastAgentRequest = agentRequests(model).at(-2)
    assert.equal(report.system, lastAgentRequest.system)
    assert.deepEqual(report.tools, lastAgentRequest.tools)
    assert.ok(report.tools.some((/** @type {any} */ t) => t.name === 'rewind'))
  })
})

describe('reasoning effort of the report call', () => {
  it("turns thinking off when the route advertises an 'off' effort", async () => {
    const { root, model } = await setup({ efforts: ['off', 'high'] })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests[0].reasoningEffort, 'off')
  })

  it("keeps the route's default effort when 'off' is not offered", async () => {
    const { root, model } = await setup({ efforts: ['low', 'high'] })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.notEqual(model.requests[0].reasoningEffort, 'off')
    assert.equal(model.requests[0].reasoningEffort, 'high')
  })

  it('sends no effort to a route without reasoning', async () => {
    const { root, model } = await setup({ efforts: [] })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests[0].reasoningEffort, undefined)
  })
})

describe('report input', () => {
  it('skips empty-content assistant nodes but folds them', async () => {
    const { root, model } = await setup({ respond: () => say('r') })
    const agent = await agentOf(root, 'empty')
    const b = new SessionBuilder(agent.session)
    b.user('Find the cause')
    await root.checkpoint.mark(agent.session)
    const empty = b.assistant({}) // a max-tokens step's empty assistant message
    b.assistant({ text: 'a short analysis', calls: [{ id: 'c1', name: 'bash', args: {} }] })
    const output = b.result('c1', OUTPUT)
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(result.foldedNodes, 3)
    assert.equal(result.start, empty)
    assert.equal(result.end, output)
    const messages = model.requests[0].messages
    assert.equal(messages.length, 3)
    assert.equal(textOf(messages[0]), 'a short analysis')
    assert.ok(isReportRequest(model.requests[0]), 'the instruction rides last')
  })
})

// ---- rejections ---------------------------------------------------------------------------------

describe('rejections', () => {
  it('rejects a session without a mark as NO_CHECKPOINT, writing nothing', async () => {
    const { root, model } = await setup()
    const agent = await agentOf(root, 'bare')
    const b = new SessionBuilder(agent.session)
    b.user('Find the cause')
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    const before = await state(root, agent.session)
    await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'NO_CHECKPOINT')
    assert.deepEqual(await state(root, agent.session), before)
    assert.equal(model.requests.length, 0)
  })

  it('rejects a second rewind while the first is summarizing as FOLD_IN_PROGRESS', async () => {
    const g = gate()
    const { root } = await setup({ respond: () => g.wait() })
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    const first = root.rewind.rewind(agent, undefined, { callId: 'c2' })
    await g.entered
    const seq = session.seq
    await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'FOLD_IN_PROGRESS')
    assert.equal(session.seq, seq)
    g.release(say(REPORT))
    assert.equal((await first).foldedNodes, 2)
    assert.equal(await root.checkpoint.hasActive(session.id), false)
  })

  it('rejects a report not shorter than the region as SHRINK, writing nothing', async () => {
    const { root } = await setup({ respond: () => say('x'.repeat(25)) })
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    const before = await state(root, session)
    await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'SHRINK')
    assert.deepEqual(await state(root, session), before)
    assert.equal(before.active, true)
  })

  it('skips the shrink check on a region without text', async () => {
    const { root } = await setup({ respond: () => say('a report longer than nothing') })
    const agent = await agentOf(root, 'textless')
    const b = new SessionBuilder(agent.session)
    b.user('Find the cause')
    await root.checkpoint.mark(agent.session)
    b.assistant({ calls: [{ id: 'c1', name: 'bash', args: '' }] })
    b.result('c1', '')
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(result.foldedNodes, 2)
    assert.equal(result.foldedChars, 0)
    assert.equal(result.reportChars, 'a report longer than nothing'.length)
  })

  it('rejects as CHANGED when the region moves during the report, folding nothing', async () => {
    const g = gate()
    const { root } = await setup({ respond: () => g.wait() })
    const agent = await agentOf(root, 'explore')
    const { b, session } = await exploration(root, agent)
    const pending = root.rewind.rewind(agent, undefined, { callId: 'c2' })
    await g.entered
    b.replace(4, 5, 'a compaction summary') // a compaction lands over the region meanwhile
    const before = await state(root, session)
    g.release(say(REPORT))
    await rejectsWith(pending, 'CHANGED')
    assert.deepEqual(await state(root, session), before)
    assert.equal(before.active, true)
  })
})

describe('failures write nothing and keep the mark active', () => {
  /** @param {{respond: (o: any, n: number) => any}} o @param {string | unknown} code @param {(rewind: (signal?: AbortSignal) => Promise<any>) => Promise<any>} [run] */
  async function failsCleanly({ respond }, code, run) {
    const { root, model } = await setup({ respond })
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    const before = await state(root, session)
    assert.equal(before.active, true)
    const rewind = (/** @type {AbortSignal | undefined} */ signal) => root.rewind.rewind(agent, signal, { callId: 'c2' })
    const pending = run ? run(rewind) : rewind()
    // A code, or the very value the rewind must reject with (an abort's reason).
    const error = typeof code === 'string' ? await rejectsWith(pending, code) : await pending.then(assert.fail, (e) => (assert.equal(e, code), e))
    assert.deepEqual(await state(root, session), before)
    assert.equal((await root.checkpoint.latestMark(session.id)).foldedAt, null)
    return { error, model, root, agent }
  }

  it('an empty completion every time', async () => {
    const { model } = await failsCleanly({ respond: () => say('') }, 'SUMMARIZE_FAILED')
    assert.equal(model.requests.length, 3)
  })

  it('a stream error (the adapter throws → finish error)', async () => {
    const { error, model } = await failsCleanly(
      {
        respond: () => {
          throw new Error('upstream 500')
        },
      },
      'SUMMARIZE_FAILED',
    )
    assert.equal(model.requests.length, 1, 'a failed call is not retried as empty')
    assert.ok(error.cause instanceof Error, "the summarizer's own error is the cause")
  })

  it('a stream that finishes with an error chunk', async () => {
    await failsCleanly({ respond: () => [{ type: 'finish', reason: { kind: 'error', failure: { message: 'boom', code: 'E' } } }] }, 'SUMMARIZE_FAILED')
  })

  it("an already aborted signal: rejects with the signal's reason", async () => {
    const controller = new AbortController()
    const reason = new Error('user cancelled')
    controller.abort(reason)
    const { model } = await failsCleanly({ respond: () => say(REPORT) }, reason, (rewind) => rewind(controller.signal))
    assert.equal(model.requests.length, 0)
  })

  it("an abort while the report call hangs: rejects with the signal's reason", async () => {
    const g = gate()
    const controller = new AbortController()
    const reason = new Error('user cancelled')
    await failsCleanly({ respond: () => g.wait() }, reason, async (rewind) => {
      const pending = rewind(controller.signal)
      await g.entered
      controller.abort(reason)
      try {
        return await pending
      } finally {
        g.release(say(REPORT))
      }
    })
  })
})

describe('the report call timeout', () => {
  it('a report call that never answers fails the fold after reportTimeoutMs, writing nothing and releasing the lock', async () => {
    const g = gate()
    let calls = 0
    const { root } = await setup({ respond: () => (++calls === 1 ? g.wait() : say(REPORT)), rewind: { reportTimeoutMs: 20 } })
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    const before = await state(root, session)
    try {
      const error = await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'SUMMARIZE_FAILED')
      assert.match(error.message, /timed out after 20 ms/)
      assert.deepEqual(await state(root, session), before)
      // The session's fold lock is free again: the next rewind folds.
      assert.equal((await root.rewind.rewind(agent, undefined, { callId: 'c2' })).foldedNodes, 2)
    } finally {
      g.release(say(REPORT))
    }
  })

  it('defaults to three minutes and takes 1 ms to one hour', () => {
    assert.equal(RewindConfig({}).reportTimeoutMs, 180_000)
    assert.equal(RewindConfig({ reportTimeoutMs: 5 }).reportTimeoutMs, 5)
    for (const bad of [0, -1, 3_600_001, 1.5]) assert.throws(() => RewindConfig({ reportTimeoutMs: bad }), /reportTimeoutMs/)
  })
})

describe('empty completions', () => {
  it('retries an empty completion, then folds with the next report', async () => {
    const { root, model } = await setup({ respond: (_o, n) => (n === 1 ? say('') : say(REPORT)) })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests.length, 2)
    assert.equal(result.reportChars, 15)
  })

  it("retries a provider's EMPTY_RESPONSE error finish as an empty completion", async () => {
    const empty = [{ type: 'finish', reason: { kind: 'error', failure: { message: 'the response had no content', code: 'EMPTY_RESPONSE' } } }]
    const { root, model } = await setup({ respond: (_o, n) => (n === 1 ? empty : say(REPORT)) })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests.length, 2)
    assert.equal(result.reportChars, 15)
  })

  it('honours maxSummarizationRetries', async () => {
    const { root, model } = await setup({ respond: () => say(''), rewind: { maxSummarizationRetries: 0 } })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'SUMMARIZE_FAILED')
    assert.equal(model.requests.length, 1)
  })

  it('reports the finish reason, outputTokens and reasoningTokens once the retries are exhausted', async () => {
    const exhausted = [
      { type: 'usage', usage: { inputTokens: 900, outputTokens: 1024, reasoningTokens: 1000 } },
      { type: 'finish', reason: { kind: 'max-tokens' } },
    ]
    const { root, model } = await setup({ respond: () => exhausted })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    const error = await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'SUMMARIZE_FAILED')
    assert.equal(model.requests.length, 3)
    assert.match(error.message, /after 2 retries \(finish: max-tokens, outputTokens: 1024, reasoningTokens: 1000\)/)
  })

  it('omits reasoningTokens from the message when the usage has none', async () => {
    const { root } = await setup({ respond: () => ({ text: '', usage: { inputTokens: 5, outputTokens: 7 } }) })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    const error = await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'SUMMARIZE_FAILED')
    assert.match(error.message, /\(finish: stop, outputTokens: 7\)/)
    assert.doesNotMatch(error.message, /reasoningTokens/)
  })
})

// ---- region selection through the plugin ---------------------------------------------------------

describe('region selection', () => {
  it('keeps the checkpoint call and its result visible when the mark is taken mid-call', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'midcall')
    const b = new SessionBuilder(agent.session)
    b.user('Find the cause')
    b.assistant({ calls: [{ id: 'k1', name: 'checkpoint' }] })
    await root.checkpoint.mark(agent.session)
    b.result('k1', '{"id":1,"logLength":2}')
    const call = b.assistant({ calls: [{ id: 'c1', name: 'bash' }] })
    const result = b.result('c1', OUTPUT)
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    const folded = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.deepEqual([folded.start, folded.end, folded.foldedNodes], [call, result, 2])
    b.result('c2', 'folded')
    const messages = agent.session.deriveMessages()
    assert.deepEqual(protocolProblems(messages), [])
    assert.deepEqual(
      messages.map((/** @type {any} */ m) => m.content[0].name ?? m.content[0].toolCallId ?? m.content[0].text),
      ['Find the cause', 'checkpoint', 'k1', framed(REPORT, { id: 1 }), 'rewind', 'c2'],
    )
  })

  it('folds parallel calls issued with the checkpoint with their assistant message (no orphaned call)', async () => {
    const { root } = await setup({ respond: () => say('r') })
    const agent = await agentOf(root, 'parallel')
    const b = new SessionBuilder(agent.session)
    b.user('Find the cause')
    const both = b.assistant({ calls: [{ id: 'k1', name: 'checkpoint' }, { id: 'c1', name: 'bash', args: { cmd: 'ls' } }] })
    await root.checkpoint.mark(agent.session)
    b.result('k1', '{"id":1,"logLength":2}')
    const last = b.result('c1', OUTPUT)
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    const folded = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.deepEqual([folded.start, folded.end, folded.foldedNodes], [both, last, 3])
    b.result('c2', 'folded')
    assert.deepEqual(protocolProblems(agent.session.deriveMessages()), [])
  })

  it('never folds the user request with a compaction appended after the mark (surface [6,2,3,4,5,7])', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'compacted')
    const b = new SessionBuilder(agent.session)
    const request = b.user('Find the cause') // 0
    const plan = b.assistant({ text: 'I will look around.' }) // 1
    b.assistant({ calls: [{ id: 'k1', name: 'checkpoint' }] }) // 2
    assert.equal((await root.checkpoint.mark(agent.session)).logLength, 3)
    b.result('k1', '{"id":1,"logLength":3}') // 3
    b.assistant({ calls: [{ id: 'c1', name: 'bash' }] }) // 4
    b.result('c1', OUTPUT) // 5
    b.replace(request, plan, 'compacted: the user asked to find the cause') // 6
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] }) // 7
    assert.deepEqual([...agent.session.surface.nodes], [6, 2, 3, 4, 5, 7])
    const folded = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.deepEqual([folded.start, folded.end, folded.foldedNodes], [4, 5, 2])
    assert.deepEqual([...agent.session.surface.nodes], [6, 2, 3, 8, 7])
  })

  it('rejects an open call with no closed cut as UNBALANCED, writing nothing', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'open')
    const b = new SessionBuilder(agent.session)
    b.user('Find the cause')
    await root.checkpoint.mark(agent.session)
    b.assistant({ calls: [{ id: 'c1', name: 'bash' }] })
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    const before = await state(root, agent.session)
    await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'UNBALANCED')
    assert.deepEqual(await state(root, agent.session), before)
  })

  it('rejects nothing after the mark, or nothing before the rewind call, as EMPTY_REGION', async () => {
    const { root } = await setup()
    const tail = await agentOf(root, 'tail')
    new SessionBuilder(tail.session).user('Find the cause')
    await root.checkpoint.mark(tail.session)
    await rejectsWith(root.rewind.rewind(tail), 'EMPTY_REGION')

    const tight = await agentOf(root, 'tight')
    const b = new SessionBuilder(tight.session)
    b.user('Find the cause')
    await root.checkpoint.mark(tight.session)
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    await rejectsWith(root.rewind.rewind(tight, undefined, { callId: 'c2' }), 'EMPTY_REGION')
    assert.equal(await root.checkpoint.hasActive('tight'), true)
  })

  it('folds to the surface tail when there is no current assistant message', async () => {
    const { root } = await setup({ respond: () => say('r') })
    const agent = await agentOf(root, 'notail')
    const b = new SessionBuilder(agent.session)
    await root.checkpoint.mark(agent.session)
    const call = b.assistant({ calls: [{ id: 'c1', name: 'bash', args: {} }] })
    const output = b.result('c1', 'a note to fold')
    assert.deepEqual(await root.rewind.rewind(agent), { markId: 1, foldedNodes: 2, start: call, end: output, foldedChars: 16, reportChars: 1 })
  })
})

// ---- the tools ----------------------------------------------------------------------------------

describe('the rewind tool', () => {
  it('is registered and folds through the real tool registry', async () => {
    const { root } = await setup()
    assert.ok(root.tools.schemas().some((/** @type {any} */ s) => s.name === 'rewind'))
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent)
    const result = await root.tools.execute({ callId: CallId('c2'), name: 'rewind', arguments: {}, signal: new AbortController().signal, agent })
    assert.equal(result.isError, false)
    assert.deepEqual(result.value, { markId: 1, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
    assert.equal(textOf(result), 'Checkpoint 1 folded: the 2 messages of its investigation (25 chars) are replaced by your report, above (15 chars). Continue the task; if you already answered the user, end your turn without repeating the answer.')
    assert.equal(session.events.at(-1).data.content[0].text, framed(REPORT))
  })

  it('presents a generic Rewind card and renders singular and plural', async () => {
    const { root } = await setup()
    const tool = root.tools.get('rewind')
    const card = tool.presentCall({})
    assert.equal(card.card, 'generic')
    assert.equal(card.title, 'Rewind')
    const one = tool.output.render({}, { markId: 1, foldedNodes: 1, start: 2, end: 2, foldedChars: 40, reportChars: 10 })
    const two = tool.output.render({}, { markId: 1, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
    assert.match(textOf({ content: one }), /^Checkpoint 1 folded: the 1 message of its investigation \(40 chars\) is replaced by your report, above \(10 chars\)\. /)
    assert.match(textOf({ content: two }), /^Checkpoint 1 folded: the 2 messages of its investigation \(25 chars\) are replaced/)
    // The model's terms only: no surface nodes, no seqs.
    for (const text of [textOf({ content: one }), textOf({ content: two })]) assert.doesNotMatch(text, /surface|seq|node/)
    const extractive = tool.output.render({}, { markId: 2, foldedNodes: 3, start: 4, end: 6, foldedChars: 25, reportChars: 15, report: 'extractive' })
    assert.match(textOf({ content: extractive }), /replaced by a report extracted from them, above/)
  })

  it('rejects a call without an owning agent, writing nothing', async () => {
    const { root } = await setup()
    for (const name of ['rewind', 'checkpoint']) {
      const result = await root.tools.execute({ callId: CallId(`x-${name}`), name, arguments: {}, signal: new AbortController().signal })
      assert.equal(result.isError, true, name)
      assert.match(result.error.message, /owning agent/)
    }
    assert.deepEqual(await addon.listMarks(root.checkpoint.store), [])
  })

  it('reads failures as `CODE: …` followed by the next step', async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'bare')
    const b = new SessionBuilder(agent.session)
    b.user('Find the cause')
    b.assistant({ calls: [{ id: 'c2', name: 'rewind' }] })
    const result = await root.tools.execute({ callId: CallId('c2'), name: 'rewind', arguments: {}, signal: new AbortController().signal, agent })
    assert.equal(result.isError, true)
    const text = textOf(result)
    assert.match(text, /^Error: NO_CHECKPOINT: /)
    // What happened, a full stop, then the next step: a sentence naming the checkpoint tool.
    assert.match(text, /[^.]\. [A-Z][^.]*`checkpoint`[^.]*\.$/)
  })
})

describe('the checkpoint tool', () => {
  it("marks the calling agent's session at its log length, durably, without a session event", async () => {
    const { root } = await setup()
    const agent = await agentOf(root, 'marking')
    new SessionBuilder(agent.session).user('Find the cause')
    const seq = agent.session.seq
    const result = await root.tools.execute({
      callId: CallId('k1'),
      name: 'checkpoint',
      arguments: { objective: 'find the bug' },
      signal: new AbortController().signal,
      agent,
    })
    assert.equal(result.isError, false)
    assert.deepEqual(result.value, { id: 1, logLength: seq })
    assert.equal(agent.session.seq, seq)
    const mark = await addon.latestMark(root.checkpoint.store, 'marking')
    assert.equal(mark.objective, 'find the bug')
    assert.equal(mark.foldedAt, null)
    assert.equal(textOf(result), 'Checkpoint 1 set; call `rewind` when the investigation is done.')
    assert.equal(root.tools.get('checkpoint').presentCall({ objective: 'x' }).card, 'generic')
  })
})

describe('prompt sections', () => {
  it('adds one section for both tools, tool:rewind at order 150', async () => {
    const { root } = await setup()
    for (const order of [149.5, 150.5]) root.systemPrompt.section({ name: `probe:${order}`, order, text: String(order) })
    const { sections } = await root.systemPrompt.assemble()
    const names = sections.map((/** @type {any} */ s) => s.name)
    const at = (/** @type {string} */ n) => names.indexOf(n)
    assert.ok(at('tool:rewind') > at('probe:149.5') && at('tool:rewind') < at('probe:150.5'), names.join(', '))
    assert.equal(at('tool:checkpoint'), -1, 'the checkpoint row adds no section of its own')
    const text = sections[at('tool:rewind')].text
    assert.match(text, /`checkpoint`/)
    assert.match(text, /`rewind`/)
  })

  it('names the configured tools', async () => {
    const { root } = await setup({ checkpoint: { toolName: 'mark' }, rewind: { toolName: 'fold' } })
    const { sections } = await root.systemPrompt.assemble()
    const text = sections.find((/** @type {any} */ s) => s.name === 'tool:rewind').text
    assert.match(text, /`mark`/)
    assert.match(text, /`fold`/)
    assert.doesNotMatch(text, /`(checkpoint|rewind)`/)
  })
})

describe('isRewindReportSource', () => {
  it('recognises the rewind report source and nothing else', () => {
    assert.equal(isRewindReportSource({ kind: 'plugin', plugin: 'rewind' }), true)
    assert.equal(isRewindReportSource({ kind: 'plugin', plugin: 'rewind', markId: 3 }), true)
    assert.equal(isRewindReportSource({ kind: 'user' }), false)
    assert.equal(isRewindReportSource({ kind: 'plugin', plugin: 'compact' }), false)
    assert.equal(isRewindReportSource(null), false)
    assert.equal(isRewindReportSource('rewind'), false)
  })
})

// ---- the turn guard, on real agent turns --------------------------------------------------------

describe('the turn guard', () => {
  /** @param {any[]} replies @param {object} [o] */
  async function turnSetup(replies, o = {}) {
    const { root, model } = await setup({ respond: script(replies), ...o })
    root.tools.register(probe)
    const agent = await agentOf(root, 'guarded')
    return { root, model, agent }
  }
  const warningsIn = (/** @type {any} */ session) =>
    session.events.filter((/** @type {any} */ e) => e.type === 'user/message' && isWarning(e.data))
  const turnEnds = (/** @type {any} */ session) => session.events.filter((/** @type {any} */ e) => e.type === 'turn/end')

  it("keeps a real agent loop's turn alive until rewind runs", async () => {
    const { model, agent, root } = await turnSetup([
      callReply('k1', 'checkpoint', { objective: 'find the bug' }),
      callReply('p1', 'probe', { path: 'parser.js' }),
      say('The parser drops the last token.'), // would end the turn with the mark active
      callReply('r1', 'rewind'), // the model answers the warning
      say('Done: the parser drops the last token.'),
    ])
    await runTurn(agent, 'Why does the parser drop tokens?')
    const requests = agentRequests(model)
    assert.equal(requests.length, 5)
    // The request after the text-only step carries the warning, last, in the same turn.
    assert.ok(isWarning(requests[3].messages.at(-1)), 'the warning is the last message of request 4')
    assert.ok(!requests.slice(0, 3).some((r) => r.messages.some(isWarning)))
    assert.equal(reportRequests(model).length, 1)
    assert.equal(turnEnds(agent.session).length, 1, 'one turn')
    assert.equal(turnEnds(agent.session)[0].data.reason.kind, 'completed')
    // The last request sees the report, not the exploration, and is protocol-valid.
    const last = requests[4].messages
    assert.ok(last.some((/** @type {any} */ m) => isRewindReportSource(m.source) && textOf(m) === framed(REPORT, { id: 1, objective: 'find the bug' })))
    // The answer written before the warning is still there (issue 32 item 2).
    assert.ok(last.some((/** @type {any} */ m) => m.role === 'assistant' && textOf(m) === 'The parser drops the last token.'))
    assert.ok(!last.some((/** @type {any} */ m) => m.content.some((/** @type {any} */ c) => c.type === 'tool-call' && c.name === 'probe')))
    assert.deepEqual(protocolProblems(last), [])
    assert.equal(await root.checkpoint.hasActive('guarded'), false)
    assert.ok(!agent.session.events.some((/** @type {any} */ e) => /^(checkpoint|rewind)\//.test(e.type)))
  })

  it('stands aside when the store cannot be read: the turn ends normally, without a warning', async () => {
    const store = tempStore()
    mkdirSync(path.dirname(store), { recursive: true })
    writeFileSync(store, '{"unit":')
    const { agent } = await turnSetup([say('Nothing to investigate.')], { checkpoint: { store } })
    await runTurn(agent, 'Hello')
    assert.equal(warningsIn(agent.session).length, 0)
    assert.equal(turnEnds(agent.session)[0].data.reason.kind, 'completed')
    assert.equal(readFileSync(store, 'utf8'), '{"unit":')
  })

  it('injects once per turn, and again in the next turn while the mark stays active', async () => {
    const { model, agent } = await turnSetup([
      callReply('k1', 'checkpoint'),
      say('done'),
      say('still done'), // after the warning: no second warning, the turn ends
      say('next turn'),
      say('next turn, still done'),
    ])
    await runTurn(agent, 'first')
    assert.equal(agentRequests(model).length, 3)
    assert.equal(warningsIn(agent.session).length, 1)
    assert.equal(turnEnds(agent.session).length, 1)
    await runTurn(agent, 'second')
    assert.equal(agentRequests(model).length, 5)
    assert.equal(warningsIn(agent.session).length, 2)
    assert.equal(turnEnds(agent.session).length, 2)
    assert.equal(agent.inbox.nextStep.length, 0, 'no warning left pending for a later turn')
  })

  it('does not warn after the fold', async () => {
    const { model, agent } = await turnSetup([
      callReply('k1', 'checkpoint'),
      callReply('p1', 'probe', { path: 'a.js' }),
      callReply('r1', 'rewind'),
      say('done'),
    ])
    await runTurn(agent, 'investigate')
    assert.equal(agentRequests(model).length, 4)
    assert.equal(warningsIn(agent.session).length, 0)
    await runTurn(agent, 'anything else?')
    assert.equal(warningsIn(agent.session).length, 0)
  })

  it('does not trap the turn in a warning loop after a legitimate EMPTY_REGION', async () => {
    const { model, agent, root } = await turnSetup([
      callReply('k1', 'checkpoint'),
      callReply('r1', 'rewind'), // nothing between the mark and this call
      say('nothing to fold, done'),
      say('next turn'),
    ])
    await runTurn(agent, 'investigate')
    const requests = agentRequests(model)
    assert.equal(requests.length, 3)
    const rewindResult = requests[2].messages.at(-1).content[0]
    assert.equal(rewindResult.isError, true)
    assert.match(textOf(rewindResult), /^Error: EMPTY_REGION: /)
    assert.equal(warningsIn(agent.session).length, 0)
    assert.equal(turnEnds(agent.session).length, 1)
    await runTurn(agent, 'more')
    assert.equal(warningsIn(agent.session).length, 0)
    assert.equal(await root.checkpoint.hasActive('guarded'), true, 'the mark itself stays active')
    assert.equal(reportRequests(model).length, 0)
  })
})

describe('the turn guard after an early EMPTY_REGION', () => {
  it('warns again once the model explores: the silence lasts only until new tool results land', async () => {
    const { root, model } = await setup({
      respond: script([
        callReply('k1', 'checkpoint', { objective: 'find the bug' }),
        callReply('r1', 'rewind'), // too early: EMPTY_REGION
        callReply('p1', 'probe', { path: 'parser.js' }), // then the exploration happens
        say('The parser drops the last token.'), // would end the turn with an unfolded exploration
        callReply('r2', 'rewind'), // the warning brought the model back
        say('Done.'),
      ]),
    })
    root.tools.register(probe)
    const agent = await agentOf(root, 'early')
    await runTurn(agent, 'Why does the parser drop tokens?')
    const warnings = agent.session.events.filter((/** @type {any} */ e) => e.type === 'user/message' && isWarning(e.data))
    assert.equal(warnings.length, 1)
    assert.equal(reportRequests(model).length, 1)
    assert.equal(await root.checkpoint.hasActive('early'), false)
    assert.equal(agent.session.events.filter((/** @type {any} */ e) => e.type === 'turn/end').length, 1)
  })
})

// ---- token truth: DSH's own meter ---------------------------------------------------------------

describe("token truth (DSH's TokenMeter mounted)", () => {
  /** A tiny exploration tool: its call and result are a few chars but 23 tokens with their framing. */
  const tick = defineTool({
    name: 'tick',
    description: 'Check once.',
    parameters: {},
    output: {
      schema: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: false },
      render: (/** @type {any} */ _args, /** @type {any} */ value) => [{ type: 'text', text: value.text }],
    },
    async execute() {
      return { text: 'ok' }
    },
  })

  /**
   * A real host with the session-projection registry and the token meter (the registry first,
   * so the meter registers its projections), then both plugins. A real agent turn checkpoints,
   * explores with `tool`, then calls `fold_now`: a tool that runs `ctx.rewind.rewind` exactly
   * where the rewind tool would, measuring the surface around it.
   * @param {string} report @param {any} tool @param {any[]} explore
   * @param {{breakStamp?: boolean}} [o] the store's folder becomes a file once the report lands
   *   (every stamp write fails); the caller restores `${dir}.away`
   */
  async function meteredTurn(report, tool, explore, { breakStamp = false } = {}) {
    const { SessionProjectionRegistry } = await import('@deepseek-ai/dsh-session-projection')
    const { TokenMeter } = await import('@deepseek-ai/dsh-token-meter')
    const model = new ScriptedModel(script([callReply('k1', 'checkpoint'), ...explore, callReply('f1', 'fold_now'), say('Done.')], say(report)))
    const root = await bootHost(model)
    await root.plugin(SessionProjectionRegistry)
    await root.plugin(TokenMeter)
    const store = tempStore()
    const dir = path.dirname(store)
    await root.plugin(Checkpoint, { store })
    await root.plugin(Rewind, {})
    root.tools.register(tool)
    if (breakStamp) {
      root.on('session/event', (/** @type {any} */ _s, /** @type {any} */ event) => {
        if (event.type === 'user/message' && isRewindReportSource(event.data.source) && !existsSync(`${dir}.away`)) {
          renameSync(dir, `${dir}.away`)
          writeFileSync(dir, 'not a folder')
        }
      })
    }
    /** @type {{before: any, after: any, projectedAfter: number, result?: any, error?: any, state?: any}} */
    const fold = /** @type {any} */ ({})
    root.tools.register(
      defineTool({
        name: 'fold_now',
        description: 'Fold now.',
        parameters: {},
        output: { schema: { type: 'object', properties: {}, additionalProperties: false }, render: () => [{ type: 'text', text: 'folded' }] },
        async execute(/** @type {any} */ _args, /** @type {any} */ exec) {
          const session = exec.agent.session
          fold.before = root.tokenMeter.measure(session)
          fold.state = await state(root, session)
          try {
            fold.result = await root.rewind.rewind(exec.agent, exec.signal, { callId: exec.callId })
          } catch (e) {
            fold.error = e
          }
          fold.after = root.tokenMeter.measure(session)
          fold.projectedAfter = projected(root, session)
          return {}
        },
      }),
    )
    const agent = await agentOf(root, 'metered')
    const lost = breakStamp ? stampFailure(root, 1) : undefined
    await runTurn(agent, 'Investigate.')
    await lost?.failed
    return { root, model, agent, session: agent.session, fold, dir }
  }

  const projected = (/** @type {any} */ root, /** @type {any} */ session) => root.sessionProjections.snapshot(session).values.contextBreakdown.messageTokens
  /**
   * The tokens of the report's frame (and recall hint): `tokensFreed` counts the report alone, as
   * the shrink check does, so the context shrinks by `tokensFreed` minus these.
   * @param {any} root @param {any} session
   */
  const frameTokens = (root, session) => {
    const report = session.events.findLast((/** @type {any} */ e) => e.type === 'user/message' && isRewindReportSource(e.data.source))
    const body = reportBody(textOf(report.data))
    return root.tokenMeter.estimateMessage(report.data) - root.tokenMeter.estimateMessage({ ...report.data, content: [{ type: 'text', text: body }] })
  }

  it("keeps the meter's projection equal to measure().surfaceTokens: the fold logs DSH's shadow price next to its replacement", async () => {
    const { root, session, fold } = await meteredTurn(REPORT, probe, [callReply('p1', 'probe', { path: 'a.js' }), callReply('p2', 'probe', { path: 'b.js' })])
    assert.equal(fold.error, undefined)
    const { result, before, after } = fold
    assert.equal(fold.projectedAfter, after.surfaceTokens, 'the projection follows the fold')
    assert.equal(projected(root, session), root.tokenMeter.measure(session).surfaceTokens, 'and stays equal to the end of the turn')
    assert.equal(result.tokensFreed - frameTokens(root, session), before.surfaceTokens - after.surfaceTokens)
    assert.ok(result.tokensFreed > 0)
    // DSH's shadow-price event, then the replacement, adjacent.
    const at = session.events.findIndex((/** @type {any} */ e) => e.type === 'compaction/prune')
    const [prune, report] = session.events.slice(at, at + 2)
    assert.equal(report.type, 'user/message')
    assert.ok(isRewindReportSource(report.data.source))
    assert.deepEqual(prune.data.shadowedRange, { start: result.start, end: result.end })
    assert.deepEqual(prune.data.shadowedSeqs, report.sourceEventSeqs)
    const price = new Map(before.nodes.map((/** @type {any} */ n) => [n.seq, n.tokens]))
    assert.equal(prune.data.shadowedTokenCount, report.sourceEventSeqs.reduce((/** @type {number} */ t, /** @type {number} */ s) => t + price.get(s), 0))
    assert.ok(!session.events.some((/** @type {any} */ e) => /^(checkpoint|rewind)\//.test(e.type)), 'no plugin events')
  })

  it('compares tokens in the shrink check: a report longer in chars but lighter in tokens folds', async () => {
    const { root, session, fold } = await meteredTurn('The check passed; nothing else to note.', tick, [callReply('t1', 'tick')])
    assert.equal(fold.error, undefined)
    const { result, before, after } = fold
    assert.ok(result.foldedChars < result.reportChars, `${result.foldedChars} chars folded into ${result.reportChars}`)
    assert.equal(result.tokensFreed - frameTokens(root, session), before.surfaceTokens - after.surfaceTokens)
    assert.ok(result.tokensFreed > 0)
    assert.equal(projected(root, session), root.tokenMeter.measure(session).surfaceTokens)
  })

  it('prices a repaired fold too: the rewind that finishes a lost stamp returns the same tokensFreed', async () => {
    const { root, session, fold, agent, dir } = await meteredTurn(REPORT, probe, [callReply('p1', 'probe', { path: 'a.js' })], { breakStamp: true })
    rmSync(dir)
    renameSync(`${dir}.away`, dir)
    assert.equal(fold.error, undefined)
    assert.ok(fold.result.tokensFreed > 0)
    assert.equal(await root.checkpoint.hasActive(session.id), true, 'the stamp was lost')
    const seq = session.seq
    assert.deepEqual(await root.rewind.rewind(agent), fold.result)
    assert.equal(session.seq, seq, 'nothing appended')
    assert.equal(await root.checkpoint.hasActive(session.id), false)
  })

  it('refuses, as SHRINK in tokens, a report heavier than the region, writing nothing', async () => {
    const { root, session, fold } = await meteredTurn('x'.repeat(120), tick, [callReply('t1', 'tick')])
    assert.equal(fold.error?.code, 'SHRINK', fold.error?.message)
    assert.match(fold.error.message, /tokens/)
    assert.equal(fold.before.surfaceTokens, fold.after.surfaceTokens)
    assert.ok(!session.events.some((/** @type {any} */ e) => e.type === 'compaction/prune'))
    assert.equal(await root.checkpoint.hasActive(session.id), true)
  })
})

// ---- extractive reports -------------------------------------------------------------------------

describe('extractive reports', () => {
  const LOG = Array.from({ length: 12 }, (_, i) => `line ${i}: src/parser.rs:${40 + i} token dropped after comment at offset ${i * 17}`).join('\n')

  it("writes the report without a model call when summarizer is 'extractive'", async () => {
    const { root, model } = await setup({ rewind: { summarizer: 'extractive' } })
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent, { output: LOG })
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests.length, 0)
    assert.equal(result.report, 'extractive')
    assert.deepEqual([result.markId, result.foldedNodes, result.start, result.end], [1, 2, 4, 5])
    assert.ok(result.reportChars > 0 && result.reportChars < result.foldedChars)
    const report = session.events.at(-1)
    assert.ok(isRewindReportSource(report.data.source))
    assert.equal(reportBody(textOf(report.data)).length, result.reportChars)
    assert.ok(textOf(report.data).startsWith(reportFrame({ id: 1, objective: 'explore the failure' }, true)), 'the frame says who wrote it')
    assert.equal(await root.checkpoint.hasActive('explore'), false)
    assert.match(textOf({ content: root.tools.get('rewind').output.render({}, result) }), /a report extracted from them/)
  })

  it("lands the fold with the extractive report when the LLM call fails (fallback: 'extractive')", async () => {
    const { root, model } = await setup({
      respond: () => {
        throw new Error('upstream 500')
      },
      rewind: { fallback: 'extractive' },
    })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent, { output: LOG })
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests.length, 1)
    assert.equal(result.report, 'extractive')
    assert.equal(await root.checkpoint.hasActive('explore'), false)
  })

  it("lands the fold with the extractive report when the LLM stays empty through the retries (fallback: 'extractive')", async () => {
    const { root, model } = await setup({ respond: () => say(''), rewind: { fallback: 'extractive' } })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent, { output: LOG })
    const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
    assert.equal(model.requests.length, 3, 'the LLM had its retries first')
    assert.equal(result.report, 'extractive')
  })

  it("fails loud on a misconfigured route even with fallback: 'extractive' (an unknown provider)", async () => {
    const { root, model } = await setup({ rewind: { fallback: 'extractive', summarizationProvider: 'nope', summarizationModel: 'x' } })
    const agent = await agentOf(root, 'explore')
    const { session } = await exploration(root, agent, { output: LOG })
    const before = await state(root, session)
    const error = await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'SUMMARIZE_FAILED')
    assert.match(error.message, /NO_ADAPTER/)
    assert.deepEqual(await state(root, session), before)
    assert.equal(model.requests.length, 0)
  })

  it("fails loud without any route even with fallback: 'extractive'", async () => {
    const { root } = await setup({ rewind: { fallback: 'extractive' } })
    const agent = await agentOf(root, 'no-route', {})
    const { session } = await exploration(root, agent, { header: null, output: LOG })
    const before = await state(root, session)
    const error = await rejectsWith(root.rewind.rewind(agent, undefined, { callId: 'c2' }), 'SUMMARIZE_FAILED')
    assert.match(error.message, /no provider\/model available/)
    assert.deepEqual(await state(root, session), before)
  })

  it("lands the extractive report when the report call times out (fallback: 'extractive')", async () => {
    const g = gate()
    const { root } = await setup({ respond: () => g.wait(), rewind: { fallback: 'extractive', reportTimeoutMs: 20 } })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent, { output: LOG })
    try {
      const result = await root.rewind.rewind(agent, undefined, { callId: 'c2' })
      assert.equal(result.report, 'extractive')
    } finally {
      g.release(say(REPORT))
    }
  })

  it('keeps the LLM report when it succeeds (no `report` key)', async () => {
    const { root } = await setup({ rewind: { fallback: 'extractive' } })
    const agent = await agentOf(root, 'explore')
    await exploration(root, agent)
    assert.deepEqual(await root.rewind.rewind(agent, undefined, { callId: 'c2' }), {
      markId: 1,
      foldedNodes: 2,
      start: 4,
      end: 5,
      foldedChars: 25,
      reportChars: 15,
    })
  })
})
