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
 * Sections: fold (figure 1), has-active (2), mark (3), concurrent (4), load (5).
 * Method notes: bench/README.md.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { BENCH_DIR, ROOT, parseArgs } from './lib/common.mjs'
import { fmtSpread, fmtUs, fmtX } from './lib/stats.mjs'

const { quick, opts } = parseArgs()
const SECTIONS = ['fold', 'has-active', 'mark', 'concurrent', 'load']
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
  const binary = ['dsh-fold.linux-x64-gnu.node'].map((f) => path.join(ROOT, f)).find(existsSync)
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
      [10_000, false, 3],
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
        x >= target ? verdict(true) : `${verdict(false)} by ${fmtX(target / x)}`,
      ])
    }
    const idleRt = F.roundTrip.idle.median
    for (const s of F.sizes) {
      const floor = s.variants.append.wall.median + idleRt
      const x = s.variants['ours-warm'].wall.median / floor
      rows.push([
        `1. warm fold vs floor, ${s.events} events ${s.label.split(' ')[1]}`,
        '≤ 2× the floor',
        `${fmtX(x)} (${fmtUs(s.variants['ours-warm'].wall.median)} vs ${fmtUs(floor)})`,
        x <= 2 ? verdict(true) : `${verdict(false)} by ${fmtX(x / 2)}`,
      ])
    }
    for (const s of F.sizes.filter((/** @type {any} */ s) => s.n >= 10_000)) {
      const base = s.variants['baseline-cold'].wall.median
      const x = base / s.variants['ours-cold'].wall.median
      rows.push([
        `1. first fold of a resumed session vs baseline, ${s.events} events ${s.label.split(' ')[1]}`,
        '≥ 1×',
        `${fmtX(x)} (${fmtUs(base)} vs ${fmtUs(s.variants['ours-cold'].wall.median)})`,
        x >= 1 ? verdict(true) : `${verdict(false)} by ${fmtX(1 / x)}`,
      ])
    }
  }
  const H = R['has-active']
  if (H) {
    const meds = H.counts.map((/** @type {any} */ c) => c.sync.median)
    const worst = Math.max(...meds)
    const flat = worst / Math.min(...meds)
    rows.push([
      `2. hasActiveSync, ${H.counts[0].count}–${H.counts.at(-1).count} marks`,
      '≤ 5 µs median, flat',
      `${fmtUs(Math.min(...meds))}–${fmtUs(worst)} (max/min ${fmtX(flat)})`,
      worst <= 5 && flat <= 2 ? verdict(true) : `${verdict(false)}${worst > 5 ? ` by ${fmtX(worst / 5)}` : ' (not flat)'}`,
    ])
    const ameds = H.counts.map((/** @type {any} */ c) => c.async.median)
    const aworst = Math.max(...ameds)
    rows.push([
      `2. hasActive (async), same`,
      '≤ 5 µs median, flat',
      `${fmtUs(Math.min(...ameds))}–${fmtUs(aworst)}`,
      aworst <= 5 ? verdict(true) : `${verdict(false)} by ${fmtX(aworst / 5)}`,
    ])
  }
  const M = R.mark
  if (M) {
    for (const c of M.cases) {
      const target = c.preload ? 2 : 1.5
      const x = c.mark.median / c.floorSmall.median
      rows.push([
        `3. durable mark, ${c.marksInFile} marks in the file`,
        `≤ ${target}× the disk floor`,
        `${fmtX(x)} (${fmtUs(c.mark.median)} vs ${fmtUs(c.floorSmall.median)}; vs the same-size floor ${fmtX(c.mark.median / c.floorSame.median)})`,
        x <= target ? verdict(true) : `${verdict(false)} by ${fmtX(x / target)}`,
      ])
    }
  }
  const C = R.concurrent
  if (C) {
    rows.push([
      '4. 32 sessions marking concurrently',
      '≥ 5× the one-at-a-time rate',
      `${fmtX(C.ratio)} (${C.concurrent.median.toFixed(0)} vs ${C.serial.median.toFixed(0)} marks/s)`,
      C.ratio >= 5 ? verdict(true) : `${verdict(false)} by ${fmtX(5 / C.ratio)}`,
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
      'The whole `rewind` with an instant summarizer, the stores on tmpfs, on identical sessions (each fold on a fresh replay of one recorded session), compacted (the oldest ~70 % of the surface replaced by a summary) and uncompacted (the surface holds every message). ' +
        '**warm**: a live host (the plugin described the session earlier; the mark is in memory). **cold**: the first fold of a resumed session (the mark was taken by another process, so the store reads its file in the fold, and the plugin meets the session there); the baseline\'s cold fold builds its caches and reads its store file too. ' +
        '**floor** = DSH\'s own replace append of the same replacement on the same session + one round trip to the addon\'s threads from idle (the hop the durable stamp cannot avoid).',
      '',
    )
    L.push('| session | surface nodes | folded | baseline (warm) | dsh-fold warm | baseline cold | dsh-fold cold | DSH append | floor | baseline / warm | warm / floor | baseline cold / cold |')
    L.push('|---|---|---|---|---|---|---|---|---|---|---|---|')
    for (const s of F.sizes) {
      const v = s.variants
      const floor = v.append.wall.median + rt.idle.median
      L.push(
        `| ${s.events} events, ${s.label.split(' ')[1]} | ${s.nodes} | ${s.region.foldedNodes} nodes, ${(s.region.foldedChars / 1000).toFixed(0)}k chars | ${fmtSpread(v.baseline.wall)} | ${fmtSpread(v['ours-warm'].wall)} | ${fmtSpread(v['baseline-cold'].wall)} | ${fmtSpread(v['ours-cold'].wall)} | ${fmtSpread(v.append.wall)} | ${fmtUs(floor)} | ` +
          `${fmtX(v.baseline.wall.median / v['ours-warm'].wall.median)} | ${fmtX(v['ours-warm'].wall.median / floor)} | ${fmtX(v['baseline-cold'].wall.median / v['ours-cold'].wall.median)} |`,
      )
    }
    L.push('')
    L.push(`Iterations per shape: ${F.sizes.map((/** @type {any} */ s) => `${s.label} × ${s.iterations}`).join(', ')} (after warm-ups), variants interleaved.`, '')
    L.push(`Round trip to the addon's threads and back (\`completeFold\` with nothing to stamp): ${fmtSpread(rt.backToBack)} back to back, **${fmtSpread(rt.idle)}** from idle (threads parked 30 ms first).`, '')
    L.push('Paired ratios (each iteration\'s baseline over the same iteration\'s dsh-fold run):', '')
    L.push('| session | baseline / warm | baseline cold / cold |', '|---|---|---|')
    for (const s of F.sizes) {
      const p = s.paired
      L.push(`| ${s.events} events, ${s.label.split(' ')[1]} | ${fmtX(p.baselineOverWarm.median)} [${fmtX(p.baselineOverWarm.p10)}–${fmtX(p.baselineOverWarm.p90)}] | ${fmtX(p.baselineColdOverCold.median)} [${fmtX(p.baselineColdOverCold.p10)}–${fmtX(p.baselineColdOverCold.p90)}] |`)
    }
    L.push('')
    L.push('Where a warm dsh-fold fold spends its time (host callbacks in JS; "addon" is the rest: argument conversion, mark lookup, decode and selection, the continuation after the summarizer, the durable stamp\'s round trip, settling):', '')
    L.push('| session | snapshot (JS) | summarize (JS) | commit (JS: append) | addon |', '|---|---|---|---|---|')
    for (const s of F.sizes) {
      const p = s.warmParts
      L.push(`| ${s.events} events, ${s.label.split(' ')[1]} | ${fmtSpread(p.snapshot)} | ${fmtSpread(p.summarize)} | ${fmtSpread(p.commit)} | ${fmtSpread(p.addon)} |`)
    }
    L.push('')
    L.push('Process CPU time per fold (all threads, background GC included):', '')
    L.push('| session | baseline | dsh-fold warm | baseline cold | dsh-fold cold | DSH append |', '|---|---|---|---|---|---|')
    for (const s of F.sizes) {
      const v = s.variants
      L.push(`| ${s.events} events, ${s.label.split(' ')[1]} | ${fmtSpread(v.baseline.cpu)} | ${fmtSpread(v['ours-warm'].cpu)} | ${fmtSpread(v['baseline-cold'].cpu)} | ${fmtSpread(v['ours-cold'].cpu)} | ${fmtSpread(v.append.cpu)} |`)
    }
    L.push('')
  }

  // ---- 2. hasActive
  if (H) {
    L.push('## 2. `hasActive` (every turn end)', '')
    L.push(`Per-call latency from memory; batch means (${H.counts[0].syncBatch} sync / ${H.counts[0].asyncBatch} async calls per batch, ${H.counts[0].rounds} batches). Store ref as the plugin passes it (\`{path, maxMarksPerSession, maxAgeDays}\`) unless noted.`, '')
    L.push('| marks stored | file | first load | hasActiveSync | hasActiveSync (path string) | hasActive (async) | latestMark (async; the turn guard calls it) |')
    L.push('|---|---|---|---|---|---|---|')
    for (const c of H.counts) {
      L.push(`| ${c.count} | ${(c.fileBytes / 1024).toFixed(0)} KiB | ${fmtUs(c.firstLoad)} | ${fmtSpread(c.sync)} | ${fmtSpread(c.syncString)} | ${fmtSpread(c.async)} | ${fmtSpread(c.latestMark)} |`)
    }
    L.push('')
  }

  // ---- 3. mark
  if (M) {
    L.push('## 3. Durable `mark` vs the disk floor', '')
    L.push('Real disk directory (bench/tmp/), interleaved with the floor: `open(wx)` → write → fsync → close → rename → fsync dir, from JS, on the same directory; "floor" writes a one-mark file, "same-size floor" a file as large as the store file being rewritten.', '')
    L.push('| case | marks in file | store file | mark | floor | same-size floor | mark / floor | mark / same-size floor |', '|---|---|---|---|---|---|---|---|')
    for (const c of M.cases) {
      L.push(
        `| ${c.name} | ${c.marksInFile} | ${(c.fileBytes / 1024).toFixed(0)} KiB | ${fmtSpread(c.mark)} | ${fmtSpread(c.floorSmall)} | ${fmtSpread(c.floorSame)} | ${fmtX(c.mark.median / c.floorSmall.median)} | ${fmtX(c.mark.median / c.floorSame.median)} |`,
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
  }

  if (!meta.quick) {
    const notes = path.join(BENCH_DIR, 'NOTES.md')
    if (existsSync(notes)) L.push(readFileSync(notes, 'utf8').trim(), '')
  }
  return L.join('\n') + '\n'
}
