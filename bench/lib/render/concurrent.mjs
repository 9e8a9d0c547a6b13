/**
 * @module bench/lib/render/concurrent
 * Figure 4 (bench/concurrent.mjs): 32 sessions marking at once against one at a time (the store's
 * group commit). Its row of the Targets table, and its section's table.
 */
import { fmtX } from '../stats.mjs'
import { missedBy, verdict } from './verdict.mjs'

/**
 * Figure 4's target row: concurrent marks at ≥ 5× the one-at-a-time rate.
 * @param {any} C the concurrent section's result
 * @returns {string[][]}
 */
export function concurrentTargets(C) {
  return [
    [
      '4. 32 sessions marking concurrently',
      '≥ 5× the one-at-a-time rate',
      `${fmtX(C.ratio)} (${C.concurrent.median.toFixed(0)} vs ${C.serial.median.toFixed(0)} marks/s)`,
      C.ratio >= 5 ? verdict(true) : missedBy(5 / C.ratio),
    ],
  ]
}

/**
 * Figure 4's section.
 * @param {any} C the concurrent section's result
 * @returns {string[]} Markdown lines
 */
export function concurrentSection(C) {
  const L = []
  L.push('## 4. Concurrent marks (group commit)', '')
  L.push(`${C.sessions} sessions × ${C.perSession} marks, fresh store per trial, real disk; ${C.trials} trial(s) each way, alternating.`, '')
  L.push('| one at a time | 32 sessions concurrently | ratio |', '|---|---|---|')
  L.push(`| ${C.serial.median.toFixed(0)} marks/s [${C.serial.p10.toFixed(0)}–${C.serial.p90.toFixed(0)}] | ${C.concurrent.median.toFixed(0)} marks/s [${C.concurrent.p10.toFixed(0)}–${C.concurrent.p90.toFixed(0)}] | ${fmtX(C.ratio)} |`, '')
  return L
}
