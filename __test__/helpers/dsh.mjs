/**
 * @module __test__/helpers/dsh
 * Real DeepSeek Harness parts for tests: a root cordis Context with the real LlmRuntime,
 * SessionStore, AgentRegistry, SystemPrompt, ToolRuntime and AgentLoop; a scripted model as a
 * real `LlmAdapter` subclass; and the package's session builder (bin/session.mjs), which appends
 * real events to real `Session`s.
 * Nothing here fakes a DSH class.
 */
import { tmpdir } from 'node:os'

// dsh-agent-loop calls Promise.withResolvers (Node >= 22); these tests also run on Node 20.
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
const { LlmRuntime, LlmAdapter, CallId, ReasoningEffortId, createUserMessage, createAssistantMessage, createToolResultMessage } =
  await import('@deepseek-ai/dsh-llm')
const { SessionStore, Session, SessionId } = await import('@deepseek-ai/dsh-session')
const { ToolRuntime, defineTool } = await import('@deepseek-ai/dsh-tools')
const { SystemPrompt } = await import('@deepseek-ai/dsh-system-prompt')
const { AgentRegistry } = await import('@deepseek-ai/dsh-agent')
const { AgentLoop } = await import('@deepseek-ai/dsh-agent-loop')

export { Context, Session, SessionId, CallId, createUserMessage, createAssistantMessage, createToolResultMessage }

/**
 * A real exploration tool for agent turns: `probe({path})` returns `contents(path)` as its text.
 * @param {(path: string) => string} contents
 */
export function probeTool(contents) {
  return defineTool({
    name: 'probe',
    description: 'Read a file.',
    parameters: { path: { type: 'string', description: 'The file.' } },
    output: {
      schema: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: false },
      render: (/** @type {any} */ _args, /** @type {any} */ value) => [{ type: 'text', text: value.text }],
    },
    async execute(/** @type {any} */ args) {
      return { text: contents(args.path ?? 'nothing') }
    },
  })
}

/** A fresh checkpoint store path in a temp dir (removed when the test process exits). */
export { tempStore } from './tmp.mjs'

// ---- scripted model ------------------------------------------------------------------------

/** @param {string} text */
export const say = (text) => ({ text })
/** @param {string} id @param {string} name @param {object} args */
export const call = (id, name, args = {}) => ({ call: { id, name, args } })

/**
 * One scripted reply → stream chunks.
 * @param {{text?: string, reasoning?: string, calls?: {id: string, name: string, args?: object}[], finish?: string, usage?: object}} reply
 */
export function chunks(reply) {
  const out = []
  let index = 0
  if (reply.reasoning) out.push({ type: 'reasoning-delta', index: index++, text: reply.reasoning })
  if (reply.text) out.push({ type: 'text-delta', index: index++, text: reply.text })
  for (const c of reply.calls ?? []) {
    const json = JSON.stringify(c.args ?? {})
    out.push({ type: 'block-start', index, blockType: 'tool-call' })
    out.push({ type: 'tool-call-delta', index, id: CallId(c.id), name: c.name, argumentsDelta: json })
    out.push({ type: 'block-end', index, block: { type: 'tool-call', id: CallId(c.id), name: c.name, arguments: json } })
    index++
  }
  out.push({ type: 'usage', usage: reply.usage ?? { inputTokens: 100, outputTokens: 20 } })
  out.push({ type: 'finish', reason: { kind: reply.finish ?? (reply.calls?.length ? 'tool-calls' : 'stop') } })
  return out
}

/**
 * A real LlmAdapter that answers from a script: `respond(options, n)` returns a reply
 * (see `chunks`), an array of raw chunks, or throws.
 */
export class ScriptedModel extends LlmAdapter {
  /** @type {any[]} */
  requests = []
  /** @param {(options: any, n: number) => any} respond @param {{efforts?: string[]}} [info] */
  constructor(respond, info = {}) {
    super()
    this.respond = respond
    this.efforts = info.efforts ?? ['off', 'high']
  }
  async resolveModel(provider, model) {
    return {
      provider,
      id: model,
      name: model,
      context: { contextWindow: 128000 },
      defaultMaxTokens: 4096,
      reasoning: this.efforts.length
        ? { efforts: this.efforts.map((id) => ({ id: ReasoningEffortId(id), name: id })), defaultEffort: ReasoningEffortId(this.efforts.at(-1)) }
        : undefined,
    }
  }
  async *stream(options) {
    this.requests.push(options)
    const reply = await this.respond(options, this.requests.length)
    for (const c of Array.isArray(reply) ? reply : chunks(reply)) {
      if (options.signal?.aborted) throw options.signal.reason
      yield c
    }
  }
}

// ---- host ----------------------------------------------------------------------------------

/**
 * Boots the real DSH services on a root Context and registers `model` as provider `scripted`.
 * @param {ScriptedModel} model
 */
export async function bootHost(model) {
  const root = new Context()
  await root.plugin(LlmRuntime)
  await root.plugin(SessionStore)
  await root.plugin(AgentRegistry)
  await root.plugin(SystemPrompt)
  await root.plugin(ToolRuntime)
  await root.plugin(AgentLoop)
  root.llm.registerAdapter(['scripted'], model)
  return root
}

/**
 * An agent on a fresh session, routed to the scripted model.
 * @param {any} root @param {string} id @param {object} [options]
 */
export async function createAgent(root, id, options = {}) {
  const handle = await root.agents.create({
    sessionId: SessionId(id),
    agentOptions: { provider: 'scripted', model: 'm1', ...options },
    meta: { cwd: tmpdir() },
  })
  return handle
}

/** Runs one user prompt to the end of its turn. @param {any} agent @param {string} text */
export async function runTurn(agent, text) {
  agent.followup(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }))
  await agent.whenIdle()
}

// ---- sessions built event by event: the package's one builder (bin/session.mjs) ------------

export { SessionBuilder } from '../../bin/session.mjs'

/**
 * Checks what an OpenAI-compatible API checks: every assistant tool call is answered by a
 * result, every result has its call. Returns the problems (empty when valid).
 * @param {readonly any[]} messages `session.deriveMessages()`
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
