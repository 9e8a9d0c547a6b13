/**
 * @module bench/lib/block-commit
 * Block mode, the commit half (issues 11, 23): the plugin's whole commit of a block summary
 * against DSH's own four appends, on the same 10,000-event session. Target: the commit within
 * 1.5× the appends (median over median).
 *
 * - **baseline**: the four events DSH's compaction writes for a summary it already has
 *   (`compaction/start`, `compaction/summary`, the replacement `user/message` with
 *   `compactCheckpointSource`, `compaction/end`: the shapes of `dsh-compaction-basic`'s
 *   `commitCompactionBody`), the range, the price and the message prepared beforehand, as
 *   compaction-basic prepares them before its commit. Only the appends are timed.
 * - **ours**: what the plugin does when a queued summary lands — `planBlockSummary(...)` on the
 *   session's mirror (the plan, with the replaced nodes' price the mirror kept as they were
 *   appended with DSH's real TokenMeter), then `writeCommit` (the checkpoint message, the same
 *   four appends), then the mirror catching up with those four events (what its listener does
 *   in a host). The mirror was in step before (the plugin planned when `block_summary` ran).
 * - **first call**: the same commit on a session the plugin has never seen (the first summary
 *   after a restore or a fork), reported apart.
 *
 * Each repetition replays the recorded session twice (untimed), commits on one with each
 * method, in alternating order; both appends-only paths run on detached sessions (no
 * listeners), so the ratio compares the work itself. Checks (also with `--quick`): both leave
 * the same surface, ours replaces exactly the planned nodes, prices them as DSH's meter does,
 * and leaves every call with its result.
 */
import { Context } from '@deepseek-ai/cordis'
import { compactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { TokenMeter } from '@deepseek-ai/dsh-token-meter'

import { writeCommit } from '../../plugin/block/commit.js'
import { callBlockIds } from '../../plugin/block/args.js'
import { mirrorOf, trackBlockTool, useMeter, withLog } from '../../plugin/shared/mirror.js'
import { check, log } from './common.mjs'
import { now, quiesce, summarize, us } from './stats.mjs'

const ROUTE = { provider: 'deepseek', model: 'deepseek-chat' }
const SUMMARY = 'The tokenizer splits on whitespace and punctuation; src/lexer.rs holds the state machine; cargo test passed 12.'

/** DSH's real token meter, mounted on a cordis Context; the session mirrors price with it. */
async function realMeter() {
  const root = new Context()
  await root.plugin(TokenMeter)
  const service = root.tokenMeter
  useMeter(service)
  trackBlockTool('block_run_code', callBlockIds)
  return { estimateMessage: service.estimateMessage.bind(service) }
}

/** Every call on the surface has its result and every result its call. @param {any} session */
export function protocolValid(session) {
  const open = new Set()
  for (const m of session.deriveMessages()) {
    for (const b of m.content ?? []) {
      if (b.type === 'tool-call') open.add(b.id)
      if (b.type === 'tool-result' && !open.delete(b.toolCallId)) return false
    }
  }
  return open.size === 0
}

/**
 * DSH's own four appends for a prepared summary.
 * @param {any} session @param {{start: number, end: number, seqs: number[]}} range @param {number} tokens @param {any} message
 */
function dshAppends(session, range, tokens, message, compactionId) {
  const start = session.append('compaction/start', { compactionId, turn: null })
  const summary = session.append('compaction/summary', {
    compactionId,
    summary: message.content,
    shadowedRange: { start: range.start, end: range.end },
    shadowedSeqs: range.seqs,
    shadowedTokenCount: tokens,
    ...ROUTE,
  })
  session.append('user/message', message, { surfaceOp: { op: 'replace', start: range.start, end: range.end }, sourceEventSeqs: [start.seq, summary.seq, ...range.seqs] })
  session.append('compaction/end', { compactionId, turn: null })
}

/**
 * The plugin's whole commit of the current block's summary (what `block.js` does when it lands).
 * @param {any} addon @param {any} session @param {{current: string, requestSeq: number}} r
 */
function ourCommit(addon, session, r) {
  const planned = addon.planBlockSummary(session.id, withLog(session).native, [r.current], r.requestSeq)
  if (planned.status !== 'commit') throw new Error(`expected a commit, got ${JSON.stringify(planned)}`)
  const result = writeCommit(session, { plan: planned.plan, summary: SUMMARY, requestSeq: r.requestSeq, route: ROUTE, turn: null, metered: true, language: 'en' })
  // What the mirror's listener does for the four events in a host (this session is detached).
  mirrorOf(session)
  return result
}

/**
 * @param {{ops: any[], current: string, requestSeq: number, expect: {seqs: number[]}}} r a recorded session (`recordBlockSession`)
 * @param {{reps: number, first: number}} reps
 * @param {{addon: any, replay: (ops: any[], name?: string) => any, name: string}} deps
 */
export async function measureCommit(r, reps, { addon, replay, name }) {
  const meter = await realMeter()
  const range = { start: r.expect.seqs[0], end: /** @type {number} */ (r.expect.seqs.at(-1)), seqs: r.expect.seqs }
  const ours = /** @type {number[]} */ ([])
  const base = /** @type {number[]} */ ([])
  const first = /** @type {number[]} */ ([])

  for (let i = 0; i < reps.reps + reps.first; i++) {
    const theirs = replay(r.ops, `commit-dsh-${i}`)
    const mine = replay(r.ops, `commit-ours-${i}`)
    const cold = i >= reps.reps
    if (!cold) withLog(mine) // the plugin planned this session when block_summary ran
    // DSH prepares its message and price before it commits; only its appends are timed.
    const compactionId = `dsh-${i}`
    const message = createUserMessage({ content: [{ type: 'text', text: `<block-summary>\n${SUMMARY}\n</block-summary>` }], source: compactCheckpointSource(compactionId) })
    const tokens = range.seqs.reduce((t, s) => t + meter.estimateMessage(theirs.deriveEventMessage(theirs.log[s])), 0)
    await quiesce(cold ? 20 : 0)

    let result
    const runDsh = () => {
      const t0 = now()
      dshAppends(theirs, range, tokens, message, compactionId)
      return us(t0, now())
    }
    const runOurs = () => {
      const t0 = now()
      result = ourCommit(addon, mine, r)
      return us(t0, now())
    }
    if (cold) first.push(runOurs())
    else if (i % 2 === 0) {
      base.push(runDsh())
      ours.push(runOurs())
    } else {
      ours.push(runOurs())
      base.push(runDsh())
    }

    const committed = /** @type {any} */ (result)
    check(committed.replaced === r.expect.seqs.length, `${name}: the commit replaced the block's ${r.expect.seqs.length} nodes (got ${committed.replaced})`)
    const price = r.expect.seqs.reduce((t, s) => t + meter.estimateMessage(mine.deriveEventMessage(mine.log[s])), 0)
    check(committed.tokensFreed === price, `${name}: tokensFreed is the meter's price of the replaced nodes`)
    check(protocolValid(mine), `${name}: every call on the surface keeps its result after the commit`)
    if (!cold) check(JSON.stringify([...mine.surface.nodes]) === JSON.stringify([...theirs.surface.nodes]), `${name}: the plugin's commit and DSH's appends leave the same surface`)
  }
  const out = {
    name,
    ours: summarize(ours),
    dsh: summarize(base),
    ratio: summarize(ours.map((o, i) => o / base[i])).median,
    ratioOfMedians: summarize(ours).median / summarize(base).median,
    first: { median: summarize(first.length > 1 ? first.slice(1) : first).median, firstInProcess: first[0], n: first.length },
    n: ours.length,
  }
  log(
    `${name}: commit ${out.ours.median.toFixed(1)} µs vs DSH's four appends ${out.dsh.median.toFixed(1)} µs ` +
      `(×${out.ratioOfMedians.toFixed(2)}, paired median ×${out.ratio.toFixed(2)}); first call ${out.first.median.toFixed(0)} µs`,
  )
  return out
}
