// @ts-check
/**
 * @module bin/fold
 * `dsh-fold fold FILE [--anchor N | --store PATH] [--lang en|zh] [--json]`: a dry run of a fold
 * over a session log persisted by DSH. The log is read as the host reads it (bin/cli.mjs
 * `readLog`: a torn tail up to the last complete record, with a warning), replayed into a real
 * Session, and the region is selected from the session's mirror exactly as the rewind tool
 * selects it; the extractive report (the plugin's default budget) is built and graded against
 * the region's paths, commands and error lines (bin/report-facts.mjs, independent of the
 * report's code). Writes nothing.
 *
 * The mark: `--anchor N` (a log length); else the session's latest mark in `--store` (default
 * `$DSH_HOME/storages/checkpoint.json`); else the latest checkpoint call the log records
 * (`checkpointInLog`). A mark the log shows folded is dry-run on the log before its fold. When
 * nothing is left to fold, the refusal says why from what follows the mark (`nothingToFold`).
 * Refusals: NO_CHECKPOINT and EMPTY_REGION (1); a bad `--anchor` (64); a missing store given
 * by `--store` (66).
 */
import { existsSync } from 'node:fs'

import { addon } from '../plugin/shared/addon.js'
import { checkpointResultId } from '../plugin/fold/words.js'
import { defaultStore, dsh, fail, print, readLog, replay, storeError } from './cli.mjs'

/** @type {import('./cli.mjs').Command} */
export const command = {
  usage: `Usage: dsh-fold fold FILE [--anchor N | --store PATH] [--lang en|zh] [--json]
  Dry-run a fold over a session log persisted by DSH (session.jsonl.zstd, session.jsonl, or
  their folder): what would be folded from the session's latest mark, the chars saved, the
  extractive report (the plugin's default budget) and how many of the region's paths,
  commands and error lines it keeps. The mark is --anchor N (a log length), else the session's
  latest mark in --store (default $DSH_HOME/storages/checkpoint.json), else the latest
  checkpoint call recorded in the log itself. A torn tail (what a crash leaves) is read up to
  the last complete record, with a warning. Writes nothing.`,
  argHint: 'session.jsonl.zstd, session.jsonl, or their folder',
  run: fold,
}

/** The largest anchor the engine takes (a u32 log length; 0xFFFF_FFFF is its "none"). */
const MAX_ANCHOR = 0xffff_fffe

/** @param {import('./cli.mjs').Opts} opts */
async function fold(opts) {
  const file = opts._[1]
  const { mirrorOf, regionMessages } = await dsh('fold')
  const { header, events, warning } = await readLog(file, 'fold')
  let anchor
  let markId = null
  /** @type {'anchor' | 'store' | 'log'} */
  let markFrom = 'anchor'
  /** @type {string[]} */
  const notes = []
  let replayed = events
  if (opts.anchor !== undefined) {
    // Decimal digits only: Number() would take '' as 0 (a fold from the log's start), '1e1', '0x10'.
    anchor = /^\d+$/.test(String(opts.anchor)) ? Number(opts.anchor) : NaN
    if (!(anchor <= MAX_ANCHOR)) fail(`--anchor must be an integer from 0 to ${MAX_ANCHOR}`, 64)
  } else {
    const store = /** @type {string} */ (opts.store ?? defaultStore())
    const mark = existsSync(store) ? await addon.latestMark(store, header.id).catch(storeError) : null
    if (opts.store !== undefined && !existsSync(store)) fail(`no checkpoint store at ${store}`, 66)
    if (opts.store !== undefined && !mark) fail(`NO_CHECKPOINT: session ${header.id} has no mark in ${store}; pass --anchor N to try a log length`, 1)
    if (mark) {
      markFrom = 'store'
      // As `rewind` does: the latest mark already folded leaves nothing to fold.
      if (mark.foldedAt !== null && !checkpointInLog(events)?.foldedAt) {
        fail(`EMPTY_REGION: checkpoint mark ${mark.id} of session ${header.id} was already folded; pass --anchor ${mark.logLength} to dry-run it anyway`, 1)
      }
      anchor = mark.logLength
      markId = mark.id
    } else {
      const found = checkpointInLog(events)
      const where = existsSync(store) ? `no mark of session ${header.id} in ${store}` : `no checkpoint store at ${store}`
      if (!found) fail(`NO_CHECKPOINT: ${where} and no checkpoint call in the log; pass --store PATH or --anchor N`, 1)
      markFrom = 'log'
      notes.push(`${where}; using the log's latest checkpoint call: mark ${found.id} (log length ${found.logLength}) from its result at seq ${found.seq}`)
      anchor = found.logLength
      markId = found.id
    }
    // A mark the log shows folded: dry-run the fold as it stood, on the log before its commit.
    const inLog = checkpointInLog(events)
    if (inLog && inLog.id === markId && inLog.logLength === anchor && inLog.foldedAt !== null) {
      // The commit is the report, with DSH's shadow-price event right before it when a meter was mounted.
      const cut = events[inLog.foldedAt - 1]?.type === 'compaction/prune' ? inLog.foldedAt - 1 : inLog.foldedAt
      notes.push(`mark ${markId} was folded at seq ${inLog.foldedAt} in this log: dry-running the fold on the log before it (seq 0..${cut - 1})`)
      replayed = events.slice(0, cut)
    }
  }
  const session = await replay(header, replayed, file, 'fold')
  let region
  try {
    // The session's mirror, described once from the replayed log: no snapshot crosses.
    region = addon.selectRegion(mirrorOf(session).native, anchor)
  } catch (e) {
    const why = /** @type {any} */ (e).code === 'EMPTY_REGION' ? nothingToFold(session, { anchor, markId, markFrom, torn: warning !== null }) : null
    fail(`${/** @type {any} */ (e).code}: ${why ?? /** @type {Error} */ (e).message}`, 1)
  }
  const messages = regionMessages(session, region.seqs)
  let report
  try {
    // The plugin's budget: the addon's default, a function of the region's size.
    report = addon.extractiveReport(JSON.stringify(messages), { language: opts.lang ?? 'en' })
  } catch (e) {
    fail(`${/** @type {any} */ (e).code}: ${/** @type {Error} */ (e).message}`, 1)
  }
  // Graded independently of the report's code (bin/report-facts.mjs).
  const { regionFacts, keptCounts } = await import('./report-facts.mjs')
  const retention = keptCounts(report, regionFacts(messages))
  const out = {
    sessionId: header.id,
    markId,
    markFrom,
    anchor,
    foldedNodes: region.foldedNodes,
    start: region.start,
    end: region.end,
    foldedChars: region.foldedChars,
    reportChars: report.length,
    charsSaved: region.foldedChars - report.length,
    reportRatio: region.foldedChars > 0 ? report.length / region.foldedChars : 0,
    retention,
    report,
    ...(notes.length ? { notes } : {}),
  }
  if (opts.json) return print(out, true)
  const kept = (/** @type {{kept: number, total: number}} */ k) => `${k.kept}/${k.total}`
  for (const note of notes) console.log(note)
  console.log(`session ${header.id}: ${replayed.length} events, ${session.surface.nodes.length} surface nodes; anchor ${anchor}${markId ? ` (mark ${markId})` : ''}`)
  console.log(`would fold ${out.foldedNodes} nodes (seq ${out.start}..${out.end}, ${out.foldedChars} chars) into a ${out.reportChars}-char report (${Math.round(100 * out.reportRatio)}%): ${out.charsSaved} chars saved (dry run: nothing written)`)
  console.log(`the report keeps paths ${kept(retention.paths)}, commands ${kept(retention.commands)}, error lines ${kept(retention.errors)} of the region's\n`)
  console.log(report)
}



/**
 * The latest checkpoint call recorded in a log: the last successful tool result the checkpoint
 * tool rendered (`Checkpoint N set…`, either language; or, as earlier versions rendered it, the
 * value itself, `{"id": N, "logLength": M}`), and where (if anywhere) the log holds that mark's
 * fold. The log keeps only the rendered text, so the mark's log length is where the tool ran:
 * the result's own seq when nothing but log-only events came between its call and it (the mark is
 * taken while the tool runs, right before its result), else just after the call's `tool/call`
 * event (parallel calls answered first: the earliest it can be).
 * @param {any[]} events
 * @returns {{id: number, logLength: number, seq: number, foldedAt: number | null} | null}
 */
function checkpointInLog(events) {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]
    if (e.type !== 'tool/result') continue
    for (const block of e.data?.message?.content ?? []) {
      if (block?.type !== 'tool-result' || block.isError) continue
      const text = (block.content ?? []).filter((/** @type {any} */ c) => c?.type === 'text').map((/** @type {any} */ c) => c.text).join('')
      const mark = markOfResult(text, events, e, block.toolCallId)
      if (!mark) continue
      // Its fold, if the log holds it: the rewind report naming the mark, appended after it.
      const report = events.find((x) => x.seq > e.seq && x.type === 'user/message' && x.data?.source?.plugin === 'rewind' && x.data?.source?.markId === mark.id)
      return { ...mark, seq: e.seq, foldedAt: report ? report.seq : null }
    }
  }
  return null
}

/**
 * Why a dry run found nothing to fold, said from what the log holds after the mark (the
 * addon's wording speaks of the rewind call, which a dry run does not have); null when
 * nothing on the surface follows the mark (the addon's "no surface nodes after the checkpoint
 * mark" says it).
 * @param {any} session the replayed session
 * @param {{anchor: number, markId: number | null, markFrom: 'anchor' | 'store' | 'log', torn: boolean}} mark
 * @returns {string | null}
 */
function nothingToFold(session, { anchor, markId, markFrom, torn }) {
  const events = session.events
  const after = session.surface.nodes.filter((/** @type {number} */ seq) => seq >= anchor)
  if (after.length === 0) return null
  const contentOf = (/** @type {number} */ seq) => events[seq].data?.message?.content ?? []
  /** Call id → the seq of the step after the mark that made it. @type {Map<string, number>} */
  const stepOf = new Map()
  for (const seq of after) {
    if (events[seq].type !== 'assistant/message') continue
    for (const b of contentOf(seq)) if (b?.type === 'tool-call') stepOf.set(b.id, seq)
  }
  /** Step seq → how many of its calls have a result on the surface. @type {Map<number, number>} */
  const resultsOf = new Map()
  /** @type {Set<string>} */
  const whys = new Set()
  /** What follows the mark, in order: a sentence, or a step's seq (told once its results are counted). @type {Array<string | number>} */
  const held = []
  for (const seq of after) {
    const e = events[seq]
    if (e.type === 'tool/result') {
      const ids = contentOf(seq).map((/** @type {any} */ b) => b?.toolCallId)
      const step = ids.map((/** @type {string} */ id) => stepOf.get(id)).find((s) => s !== undefined)
      if (step !== undefined) {
        resultsOf.set(step, (resultsOf.get(step) ?? 0) + ids.length)
        continue // told with its step
      }
      const text = contentOf(seq).flatMap((/** @type {any} */ b) => b?.content ?? []).map((/** @type {any} */ c) => c?.text ?? '').join('')
      if (/^\{"id":\d+,"logLength":\d+\}$/.test(text.trim()) || checkpointResultId(text) !== undefined) {
        whys.add("the checkpoint's call and result stay visible")
        held.push(`the checkpoint call's own result (seq ${seq})`)
      } else {
        whys.add('a result stays with its call, which stands before the mark')
        held.push(`a tool result (seq ${seq})`)
      }
    } else if (e.type === 'assistant/message') {
      held.push(seq)
    } else held.push(`a ${e.type} event (seq ${seq})`)
  }
  const told = held.map((seq) => {
    if (typeof seq === 'string') return seq
    const calls = contentOf(seq).filter((/** @type {any} */ b) => b?.type === 'tool-call').length
    if (calls === 0) {
      whys.add("the model's last answer stays")
      return `the model's answer at seq ${seq}`
    }
    const open = calls - (resultsOf.get(seq) ?? 0)
    if (open <= 0) return `the model's step at seq ${seq} with its results`
    whys.add('a step still waiting for its results is never folded')
    const calling = calls === 1 ? 'whose tool call has' : open === calls ? `whose ${calls} tool calls have` : `${open} of whose ${calls} tool calls ${open === 1 ? 'has' : 'have'}`
    return `the model's step at seq ${seq}, ${calling} no result`
  })
  const last = events.length - 1
  const part = torn ? `the readable part (seq 0..${last}; the torn tail after it is dropped)` : `the log (seq 0..${last})`
  const mark = markId === null ? `log length ${anchor} (--anchor)` : `checkpoint mark ${markId} (log length ${anchor}, ${markFrom === 'log' ? "read from the log's checkpoint call" : 'from the store'})`
  const list = told.length === 1 ? told[0] : `${told.slice(0, -1).join(', ')} and ${told.at(-1)}`
  return `nothing to fold after ${mark}: ${part} holds after the mark only ${list}; ${[...whys].join(', and ')}, so nothing is left to fold`
}

/**
 * The mark a checkpoint result names, and its log length, or null for any other result.
 * @param {string} text @param {any[]} events @param {any} result the `tool/result` event @param {string} callId
 */
function markOfResult(text, events, result, callId) {
  let value
  try {
    value = JSON.parse(text)
  } catch {
    // Not the legacy value: the rendered result.
  }
  const keys = value && typeof value === 'object' ? Object.keys(value).sort().join(',') : ''
  if (keys === 'id,logLength' && Number.isInteger(value.id) && Number.isInteger(value.logLength)) return { id: value.id, logLength: value.logLength }
  const id = checkpointResultId(text)
  if (id === undefined) return null
  let call = -1
  for (let j = result.seq - 1; j >= 0 && call < 0; j--) {
    const x = events[j]
    if ((x.type === 'tool/call' && x.data?.callId === callId) || (x.type === 'assistant/message' && x.data?.message?.content?.some((/** @type {any} */ b) => b?.type === 'tool-call' && b.id === callId))) call = j
  }
  const between = events.slice(call + 1, result.seq)
  const quiet = between.every((x) => !['user/message', 'assistant/message', 'tool/result'].includes(x.type))
  return { id, logLength: quiet || call < 0 ? result.seq : call + 1 }
}

