/**
 * @module bench/lib/render/mark
 * Figure 3 (bench/mark.mjs): the durable `mark` against the disk floor and the append floor. Its
 * rows of the Targets table, and its section's table.
 */
import { fmtSpread, fmtUs, fmtX } from '../stats.mjs'
import { missedBy, verdict } from './verdict.mjs'

/**
 * Figure 3's target rows: a mark within 1.5× (2× with 10,000 marks stored) of the disk floor.
 * @param {any} M the mark section's result
 * @returns {string[][]}
 */
export function markTargets(M) {
  /** @type {string[][]} */
  const rows = []
  for (const c of M.cases) {
    const target = c.preload ? 2 : 1.5
    const x = c.mark.median / c.rewriteFloor.median
    rows.push([
      `3. durable mark, ${c.marksInStore} marks stored`,
      `≤ ${target}× the disk floor`,
      `${fmtX(x)} (${fmtUs(c.mark.median)} vs ${fmtUs(c.rewriteFloor.median)}; vs the append floor ${fmtX(c.mark.median / c.appendFloor.median)})`,
      x <= target ? verdict(true) : missedBy(x / target),
    ])
  }
  return rows
}

/**
 * Figure 3's section.
 * @param {any} M the mark section's result
 * @returns {string[]} Markdown lines
 */
export function markSection(M) {
  const L = []
  L.push('## 3. Durable `mark` vs the disk floor', '')
  L.push('Real disk directory (bench/tmp/), interleaved with the floors, from JS on the same directory: the **disk floor** writes a one-mark store file atomically (`open(wx)` → write → fsync → close → rename → fsync dir); the **append floor** appends one journal-sized line (`open(a)` → write → fdatasync → close). A mark is a journal append; the journal is folded into the store file once it outgrows it (timed alone: "rewrite"), after the mark that found it due has its answer.', '')
  L.push('| case | marks stored | store file + journal | mark | disk floor | append floor | mark / disk floor | mark / append floor | rewrite of the file | per mark, amortized |', '|---|---|---|---|---|---|---|---|---|---|')
  for (const c of M.cases) {
    L.push(
      `| ${c.name} | ${c.marksInStore} | ${(c.fileBytes / 1024).toFixed(0)} + ${(c.journalBytes / 1024).toFixed(0)} KiB | ${fmtSpread(c.mark)} | ${fmtSpread(c.rewriteFloor)} | ${fmtSpread(c.appendFloor)} | ${fmtX(c.mark.median / c.rewriteFloor.median)} | ${fmtX(c.mark.median / c.appendFloor.median)} | ${c.compaction ? `${fmtSpread(c.compaction)} every ~${c.marksPerRewrite} marks` : '—'} | ${c.amortizedUs ? fmtUs(c.amortizedUs) : '—'} |`,
    )
  }
  L.push('')
  return L
}
