/**
 * @module plugin/shared/surface
 * The version 1 surface snapshot of a real DSH `Session` (format: `crates/fold-core/src/surface.rs`),
 * built from the session alone. The plugin's warm paths read the session mirror (`./mirror.js`)
 * instead; this snapshot is what a host without a mirror hands `rewind` / `selectRegion` /
 * `planMatches`, and the from-scratch description the tests hold the mirror to.
 *
 * Per-event descriptors (kind, model-visible chars, origin, the call a result answers) derive
 * from immutable events, so each event is described once and cached per session, and only the
 * events a snapshot meets are: the surface's nodes (and a rewind report's sources). A snapshot
 * costs one pass over the surface's node list, never a pass over the whole log.
 */

import { visibleChars } from './meter.js'
import { eventLog, isRewindReportSource } from './session.js'

const NONE = 0xffff_ffff
const KIND = { other: 0, user: 1, assistant: 2, toolResult: 3 }
const MESSAGE_TYPES = new Set(['user/message', 'assistant/message', 'tool/result'])

/** Flags per seq: the node's shape (kind, link, origin) is known; its origin alone; its chars. */
const DESCRIBED = 1
const ORIGIN = 2
const CHARS = 4

/** @param {any} event */
const contentOf = (event) => (event.type === 'user/message' ? event.data?.content : event.data?.message?.content)

/**
 * Descriptors of a session's events, computed once per event and only for events a snapshot
 * meets: the surface's nodes (their shape always; their model-visible chars only where a fold
 * from the snapshot's anchor can reach) and a fold report's sources. The log's other events
 * (log-only, shadowed) are never read: a snapshot of a resumed session reads O(surface) events
 * once, and metering (the costly part: every block of every message) only the reachable tail.
 */
class Descriptors {
  /** @type {Uint8Array} DESCRIBED | ORIGIN | CHARS per seq */
  flags = new Uint8Array(256)
  origin = new Uint32Array(256)
  kind = new Uint8Array(256)
  chars = new Uint32Array(256)
  link = new Uint32Array(256)
  /** Surface position of each seq at the last snapshot (valid when `nodes[pos[seq]] === seq`). */
  pos = new Uint32Array(256)
  /** @type {Map<string, number>} call id → seq of the (latest) described assistant event that opened it */
  openers = new Map()
  /** @type {Map<number, {markId: number, sources: number[]}>} report seq → the fold it records */
  reports = new Map()
  /** The surface this object has described and positioned: its replace generation and length. */
  generation = -1
  described = 0

  /** @param {number} n */
  grow(n) {
    if (n <= this.origin.length) return
    let cap = this.origin.length
    while (cap < n) cap *= 2
    for (const key of /** @type {const} */ (['flags', 'origin', 'kind', 'chars', 'link', 'pos'])) {
      const next = new /** @type {any} */ (this[key].constructor)(cap)
      next.set(this[key])
      this[key] = next
    }
  }

  /**
   * The smallest event seq `seq` stands for: its own, or for a replacement, the origin of the
   * first node it replaced (`surfaceOp.start`; origins rise along a surface, since appends get
   * ever higher seqs and a replacement takes the place and the origin of the run it replaced) or
   * any lower seq it also cites. Reads one chain of replacements, not every source event.
   * @param {readonly any[]} log @param {number} seq
   */
  originOf(log, seq) {
    if (this.flags[seq] & ORIGIN) return this.origin[seq]
    const event = log[seq]
    let origin = seq
    const op = event.surfaceOp
    if (op?.op === 'replace' && Array.isArray(event.sourceEventSeqs)) {
      for (const s of event.sourceEventSeqs) if (Number.isInteger(s) && s >= 0 && s < origin) origin = s
      if (Number.isInteger(op.start) && op.start >= 0 && op.start < seq) origin = Math.min(origin, this.originOf(log, op.start))
    }
    this.origin[seq] = origin
    this.flags[seq] |= ORIGIN
    return origin
  }

  /** The node's shape: kind, link (calls opened / the call answered), origin. @param {readonly any[]} log @param {number} seq */
  describe(log, seq) {
    const event = log[seq]
    this.originOf(log, seq)
    this.flags[seq] |= DESCRIBED
    this.kind[seq] = KIND.other
    this.link[seq] = 0
    switch (event.type) {
      case 'user/message': {
        this.kind[seq] = KIND.user
        const source = event.data?.source
        // A report: a replacement naming its mark; what it folded is the messages it cites.
        if (event.surfaceOp?.op === 'replace' && isRewindReportSource(source) && Number.isSafeInteger(source.markId) && source.markId >= 0 && Array.isArray(event.sourceEventSeqs)) {
          const sources = event.sourceEventSeqs.filter(
            (/** @type {unknown} */ s) => Number.isInteger(s) && /** @type {number} */ (s) >= 0 && /** @type {number} */ (s) < seq && MESSAGE_TYPES.has(log[/** @type {number} */ (s)]?.type),
          )
          if (sources.length) this.reports.set(seq, { markId: source.markId, sources })
        }
        break
      }
      case 'assistant/message': {
        const content = event.data?.message?.content ?? []
        let calls = 0
        for (let i = 0; i < content.length; i++) {
          const block = content[i]
          if (block?.type === 'tool-call') {
            calls++
            if (!(/** @type {number} */ (this.openers.get(block.id)) >= seq)) this.openers.set(block.id, seq)
          }
        }
        this.kind[seq] = KIND.assistant
        this.link[seq] = calls
        break
      }
      case 'tool/result': {
        const message = event.data?.message
        const callId = message?.source?.callId ?? message?.content?.[0]?.toolCallId
        // The opener is described first: it stands before its result on the surface.
        const opener = this.openers.get(callId)
        this.kind[seq] = KIND.toolResult
        this.link[seq] = opener === undefined || opener >= seq ? 0 : opener + 1
        break
      }
    }
  }

  /** The node's model-visible chars, metered on first use. @param {readonly any[]} log @param {number} seq */
  charsOf(log, seq) {
    if (!(this.flags[seq] & CHARS)) {
      const event = log[seq]
      const content = event.type === 'user/message' || event.type === 'assistant/message' || event.type === 'tool/result' ? contentOf(event) : undefined
      this.chars[seq] = visibleChars(content)
      this.flags[seq] |= CHARS
    }
    return this.chars[seq]
  }

  /**
   * The first surface position a fold from `anchor` can reach: the first node standing for an
   * event at or after the anchor, pulled back (to a fixed point) to the call of any result after
   * it — the region rules' start and pairing closure can move no further back
   * (crates/fold-core/src/region.rs).
   * @param {readonly number[]} nodes @param {number} anchor
   */
  reach(nodes, anchor) {
    let first = 0
    while (first < nodes.length && this.origin[nodes[first]] < anchor) first++
    let reach = first
    for (let i = nodes.length - 1; i >= reach; i--) {
      const seq = nodes[i]
      if (this.kind[seq] !== KIND.toolResult || this.link[seq] === 0) continue
      const opener = this.link[seq] - 1
      const p = this.pos[opener]
      if (p < i && nodes[p] === opener && p < reach) reach = p
    }
    return reach
  }
}

/** @type {WeakMap<object, Descriptors>} */
const cache = new WeakMap()

/**
 * The session's descriptors, with the shape of every surface node known (described in model
 * order, so a result's call is described before it) and each node's position.
 * @param {any} session
 */
function describedSurface(session) {
  let d = cache.get(session)
  if (!d) cache.set(session, (d = new Descriptors()))
  const log = eventLog(session)
  d.grow(log.length)
  const surface = session.surface
  const nodes = surface.nodes
  // Appends only add nodes at the tail; a replace moves positions: then start over.
  const generation = surface.replaceGeneration ?? NaN
  const from = generation === d.generation && d.described <= nodes.length ? d.described : 0
  for (let i = from; i < nodes.length; i++) {
    const seq = nodes[i]
    if (!(d.flags[seq] & DESCRIBED)) d.describe(log, seq)
    d.pos[seq] = i
  }
  d.generation = generation
  d.described = nodes.length
  return { d, log, nodes }
}

/**
 * Describes the session's surface nodes not yet described. `checkpoint` calls it when it marks,
 * so even a long surface is described before the exploration, not inside the fold.
 * @param {any} session
 */
export function describeSession(session) {
  describedSurface(session)
}

/**
 * The surface snapshot the addon's `rewind` / `selectRegion` / `planMatches` read.
 *
 * With `anchor` (the mark's log length; `rewind` passes it to `host.snapshot`) the snapshot is
 * the surface's suffix a fold from that anchor can reach (plus the current step's node and any
 * fold report appended after the anchor), and only that is metered: no region from that anchor
 * differs, and a long surface costs O(its reachable tail), not O(surface). Without it, the whole
 * surface, every node metered.
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @param {{ callId?: string, anchor?: number }} [options] the rewind call's id: its assistant
 *   message is the current step (the region ends before it); the fold's anchor
 * @returns {Uint32Array}
 */
export function surfaceSnapshot(session, options = {}) {
  const { d, log, nodes } = describedSurface(session)
  let current = NONE
  if (options.callId !== undefined) current = d.openers.get(options.callId) ?? NONE
  const anchor = options.anchor
  let from = 0
  if (typeof anchor === 'number' && anchor >= 0) {
    from = d.reach(nodes, anchor)
    const onSurface = (/** @type {number} */ seq) => nodes[d.pos[seq]] === seq
    // The node the region ends at: the named call's, or the one the decoder picks without it
    // (the last assistant node).
    if (current !== NONE) {
      if (onSurface(current)) from = Math.min(from, d.pos[current])
    } else {
      for (let i = nodes.length - 1; i >= 0; i--) {
        if (d.kind[nodes[i]] === KIND.assistant) {
          from = Math.min(from, i)
          break
        }
      }
    }
    // A report appended after the anchor may be this mark's fold (its repair).
    for (const seq of d.reports.keys()) if (seq >= anchor && onSurface(seq)) from = Math.min(from, d.pos[seq])
  }
  const reports = []
  for (const seq of d.reports.keys()) if (nodes[d.pos[seq]] === seq && d.pos[seq] >= from) reports.push(seq)
  reports.sort((a, b) => d.pos[a] - d.pos[b])
  const count = nodes.length - from
  const words = new Uint32Array(4 + count * 5 + 1 + reports.length * 7)
  words[0] = 1
  words[1] = log.length
  words[2] = current
  words[3] = count
  let w = 4
  for (let i = from; i < nodes.length; i++) {
    const seq = nodes[i]
    words[w] = seq
    words[w + 1] = d.origin[seq]
    words[w + 2] = d.kind[seq]
    words[w + 3] = d.charsOf(log, seq)
    words[w + 4] = d.link[seq]
    w += 5
  }
  words[w++] = reports.length
  for (const seq of reports) {
    const { markId, sources } = /** @type {{markId: number, sources: number[]}} */ (d.reports.get(seq))
    let folded = 0
    for (const s of sources) folded += d.charsOf(log, s)
    // The mark id whole (ids reach 2^53 - 1): its low and high 32 bits.
    words.set([seq, markId % 2 ** 32, Math.floor(markId / 2 ** 32), sources.length, sources[0], sources[sources.length - 1], folded], w)
    w += 7
  }
  return words
}
