/**
 * @module plugin/compaction/report-facts
 * What each message of the agent's work contributes to the extractive report, read once as the
 * session grows, so that a compaction writes its condensed tool work without reading the range's
 * text again (no JSON of the range, no scan of its outputs at the moment the context is full).
 *
 * Contract: `reportFactsOf(session, seq)` is the addon's `ReportFacts` of the message event `seq`
 * derives (`session.deriveEventMessage`, the message a region's report reads), or `null` for an
 * event that derives none; computed on first use and kept per session, with its `factChars`
 * (what the policy sizes a run's report by: `knownFactChars`, for the facts already read).
 * `warmReportFacts` reads the work messages (model messages, tool results) appended since its
 * last call and drops the facts of nodes a replacement took off the surface since (a fold, a
 * block summary, a compaction: they are never on the surface again), so what is kept is bounded
 * by the surface; it is called after each step, outside any append, and costs what the new
 * events cost.
 * `extractiveReportOf(facts, options)` over a run's facts writes the same bytes as
 * `extractiveReport(JSON.stringify(messages), options)` over its messages (the core's one
 * extraction, `crates/fold-core/src/report/facts.rs`).
 */
import { addon } from '../shared/addon.js'
import { eventLog } from '../shared/session.js'

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

/** @type {WeakMap<object, number>} how far each session's log was read by `warmReportFacts` */
const warmed = new WeakMap()

const WORK = new Set(['assistant/message', 'tool/result'])

/**
 * Reads the work messages appended since the last call; forgets the nodes replaced since.
 * @param {any} session
 */
export function warmReportFacts(session) {
  const log = eventLog(session)
  const facts = factsOf(session)
  let seq = warmed.get(session) ?? 0
  if (seq > log.length) seq = 0
  // A long stretch (a session restored or forked with its history): only what is still on the
  // surface is read, not what a replacement took off it long ago.
  const surface = log.length - seq > 256 ? new Set(session.surface.nodes) : undefined
  for (; seq < log.length; seq++) {
    const event = log[seq]
    if (event?.surfaceOp?.op === 'replace') for (const s of event.sourceEventSeqs ?? []) facts.delete(s)
    else if (WORK.has(event?.type) && !facts.has(seq) && (surface === undefined || surface.has(seq))) read(session, seq)
  }
  warmed.set(session, log.length)
}
