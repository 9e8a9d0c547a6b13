// dsh-fold as a drop-in for the reference pair `@dpskh/tool-checkpoint` + `@dpskh/tool-rewind`:
// every behaviour the reference's own suite (dpskh/dsh-rewind, tests/rewind.spec.ts) checks,
// re-checked here on dsh-fold through the same public surface — `ctx.rewind.rewind(agent,
// signal)` with a bare `{id, session, options}` agent, the `rewind` tool through the real tool
// registry, the turn guard through `agent/turn-stopping`, the exported constants — on real DSH
// parts (cordis Context, LlmRuntime with a scripted LlmAdapter, ToolRuntime, SystemPrompt, real
// Sessions built event by event). Where dsh-fold deliberately differs, the test pins dsh-fold's
// behaviour and says why (README › Differences). Plus the two mixes a user can mount: a
// reference-shaped rewind over dsh-fold's checkpoint, and dsh-fold's rewind over a
// reference-shaped checkpoint service, both written here from the reference's documented contract.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { Service } from '@deepseek-ai/cordis'
import { CallId, createAssistantMessage, createToolResultMessage, createUserMessage } from '@deepseek-ai/dsh-llm'
import { Session, SessionId } from '@deepseek-ai/dsh-session'
import { SystemPrompt } from '@deepseek-ai/dsh-system-prompt'
import { ToolRuntime } from '@deepseek-ai/dsh-tools'

import { addon } from '../plugin/shared/addon.js'
import {
  Checkpoint,
  REWIND_GUARD_SOURCE,
  REWIND_REPORT_SOURCE,
  Rewind,
  RewindConfig,
  RewindError,
  isRewindReportSource,
  mirrorOf,
  reportFrame,
} from '../plugin/index.js'
import { Context, ScriptedModel, protocolProblems, tempStore } from './helpers/dsh.mjs'

const MODEL = 'test'
const SIGNAL = new AbortController().signal

// ---- sessions, built the way the reference's suite builds them ------------------------------

/** Appends events to a fresh detached Session; every helper returns the new seq. */
class Log {
  /** @param {string} id */
  constructor(id) {
    this.session = Session.create(SessionId(id))
  }
  get seq() {
    return this.session.seq
  }
  /** @param {string} type @param {object} data */
  event(type, data) {
    return this.session.append(type, data).seq
  }
  /** @param {string} text */
  user(text) {
    return this.session.append('user/message', createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }), { surfaceOp: 'append' }).seq
  }
  /** An assistant message: text blocks and tool calls `[id, name, args?]`. @param {{text?: string, calls?: [string, string, string?][]}} m @param {number} [step] */
  assistant({ text, calls = [] }, step = 1) {
    const content = []
    if (text !== undefined) content.push({ type: 'text', text })
    for (const [id, name, args = '{}'] of calls) content.push({ type: 'tool-call', id: CallId(id), name, arguments: args })
    const message = createAssistantMessage({ content, source: { kind: 'model', provider: MODEL, model: MODEL } })
    return this.session.append('assistant/message', { turn: 1, step, message }, { surfaceOp: 'append' }).seq
  }
  /** @param {string} callId @param {string | null} text (null: no content) */
  result(callId, text, step = 1) {
    const content = text === null ? [] : [{ type: 'text', text }]
    const message = createToolResultMessage({ callId: CallId(callId), content, isError: false })
    return this.session.append('tool/result', { turn: 1, step, message }, { surfaceOp: 'append' }).seq
  }
}

const OUTPUT = 'exploration output line' // 23 chars; with the call's `{}`, 25 model-visible chars

/**
 * The reference's exploration: request, a routed header, the mark (log length 4), one bash call
 * and its result, the rewind call. `mark(session)` runs where the checkpoint tool would.
 * @param {(session: any) => Promise<unknown>} [mark]
 */
async function exploration(mark) {
  const log = new Log('explore')
  log.event('turn/start', { turn: 1 })
  log.user('Find the cause')
  log.event('step/start', { turn: 1, step: 1 })
  log.event('request/header', { header: { config: { provider: MODEL, model: MODEL } }, reason: 'initial' })
  await mark?.(log.session)
  log.assistant({ calls: [['c1', 'bash']] })
  log.result('c1', OUTPUT)
  log.event('step/end', { turn: 1, step: 1 })
  log.event('step/start', { turn: 1, step: 2 })
  log.assistant({ calls: [['c2', 'rewind']] }, 2)
  return log.session
}

/** A bare agent, as the reference's suite passes it: the service reads `session` and `options`. */
const agentOf = (/** @type {any} */ session, options = {}) => ({ id: session.id, session, options })
const routed = (/** @type {any} */ session) => agentOf(session, { provider: MODEL, model: MODEL })

// ---- the model --------------------------------------------------------------------------------

/** A completed text answer, as a provider streams it. @param {string} text */
const text = (text) => [
  { type: 'block-start', index: 0, blockType: 'text' },
  { type: 'text-delta', index: 0, text },
  { type: 'block-end', index: 0, block: { type: 'text', text } },
  { type: 'finish', reason: { kind: 'stop' } },
]

/**
 * Real DSH services with both dsh-fold plugins; the model answers `answers` in turn (the last
 * one repeats).
 * @param {any[][]} answers @param {{rewind?: object, efforts?: string[], tools?: boolean}} [o]
 */
async function setup(answers, { rewind = {}, efforts = [], tools = true } = {}) {
  const model = new ScriptedModel((_options, n) => answers[Math.min(n, answers.length) - 1], { efforts })
  const ctx = new Context()
  const { LlmRuntime } = await import('@deepseek-ai/dsh-llm')
  await ctx.plugin(LlmRuntime)
  await ctx.plugin(SystemPrompt)
  if (tools) await ctx.plugin(ToolRuntime)
  ctx.llm.registerAdapter([MODEL, 'other'], model)
  await ctx.plugin(Checkpoint, { store: tempStore() })
  await ctx.plugin(Rewind, rewind)
  return { ctx, model }
}

const checkpointEvents = (/** @type {any} */ session) => session.events.filter((/** @type {any} */ e) => e.type.startsWith('checkpoint/'))
const select = (/** @type {any} */ session, /** @type {number} */ anchor) => Array.from(addon.selectRegion(mirrorOf(session).native, anchor).seqs)
/** The error `fn` throws. @param {() => unknown} fn */
const thrown = (fn) => {
  try {
    fn()
  } catch (e) {
    return /** @type {any} */ (e)
  }
  assert.fail('expected a throw')
}

// ---- region selection -------------------------------------------------------------------------

describe('region selection (the reference rules, on the direct path: no rewind call id)', () => {
  it('folds the balanced span after the anchor and leaves the rewind call out', async () => {
    assert.deepEqual(select(await exploration(), 4), [4, 5])
  })

  it('has nothing after the anchor: an empty log, or an anchor at the log end', async () => {
    for (const [session, anchor] of [[new Log('bare').session, 0], [await exploration(), 9]]) {
      const e = thrown(() => select(session, anchor))
      assert.equal(e.code, 'EMPTY_REGION')
      assert.ok(e instanceof RewindError)
      assert.match(e.message, /no surface nodes after the checkpoint/)
    }
  })

  it('has nothing between the mark and the rewind call', () => {
    const log = new Log('tight')
    log.event('turn/start', { turn: 1 })
    log.user('Find the cause')
    const anchor = log.seq
    log.assistant({ calls: [['c2', 'rewind']] })
    assert.match(thrown(() => select(log.session, anchor)).message, /no surface nodes between the checkpoint/)
  })

  it('cannot cut at a balanced boundary when the exploration ends in an open call', () => {
    const log = new Log('unbalanced')
    log.event('turn/start', { turn: 1 })
    const anchor = log.seq
    log.assistant({ calls: [['c1', 'bash']] })
    log.assistant({ calls: [['c2', 'rewind']] }, 2)
    const e = thrown(() => select(log.session, anchor))
    assert.equal(e.code, 'UNBALANCED')
    assert.match(e.message, /balanced boundary/)
  })

  it('keeps the checkpoint call and its result when the mark was taken between them', () => {
    const log = new Log('midcall')
    log.event('turn/start', { turn: 1 })
    log.user('Find the cause')
    log.assistant({ calls: [['c1', 'checkpoint']] })
    const anchor = log.seq
    log.result('c1', '{"id":1}')
    log.assistant({ calls: [['c2', 'bash']] }, 2)
    log.result('c2', OUTPUT, 2)
    log.assistant({ calls: [['c3', 'rewind']] }, 3)
    assert.deepEqual(select(log.session, anchor), [4, 5])
  })

  it('skips an orphaned result and has nothing to fold when only the rewind call follows', () => {
    const log = new Log('splitstart')
    log.event('turn/start', { turn: 1 })
    log.assistant({ calls: [['c1', 'bash'], ['c2', 'bash']] })
    log.result('c1', null)
    const anchor = log.seq
    log.result('c2', null)
    log.assistant({ calls: [['c3', 'rewind']] }, 2)
    const e = thrown(() => select(log.session, anchor))
    assert.equal(e.code, 'EMPTY_REGION')
    assert.match(e.message, /no surface nodes between the checkpoint/)
  })

  it('DIFFERENCE: folds exploration issued with the checkpoint call whole, call and all (the reference folds only the result: [4])', () => {
    const log = new Log('parallel')
    log.event('turn/start', { turn: 1 })
    log.user('Explore it')
    log.assistant({ calls: [['c1', 'checkpoint'], ['c2', 'bash', '{"command":"probe"}']] })
    const anchor = log.seq
    log.result('c1', 'marked')
    log.result('c2', 'probe output')
    log.assistant({ calls: [['c3', 'rewind']] }, 2)
    const seqs = select(log.session, anchor)
    assert.deepEqual(seqs, [2, 3, 4])
    // Why: the reference's [4] leaves call c2 on the surface without its result, which an
    // OpenAI-compatible API rejects. Folding the whole message keeps the history valid.
    const region = addon.selectRegion(mirrorOf(log.session).native, anchor)
    log.session.append('user/message', createUserMessage({ content: [{ type: 'text', text: 'r' }], source: REWIND_REPORT_SOURCE }), {
      surfaceOp: { op: 'replace', start: region.start, end: region.end },
      sourceEventSeqs: seqs,
    })
    log.result('c3', 'folded', 2)
    assert.deepEqual(protocolProblems(log.session.deriveMessages()), [])
  })

  it('has nothing between the checkpoint and the (absent) rewind call when an orphaned result is all that follows', () => {
    const log = new Log('lone-result')
    log.event('turn/start', { turn: 1 })
    log.assistant({ calls: [['c1', 'checkpoint']] })
    const anchor = log.seq
    log.result('c1', null)
    const e = thrown(() => select(log.session, anchor))
    assert.equal(e.code, 'EMPTY_REGION')
    assert.match(e.message, /no surface nodes between the checkpoint/)
  })

  it('folds to the surface tail when there is no assistant message yet (DIFFERENCE: a user message with nothing after it stays, so there is nothing to fold)', () => {
    const log = new Log('noassistant')
    log.user('a')
    assert.equal(thrown(() => select(log.session, 0)).code, 'EMPTY_REGION')
    // A tool result at the tail (its call folded with it) is folded to the tail, as the reference does.
    const tool = new Log('tool-tail')
    tool.user('a')
    tool.assistant({ calls: [['c1', 'bash']] })
    tool.result('c1', OUTPUT)
    assert.deepEqual(select(tool.session, 1), [1, 2])
  })

  it('keeps an answer and the messages after it out of the fold (DIFFERENCE: the reference folds them)', async () => {
    // The turn guard asks for the rewind after the model has answered; the answer, the guard's
    // warning and a user's new message after the last tool work stay, so the model still sees it
    // answered. Only the tool work before them is folded.
    const log = new Log('answered')
    log.user('Find the cause')
    const anchor = log.seq
    const call = log.assistant({ calls: [['c1', 'bash']] })
    const result = log.result('c1', OUTPUT)
    log.assistant({ text: 'The cause is X.' })
    log.user('[the guard asks for the rewind]')
    assert.deepEqual(select(log.session, anchor), [call, result])
    // Nothing but an answer after the mark: nothing to fold.
    const bare = new Log('bare-answer')
    bare.user('Hi')
    bare.assistant({ text: 'Hello.' })
    const e = thrown(() => select(bare.session, 1))
    assert.equal(e.code, 'EMPTY_REGION')
  })

  it('re-checks the region at commit time: the same region holds, a moved one does not', async () => {
    const session = await exploration()
    const region = addon.selectRegion(mirrorOf(session).native, 4)
    assert.equal(addon.planMatches(region, mirrorOf(session).native), true)
    assert.equal(addon.planMatches({ anchor: 4, seqs: new Uint32Array([4, 5, 6]) }, mirrorOf(session).native), false)
  })
})

// ---- the service --------------------------------------------------------------------------------

describe('ctx.rewind.rewind (the reference service contract)', () => {
  it('fills the reference defaults: maxTokens 1024, 2 retries, English', () => {
    const config = RewindConfig({})
    assert.deepEqual([config.maxTokens, config.maxSummarizationRetries, config.reportLanguage], [1024, 2, 'en'])
    const set = RewindConfig({ maxTokens: 512, maxSummarizationRetries: 0, reportLanguage: 'zh' })
    assert.deepEqual([set.maxTokens, set.maxSummarizationRetries, set.reportLanguage], [512, 0, 'zh'])
  })

  it('folds the exploration into the report: the result shape, no plugin events, the stamp, the surface (DIFFERENCE: the report stands in a frame that says what it is)', async () => {
    const { ctx } = await setup([text('## Findings\n- X')])
    const session = await exploration((s) => ctx.checkpoint.mark(s, 'explore the failure'))
    const result = await ctx.rewind.rewind(routed(session), SIGNAL)
    assert.deepEqual(result, { markId: 1, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
    assert.deepEqual(checkpointEvents(session), [])
    assert.notEqual((await ctx.checkpoint.latestMark(session.id))?.foldedAt, null)
    const report = session.events.find((/** @type {any} */ e) => e.type === 'user/message' && isRewindReportSource(e.data.source))
    assert.deepEqual(report.surfaceOp, { op: 'replace', start: 4, end: 5 })
    assert.deepEqual(
      session.deriveMessages().map((/** @type {any} */ m) => m.content),
      [
        [{ type: 'text', text: 'Find the cause' }],
        [{ type: 'text', text: `${reportFrame({ id: 1, objective: 'explore the failure' }, false)}## Findings\n- X` }],
        [{ type: 'tool-call', id: CallId('c2'), name: 'rewind', arguments: '{}' }],
      ],
    )
  })

  it('stamps the mark folded', async () => {
    const { ctx } = await setup([text('report')])
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    assert.equal(await ctx.checkpoint.hasActive(session.id), true)
    await ctx.rewind.rewind(routed(session), SIGNAL)
    assert.equal(await ctx.checkpoint.hasActive(session.id), false)
    assert.notEqual((await ctx.checkpoint.latestMark(session.id))?.foldedAt, null)
  })

  it("routes the report call to the session's routed model with 1024 tokens, the instruction last (DIFFERENCE: the instruction's wording is dsh-fold's own)", async () => {
    const { ctx, model } = await setup([text('report')])
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    await ctx.rewind.rewind(agentOf(session), SIGNAL)
    assert.equal(model.requests.length, 1)
    const request = model.requests[0]
    assert.deepEqual([request.provider, request.model, request.maxTokens], [MODEL, MODEL, 1024])
    assert.equal(request.messages.length, 3, 'the two region messages, then the instruction')
    assert.equal(request.messages.at(-1).role, 'user')
    assert.match(JSON.stringify(request.messages.at(-1).content), /## Findings/)
  })

  it('prefers the configured provider/model and budget, and writes the zh instruction', async () => {
    const { ctx, model } = await setup([text('报告')], { rewind: { summarizationProvider: 'other', summarizationModel: 'other-model', reportLanguage: 'zh', maxTokens: 256 } })
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    await ctx.rewind.rewind(agentOf(session), SIGNAL)
    assert.deepEqual([model.requests[0].provider, model.requests[0].model, model.requests[0].maxTokens], ['other', 'other-model', 256])
    assert.match(JSON.stringify(model.requests[0].messages.at(-1).content), /## 发现/)
  })

  it('rejects a session without a mark: NO_CHECKPOINT, "no checkpoint mark"', async () => {
    const { ctx } = await setup([text('report')])
    const e = await ctx.rewind.rewind(agentOf(new Log('bare').session), SIGNAL).then(assert.fail, (x) => x)
    assert.ok(e instanceof RewindError)
    assert.equal(e.code, 'NO_CHECKPOINT')
    assert.match(e.message, /no checkpoint mark/)
  })

  it('rejects a second fold of the session while one runs: "already in progress"', async () => {
    /** @type {(v: any) => void} */
    let release = () => {}
    const hold = new Promise((resolve) => (release = resolve))
    /** @type {(v: any) => void} */
    let entered = () => {}
    const summarizing = new Promise((resolve) => (entered = resolve))
    const { ctx, model } = await setup([text('report')])
    const respond = model.respond
    model.respond = async (/** @type {any} */ o, /** @type {number} */ n) => (entered(undefined), await hold, respond(o, n))
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    const first = ctx.rewind.rewind(routed(session), SIGNAL)
    await summarizing
    const e = await ctx.rewind.rewind(routed(session), SIGNAL).then(assert.fail, (x) => x)
    assert.equal(e.code, 'FOLD_IN_PROGRESS')
    assert.match(e.message, /already in progress/)
    release(undefined)
    assert.equal((await first).foldedNodes, 2)
  })

  it('rejects a report not smaller than the region: SHRINK, "not smaller"', async () => {
    const { ctx } = await setup([text('x'.repeat(200))])
    const log = new Log('shrink')
    log.event('turn/start', { turn: 1 })
    await ctx.checkpoint.mark(log.session)
    log.assistant({ text: 'short analysis', calls: [['c1', 'bash']] })
    log.result('c1', 'ok')
    log.assistant({ calls: [['c2', 'rewind']] }, 2)
    const e = await ctx.rewind.rewind(routed(log.session), SIGNAL).then(assert.fail, (x) => x)
    assert.equal(e.code, 'SHRINK')
    assert.match(e.message, /not smaller/)
  })

  it('folds an empty-content assistant message (it derives to no message, so the report input skips it)', async () => {
    const { ctx, model } = await setup([text('report')])
    const log = new Log('emptyassistant')
    log.event('turn/start', { turn: 1 })
    await ctx.checkpoint.mark(log.session)
    log.assistant({})
    log.assistant({ calls: [['c1', 'bash']] })
    log.result('c1', OUTPUT)
    log.assistant({ calls: [['c2', 'rewind']] }, 2)
    assert.equal((await ctx.rewind.rewind(routed(log.session), SIGNAL)).foldedNodes, 3)
    assert.equal(model.requests[0].messages.length, 3, 'the call, its result and the instruction')
  })

  it('skips the shrink check for a region without text', async () => {
    const { ctx } = await setup([text('report')])
    const log = new Log('toolonly')
    log.event('turn/start', { turn: 1 })
    await ctx.checkpoint.mark(log.session)
    log.assistant({ calls: [['c1', 'bash', '']] })
    log.result('c1', null)
    log.assistant({ calls: [['c2', 'rewind']] }, 2)
    const result = await ctx.rewind.rewind(routed(log.session), SIGNAL)
    assert.deepEqual([result.foldedNodes, result.foldedChars, result.reportChars], [2, 0, 6])
  })

  it('keeps the mark active and writes nothing when the report stays empty: "no text report"', async () => {
    const { ctx } = await setup([[{ type: 'finish', reason: { kind: 'stop' } }]], { rewind: { maxSummarizationRetries: 0 } })
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    const seq = session.seq
    const e = await ctx.rewind.rewind(agentOf(session), SIGNAL).then(assert.fail, (x) => x)
    assert.match(e.message, /no text report/)
    assert.deepEqual(checkpointEvents(session), [])
    assert.equal(session.seq, seq)
    assert.equal(await ctx.checkpoint.hasActive(session.id), true)
  })

  it('retries an empty completion and folds with the next', async () => {
    const { ctx, model } = await setup([[{ type: 'finish', reason: { kind: 'stop' } }], text('report')])
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    assert.equal((await ctx.rewind.rewind(routed(session), SIGNAL)).foldedNodes, 2)
    assert.equal(model.requests.length, 2)
  })

  it('says how the retries ran out: "after 2 retries (finish, outputTokens, reasoningTokens)"', async () => {
    const exhausted = [{ type: 'usage', usage: { inputTokens: 1, outputTokens: 1024, reasoningTokens: 1024 } }, { type: 'finish', reason: { kind: 'max-tokens' } }]
    const { ctx, model } = await setup([exhausted], { rewind: { maxSummarizationRetries: 2 } })
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    const e = await ctx.rewind.rewind(agentOf(session), SIGNAL).then(assert.fail, (x) => x)
    assert.match(e.message, /no text report content after 2 retries \(finish: max-tokens, outputTokens: 1024, reasoningTokens: 1024\)/)
    assert.equal(model.requests.length, 3)
    assert.equal(await ctx.checkpoint.hasActive(session.id), true)
  })

  it('leaves reasoningTokens out when the usage has none', async () => {
    const exhausted = [{ type: 'usage', usage: { inputTokens: 1, outputTokens: 1024 } }, { type: 'finish', reason: { kind: 'max-tokens' } }]
    const { ctx } = await setup([exhausted], { rewind: { maxSummarizationRetries: 0 } })
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    const e = await ctx.rewind.rewind(agentOf(session), SIGNAL).then(assert.fail, (x) => x)
    assert.match(e.message, /no text report content after 0 retries \(finish: max-tokens, outputTokens: 1024\)/)
  })

  it("turns thinking off when the route offers an 'off' effort, and leaves it alone otherwise", async () => {
    // Without an 'off' effort the request names none (the runtime applies the route's default).
    for (const [efforts, expected] of /** @type {const} */ ([[['off', 'high'], 'off'], [[], undefined], [['low', 'high'], 'high']])) {
      const { ctx, model } = await setup([text('report')], { efforts: [...efforts] })
      const session = await exploration((s) => ctx.checkpoint.mark(s))
      await ctx.rewind.rewind(routed(session), SIGNAL)
      assert.equal(model.requests[0].reasoningEffort, expected, efforts.join())
    }
  })

  it('keeps the mark active when the report stream ends with an error: "stream ended with error"', async () => {
    const { ctx } = await setup([[{ type: 'finish', reason: { kind: 'error', failure: { message: 'boom', code: 'E' } } }]])
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    const e = await ctx.rewind.rewind(routed(session), SIGNAL).then(assert.fail, (x) => x)
    assert.match(e.message, /stream ended with error/)
    assert.deepEqual(checkpointEvents(session), [])
    assert.equal(await ctx.checkpoint.hasActive(session.id), true)
  })

  it("rejects a cancelled rewind with the signal's reason itself, writing nothing", async () => {
    const { ctx, model } = await setup([text('report')])
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    const seq = session.seq
    const controller = new AbortController()
    const reason = new Error('user cancelled')
    controller.abort(reason)
    const e = await ctx.rewind.rewind(agentOf(session), controller.signal).then(assert.fail, (x) => x)
    assert.equal(e, reason)
    // The default reason (a DOMException AbortError) too, and while the report call runs.
    const running = new AbortController()
    const pending = ctx.rewind.rewind(routed(session), running.signal)
    running.abort()
    assert.equal(await pending.then(assert.fail, (x) => x), running.signal.reason)
    assert.equal(session.seq, seq)
    assert.equal(await ctx.checkpoint.hasActive(session.id), true)
    assert.ok(model.requests.length <= 1)
  })

  it('rejects when no provider/model can be resolved: "no provider/model available"', async () => {
    const { ctx } = await setup([text('report')])
    const log = new Log('nohost')
    await ctx.checkpoint.mark(log.session)
    log.assistant({ calls: [['c1', 'bash']] })
    log.result('c1', OUTPUT)
    log.assistant({ calls: [['c2', 'rewind']] })
    const e = await ctx.rewind.rewind(agentOf(log.session), SIGNAL).then(assert.fail, (x) => x)
    assert.match(e.message, /no provider\/model available/)
  })
})

// ---- the report call ------------------------------------------------------------------------------

describe('the report call (the reference summarizer contract)', () => {
  const TOOLS = [{ name: 't', description: 'd', parameters: { type: 'object', properties: {} } }]

  it("passes the session's system prompt and tool schemas through (DIFFERENCE: the call always carries a signal, for its timeout)", async () => {
    const { ctx, model } = await setup([text('report')])
    const log = new Log('sys')
    log.event('request/header', { header: { config: { provider: MODEL, model: MODEL }, system: 'sys-text', tools: TOOLS }, reason: 'initial' })
    await ctx.checkpoint.mark(log.session)
    log.assistant({ text: 'a long enough analysis to fold', calls: [['c1', 'bash']] })
    log.result('c1', OUTPUT)
    log.assistant({ calls: [['c2', 'rewind']] }, 2)
    await ctx.rewind.rewind(agentOf(log.session))
    assert.equal(model.requests[0].system, 'sys-text')
    assert.deepEqual(model.requests[0].tools, TOOLS)
    assert.ok(model.requests[0].signal instanceof AbortSignal)
  })

  it("falls back to the agent's options without a routed header", async () => {
    const { ctx, model } = await setup([text('report')])
    const log = new Log('noheader')
    await ctx.checkpoint.mark(log.session)
    log.assistant({ text: 'a long enough analysis to fold', calls: [['c1', 'bash']] })
    log.result('c1', OUTPUT)
    log.assistant({ calls: [['c2', 'rewind']] }, 2)
    await ctx.rewind.rewind(agentOf(log.session, { provider: MODEL, model: MODEL }))
    assert.equal(model.requests[0].provider, MODEL)
  })

  for (const options of [{ provider: MODEL }, { provider: '' }, { provider: MODEL, model: '' }]) {
    it(`rejects agent options naming half a route ${JSON.stringify(options)}: "no provider/model available"`, async () => {
      const { ctx, model } = await setup([text('report')])
      const log = new Log('partial')
      await ctx.checkpoint.mark(log.session)
      log.assistant({ text: 'a long enough analysis to fold', calls: [['c1', 'bash']] })
      log.result('c1', OUTPUT)
      log.assistant({ calls: [['c2', 'rewind']] }, 2)
      const e = await ctx.rewind.rewind(agentOf(log.session, options)).then(assert.fail, (x) => x)
      assert.match(e.message, /no provider\/model available/)
      assert.equal(model.requests.length, 0)
    })
  }
})

// ---- the tool -------------------------------------------------------------------------------------

describe('the rewind tool', () => {
  let calls = 0
  /** @param {any} ctx @param {any} [agent] @param {string} [name] */
  const callRewind = (ctx, agent, name = 'rewind') =>
    ctx.tools.execute({ signal: SIGNAL, callId: CallId(`call-${++calls}`), name, arguments: {}, ...(agent ? { agent } : {}) })
  const textOf = (/** @type {any} */ result) => result.content.filter((/** @type {any} */ b) => b.type === 'text').map((/** @type {any} */ b) => b.text).join('')

  it('registers and folds through the real registry (a call id not in the session folds as the direct path)', async () => {
    const { ctx } = await setup([text('## Findings\n- done')])
    assert.ok(ctx.tools.schemas().some((/** @type {any} */ s) => s.name === 'rewind'))
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    const result = await callRewind(ctx, routed(session))
    assert.match(textOf(result), /^Checkpoint 1 folded: the 2 messages of its investigation/)
    assert.deepEqual(checkpointEvents(session), [])
    assert.equal(await ctx.checkpoint.hasActive(session.id), false)
  })

  it("presents a generic Rewind card of kind other, and renders the result (DIFFERENCE: in the model's terms, with the next step)", async () => {
    const { ctx } = await setup([text('report')])
    const tool = ctx.tools.get('rewind')
    assert.deepEqual(tool.presentCall({}), { card: 'generic', title: 'Rewind', kind: 'other' })
    assert.deepEqual(tool.output.render({}, { markId: 4, foldedNodes: 2, start: 5, end: 6, foldedChars: 25, reportChars: 15 }), [
      {
        type: 'text',
        text: 'Checkpoint 4 folded: the 2 messages of its investigation (25 chars) are replaced by your report, above (15 chars). Continue the task; if you already answered the user, end your turn without repeating the answer.',
      },
    ])
    assert.match(tool.output.render({}, { markId: 1, foldedNodes: 1, start: 2, end: 2, foldedChars: 0, reportChars: 0 })[0].text, /^Checkpoint 1 folded: the 1 message of its investigation \(0 chars\)/)
  })

  it('adds the tool:rewind prompt section (DIFFERENCE: its wording is dsh-fold\'s own)', async () => {
    const { ctx } = await setup([text('report')])
    const { sections } = await ctx.systemPrompt.assemble()
    const section = sections.find((/** @type {any} */ s) => s.name === 'tool:rewind')
    assert.match(section.text, /`rewind`/)
    assert.match(section.text, /`checkpoint`/)
  })

  it('rejects a call without an owning agent session', async () => {
    const { ctx } = await setup([text('report')])
    const result = await callRewind(ctx, undefined)
    assert.equal(result.isError, true)
    assert.match(result.error?.message, /owning agent session/)
  })

  it("accepts any tool name DSH's registry accepts, e.g. fold.rewind", async () => {
    const { ctx } = await setup([text('## Findings\n- done')], { rewind: { toolName: 'fold.rewind' } })
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    assert.match(textOf(await callRewind(ctx, routed(session), 'fold.rewind')), /^Checkpoint 1 folded/)
  })
})

// ---- the report source and the guard ------------------------------------------------------------

describe('the report source and the turn guard', () => {
  it('recognises the rewind report source and nothing else; the constants are the reference values', () => {
    assert.equal(isRewindReportSource({ kind: 'plugin', plugin: 'rewind' }), true)
    assert.equal(isRewindReportSource({ kind: 'user' }), false)
    assert.equal(isRewindReportSource({ kind: 'plugin', plugin: 'compact' }), false)
    assert.deepEqual(REWIND_REPORT_SOURCE, { kind: 'plugin', plugin: 'rewind' })
    assert.deepEqual(REWIND_GUARD_SOURCE, { kind: 'plugin', plugin: 'rewind' })
    assert.ok(Object.isFrozen(REWIND_REPORT_SOURCE) && Object.isFrozen(REWIND_GUARD_SOURCE))
  })

  it('reads an active mark from the checkpoint store; completing another id keeps it active', async () => {
    const { ctx } = await setup([text('report')])
    const log = new Log('guard-state')
    log.event('turn/start', { turn: 1 })
    assert.equal(await ctx.checkpoint.hasActive(log.session.id), false)
    const { id } = await ctx.checkpoint.mark(log.session)
    assert.equal(await ctx.checkpoint.hasActive(log.session.id), true)
    await ctx.checkpoint.completeFold(log.session.id, id - 1)
    assert.equal(await ctx.checkpoint.hasActive(log.session.id), true)
    await ctx.checkpoint.completeFold(log.session.id, id)
    assert.equal(await ctx.checkpoint.hasActive(log.session.id), false)
  })

  it('injects the warning once per turn while a mark is active, with the guard source (DIFFERENCE: its wording is dsh-fold\'s own)', async () => {
    const { ctx } = await setup([text('report')])
    const log = new Log('guard-inject')
    log.event('turn/start', { turn: 1 })
    const { id } = await ctx.checkpoint.mark(log.session)
    /** @type {any[]} */
    const injected = []
    const agent = { id: log.session.id, session: log.session, inject: (/** @type {any} */ m) => injected.push(m) }
    const stop = (/** @type {number} */ turn) => ctx.parallel('agent/turn-stopping', { agent, turn, signal: SIGNAL })
    await stop(1)
    assert.equal(injected.length, 1)
    assert.deepEqual(injected[0].source, REWIND_GUARD_SOURCE)
    assert.equal(injected[0].content[0].type, 'text')
    assert.match(injected[0].content[0].text, /`rewind`/)
    await stop(1)
    assert.equal(injected.length, 1, 'once per turn')
    await ctx.checkpoint.completeFold(log.session.id, id)
    await stop(2)
    assert.equal(injected.length, 1, 'quiet once folded')
  })
})

// ---- the exports other plugins import -------------------------------------------------------------

describe('RewindError', () => {
  it('is the class of every coded rejection, the addon\'s included, with a stable code', async () => {
    const { ctx } = await setup([text('report')])
    const e = await ctx.rewind.rewind(agentOf(new Log('bare').session), SIGNAL).then(assert.fail, (x) => x)
    assert.ok(e instanceof RewindError && e instanceof Error)
    assert.equal(e.code, 'NO_CHECKPOINT')
    const made = new RewindError('SHRINK', 'too long')
    assert.ok(made instanceof RewindError && made instanceof Error)
    assert.deepEqual([made.name, made.code, made.message], ['RewindError', 'SHRINK', 'too long'])
    assert.ok(!(new Error('plain') instanceof RewindError))
    assert.ok(!(Object.assign(new Error('x'), { code: 'ENOENT' }) instanceof RewindError))
  })
})

// ---- the direct path ------------------------------------------------------------------------------

describe('a direct ctx.rewind.rewind(agent) after the turn', () => {
  it("ends the region before the last assistant message when it has no tool calls: the final answer stays", async () => {
    const { ctx } = await setup([text('## Findings\n- X')])
    const log = new Log('after-turn')
    log.event('turn/start', { turn: 1 })
    log.user('Find the cause')
    await ctx.checkpoint.mark(log.session)
    const call = log.assistant({ calls: [['c1', 'bash']] })
    const result = log.result('c1', OUTPUT)
    const answer = log.assistant({ text: 'The cause is X.' }, 2)
    const folded = await ctx.rewind.rewind(routed(log.session), SIGNAL)
    assert.deepEqual([folded.start, folded.end, folded.foldedNodes], [call, result, 2])
    assert.equal(log.session.surface.nodes.at(-1), answer)
  })
})

// ---- the mixes ------------------------------------------------------------------------------------

describe('mixing dsh-fold with the reference pair', () => {
  /**
   * A rewind service with the reference's documented contract, written here: it reads the
   * session's latest mark through `ctx.checkpoint.latestMark(sessionId)` (`undefined` when
   * there is none → NO_CHECKPOINT), folds the surface nodes from the mark's `logLength` on up
   * to the rewind call, and stamps through `ctx.checkpoint.completeFold(sessionId, markId)`.
   */
  class ReferenceShapedRewind extends Service {
    static inject = ['checkpoint']
    /** @param {any} ctx */
    constructor(ctx) {
      super(ctx, 'rewind')
    }
    /** @param {any} agent */
    async rewind(agent) {
      const session = agent.session
      const mark = await this.ctx.checkpoint.latestMark(session.id)
      if (mark === undefined) throw new RewindError('NO_CHECKPOINT', 'rewind: no checkpoint mark found for this session')
      const current = session.events.findLastIndex((/** @type {any} */ e) => e.type === 'assistant/message')
      const shadowed = [...session.surface.nodes].filter((seq) => seq >= mark.logLength && seq < current)
      session.append('user/message', createUserMessage({ content: [{ type: 'text', text: 'report' }], source: REWIND_REPORT_SOURCE }), {
        surfaceOp: { op: 'replace', start: shadowed[0], end: shadowed.at(-1) },
        sourceEventSeqs: shadowed,
      })
      await this.ctx.checkpoint.completeFold(session.id, mark.id)
      return { markId: mark.id, foldedNodes: shadowed.length, start: shadowed[0], end: shadowed.at(-1) }
    }
  }

  it("a reference-shaped rewind over dsh-fold's checkpoint: latestMark resolves undefined when there is none", async () => {
    const ctx = new Context()
    await ctx.plugin(SystemPrompt)
    await ctx.plugin(ToolRuntime)
    await ctx.plugin(Checkpoint, { store: tempStore() })
    await ctx.plugin(ReferenceShapedRewind)
    assert.equal(await ctx.checkpoint.latestMark('nobody'), undefined)
    const bare = new Log('bare').session
    const e = await ctx.rewind.rewind(agentOf(bare)).then(assert.fail, (x) => x)
    assert.equal(e.code, 'NO_CHECKPOINT')
    const session = await exploration((s) => ctx.checkpoint.mark(s))
    assert.deepEqual(await ctx.rewind.rewind(agentOf(session)), { markId: 1, foldedNodes: 2, start: 4, end: 5 })
    assert.equal(await ctx.checkpoint.hasActive(session.id), false)
  })

  /**
   * A checkpoint service with the reference's documented contract, written here: marks in memory
   * (as the reference keeps them in its storage domain), `latestMark` resolving `undefined` when
   * there is none, `completeFold` stamping only the session's latest active mark.
   */
  class ReferenceShapedCheckpoint extends Service {
    /** @type {Map<string, {id: number, logLength: number, objective?: string, foldedAt: number | null}[]>} */
    marks = new Map()
    next = 1
    /** @param {any} ctx */
    constructor(ctx) {
      super(ctx, 'checkpoint')
    }
    /** @param {any} session @param {string} [objective] */
    async mark(session, objective) {
      const mark = { id: this.next++, logLength: session.events.length, objective, foldedAt: null }
      this.marks.set(session.id, [...(this.marks.get(session.id) ?? []), mark])
      return { id: mark.id, logLength: mark.logLength }
    }
    /** @param {string} sessionId */
    async latestMark(sessionId) {
      return this.marks.get(sessionId)?.at(-1)
    }
    /** @param {string} sessionId */
    async hasActive(sessionId) {
      const mark = await this.latestMark(sessionId)
      return mark !== undefined && mark.foldedAt === null
    }
    /** @param {string} sessionId @param {number} markId */
    async completeFold(sessionId, markId) {
      const mark = await this.latestMark(sessionId)
      if (mark?.id === markId && mark.foldedAt === null) mark.foldedAt = Date.now()
    }
  }

  it("dsh-fold's rewind over a reference-shaped checkpoint service: its marks, its stamp, its guard state", async () => {
    const model = new ScriptedModel(() => text('## Findings\n- X'))
    const ctx = new Context()
    const { LlmRuntime } = await import('@deepseek-ai/dsh-llm')
    await ctx.plugin(LlmRuntime)
    await ctx.plugin(SystemPrompt)
    await ctx.plugin(ToolRuntime)
    ctx.llm.registerAdapter([MODEL], model)
    await ctx.plugin(ReferenceShapedCheckpoint)
    await ctx.plugin(Rewind, {})
    // No mark: NO_CHECKPOINT, as with dsh-fold's own store.
    const none = await ctx.rewind.rewind(routed(new Log('bare').session), SIGNAL).then(assert.fail, (x) => x)
    assert.equal(none.code, 'NO_CHECKPOINT')
    assert.ok(none instanceof RewindError)
    const session = await exploration((s) => ctx.checkpoint.mark(s, 'explore the failure'))
    assert.equal(await ctx.checkpoint.hasActive(session.id), true)
    // The guard reads the service's state.
    /** @type {any[]} */
    const injected = []
    await ctx.parallel('agent/turn-stopping', { agent: { id: session.id, session, inject: (/** @type {any} */ m) => injected.push(m) }, turn: 1, signal: SIGNAL })
    assert.equal(injected.length, 1)
    assert.deepEqual(await ctx.rewind.rewind(routed(session), SIGNAL), { markId: 1, foldedNodes: 2, start: 4, end: 5, foldedChars: 25, reportChars: 15 })
    assert.equal(await ctx.checkpoint.hasActive(session.id), false, "stamped through the service's completeFold")
    // One fold per mark, from the service's own record.
    const again = await ctx.rewind.rewind(routed(session), SIGNAL).then(assert.fail, (x) => x)
    assert.equal(again.code, 'EMPTY_REGION')
    assert.match(again.message, /already folded/)
  })
})
