/**
 * @module bench/load
 * Figure 5, the addon's load time and RSS cost in a host process. Each sample is a fresh
 * Node process (bench/load-child.mjs) that has the DSH libraries loaded already, as a host
 * has; modes `addon` (require the addon, first sync call, first async call) and `plugin`
 * (import the plugin bundle) alternate. Then the RSS of a host that marked and folded 1,000
 * times: fresh processes doing 1,000 mark + stamp cycles (the store side of a fold) and 1,000
 * mark + rewind cycles, RSS after 100 cycles and after 1,000.
 */
import { execFileSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import path from 'node:path'

import { BENCH_DIR, ROOT, check, emit, load, log, parseArgs } from './lib/common.mjs'
import { summarize } from './lib/stats.mjs'

const { quick, out } = parseArgs()
const RUNS = quick ? 2 : 15

/** @type {Record<string, any[]>} */
const samples = { addon: [], plugin: [] }
const result = { quick, load: { start: load() }, runs: RUNS, binaryBytes: 0, addon: /** @type {any} */ ({}), plugin: /** @type {any} */ ({}), cycles: /** @type {Record<string, any>} */ ({}) }
for (let i = 0; i < RUNS; i++) {
  for (const mode of i % 2 ? ['plugin', 'addon'] : ['addon', 'plugin']) {
    const line = execFileSync(process.execPath, ['--expose-gc', path.join(BENCH_DIR, 'load-child.mjs'), mode], { cwd: ROOT, encoding: 'utf8' })
    samples[mode].push(JSON.parse(line.trim().split('\n').at(-1) ?? '{}'))
  }
}
const kb = (/** @type {number} */ b) => b / 1024
const a = samples.addon
check(a.every((s) => s.requireMs > 0 && s.firstAsyncMs > 0), 'every load sample ran')
result.addon = {
  requireMs: summarize(a.map((s) => s.requireMs)),
  firstSyncMs: summarize(a.map((s) => s.firstSyncMs)),
  firstAsyncMs: summarize(a.map((s) => s.firstAsyncMs)),
  rssRequireKiB: summarize(a.map((s) => kb(s.rssAfterRequire - s.rss0))),
  rssAsyncKiB: summarize(a.map((s) => kb(s.rssAfterAsync - s.rss0))),
  rssBaseMiB: summarize(a.map((s) => s.rss0 / 1024 / 1024)),
}
const p = samples.plugin
result.plugin = {
  importMs: summarize(p.map((s) => s.importMs)),
  rssImportKiB: summarize(p.map((s) => kb(s.rssAfterImport - s.rss0))),
}
const CYCLES = quick ? 150 : 1000
const CYCLE_RUNS = quick ? 1 : 3
/** @type {Record<string, any[]>} */
const cycles = { 'cycles-stamp': [], 'cycles-fold': [] }
for (let i = 0; i < CYCLE_RUNS; i++) {
  for (const mode of Object.keys(cycles)) {
    const line = execFileSync(process.execPath, ['--expose-gc', path.join(BENCH_DIR, 'load-child.mjs'), mode, String(CYCLES)], { cwd: ROOT, encoding: 'utf8' })
    cycles[mode].push(JSON.parse(line.trim().split('\n').at(-1) ?? '{}'))
  }
}
const mib = (/** @type {number} */ b) => b / 1048576
result.cycles = Object.fromEntries(
  Object.entries(cycles).map(([mode, runs]) => {
    check(runs.every((r) => r.cycles === CYCLES && r.marksKept <= 64 * 4), `${mode}: every cycle ran, the store stayed pruned`)
    return [
      mode,
      {
        cycles: CYCLES,
        runs: runs.length,
        rssWarmMiB: summarize(runs.map((r) => mib(r.rssWarm))),
        rssEndMiB: summarize(runs.map((r) => mib(r.rssEnd))),
        growthMiB: summarize(runs.map((r) => mib(r.rssEnd - r.rssWarm))),
        perCycleMs: summarize(runs.map((r) => r.cyclesMs / r.cycles)),
      },
    ]
  }),
)
log(
  Object.entries(result.cycles)
    .map(([mode, c]) => `${mode}: RSS ${c.rssWarmMiB.median.toFixed(1)} MiB after 100 → ${c.rssEndMiB.median.toFixed(1)} MiB after ${c.cycles} (${c.growthMiB.median >= 0 ? '+' : ''}${c.growthMiB.median.toFixed(1)} MiB)`)
    .join('; '),
)

const binary = readdirSync(ROOT).find((f) => f.endsWith('.node'))
if (binary) result.binaryBytes = statSync(path.join(ROOT, binary)).size
log(
  `require ${result.addon.requireMs.median.toFixed(2)} ms (+${result.addon.rssRequireKiB.median.toFixed(0)} KiB RSS), ` +
    `first async ${result.addon.firstAsyncMs.median.toFixed(2)} ms (+${result.addon.rssAsyncKiB.median.toFixed(0)} KiB total), ` +
    `plugin import ${result.plugin.importMs.median.toFixed(1)} ms`,
)
result.load.end = load()
emit(out, result)
