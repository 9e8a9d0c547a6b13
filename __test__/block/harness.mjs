/**
 * @module __test__/block/harness
 * Real DeepSeek Harness parts for the block-mode suite (Node >= 22: the worker-thread code
 * runtime needs it). `bootBlockHost` mounts, on one root cordis Context: DSH's invariant
 * registry with the session, LLM, tools, compaction, token-meter and agent-loop invariant
 * companions (so every event the plugin writes is checked by DSH's own rules), LlmRuntime,
 * SessionStore, SessionProjectionRegistry (before TokenMeter, so the meter's context
 * projection is readable), TokenMeter, AgentRegistry, SystemPrompt,
 * WorkerThreadCodeRuntime, ToolRuntime in `both` mode, AgentLoop, two small real tools, and
 * the `dsh-fold/block` plugin. The model is `BlockModel`, a real `LlmAdapter` subclass that
 * answers from a script with protocol-correct stream chunks (block-start / delta /
 * block-end), and records every request it receives.
 *
 * Nothing here fakes a DSH class. Helpers read the real log, surface and meter.
 */
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'

import { Context } from '@deepseek-ai/cordis'
import { AgentRegistry } from '@deepseek-ai/dsh-agent'
import { AgentLoop } from '@deepseek-ai/dsh-agent-loop'
import { WorkerThreadCodeRuntime } from '@deepseek-ai/dsh-code-runtime-worker-thread'
import { InvariantRegistry } from '@deepseek-ai/dsh-invariants'
import { CallId, LlmAdapter, LlmRuntime, ReasoningEffortId, createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId, SessionStore } from '@deepseek-ai/dsh-session'
import { SessionProjectionRegistry } from '@deepseek-ai/dsh-session-projection'
import { SystemPrompt } from '@deepseek-ai/dsh-system-prompt'
import { TokenMeter } from '@deepseek-ai/dsh-token-meter'
import { ToolRuntime, defineTool } from '@deepseek-ai/dsh-tools'

import Block from '../../plugin/block/block.js'

export { Block, SessionId, createUserMessage }

const INVARIANT_PACKAGES = ['dsh-session', 'dsh-llm', 'dsh-tools', 'dsh-compaction', 'dsh-token-meter', 'dsh-agent-loop']

// ---- the scripted model ---------------------------------------------------------------------

/**
 * One scripted reply as protocol-correct stream chunks.
 * @param {{text?: string, reasoning?: string, calls?: {id: string, name: string, args?: object | string}[]}} reply
 */
export function chunksOf(reply) {
  const out = []
  let index = 0
  for (const [type, text] of /** @type {const} */ ([['reasoning', reply.reasoning], ['text', reply.text]])) {
    if (!text) continue
    out.push({ type: 'block-start', index, blockType: type })
    out.push({ type: `${type}-delta`, index, text })
    out.push({ type: 'block-end', index, block: { type, text } })
    index++
  }
  for (const c of reply.calls ?? []) {
    const json = typeof c.args === 'string' ? c.args : JSON.stringify(c.args ?? {})
    out.push({ type: 'block-start', index, blockType: 'tool-call' })
    out.push({ type: 'tool-call-delta', index, id: CallId(c.id), name: c.name, argumentsDelta: json })
    out.push({ type: 'block-end', index, block: { type: 'tool-call', id: CallId(c.id), name: c.name, arguments: json } })
    index++
  }
  out.push({ type: 'usage', usage: { inputTokens: 100, outputTokens: 20 } })
  out.push({ type: 'finish', reason: { kind: reply.calls?.length ? 'tool-calls' : 'stop' } })
  return out
}

/** A `block_run_code` call. @param {string} id @param {string[] | {id: string}} ids @param {string} code @param {object} [extra] */
export const blockCall = (id, ids, code, extra = {}) => ({
  id,
  name: 'block_run_code',
  args: { ...(Array.isArray(ids) ? { ids } : ids), description: `program ${id}`, code, ...extra },
})

/**
 * A real LlmAdapter answering from `script`: an array of replies (or `(options, n) => reply`
 * functions), walked in order; asking past its end fails the test loudly.
 */
export class BlockModel extends LlmAdapter {
  /** @type {any[]} every request's options, in order */
  requests = []
  /** @param {Array<object | ((options: any, n: number) => object)>} script */
  constructor(script) {
    super()
    this.script = script
  }
  async resolveModel(provider, model) {
    return {
      provider,
      id: model,
      name: model,
      context: { contextWindow: 128000 },
      defaultMaxTokens: 4096,
      reasoning: { efforts: [{ id: ReasoningEffortId('off'), name: 'off' }], defaultEffort: ReasoningEffortId('off') },
    }
  }
  async *stream(options) {
    this.requests.push(options)
    const step = this.script[this.requests.length - 1]
    if (step === undefined) throw new Error(`model script exhausted at request ${this.requests.length}`)
    const reply = typeof step === 'function' ? await step(options, this.requests.length - 1) : step
    for (const chunk of chunksOf(reply)) yield chunk
  }
}

// ---- the host -------------------------------------------------------------------------------

/** The facts of notes the `lookup` tool serves. */
export const NOTES = {
  alpha: 'alpha: the flux capacitor needs 1.21 GW',
  beta: 'beta: ZEBRA-42 is the build id',
  gamma: 'gamma: ship on Friday',
}

/**
 * Boots the real parts and mounts block mode.
 * @param {{script?: any[], meter?: boolean, mode?: 'native' | 'code' | 'both', codeRuntime?: boolean,
 *   block?: object | false, tools?: (root: any) => void}} [options]
 */
export async function bootBlockHost({ script = [], meter = true, mode = 'both', codeRuntime = true, block = {}, tools } = {}) {
  const model = new BlockModel(script)
  const root = new Context()
  await root.plugin(InvariantRegistry)
  for (const name of INVARIANT_PACKAGES) await root.plugin(await import(`@deepseek-ai/${name}/invariant`))
  await root.plugin(LlmRuntime)
  await root.plugin(SessionStore)
  await root.plugin(SessionProjectionRegistry)
  if (meter) await root.plugin(TokenMeter)
  await root.plugin(AgentRegistry)
  await root.plugin(SystemPrompt)
  if (codeRuntime) await root.plugin(WorkerThreadCodeRuntime)
  await root.plugin(ToolRuntime, { mode })
  await root.plugin(AgentLoop)
  root.llm.registerAdapter(['scripted'], model)
  root.tools.register(
    defineTool({
      name: 'lookup',
      description: 'Read one note by key.',
      parameters: { key: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      isConcurrencySafe: () => true,
      execute: async ({ key }) => {
        // The key comes from the model: own keys only (`constructor` is no note).
        if (!Object.hasOwn(NOTES, key)) throw new Error(`no note ${key}`)
        return NOTES[/** @type {keyof typeof NOTES} */ (key)]
      },
    }),
  )
  tools?.(root)
  const fiber = block === false ? undefined : root.plugin(Block, block)
  if (fiber) await fiber
  return { root, model, fiber }
}

/** A real agent on a fresh session, routed to the scripted model. @param {any} root @param {string} [id] */
export async function agentOn(root, id = 'block-session') {
  const { agent } = await root.agents.create({
    sessionId: SessionId(id),
    agentOptions: { provider: 'scripted', model: 'm1' },
    meta: { cwd: tmpdir() },
  })
  return agent
}

/** Runs one user prompt to the end of its turn. @param {any} agent @param {string} text */
export async function prompt(agent, text) {
  agent.followup(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }))
  await agent.whenIdle()
}

// ---- reading what happened ------------------------------------------------------------------

/** @param {any} m a message */
export const textOf = (m) =>
  (m?.content ?? [])
    .map((/** @type {any} */ b) => (b.type === 'text' ? b.text : b.type === 'tool-result' ? textOf(b) : ''))
    .join('')

/** A compact picture of a message list: `user assistant(block_run_code) tool ...`. @param {any[]} messages */
export const shape = (messages) =>
  messages
    .map((m) => {
      const calls = (m.content ?? []).filter((/** @type {any} */ b) => b.type === 'tool-call').map((/** @type {any} */ b) => b.name)
      if (calls.length) return `assistant(${calls.join(',')})`
      if (m.content?.some((/** @type {any} */ b) => b.type === 'tool-result')) return 'tool'
      const t = textOf(m)
      return t.startsWith('<block-summary>') ? 'summary' : `${m.role}`
    })
    .join(' ')

/** The turn's events after `from`, as `type` strings. @param {any} session @param {number} [from] */
export const typesFrom = (session, from = 0) => session.events.slice(from).map((/** @type {any} */ e) => e.type)

/** The block-mode commits of a session: each bracket's four events. @param {any} session */
export function commitsOf(session) {
  const events = session.events
  return events
    .filter((/** @type {any} */ e) => e.type === 'user/message' && e.data.source?.blockPtc)
    .map((/** @type {any} */ replacement) => {
      const [startSeq, summarySeq] = replacement.sourceEventSeqs
      return { start: events[startSeq], summary: events[summarySeq], replacement, end: events[replacement.seq + 1] }
    })
}

/**
 * Asserts DSH's own meter projection (`contextBreakdown.messageTokens`, the O(1) fold that
 * prices a replace from its adjacent `compaction/summary`) equals `measure().surfaceTokens`.
 * @param {any} root @param {any} session
 */
export function assertMeterAgrees(root, session) {
  const measured = root.tokenMeter.measure(session).surfaceTokens
  const projected = root.sessionProjections.snapshot(session).values.contextBreakdown.messageTokens
  assert.equal(projected, measured, `meter projection ${projected} != measure().surfaceTokens ${measured}`)
  return measured
}

/**
 * Checks `assertMeterAgrees` right after every block-mode commit of `session` (at its
 * `compaction/end`); returns the commits checked so far and the first disagreement, if any.
 * @param {any} root @param {any} session
 */
export function meterAtEveryCommit(root, session) {
  const seen = { commits: 0, /** @type {unknown} */ error: undefined }
  root.on('session/event', (/** @type {any} */ s, /** @type {any} */ e) => {
    if (s !== session || e.type !== 'compaction/end' || !e.data.blockPtc || e.data.error) return
    seen.commits++
    try {
      assertMeterAgrees(root, s)
    } catch (error) {
      seen.error ??= error
    }
  })
  return seen
}

/** What must not change when a call is refused: the log length and the surface. @param {any} session */
export const stateOf = (session) => ({ seq: session.seq, nodes: [...session.surface.nodes] })

/** The result a tool call got, from the log: `{isError, text}`. @param {any} session @param {string} callId */
export function resultOf(session, callId) {
  const event = session.events.find((/** @type {any} */ e) => e.type === 'tool/result' && e.data.message.content[0]?.toolCallId === callId)
  if (!event) return undefined
  const block = event.data.message.content[0]
  return { isError: block.isError === true, text: textOf(block), seq: event.seq }
}

/** The `tool/code-dispatch` events of a call's program. @param {any} session @param {string} callId */
export const dispatchesOf = (session, callId) =>
  session.events.filter((/** @type {any} */ e) => e.type === 'tool/code-dispatch' && e.data.rootCallId === callId).map((/** @type {any} */ e) => e.data)

/** The parsed value a sub-call returned in a program. @param {any} dispatch */
export const valueOf = (dispatch) => JSON.parse(dispatch.content.map((/** @type {any} */ b) => b.text ?? '').join(''))
