/**
 * @module __test__/block/harness
 * Real DeepSeek Harness parts for the block-mode suite (Node >= 22: the worker-thread code
 * runtime needs it). `bootBlockHost` boots the host of `../helpers/host.mjs` with what block mode
 * meets in a real host: DSH's invariant registry with the session, LLM, tools, compaction,
 * token-meter and agent-loop invariant companions (so every event the plugin writes is checked by
 * DSH's own rules), the projection registry and TokenMeter, the worker-thread code runtime,
 * ToolRuntime in `both` mode; then a `lookup` tool and the `dsh-fold/block` plugin. The model is
 * `BlockModel`, a scripted model walking a list of replies, which records every request it
 * receives.
 *
 * Nothing here fakes a DSH class. Helpers read the real log, surface and meter.
 */
import assert from 'node:assert/strict'

import { ScriptedAdapter, agentOn as agentOnHost, bootRealHost, streamChunks, textOf } from '../helpers/host.mjs'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'

import Block from '../../plugin/block/block.js'

export { Block, SessionId, createUserMessage, textOf }
export { prompt } from '../helpers/host.mjs'

const INVARIANT_PACKAGES = ['dsh-session', 'dsh-llm', 'dsh-tools', 'dsh-compaction', 'dsh-token-meter', 'dsh-agent-loop']

// ---- the scripted model ---------------------------------------------------------------------

/** A `block_run_code` call. @param {string} id @param {string[] | {id: string}} ids @param {string} code @param {object} [extra] */
export const blockCall = (id, ids, code, extra = {}) => ({
  id,
  name: 'block_run_code',
  args: { ...(Array.isArray(ids) ? { ids } : ids), description: `program ${id}`, code, ...extra },
})

/**
 * A real LlmAdapter answering from `script`: an array of replies (see `../helpers/host.mjs`
 * `streamChunks`) or `(options, n) => reply` functions, walked in order; asking past its end
 * fails the test loudly. Its model reasons at effort `off` only.
 */
export class BlockModel extends ScriptedAdapter {
  /** @param {Array<object | ((options: any, n: number) => object)>} script */
  constructor(script) {
    super({ efforts: ['off'] })
    this.script = script
  }
  /** @param {any} options */
  async *stream(options) {
    this.requests.push(options)
    const step = this.script[this.requests.length - 1]
    if (step === undefined) throw new Error(`model script exhausted at request ${this.requests.length}`)
    const reply = typeof step === 'function' ? await step(options, this.requests.length - 1) : step
    for (const chunk of streamChunks(reply)) yield chunk
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
  const root = await bootRealHost(model, { invariants: INVARIANT_PACKAGES, projections: true, meter, codeRuntime, toolRuntime: { mode } })
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
export const agentOn = (root, id = 'block-session') => agentOnHost(root, id)

// ---- reading what happened ------------------------------------------------------------------

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
