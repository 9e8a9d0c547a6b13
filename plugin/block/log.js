/**
 * @module plugin/block/log
 * What block mode needs to know about a session, read from its append-only log and nowhere
 * else: the open turn (a compaction bracket belongs to it), an unmatched `compaction/start`
 * (the durable compaction lock), the route of the latest model request, and the summary
 * requests still owed a commit.
 *
 * A request is owed a commit when `block_summary` answered it `pending` — that answer is in
 * the `tool/code-dispatch` event the host logs for the program's sub-call, with the call's
 * arguments — and no commit names its `requestSeq` yet: neither a replacement `user/message`
 * (`source.blockPtc.requestSeq`) nor a `compaction/end` (`blockPtc.requestSeq`, success or
 * logged failure). So a session restored from disk, or forked with `sessions.fork`, finds the
 * requests its previous life left pending without any store beside the log.
 *
 * The reading is incremental: each event is looked at once, when the state catches up.
 */
import { blockIdsOrNone } from './args.js'
import { eventLog } from '../shared/session.js'

/**
 * @typedef {object} SummaryRequest
 * @property {number} requestSeq the session's log length when `block_summary` ran
 * @property {string[]} targets the ids the summary closes
 * @property {string} summary the model's own text
 * @property {{provider: string, model: string} | undefined} route the request that wrote it
 */

/** @param {unknown} content a logged tool result's content blocks @returns {any} */
function parseResult(content) {
  if (!Array.isArray(content)) return undefined
  const text = content
    .filter((b) => b?.type === 'text')
    .map((b) => b.text)
    .join('')
  try {
    return JSON.parse(text)
  } catch {
    // Not our JSON (a result a log-shaping listener rewrote): nothing to recover from it.
    return undefined
  }
}

/** The block-mode tag of a commit's events, if any. @param {any} data */
const tagOf = (data) => (typeof data?.blockPtc?.requestSeq === 'number' ? data.blockPtc.requestSeq : undefined)

export class SessionBlocks {
  /** Events read so far. */
  consumed = 0
  /** @type {number | null} the open turn, or null between turns */
  openTurn = null
  /** @type {number | undefined} seq of a `compaction/start` with no end yet */
  openCompaction = undefined
  /** @type {{provider: string, model: string} | undefined} */
  route = undefined
  /** @type {Set<number>} requestSeqs a commit or a logged failure already answered */
  settled = new Set()
  /** @type {Map<number, SummaryRequest>} requests owed a commit, in request order */
  queue = new Map()

  /** @param {string} summaryTool the `block_summary` tool's name */
  constructor(summaryTool) {
    this.summaryTool = summaryTool
  }

  /**
   * Reads the events appended since the last call.
   * @param {any} session
   */
  catchUp(session) {
    const log = eventLog(session)
    for (; this.consumed < log.length; this.consumed++) this.#read(log[this.consumed])
  }

  /** @param {SummaryRequest} request */
  enqueue(request) {
    if (!this.settled.has(request.requestSeq) && !this.queue.has(request.requestSeq)) this.queue.set(request.requestSeq, request)
  }

  /** @param {number} requestSeq */
  settle(requestSeq) {
    this.settled.add(requestSeq)
    this.queue.delete(requestSeq)
  }

  /** @param {any} event */
  #read(event) {
    const data = event.data
    switch (event.type) {
      case 'turn/start':
        this.openTurn = data.turn
        break
      case 'turn/end':
        this.openTurn = null
        break
      case 'request/header': {
        const config = data?.header?.config
        if (typeof config?.provider === 'string' && typeof config?.model === 'string') this.route = { provider: config.provider, model: config.model }
        break
      }
      case 'compaction/start':
        this.openCompaction = event.seq
        break
      case 'compaction/end': {
        this.openCompaction = undefined
        const tag = tagOf(data)
        if (tag !== undefined) this.settle(tag)
        break
      }
      case 'session/end-seed':
        // A start left open by an earlier life of the session (a crash mid-bracket) is stale
        // after a restore or fork: DSH's own compaction treats it the same way.
        this.openCompaction = undefined
        break
      case 'user/message': {
        const tag = tagOf(data?.source)
        if (tag !== undefined) this.settle(tag)
        break
      }
      case 'tool/code-dispatch': {
        if (data?.name !== this.summaryTool || data.isError) break
        const result = parseResult(data.content)
        if (result?.pending !== true || typeof result.requestSeq !== 'number') break
        const targets = blockIdsOrNone(data.arguments)
        const summary = data.arguments?.summary
        if (targets.length === 0 || typeof summary !== 'string') break
        this.enqueue({ requestSeq: result.requestSeq, targets, summary, route: this.route })
        break
      }
    }
  }
}
