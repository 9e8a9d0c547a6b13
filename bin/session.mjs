/**
 * @module bin/session
 * Builds real DSH sessions (`@deepseek-ai/dsh-session`), event by event, with the real message
 * constructors of `@deepseek-ai/dsh-llm`: the one session builder of the demo, the benchmarks and
 * the tests.
 *
 * By default it appends the messages alone. With `loop: true` it logs them the way DSH's agent
 * loop does: `step/start`/`step/end` around steps (`stepStart`, `stepEnd`), the streamed chunks
 * an assistant message cites (`assistant/chunk` deltas, usage, finish), and a log-only
 * `tool/call` before each tool result, which the result cites.
 */
import { CallId, createAssistantMessage, createToolResultMessage, createUserMessage } from '@deepseek-ai/dsh-llm'
import { Session, SessionId } from '@deepseek-ai/dsh-session'

/**
 * @typedef {{id: string, name: string, args?: object | string}} CallSpec a tool call (string
 *   `args` are the raw JSON the model wrote)
 * @typedef {{text?: string, reasoning?: string, calls?: CallSpec[], usage?: {inputTokens: number, outputTokens: number}}} Reply
 */

export class SessionBuilder {
  /**
   * @param {string | any} [session] a new detached session's id, or a session to extend (e.g. a real agent's)
   * @param {{loop?: boolean, model?: {provider: string, model: string}, pieces?: (text: string) => number,
   *   onAppend?: (type: string, data: any, opts?: any) => void}} [options] `pieces`: how many
   *   deltas a block streams in (loop mode; 1 by default); `onAppend`: told of every append
   */
  constructor(session = 'built', { loop = false, model = { provider: 'scripted', model: 'm1' }, pieces = () => 1, onAppend } = {}) {
    this.session = typeof session === 'string' ? Session.create(SessionId(session)) : session
    this.loop = loop
    this.model = model
    this.pieces = pieces
    this.onAppend = onAppend
    this.turn = 0
    this.step = 1
    /** @type {Map<string, {name: string, arguments: string, seq: number}>} calls issued, by id; `seq`: their `tool/call` event, -1 before it */
    this.calls = new Map()
  }

  get seq() {
    return this.session.seq
  }

  /** Every append goes through here. @param {string} type @param {any} data @param {any} [opts] @returns {number} seq */
  append(type, data, opts) {
    const event = opts === undefined ? this.session.append(type, data) : this.session.append(type, data, opts)
    this.onAppend?.(type, event.data, opts)
    return event.seq
  }

  /** A log-only event (moves the log length without touching the surface); `step/start` by default. */
  logOnly(type = 'step/start', data = { turn: this.turn, step: this.step }) {
    return this.append(type, data)
  }

  turnStart() {
    this.turn++
    this.step = 0
    return this.append('turn/start', { turn: this.turn })
  }

  turnEnd(reason = { kind: 'completed' }) {
    return this.append('turn/end', { turn: this.turn, reason })
  }

  stepStart() {
    this.step++
    return this.append('step/start', { turn: this.turn, step: this.step })
  }

  stepEnd() {
    return this.append('step/end', { turn: this.turn, step: this.step })
  }

  /**
   * A routed `request/header`, as the loop logs before a model call.
   * @param {{provider: string, model: string, maxTokens?: number}} config @param {{system?: string, tools?: object[]}} [extra]
   */
  header(config, extra = {}) {
    return this.append('request/header', { header: { config, ...extra }, reason: 'initial' })
  }

  /** @param {string} text @param {object} [source] */
  user(text, source = { kind: 'user' }) {
    return this.append('user/message', createUserMessage({ content: [{ type: 'text', text }], source }), { surfaceOp: 'append' })
  }

  /** An assistant message (in loop mode, after the chunks it cites). @param {Reply} reply */
  assistant(reply) {
    const content = []
    if (reply.reasoning) content.push({ type: 'reasoning', text: reply.reasoning })
    if (reply.text) content.push({ type: 'text', text: reply.text })
    for (const c of reply.calls ?? []) {
      const args = typeof c.args === 'string' ? c.args : JSON.stringify(c.args ?? {})
      content.push({ type: 'tool-call', id: CallId(c.id), name: c.name, arguments: args })
      this.calls.set(c.id, { name: c.name, arguments: args, seq: -1 })
    }
    const data = { turn: this.turn, step: this.step, message: createAssistantMessage({ content, source: this.model }) }
    if (!this.loop) return this.append('assistant/message', data, { surfaceOp: 'append' })
    const chunks = []
    content.forEach((block, index) => {
      const body = block.type === 'tool-call' ? block.arguments : block.text
      const pieces = Math.max(1, Math.min(body.length, this.pieces(body)))
      const cut = Math.ceil(body.length / pieces)
      for (let p = 0; p < pieces; p++) {
        const piece = body.slice(p * cut, (p + 1) * cut)
        const chunk =
          block.type === 'tool-call'
            ? { type: 'tool-call-delta', index, id: block.id, ...(p === 0 ? { name: block.name } : {}), argumentsDelta: piece }
            : { type: block.type === 'text' ? 'text-delta' : 'reasoning-delta', index, text: piece }
        chunks.push(this.append('assistant/chunk', { turn: this.turn, step: this.step, chunk }))
      }
    })
    const usage = reply.usage ?? { inputTokens: 100, outputTokens: 20 }
    chunks.push(this.append('assistant/chunk', { turn: this.turn, step: this.step, chunk: { type: 'usage', usage } }))
    const finish = { type: 'finish', reason: { kind: reply.calls?.length ? 'tool-calls' : 'stop' } }
    chunks.push(this.append('assistant/chunk', { turn: this.turn, step: this.step, chunk: finish }))
    return this.append('assistant/message', { ...data, usage }, { surfaceOp: 'append', sourceEventSeqs: chunks })
  }

  /** The log-only `tool/call` the loop appends when a call starts. @param {string} callId */
  toolCall(callId) {
    const call = this.calls.get(callId)
    if (!call) throw new Error(`no call ${callId} was issued`)
    call.seq = this.append('tool/call', { turn: this.turn, step: this.step, callId, name: call.name, arguments: call.arguments })
    return call.seq
  }

  /** A tool result (in loop mode, citing its `tool/call`, logged now if it was not). @param {string} callId @param {string} output */
  result(callId, output, isError = false) {
    const message = createToolResultMessage({ callId: CallId(callId), content: [{ type: 'text', text: output }], isError })
    const data = { turn: this.turn, step: this.step, message }
    const call = this.calls.get(callId)
    if (!this.loop || !call) return this.append('tool/result', data, { surfaceOp: 'append' })
    if (call.seq < 0) this.toolCall(callId)
    return this.append('tool/result', data, { surfaceOp: 'append', sourceEventSeqs: [call.seq] })
  }

  /**
   * Replaces the surface nodes from `start` to `end` (seqs) by a summary, as a compaction does.
   * @param {number} start @param {number} end @param {string} [text] @param {object} [source]
   */
  replace(start, end, text = 'compacted summary', source = { kind: 'compaction' }) {
    const nodes = [...this.session.surface.nodes]
    const shadowed = nodes.slice(nodes.indexOf(start), nodes.indexOf(end) + 1)
    return this.append('user/message', createUserMessage({ content: [{ type: 'text', text }], source }), {
      surfaceOp: { op: 'replace', start, end },
      sourceEventSeqs: shadowed,
    })
  }
}
