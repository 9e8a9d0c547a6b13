/**
 * @module bench/lib/render/compaction
 * Figure 11 (bench/compaction.mjs): dsh-fold/compaction against compaction-basic on the same
 * sessions. Its rows of the Targets table, and its section: the comparison per session and
 * backend, where each compaction's time goes, and the train of thought.
 */
import { missedBy, verdict } from './verdict.mjs'

/** `k` of `t` as a percentage with one decimal, `none` when there were none. @param {number} k @param {number} t @param {string} none */
const share = (k, t, none) => (t ? `${((100 * k) / t).toFixed(1)}%` : none)

/**
 * Figure 11's target rows: time per compaction (and the backend's own share), model calls, one
 * pass, facts kept, verbatim text kept and found by recall.
 * @param {any} CP the compaction section's result
 * @returns {string[][]}
 */
export function compactionTargets(CP) {
  /** @type {string[][]} */
  const rows = []
  const pct = (/** @type {number} */ k, /** @type {number} */ t) => share(k, t, 'n/a')
  const ours = CP.runs.filter((/** @type {any} */ r) => r.backend === 'fold')
  const big = ours.find((/** @type {any} */ r) => r.window >= 200_000)
  if (big) rows.push([`11. compaction on a ~${Math.round((big.window * 0.8) / 1000)}k-token surface (measure + plan + summary + 4 appends)`, '≤ 5 ms p50', `${big.ms.median.toFixed(1)} ms p50 [${big.ms.p10.toFixed(1)}–${big.ms.p90.toFixed(1)}]`, big.ms.median <= 5 ? verdict(true) : missedBy(big.ms.median / 5)])
  // The same compactions without the DSH parts they call (appends and their listeners, the meter, model info).
  if (big?.split) rows.push([`11. the backend's own share of it (without DSH's appends ${big.split.append.median.toFixed(1)} ms and meter ${big.split.meter.median.toFixed(1)} ms)`, '≤ 5 ms p50', `${big.split.own.median.toFixed(1)} ms p50 [${big.split.own.p10.toFixed(1)}–${big.split.own.p90.toFixed(1)}]`, big.split.own.median <= 5 ? verdict(true) : missedBy(big.split.own.median / 5)])
  const sum = (/** @type {(r: any) => number} */ f) => ours.reduce((n, r) => n + f(r), 0)
  rows.push(['11. model calls per compaction', '0', String(sum((r) => r.modelCalls)), sum((r) => r.modelCalls) === 0 ? verdict(true) : verdict(false)])
  const events = sum((r) => r.pressureEvents)
  const one = sum((r) => r.onePass)
  rows.push(['11. pressure events relieved in one pass', '≥ 95%', `${one} / ${events} (${pct(one, events)})`, events && one / events >= 0.95 ? verdict(true) : verdict(false)])
  for (const k of ['paths', 'commands', 'errors']) {
    const kept = sum((r) => r.facts[k].kept)
    const total = sum((r) => r.facts[k].total)
    rows.push([`11. ${k} of the compacted ranges kept`, '≥ 95%', `${kept} / ${total} (${pct(kept, total)})`, total && kept / total >= 0.95 ? verdict(true) : verdict(false)])
  }
  const vk = sum((r) => r.verbatim.kept)
  const vt = sum((r) => r.verbatim.total)
  rows.push(['11. user messages and model-written summaries kept verbatim', '100%', `${vk} / ${vt}`, vk === vt ? verdict(true) : verdict(false)])
  const rf = sum((r) => r.recall.found)
  const rt = sum((r) => r.recall.tried)
  rows.push(['11. of them (and sampled facts) found again by recall', '100%', `${rf} / ${rt} (${pct(rf, rt)})`, rf === rt ? verdict(true) : verdict(false)])
  return rows
}

/**
 * Figure 11's section.
 * @param {any} C the compaction section's result
 * @returns {string[]} Markdown lines
 */
export function compactionSection(C) {
  const train = C.runs.filter((/** @type {any} */ r) => r.train)
  return [...compactionComparison(C), ...compactionTimeSplit(C), ...(train.length ? trainOfThought(train) : [])]
}

/** The section's opening and each run: pressure, passes, time, model calls, facts kept, recall, cuts, tokens. @param {any} C */
function compactionComparison(C) {
  const pct = (/** @type {number} */ k, /** @type {number} */ t) => share(k, t, '—')
  const L = ['## 11. Compaction: dsh-fold/compaction vs compaction-basic', '']
  L.push('Sessions made from the recorded trajectory corpus (one turn per segment; checkpoint marks, finished explorations and blocks placed as an agent places them), run through a real AgentLoop + TokenMeter + SessionStore; the adapter reports the context window shown, so pressure triggers at basic\'s default `thresholdRatio` 0.8. Method: bench/compaction.mjs.', '')
  L.push('| session | window | backend | pressure events | one pass | compactions | ms p50 [p10–p90] | model calls | paths kept | commands kept | error lines kept | user + model-written kept | found by recall | cut inside an active exploration | cut inside the block in progress | summary tokens p50 | summarizer call sent p50 |')
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  for (const r of C.runs) {
    const f = r.facts
    L.push(
      `| ${r.tokens / 1000}k tokens (${r.turns} turns) | ${r.window / 1000}k | ${r.backend === 'fold' ? 'dsh-fold' : 'basic'} | ${r.pressureEvents} | ${pct(r.onePass, r.pressureEvents)} | ${r.compactions} | ${r.ms.median?.toFixed(1)} [${r.ms.p10?.toFixed(1)}–${r.ms.p90?.toFixed(1)}] | ${r.modelCalls} | ${pct(f.paths.kept, f.paths.total)} | ${pct(f.commands.kept, f.commands.total)} | ${pct(f.errors.kept, f.errors.total)} | ${r.verbatim.kept} / ${r.verbatim.total} | ${pct(r.recall.found, r.recall.tried)} | ${r.splits.exploration} | ${r.splits.block} | ${r.summaryTokens.median ?? '—'} | ${r.summaryRequestTokens.median ?? '—'} |`,
    )
  }
  L.push('', 'basic\'s times exclude its model call (the scripted summary answers at once); a real summarizer call replays the range (the last column) and takes seconds.', '')
  return L
}

/** Where each compaction's time goes: the backend's own work and the DSH parts it calls. @param {any} C */
function compactionTimeSplit(C) {
  const L = []
  L.push('Where each compaction\'s time goes (p50 of the same compactions): the backend\'s own work, and the DSH parts it calls — the four appends with every `session/event` listener they run (persistence, projections, the meter\'s fold, invariant checks), the token meter (`measure`, `estimateMessage`), model info. dsh-fold also reads each new work message once after its step (per-step cost, last column), outside any compaction.', '')
  L.push('| session | window | backend | total ms p50 | own ms p50 | appends ms p50 | meter ms p50 | model info ms p50 | per-step preparation ms p50 [p90] |')
  L.push('|---|---|---|---|---|---|---|---|---|')
  for (const r of C.runs.filter((/** @type {any} */ r) => r.split)) {
    const x = (/** @type {any} */ s) => s.median?.toFixed(2) ?? '—'
    L.push(`| ${r.tokens / 1000}k tokens | ${r.window / 1000}k | ${r.backend === 'fold' ? 'dsh-fold' : 'basic'} | ${x(r.ms)} | ${x(r.split.own)} | ${x(r.split.append)} | ${x(r.split.meter)} | ${x(r.split.modelInfo)} | ${r.warmMs ? `${x(r.warmMs)} [${r.warmMs.p90.toFixed(2)}]` : '—'} |`)
  }
  return L
}

/** What the checkpoint carries of the model's train of thought, per run that measured it. @param {any[]} train */
function trainOfThought(train) {
  const pct = (/** @type {number} */ k, /** @type {number} */ t) => share(k, t, '—')
  const L = []
  L.push('', 'The train of thought (dsh-fold; `__test__/oracles/train-of-thought.mjs`, with the model\'s recorded next steps as the oracle): its latest text before the cut carried; the names it wrote in the range and writes again within its next 6 messages, in the context after the compaction, and of those the kept tail does not show, in the checkpoint; the checkpoint\'s own part over the range\'s new work (median over ranges of work), and the whole checkpoint over the whole range (median).', '')
  L.push('| session | window | compactions | latest text carried | names present | beyond the tail | own part / new work p50 | checkpoint / range p50 |')
  L.push('|---|---|---|---|---|---|---|---|')
  for (const r of train) {
    const t = r.train
    L.push(`| ${r.tokens / 1000}k tokens | ${r.window / 1000}k | ${t.compactions} | ${t.intent.carried} / ${t.intent.total} | ${t.names.present} / ${t.names.total} | ${t.beyondTail.present} / ${t.beyondTail.total} | ${pct(t.ownRatio, 1)} | ${pct(t.ratio, 1)} |`)
  }
  return L
}
