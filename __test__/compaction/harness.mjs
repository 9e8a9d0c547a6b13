/**
 * @module __test__/compaction/harness
 * Real DeepSeek Harness parts for the compaction backend's suites: on one root cordis Context,
 * DSH's invariant registry with the session, LLM, compaction, token-meter, agent-loop and
 * command invariant companions (every event a backend writes is checked by DSH's own rules),
 * LlmRuntime, SessionStore, SessionProjectionRegistry, TokenMeter, AgentRegistry, SystemPrompt,
 * ToolRuntime, AgentLoop, CommandRuntime with the real `/compact` (dsh-command-compact), a
 * `probe` tool, and one compaction backend: `dsh-fold/compaction` or DSH's compaction-basic.
 *
 * `PressureModel` is a real `LlmAdapter` whose model reports a small context window (so DSH's
 * meter crosses the threshold after a few tool outputs) and whose stream reports no usage (a
 * fixed usage would make every measurement tiny: the meter prices the logged request from it).
 * It answers from a script; a compaction-basic summary request (purpose `compaction`) gets a
 * scripted summary of the usual size. Nothing here fakes a DSH class.
 */
import { tmpdir } from 'node:os'

import '../helpers/dsh.mjs'
import { Context } from '@deepseek-ai/cordis'
import { AgentRegistry } from '@deepseek-ai/dsh-agent'
import { AgentLoop } from '@deepseek-ai/dsh-agent-loop'
import { CommandRuntime } from '@deepseek-ai/dsh-commands'
import { InvariantRegistry } from '@deepseek-ai/dsh-invariants'
import { CallId, LlmAdapter, LlmRuntime, createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId, SessionStore } from '@deepseek-ai/dsh-session'
import { SessionProjectionRegistry } from '@deepseek-ai/dsh-session-projection'
import { SystemPrompt } from '@deepseek-ai/dsh-system-prompt'
import { TokenMeter } from '@deepseek-ai/dsh-token-meter'
import { ToolRuntime, defineTool } from '@deepseek-ai/dsh-tools'

import FoldCompaction from '../../plugin/compaction/compaction.js'

export { FoldCompaction, SessionId, createUserMessage }

const INVARIANT_PACKAGES = ['dsh-session', 'dsh-llm', 'dsh-compaction', 'dsh-token-meter', 'dsh-agent-loop', 'dsh-commands', 'dsh-command-compact']

/**
 * One scripted reply as stream chunks, with no usage chunk.
 * @param {{text?: string, calls?: {id: string, name: string, args?: object}[]}} reply
 */
export function chunksOf(reply) {
  const out = []
  let index = 0
  if (reply.text) {
    out.push({ type: 'block-start', index, blockType: 'text' })
    out.push({ type: 'text-delta', index, text: reply.text })
    out.push({ type: 'block-end', index, block: { type: 'text', text: reply.text } })
    index++
  }
  for (const c of reply.calls ?? []) {
    const json = JSON.stringify(c.args ?? {})
    out.push({ type: 'block-start', index, blockType: 'tool-call' })
    out.push({ type: 'tool-call-delta', index, id: CallId(c.id), name: c.name, argumentsDelta: json })
    out.push({ type: 'block-end', index, block: { type: 'tool-call', id: CallId(c.id), name: c.name, arguments: json } })
    index++
  }
  out.push({ type: 'finish', reason: { kind: reply.calls?.length ? 'tool-calls' : 'stop' } })
  return out
}

/** A `probe` call. @param {string} id @param {string} path */
export const probe = (id, path) => ({ id, name: 'probe', args: { path } })

/**
 * A real adapter: agent requests are answered by `script(options, n)` (n counts agent requests
 * from 0); a summary request (`purpose: 'compaction'`) by `summarize(options)`.
 */
export class PressureModel extends LlmAdapter {
  /** @type {any[]} */
  requests = []
  /** @type {any[]} */
  summaryRequests = []
  /**
   * @param {{contextWindow?: number, script: (options: any, n: number) => any,
   *   summarize?: (options: any) => any, fail?: (options: any, n: number) => any}} options
   *   `fail` may return a finish failure (`{code, message}`) to end a request with an error.
   */
  constructor({ contextWindow = 8000, script, summarize, fail }) {
    super()
    this.contextWindow = contextWindow
    this.script = script
    this.summarize = summarize ?? (() => ({ text: '## Primary Request and Intent\n- scripted summary of the usual size\n'.repeat(20) }))
    this.fail = fail
  }
  async resolveModel(provider, model) {
    return { provider, id: model, name: model, context: { contextWindow: this.contextWindow }, defaultMaxTokens: 4096 }
  }
  async *stream(options) {
    if (options.purpose === 'compaction') {
      this.summaryRequests.push(options)
      for (const c of chunksOf(await this.summarize(options))) yield c
      return
    }
    const n = this.requests.length
    this.requests.push(options)
    const failure = this.fail?.(options, n)
    if (failure) {
      yield { type: 'finish', reason: { kind: 'error', failure } }
      return
    }
    for (const c of chunksOf(await this.script(options, n))) yield c
  }
}

/** Tool output of about `chars` chars, with a path, a command's output and an error line. @param {string} path @param {number} chars */
export function output(path, chars) {
  const head = `$ cat ${path}\nerror: ${path}: checksum mismatch at line 7\n`
  let body = ''
  let i = 0
  while (body.length < chars) body += `line ${i++} of ${path}: value=${(i * 7919) % 1000}\n`
  return head + body.slice(0, Math.max(0, chars - head.length))
}

/**
 * Boots the real parts with one compaction backend.
 * @param {{model: PressureModel, backend?: 'fold' | 'basic' | 'none', config?: object, checkpoint?: any,
 *   outputChars?: number, before?: (root: any) => Promise<void> | void}} options
 */
export async function bootHost({ model, backend = 'fold', config = {}, outputChars = 3000, before }) {
  const root = new Context()
  await root.plugin(InvariantRegistry)
  for (const name of INVARIANT_PACKAGES) await root.plugin(await import(`@deepseek-ai/${name}/invariant`))
  await root.plugin(LlmRuntime)
  await root.plugin(SessionStore)
  await root.plugin(SessionProjectionRegistry)
  await root.plugin(TokenMeter)
  await root.plugin(AgentRegistry)
  await root.plugin(SystemPrompt)
  await root.plugin(ToolRuntime)
  await root.plugin(AgentLoop)
  await root.plugin(CommandRuntime)
  root.llm.registerAdapter(['scripted'], model)
  root.tools.register(
    defineTool({
      name: 'probe',
      description: 'Read a file.',
      parameters: { path: { type: 'string', required: true } },
      output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
      isConcurrencySafe: () => true,
      execute: async ({ path }) => output(path, outputChars),
    }),
  )
  await before?.(root)
  if (backend === 'fold') await root.plugin(FoldCompaction, config)
  if (backend === 'basic') await root.plugin((await import('@deepseek-ai/dsh-compaction-basic')).default, config)
  if (backend !== 'none') await root.plugin(await import('@deepseek-ai/dsh-command-compact'))
  return root
}

/** A real agent on a fresh session, routed to the scripted model. @param {any} root @param {string} [id] */
export async function agentOn(root, id = 'compaction-session') {
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

/** The text of a message. @param {any} m */
export const textOf = (m) =>
  (m?.content ?? []).map((/** @type {any} */ b) => (b.type === 'text' ? b.text : b.type === 'tool-result' ? textOf(b) : '')).join('')

/** The compactions in a session's log: each bracket's events. @param {any} session */
export function compactionsOf(session) {
  const events = session.events
  return events
    .filter((/** @type {any} */ e) => e.type === 'user/message' && e.data.source?.plugin === 'compact' && e.surfaceOp?.op === 'replace')
    .map((/** @type {any} */ replacement) => {
      const [startSeq, summarySeq] = replacement.sourceEventSeqs
      return { start: events[startSeq], summary: events[summarySeq], replacement, end: events[replacement.seq + 1] }
    })
}

/** Calls without results and results without calls in `messages` (what an API rejects). @param {any[]} messages */
export function protocolProblems(messages) {
  const problems = []
  const open = new Set()
  const seen = new Set()
  for (const m of messages) {
    for (const b of m.content ?? []) {
      if (b.type === 'tool-call') {
        open.add(b.id)
        seen.add(b.id)
      }
      if (b.type === 'tool-result') {
        if (!seen.has(b.toolCallId)) problems.push(`result ${b.toolCallId} without its call`)
        open.delete(b.toolCallId)
      }
    }
  }
  for (const id of open) problems.push(`call ${id} without its result`)
  return problems
}
