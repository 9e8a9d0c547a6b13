/**
 * @module bench/lib/render/fold
 * Figure 1 (bench/fold.mjs): the whole `rewind` against the baseline and the floor. Its rows of the
 * Targets table, and its section: the main table, the paired ratios, where a warm fold spends its
 * time, and the process CPU time per fold.
 */
import { fmtSpread, fmtUs, fmtX } from '../stats.mjs'
import { missedBy, verdict } from './verdict.mjs'

/** "compacted" or "uncompacted", from a shape's label ("~10k compacted"). @param {any} s */
const shape = (s) => s.label.split(' ')[1]

/**
 * Figure 1's target rows: warm fold vs baseline, warm fold vs the floor, first fold of a resumed
 * session vs baseline.
 * @param {any} F the fold section's result
 * @returns {string[][]}
 */
export function foldTargets(F) {
  /** @type {string[][]} */
  const rows = []
  const at = (/** @type {number} */ n, /** @type {boolean} */ compaction) => F.sizes.find((/** @type {any} */ s) => s.n === n && s.compaction === compaction)
  for (const [n, compaction, target] of /** @type {const} */ ([
    [10_000, true, 3],
    [50_000, true, 10],
    [50_000, false, 5],
  ])) {
    const s = at(n, compaction)
    if (!s) continue
    const base = s.variants.baseline.wall.median
    const x = base / s.variants['ours-warm'].wall.median
    rows.push([
      `1. warm fold vs baseline, ${s.events} events ${shape(s)}`,
      `≥ ${target}× faster`,
      `${fmtX(x)} (${fmtUs(base)} vs ${fmtUs(s.variants['ours-warm'].wall.median)})`,
      x >= target ? verdict(true) : missedBy(target / x),
    ])
  }
  for (const s of F.sizes) {
    // The floor: DSH's own replace append of the same replacement, alone (round 3: the stamp is
    // off the fold's critical path, so no thread hop belongs to it).
    const floor = s.variants.append.wall.median
    const x = s.variants['ours-warm'].wall.median / floor
    rows.push([
      `1. warm fold vs the floor (DSH's replace append alone), ${s.events} events ${shape(s)}`,
      '≤ 1.5× the floor',
      `${fmtX(x)} (${fmtUs(s.variants['ours-warm'].wall.median)} vs ${fmtUs(floor)})`,
      x <= 1.5 ? verdict(true) : missedBy(x / 1.5),
    ])
  }
  for (const s of F.sizes.filter((/** @type {any} */ s) => s.n >= 10_000)) {
    const base = s.variants['baseline-cold'].wall.median
    const x = base / s.variants['ours-cold'].wall.median
    rows.push([
      `1. first fold of a resumed session vs baseline, ${s.events} events ${shape(s)}`,
      '≥ 1.5×',
      `${fmtX(x)} (${fmtUs(base)} vs ${fmtUs(s.variants['ours-cold'].wall.median)}; the session described at its restore in ${fmtUs(s.describe.median)})`,
      x >= 1.5 ? verdict(true) : missedBy(1.5 / x),
    ])
  }
  return rows
}

/**
 * Figure 1's section.
 * @param {any} F the fold section's result
 * @returns {string[]} Markdown lines
 */
export function foldSection(F) {
  return [...foldTable(F), ...foldPairedRatios(F), ...foldTimeSplit(F), ...foldCpuTable(F)]
}

/** The fold times of every variant per session, their ratios, iterations and the round trip. @param {any} F */
function foldTable(F) {
  const L = []
  const rt = F.roundTrip
  L.push('## 1. Fold overhead', '')
  L.push(
    'The whole `rewind` with an instant summarizer, the stores on tmpfs, on identical sessions (each fold on a fresh replay of one recorded session; its last event, the rewind call\'s `tool/call`, is appended right before the timed operation, as DSH logs the call just before it runs the tool), compacted (the oldest ~70 % of the surface replaced by a summary) and uncompacted (the surface holds every message). ' +
      '**warm**: a live host (the session is attached to a real SessionStore with the plugin\'s mirror mounted, which described every event as it was appended; the mark is in memory). **cold**: the first fold of a resumed session (the mark was taken by another process, so the store reads its file in the fold; the session was restored into the host from its events, and the plugin described it when the host announced it: "described at restore"); the baseline\'s cold fold builds its caches and reads its store file too. **fresh**: the same fold on a session the plugin meets at the fold (no host: its mirror is built inside the fold). ' +
      '**floor** = DSH\'s own replace append of the same replacement on the same session (the durable stamp is off the fold\'s critical path since round 3).',
    '',
  )
  L.push('| session | surface nodes | folded | baseline (warm) | dsh-fold warm | baseline cold | dsh-fold cold | described at restore | dsh-fold fresh | floor (DSH append) | baseline / warm | warm / floor | baseline cold / cold |')
  L.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
  for (const s of F.sizes) {
    const v = s.variants
    const floor = v.append.wall.median
    L.push(
      `| ${s.events} events, ${shape(s)} | ${s.nodes} | ${s.region.foldedNodes} nodes, ${(s.region.foldedChars / 1000).toFixed(0)}k chars | ${fmtSpread(v.baseline.wall)} | ${fmtSpread(v['ours-warm'].wall)} | ${fmtSpread(v['baseline-cold'].wall)} | ${fmtSpread(v['ours-cold'].wall)} | ${fmtSpread(s.describe)} | ${fmtSpread(v['ours-fresh'].wall)} | ${fmtSpread(v.append.wall)} | ` +
        `${fmtX(v.baseline.wall.median / v['ours-warm'].wall.median)} | ${fmtX(v['ours-warm'].wall.median / floor)} | ${fmtX(v['baseline-cold'].wall.median / v['ours-cold'].wall.median)} |`,
    )
  }
  L.push('')
  L.push(`Iterations per shape: ${F.sizes.map((/** @type {any} */ s) => `${s.label} × ${s.iterations}`).join(', ')} (after warm-ups), variants interleaved.`, '')
  L.push(`Round trip to the addon's threads and back (\`completeFold\` with nothing to stamp; the stamp's write makes one, after the fold settled): ${fmtSpread(rt.backToBack)} back to back, ${fmtSpread(rt.idle)} from idle (threads parked 30 ms first).`, '')
  return L
}

/** Each iteration's ratios over the same iteration's. @param {any} F */
function foldPairedRatios(F) {
  const r = (/** @type {any} */ x) => (x ? `${fmtX(x.median)} [${fmtX(x.p10)}–${fmtX(x.p90)}]` : '—')
  return perSessionTable(F, 'Paired ratios (each iteration\'s figures over the same iteration\'s):', ['baseline / warm', 'baseline cold / cold', 'warm / floor'], (s) => [
    r(s.paired.baselineOverWarm),
    r(s.paired.baselineColdOverCold),
    r(s.paired.warmOverAppend),
  ])
}

/** Where a warm fold spends its time: host callbacks in JS and the addon's own part. @param {any} F */
function foldTimeSplit(F) {
  return perSessionTable(
    F,
    'Where a warm dsh-fold fold spends its time (host callbacks in JS — with a mirror, the addon calls `snapshot` only for a fold that waited for its mark; "commit" is DSH\'s append with the mirror\'s listener; "addon" is the rest: argument conversion, mark lookup, selection on the mirror, the continuation after the summarizer, settling, queueing the stamp):',
    ['snapshot (JS)', 'summarize (JS)', 'commit (JS: append)', 'addon'],
    (s) => [s.warmParts.snapshot, s.warmParts.summarize, s.warmParts.commit, s.warmParts.addon].map(fmtSpread),
  )
}

/** Process CPU time per fold, every variant. @param {any} F */
function foldCpuTable(F) {
  return perSessionTable(
    F,
    'Process CPU time per fold (all threads, background GC included):',
    ['baseline', 'dsh-fold warm', 'baseline cold', 'dsh-fold cold', 'dsh-fold fresh', 'DSH append'],
    (s) => ['baseline', 'ours-warm', 'baseline-cold', 'ours-cold', 'ours-fresh', 'append'].map((k) => fmtSpread(s.variants[k].cpu)),
  )
}

/**
 * A table with a row per session: the paragraph before it, its columns after "session", and each
 * row's cells after the session's name.
 * @param {any} F @param {string} intro @param {string[]} columns @param {(s: any) => string[]} cells
 */
function perSessionTable(F, intro, columns, cells) {
  const L = [intro, '', `| session | ${columns.join(' | ')} |`, `|---|${columns.map(() => '---|').join('')}`]
  for (const s of F.sizes) L.push(`| ${s.events} events, ${shape(s)} | ${cells(s).join(' | ')} |`)
  L.push('')
  return L
}
