/**
 * @module bench/lib/render/block
 * Figures 7–8 (bench/block.mjs, bench/lib/block-commit.mjs): block mode — planning a summary on
 * the session's mirror (7) and the plugin's whole commit against DSH's own four appends (8). Their
 * rows of the Targets table, and a section each.
 */
import { fmtSpread, fmtUs, fmtX } from '../stats.mjs'
import { missedBy, verdict } from './verdict.mjs'

/**
 * Figure 7's target rows: a warm plan per session shape, and the flood of ids.
 * @param {any} B the block section's result
 * @returns {string[][]}
 */
export function blockPlanTargets(B) {
  /** @type {string[][]} */
  const rows = []
  for (const s of B.shapes) {
    const m = s.warm.total.median
    rows.push([
      `7. plan a block summary on the session mirror, ${s.events} events, ${s.name} (warm)`,
      `≤ ${fmtUs(B.target.medianUs)} median`,
      `${fmtSpread(s.warm.total)}; first call ${fmtUs(s.first.total.median)}`,
      m <= B.target.medianUs ? verdict(true) : missedBy(m / B.target.medianUs),
    ])
  }
  if (B.flood) {
    rows.push([
      `7. a flood of ids: block_summary with ${B.flood.ids.toLocaleString('en')} ids (${B.flood.events} events)`,
      `≤ ${B.floodTarget.medianMs} ms to answer`,
      `${B.flood.plan.median.toFixed(3)} ms by planBlockSummary, ${B.flood.args.median.toFixed(3)} ms by the tool's argument check (a plan at the 256-id cap ${B.flood.atCap.median.toFixed(3)} ms)`,
      Math.max(B.flood.plan.median, B.flood.args.median) <= B.floodTarget.medianMs ? verdict(true) : missedBy(Math.max(B.flood.plan.median, B.flood.args.median) / B.floodTarget.medianMs),
    ])
  }
  return rows
}

/**
 * Figure 8's target rows: the commit against DSH's own four appends, per session shape.
 * @param {any} B the block section's result
 * @returns {string[][]}
 */
export function blockCommitTargets(B) {
  /** @type {string[][]} */
  const rows = []
  for (const c of B.commit ?? []) {
    rows.push([
      `8. commit a block summary, ${c.name} (plan + price + 4 appends + the mirror's catch-up)`,
      `≤ ${fmtX(B.commitTarget.ratio)} DSH's own 4 appends`,
      `${fmtX(c.ratioOfMedians)} (${fmtUs(c.ours.median)} vs ${fmtUs(c.dsh.median)}); first call ${fmtUs(c.first.median)}`,
      c.ratioOfMedians <= B.commitTarget.ratio ? verdict(true) : missedBy(c.ratioOfMedians / B.commitTarget.ratio),
    ])
  }
  return rows
}

/**
 * Figure 7's section: warm and first plans against a plain JS pass over the surface.
 * @param {any} B the block section's result
 * @returns {string[]} Markdown lines
 */
export function blockPlanSection(B) {
  const L = []
  L.push('## 7. Planning a block summary', '')
  L.push(
    'One synchronous call on the JS thread: the session\'s mirror (in step: the plugin checks it) handed to `planBlockSummary`, which reads the block surface off it and applies the rules — no snapshot crosses — for the normal case: the current block closed from inside its last program, right after that result landed. ' +
      '**warm**: the mirror described the session as it was appended; **first call**: a fresh replay the plugin never saw (the first summary after a restore or fork: its mirror is described inside the call; the very first in the process shown apart). ' +
      'Baseline interleaved with the warm plans: one plain JS pass reading each surface node\'s event (the least any JS-side planner does). Method: bench/block.mjs.',
    '',
  )
  L.push('| session | surface nodes | ids | replaced | warm: total | mirror check | plan | first call | first in process | JS pass over the surface | warm / JS pass |')
  L.push('|---|---|---|---|---|---|---|---|---|---|---|')
  for (const s of B.shapes) {
    L.push(
      `| ${s.events} events, ${s.name} | ${s.surfaceNodes} (${s.summaries} summaries) | ${s.ids} | ${s.replaced} | ${fmtSpread(s.warm.total)} | ${fmtSpread(s.warm.snapshot)} | ${fmtSpread(s.warm.plan)} | ${fmtSpread(s.first.total)} | ${fmtUs(s.first.firstInProcess)} | ` +
        `${fmtSpread(s.baseline.jsPass)} | ${fmtX(s.warm.total.median / s.baseline.jsPass.median)} |`,
    )
  }
  L.push('', `Repetitions: ${B.shapes.map((/** @type {any} */ s) => `${s.warm.n} warm, ${s.first.n} first calls`).join('; ')}.`, '')
  return L
}

/**
 * Figure 8's section (the run measured commits: `B.commit`), with where sections 7–8 were
 * measured when they were merged in from their own run.
 * @param {any} B the block section's result
 * @returns {string[]} Markdown lines
 */
export function blockCommitSection(B) {
  const L = []
  L.push('## 8. Committing a block summary', '')
  L.push(
    'The plugin\'s whole commit when a queued summary lands (`planBlockSummary` on the session\'s mirror, whose plan carries the replaced nodes\' price as the mirror kept it with DSH\'s real TokenMeter; then `writeCommit`: the checkpoint message, the four appends; then the mirror catching up with those four events, what its listener does in a host) against the four events DSH\'s compaction appends for a summary it already has (`compaction/start`, `compaction/summary`, the replacement `user/message`, `compaction/end`; range, price and message prepared untimed, as compaction-basic prepares them), on fresh replays of the same 10k-event session, alternating which goes first. ' +
      '**first call**: the same commit on a session the plugin never saw. Both leave the same surface (checked). Method: bench/lib/block-commit.mjs.',
    '',
  )
  L.push('| session | plugin commit | DSH\'s 4 appends | ratio of medians | paired median ratio | first call |')
  L.push('|---|---|---|---|---|---|')
  for (const c of B.commit) {
    L.push(`| ${c.name} | ${fmtSpread(c.ours)} | ${fmtSpread(c.dsh)} | ${fmtX(c.ratioOfMedians)} | ${fmtX(c.ratio)} | ${fmtUs(c.first.median)} (first in process ${fmtUs(c.first.firstInProcess)}) |`)
  }
  L.push('', `Repetitions: ${B.commit.map((/** @type {any} */ c) => `${c.n} paired, ${c.first.n} first calls`).join('; ')}.`, '')
  if (B.load) L.push(`Load average (1 min) while sections 7–8 ran: ${B.load.start} → ${B.load.end}.`, '')
  if (B.run) L.push(`Sections 7–8 were measured in their own run (\`node --expose-gc bench/block.mjs\`, commit ${B.run.commit}, ${B.run.date}) and merged into this report's JSON as \`results.block\`; the other sections are from the run described at the top.`, '')
  return L
}
