/**
 * @module plugin/compaction/report-facts
 * What each message of the agent's work contributes to the extractive report, read once as the
 * session grows, so that a compaction writes its condensed tool work without reading the range's
 * text again (no JSON of the range, no scan of its outputs at the moment the context is full).
 *
 * Contract: `reportFactsOf(session, seq)` is the addon's `ReportFacts` of the message event `seq`
 * derives (`session.deriveEventMessage`, the message a region's report reads), or `null` for an
 * event that derives none; computed on first use and kept per session, with its `factChars`
 * (what the policy sizes a run's report by: `knownFactChars`, for the facts already read). `warmReportFacts` computes
 * the ones a later compaction may need — the work nodes on the surface — and is called after each
 * step, outside any append. `forgetReportFacts` drops the facts of nodes a compaction replaced
 * (they are never on the surface again), so what is kept is bounded by the surface.
 * `extractiveReportOf(facts, options)` over a run's facts writes the same bytes as
 * `extractiveReport(JSON.stringify(messages), options)` over its messages (the core's one
 * extraction, `crates/fold-core/src/report/facts.rs`).
 */
import { addon } from '../shared/addon.js'
import { eventLog } from '../shared/surface.js'

/**
 * @typedef {{facts: import('../../index.js').ReportFacts, factChars: number}} Read a message's
 *   report facts, and the chars a report takes to copy what it names (read once: a getter call
 *   crosses into the addon)
 */

/** @type {WeakMap<object, Map<number, Read | null>>} */
const cache = new WeakMap()

/** @param {any} session */
function factsOf(session) {
  let facts = cache.get(session)
  if (!facts) cache.set(session, (facts = new Map()))
  return facts
}

/**
 * The message event `seq` derives, read for the report, or `null` when it derives none.
 * @param {any} session @param {number} seq
 * @returns {Read | null}
 */
function read(session, seq) {
  const facts = factsOf(session)
  let f = facts.get(seq)
  if (f === undefined) {
    const message = session.deriveEventMessage(eventLog(session)[seq])
    const handle = message ? addon.reportFacts(JSON.stringify(message)) : null
    f = handle ? { facts: handle, factChars: handle.factChars } : null
    facts.set(seq, f)
  }
  return f
}

/**
 * The report facts of the message event `seq` derives, or `null` when it derives none.
 * @param {any} session @param {number} seq
 */
export const reportFactsOf = (session, seq) => read(session, seq)?.facts ?? null

/**
 * The fact chars of `seq`'s message when its facts were read already (`undefined` otherwise:
 * the snapshot does not read messages), 0 for an event that derives no message.
 * @param {any} session @param {number} seq
 */
export function knownFactChars(session, seq) {
  const f = cache.get(session)?.get(seq)
  return f === undefined ? undefined : (f?.factChars ?? 0)
}

/**
 * Computes the report facts of the nodes of `seqs` not yet read.
 * @param {any} session @param {Iterable<number>} seqs
 */
export function warmReportFacts(session, seqs) {
  const facts = factsOf(session)
  for (const seq of seqs) if (!facts.has(seq)) read(session, seq)
}

/**
 * Drops the facts of replaced nodes.
 * @param {any} session @param {Iterable<number>} seqs
 */
export function forgetReportFacts(session, seqs) {
  const facts = cache.get(session)
  if (facts) for (const seq of seqs) facts.delete(seq)
}
