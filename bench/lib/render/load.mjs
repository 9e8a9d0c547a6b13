/**
 * @module bench/lib/render/load
 * Figure 5 (bench/load.mjs): the addon's load time and RSS in a host-like process, and the RSS of
 * a process after many folds. Its row of the Targets table (RSS bounded), and its section: the
 * load steps' table and the RSS-over-cycles table.
 */
import { verdict } from './verdict.mjs'

/**
 * Figure 5's target row: the RSS of a host after many folds, bounded (none when the run did not
 * measure cycles).
 * @param {any} LD the load section's result
 * @returns {string[][]}
 */
export function loadTargets(LD) {
  if (!LD.cycles?.['cycles-fold']) return []
  const f = LD.cycles['cycles-fold']
  const st = LD.cycles['cycles-stamp']
  return [
    [
      `5. RSS of a host after ${f.cycles} folds (mark + rewind; mark + stamp)`,
      'bounded, reported',
      `${f.rssEndMiB.median.toFixed(1)} MiB (${f.growthMiB.median >= 0 ? '+' : ''}${f.growthMiB.median.toFixed(1)} MiB after cycle 100); ${st.rssEndMiB.median.toFixed(1)} MiB (${st.growthMiB.median >= 0 ? '+' : ''}${st.growthMiB.median.toFixed(1)} MiB)`,
      Math.max(f.growthMiB.median, st.growthMiB.median) < 8 ? verdict(true) : verdict(false),
    ],
  ]
}

/**
 * Figure 5's section.
 * @param {any} LD the load section's result
 * @returns {string[]} Markdown lines
 */
export function loadSection(LD) {
  return [...addonLoadSteps(LD), ...(LD.cycles?.['cycles-fold'] ? rssOverCycles(LD.cycles) : [])]
}

/** Each step of loading the addon (and, instead, the plugin bundle): time and RSS added. @param {any} LD */
function addonLoadSteps(LD) {
  const L = []
  const a = LD.addon
  const ms = (/** @type {any} */ s) => `${s.median.toFixed(2)} ms [${s.p10.toFixed(2)}–${s.p90.toFixed(2)}]`
  const kib = (/** @type {any} */ s) => `${s.median.toFixed(0)} KiB [${s.p10.toFixed(0)}–${s.p90.toFixed(0)}]`
  L.push('## 5. Addon load time and RSS in a host process', '')
  L.push(`${LD.runs} fresh processes per mode, each with the DSH libraries already loaded (base RSS ${a.rssBaseMiB.median.toFixed(0)} MiB). Binary: ${(LD.binaryBytes / 1024).toFixed(0)} KiB.`, '')
  L.push('| step | time | RSS added (since before the require) |', '|---|---|---|')
  L.push(`| \`require\` the addon (loader + dlopen) | ${ms(a.requireMs)} | ${kib(a.rssRequireKiB)} |`)
  L.push(`| first sync call | ${ms(a.firstSyncMs)} | |`)
  L.push(`| first async call (starts the async runtime; a durable mark on tmpfs) | ${ms(a.firstAsyncMs)} | ${kib(a.rssAsyncKiB)} |`)
  L.push(`| import the whole plugin bundle instead (plugin/index.js) | ${ms(LD.plugin.importMs)} | ${kib(LD.plugin.rssImportKiB)} |`)
  L.push('')
  return L
}

/** The RSS of processes that marked and folded many times. @param {any} cycles the load result's `cycles` */
function rssOverCycles(cycles) {
  const L = []
  const mib = (/** @type {any} */ s) => `${s.median.toFixed(1)} MiB [${s.p10.toFixed(1)}–${s.p90.toFixed(1)}]`
  L.push(`RSS of a process that marked and folded ${cycles['cycles-fold'].cycles} times (fresh processes, ${cycles['cycles-fold'].runs} each; tmpfs store, four sessions in turn, 64 marks per session kept):`, '')
  L.push('| cycles | RSS after 100 | RSS at the end | growth | per cycle |', '|---|---|---|---|---|')
  for (const [mode, label] of [['cycles-stamp', 'mark + stamp (`completeFold`: a fold\'s store side)'], ['cycles-fold', 'mark + `rewind` (JS host, instant summarizer)']]) {
    const c = cycles[mode]
    L.push(`| ${label} | ${mib(c.rssWarmMiB)} | ${mib(c.rssEndMiB)} | ${c.growthMiB.median >= 0 ? '+' : ''}${c.growthMiB.median.toFixed(1)} MiB | ${c.perCycleMs.median.toFixed(2)} ms |`)
  }
  L.push('')
  return L
}
