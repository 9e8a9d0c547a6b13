/**
 * @module bench/lib/baseline
 * The BASELINE: the reference fold (`@dpskh/tool-rewind` + `@dpskh/tool-checkpoint`) as its
 * README (shared/seeds 000/001) and shared/dsh-facts.md describe it, written here with the
 * real DSH packages:
 *
 * - the fold start: `surface.nodes.findIndex(seq >= mark.logLength)` (a copy of the live
 *   array, as the reference must take), then forward over unbalanced cuts;
 * - the current step's assistant message (the one carrying the rewind call) found through
 *   `session.events` (the O(n) frozen copy DSH rebuilds after every append), scanning the
 *   surface from the start as in the verified fold-from-a-tool pattern;
 * - cut balance from the real `toolPairingBalancedBefore/After` of
 *   `@deepseek-ai/dsh-compaction` (its cache is keyed by `replaceGeneration`, so a
 *   compaction since the last use rebuilds it);
 * - model-visible text metered per node through the real `deriveEventMessage`, with the
 *   very `visibleChars` the plugin uses (same numbers, checked by the bench);
 * - the summarizer gets the derived messages; the commit re-selects in one synchronous
 *   block, compares, and appends the replacement with `session.append`;
 * - the mark store: a JSON file rewritten whole per write, like DSH's storage-json
 *   (temp `wx` 0600 → write → fsync → rename → fsync dir), marks read from memory (a resumed
 *   session's store reads its file first: `ReferenceStore.open`); a per-session in-process lock.
 *
 * The reference's known DEFECTS (seq-based start, orphaned parallel calls) do not change
 * its cost on the benchmark's sessions: the compaction there precedes the mark and the
 * checkpoint call is issued alone, so both algorithms select the same region (checked).
 */
import { open, readFile, rename } from 'node:fs/promises'
import path from 'node:path'

import { toolPairingBalancedAfter, toolPairingBalancedBefore } from '@deepseek-ai/dsh-compaction'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { deriveEventMessage } from '@deepseek-ai/dsh-session'

import { visibleChars } from '../../plugin/shared/meter.js'

class RefError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message)
    this.code = code
  }
}

/** The reference checkpoint store: memory + whole-file durable rewrites (storage-json style). */
export class ReferenceStore {
  /** @param {string} file */
  constructor(file) {
    this.file = file
    this.dir = path.dirname(file)
    this.nextId = 1
    /** @type {Map<number, any>} */
    this.marks = new Map()
    /** @type {Map<string, number>} */
    this.latestBySession = new Map()
    this.temp = 0
  }

  async #write() {
    const doc = {
      unit: { name: 'checkpoint', version: 1 },
      global: { nextId: this.nextId },
      tables: { marks: Object.fromEntries(this.marks) },
    }
    const temp = `${this.file}.${process.pid}.${this.temp++}.tmp`
    const fh = await open(temp, 'wx', 0o600)
    try {
      await fh.writeFile(JSON.stringify(doc))
      await fh.sync()
    } finally {
      await fh.close()
    }
    await rename(temp, this.file)
    const dir = await open(this.dir, 'r')
    try {
      await dir.sync()
    } finally {
      await dir.close()
    }
  }

  /**
   * The store of a resumed session: its file, written by another process, read now (as DSH's
   * storage-json reads a domain file at its first use).
   * @param {string} file
   */
  static async open(file) {
    const store = new ReferenceStore(file)
    const doc = JSON.parse(await readFile(file, 'utf8'))
    store.nextId = doc.global?.nextId ?? 1
    for (const mark of Object.values(doc.tables?.marks ?? {})) {
      const m = /** @type {any} */ (mark)
      store.marks.set(m.id, m)
      const latest = store.latestBySession.get(m.sessionId)
      if (latest === undefined || latest < m.id) store.latestBySession.set(m.sessionId, m.id)
    }
    return store
  }

  /** @param {string} sessionId @param {number} logLength */
  async mark(sessionId, logLength) {
    const mark = { id: this.nextId++, sessionId, logLength, createdAt: Date.now(), foldedAt: null }
    this.marks.set(mark.id, mark)
    this.latestBySession.set(sessionId, mark.id)
    await this.#write()
    return { id: mark.id, logLength }
  }

  /** @param {string} sessionId */
  async latestMark(sessionId) {
    const id = this.latestBySession.get(sessionId)
    return id === undefined ? null : this.marks.get(id)
  }

  /** @param {string} sessionId @param {number} markId */
  async completeFold(sessionId, markId) {
    const m = this.marks.get(markId)
    if (!m || m.foldedAt !== null || this.latestBySession.get(sessionId) !== markId) return false
    this.marks.set(markId, { ...m, foldedAt: Date.now() })
    await this.#write()
    return true
  }
}

/**
 * The reference region selection.
 * @param {any} session @param {{logLength: number}} mark @param {string} callId
 */
export function referenceSelect(session, mark, callId) {
  const nodes = [...session.surface.nodes]
  const events = session.events
  let from = nodes.findIndex((seq) => seq >= mark.logLength)
  if (from < 0) throw new RefError('EMPTY_REGION', 'no surface nodes after the checkpoint mark')
  const current = nodes.findIndex((seq) => {
    const e = events[seq]
    return e.type === 'assistant/message' && e.data.message.content.some((/** @type {any} */ b) => b.type === 'tool-call' && b.id === callId)
  })
  const limit = current < 0 ? nodes.length : current
  // A mark taken mid-call leaves the checkpoint's own result right after it: skip to the next balanced cut.
  while (from < limit && !toolPairingBalancedBefore(session, nodes[from])) from++
  let to = limit - 1
  while (to >= from && !toolPairingBalancedAfter(session, nodes[to])) to--
  if (from > to) throw new RefError(from >= limit ? 'EMPTY_REGION' : 'UNBALANCED', 'no balanced region')
  const seqs = nodes.slice(from, to + 1)
  const messages = []
  let chars = 0
  for (const seq of seqs) {
    const message = deriveEventMessage(events[seq])
    if (!message) continue
    messages.push(message)
    chars += visibleChars(message.content)
  }
  return { seqs, messages, chars }
}

const locks = new Set()

/**
 * The reference `rewind`: select, summarize, shrink check, commit (re-select + append), stamp.
 * @param {ReferenceStore} store @param {any} session @param {string} callId
 * @param {(messages: any[]) => Promise<string>} summarize
 */
export async function referenceRewind(store, session, callId, summarize) {
  const mark = await store.latestMark(session.id)
  if (!mark) throw new RefError('NO_CHECKPOINT', 'no checkpoint')
  if (mark.foldedAt !== null) throw new RefError('EMPTY_REGION', 'already folded')
  if (locks.has(session.id)) throw new RefError('FOLD_IN_PROGRESS', 'busy')
  locks.add(session.id)
  try {
    const region = referenceSelect(session, mark, callId)
    const report = await summarize(region.messages)
    if (region.chars > 0 && report.length >= region.chars) throw new RefError('SHRINK', 'report too long')
    // The commit: one synchronous block.
    const again = referenceSelect(session, mark, callId)
    if (again.seqs.length !== region.seqs.length || again.seqs.some((s, i) => s !== region.seqs[i])) {
      throw new RefError('CHANGED', 'surface changed')
    }
    session.append(
      'user/message',
      createUserMessage({ content: [{ type: 'text', text: report }], source: { kind: 'plugin', plugin: 'rewind', markId: mark.id } }),
      { surfaceOp: { op: 'replace', start: region.seqs[0], end: region.seqs.at(-1) }, sourceEventSeqs: region.seqs },
    )
    await store.completeFold(session.id, mark.id)
    return {
      markId: mark.id,
      foldedNodes: region.seqs.length,
      start: region.seqs[0],
      end: region.seqs.at(-1),
      foldedChars: region.chars,
      reportChars: report.length,
    }
  } finally {
    locks.delete(session.id)
  }
}
