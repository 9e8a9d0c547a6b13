/**
 * @module bench/lib/render/report
 * Figure 6 (bench/report.mjs): the extractive report on recorded agent trajectories. Its rows of
 * the Targets table (facts kept, size, throughput), and its section: retention per text, per
 * agent, per segment, and the throughput table.
 */
import { fmtSpread, fmtX } from '../stats.mjs'
import { verdict } from './verdict.mjs'

/** A share as a whole percentage, "–" when there was nothing to keep. @param {number | null} x */
const percent = (x) => (x === null ? '–' : `${(100 * x).toFixed(0)}%`)

/**
 * Figure 6's target rows, en then zh, then throughput and linearity.
 * @param {any} RP the report section's result
 * @returns {string[][]}
 */
export function reportTargets(RP) {
  /** @type {string[][]} */
  const rows = []
  const pct = (/** @type {number} */ x) => `${(100 * x).toFixed(1)}%`
  for (const language of ['en', 'zh']) {
    const m = RP.means[`ours/${language}`]
    for (const [k, what] of [['paths', 'paths the agent named'], ['commands', 'commands (first line)'], ['errors', 'error lines']]) {
      rows.push([`6. report keeps ${what} (${language})`, '≥ 95% (mean over segments)', `${pct(m[k])} (head+tail ${pct(RP.means['head+tail'][k])})`, verdict(m[k] >= 0.95)])
    }
    rows.push([`6. report / region, default budget (${language})`, '≤ 25% (mean)', `${pct(m.ratio)} (max ${pct(m.maxRatio)}; head+tail ${pct(RP.means['head+tail'].ratio)})`, verdict(m.ratio <= 0.25)])
  }
  for (const s of RP.speed) {
    rows.push([
      `6. report throughput, ${(s.bytes / 1e6).toFixed(1)} MB region`,
      '≥ 20 MB/s',
      `${s.oursMBs.toFixed(1)} MB/s wall (${fmtSpread(s.ours)}), ${s.oursCpuMBs.toFixed(1)} MB/s CPU time`,
      s.oursMBs >= 20 ? verdict(true) : `${verdict(false)} in wall time${s.oursCpuMBs >= 20 ? ' (met in CPU time)' : ''}`,
    ])
  }
  if (Number.isFinite(RP.linear)) rows.push(['6. report CPU time per byte, 8 MB / 1 MB', 'linear (≈ 1×)', fmtX(RP.linear), verdict(RP.linear <= 1.5)])
  return rows
}

/**
 * Figure 6's section.
 * @param {any} RP the report section's result
 * @returns {string[]} Markdown lines
 */
export function reportSection(RP) {
  return [...retentionByText(RP), ...(RP.byAgent ? retentionByAgent(RP.byAgent) : []), ...retentionBySegment(RP), ...(RP.speed.length ? throughput(RP.speed) : [])]
}

/** The section's opening and the means over segments for each text (ours, ours-4000, head+tail). @param {any} RP */
function retentionByText(RP) {
  const L = []
  L.push('## 6. Extractive report on recorded agent trajectories', '')
  L.push(
    `${RP.segments} segments of public agent runs (__test__/fixtures/trajectories, SOURCES.md; ${(RP.corpusBytes / 1e3).toFixed(0)} KB of region JSON), graded by bin/report-facts.mjs (independent of the report's code): ` +
      'the share of the paths the agent named, the commands it ran (first line) and the error lines of its outputs kept verbatim, and the text over the region\'s model-visible chars; means over segments. ' +
      '**ours**: `extractiveReport` with its default budget (1000 + a quarter of the region; the plugin\'s and `dsh-fold fold`\'s); **ours-4000**: a fixed 4000-char cap; **head+tail**: DSH\'s tool-result-pruner (outputs over 8192 code points keep head 4096 + tail 1024), i.e. no fold.',
    '',
  )
  L.push('| text | paths | commands | error lines | text / region (mean) | max |', '|---|---|---|---|---|---|')
  for (const v of RP.variants) {
    const m = RP.means[v]
    L.push(`| ${v} | ${percent(m.paths)} | ${percent(m.commands)} | ${percent(m.errors)} | ${percent(m.ratio)} | ${percent(m.maxRatio)} |`)
  }
  return L
}

/** The same means per agent. @param {any[]} byAgent the report result's `byAgent` */
function retentionByAgent(byAgent) {
  const L = []
  L.push('', 'Per agent (ours, en; head+tail in brackets):', '')
  L.push('| agent | segments | models | paths | commands | error lines | text / region (mean) |', '|---|---|---|---|---|---|---|')
  for (const a of byAgent) {
    const m = a.means['ours/en']
    const b = a.means['head+tail']
    L.push(`| ${a.agent} | ${a.segments} | ${a.models.join(', ')} | ${percent(m.paths)} (${percent(b.paths)}) | ${percent(m.commands)} (${percent(b.commands)}) | ${percent(m.errors)} (${percent(b.errors)}) | ${percent(m.ratio)} (${percent(b.ratio)}) |`)
  }
  return L
}

/** Each segment's retention and size (ours, en). @param {any} RP */
function retentionBySegment(RP) {
  const L = []
  L.push('', 'Per segment (ours, en):', '')
  L.push('| segment | model | visible chars | paths | commands | error lines | report / region |', '|---|---|---|---|---|---|---|')
  for (const r of RP.perSegment) {
    const t = r.texts['ours/en']
    L.push(`| ${r.name} | ${r.model ?? ''} | ${r.visible} | ${percent(t.paths)} of ${r.counts.paths} | ${percent(t.commands)} of ${r.counts.commands} | ${percent(t.errors)} of ${r.counts.errors} | ${percent(t.ratio)} |`)
  }
  L.push('')
  return L
}

/** The report's speed on ~1 MB and ~8 MB regions, against head+tail's JS. @param {any[]} speed the report result's `speed` */
function throughput(speed) {
  const L = []
  L.push('Throughput, default budget (the segments repeated into one region):', '')
  L.push('| region | report | ours (wall) | ours (CPU) | ours MB/s wall / CPU | head+tail: JSON.parse + prune, JS (wall) | head+tail MB/s wall / CPU |', '|---|---|---|---|---|---|---|')
  for (const s of speed) {
    L.push(
      `| ${(s.bytes / 1e6).toFixed(1)} MB | ${s.reportChars} chars | ${fmtSpread(s.ours)} | ${fmtSpread(s.oursCpu)} | ${s.oursMBs.toFixed(1)} / ${s.oursCpuMBs.toFixed(1)} | ${fmtSpread(s.baseline)} | ${s.baselineMBs.toFixed(1)} / ${s.baselineCpuMBs.toFixed(1)} |`,
    )
  }
  L.push('')
  return L
}
