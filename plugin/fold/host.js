/**
 * @module plugin/fold/host
 * The `RewindHost` over a real DSH `Session`: what the addon's `rewind` calls back.
 * `commit` is the one synchronous step of a fold: answer `changed` while another producer holds
 * DSH's compaction lock, re-check the region (`planMatches` on a fresh snapshot, unless the log
 * has not grown since the first one), append the replacement; nothing can interleave with it.
 */
import { createUserMessage } from '@deepseek-ai/dsh-llm'

import { addon } from '../shared/addon.js'
import { liveCompaction } from '../shared/compaction-lock.js'
import { nodesTokens } from '../shared/meter.js'
import { REWIND_REPORT_SOURCE, eventLog, surfaceSnapshot } from '../shared/surface.js'

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
 * @param {{callId?: string, meter?: import('../shared/meter.js').TokenMeter, hint?: (markId: number) => string}} [options]
 *   the rewind call's id (its assistant message ends the region); DSH's token meter, when
 *   mounted: the region and the report are priced in its tokens (the shrink check and
 *   `tokensFreed` use them), and the commit logs DSH's shadow price (`compaction/prune`) right
 *   before the replacement, so the meter's O(1) projection follows the fold; `hint` gives the
 *   line appended to the report at the commit (the recall hint: outside the shrink check and
 *   `tokensFreed`, so it can never fail a fold)
 * @returns {import('../../index.js').RewindHost}
 */
export function sessionHost(session, summarize, options = {}) {
  const { meter } = options
  /** The log length at the last snapshot: while it stands, the surface has not moved. */
  let seen = -1
  return {
    snapshot: (anchor) => {
      seen = session.seq
      return surfaceSnapshot(session, { ...options, anchor })
    },
    summarize: meter
      ? async (region, attempt) => {
          const reply = await summarize(region, attempt)
          const text = typeof reply === 'string' ? reply : reply?.text
          if (typeof text !== 'string' || !text.trim()) return reply
          const tokens = {
            region: nodesTokens(meter, session, eventLog(session), region.seqs),
            report: meter.estimateMessage(reportMessage(text, region.markId)),
          }
          return typeof reply === 'string' ? { text, tokens } : { ...reply, tokens }
        }
      : summarize,
    commit: (plan) => {
      // Another producer's compaction opened during the fold holds DSH's compaction lock: the
      // surface inside its bracket is its to replace (the fold is CHANGED; a retry waits).
      if (liveCompaction(session) !== undefined) return 'changed'
      // The log is append-only: if nothing was appended since the snapshot the region was
      // selected on, the surface is the same and so is the region. Else re-select and compare.
      if (session.seq !== seen && !addon.planMatches(plan, surfaceSnapshot(session, { ...options, anchor: plan.anchor }))) return 'changed'
      const seqs = Array.from(plan.seqs)
      if (meter) {
        // DSH's shadow-price protocol: the metering event right before a replace prices the
        // replaced range, so the token meter's projection subtracts it (else it keeps counting
        // the folded tokens). `compaction/prune` is DSH's own event for a replace that is not a
        // compaction transaction; it must be followed at once by the replacement.
        session.append('compaction/prune', {
          shadowedRange: { start: plan.start, end: plan.end },
          shadowedSeqs: seqs,
          shadowedTokenCount: nodesTokens(meter, session, eventLog(session), seqs),
        })
      }
      session.append('user/message', reportMessage(plan.report + (options.hint?.(plan.markId) ?? ''), plan.markId), {
        surfaceOp: { op: 'replace', start: plan.start, end: plan.end },
        sourceEventSeqs: seqs,
      })
      return 'committed'
    },
  }
}
