// @ts-check
/**
 * @module scripts/clean
 * `npm run clean [-- --downloads] [-- --dry-run]`: removes what building and testing this checkout
 * wrote inside it, and says how much each folder held.
 *
 * Always removed (build output, remade by the next build or test): cargo's build folders
 * (`target/` — the release build `npm install` and `npm run build` make; the addon they copied to
 * the checkout's root stays, so the checkout keeps working — and `target-core/`,
 * `target-faults/`, `target-lint/`, the builds `npm test` adds), `target-cross/` but its `tools/`
 * (the cross builds of `npm run build:targets` and `npm test`'s arm64 step), the binaries they copied to
 * `npm/<platform>/`, the benches' `bench/tmp/`, the fuzz builds in `.fuzz-cache/target/`.
 *
 * Kept unless `--downloads`: what was downloaded, which later runs reuse and which takes minutes
 * to fetch again — `.e2e-cache/` (Node 22, the pinned DSH hosts, pnpm and its store, the npm
 * cache of the docs test), `target-cross/tools/` (zig, cargo-zigbuild, Node for other
 * platforms, wine's pieces), `.fuzz-cache/tools/` (cargo-fuzz). Only the copies inside this
 * checkout: a cache `$DSH_E2E_CACHE`, `$DSH_FOLD_TARGETS_CACHE` or `$DSH_FOLD_FUZZ_CACHE` points
 * elsewhere is shared with other checkouts and is never removed; it is named, with its size.
 * Kept always: `node_modules/`, the fuzzers' working corpora (`.fuzz-cache/corpus/`, their
 * findings), and `~/.cache/dsh-fold` (what `dsh-fold try` installs for a user; the checkout's
 * tests never write there).
 */
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

const USAGE = `Usage: npm run clean [-- --downloads] [-- --dry-run]
  Removes the checkout's build output: target/, target-core/, target-faults/, target-lint/,
  target-cross/ (but its tools/), npm/<platform>/*.node, bench/tmp/, .fuzz-cache/target/.
  --downloads  also the downloads later runs reuse: .e2e-cache/, target-cross/tools/,
               .fuzz-cache/tools/ (only inside the checkout; caches the environment points
               elsewhere are shared and never removed)
  --dry-run    says what it would remove, removes nothing
  The addon at the checkout's root and node_modules/ stay: the checkout keeps working.`

/** @typedef {{dir: string, what: string}} Entry */

/** Build output. @type {Entry[]} */
const BUILDS = [
  { dir: 'target', what: 'the release build (npm install, npm run build)' },
  { dir: 'target-core', what: "npm test's core tests" },
  { dir: 'target-faults', what: "npm test's fault-injection build" },
  { dir: 'target-lint', what: "npm test's clippy" },
  { dir: 'target-cross', what: 'cross builds (build:targets, the arm64 step)' },
  { dir: 'bench/tmp', what: "the benches' disk folders" },
  { dir: '.fuzz-cache/target', what: 'fuzz builds' },
]
/** Downloads (removed only with --downloads). @type {(Entry & {env: string})[]} */
const DOWNLOADS = [
  { dir: '.e2e-cache', env: 'DSH_E2E_CACHE', what: 'Node 22, the pinned DSH hosts, pnpm and its store, the docs test\'s npm cache' },
  { dir: 'target-cross/tools', env: 'DSH_FOLD_TARGETS_CACHE', what: 'zig, cargo-zigbuild, Node for other platforms' },
  { dir: '.fuzz-cache/tools', env: 'DSH_FOLD_FUZZ_CACHE', what: 'cargo-fuzz' },
]

/** Bytes under a path (0 when absent). @param {string} p */
function sizeOf(p) {
  const st = statSync(p, { throwIfNoEntry: false })
  if (!st) return 0
  if (!st.isDirectory()) return st.size
  let total = 0
  for (const e of readdirSync(p, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) total += statSync(path.join(e.parentPath, e.name), { throwIfNoEntry: false })?.size ?? 0
  }
  return total
}

const human = (/** @type {number} */ bytes) => (bytes >= 1 << 30 ? `${(bytes / (1 << 30)).toFixed(1)} GiB` : `${Math.round(bytes / (1 << 20))} MiB`)

const args = process.argv.slice(2)
if (args.includes('--help') || args.includes('-h')) {
  console.log(USAGE)
  process.exit(0)
}
const unknown = args.filter((a) => !['--downloads', '--dry-run'].includes(a))
if (unknown.length > 0) {
  console.error(`clean: unknown option ${unknown.join(' ')}\n\n${USAGE}`)
  process.exit(64)
}
const downloads = args.includes('--downloads')
const dry = args.includes('--dry-run')

/** Paths to remove, with what they are; downloads kept are listed apart. */
const remove = []
const kept = []
// target-cross/ goes but its tools/ (a download): its other entries, one by one.
for (const entry of BUILDS) {
  const full = path.join(ROOT, entry.dir)
  if (!existsSync(full)) continue
  if (entry.dir === 'target-cross') {
    for (const name of readdirSync(full).filter((n) => n !== 'tools')) remove.push({ path: path.join(full, name), what: entry.what })
  } else remove.push({ path: full, what: entry.what })
}
for (const platform of existsSync(path.join(ROOT, 'npm')) ? readdirSync(path.join(ROOT, 'npm')) : []) {
  for (const f of readdirSync(path.join(ROOT, 'npm', platform)).filter((n) => n.endsWith('.node'))) remove.push({ path: path.join(ROOT, 'npm', platform, f), what: 'a cross-built binary' })
}
for (const entry of DOWNLOADS) {
  const inside = path.join(ROOT, entry.dir)
  const pointed = process.env[entry.env] ? path.resolve(process.env[entry.env] ?? '') : null
  if (pointed && !pointed.startsWith(ROOT + path.sep)) kept.push({ path: pointed, what: `${entry.what}; $${entry.env} points there: shared, never removed by clean` })
  if (!existsSync(inside)) continue
  if (downloads) remove.push({ path: inside, what: entry.what })
  else kept.push({ path: inside, what: `${entry.what}; removed with --downloads` })
}

let freed = 0
for (const r of remove) {
  const bytes = sizeOf(r.path)
  freed += bytes
  console.log(`${dry ? 'would remove' : 'removing'} ${path.relative(ROOT, r.path)} (${human(bytes)}): ${r.what}`)
  if (!dry) rmSync(r.path, { recursive: true, force: true })
}
for (const k of kept) console.log(`keeping ${path.relative(ROOT, k.path).startsWith('..') ? k.path : path.relative(ROOT, k.path)} (${human(sizeOf(k.path))}): ${k.what}`)
console.log(`clean: ${dry ? 'would free' : 'freed'} ${human(freed)}${remove.length === 0 ? ' (nothing to remove)' : ''}`)
