/**
 * @module __test__/compaction/harness
 * Real DeepSeek Harness parts for the compaction backend's suites: the host of
 * `../helpers/host.mjs` with DSH's invariant registry and the session, LLM, compaction,
 * token-meter, agent-loop and command invariant companions (every event a backend writes is
 * checked by DSH's own rules), the projection registry, TokenMeter and CommandRuntime; then a
 * `probe` tool, one compaction backend (`dsh-fold/compaction` or DSH's compaction-basic) and the
 * real `/compact` (dsh-command-compact).
 *
 * `PressureModel` is a real `LlmAdapter` whose model reports a small context window (so DSH's
 * meter crosses the threshold after a few tool outputs) and whose stream reports no usage (a
 * fixed usage would make every measurement tiny: the meter prices the logged request from it).
 * It answers from a script; a compaction-basic summary request (purpose `compaction`) gets a
 * scripted summary of the usual size. Nothing here fakes a DSH class.
 */
import { ScriptedAdapter, agentOn as agentOnHost, bootRealHost, streamChunks } from '../helpers/host.mjs'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'

import FoldCompaction from '../../plugin/compaction/compaction.js'

export { FoldCompaction, SessionId, createUserMessage }
export { prompt, protocolProblems, textOf } from '../helpers/host.mjs'

const INVARIANT_PACKAGES = ['dsh-session', 'dsh-llm', 'dsh-compaction', 'dsh-token-meter', 'dsh-agent-loop', 'dsh-commands', 'dsh-command-compact']

/**
 * One scripted reply as stream chunks with no usage chunk (see `../helpers/host.mjs`
 * `streamChunks`).
 * @param {{text?: string, calls?: {id: string, name: string, args?: object}[]}} reply
 */
const chunksOf = (reply) => streamChunks({ ...reply, usage: null })

/** A `probe` call. @param {string} id @param {string} path */
export const probe = (id, path) => ({ id, name: 'probe', args: { path } })

/**
 * A real adapter: agent requests are answered by `script(options, n)` (n counts agent requests
 * from 0); a summary request (`purpose: 'compaction'`) by `summarize(options)`.
 */
export class PressureModel extends ScriptedAdapter {
  /** @type {any[]} */
  summaryRequests = []
  /**
   * @param {{contextWindow?: number, script: (options: any, n: number) => any,
   *   summarize?: (options: any) => any, fail?: (options: any, n: number) => any}} options
   *   `fail` may return a finish failure (`{code, message}`) to end a request with an error.
   */
  constructor({ contextWindow = 8000, script, summarize, fail }) {
    super({ contextWindow })
    this.script = script
    this.summarize = summarize ?? (() => ({ text: '## Primary Request and Intent\n- scripted summary of the usual size\n'.repeat(20) }))
    this.fail = fail
  }
  /** @param {any} options */
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
  const root = await bootRealHost(model, { invariants: INVARIANT_PACKAGES, meter: true, commands: true })
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
export const agentOn = (root, id = 'compaction-session') => agentOnHost(root, id)

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
