/**
 * @module plugin/host
 * The `RewindHost` over a real DSH `Session`: what the addon's `rewind` calls back.
 * `commit` is the one synchronous step of a fold: re-snapshot, re-check the region
 * (`planMatches`), append the replacement; nothing can interleave with it.
 */
import { createUserMessage } from '@deepseek-ai/dsh-llm'

import { addon } from './addon.js'
import { surfaceSnapshot } from './surface.js'

/**
 * The report's message: a `user/message` whose source names the fold's mark, so a later
 * rewind can recognise a report committed before a crash and never fold it again.
 * @param {string} report @param {number} markId
 */
export function reportMessage(report, markId) {
  return createUserMessage({ content: [{ type: 'text', text: report }], source: { kind: 'plugin', plugin: 'rewind', markId } })
}

/**
 * @param {any} session a `@deepseek-ai/dsh-session` Session
 * @param {import('../index.js').RewindHost['summarize']} summarize
 * @param {{callId?: string, hint?: (markId: number) => string}} [options] the rewind call's id (its
 *   assistant message ends the region); `hint` gives the line appended to the report (the recall hint)
 * @returns {import('../index.js').RewindHost}
 */
export function sessionHost(session, summarize, options = {}) {
  return {
    snapshot: () => surfaceSnapshot(session, options),
    summarize,
    commit: (plan) => {
      if (!addon.planMatches(plan, surfaceSnapshot(session, options))) return 'changed'
      session.append('user/message', reportMessage(plan.report + (options.hint?.(plan.markId) ?? ''), plan.markId), {
        surfaceOp: { op: 'replace', start: plan.start, end: plan.end },
        sourceEventSeqs: Array.from(plan.seqs),
      })
      return 'committed'
    },
  }
}
