/**
 * @module plugin/block/commit
 * Writes a block summary into a session, in DSH's own compaction vocabulary, as four events
 * appended synchronously one after the other (nothing can run between them):
 *
 *   compaction/start    {compactionId, turn, blockPtc}             the durable compaction lock
 *   compaction/summary  {compactionId, summary, shadowedRange,     the replaced range and its
 *                        shadowedSeqs, shadowedTokenCount,         token price (the meter's shadow
 *                        provider, model}                          price for the replace below)
 *   user/message        the summary, surfaceOp replace,            the replacement itself
 *                        source compactCheckpointSource + blockPtc,
 *                        sourceEventSeqs [start, summary, ...shadowed]
 *   compaction/end      {compactionId, turn, blockPtc}             the lock released
 *
 * The invariants this keeps: a `compaction/end` follows every `compaction/start` this module
 * appends, on every path (a failure before the replacement closes the bracket with `error`);
 * once the replacement is appended the summary has landed, and nothing after it turns the
 * result into an error. `blockPtc: {remaining, closed, requestSeq}` on the replacement (and
 * `{closed, requestSeq}` on the bracket) is what later plans and recovery read back.
 *
 * Pricing, from the session's mirror (which priced each node as it was appended): with DSH's
 * token meter, each replaced node costs `estimateMessage` of its derived message — the same
 * number the meter's own surface fold holds for it, so the meter's O(1) context projection and
 * `measure()` stay equal after the replace. Without a meter the price is model-visible
 * characters / 4 and the result says so in `note`.
 */
import { randomUUID } from 'node:crypto'

import { compactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import { errorChain } from '@deepseek-ai/dsh-llm'

import { mirrorOf } from '../shared/mirror.js'
import { wordsOf } from './words.js'

/** Characters per token of the fallback price (DSH's meter uses the same density). */
const CHARS_PER_TOKEN = 4

export const NO_METER_NOTE = {
  en: 'No token meter is mounted in this host: tokensFreed is estimated as model-visible characters / 4.',
  zh: '宿主未挂载 token 计量服务：tokensFreed 按模型可见字符数 / 4 估算。',
}

/**
 * The replacement's text.
 * @param {string} summary @param {string[]} remaining @param {'en' | 'zh'} language
 * @param {string} [hint] appended after the summary, inside the tags (the recall hint, plugin/recall/hint.js)
 */
export function summaryBody(summary, remaining, language = 'en', hint = '') {
  const frame = wordsOf(language).frame
  const ids = remaining.length > 0 ? `${frame.ids}${remaining.join(', ')}\n` : ''
  return `<block-summary>\n${frame.intro}\n${ids}\n${summary}${hint}\n</block-summary>`
}

/**
 * The replacement `user/message`: what `createUserMessage` builds (content, source, role, a fresh
 * id), without its `structuredClone` + deep freeze — `session.append` snapshots and freezes the
 * data it logs anyway, and the clone was a third of a commit's own cost.
 * @param {string} text @param {object} source
 */
function checkpointMessage(text, source) {
  return { content: [{ type: 'text', text }], source, role: 'user', id: randomUUID() }
}

/**
 * The token price of replaced surface nodes: the plan's, as the planner read it off the session's
 * mirror, or asked of the mirror. Without a token meter, model-visible chars / 4.
 * @param {any} session @param {{seqs: ArrayLike<number>, tokens?: number | null, chars?: number | null}} plan
 * @param {boolean} metered whether the host has DSH's token meter
 * @returns {number}
 */
export function priceNodes(session, plan, metered) {
  const { tokens, chars } = plan.chars == null ? mirrorOf(session).native.price(Uint32Array.from(plan.seqs)) : plan
  return metered && tokens != null ? tokens : Math.ceil((chars ?? 0) / CHARS_PER_TOKEN)
}

/**
 * @typedef {object} CommitInput
 * @property {import('../../index.js').BlockCommitPlan} plan the planner's answer
 * @property {string} summary the model's text
 * @property {number} requestSeq
 * @property {{provider: string, model: string} | undefined} route the request that wrote the summary
 * @property {number | null} turn the open turn (null between turns)
 * @property {boolean} metered whether the host has DSH's token meter (else chars / 4)
 * @property {'en' | 'zh'} language
 * @property {(closed: string[]) => string} [hint] the line to append to the summary (the recall hint)
 */

/**
 * @typedef {object} CommitResult
 * @property {number} replaced surface nodes the summary replaced
 * @property {number} tokensFreed their price, before the summary's own cost
 * @property {string[]} [ids] the ids the summary inherited (only when some remain)
 * @property {string} [note] how tokensFreed was priced, when not by DSH's meter
 * @property {{start: number, summary: number, replacement: number, end?: number}} seqs the events written
 */

/**
 * Writes the four events of one summary. Synchronous: call it only from outside a
 * `session/event` listener (an append there throws).
 * @param {any} session
 * @param {CommitInput} input
 * @returns {CommitResult}
 * @throws when an append before the replacement fails; the bracket is closed with the error
 *   first, so the session is left with no open compaction lock and an unchanged surface
 */
export function writeCommit(session, { plan, summary, requestSeq, route, turn, metered, language, hint }) {
  const seqs = Array.from(plan.seqs)
  const shadowedTokenCount = priceNodes(session, plan, metered)
  const remaining = [...plan.remaining]
  const closed = [...plan.closed]
  const compactionId = randomUUID()
  const tag = { closed, requestSeq }
  const message = checkpointMessage(summaryBody(summary, remaining, language, hint?.(closed) ?? ''), { ...compactCheckpointSource(compactionId), blockPtc: { remaining, closed, requestSeq } })
  const start = session.append('compaction/start', { compactionId, turn, blockPtc: tag })
  let replacement
  let summaryEvent
  try {
    summaryEvent = session.append('compaction/summary', {
      compactionId,
      summary: message.content,
      shadowedRange: { start: plan.start, end: plan.end },
      shadowedSeqs: seqs,
      shadowedTokenCount,
      provider: route?.provider ?? 'unknown',
      model: route?.model ?? 'unknown',
    })
    replacement = session.append('user/message', message, {
      surfaceOp: { op: 'replace', start: plan.start, end: plan.end },
      sourceEventSeqs: [start.seq, summaryEvent.seq, ...seqs],
    })
  } catch (error) {
    try {
      session.append('compaction/end', { compactionId, turn, error: errorChain(error), blockPtc: tag })
    } catch {
      // Swallowed so the first failure is the one reported; the start then stays detectable.
    }
    throw error
  }
  let end
  try {
    end = session.append('compaction/end', { compactionId, turn, blockPtc: tag })
  } catch (error) {
    // The replacement landed: the summary is in. Close the lock with the error instead; if
    // even that fails the unmatched start stays detectable, as DSH's own compaction leaves it.
    try {
      end = session.append('compaction/end', { compactionId, turn, error: errorChain(error), blockPtc: tag })
    } catch {
      // Swallowed: the caller's result must still report the summary that landed.
    }
  }
  return {
    replaced: seqs.length,
    tokensFreed: shadowedTokenCount,
    ...(remaining.length > 0 ? { ids: remaining } : {}),
    ...(metered ? {} : { note: NO_METER_NOTE[language] ?? NO_METER_NOTE.en }),
    seqs: { start: start.seq, summary: summaryEvent.seq, replacement: replacement.seq, ...(end ? { end: end.seq } : {}) },
  }
}

/**
 * Logs a deferred summary that could not land (stale, protected, unknown by now): a closed
 * bracket whose end carries the error and the request it answers, so recovery never retries it
 * and the compaction lock is released in the same synchronous step.
 * @param {any} session
 * @param {{requestSeq: number, targets: string[], turn: number | null, error: unknown}} failure
 */
export function writeFailure(session, { requestSeq, targets, turn, error }) {
  const compactionId = randomUUID()
  const tag = { closed: [...targets], requestSeq }
  session.append('compaction/start', { compactionId, turn, blockPtc: tag })
  const code = /** @type {any} */ (error)?.code
  return session.append('compaction/end', { compactionId, turn, error: `${code ? `${code}: ` : ''}${errorChain(error)}`, blockPtc: tag })
}
