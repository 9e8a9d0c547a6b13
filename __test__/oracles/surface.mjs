// @ts-check
/**
 * @module __test__/oracles/surface
 * What rewind's planner must see of a real DSH `Session`'s model-visible surface, described from
 * the session alone: the oracle the session mirror (`plugin/shared/mirror.js` feeding the addon's
 * `SessionMirror`) is held to after every step of random sessions (`__test__/mirror.test.mjs`).
 * It was the plugin's version 1 snapshot builder (`plugin/shared/surface.js`) until the mirror
 * became the only input of every planner (issue 31); it no longer ships, and it is written from
 * DSH's event vocabulary, not from the mirror's code (it imports nothing of `mirror.js`): one
 * whole pass over the surface, no caches, no windows.
 *
 * Per surface node, in model order (the facts of the core's v1 snapshot format,
 * `crates/fold-core/src/surface.rs`):
 * - `kind`: `User` (`user/message`), `Assistant` (`assistant/message`), `ToolResult`
 *   (`tool/result`), `Other` (any other surface event);
 * - `origin`: the smallest event seq the node stands for: its own, or for a replacement the
 *   origin of the first node it replaced (`surfaceOp.start`) or any lower seq it cites;
 * - `chars`: its message's model-visible text (`plugin/shared/meter.js`, the one chars meter);
 * - `opens`: an assistant's tool calls; `opener`: the assistant event that opened the call a
 *   result answers (by call id, the latest opener appended before it), when there is one.
 *
 * And per rewind report on the surface (a `user/message` replacement whose source is the
 * rewind plugin's with a mark id, citing message events), the fold it records: the mark, the
 * message events it cites (how many, the first, the last) and their chars.
 */
import { visibleChars } from '../../plugin/shared/meter.js'

const KINDS = /** @type {Record<string, string>} */ ({ 'user/message': 'User', 'assistant/message': 'Assistant', 'tool/result': 'ToolResult' })

/**
 * @typedef {object} OracleNode
 * @property {number} seq
 * @property {string} kind
 * @property {number} origin
 * @property {number} chars
 * @property {number} opens
 * @property {number | null} opener
 *
 * @typedef {object} OracleReport
 * @property {number} seq
 * @property {number} markId
 * @property {number} foldedNodes
 * @property {number} start
 * @property {number} end
 * @property {number} foldedChars
 */

/** The message an event carries (a `user/message`'s data is its message). @param {any} event */
export function messageOf(event) {
  if (KINDS[event?.type] === undefined) return undefined
  return event.type === 'user/message' ? event.data : event.data?.message
}

/** The call id a tool result answers. @param {any} message */
export function answeredCall(message) {
  return message?.source?.callId ?? message?.content?.[0]?.toolCallId
}

/**
 * The message events a replacement cites, in its order: integer seqs below its own that are
 * message events of the log.
 * @param {readonly any[]} log @param {any} event
 */
export function citedMessages(log, event) {
  const out = []
  for (const s of Array.isArray(event.sourceEventSeqs) ? event.sourceEventSeqs : []) {
    if (Number.isInteger(s) && s >= 0 && s < event.seq && KINDS[log[s]?.type] !== undefined) out.push(s)
  }
  return out
}

/**
 * The surface of `session` as rewind's planner must see it.
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @param {{callId?: string}} [options] the rewind call's id: `current` is the assistant event
 *   that opened it
 * @returns {{eventCount: number, current: number | undefined, nodes: OracleNode[], reports: OracleReport[]}}
 */
export function describeSurface(session, { callId } = {}) {
  const log = session.events
  /** @type {Map<number, number>} */
  const origins = new Map()
  /** @param {number} seq @returns {number} */
  const originOf = (seq) => {
    const known = origins.get(seq)
    if (known !== undefined) return known
    const event = log[seq]
    let origin = seq
    const op = event.surfaceOp
    if (op?.op === 'replace') {
      for (const s of Array.isArray(event.sourceEventSeqs) ? event.sourceEventSeqs : []) if (Number.isInteger(s) && s >= 0 && s < origin) origin = s
      if (Number.isInteger(op.start) && op.start >= 0 && op.start < seq) origin = Math.min(origin, originOf(op.start))
    }
    origins.set(seq, origin)
    return origin
  }
  /** The latest assistant event before `seq` that opened call `id`. @param {unknown} id @param {number} seq */
  const openerOf = (id, seq) => {
    for (let s = seq - 1; s >= 0; s--) {
      const event = log[s]
      if (event.type !== 'assistant/message') continue
      if ((event.data?.message?.content ?? []).some((/** @type {any} */ b) => b?.type === 'tool-call' && b.id === id)) return s
    }
    return null
  }
  const charsOf = (/** @type {number} */ seq) => visibleChars(messageOf(log[seq])?.content)

  const nodes = session.surface.nodes.map((/** @type {number} */ seq) => {
    const event = log[seq]
    const kind = KINDS[event.type] ?? 'Other'
    const message = messageOf(event)
    const calls = kind === 'Assistant' ? (message?.content ?? []).filter((/** @type {any} */ b) => b?.type === 'tool-call').length : 0
    return {
      seq,
      kind,
      origin: originOf(seq),
      chars: charsOf(seq),
      opens: calls,
      opener: kind === 'ToolResult' ? openerOf(answeredCall(message), seq) : null,
    }
  })
  /** @type {OracleReport[]} */
  const reports = []
  for (const node of nodes) {
    const event = log[node.seq]
    const source = event.data?.source
    const isReport = event.type === 'user/message' && event.surfaceOp?.op === 'replace' && source?.kind === 'plugin' && source.plugin === 'rewind'
    if (!isReport || !Number.isSafeInteger(source.markId) || source.markId < 0) continue
    const cited = citedMessages(log, event)
    if (cited.length === 0) continue
    reports.push({ seq: node.seq, markId: source.markId, foldedNodes: cited.length, start: cited[0], end: cited[cited.length - 1], foldedChars: cited.reduce((n, s) => n + charsOf(s), 0) })
  }
  const current = callId === undefined ? undefined : (openerOf(callId, log.length) ?? undefined)
  return { eventCount: log.length, current, nodes, reports }
}
