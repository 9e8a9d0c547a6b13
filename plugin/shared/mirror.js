/**
 * @module plugin/shared/mirror
 * The session mirror's JS half: each DSH session has one `SessionMirror` in the addon
 * (`crates/fold-core/src/mirror/mod.rs`), which every planner reads — rewind's region, block mode's
 * plan, recall's listing — instead of a snapshot sent at each call.
 *
 * - **Fed once per event.** `mountMirror(ctx)` puts one `session/event` listener on the host
 *   (one per host, however many plugins mount it) that describes each appended event once, in
 *   O(its own size), into a reused `Uint32Array` record and pushes it to the session's mirror
 *   synchronously: no allocation in proportion to the session. The description is the only
 *   place the plugin reads an event's surface facts: kind, the call a result answers (call ids
 *   are resolved here, so no string crosses), model-visible chars and the token price (the meter,
 *   `./meter.js`, is used through the mirror only), provenance, block ids.
 * - **A cache, never a source of truth.** `mirrorOf(session)` answers only in step with the
 *   session: events the listener did not see (a detached session, events before the plugin
 *   mounted) are described now; a log length or replace generation that still disagrees, a
 *   broken mirror, a new meter or block tool rebuilds it from the session before it answers.
 *   A rebuild describes the surface as it is (O(surface)) — or, while block mode tracks ids,
 *   every event again — so a session restored from disk or forked is described once.
 * - The log index (the open compaction bracket, the history of replacements recall lists) of a
 *   mirror rebuilt from its surface is read from the log when first asked (`withLog`); the open
 *   bracket is DSH's compaction lock, as `liveCompaction` answers it.
 */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import { deriveEventMessage } from '@deepseek-ai/dsh-session'

import { addon } from './addon.js'
import { compactionLock } from './compaction-lock.js'
import { visibleChars } from './meter.js'
import { eventLog, isRewindReportSource } from './session.js'

const NONE = 0xffff_ffff
const RECORD_WORDS = 14
const LOAD_FORMAT = 3
const LOAD_HEADER = 5
const KIND = /** @type {Record<string, number>} */ ({ 'user/message': 1, 'assistant/message': 2, 'tool/result': 3 })
const OP_APPEND = 1 << 2
const OP_REPLACE = 2 << 2
const PROTECTED = 1 << 4
const SOURCE = { appended: 0, user: 1 << 8, injected: 2 << 8, rewind: 3 << 8, block: 4 << 8, compaction: 5 << 8, rewrite: 6 << 8, note: 7 << 8 }
const LOG_CLASS = /** @type {Record<string, number>} */ ({ 'compaction/start': 1 << 12, 'compaction/end': 2 << 12, 'session/end-seed': 3 << 12 })
const SYSTEM_ROLES = new Set(['system', 'developer'])

/**
 * @typedef {{estimateMessage(message: any): number}} TokenMeter DSH's `ctx.tokenMeter` (the part used)
 * @typedef {(args: unknown) => string[]} BlockIdsOf the block ids a block tool's call arguments tag
 */

/**
 * What every mirror of this process describes: the token meter that prices nodes, and the block
 * tools whose calls carry ids. A change bumps the epoch: each mirror rebuilds at its next use.
 */
const setup = {
  epoch: 0,
  /** @type {Map<object, {count: number, price: (message: any) => number}>} */
  meters: new Map(),
  /** @type {((message: any) => number) | undefined} */
  price: undefined,
  /** @type {Map<string, {count: number, idsOf: BlockIdsOf}>} */
  blockTools: new Map(),
}

function reconfigure() {
  const last = [...setup.meters.values()].at(-1)
  setup.price = last?.price
  setup.epoch++
}

/**
 * Prices every mirror's nodes with DSH's token meter while it is mounted (without one, nodes
 * carry chars only and token figures are absent). Returns the disposer.
 * @param {TokenMeter} meter
 */
export function useMeter(meter) {
  let entry = setup.meters.get(meter)
  if (!entry) {
    // Taken from the service once: each call through cordis's service proxy costs ~2.5 µs.
    const estimate = meter.estimateMessage.bind(meter)
    setup.meters.set(meter, (entry = { count: 0, price: estimate }))
    reconfigure()
  }
  entry.count++
  return () => {
    if (--entry.count === 0 && setup.meters.get(meter) === entry) {
      setup.meters.delete(meter)
      reconfigure()
    }
  }
}

/**
 * Tracks the block ids the calls of `tool` tag (block mode's `block_run_code`), read by `idsOf`
 * from the call's arguments. Returns the disposer.
 * @param {string} tool @param {BlockIdsOf} idsOf
 */
export function trackBlockTool(tool, idsOf) {
  let entry = setup.blockTools.get(tool)
  if (!entry) {
    setup.blockTools.set(tool, (entry = { count: 0, idsOf }))
    setup.epoch++
  }
  entry.count++
  return () => {
    if (--entry.count === 0 && setup.blockTools.get(tool) === entry) {
      setup.blockTools.delete(tool)
      setup.epoch++
    }
  }
}

/**
 * The ids a block summary's source carries and closed, or `undefined` when `source` is not a
 * block summary's (`blockPtc: {remaining, closed}`).
 * @param {any} source
 */
export function blockSummaryIds(source) {
  const block = source?.blockPtc
  if (typeof block !== 'object' || block === null) return undefined
  const ids = (/** @type {unknown} */ list) => (Array.isArray(list) ? list.filter((id) => typeof id === 'string' && id !== '') : [])
  return { remaining: ids(block.remaining), closed: ids(block.closed) }
}

/**
 * Whether `source` is block mode's note to the model naming summaries it did not apply
 * (`blockNotice: {requestSeqs}`): injected, but nobody's new requirement.
 * @param {any} source
 */
export function isBlockNotice(source) {
  return Array.isArray(source?.blockNotice?.requestSeqs)
}

/**
 * The default protected rule: a system or developer message (by role or source kind), or a
 * surface event of a type other than the three message types (a host's own system message).
 * rc.8 puts none on the surface.
 * @param {any} event a surface event
 */
export function isSystemMessage(event) {
  if (KIND[event.type] === undefined) return true
  const message = event.type === 'user/message' ? event.data : event.data?.message
  return SYSTEM_ROLES.has(message?.role) || SYSTEM_ROLES.has(message?.source?.kind)
}

/** One session's mirror and what its description needs on the JS side. */
class Mirror {
  native = new addon.SessionMirror()
  /** @type {Map<unknown, number>} call id → seq of the described assistant event that opened it, while the call has no result */
  openers = new Map()
  epoch = setup.epoch
  /** Whether the whole log was described (block ids need every event). */
  replayed = false
}

/** @type {WeakMap<object, Mirror>} */
const mirrors = new WeakMap()

/**
 * The words records are written to, reused by every description (the listener's one record, a
 * rebuild's thousands): grown when a record does not fit, never shrunk.
 */
let words = new Uint32Array(1024)

/** Makes room for `n` more words after `at`. @param {number} at @param {number} n */
function room(at, n) {
  if (at + n <= words.length) return
  let cap = words.length
  while (cap < at + n) cap *= 2
  const next = new Uint32Array(cap)
  next.set(words.subarray(0, at))
  words = next
}

/**
 * The message sources a replacement cites: its `sourceEventSeqs` that are earlier message events.
 * @param {readonly any[]} log @param {any} event
 */
function messageSources(log, event) {
  const out = []
  for (const s of event.sourceEventSeqs ?? []) {
    if (Number.isInteger(s) && s >= 0 && s < event.seq && KIND[log[s]?.type] !== undefined) out.push(s)
  }
  return out
}

/**
 * Writes the record of `event` to `words` at `at` (the format is the core's, mirror.rs) and
 * returns the record's end. O(the event's own size). `origin`: the node's origin for a load,
 * NONE for a push (the mirror derives it).
 * @param {Mirror} m @param {readonly any[]} log @param {any} event @param {number} at @param {number} origin
 */
function describe(m, log, event, at, origin = NONE) {
  const seq = event.seq
  const type = event.type
  const op = event.surfaceOp
  if (op === undefined) {
    room(at, 2)
    words[at] = seq
    words[at + 1] = LOG_CLASS[type] ?? 0
    return at + 2
  }
  const replace = typeof op === 'object' && op !== null && op.op === 'replace'
  const kind = KIND[type] ?? 0
  const data = event.data
  /** The message the event carries (a user message is its data). */
  const carried = kind === 0 ? undefined : kind === 1 ? data : data?.message
  let meta = kind | (replace ? OP_REPLACE : OP_APPEND)
  let link = 0
  let ids = 0
  let closed = 0
  let markId = 0
  if (kind === 0 || SYSTEM_ROLES.has(carried?.role) || SYSTEM_ROLES.has(carried?.source?.kind)) meta |= PROTECTED
  if (kind === 1) {
    const source = carried?.source
    if (!replace) meta |= source?.kind === 'user' ? SOURCE.user : isBlockNotice(source) ? SOURCE.note : SOURCE.injected
    else {
      const block = blockSummaryIds(source)
      if (block) {
        meta |= SOURCE.block
        ids = block.remaining.length ? m.native.intern(block.remaining) : 0
        closed = block.closed.length ? m.native.intern(block.closed) : 0
      } else if (isRewindReportSource(source) && Number.isSafeInteger(source.markId) && source.markId >= 0) {
        meta |= SOURCE.rewind
        markId = source.markId
      } else if (typeof source === 'object' && source !== null && isCompactCheckpointSource(source)) meta |= SOURCE.compaction
      else meta |= SOURCE.rewrite
    }
  } else {
    if (replace) meta |= SOURCE.rewrite
    if (kind === 2) {
      const content = carried?.content ?? []
      /** @type {string[] | undefined} */
      let blockIds
      for (let i = 0; i < content.length; i++) {
        const block = content[i]
        if (block?.type !== 'tool-call') continue
        link++
        m.openers.set(block.id, seq)
        if (setup.blockTools.size === 0) continue
        const tool = setup.blockTools.get(block.name)
        if (tool) (blockIds ??= []).push(...tool.idsOf(block.arguments))
      }
      if (blockIds?.length) ids = m.native.intern(blockIds)
    } else if (kind === 3) {
      const id = carried?.source?.callId ?? carried?.content?.[0]?.toolCallId
      const opener = m.openers.get(id)
      link = opener === undefined || opener >= seq ? 0 : opener + 1
      // An answered call is forgotten (the map holds the open calls, not the session's history);
      // a result rewritten in place later is linked by the mirror to the result it replaces.
      if (link !== 0 && !replace) m.openers.delete(id)
    }
  }
  /** @type {number[] | undefined} the message events a replacement cites */
  let sources
  let lowest = NONE
  if (replace) {
    sources = []
    for (const s of event.sourceEventSeqs ?? []) {
      if (!Number.isInteger(s) || s < 0 || s >= seq) continue
      if (s < lowest) lowest = s
      if (KIND[log[s]?.type] !== undefined) sources.push(s)
    }
  }
  const n = RECORD_WORDS + (sources?.length ?? 0)
  room(at, n)
  const w = words
  w[at] = seq
  w[at + 1] = meta
  w[at + 2] = link
  w[at + 3] = kind === 0 ? 0 : visibleChars(carried?.content)
  if (setup.price === undefined) w[at + 4] = NONE
  else {
    const message = kind === 0 ? null : deriveEventMessage(event)
    w[at + 4] = message ? setup.price(message) : 0
  }
  w[at + 5] = ids
  w[at + 6] = closed
  w[at + 7] = markId % 2 ** 32
  w[at + 8] = Math.floor(markId / 2 ** 32)
  w[at + 9] = replace ? op.start : 0
  w[at + 10] = replace ? op.end : 0
  w[at + 11] = lowest
  w[at + 12] = origin
  w[at + 13] = sources?.length ?? 0
  if (sources) w.set(sources, at + RECORD_WORDS)
  return at + n
}

/**
 * Feeds the events `from..` of the log to the mirror, one push.
 * @param {Mirror} m @param {readonly any[]} log @param {number} from
 */
function feed(m, log, from) {
  let at = 0
  for (let seq = from; seq < log.length; seq++) at = describe(m, log, log[seq], at)
  m.native.push(words, at)
}

/**
 * The smallest event seq each surface node stands for (a replacement: the origin of the node it
 * replaced first, or a lower seq it cites), one chain per replacement.
 * @param {readonly any[]} log @param {Map<number, number>} memo @param {number} seq
 */
function originOf(log, memo, seq) {
  const known = memo.get(seq)
  if (known !== undefined) return known
  const event = log[seq]
  let origin = seq
  const op = event.surfaceOp
  if (op?.op === 'replace') {
    for (const s of event.sourceEventSeqs ?? []) if (Number.isInteger(s) && s >= 0 && s < origin) origin = s
    if (Number.isInteger(op.start) && op.start >= 0 && op.start < seq) origin = Math.min(origin, originOf(log, memo, op.start))
  }
  memo.set(seq, origin)
  return origin
}

/**
 * Rebuilds a mirror from the session as it is now: its surface (one record per node, in model
 * order, plus the events the rewind reports on it cite, so their folds are priced), or — while
 * block mode tracks ids, which need every event — every event again.
 * @param {Mirror} m @param {any} session
 */
function rebuild(m, session) {
  const log = eventLog(session)
  m.openers.clear()
  m.epoch = setup.epoch
  if (setup.blockTools.size > 0) {
    m.native.reset()
    feed(m, log, 0)
    m.replayed = true
    return
  }
  const nodes = session.surface.nodes
  const memo = new Map()
  /** @type {Set<number>} */
  const cited = new Set()
  for (let i = 0; i < nodes.length; i++) {
    const event = log[nodes[i]]
    if (event.type === 'user/message' && event.surfaceOp?.op === 'replace' && isRewindReportSource(event.data?.source)) {
      for (const s of messageSources(log, event)) cited.add(s)
    }
  }
  if (cited.size > 0) for (const s of nodes) cited.delete(s)
  const others = [...cited].sort((a, b) => a - b)
  let at = LOAD_HEADER
  for (const s of others) at = describe(m, log, log[s], at, s)
  // In model order: an assistant is described (its calls' openers known) before its results.
  for (let i = 0; i < nodes.length; i++) at = describe(m, log, log[nodes[i]], at, originOf(log, memo, nodes[i]))
  words.set([LOAD_FORMAT, log.length, session.surface.replaceGeneration, nodes.length, others.length])
  m.native.load(words.subarray(0, at))
  m.replayed = false
}

/**
 * The session's mirror, in step with the session: caught up with events it has not seen, or
 * rebuilt when it disagrees with the session or was set up for another meter or block tool.
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @returns {Mirror}
 */
export function mirrorOf(session) {
  let m = mirrors.get(session)
  if (m === undefined || m.epoch !== setup.epoch) {
    if (m === undefined) mirrors.set(session, (m = new Mirror()))
    rebuild(m, session)
    return m
  }
  const native = m.native
  const seq = session.seq
  const generation = session.surface.replaceGeneration
  let step = native.step(seq, generation)
  if (step === 1) {
    try {
      feed(m, eventLog(session), native.eventCount)
    } catch {
      // Out of step (the mirror says why in `broken`): rebuilt below.
    }
    step = native.step(seq, generation)
  }
  if (step !== 0) rebuild(m, session)
  return m
}

/**
 * The session's mirror with its log index known (the open compaction bracket, the replacements
 * recall lists): read from the log once after a rebuild from the surface.
 * @param {any} session
 */
export function withLog(session) {
  const m = mirrorOf(session)
  if (!m.native.logKnown) learnLog(m, session)
  return m
}

/**
 * The seq of the `compaction/start` holding `session`'s compaction lock now, or `undefined`:
 * the mirror applies DSH's rule (plugin/shared/compaction-lock.js) to each event as it is
 * appended, so asking costs no walk of the log.
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @returns {number | undefined}
 */
export function liveCompaction(session) {
  return withLog(session).native.openCompaction() ?? undefined
}

/**
 * Reads the log index of a mirror rebuilt from its surface off the session's log: the open
 * bracket, every replacement, and the events the rewind reports off the surface cite (so a fold
 * whose report a compaction replaced is still found, with its account, by its mark: a fold's
 * repair reads it). Two walks of the log: what those reports cite, then the records in seq order.
 * @param {Mirror} m @param {any} session
 */
function learnLog(m, session) {
  const log = eventLog(session)
  const onSurface = new Set(session.surface.nodes)
  /** @type {Set<number>} */
  const cited = new Set()
  /** @type {number | undefined} */
  let open
  for (let seq = 0; seq < log.length; seq++) {
    const event = log[seq]
    const type = event.type
    open = compactionLock(open, event)
    if (event.surfaceOp?.op === 'replace' && !onSurface.has(seq) && type === 'user/message' && isRewindReportSource(event.data?.source)) {
      for (const s of messageSources(log, event)) if (!onSurface.has(s)) cited.add(s)
    }
  }
  // Describing old calls and results must not touch the open calls the listener links by.
  const openers = new Map(m.openers)
  let at = 0
  for (let seq = 0; seq < log.length; seq++) {
    const event = log[seq]
    if (event.surfaceOp?.op === 'replace' || cited.has(seq)) at = describe(m, log, event, at)
  }
  m.openers = openers
  m.native.loadLog(open ?? NONE, words.subarray(0, at))
}

/**
 * The listener: describes `event` and pushes it to its session's mirror, if the session has one
 * and the mirror is in step (otherwise its next use catches it up or rebuilds it). A new
 * session (its first event) gets its mirror here.
 * @param {any} session @param {any} event
 */
export function onSessionEvent(session, event) {
  let m = mirrors.get(session)
  if (m === undefined) {
    if (event.seq !== 0) return
    mirrors.set(session, (m = new Mirror()))
    m.replayed = true
  }
  if (m.epoch !== setup.epoch || m.native.eventCount !== event.seq) return
  const at = describe(m, eventLog(session), event, 0)
  try {
    m.native.push(words, at)
  } catch {
    // Out of step: the mirror is broken and rebuilt at its next use.
  }
}

/** @type {WeakMap<object, {owner: any, off: () => void, users: Set<any>}>} */
const hosts = new WeakMap()

/**
 * Mirrors the sessions of `ctx`'s host: one `session/event` listener per host whichever plugins
 * ask (each extra listener costs every append a dispatch), handed to another user when its
 * owner unloads; and every session the host creates or restores is described at creation, its log
 * index included, so a long resumed session is neither described nor walked inside its first
 * fold (the walk costs ~4 ms at 50k events; a restore pays it once, a fold's commit needs it).
 * @param {any} ctx a plugin's cordis context
 */
export function mountMirror(ctx) {
  const root = ctx.root ?? ctx
  ctx.effect(() => {
    let host = hosts.get(root)
    if (!host) {
      host = { owner: ctx, off: ctx.on('session/event', onSessionEvent), users: new Set() }
      hosts.set(root, host)
    }
    host.users.add(ctx)
    const offCreated = ctx.on('session/created', (/** @type {any} */ session) => {
      withLog(session)
    })
    for (const session of ctx.get('sessions')?.list?.() ?? []) withLog(session)
    return () => {
      offCreated()
      const h = /** @type {NonNullable<typeof host>} */ (hosts.get(root))
      h.users.delete(ctx)
      if (h.owner !== ctx) return
      h.off()
      const next = h.users.values().next().value
      if (next === undefined) hosts.delete(root)
      else {
        h.owner = next
        h.off = next.on('session/event', onSessionEvent)
      }
    }
  }, 'dsh-fold: session mirror')
}

/**
 * The price of one message as the mirror prices nodes: model-visible chars, and tokens when a
 * meter is mounted.
 * @param {any} message
 */
export function priceMessage(message) {
  return { chars: visibleChars(message?.content), tokens: setup.price?.(message) }
}

/**
 * A mirror of the session described afresh, apart from the one the plugin keeps (the tests'
 * from-scratch description: what the kept mirror must equal after any history of events).
 * @param {any} session
 */
export function freshMirror(session) {
  const m = new Mirror()
  rebuild(m, session)
  if (!m.native.logKnown) learnLog(m, session)
  return m.native
}
