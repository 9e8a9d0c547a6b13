/**
 * @module bench/report
 * Figure 6, the extractive report on recorded agent trajectories (__test__/fixtures/trajectories,
 * SOURCES.md there): what a report keeps and how long it is, ours beside the head+tail baseline,
 * in English and Chinese; and how fast it is written.
 *
 * Quality (deterministic; the same in --quick): for every segment, the facts of the region as
 * bin/report-facts.mjs reads them (paths the agent named, commands' first lines, error lines of
 * the outputs — independently of the report's code) and the share of each a text keeps
 * verbatim, and the text's length over the region's model-visible chars. Texts:
 * - `ours`: `extractiveReport(json, {language})`, no `maxChars` — the default budget (1000 + a
 *   quarter of the region) the plugin and `dsh-fold fold` use;
 * - `ours-4000`: the same with the former fixed cap, `maxChars: 4000`;
 * - `head+tail`: DSH's tool-result-pruner over the region (every output over 8192 code points
 *   keeps head 4096 + tail 1024), i.e. what the model would see without a fold.
 * Means are over segments, also per agent (`byAgent`). Checks (also in --quick): ours keeps >= 95% of each kind, is <= 25%
 * of the region on average, zh keeps exactly en's facts, and the same input gives the same bytes.
 *
 * Throughput (not in --quick, which runs it once and reports nothing): regions of ~1 MB and
 * ~8 MB made of the segments repeated (call ids made unique), `extractiveReport` with the
 * default budget timed after warm-ups, after a GC and a pause, median over iterations; MB/s is
 * the JSON's bytes over the median wall time, and over the median process CPU time (the call is
 * synchronous on one thread, so its CPU time is its work; on a busy shared machine the wall time
 * also counts the waits for a core). The ratio of the 8 MB time to the 1 MB time per byte
 * shows whether time is linear. The baseline's JS (`JSON.parse` + head+tail) is timed alike.
 */
import { addon } from '../plugin/shared/addon.js'
import { headTail, loadSegments, mean, missing, regionFacts, retention } from '../bin/report-facts.mjs'
import { check, emit, load, log, parseArgs } from './lib/common.mjs'
import { now, quiesce, summarize, us } from './lib/stats.mjs'

const { quick, out } = parseArgs()

const LANGUAGES = /** @type {const} */ (['en', 'zh'])
const KINDS = /** @type {const} */ (['paths', 'commands', 'errors'])
const SIZES = quick
  ? [{ mb: 1, iters: 1, warmup: 0 }]
  : [
      { mb: 1, iters: 21, warmup: 3 },
      { mb: 8, iters: 9, warmup: 2 },
    ]

const loadStart = load()
const segments = loadSegments()
check(segments.length > 0, 'the trajectory corpus is present')

// ---- quality ---------------------------------------------------------------------------------

/** @type {Record<string, {name: string, agent: string, model: string, visible: number, counts: Record<string, number>, texts: Record<string, {ratio: number, paths: number | null, commands: number | null, errors: number | null}>}>} */
const perSegment = {}
for (const s of segments) {
  const json = JSON.stringify(s.messages)
  const facts = regionFacts(s.messages)
  /** @type {Record<string, string>} */
  const texts = {}
  for (const language of LANGUAGES) {
    texts[`ours/${language}`] = addon.extractiveReport(json, { language })
    texts[`ours-4000/${language}`] = addon.extractiveReport(json, { language, maxChars: 4000 })
    check(addon.extractiveReport(json, { language }) === texts[`ours/${language}`], `${s.name}: deterministic`)
  }
  texts['head+tail'] = headTail(s.messages)
  check(JSON.stringify(missing(texts['ours/zh'], facts)) === JSON.stringify(missing(texts['ours/en'], facts)), `${s.name}: zh keeps en's facts`)
  perSegment[s.name] = {
    name: s.name,
    agent: s.agent,
    model: s.model,
    visible: facts.visible,
    counts: { paths: facts.paths.length, commands: facts.commands.length, errors: facts.errors.length },
    texts: Object.fromEntries(Object.entries(texts).map(([k, t]) => [k, { ratio: t.length / facts.visible, ...retention(t, facts) }])),
  }
}
const VARIANTS = ['ours/en', 'ours/zh', 'ours-4000/en', 'ours-4000/zh', 'head+tail']
const rows = Object.values(perSegment)
/** Means of each variant over some segments. @param {typeof rows} of */
const meansOf = (of) =>
  Object.fromEntries(
    VARIANTS.map((v) => [
      v,
      {
        ratio: mean(of.map((r) => r.texts[v].ratio)),
        maxRatio: Math.max(...of.map((r) => r.texts[v].ratio)),
        ...Object.fromEntries(KINDS.map((k) => [k, mean(of.map((r) => r.texts[v][k]))])),
      },
    ]),
  )
const means = meansOf(rows)
// The same per agent: a mean over all segments can hide one agent's shape of output.
const byAgent = [...new Set(rows.map((r) => r.agent))].map((agent) => {
  const of = rows.filter((r) => r.agent === agent)
  return { agent, segments: of.length, models: [...new Set(of.map((r) => r.model))], means: meansOf(of) }
})
for (const language of LANGUAGES) {
  const m = means[`ours/${language}`]
  for (const k of KINDS) check(m[k] >= 0.95, `ours/${language} keeps ${(100 * m[k]).toFixed(1)}% of ${k} (>= 95%)`)
  check(m.ratio <= 0.25, `ours/${language} is ${(100 * m.ratio).toFixed(1)}% of the region (<= 25%)`)
}
log(`report quality: ${VARIANTS.map((v) => `${v} ratio ${means[v].ratio.toFixed(3)} P ${means[v].paths.toFixed(3)} C ${means[v].commands.toFixed(3)} E ${means[v].errors.toFixed(3)}`).join('; ')}`)

// ---- throughput ------------------------------------------------------------------------------

/** Whole segments, repeated as needed, until the JSON is `mb` MB; call ids made unique per copy. @param {number} mb */
function bigRegion(mb) {
  /** @type {any[]} */
  const all = []
  let bytes = 2
  for (let k = 0; bytes < mb * 1e6; k++) {
    for (const s of segments) {
      if (bytes >= mb * 1e6) break
      for (const m of s.messages) {
        const content = m.content.map((/** @type {any} */ b) =>
          b.type === 'tool-call' ? { ...b, id: `k${k}-${b.id}` } : b.type === 'tool-result' ? { ...b, toolCallId: `k${k}-${b.toolCallId}` } : b,
        )
        const copy = { ...m, content }
        all.push(copy)
        bytes += Buffer.byteLength(JSON.stringify(copy)) + 1
      }
    }
  }
  return JSON.stringify(all)
}

const speed = []
for (const size of SIZES) {
  const json = bigRegion(size.mb)
  const bytes = Buffer.byteLength(json)
  /** @type {{ours: number[], baseline: number[], oursCpu: number[], baselineCpu: number[]}} */
  const t = { ours: [], baseline: [], oursCpu: [], baselineCpu: [] }
  let reportChars = 0
  for (let i = 0; i < size.warmup + size.iters; i++) {
    for (const v of i % 2 ? ['baseline', 'ours'] : ['ours', 'baseline']) {
      await quiesce(quick ? 0 : 40)
      const cpu = process.cpuUsage()
      const a = now()
      if (v === 'ours') reportChars = addon.extractiveReport(json).length
      else headTail(JSON.parse(json))
      const b = now()
      const c = process.cpuUsage(cpu)
      if (i >= size.warmup) {
        t[/** @type {'ours' | 'baseline'} */ (v)].push(us(a, b))
        t[/** @type {'oursCpu' | 'baselineCpu'} */ (`${v}Cpu`)].push(c.user + c.system)
      }
    }
  }
  const ours = summarize(t.ours)
  const baseline = summarize(t.baseline)
  const oursCpu = summarize(t.oursCpu)
  const baselineCpu = summarize(t.baselineCpu)
  speed.push({
    mb: size.mb,
    bytes,
    reportChars,
    iterations: size.iters,
    ours,
    baseline,
    oursCpu,
    baselineCpu,
    oursMBs: bytes / ours.median,
    baselineMBs: bytes / baseline.median,
    oursCpuMBs: bytes / oursCpu.median,
    baselineCpuMBs: bytes / baselineCpu.median,
  })
  log(
    `report speed: ${(bytes / 1e6).toFixed(1)} MB region → ${reportChars}-char report in ${(ours.median / 1e3).toFixed(1)} ms wall, ${(oursCpu.median / 1e3).toFixed(1)} ms CPU ` +
      `(${(bytes / ours.median).toFixed(1)} / ${(bytes / oursCpu.median).toFixed(1)} MB/s); head+tail ${(bytes / baseline.median).toFixed(1)} / ${(bytes / baselineCpu.median).toFixed(1)} MB/s`,
  )
}
const linear = speed.length > 1 ? speed[1].oursCpu.median / speed[1].bytes / (speed[0].oursCpu.median / speed[0].bytes) : NaN

emit(out, {
  segments: rows.length,
  corpusBytes: segments.reduce((n, s) => n + Buffer.byteLength(JSON.stringify(s.messages)), 0),
  variants: VARIANTS,
  means,
  byAgent,
  perSegment: rows,
  speed: quick ? [] : speed,
  linear: quick ? NaN : linear,
  load: { start: loadStart, end: load() },
})
