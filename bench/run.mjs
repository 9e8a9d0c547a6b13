/**
 * @module bench/run
 * `npm run bench`: runs every benchmark section in its own Node process and writes
 * bench/RESULTS.md (and the raw numbers, bench/RESULTS.json).
 *
 *   npm run bench                      the full run (~5–10 min on 2 busy cores)
 *   npm run bench -- --quick           a smoke run (< 1 min): every section, few iterations;
 *                                      checks correctness, asserts nothing about time; writes
 *                                      bench/tmp/RESULTS.quick.md (git-ignored)
 *   npm run bench -- --only fold,mark  some sections
 *   npm run bench -- --out FILE.md     another report path
 *   node bench/run.mjs --render        re-render the report from its JSON (after editing NOTES.md)
 *
 * Sections: fold (figure 1), has-active (2), mark (3), concurrent (4), load (5), report (6),
 * block (7: planning a block summary; 8: committing it), mirror (9: the session mirror's cost
 * per event, its effect on DSH's append, its memory).
 * Method notes: bench/README.md.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { X64_BINARY_BUDGET, binaryName } from '../scripts/targets.mjs'
import { BENCH_DIR, ROOT, parseArgs } from './lib/common.mjs'
import { fmtSpread, fmtUs, fmtX } from './lib/stats.mjs'

const { quick, opts } = parseArgs()
const SECTIONS = ['fold', 'has-active', 'mark', 'concurrent', 'load', 'report', 'block', 'mirror', 'compaction']
const only = typeof opts.only === 'string' ? opts.only.split(',') : SECTIONS
for (const s of only) if (!SECTIONS.includes(s)) throw new Error(`unknown section ${s}; sections: ${SECTIONS.join(', ')}`)

const tmp = path.join(BENCH_DIR, 'tmp')
mkdirSync(tmp, { recursive: true })
const outMd = typeof opts.out === 'string' ? path.resolve(opts.out) : quick ? path.join(tmp, 'RESULTS.quick.md') : path.join(BENCH_DIR, 'RESULTS.md')
const outJson = outMd.replace(/\.md$/, '') + '.json'

if (opts.render) {
  // Re-render the report from its JSON (e.g. after editing NOTES.md), without measuring again.
  const saved = JSON.parse(readFileSync(outJson, 'utf8'))
  writeFileSync(outMd, render(saved.meta, saved.results))
  console.log(`bench: re-rendered ${path.relative(ROOT, outMd)} from ${path.relative(ROOT, outJson)}`)
  process.exit(0)
}

const started = Date.now()
/** @type {Record<string, any>} */
const results = {}
for (const section of only) {
  const file = path.join(tmp, `${section}${quick ? '.quick' : ''}.json`)
  console.log(`bench: ${section}${quick ? ' (quick)' : ''}`)
  const t0 = Date.now()
  const r = spawnSync(process.execPath, ['--expose-gc', path.join(BENCH_DIR, `${section}.mjs`), ...(quick ? ['--quick'] : []), '--out', file], {
    cwd: ROOT,
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  if (r.status !== 0) {
    console.error(`bench: section ${section} failed (exit ${r.status ?? r.signal})`)
    process.exit(1)
  }
  results[section] = JSON.parse(readFileSync(file, 'utf8'))
  results[section].seconds = (Date.now() - t0) / 1000
}

const meta = machine()
meta.seconds = (Date.now() - started) / 1000
writeFileSync(outJson, JSON.stringify({ meta, results }, null, 2) + '\n')
writeFileSync(outMd, render(meta, results))
console.log(`bench: wrote ${path.relative(ROOT, outMd)} and ${path.relative(ROOT, outJson)} in ${meta.seconds.toFixed(0)} s`)

// ---------------------------------------------------------------------------------------------

function machine() {
  const git = (/** @type {string[]} */ args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    } catch {
      return ''
    }
  }
  const dirty = git(['status', '--porcelain', '--untracked-files=no']).split('\n').filter(Boolean)
  const binary = [binaryName(X64_BINARY_BUDGET.target)].map((f) => path.join(ROOT, f)).find(existsSync)
  const version = (/** @type {string} */ pkg) => {
    try {
      return JSON.parse(readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version
    } catch {
      return '?'
    }
  }
  const mounts = (() => {
    try {
      return readFileSync('/proc/mounts', 'utf8')
    } catch {
      return ''
    }
  })()
  const fsOf = (/** @type {string} */ dir) => {
    let best = { mount: '', type: '?' }
    for (const line of mounts.split('\n')) {
      const [, mount, type] = line.split(' ')
      if (mount && dir.startsWith(mount) && mount.length >= best.mount.length) best = { mount, type }
    }
    return best.type
  }
  return {
    date: new Date().toISOString(),
    quick,
    cpu: `${os.cpus()[0]?.model ?? '?'} × ${os.cpus().length}`,
    memGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    commit: git(['rev-parse', '--short=12', 'HEAD']) || '?',
    dirty: dirty.length,
    binaryBuilt: binary ? statSync(binary).mtime.toISOString() : '?',
    /** the x64 Linux (glibc) addon's size in bytes, as built here */
    binaryBytes: binary ? statSync(binary).size : NaN,
    dsh: version('@deepseek-ai/dsh-session'),
    diskFs: fsOf(BENCH_DIR),
    tmpfs: fsOf('/dev/shm/x'),
    /** @type {number} */
    seconds: 0,
  }
}

/** @param {any} meta @param {Record<string, any>} R */
function render(meta, R) {
  const L = []
  const verdict = (/** @type {boolean} */ ok) => (ok ? '**met**' : '**missed**')
  // How far over a target is: a factor, or a percentage when it is too close for "by 1.00×".
  const missedBy = (/** @type {number} */ factor) =>
    `${verdict(false)} by ${factor < 1.1 ? `${((factor - 1) * 100).toFixed(1)}%` : fmtX(factor)}`
  L.push('# dsh-fold benchmark results', '')
  L.push(
    meta.quick
      ? '> **Smoke run (`--quick`)**: few iterations; the figures are not meaningful, only that every section runs and its correctness checks pass.'
      : '> Generated by `npm run bench` (bench/run.mjs). Method: [bench/README.md](README.md). Every figure is the median with its 10th–90th percentile spread `[p10–p90]` over repeated runs; ratios are ratios of medians.',
    '',
  )
  L.push('| | |', '|---|---|')
  L.push(`| date | ${meta.date} (${meta.seconds.toFixed(0)} s) |`)
  L.push(`| machine | ${meta.cpu}, ${meta.memGiB} GiB, ${meta.os} |`)
  L.push(`| Node | ${meta.node} |`)
  L.push(`| dsh-fold | commit \`${meta.commit}\`${meta.dirty ? ` + ${meta.dirty} uncommitted tracked file(s) in the tree` : ''}; addon built ${meta.binaryBuilt} (\`napi build --platform --release\`) |`)
  L.push(`| DSH | @deepseek-ai/* ${meta.dsh} |`)
  L.push(`| file systems | disk dir (bench/tmp): ${meta.diskFs}; tmpfs: /dev/shm (${meta.tmpfs}) |`)
  const loads = Object.entries(R)
    .map(([k, v]) => `${k} ${v.load?.start ?? '?'}→${v.load?.end ?? '?'}`)
    .join(', ')
  L.push(`| 1-min load average (start→end of each section) | ${loads} |`)
  L.push('')

  // ---- targets summary
  /** @type {string[][]} */
  const rows = []
  const F = R.fold
  if (F) {
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
        `1. warm fold vs baseline, ${s.events} events ${s.label.split(' ')[1]}`,
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
        `1. warm fold vs the floor (DSH's replace append alone), ${s.events} events ${s.label.split(' ')[1]}`,
        '≤ 1.5× the floor',
        `${fmtX(x)} (${fmtUs(s.variants['ours-warm'].wall.median)} vs ${fmtUs(floor)})`,
        x <= 1.5 ? verdict(true) : missedBy(x / 1.5),
      ])
    }
    for (const s of F.sizes.filter((/** @type {any} */ s) => s.n >= 10_000)) {
      const base = s.variants['baseline-cold'].wall.median
      const x = base / s.variants['ours-cold'].wall.median
      rows.push([
        `1. first fold of a resumed session vs baseline, ${s.events} events ${s.label.split(' ')[1]}`,
        '≥ 1.5×',
        `${fmtX(x)} (${fmtUs(base)} vs ${fmtUs(s.variants['ours-cold'].wall.median)}; the session described at its restore in ${fmtUs(s.describe.median)})`,
        x >= 1.5 ? verdict(true) : missedBy(1.5 / x),
      ])
    }
  }
  const H = R['has-active']
  if (H) {
    const meds = H.counts.map((/** @type {any} */ c) => c.sync.median)
    const T = H.thirtyDays
    if (T) meds.push(T.steady.sync.median)
    const worst = Math.max(...meds)
    const flat = worst / Math.min(...meds)
    const top = T ? T.marks : H.counts.at(-1).count
    rows.push([
      `2. hasActiveSync, ${H.counts[0].count}–${Math.max(top, H.counts.at(-1).count)} marks (incl. the 30-day store)`,
      '≤ 5 µs median, flat',
      `${fmtUs(Math.min(...meds))}–${fmtUs(worst)} (max/min ${fmtX(flat)})`,
      worst <= 5 && flat <= 2 ? verdict(true) : `${verdict(false)}${worst > 5 ? ` by ${fmtX(worst / 5)}` : ' (not flat)'}`,
    ])
    const ameds = H.counts.map((/** @type {any} */ c) => c.async.median)
    if (T) ameds.push(T.steady.async.median)
    const aworst = Math.max(...ameds)
    rows.push([
      `2. hasActive (async), same`,
      '≤ 5 µs median, flat',
      `${fmtUs(Math.min(...ameds))}–${fmtUs(aworst)}`,
      aworst <= 5 ? verdict(true) : missedBy(aworst / 5),
    ])
    if (T) {
      rows.push([
        `2. the guard's worst case: first hasActive on a 30-day store (${T.marks} marks, ${((T.fileBytes + T.journalBytes) / 1048576).toFixed(1)} MiB with its journal), fresh process`,
        'no file work on the JS thread',
        `the call holds the JS thread ${fmtUs(T.cold.callUs.median)} (${fmtUs(T.cold.secondCallUs.median)} once the async runtime runs); answer after ${T.cold.answerMs.median.toFixed(0)} ms (loaded off-thread); longest event-loop delay meanwhile ${T.cold.maxLagMs.median.toFixed(1)} ms`,
        T.cold.syncThrew ? verdict(true) : verdict(false),
      ])
    }
  }
  const M = R.mark
  if (M) {
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
  }
  const C = R.concurrent
  if (C) {
    rows.push([
      '4. 32 sessions marking concurrently',
      '≥ 5× the one-at-a-time rate',
      `${fmtX(C.ratio)} (${C.concurrent.median.toFixed(0)} vs ${C.serial.median.toFixed(0)} marks/s)`,
      C.ratio >= 5 ? verdict(true) : missedBy(5 / C.ratio),
    ])
  }
  const RP = R.report
  if (RP) reportTargets(RP, rows, verdict)
  const B = R.block
  if (B) {
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
    for (const c of B.commit ?? []) {
      rows.push([
        `8. commit a block summary, ${c.name} (plan + price + 4 appends + the mirror's catch-up)`,
        `≤ ${fmtX(B.commitTarget.ratio)} DSH's own 4 appends`,
        `${fmtX(c.ratioOfMedians)} (${fmtUs(c.ours.median)} vs ${fmtUs(c.dsh.median)}); first call ${fmtUs(c.first.median)}`,
        c.ratioOfMedians <= B.commitTarget.ratio ? verdict(true) : missedBy(c.ratioOfMedians / B.commitTarget.ratio),
      ])
    }
  }
  const MI = R.mirror
  if (MI) {
    for (const p of MI.perEvent) {
      rows.push([
        `9. the session mirror's cost per appended event (its listener), ${p.events} events ${p.label}`,
        '≤ 2 µs p50',
        `p50 ${fmtUs(p.p50)}, p90 ${fmtUs(p.p90)}, p99 ${fmtUs(p.p99)}, mean ${fmtUs(p.mean)}`,
        p.p50 <= 2 ? verdict(true) : missedBy(p.p50 / 2),
      ])
    }
    for (const a of MI.append) {
      rows.push([
        `9. DSH's append with the mirror's listener vs without, ${a.events} events${a.meter ? ' (token meter measuring the session, as in a dsh-base host)' : ' (bare session store)'}`,
        '≤ 1.05×',
        `${fmtX(a.ratio)} (${fmtUs(a.with.median)} vs ${fmtUs(a.without.median)})`,
        a.ratio <= 1.05 ? verdict(true) : missedBy(a.ratio / 1.05),
      ])
    }
    for (const m of MI.memory) {
      rows.push([
        `9. memory of a ${m.events}-event session's mirror (${m.label}, ${m.surfaceNodes} surface nodes)`,
        'reported',
        `${(m.nativeBytes / 1024).toFixed(0)} KiB in the addon + ${(m.jsHeapBytes / 1024).toFixed(0)} KiB of JS heap (call-id map)`,
        verdict(true),
      ])
    }
  }
  const CP = R.compaction
  if (CP) {
    const pct = (/** @type {number} */ k, /** @type {number} */ t) => (t ? `${((100 * k) / t).toFixed(1)}%` : 'n/a')
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
  }
  const LD0 = R.load
  if (LD0?.cycles?.['cycles-fold']) {
    const f = LD0.cycles['cycles-fold']
    const st = LD0.cycles['cycles-stamp']
    rows.push([
      `5. RSS of a host after ${f.cycles} folds (mark + rewind; mark + stamp)`,
      'bounded, reported',
      `${f.rssEndMiB.median.toFixed(1)} MiB (${f.growthMiB.median >= 0 ? '+' : ''}${f.growthMiB.median.toFixed(1)} MiB after cycle 100); ${st.rssEndMiB.median.toFixed(1)} MiB (${st.growthMiB.median >= 0 ? '+' : ''}${st.growthMiB.median.toFixed(1)} MiB)`,
      Math.max(f.growthMiB.median, st.growthMiB.median) < 8 ? verdict(true) : verdict(false),
    ])
  }
  if (Number.isFinite(meta.binaryBytes)) {
    const mib = meta.binaryBytes / 2 ** 20
    const budget = X64_BINARY_BUDGET.bytes
    rows.push([
      '10. the addon binary, x64 Linux (glibc), release build',
      `≤ ${budget / 2 ** 20} MiB`,
      `${mib.toFixed(2)} MiB (${meta.binaryBytes.toLocaleString('en')} bytes)`,
      meta.binaryBytes <= budget ? verdict(true) : missedBy(meta.binaryBytes / budget),
    ])
  }
  if (rows.length) {
    L.push('## Targets', '')
    L.push('| figure | target | measured | |', '|---|---|---|---|')
    for (const r of rows) L.push(`| ${r.join(' | ')} |`)
    L.push('')
    if (!meta.quick) L.push('Why the misses are where they are, and what bounds each: see [Notes](#notes) below.', '')
  }

  // ---- 1. fold
  if (F) {
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
        `| ${s.events} events, ${s.label.split(' ')[1]} | ${s.nodes} | ${s.region.foldedNodes} nodes, ${(s.region.foldedChars / 1000).toFixed(0)}k chars | ${fmtSpread(v.baseline.wall)} | ${fmtSpread(v['ours-warm'].wall)} | ${fmtSpread(v['baseline-cold'].wall)} | ${fmtSpread(v['ours-cold'].wall)} | ${fmtSpread(s.describe)} | ${fmtSpread(v['ours-fresh'].wall)} | ${fmtSpread(v.append.wall)} | ` +
          `${fmtX(v.baseline.wall.median / v['ours-warm'].wall.median)} | ${fmtX(v['ours-warm'].wall.median / floor)} | ${fmtX(v['baseline-cold'].wall.median / v['ours-cold'].wall.median)} |`,
      )
    }
    L.push('')
    L.push(`Iterations per shape: ${F.sizes.map((/** @type {any} */ s) => `${s.label} × ${s.iterations}`).join(', ')} (after warm-ups), variants interleaved.`, '')
    L.push(`Round trip to the addon's threads and back (\`completeFold\` with nothing to stamp; the stamp's write makes one, after the fold settled): ${fmtSpread(rt.backToBack)} back to back, ${fmtSpread(rt.idle)} from idle (threads parked 30 ms first).`, '')
    L.push('Paired ratios (each iteration\'s figures over the same iteration\'s):', '')
    L.push('| session | baseline / warm | baseline cold / cold | warm / floor |', '|---|---|---|---|')
    for (const s of F.sizes) {
      const p = s.paired
      const r = (/** @type {any} */ x) => (x ? `${fmtX(x.median)} [${fmtX(x.p10)}–${fmtX(x.p90)}]` : '—')
      L.push(`| ${s.events} events, ${s.label.split(' ')[1]} | ${r(p.baselineOverWarm)} | ${r(p.baselineColdOverCold)} | ${r(p.warmOverAppend)} |`)
    }
    L.push('')
    L.push('Where a warm dsh-fold fold spends its time (host callbacks in JS — with a mirror, the addon calls `snapshot` only for a fold that waited for its mark; "commit" is DSH\'s append with the mirror\'s listener; "addon" is the rest: argument conversion, mark lookup, selection on the mirror, the continuation after the summarizer, settling, queueing the stamp):', '')
    L.push('| session | snapshot (JS) | summarize (JS) | commit (JS: append) | addon |', '|---|---|---|---|---|')
    for (const s of F.sizes) {
      const p = s.warmParts
      L.push(`| ${s.events} events, ${s.label.split(' ')[1]} | ${fmtSpread(p.snapshot)} | ${fmtSpread(p.summarize)} | ${fmtSpread(p.commit)} | ${fmtSpread(p.addon)} |`)
    }
    L.push('')
    L.push('Process CPU time per fold (all threads, background GC included):', '')
    L.push('| session | baseline | dsh-fold warm | baseline cold | dsh-fold cold | dsh-fold fresh | DSH append |', '|---|---|---|---|---|---|---|')
    for (const s of F.sizes) {
      const v = s.variants
      L.push(`| ${s.events} events, ${s.label.split(' ')[1]} | ${fmtSpread(v.baseline.cpu)} | ${fmtSpread(v['ours-warm'].cpu)} | ${fmtSpread(v['baseline-cold'].cpu)} | ${fmtSpread(v['ours-cold'].cpu)} | ${fmtSpread(v['ours-fresh'].cpu)} | ${fmtSpread(v.append.cpu)} |`)
    }
    L.push('')
  }

  // ---- 2. hasActive
  if (H) {
    L.push('## 2. `hasActive` (every turn end)', '')
    L.push(`Per-call latency from memory; batch means (${H.counts[0].syncBatch} sync / ${H.counts[0].asyncBatch} async calls per batch, ${H.counts[0].rounds} batches). Store ref as the plugin passes it (\`{path, maxMarksPerSession, maxAgeDays}\`) unless noted. "first load": the first \`hasActive\` in this process (the file read off-thread, the promise waiting for it).`, '')
    L.push('| marks stored | file | first load | hasActiveSync | hasActiveSync (path string) | hasActive (async) | latestMark (async; the turn guard calls it) | a sync export doing nothing, same loop |')
    L.push('|---|---|---|---|---|---|---|---|')
    for (const c of H.counts) {
      L.push(`| ${c.count} | ${(c.fileBytes / 1024).toFixed(0)} KiB | ${fmtUs(c.firstLoad)} | ${fmtSpread(c.sync)} | ${fmtSpread(c.syncString)} | ${fmtSpread(c.async)} | ${fmtSpread(c.latestMark)} | ${c.trivial ? fmtSpread(c.trivial) : '—'} |`)
    }
    L.push('')
    const T = H.thirtyDays
    if (T) {
      L.push(`### The guard's worst case: a 30-day store`, '')
      L.push(
        `${T.marks} marks: ${T.inFile} in the store file (${(T.fileBytes / 1048576).toFixed(1)} MiB) and ${T.inJournal} plus ${T.stamps} stamps in its journal (${(T.journalBytes / 1048576).toFixed(1)} MiB, just under the size at which it is folded in: the most a load can meet). ` +
          'Sized for heavy use: 20 sessions a day × 50 checkpoints each, for the 30 days `maxAgeDays` keeps. ' +
          `First calls in fresh processes (${T.firstCallRuns} each, alternating):`,
        '',
      )
      L.push('| | the call holds the JS thread | answer | longest event-loop delay meanwhile |', '|---|---|---|---|')
      const msSpread = (/** @type {any} */ x) => `${x.median.toFixed(1)} ms [${x.p10.toFixed(1)}–${x.p90.toFixed(1)}]`
      L.push(`| cold: the process's first \`hasActive\`, nothing loaded (also starts the addon's async runtime; hasActiveSync meanwhile: ${T.cold.syncThrew ? '`STORE_LOADING`' : 'did not throw'}) | ${fmtSpread(T.cold.callUs)} | ${msSpread(T.cold.answerMs)} | ${msSpread(T.cold.maxLagMs)} |`)
      L.push(`| cold, the runtime already running (a second copy of the store) | ${fmtSpread(T.cold.secondCallUs)} | ${msSpread(T.cold.secondAnswerMs)} | ${msSpread(T.cold.secondMaxLagMs)} |`)
      L.push(`| mount: \`openStore\` (load + fold the journal into the file), off-thread | — | ${T.mount.openMs.median.toFixed(1)} ms [${T.mount.openMs.p10.toFixed(1)}–${T.mount.openMs.p90.toFixed(1)}] | |`)
      L.push(`| then the first \`hasActive\` | ${fmtSpread(T.mount.callUs)} | ${fmtSpread(T.mount.answerUs)} | |`)
      L.push('')
      const w = T.duringWork
      L.push(
        `Steady state on it: hasActiveSync ${fmtSpread(T.steady.sync)}, hasActive ${fmtSpread(T.steady.async)}, latestMark ${fmtSpread(T.steady.latestMark)}. ` +
          `Single \`hasActiveSync\` calls on it, timed one by one (${w.singleCalls}+ per row), while the store works on its files on other threads — and, as the control, while the same work runs on a copy at another path (same CPU contention, no lock shared with the reads):`,
        '',
      )
      L.push('| while | median | p99 | p99.9 | max |', '|---|---|---|---|---|')
      const row = (/** @type {string} */ what, /** @type {any} */ x) => L.push(`| ${what} | ${fmtUs(x.median)} | ${fmtUs(x.p99)} | ${fmtUs(x.p999)} | ${fmtUs(x.max)} |`)
      row('nothing', w.idle)
      row(`this process appends marks to it (${w.appends.appended} appends)`, w.appends)
      row(`… to the control copy (${w.appendsControl.appended} appends)`, w.appendsControl)
      row(`this process re-reads it whole (${w.rereads.reread}×, after another process rewrote its file)`, w.rereads)
      row(`… the control copy (${w.rereadsControl.reread}×)`, w.rereadsControl)
      L.push('')
    }
  }

  // ---- 3. mark
  if (M) {
    L.push('## 3. Durable `mark` vs the disk floor', '')
    L.push('Real disk directory (bench/tmp/), interleaved with the floors, from JS on the same directory: the **disk floor** writes a one-mark store file atomically (`open(wx)` → write → fsync → close → rename → fsync dir); the **append floor** appends one journal-sized line (`open(a)` → write → fdatasync → close). A mark is a journal append; the journal is folded into the store file once it outgrows it (timed alone: "rewrite"), after the mark that found it due has its answer.', '')
    L.push('| case | marks stored | store file + journal | mark | disk floor | append floor | mark / disk floor | mark / append floor | rewrite of the file | per mark, amortized |', '|---|---|---|---|---|---|---|---|---|---|')
    for (const c of M.cases) {
      L.push(
        `| ${c.name} | ${c.marksInStore} | ${(c.fileBytes / 1024).toFixed(0)} + ${(c.journalBytes / 1024).toFixed(0)} KiB | ${fmtSpread(c.mark)} | ${fmtSpread(c.rewriteFloor)} | ${fmtSpread(c.appendFloor)} | ${fmtX(c.mark.median / c.rewriteFloor.median)} | ${fmtX(c.mark.median / c.appendFloor.median)} | ${c.compaction ? `${fmtSpread(c.compaction)} every ~${c.marksPerRewrite} marks` : '—'} | ${c.amortizedUs ? fmtUs(c.amortizedUs) : '—'} |`,
      )
    }
    L.push('')
  }

  // ---- 4. concurrency
  if (C) {
    L.push('## 4. Concurrent marks (group commit)', '')
    L.push(`${C.sessions} sessions × ${C.perSession} marks, fresh store per trial, real disk; ${C.trials} trial(s) each way, alternating.`, '')
    L.push('| one at a time | 32 sessions concurrently | ratio |', '|---|---|---|')
    L.push(`| ${C.serial.median.toFixed(0)} marks/s [${C.serial.p10.toFixed(0)}–${C.serial.p90.toFixed(0)}] | ${C.concurrent.median.toFixed(0)} marks/s [${C.concurrent.p10.toFixed(0)}–${C.concurrent.p90.toFixed(0)}] | ${fmtX(C.ratio)} |`, '')
  }

  // ---- 5. load
  const LD = R.load
  if (LD) {
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
    if (LD.cycles?.['cycles-fold']) {
      const mib = (/** @type {any} */ s) => `${s.median.toFixed(1)} MiB [${s.p10.toFixed(1)}–${s.p90.toFixed(1)}]`
      L.push(`RSS of a process that marked and folded ${LD.cycles['cycles-fold'].cycles} times (fresh processes, ${LD.cycles['cycles-fold'].runs} each; tmpfs store, four sessions in turn, 64 marks per session kept):`, '')
      L.push('| cycles | RSS after 100 | RSS at the end | growth | per cycle |', '|---|---|---|---|---|')
      for (const [mode, label] of [['cycles-stamp', 'mark + stamp (`completeFold`: a fold\'s store side)'], ['cycles-fold', 'mark + `rewind` (JS host, instant summarizer)']]) {
        const c = LD.cycles[mode]
        L.push(`| ${label} | ${mib(c.rssWarmMiB)} | ${mib(c.rssEndMiB)} | ${c.growthMiB.median >= 0 ? '+' : ''}${c.growthMiB.median.toFixed(1)} MiB | ${c.perCycleMs.median.toFixed(2)} ms |`)
      }
      L.push('')
    }
  }

  if (RP) renderReport(RP, L)
  // ---- 7. block mode, planning
  if (B) {
    L.push('## 7. Planning a block summary', '')
    L.push(
      'One synchronous call on the JS thread: the session\'s mirror (in step: the plugin checks it) handed to `planBlockSummary`, which reads the block surface off it and applies the rules — no snapshot crosses — for the normal case: the current block closed from inside its last program, right after that result landed. ' +
        '**warm**: the mirror described the session as it was appended; **first call**: a fresh replay the plugin never saw (the first summary after a restore or fork: its mirror is described inside the call; the very first in the process shown apart). ' +
        'Baselines interleaved with the warm plans: round 2\'s path (the v2 snapshot built in JS by `blockSnapshot`, decoded by `planBlockSummary`), and one plain JS pass reading each surface node\'s event. Method: bench/block.mjs.',
      '',
    )
    L.push('| session | surface nodes | ids | replaced | warm: total | mirror check | plan | first call | first in process | round 2: snapshot + plan | JS pass over the surface | warm / round 2 |')
    L.push('|---|---|---|---|---|---|---|---|---|---|---|---|')
    for (const s of B.shapes) {
      const base = s.baseline.snapshotPlan ?? s.baseline.rewindSelect
      L.push(
        `| ${s.events} events, ${s.name} | ${s.surfaceNodes} (${s.summaries} summaries) | ${s.ids} | ${s.replaced} | ${fmtSpread(s.warm.total)} | ${fmtSpread(s.warm.snapshot)} | ${fmtSpread(s.warm.plan)} | ${fmtSpread(s.first.total)} | ${fmtUs(s.first.firstInProcess)} | ` +
          `${fmtSpread(base)} | ${fmtSpread(s.baseline.jsPass)} | ${fmtX(s.warm.total.median / base.median)} |`,
      )
    }
    L.push('', `Repetitions: ${B.shapes.map((/** @type {any} */ s) => `${s.warm.n} warm, ${s.first.n} first calls`).join('; ')}.`, '')
  }

  // ---- 8. block mode, the commit
  if (B?.commit) {
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
  }

  // ---- 9. the session mirror
  if (MI) {
    L.push('## 9. The session mirror', '')
    L.push(
      'What keeping one mirror per live session costs the host (bench/mirror.mjs). **Per appended event**: the mirror\'s `session/event` listener (describe the event, push its record to the addon), each call timed alone, over every event of the recorded sessions. ' +
        '**DSH\'s append**: the same appends into a session of a host with the mirror mounted and one without (a real SessionStore each), interleaved append by append, each timed alone; once more with DSH\'s token meter mounted in both and measuring the session (it syncs on every append, as in a dsh-base host where compaction-basic measures at every step). ' +
        '**Memory**: the addon\'s heap for a mirror fed from the first event, and the JS heap the plugin keeps beside it (the call-id map), as the heap growth over several sessions\' mirrors after a full GC.',
      '',
    )
    L.push('| session | events | listener p50 | p90 | p99 | mean |', '|---|---|---|---|---|---|')
    for (const p of MI.perEvent) L.push(`| ${p.label} | ${p.events} | ${fmtUs(p.p50)} | ${fmtUs(p.p90)} | ${fmtUs(p.p99)} | ${fmtUs(p.mean)} |`)
    L.push('')
    L.push('| host | DSH append without the mirror | with it | ratio of medians |', '|---|---|---|---|')
    for (const a of MI.append) L.push(`| ${a.meter ? 'token meter measuring the session' : 'bare session store'} | ${fmtSpread(a.without)} | ${fmtSpread(a.with)} | ${fmtX(a.ratio)} |`)
    L.push('')
    L.push('| session | events | surface nodes | addon heap | JS heap | RSS growth |', '|---|---|---|---|---|---|')
    for (const m of MI.memory) L.push(`| ${m.label} | ${m.events} | ${m.surfaceNodes} | ${(m.nativeBytes / 1024).toFixed(0)} KiB | ${(m.jsHeapBytes / 1024).toFixed(0)} KiB | ${(m.rssBytes / 1024).toFixed(0)} KiB |`)
    L.push('')
  }

  // ---- 11. compaction
  if (R.compaction) L.push(...compactionTables(R.compaction), '')

  if (!meta.quick) {
    const notes = path.join(BENCH_DIR, 'NOTES.md')
    if (existsSync(notes)) L.push(readFileSync(notes, 'utf8').trim(), '')
  }
  return L.join('\n') + '\n'
}

/**
 * Figure 11's tables: dsh-fold/compaction vs compaction-basic on the same sessions (also the
 * tables of docs/compaction.md).
 * @param {any} C the section's result
 * @returns {string[]} Markdown lines
 */
function compactionTables(C) {
  const pct = (/** @type {number} */ k, /** @type {number} */ t) => (t ? `${((100 * k) / t).toFixed(1)}%` : '—')
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
  L.push('Where each compaction\'s time goes (p50 of the same compactions): the backend\'s own work, and the DSH parts it calls — the four appends with every `session/event` listener they run (persistence, projections, the meter\'s fold, invariant checks), the token meter (`measure`, `estimateMessage`), model info. dsh-fold also reads each new work message once after its step (per-step cost, last column), outside any compaction.', '')
  L.push('| session | window | backend | total ms p50 | own ms p50 | appends ms p50 | meter ms p50 | model info ms p50 | per-step preparation ms p50 [p90] |')
  L.push('|---|---|---|---|---|---|---|---|---|')
  for (const r of C.runs.filter((/** @type {any} */ r) => r.split)) {
    const x = (/** @type {any} */ s) => s.median?.toFixed(2) ?? '—'
    L.push(`| ${r.tokens / 1000}k tokens | ${r.window / 1000}k | ${r.backend === 'fold' ? 'dsh-fold' : 'basic'} | ${x(r.ms)} | ${x(r.split.own)} | ${x(r.split.append)} | ${x(r.split.meter)} | ${x(r.split.modelInfo)} | ${r.warmMs ? `${x(r.warmMs)} [${r.warmMs.p90.toFixed(2)}]` : '—'} |`)
  }
  const train = C.runs.filter((/** @type {any} */ r) => r.train)
  if (train.length) {
    L.push('', 'The train of thought (dsh-fold; `__test__/oracles/train-of-thought.mjs`, with the model\'s recorded next steps as the oracle): its latest text before the cut carried; the names it wrote in the range and writes again within its next 6 messages, in the context after the compaction, and of those the kept tail does not show, in the checkpoint; the checkpoint\'s own part over the range\'s new work (median over ranges of work), and the whole checkpoint over the whole range (median).', '')
    L.push('| session | window | compactions | latest text carried | names present | beyond the tail | own part / new work p50 | checkpoint / range p50 |')
    L.push('|---|---|---|---|---|---|---|---|')
    for (const r of train) {
      const t = r.train
      L.push(`| ${r.tokens / 1000}k tokens | ${r.window / 1000}k | ${t.compactions} | ${t.intent.carried} / ${t.intent.total} | ${t.names.present} / ${t.names.total} | ${t.beyondTail.present} / ${t.beyondTail.total} | ${pct(t.ownRatio, 1)} | ${pct(t.ratio, 1)} |`)
    }
  }
  return L
}

/** The report section's target rows. @param {any} RP @param {string[][]} rows @param {(ok: boolean) => string} verdict */
function reportTargets(RP, rows, verdict) {
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
}

/** The report section. @param {any} RP @param {string[]} L */
function renderReport(RP, L) {
  const pct = (/** @type {number | null} */ x) => (x === null ? '–' : `${(100 * x).toFixed(0)}%`)
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
    L.push(`| ${v} | ${pct(m.paths)} | ${pct(m.commands)} | ${pct(m.errors)} | ${pct(m.ratio)} | ${pct(m.maxRatio)} |`)
  }
  if (RP.byAgent) {
    L.push('', 'Per agent (ours, en; head+tail in brackets):', '')
    L.push('| agent | segments | models | paths | commands | error lines | text / region (mean) |', '|---|---|---|---|---|---|---|')
    for (const a of RP.byAgent) {
      const m = a.means['ours/en']
      const b = a.means['head+tail']
      L.push(`| ${a.agent} | ${a.segments} | ${a.models.join(', ')} | ${pct(m.paths)} (${pct(b.paths)}) | ${pct(m.commands)} (${pct(b.commands)}) | ${pct(m.errors)} (${pct(b.errors)}) | ${pct(m.ratio)} (${pct(b.ratio)}) |`)
    }
  }
  L.push('', 'Per segment (ours, en):', '')
  L.push('| segment | model | visible chars | paths | commands | error lines | report / region |', '|---|---|---|---|---|---|---|')
  for (const r of RP.perSegment) {
    const t = r.texts['ours/en']
    L.push(`| ${r.name} | ${r.model ?? ''} | ${r.visible} | ${pct(t.paths)} of ${r.counts.paths} | ${pct(t.commands)} of ${r.counts.commands} | ${pct(t.errors)} of ${r.counts.errors} | ${pct(t.ratio)} |`)
  }
  L.push('')
  if (RP.speed.length) {
    L.push('Throughput, default budget (the segments repeated into one region):', '')
    L.push('| region | report | ours (wall) | ours (CPU) | ours MB/s wall / CPU | head+tail: JSON.parse + prune, JS (wall) | head+tail MB/s wall / CPU |', '|---|---|---|---|---|---|---|')
    for (const s of RP.speed) {
      L.push(
        `| ${(s.bytes / 1e6).toFixed(1)} MB | ${s.reportChars} chars | ${fmtSpread(s.ours)} | ${fmtSpread(s.oursCpu)} | ${s.oursMBs.toFixed(1)} / ${s.oursCpuMBs.toFixed(1)} | ${fmtSpread(s.baseline)} | ${s.baselineMBs.toFixed(1)} / ${s.baselineCpuMBs.toFixed(1)} |`,
      )
    }
    L.push('')
  }
}
