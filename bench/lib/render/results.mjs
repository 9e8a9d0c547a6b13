/**
 * @module bench/lib/render/results
 * RESULTS.md from a run's JSON (`{meta, results}`): the run's header, the Targets table (each
 * figure's rows, from its own module), each figure's section in figure order, then NOTES.md.
 * Nothing here measures or reads anything but NOTES.md: the same JSON renders the same bytes.
 * One module per figure under bench/lib/render/ holds its target rows and its section.
 */
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'

import { BENCH_DIR } from '../common.mjs'
import { binaryTargets } from './binary.mjs'
import { blockCommitSection, blockCommitTargets, blockPlanSection, blockPlanTargets } from './block.mjs'
import { compactionSection, compactionTargets } from './compaction.mjs'
import { concurrentSection, concurrentTargets } from './concurrent.mjs'
import { foldSection, foldTargets } from './fold.mjs'
import { hasActiveSection, hasActiveTargets } from './has-active.mjs'
import { runHeader } from './header.mjs'
import { loadSection, loadTargets } from './load.mjs'
import { markSection, markTargets } from './mark.mjs'
import { mirrorSection, mirrorTargets } from './mirror.mjs'
import { reportSection, reportTargets } from './report.mjs'

/**
 * @param {any} meta the run's `meta` (bench/run.mjs `machine()`)
 * @param {Record<string, any>} R the sections' results, by section name, in the order they ran
 * @returns {string} RESULTS.md's text
 */
export function renderResults(meta, R) {
  const B = R.block
  const L = [
    ...runHeader(meta, R),
    ...targetsTable(meta, targetRows(meta, R)),
    ...(R.fold ? foldSection(R.fold) : []),
    ...(R['has-active'] ? hasActiveSection(R['has-active']) : []),
    ...(R.mark ? markSection(R.mark) : []),
    ...(R.concurrent ? concurrentSection(R.concurrent) : []),
    ...(R.load ? loadSection(R.load) : []),
    ...(R.report ? reportSection(R.report) : []),
    ...(B ? blockPlanSection(B) : []),
    ...(B?.commit ? blockCommitSection(B) : []),
    ...(R.mirror ? mirrorSection(R.mirror) : []),
    ...(R.compaction ? [...compactionSection(R.compaction), ''] : []),
    ...(meta.quick ? [] : notes()),
  ]
  return L.join('\n') + '\n'
}

/**
 * Every figure's target rows, in the Targets table's order (figure order, but the load's RSS and
 * the binary's size last).
 * @param {any} meta @param {Record<string, any>} R
 * @returns {string[][]}
 */
function targetRows(meta, R) {
  const B = R.block
  return [
    ...(R.fold ? foldTargets(R.fold) : []),
    ...(R['has-active'] ? hasActiveTargets(R['has-active']) : []),
    ...(R.mark ? markTargets(R.mark) : []),
    ...(R.concurrent ? concurrentTargets(R.concurrent) : []),
    ...(R.report ? reportTargets(R.report) : []),
    ...(B ? [...blockPlanTargets(B), ...blockCommitTargets(B)] : []),
    ...(R.mirror ? mirrorTargets(R.mirror) : []),
    ...(R.compaction ? compactionTargets(R.compaction) : []),
    ...(R.load ? loadTargets(R.load) : []),
    ...binaryTargets(meta),
  ]
}

/** The Targets table (nothing when no figure has a target). @param {any} meta @param {string[][]} rows */
function targetsTable(meta, rows) {
  if (!rows.length) return []
  const L = ['## Targets', '', '| figure | target | measured | |', '|---|---|---|---|']
  for (const r of rows) L.push(`| ${r.join(' | ')} |`)
  L.push('')
  if (!meta.quick) L.push('Why the misses are where they are, and what bounds each: see [Notes](#notes) below.', '')
  return L
}

/** bench/NOTES.md, the analysis a full run's report ends with. */
function notes() {
  const file = path.join(BENCH_DIR, 'NOTES.md')
  return existsSync(file) ? [readFileSync(file, 'utf8').trim(), ''] : []
}
