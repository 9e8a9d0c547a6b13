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
 * per event, its effect on DSH's append, its memory), compaction (11).
 * Rendering RESULTS.md from the JSON is bench/lib/render/ (one module per figure); this file runs
 * the sections and records the machine. Method notes: bench/README.md.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import { X64_BINARY_BUDGET, binaryName } from '../scripts/targets.mjs'
import { BENCH_DIR, ROOT, parseArgs } from './lib/common.mjs'
import { renderResults } from './lib/render/results.mjs'

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
  writeFileSync(outMd, renderResults(saved.meta, saved.results))
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
writeFileSync(outMd, renderResults(meta, results))
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
