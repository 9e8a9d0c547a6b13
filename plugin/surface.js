/**
 * @module plugin/surface
 * Describes a real DSH `Session`'s surface to the fold engine (the snapshot format is
 * documented in `crates/fold-core/src/surface.rs`), and reads back the messages of a region.
 *
 * Per-event descriptors (kind, model-visible chars, origin, the call a result answers) derive
 * from immutable events, so each event is described once and cached per session; a snapshot
 * then costs one pass over the surface's node list, never a pass over the whole log.
 */

import { visibleChars } from './meter.js'

// Kept importable from here: block mode (plugin/block-commit.js) and its tests read it from this module.
export { visibleChars }

const NONE = 0xffff_ffff
const KIND = { other: 0, user: 1, assistant: 2, toolResult: 3 }

/** @param {unknown} source */
export function isRewindReportSource(source) {
  const s = /** @type {{kind?: unknown, plugin?: unknown} | null} */ (source)
  return typeof s === 'object' && s !== null && s.kind === 'plugin' && s.plugin === 'rewind'
}

/**
 * The session's live event log without copying it. DSH rc.8 keeps it in `session.log`
 * (`session.events` is an O(n) frozen copy rebuilt after every append); later versions
 * expose `snapshotEvents()`.
 * @param {any} session
 * @returns {readonly any[]}
 */
export function eventLog(session) {
  const log = session.log
  if (Array.isArray(log) && log.length === session.seq) return log
  return session.snapshotEvents?.() ?? session.events
}

class Descriptors {
  size = 0
  origin = new Uint32Array(256)
  kind = new Uint8Array(256)
  chars = new Uint32Array(256)
  link = new Uint32Array(256)
  /** @type {Map<string, number>} call id → seq of the latest assistant event that opened it */
  openers = new Map()
  /** @type {Map<number, {markId: number, sources: number[]}>} report seq → its fold */
  reports = new Map()

  /** @param {number} n */
  grow(n) {
    if (n <= this.origin.length) return
    let cap = this.origin.length
    while (cap < n) cap *= 2
    for (const key of /** @type {const} */ (['origin', 'kind', 'chars', 'link'])) {
      const next = new /** @type {any} */ (this[key].constructor)(cap)
      next.set(this[key])
      this[key] = next
    }
  }

  /** @param {readonly any[]} log */
  catchUp(log) {
    if (log.length <= this.size) return
    this.grow(log.length)
    for (let seq = this.size; seq < log.length; seq++) this.describe(log[seq])
    this.size = log.length
  }

  /** @param {any} event */
  describe(event) {
    const seq = event.seq
    let origin = seq
    if (event.surfaceOp?.op === 'replace' && Array.isArray(event.sourceEventSeqs)) {
      for (const s of event.sourceEventSeqs) if (s < seq && this.origin[s] < origin) origin = this.origin[s]
    }
    this.origin[seq] = origin
    this.kind[seq] = KIND.other
    this.chars[seq] = 0
    this.link[seq] = 0
    switch (event.type) {
      case 'user/message': {
        this.kind[seq] = KIND.user
        this.chars[seq] = visibleChars(event.data?.content)
        const source = event.data?.source
        if (isRewindReportSource(source) && Number.isSafeInteger(source.markId) && source.markId >= 0 && Array.isArray(event.sourceEventSeqs)) {
          this.reports.set(seq, { markId: source.markId, sources: event.sourceEventSeqs })
        }
        break
      }
      case 'assistant/message': {
        const content = event.data?.message?.content ?? []
        let calls = 0
        for (const block of content) {
          if (block?.type === 'tool-call') {
            calls++
            this.openers.set(block.id, seq)
          }
        }
        this.kind[seq] = KIND.assistant
        this.chars[seq] = visibleChars(content)
        this.link[seq] = calls
        break
      }
      case 'tool/result': {
        const message = event.data?.message
        const callId = message?.source?.callId ?? message?.content?.[0]?.toolCallId
        const opener = this.openers.get(callId)
        this.kind[seq] = KIND.toolResult
        this.chars[seq] = visibleChars(message?.content)
        this.link[seq] = opener === undefined ? 0 : opener + 1
        break
      }
    }
  }
}

/** @type {WeakMap<object, Descriptors>} */
const cache = new WeakMap()

/** @param {any} session */
function descriptorsOf(session) {
  let d = cache.get(session)
  if (!d) cache.set(session, (d = new Descriptors()))
  d.catchUp(eventLog(session))
  return d
}

/**
 * Describes every event of the session not yet described. `checkpoint` calls it when it marks,
 * so the one full pass over a long (or resumed) session's log happens before the exploration,
 * not inside the fold.
 * @param {any} session
 */
export function describeSession(session) {
  descriptorsOf(session)
}

/**
 * The surface snapshot the addon's `rewind` / `selectRegion` / `planMatches` read.
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @param {{ callId?: string }} [options] the rewind call's id: its assistant message is the
 *   current step (the region ends before it)
 * @returns {Uint32Array}
 */
export function surfaceSnapshot(session, options = {}) {
  const d = descriptorsOf(session)
  const nodes = session.surface.nodes
  let current = NONE
  if (options.callId !== undefined) current = d.openers.get(options.callId) ?? NONE
  const reports = []
  for (const seq of nodes) if (d.reports.has(seq)) reports.push(seq)
  const words = new Uint32Array(4 + nodes.length * 5 + 1 + reports.length * 7)
  words[0] = 1
  words[1] = d.size
  words[2] = current
  words[3] = nodes.length
  let w = 4
  for (const seq of nodes) {
    words[w] = seq
    words[w + 1] = d.origin[seq]
    words[w + 2] = d.kind[seq]
    words[w + 3] = d.chars[seq]
    words[w + 4] = d.link[seq]
    w += 5
  }
  words[w++] = reports.length
  for (const seq of reports) {
    const { markId, sources } = /** @type {{markId: number, sources: number[]}} */ (d.reports.get(seq))
    let folded = 0
    for (const s of sources) folded += d.chars[s]
    // The mark id whole (ids reach 2^53 - 1): its low and high 32 bits.
    words.set([seq, markId % 2 ** 32, Math.floor(markId / 2 ** 32), sources.length, sources[0], sources[sources.length - 1], folded], w)
    w += 7
  }
  return words
}

/**
 * The model-visible messages of a region, in model order; empty assistant nodes are skipped.
 * @param {any} session
 * @param {ArrayLike<number>} seqs
 */
export function regionMessages(session, seqs) {
  const log = eventLog(session)
  const messages = []
  for (const seq of Array.from(seqs)) {
    const message = session.deriveEventMessage(log[seq])
    if (message) messages.push(message)
  }
  return messages
}
