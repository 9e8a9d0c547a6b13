/**
 * @module plugin/block/log
 * What block mode needs to know about a session, read from its append-only log and nowhere
 * else: the open turn (a compaction bracket belongs to it), the route of the latest model
 * request, and the summary requests still owed a commit. (The durable compaction lock is the
 * session mirror's to answer: `liveCompaction`, plugin/shared/mirror.js.)
 *
 * A request is owed a commit when `block_summary` answered it `pending` — that answer is in
 * the `tool/code-dispatch` event the host logs for the program's sub-call, with the call's
 * arguments — and no commit names its `requestSeq` yet: neither a replacement `user/message`
 * (`source.blockPtc.requestSeq`) nor a `compaction/end` (`blockPtc.requestSeq`, success or
 * logged failure). So a session restored from disk, or forked with `sessions.fork`, finds the
 * requests its previous life left pending without any store beside the log.
 *
 * A deferred request that could not land (stale, protected, unknown by then) is logged as a
 * closed bracket whose `compaction/end` carries the error; it is owed a note to the model until a
 * `user/message` whose source's `blockNotice.requestSeqs` names it is in the log (block mode adds
 * that note to the agent's next step). So a failure is told exactly once, also after a restart.
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

/**
 * The requests a block-mode note to the model reports, or `undefined` when `source` is not one.
 * @param {any} source a `user/message`'s source
 * @returns {number[] | undefined}
 */
export function noticedRequests(source) {
  const seqs = source?.blockNotice?.requestSeqs
  return Array.isArray(seqs) ? seqs.filter((s) => Number.isSafeInteger(s)) : undefined
}

/**
 * @typedef {object} Failure a deferred summary that was logged as failed
 * @property {number} requestSeq
 * @property {string[]} targets the ids it was to close
 * @property {string} error the logged error (`CODE: message`)
 */

export class SessionBlocks {
  /** Events read so far. */
  consumed = 0
  /** @type {number | null} the open turn, or null between turns */
  openTurn = null
  /** @type {{provider: string, model: string} | undefined} */
  route = undefined
  /** @type {Set<number>} requestSeqs a commit or a logged failure already answered */
  settled = new Set()
  /** @type {Map<number, SummaryRequest>} requests owed a commit, in request order */
  queue = new Map()
  /** @type {Map<number, Failure>} failed requests owed a note to the model, in log order */
  untold = new Map()

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
      case 'compaction/end': {
        const tag = tagOf(data)
        if (tag !== undefined) {
          // Only a deferred request is owed a note: an immediate one failed inside the program,
          // which read the error as the call's result.
          const deferred = this.queue.has(tag)
          this.settle(tag)
          if (deferred && typeof data.error === 'string') {
            const closed = Array.isArray(data.blockPtc.closed) ? data.blockPtc.closed.filter((/** @type {unknown} */ id) => typeof id === 'string') : []
            this.untold.set(tag, { requestSeq: tag, targets: closed, error: data.error })
          }
        }
        break
      }
      case 'user/message': {
        const tag = tagOf(data?.source)
        if (tag !== undefined) this.settle(tag)
        for (const seq of noticedRequests(data?.source) ?? []) this.untold.delete(seq)
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
