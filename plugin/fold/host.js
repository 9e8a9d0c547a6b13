/**
 * @module plugin/fold/host
 * The fold's host over a real DSH `Session`: what the rewind service hands the addon, and what
 * the addon calls back. The path of a rewind is top-down — the tool and its service
 * (`./rewind.js`) → `foldHost` here (waits out DSH's compaction lock, brings the session's mirror
 * in step) → the session mirror (`../shared/mirror.js`) → the addon's `rewind`, which selects the
 * region off the mirror and calls back `summarize` and `commit` on the host made here.
 *
 * - `mirror` is the session's mirror, brought in step (its log index known) when the host is
 *   made: the addon reads off it the mark's report wherever the log holds it (a fold committed
 *   before its stamp was lost is repaired, never folded again) or else the region, so no
 *   snapshot crosses and nothing is called back; `current` names the rewind
 *   call's assistant message (the region ends before it). `snapshot` brings the mirror back in
 *   step and hands it over, for a fold that waited for its mark.
 * - `summarize` asks the summarizer; when the host has DSH's token meter (`metered`) it adds the
 *   prices the shrink check and `tokensFreed` compare: the region's from the mirror, the
 *   report's from the meter (through the mirror).
 * - `commit` is the one synchronous step of a fold: answer `changed` while another producer holds
 *   DSH's compaction lock, re-check the region on the mirror (only if the log grew since the
 *   selection), then append the replacement — after DSH's shadow price when a
 *   meter is mounted. Nothing can interleave with it.
 * - `repaired` gives the numbers of a fold the addon repaired (committed before a crash, stamped
 *   now) from its report on the mirror: the report's own chars and tokens freed, without its frame
 *   and recall hint, as the commit counted them; `committed` says whether this host committed.
 */
import { createUserMessage } from '@deepseek-ai/dsh-llm'

import { addon } from '../shared/addon.js'
import { liveCompaction, mirrorOf, priceMessage, withLog } from '../shared/mirror.js'
import { REWIND_REPORT_SOURCE, eventLog } from '../shared/session.js'
import { reportBody } from './words.js'

/**
 * The report's message: a `user/message` whose source names the fold's mark, so a later
 * rewind can recognise a report committed before a crash and never fold it again.
 * @param {string} report @param {number} markId
 */
export function reportMessage(report, markId) {
  return createUserMessage({ content: [{ type: 'text', text: report }], source: { ...REWIND_REPORT_SOURCE, markId } })
}

/**
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @param {import('../../index.js').RewindHost['summarize']} summarize
 * @param {{callId?: string, frame?: (markId: number) => string, hint?: (markId: number) => string, metered?: boolean}} [options] the
 *   rewind call's id (its assistant message ends the region); `frame` gives the text put above the
 *   report at the commit (what the report is: `reportFrame` of `./rewind.js`) and `hint` the line
 *   appended to it (the recall hint) — both outside the shrink check and `tokensFreed`, so they can
 *   never fail a fold; `metered`: the host has DSH's token meter — the fold is priced in tokens and
 *   the commit logs DSH's shadow price
 * @returns {import('../../index.js').RewindHost & {committed: boolean, repaired: (markId: number) => {reportChars: number, tokensFreed: number}}}
 */
export function sessionHost(session, summarize, options = {}) {
  // With its log index: a report of the mark that a compaction replaced is found there.
  const kept = withLog(session)
  const current = options.callId === undefined ? undefined : kept.openers.get(options.callId)
  const metered = options.metered === true
  /** The log length when the region was selected: while it stands, the surface has not moved. */
  let seen = session.seq
  /** Whether this host appended the replacement (else the fold was repaired: already committed). */
  let committed = false
  /** @type {import('../../index.js').RewindHost['summarize']} the summarizer's reply, with the token prices */
  const priced = async (region, attempt) => {
    const reply = await summarize(region, attempt)
    const text = typeof reply === 'string' ? reply : reply?.text
    if (typeof text !== 'string' || !text.trim()) return reply
    const folded = mirrorOf(session).native.price(region.seqs).tokens
    const report = priceMessage(reportMessage(text, region.markId)).tokens
    if (folded == null || report === undefined) return reply
    const tokens = { region: folded, report }
    return typeof reply === 'string' ? { text, tokens } : { ...reply, tokens }
  }
  return {
    mirror: kept.native,
    current,
    get committed() {
      return committed
    },
    repaired: (/** @type {number} */ markId) => {
      // The committed report is its frame, the report and the recall hint; the fold's numbers
      // count the report alone (as the commit did), so the repaired result equals the original.
      const mirror = withLog(session).native
      const found = mirror.reportOf(markId, 0)
      if (!found) return { reportChars: 0, tokensFreed: 0 }
      const event = eventLog(session)[found.seq]
      const text = (event.data?.content ?? []).map((/** @type {any} */ b) => (b?.type === 'text' ? b.text : '')).join('')
      const body = reportBody(text)
      // Priced as the commit priced them: the folded nodes, and the report alone.
      const folded = mirror.price(Uint32Array.from(event.sourceEventSeqs ?? [])).tokens
      const alone = priceMessage(reportMessage(body, markId)).tokens
      const tokensFreed = folded != null && alone !== undefined ? Math.max(0, folded - alone) : (found.tokensFreed ?? 0)
      return { reportChars: body.length, tokensFreed }
    },
    snapshot: () => {
      const mirror = withLog(session).native
      seen = session.seq
      return mirror
    },
    summarize: metered ? priced : summarize,
    commit: (plan) => {
      // Another producer's compaction opened during the fold holds DSH's compaction lock: the
      // surface inside its bracket is its to replace (the fold is CHANGED; a retry waits).
      if (liveCompaction(session) !== undefined) return 'changed'
      // The log is append-only: if nothing was appended since the selection, the surface is the
      // same and so is the region. Else select again, on the mirror brought in step, and compare.
      if (session.seq !== seen && !addon.planMatches(plan, mirrorOf(session).native, current)) return 'changed'
      const seqs = Array.from(plan.seqs)
      const shadowedTokenCount = metered ? mirrorOf(session).native.price(plan.seqs).tokens : undefined
      if (shadowedTokenCount != null) {
        // DSH's shadow-price protocol: the metering event right before a replace prices the
        // replaced range, so the token meter's projection subtracts it (else it keeps counting
        // the folded tokens). `compaction/prune` is DSH's own event for a replace that is not a
        // compaction transaction; it must be followed at once by the replacement.
        session.append('compaction/prune', { shadowedRange: { start: plan.start, end: plan.end }, shadowedSeqs: seqs, shadowedTokenCount })
      }
      const text = (options.frame?.(plan.markId) ?? '') + plan.report + (options.hint?.(plan.markId) ?? '')
      session.append('user/message', reportMessage(text, plan.markId), {
        surfaceOp: { op: 'replace', start: plan.start, end: plan.end },
        sourceEventSeqs: seqs,
      })
      committed = true
      return 'committed'
    },
  }
}

/**
 * The fold's host for `session`, once no other producer's compaction holds the session: while
 * a `compaction/start` of DSH's lock is live its replacement is being written over the surface,
 * and a fold now would replace messages inside that bracket. Waits for its end, watching the
 * session's events through `ctx`'s `session/event`, at most `timeoutMs` (then the coded
 * `COMPACTION_BUSY`); an abort rejects with the signal's reason, as `fetch` does.
 * @param {any} ctx a cordis context that sees the session's events
 * @param {any} session
 * @param {import('../../index.js').RewindHost['summarize']} summarize
 * @param {Parameters<typeof sessionHost>[2] & {timeoutMs: number, signal?: AbortSignal}} options
 * @returns {Promise<ReturnType<typeof sessionHost>>}
 */
export async function foldHost(ctx, session, summarize, { timeoutMs, signal, ...options }) {
  await compactionReleased(ctx, session, timeoutMs, signal)
  return sessionHost(session, summarize, options)
}

/**
 * Resolves once no compaction holds `session`'s lock (at once when none does).
 * @param {any} ctx @param {any} session @param {number} timeoutMs @param {AbortSignal} [signal]
 * @returns {Promise<void>}
 */
function compactionReleased(ctx, session, timeoutMs, signal) {
  const held = liveCompaction(session)
  if (held === undefined) return Promise.resolve()
  if (signal?.aborted) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    /** @type {() => void} */
    let stopListening = () => {}
    const finish = (/** @type {unknown} */ error) => {
      clearTimeout(timer)
      stopListening()
      signal?.removeEventListener('abort', onAbort)
      if (error === undefined) resolve()
      else reject(error)
    }
    const onAbort = () => finish(signal?.reason)
    const timer = setTimeout(() => {
      const start = liveCompaction(session)
      const error = Object.assign(
        new Error(
          `another producer's compaction of this session (compaction/start at seq ${start ?? held}) held DSH's compaction lock for ${timeoutMs} ms; the rewind did not run: nothing was written and the mark is still active`,
        ),
        { name: 'FoldError', code: 'COMPACTION_BUSY' },
      )
      finish(error)
    }, timeoutMs)
    signal?.addEventListener('abort', onAbort, { once: true })
    const dispose = ctx.on('session/event', (/** @type {any} */ s) => {
      if ((s === session || s?.id === session.id) && liveCompaction(session) === undefined) finish(undefined)
    })
    stopListening = typeof dispose === 'function' ? dispose : () => {}
  })
}
