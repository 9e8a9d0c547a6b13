/**
 * @module plugin/block/surface
 * The version 2 (block mode) snapshot of a real DSH `Session` (one `Uint32Array`, format
 * documented in `crates/fold-core/src/surface.rs`), built from the session alone: what a host
 * without the session mirror hands `planBlockSummary`, and the from-scratch description the tests
 * hold the mirror to (block mode plans on the mirror). A block call's ids are read by the rule in
 * `./args.js` (`callBlockIds`), as the mirror reads them. Block ids travel inside it as their UTF-16 code units, so no string
 * crosses into the addon and two distinct ids never become one.
 *
 * It reads facts only — each block call's `ids` (or legacy `id`) from its assistant message's
 * tool-call arguments (none for arguments the plugin refuses), the ids a block summary carries (`source.blockPtc.remaining`), whether a
 * replacement is a block summary or another producer's (and the ids of what it covered), which
 * call each result answers, which `user/message` was appended to the conversation (block mode's
 * own notes excepted), which node is
 * protected, and whether a `compaction/start` has no end yet (as DSH's compaction reads its
 * bracket: one at a time, closed by the next `compaction/end`, and stale once a later
 * `session/end-seed` shows the session was restored or forked after a crash inside it). What those facts mean (attribution,
 * range, inheritance, pending, protected, stale) is decided in Rust (`crates/fold-core/src/blocks.rs`).
 *
 * Events are immutable, so each is described once and cached per session; a snapshot then
 * costs one pass over the surface's node list, never a pass over the whole log.
 *
 * Protected nodes: rc.8 puts no system or developer message on the surface (its system prompt
 * rides in `request/header`), so nothing is protected there. For hosts that do, a node is
 * protected when its message's role or its source's kind is `system` or `developer`, or when it
 * is a surface event of a type other than `user/message`, `assistant/message`, `tool/result`
 * (a host's own system-message event); `options.isProtected(event)` replaces that rule.
 */
import { callBlockIds } from './args.js'
import { noticedRequests } from './log.js'
import { blockSummaryIds, isSystemMessage } from '../shared/mirror.js'
import { compactionLock } from '../shared/compaction-lock.js'
import { eventLog } from '../shared/session.js'

const FORMAT = 2
const OPEN_COMPACTION = 1
const KIND = { other: 0, user: 1, assistant: 2, toolResult: 3 }
const PROTECTED = 1 << 2
const USER_AUTHORED = 1 << 3
const BLOCK_SUMMARY = 1 << 4
const REPLACEMENT = 1 << 5
export { isSystemMessage }

/**
 * The ids a block summary carries, or `undefined` when `source` is not a block summary's.
 * @param {any} source a replacement `user/message`'s source
 * @returns {string[] | undefined}
 */
export function summaryCarriedIds(source) {
  return blockSummaryIds(source)?.remaining
}

class BlockDescriptors {
  size = 0
  meta = new Uint8Array(256)
  link = new Uint32Array(256)
  /** 0: no ids; k >= 1: id set k-1 */
  set = new Uint32Array(256)
  /** @type {Map<string, number>} call id → seq of the latest assistant event that opened it */
  openers = new Map()
  /** @type {string[]} the id table */
  ids = []
  /** @type {Map<string, number>} */
  idIndex = new Map()
  /** the id table in wire form: each id's UTF-16 length, then its code units two to a word */
  idWords = new Uint32Array(64)
  idWordsUsed = 0
  /** @type {Map<string, number>} a set's members, joined → its number + 1 */
  setNumber = new Map()
  /** @type {number[][]} each set's members */
  sets = []
  /** the sets in wire form: length, then members */
  setWords = new Uint32Array(64)
  setWordsUsed = 0
  /** @type {number | undefined} the live `compaction/start` (plugin/shared/compaction-lock.js) */
  compaction = undefined

  /** @param {string} blockToolName @param {(event: any) => boolean} isProtected */
  constructor(blockToolName, isProtected) {
    this.blockToolName = blockToolName
    this.isProtected = isProtected
  }

  /** @param {number} n */
  grow(n) {
    if (n <= this.meta.length) return
    let cap = this.meta.length
    while (cap < n) cap *= 2
    for (const key of /** @type {const} */ (['meta', 'link', 'set'])) {
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

  /**
   * The set of these ids (interned), as the node's set word: 0 for none.
   * @param {readonly string[]} ids
   */
  intern(ids) {
    if (ids.length === 0) return 0
    const members = ids.map((id) => {
      let i = this.idIndex.get(id)
      if (i === undefined) {
        i = this.ids.length
        this.ids.push(id)
        this.idIndex.set(id, i)
        this.packId(id)
      }
      return i
    })
    const key = members.join(',')
    let number = this.setNumber.get(key)
    if (number === undefined) {
      this.sets.push(members)
      number = this.sets.length
      this.setNumber.set(key, number)
      const need = this.setWordsUsed + 1 + members.length
      if (need > this.setWords.length) {
        let cap = this.setWords.length
        while (cap < need) cap *= 2
        const next = new Uint32Array(cap)
        next.set(this.setWords.subarray(0, this.setWordsUsed))
        this.setWords = next
      }
      this.setWords[this.setWordsUsed++] = members.length
      this.setWords.set(members, this.setWordsUsed)
      this.setWordsUsed += members.length
    }
    return number
  }

  /** @param {string} id */
  packId(id) {
    const need = this.idWordsUsed + 1 + Math.ceil(id.length / 2)
    if (need > this.idWords.length) {
      let cap = this.idWords.length
      while (cap < need) cap *= 2
      const next = new Uint32Array(cap)
      next.set(this.idWords.subarray(0, this.idWordsUsed))
      this.idWords = next
    }
    const w = this.idWords
    let at = this.idWordsUsed
    w[at++] = id.length
    for (let u = 0; u < id.length; u += 2) {
      w[at++] = id.charCodeAt(u) | (u + 1 < id.length ? id.charCodeAt(u + 1) << 16 : 0)
    }
    this.idWordsUsed = at
  }

  /**
   * The ids of the events a replacement covered: every id their own sets name (a replaced
   * replacement's covered ids included), in order of first appearance.
   * @param {unknown} sources the replacement's `sourceEventSeqs`
   * @param {number} seq the replacement's seq
   */
  covered(sources, seq) {
    if (!Array.isArray(sources)) return 0
    /** @type {Set<string>} */
    const ids = new Set()
    for (const s of sources) {
      if (!Number.isInteger(s) || s < 0 || s >= seq) continue
      const k = this.set[s]
      if (k !== 0) for (const m of this.sets[k - 1]) ids.add(this.ids[m])
    }
    return this.intern([...ids])
  }

  /** @param {any} event */
  describe(event) {
    const seq = event.seq
    let meta = KIND.other
    let link = 0
    let set = 0
    const op = event.surfaceOp
    const replacement = typeof op === 'object' && op !== null && op.op === 'replace'
    switch (event.type) {
      case 'user/message': {
        meta = KIND.user
        if (replacement) {
          const carried = summaryCarriedIds(event.data?.source)
          if (carried) {
            meta |= BLOCK_SUMMARY
            set = this.intern(carried)
          } else {
            meta |= REPLACEMENT
            set = this.covered(event.sourceEventSeqs, seq)
          }
        } else if (op !== undefined && noticedRequests(event.data?.source) === undefined) {
          // Block mode's own note to the model (a summary it did not apply) is nobody's new
          // requirement: it makes no summary stale.
          meta |= USER_AUTHORED
        }
        break
      }
      case 'assistant/message': {
        meta = KIND.assistant
        /** @type {string[]} */
        const ids = []
        for (const block of event.data?.message?.content ?? []) {
          if (block?.type !== 'tool-call') continue
          link++
          this.openers.set(block.id, seq)
          if (block.name === this.blockToolName) ids.push(...callBlockIds(block.arguments))
        }
        set = this.intern(ids)
        break
      }
      case 'tool/result': {
        const message = event.data?.message
        const opener = this.openers.get(message?.source?.callId ?? message?.content?.[0]?.toolCallId)
        meta = KIND.toolResult
        link = opener === undefined ? 0 : opener + 1
        if (replacement) {
          meta |= REPLACEMENT
          set = this.covered(event.sourceEventSeqs, seq)
        }
        break
      }
    }
    this.compaction = compactionLock(this.compaction, event)
    if (op !== undefined && this.isProtected(event)) meta |= PROTECTED
    this.meta[seq] = meta
    this.link[seq] = link
    this.set[seq] = set
  }
}

/** @type {WeakMap<object, BlockDescriptors>} */
const cache = new WeakMap()

/**
 * @param {any} session
 * @param {string} blockToolName
 * @param {(event: any) => boolean} isProtected
 */
function descriptorsOf(session, blockToolName, isProtected) {
  let d = cache.get(session)
  if (!d || d.blockToolName !== blockToolName || d.isProtected !== isProtected) {
    d = new BlockDescriptors(blockToolName, isProtected)
    cache.set(session, d)
  }
  d.catchUp(eventLog(session))
  return d
}

/**
 * Describes every event of the session not yet described, so the next `blockSnapshot` only
 * reads the surface. The first description of a long (or restored) session parses every block
 * call's arguments once; calling this at mount or on each session event keeps that pass out of
 * the first `block_summary`. Same options as `blockSnapshot`.
 * @param {any} session
 * @param {{ blockToolName?: string, isProtected?: (event: any) => boolean }} [options]
 */
export function describeBlockSession(session, { blockToolName = 'block_run_code', isProtected = isSystemMessage } = {}) {
  descriptorsOf(session, blockToolName, isProtected)
}

/**
 * The block-mode snapshot of the session's surface now, for the addon's `planBlockSummary`.
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @param {{ blockToolName?: string, isProtected?: (event: any) => boolean }} [options]
 *   `blockToolName`: the tool whose calls carry block ids (default `block_run_code`);
 *   `isProtected`: which surface events no summary may replace (default: system/developer
 *   messages, see the module docs); called once per event, so it must depend on the event only
 * @returns {Uint32Array}
 */
export function blockSnapshot(session, { blockToolName = 'block_run_code', isProtected = isSystemMessage } = {}) {
  const d = descriptorsOf(session, blockToolName, isProtected)
  const nodes = session.surface.nodes
  const n = nodes.length
  const words = new Uint32Array(5 + n * 4 + 1 + d.setWordsUsed + d.idWordsUsed)
  words[0] = FORMAT
  words[1] = d.size
  words[2] = d.compaction !== undefined ? OPEN_COMPACTION : 0
  words[3] = d.ids.length
  words[4] = n
  let w = 5
  for (let i = 0; i < n; i++) {
    const seq = nodes[i]
    words[w] = seq
    words[w + 1] = d.meta[seq]
    words[w + 2] = d.link[seq]
    words[w + 3] = d.set[seq]
    w += 4
  }
  words[w++] = d.sets.length
  words.set(d.setWords.subarray(0, d.setWordsUsed), w)
  words.set(d.idWords.subarray(0, d.idWordsUsed), w + d.setWordsUsed)
  return words
}
