/**
 * @module __test__/helpers/dsh
 * Real DeepSeek Harness parts for the plugin's suites: the host of `./host.mjs` with the parts
 * every DSH host has (LlmRuntime, SessionStore, AgentRegistry, SystemPrompt, ToolRuntime,
 * AgentLoop: `bootHost`); `ScriptedModel`, a scripted model answering from a function; a `probe`
 * tool; and the package's session builder (bin/session.mjs), which appends real events to real
 * `Session`s. Nothing here fakes a DSH class.
 */
import { ScriptedAdapter, bootRealHost, prompt, streamChunks } from './host.mjs'

// After ./host.mjs (its Promise.withResolvers for Node 20), hence dynamic.
const { Context } = await import('@deepseek-ai/cordis')
const { CallId, createUserMessage, createAssistantMessage, createToolResultMessage } = await import('@deepseek-ai/dsh-llm')
const { Session, SessionId } = await import('@deepseek-ai/dsh-session')
const { defineTool } = await import('@deepseek-ai/dsh-tools')

export { Context, Session, SessionId, CallId, createUserMessage, createAssistantMessage, createToolResultMessage }
export { createAgent, protocolProblems } from './host.mjs'

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

/** A reply that says `text`. @param {string} text */
export const say = (text) => ({ text })

/**
 * A real LlmAdapter that answers from a script: `respond(options, n)` returns a reply (see
 * `./host.mjs` `streamChunks`), an array of raw chunks, or throws. Its model has the reasoning
 * efforts `info.efforts` (`off` and `high` unless said).
 */
export class ScriptedModel extends ScriptedAdapter {
  /** @param {(options: any, n: number) => any} respond @param {{efforts?: string[]}} [info] */
  constructor(respond, info = {}) {
    super({ efforts: info.efforts ?? ['off', 'high'] })
    this.respond = respond
  }
  /** @param {any} options */
  async *stream(options) {
    this.requests.push(options)
    const reply = await this.respond(options, this.requests.length)
    for (const c of Array.isArray(reply) ? reply : streamChunks(reply)) {
      if (options.signal?.aborted) throw options.signal.reason
      yield c
    }
  }
}

// ---- host ----------------------------------------------------------------------------------

/**
 * Boots the real DSH services every host has on a root Context and registers `model` as
 * provider `scripted`.
 * @param {ScriptedModel} model
 */
export const bootHost = (model) => bootRealHost(model)

/** Runs one user prompt to the end of its turn. @param {any} agent @param {string} text */
export const runTurn = prompt

// ---- sessions built event by event: the package's one builder (bin/session.mjs) ------------

export { SessionBuilder } from '../../bin/session.mjs'
