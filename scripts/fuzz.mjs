// @ts-check
/**
 * @module scripts/fuzz
 * `npm run fuzz -- --minutes N`: the core's fuzz campaign. Runs every target of
 * `crates/fold-core/fuzz/` (cargo-fuzz over libFuzzer; the targets are the functions of
 * `fold_core::fuzz`: store file, journal replay, the session mirror's records + rewind's and block
 * mode's planners, report input, zstd frames) for N minutes in all, split evenly, at the lowest
 * CPU priority (`nice -n 19`: the machine may be shared), and prints executions and crashes per
 * target (also written to `.fuzz-cache/last-run.json`).
 *
 *   npm run fuzz -- --minutes 30                  the campaign (default 1 minute)
 *   npm run fuzz -- --minutes 5 --targets zstd    some targets
 *   npm run fuzz -- --minutes 30 --keep           then merge inputs with new coverage into the
 *                                                 committed regression corpus (fuzz/corpus/)
 *   npm run fuzz -- --minimize                    shrink the committed corpus to the inputs that
 *                                                 reach new edges (seeds and crash inputs stay)
 *   npm run fuzz -- --seed                        (re)write the corpus's seed inputs
 *   npm run fuzz -- --replay FILE                 run one input through its target (a crash's
 *                                                 reproduction; the target is the folder name)
 *
 * Tools: cargo-fuzz is installed by this script, from crates.io, into `.fuzz-cache/tools`
 * (ignored by git; `$DSH_FOLD_FUZZ_CACHE` moves the cache), never by hand. libFuzzer needs
 * nightly flags: stable Rust builds it with `RUSTC_BOOTSTRAP=1`, and without a sanitizer
 * (`--sanitizer none`: the core forbids `unsafe`, so the contracts checked are panics, wrong
 * answers and runaway allocation, not memory errors). A C++ compiler builds libFuzzer itself.
 *
 * Corpora: each target's working corpus is `.fuzz-cache/corpus/<target>`, started from the
 * committed one; the committed corpus (`crates/fold-core/fuzz/corpus/<target>/`) is small on
 * purpose: seeds (`seed-*`), every input that ever crashed (`crash-*`, after its fix), and with
 * `--keep` the inputs in which libFuzzer's merge finds new edges (`-use_counters=0`: new edges,
 * not new hit counts, so the corpus stays a few hundred files). `cargo test` replays it (tests/fuzz_corpus.rs).
 * A crash leaves `crates/fold-core/fuzz/artifacts/<target>/crash-*` (ignored by git) and makes
 * the script exit 1; copy it into the corpus with its fix, so it is a regression test.
 */
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const fuzzDir = path.join(root, 'crates', 'fold-core', 'fuzz')
const committed = path.join(fuzzDir, 'corpus')
const cache = process.env.DSH_FOLD_FUZZ_CACHE ?? path.join(root, '.fuzz-cache')
const TARGETS = ['store_file', 'store_journal', 'mirror', 'report_input', 'zstd']
/** cargo-fuzz, pinned: the version this script was written against. */
const CARGO_FUZZ = '0.13.2'
/** Largest input libFuzzer makes (a mirror's records for a few hundred events; a store of dozens of marks). */
const MAX_LEN = 16_384
/** No seq (a `mirror` input's current when none is named). */
const NO_SEQ = 0xffff_ffff
/** A `mirror` input's control bit: the feed is a load and its log index (else one push). */
const LOADED = 1 << 13

const args = process.argv.slice(2)
const flag = (/** @type {string} */ name) => args.includes(name)
const value = (/** @type {string} */ name) => {
  const i = args.indexOf(name)
  return i >= 0 ? args[i + 1] : undefined
}

if (flag('--help')) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('*/')[0])
  process.exit(0)
}
if (flag('--seed')) {
  await seed()
  process.exit(0)
}

const env = { ...process.env, RUSTC_BOOTSTRAP: '1', CARGO_TARGET_DIR: path.join(cache, 'target') }
const cargoFuzz = ensureCargoFuzz()

if (value('--replay')) {
  const file = path.resolve(/** @type {string} */ (value('--replay')))
  const target = path.basename(path.dirname(file))
  if (!TARGETS.includes(target)) fail(`--replay: ${file} is not in a target's folder (${TARGETS.join(', ')})`)
  build([target])
  const r = spawnSync(cargoFuzz, ['fuzz', 'run', '--sanitizer', 'none', target, file], { cwd: fuzzDir, env, stdio: 'inherit' })
  process.exit(r.status ?? 1)
}

if (flag('--minimize')) {
  const targets = (value('--targets') ?? TARGETS.join(',')).split(',')
  build(targets)
  for (const target of targets) {
    const dir = path.join(committed, target)
    const aside = path.join(cache, 'minimize', target)
    rmSync(aside, { recursive: true, force: true })
    mkdirSync(aside, { recursive: true })
    for (const f of readdirSync(dir).filter((n) => !/^(seed|crash)-/.test(n))) renameSync(path.join(dir, f), path.join(aside, f))
    mergeInto(target, dir, aside)
    console.log(`fuzz: ${target}: ${readdirSync(dir).length} inputs kept`)
  }
  process.exit(0)
}

const minutes = Number(value('--minutes') ?? 1)
if (!(minutes > 0)) fail('--minutes must be a positive number')
const targets = (value('--targets') ?? TARGETS.join(',')).split(',')
for (const t of targets) if (!TARGETS.includes(t)) fail(`unknown target ${t}; targets: ${TARGETS.join(', ')}`)
const seconds = Math.max(1, Math.floor((minutes * 60) / targets.length))

build(targets)
/** @type {Record<string, {executions: number, execsPerSecond: number, coverage: number, corpus: number, crashes: string[], seconds: number}>} */
const results = {}
for (const target of targets) {
  const working = path.join(cache, 'corpus', target)
  mkdirSync(working, { recursive: true })
  for (const f of readdirSync(path.join(committed, target))) copyFileSync(path.join(committed, target, f), path.join(working, f))
  const artifacts = path.join(fuzzDir, 'artifacts', target)
  mkdirSync(artifacts, { recursive: true })
  const before = new Set(readdirSync(artifacts))
  console.log(`fuzz: ${target} for ${seconds} s`)
  const run = spawnSync(
    'nice',
    ['-n', '19', cargoFuzz, 'fuzz', 'run', '--sanitizer', 'none', target, working, '--', `-max_total_time=${seconds}`, `-max_len=${MAX_LEN}`, '-print_final_stats=1', '-rss_limit_mb=2048', '-timeout=10'],
    { cwd: fuzzDir, env, encoding: 'utf8', maxBuffer: 256 << 20 },
  )
  const log = `${run.stdout}\n${run.stderr}`
  writeFileSync(path.join(cache, `${target}.log`), log)
  const stat = (/** @type {string} */ name) => Number(log.match(new RegExp(`stat::${name}:\\s+(\\d+)`))?.[1] ?? NaN)
  const crashes = readdirSync(artifacts).filter((f) => !before.has(f))
  results[target] = {
    executions: stat('number_of_executed_units'),
    execsPerSecond: stat('average_exec_per_sec'),
    coverage: Number([...log.matchAll(/cov: (\d+)/g)].at(-1)?.[1] ?? NaN),
    corpus: readdirSync(working).length,
    crashes: crashes.map((f) => path.relative(root, path.join(artifacts, f))),
    seconds,
  }
  if (run.status !== 0 && crashes.length === 0) fail(`${target}: libFuzzer exited ${run.status ?? run.signal} without an artifact; see ${path.join(cache, `${target}.log`)}`)
  const r = results[target]
  console.log(`fuzz: ${target}: ${r.executions} executions (${r.execsPerSecond}/s), coverage ${r.coverage}, corpus ${r.corpus}, crashes ${r.crashes.length}`)
  if (flag('--keep')) {
    // Only inputs that add coverage to the committed corpus join it.
    mergeInto(target, path.join(committed, target), working)
  }
}
const total = Object.values(results).reduce((n, r) => n + r.executions, 0)
const summary = { date: new Date().toISOString(), minutes, targets: results, totalExecutions: total, crashes: Object.values(results).flatMap((r) => r.crashes) }
writeFileSync(path.join(cache, 'last-run.json'), `${JSON.stringify(summary, null, 2)}\n`)
console.log(`\nfuzz: ${total} executions in all; ${summary.crashes.length} crash(es)${summary.crashes.length ? `:\n  ${summary.crashes.join('\n  ')}` : ''}`)
console.log(`fuzz: figures in ${path.relative(root, path.join(cache, 'last-run.json'))}`)
process.exit(summary.crashes.length ? 1 : 0)

/** @param {string} message @returns {never} */
function fail(message) {
  console.error(`fuzz: ${message}`)
  process.exit(2)
}

/**
 * libFuzzer's merge: the inputs of `from` that reach edges `into` does not yet reach join it.
 * @param {string} target @param {string} into @param {string} from
 */
function mergeInto(target, into, from) {
  const merge = spawnSync('nice', ['-n', '19', cargoFuzz, 'fuzz', 'run', '--sanitizer', 'none', target, into, from, '--', '-merge=1', '-use_counters=0', `-max_len=${MAX_LEN}`], { cwd: fuzzDir, env, encoding: 'utf8' })
  if (merge.status !== 0) fail(`${target}: merging into ${path.relative(root, into)} failed:\n${merge.stderr.slice(-2000)}`)
}

/** cargo-fuzz from the cache, installed there on first use. */
function ensureCargoFuzz() {
  const tools = path.join(cache, 'tools')
  const bin = path.join(tools, 'bin', process.platform === 'win32' ? 'cargo-fuzz.exe' : 'cargo-fuzz')
  const version = existsSync(bin) ? spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout : ''
  if (!version.includes(CARGO_FUZZ)) {
    console.log(`fuzz: installing cargo-fuzz ${CARGO_FUZZ} into ${path.relative(root, tools)} (once)`)
    const r = spawnSync('nice', ['-n', '19', 'cargo', 'install', 'cargo-fuzz', '--version', CARGO_FUZZ, '--locked', '--root', tools, '--target-dir', path.join(cache, 'build')], { stdio: 'inherit' })
    if (r.status !== 0) fail('installing cargo-fuzz failed')
  }
  return bin
}

/** Builds the targets (release, debug assertions on, no sanitizer). @param {string[]} names */
function build(names) {
  for (const name of names) {
    const r = spawnSync('nice', ['-n', '19', cargoFuzz, 'fuzz', 'build', '--sanitizer', 'none', name], { cwd: fuzzDir, env, stdio: 'inherit' })
    if (r.status !== 0) fail(`building the fuzz target ${name} failed`)
  }
}

/** Writes the seed inputs of every target's committed corpus (`seed-*`), from the project's own fixtures. */
async function seed() {
  const { journalLine } = await import('../__test__/reliability/helpers.mjs')
  const { recordBlockSession } = await import('../bench/block.mjs')
  const { recordSession, replay } = await import('../bench/lib/session.mjs')
  const put = (/** @type {string} */ target, /** @type {string} */ name, /** @type {Buffer | Uint8Array} */ bytes) => {
    mkdirSync(path.join(committed, target), { recursive: true })
    writeFileSync(path.join(committed, target, `seed-${name}`), bytes)
  }
  const wordsBytes = (/** @type {number[]} */ words) => Buffer.from(new Uint32Array(words).buffer)
  const core = path.join(root, 'crates', 'fold-core', 'tests', 'corpus')
  for (const f of readdirSync(path.join(core, 'store'))) put('store_file', f, readFileSync(path.join(core, 'store', f)))
  const mark = (/** @type {number} */ id, /** @type {string} */ sessionId, /** @type {number | null} */ foldedAt) => ({ id, sessionId, logLength: id * 3, objective: id % 2 ? 'read the parser' : null, createdAt: 1764547200000 + id, foldedAt })
  const header = journalLine({ journal: 'checkpoint', version: 1, id: '0123456789abcdef' })
  const batch = journalLine({ changes: [{ op: 'mark', mark: mark(4, 's', null) }, { op: 'mark', mark: mark(5, 'u', null) }] })
  const fold = journalLine({ changes: [{ op: 'fold', id: 4, foldedAt: 1764547300000 }] })
  put('store_journal', 'two-batches', Buffer.concat([header, batch, fold]))
  put('store_journal', 'torn-tail', Buffer.concat([header, batch, fold.subarray(0, fold.length - 5)]))
  put('store_journal', 'header-only', header)
  // The mirror's own records, as the plugin's describer writes them for real sessions: block
  // sessions fed event by event (block ids tracked: every record pushed), and rewind sessions
  // (with a compaction, and a fold's report) rebuilt from their surface (a load, then the log).
  for (const [events, close, pick] of /** @type {const} */ ([[120, true, 0b1_0000_0101], [200, false, 0b0110_0001], [400, true, 0b1000_0000_0010]])) {
    const r = recordBlockSession(events, { close })
    const fed = await describedWords(r.session, true)
    put('mirror', `blocks-${close ? 'closed' : 'open'}-${events}`, wordsBytes([r.requestSeq, pick, NO_SEQ, ...mirrorInput(fed)]))
  }
  for (const [events, compaction] of /** @type {const} */ ([[300, true], [300, false], [900, true]])) {
    const rec = recordSession(events, { compaction, explorationSteps: 4 })
    const session = replay(rec, `fuzz-seed-${events}-${compaction}`)
    const loaded = await describedWords(session, false)
    put('mirror', `rewind-${compaction ? 'compacted' : 'whole'}-${events}`, wordsBytes([rec.anchor ?? Math.floor(events / 2), LOADED, NO_SEQ, ...mirrorInput(loaded)]))
  }
  const reports = path.join(root, '__test__', 'fixtures', 'report')
  for (const f of readdirSync(reports).filter((n) => n.endsWith('.json'))) put('report_input', f.replace(/\.json$/, ''), readFileSync(path.join(reports, f)))
  const cli = path.join(root, '__test__', 'fixtures', 'cli')
  put('zstd', 'session', readFileSync(path.join(cli, 'session.jsonl.zstd')))
  put('zstd', 'truncated', readFileSync(path.join(cli, 'bad', 'truncated.jsonl.zstd')))
  console.log(`fuzz: seeds written under ${path.relative(root, committed)}`)
}

/**
 * The words the plugin's describer (plugin/shared/mirror.js) hands a session's mirror: the id
 * lists it interns, in order, and either the records it pushes or the load and the log index a
 * rebuild reads. `blocks`: block mode's ids tracked (every event pushed) or not (a rebuild from
 * the surface).
 * @param {any} session
 * @param {boolean} blocks
 * @returns {Promise<{sets: string[][], push: number[], load?: number[], open?: number, log?: number[]}>}
 */
async function describedWords(session, blocks) {
  const { addon } = await import('../plugin/shared/addon.js')
  const { callBlockIds } = await import('../plugin/block/args.js')
  const { freshMirror, trackBlockTool } = await import('../plugin/shared/mirror.js')
  const proto = addon.SessionMirror.prototype
  const kept = { intern: proto.intern, push: proto.push, load: proto.load, loadLog: proto.loadLog }
  /** @type {{sets: string[][], push: number[], load?: number[], open?: number, log?: number[]}} */
  const out = { sets: [], push: [] }
  // Listening in on the describer's calls (the seeds are exactly what it sends), then restored.
  Object.assign(proto, {
    intern(/** @type {string[]} */ ids) {
      out.sets.push([...ids])
      return kept.intern.call(this, ids)
    },
    push(/** @type {Uint32Array} */ words, /** @type {number} */ length) {
      out.push.push(...words.subarray(0, length ?? words.length))
      return kept.push.call(this, words, length)
    },
    load(/** @type {Uint32Array} */ words) {
      out.load = Array.from(words)
      return kept.load.call(this, words)
    },
    loadLog(/** @type {number} */ open, /** @type {Uint32Array} */ words) {
      out.open = open
      out.log = Array.from(words)
      return kept.loadLog.call(this, open, words)
    },
  })
  const untrack = blocks ? trackBlockTool('block_run_code', callBlockIds) : () => {}
  try {
    freshMirror(session)
  } finally {
    untrack()
    Object.assign(proto, kept)
  }
  return out
}

/**
 * A `mirror` fuzz input's id sets and feed (crates/fold-core/src/fuzz.rs), after its anchor,
 * control and current words: each id set spelled as v2 packs ids (length, then two UTF-16 units a
 * word), then the pushed records, or the load's length, the load, the open compaction and the log.
 * @param {{sets: string[][], push: number[], load?: number[], open?: number, log?: number[]}} described
 */
function mirrorInput({ sets, push, load, open, log }) {
  const words = [sets.length]
  for (const ids of sets) {
    words.push(ids.length)
    for (const id of ids) {
      words.push(id.length)
      for (let u = 0; u < id.length; u += 2) words.push(id.charCodeAt(u) | (u + 1 < id.length ? id.charCodeAt(u + 1) << 16 : 0))
    }
  }
  if (load === undefined) return [...words, ...push]
  return [...words, load.length, ...load, open ?? NO_SEQ, ...(log ?? [])]
}
