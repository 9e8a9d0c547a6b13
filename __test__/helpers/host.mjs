/**
 * @module __test__/helpers/host
 * The one composition of the real DeepSeek Harness host the suites boot. `bootRealHost` mounts,
 * on a root cordis Context, in the order a DSH host mounts them: DSH's InvariantRegistry with the
 * named packages' invariant companions (every event the plugins write is checked by DSH's own
 * rules), LlmRuntime, SessionStore, SessionProjectionRegistry (before TokenMeter, so the meter's
 * context projection is readable), TokenMeter, AgentRegistry, SystemPrompt, the worker-thread
 * code runtime (Node >= 22), ToolRuntime, AgentLoop and CommandRuntime — each part a suite does
 * not ask for is left out — and registers the suite's scripted model as provider `scripted`.
 *
 * Also here, because every suite drives the host the same way: `ScriptedAdapter`, the real
 * `LlmAdapter` subclass the suites' scripted models extend; `streamChunks`, a scripted reply as
 * protocol-correct stream chunks; an agent on a fresh session (`createAgent`, `agentOn`), one
 * prompt run to the end of its turn (`prompt`), and two readings of messages (`textOf`,
 * `protocolProblems`). What is particular to a suite — its model's script, its tools, the
 * dsh-fold plugins it mounts, what it reads off the log — stays in the suite's own harness
 * (`__test__/helpers/dsh.mjs`, `__test__/block/harness.mjs`, `__test__/compaction/harness.mjs`).
 *
 * Nothing here fakes a DSH class.
 */
import { tmpdir } from 'node:os'

// dsh-agent-loop calls Promise.withResolvers (Node >= 22); the suites also run on Node 20. Set
// before DSH's packages load (hence their dynamic imports below).
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function () {
    let resolve, reject
    const promise = new this((res, rej) => {
      resolve = res
      reject = rej
    })
    return { promise, resolve, reject }
  }
}

const { Context } = await import('@deepseek-ai/cordis')
const { AgentRegistry } = await import('@deepseek-ai/dsh-agent')
const { AgentLoop } = await import('@deepseek-ai/dsh-agent-loop')
const { CallId, LlmAdapter, LlmRuntime, ReasoningEffortId, createUserMessage } = await import('@deepseek-ai/dsh-llm')
const { SessionId, SessionStore } = await import('@deepseek-ai/dsh-session')
const { SystemPrompt } = await import('@deepseek-ai/dsh-system-prompt')
const { ToolRuntime } = await import('@deepseek-ai/dsh-tools')

/**
 * The parts of a host a suite asks for, beyond the ones every host has (LlmRuntime,
 * SessionStore, AgentRegistry, SystemPrompt, ToolRuntime, AgentLoop).
 * @typedef {object} HostParts
 * @property {string[]} [invariants] packages (`dsh-session`, …) whose `/invariant` companions are
 *   mounted on DSH's InvariantRegistry; none (and no registry) unless said
 * @property {boolean} [projections] SessionProjectionRegistry (the default: with the meter)
 * @property {boolean} [meter] TokenMeter
 * @property {boolean} [codeRuntime] WorkerThreadCodeRuntime (needs Node >= 22)
 * @property {object} [toolRuntime] ToolRuntime's config (e.g. `{mode: 'both'}`)
 * @property {boolean} [commands] CommandRuntime
 */

/**
 * Boots the real DSH services on a fresh root Context and registers `model` as provider
 * `scripted`.
 * @param {any} model a real `LlmAdapter` (a `ScriptedAdapter`)
 * @param {HostParts} [parts]
 * @returns {Promise<any>} the root Context
 */
export async function bootRealHost(model, { invariants = [], meter = false, projections = meter, codeRuntime = false, toolRuntime, commands = false } = {}) {
  const root = new Context()
  if (invariants.length) {
    await root.plugin((await import('@deepseek-ai/dsh-invariants')).InvariantRegistry)
    for (const name of invariants) await root.plugin(await import(`@deepseek-ai/${name}/invariant`))
  }
  await root.plugin(LlmRuntime)
  await root.plugin(SessionStore)
  if (projections) await root.plugin((await import('@deepseek-ai/dsh-session-projection')).SessionProjectionRegistry)
  if (meter) await root.plugin((await import('@deepseek-ai/dsh-token-meter')).TokenMeter)
  await root.plugin(AgentRegistry)
  await root.plugin(SystemPrompt)
  if (codeRuntime) await root.plugin((await import('@deepseek-ai/dsh-code-runtime-worker-thread')).WorkerThreadCodeRuntime)
  if (toolRuntime) await root.plugin(ToolRuntime, toolRuntime)
  else await root.plugin(ToolRuntime)
  await root.plugin(AgentLoop)
  if (commands) await root.plugin((await import('@deepseek-ai/dsh-commands')).CommandRuntime)
  root.llm.registerAdapter(['scripted'], model)
  return root
}

// ---- the scripted model ---------------------------------------------------------------------

/**
 * A real LlmAdapter for scripted models: it resolves every model id to a model with the given
 * context window and reasoning efforts, and keeps the requests it was sent (`requests`). A
 * suite's model extends it with its `stream`.
 */
export class ScriptedAdapter extends LlmAdapter {
  /** @type {any[]} every request's options, in order */
  requests = []
  /**
   * @param {{contextWindow?: number, efforts?: string[]}} [info] the model's context window
   *   (128,000 unless said) and reasoning efforts (the last is the default; none: no reasoning)
   */
  constructor({ contextWindow = 128000, efforts = [] } = {}) {
    super()
    this.contextWindow = contextWindow
    this.efforts = efforts
  }
  /** @param {any} provider @param {any} model */
  async resolveModel(provider, model) {
    return {
      provider,
      id: model,
      name: model,
      context: { contextWindow: this.contextWindow },
      defaultMaxTokens: 4096,
      ...(this.efforts.length
        ? { reasoning: { efforts: this.efforts.map((id) => ({ id: ReasoningEffortId(id), name: id })), defaultEffort: ReasoningEffortId(this.efforts.at(-1)) } }
        : {}),
    }
  }
}

/** The usage a scripted reply reports unless it says otherwise. */
export const SCRIPTED_USAGE = Object.freeze({ inputTokens: 100, outputTokens: 20 })

/**
 * One scripted reply as protocol-correct stream chunks: reasoning, text, then each tool call,
 * each as block-start / delta / block-end; then the usage; then the finish.
 * @param {{text?: string, reasoning?: string, calls?: {id: string, name: string, args?: object | string}[],
 *   usage?: object | null, finish?: string}} reply `args` as an object or as the raw JSON text the
 *   model streams; `usage: null` streams no usage chunk; `finish` the finish kind (`tool-calls`
 *   when the reply calls tools, else `stop`, unless said)
 */
export function streamChunks(reply) {
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
  if (reply.usage !== null) out.push({ type: 'usage', usage: reply.usage ?? SCRIPTED_USAGE })
  out.push({ type: 'finish', reason: { kind: reply.finish ?? (reply.calls?.length ? 'tool-calls' : 'stop') } })
  return out
}

// ---- driving the host -----------------------------------------------------------------------

/**
 * An agent on a fresh session, routed to the scripted model: the registry's handle.
 * @param {any} root @param {string} id the session id @param {object} [agentOptions] beyond the provider and model
 */
export async function createAgent(root, id, agentOptions = {}) {
  return await root.agents.create({
    sessionId: SessionId(id),
    agentOptions: { provider: 'scripted', model: 'm1', ...agentOptions },
    meta: { cwd: tmpdir() },
  })
}

/** The agent of `createAgent`. @param {any} root @param {string} id @param {object} [agentOptions] */
export async function agentOn(root, id, agentOptions) {
  return (await createAgent(root, id, agentOptions)).agent
}

/** Runs one user prompt to the end of its turn. @param {any} agent @param {string} text */
export async function prompt(agent, text) {
  agent.followup(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }))
  await agent.whenIdle()
}

// ---- reading messages -----------------------------------------------------------------------

/** The text of a message (or of a tool result block): its text blocks and its results' text. @param {any} m */
export const textOf = (m) =>
  (m?.content ?? []).map((/** @type {any} */ b) => (b.type === 'text' ? b.text : b.type === 'tool-result' ? textOf(b) : '')).join('')

/**
 * What an OpenAI-compatible API checks: every assistant tool call is answered by a result, every
 * result has its call. Returns the problems (empty when valid).
 * @param {readonly any[]} messages e.g. `session.deriveMessages()`
 */
export function protocolProblems(messages) {
  const problems = []
  const open = new Set()
  const seen = new Set()
  for (const m of messages) {
    for (const block of m.content ?? []) {
      if (block.type === 'tool-call') {
        open.add(block.id)
        seen.add(block.id)
      }
      if (block.type === 'tool-result') {
        if (!seen.has(block.toolCallId)) problems.push(`result ${block.toolCallId} without its call`)
        open.delete(block.toolCallId)
      }
    }
  }
  for (const id of open) problems.push(`call ${id} without its result`)
  return problems
}
