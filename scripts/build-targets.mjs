// @ts-check
/**
 * @module scripts/build-targets
 * `npm run build:targets`: cross-builds the prebuilt binaries on this x64 Linux machine with the
 * commands of scripts/targets.mjs — the release workflow's `napi build --platform --release
 * --target …` rows, plus `-x` where the release builds on a native runner — and puts each binary
 * where `napi artifacts` puts it, `npm/<platform>/dsh-fold.<platform>.node`.
 *
 * It installs what each build needs first (rustup target, zig + cargo-zigbuild from PyPI,
 * Debian's mingw-w64), builds in `target-cross/` (never the dev build's `target/`), and has napi
 * write into `target-cross/napi-out/<platform>/` (`--output-dir`) so the dev build at the repo
 * root and the committed `index.js`/`index.d.ts` stay untouched; the loader and typings a cross
 * build generates must equal the committed ones, or the build fails (a target-dependent export).
 *
 * Each target is built once per run; one failing build does not stop the others. The outcome of
 * every target (built or why not, seconds, bytes, the command) goes to
 * `target-cross/targets.json`, which `npm run test:targets` reads; the exit code is non-zero when
 * a target that should build here did not. Run as `npm run build:targets`, it also records each
 * built target's size and build time (from an empty `target-cross/`, or warm) in the committed
 * `bench/TARGETS.md`, the table docs/building.md quotes (its docs test holds them to it).
 *
 *   node scripts/build-targets.mjs [TARGET...]           TARGET: a triple or platform; default all
 *   node scripts/build-targets.mjs --tools TARGET...     install the tools only; prints the folder
 *                                                        to put first on PATH (the release's build job)
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { ROOT, ToolUnavailable, ensureApt, ensureForeignNode, ensureRustTarget, ensureZig, installSeconds, log } from './target-tools.mjs'
import { TARGETS, binaryName, findTarget, releaseCommand } from './targets.mjs'

export const CROSS_DIR = path.join(ROOT, 'target-cross')
export const MANIFEST = path.join(CROSS_DIR, 'targets.json')
/** The committed record of what the last `npm run build:targets` of each target measured. */
export const RECORD = path.join(ROOT, 'bench', 'TARGETS.md')

/**
 * @typedef {object} BuildResult
 * @property {string} triple
 * @property {string} platform
 * @property {'built' | 'failed' | 'unbuildable'} status
 * @property {string} command what ran (or would run)
 * @property {string} [binary] the placed binary, `npm/<platform>/dsh-fold.<platform>.node`
 * @property {number} [bytes]
 * @property {string} [sha256] of the binary, so a later check knows it tests this build
 * @property {number} [seconds] build time, tools excluded
 * @property {string} [reason] why it did not build
 * @property {Record<string, number>} [tools] seconds spent installing tools for it
 * @property {boolean} [cold] built from an empty `target-cross/<triple>/` (no earlier build to reuse)
 */

/** Reads the last build's outcomes (empty when none). @returns {Record<string, BuildResult>} */
export function readManifest() {
  return existsSync(MANIFEST) ? JSON.parse(readFileSync(MANIFEST, 'utf8')) : {}
}

/**
 * Installs what building `target` needs. @param {import('./targets.mjs').Target} target
 * @returns {string | null} a folder to put first on PATH (zig, cargo-zigbuild), if any
 */
export function ensureTools(target) {
  ensureRustTarget(target.triple)
  if (target.apt.length > 0) ensureApt(target.apt)
  return target.zig ? ensureZig() : null
}

/**
 * The environment `target`'s build needs beyond PATH: windows-gnu gets a `LIBNODE_PATH` folder
 * whose `libnode.dll` is Node for Windows' node.exe (see scripts/targets.mjs).
 * @param {import('./targets.mjs').Target} target @returns {Record<string, string>}
 */
function buildEnv(target) {
  if (target.triple !== 'x86_64-pc-windows-gnu') return {}
  const dir = path.join(CROSS_DIR, 'libnode')
  mkdirSync(dir, { recursive: true })
  const link = path.join(dir, 'libnode.dll')
  rmSync(link, { force: true })
  symlinkSync(ensureForeignNode('win-x64'), link)
  return { LIBNODE_PATH: dir }
}

/**
 * Builds one target and places its binary. Never throws for a build failure: the result says.
 * @param {import('./targets.mjs').Target} target
 * @returns {BuildResult}
 */
export function buildTarget(target) {
  const command = [releaseCommand(target), ...target.hereArgs].join(' ')
  const base = { triple: target.triple, platform: target.platform, command }
  if (target.unbuildable) {
    log(`${target.platform}: not built here — ${target.unbuildable}`)
    return { ...base, status: 'unbuildable', reason: target.unbuildable }
  }
  const before = { ...installSeconds }
  /** @type {Record<string, string>} */
  const env = { ...target.env, CARGO_TARGET_DIR: CROSS_DIR }
  try {
    const bin = ensureTools(target)
    if (bin) env.PATH = `${bin}${path.delimiter}${process.env.PATH}`
    Object.assign(env, buildEnv(target))
  } catch (e) {
    const reason = `${e instanceof ToolUnavailable ? 'tool unavailable' : 'tool install failed'}: ${/** @type {Error} */ (e).message}`
    log(`${target.platform}: ${reason}`)
    return { ...base, status: 'failed', reason }
  }
  const tools = Object.fromEntries(Object.entries(installSeconds).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => Number(v) > 0))

  const cold = !existsSync(path.join(CROSS_DIR, target.triple))
  const out = path.join(CROSS_DIR, 'napi-out', target.platform)
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  // @napi-rs/cli exports no path to its bin; find it through its package.json.
  const napi = path.join(path.dirname(createRequire(import.meta.url).resolve('@napi-rs/cli/package.json')), 'dist', 'cli.js')
  const args = [napi, 'build', '--platform', '--release', ...target.napiArgs, ...target.hereArgs, '--output-dir', out]
  log(`${target.platform}: ${command}  (CARGO_TARGET_DIR=target-cross, --output-dir ${path.relative(ROOT, out)})`)
  const t0 = performance.now()
  const run = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, ...env } })
  const seconds = (performance.now() - t0) / 1000
  const built = path.join(out, binaryName(target))
  if (run.status !== 0 || !existsSync(built)) {
    const reason = run.status !== 0 ? `napi build exited ${run.status ?? run.signal}` : `napi build wrote no ${binaryName(target)}`
    log(`${target.platform}: FAILED after ${seconds.toFixed(0)} s — ${reason}`)
    return { ...base, status: 'failed', reason, seconds, tools }
  }
  for (const generated of ['index.js', 'index.d.ts']) {
    const mine = path.join(out, generated)
    if (existsSync(mine) && readFileSync(mine, 'utf8') !== readFileSync(path.join(ROOT, generated), 'utf8')) {
      const reason = `the ${generated} this build generated differs from the committed one (diff ${path.relative(ROOT, mine)} ${generated}): the addon's exports depend on the target, or ${generated} is stale`
      log(`${target.platform}: FAILED — ${reason}`)
      return { ...base, status: 'failed', reason, seconds, tools }
    }
  }
  const dir = path.join(ROOT, 'npm', target.platform)
  mkdirSync(dir, { recursive: true })
  const binary = path.join(dir, binaryName(target))
  copyFileSync(built, binary)
  const bytes = statSync(binary).size
  const sha256 = createHash('sha256').update(readFileSync(binary)).digest('hex')
  log(`${target.platform}: built in ${seconds.toFixed(0)} s → ${path.relative(ROOT, binary)} (${(bytes / 1024).toFixed(0)} KiB)`)
  return { ...base, status: 'built', binary: path.relative(ROOT, binary), bytes, sha256, seconds, tools, cold }
}

const RECORD_HEAD = `# Prebuilt targets as built here

> Written by \`npm run build:targets\` (scripts/build-targets.mjs): each target's row is replaced when it is built. Size of the binary; build time with tools installed, from an empty \`target-cross/\` (cold) and with it warm (the last rebuild). docs/building.md quotes these figures; its docs test holds them to this table.

| platform | triple | size | cold build | warm build | built |
|---|---|---|---|---|---|
`

/**
 * Replaces the rows of `results`' built targets in bench/TARGETS.md (a cold build sets the cold
 * time, a warm one the warm time; the other is kept). A target that did not build keeps its row.
 * @param {BuildResult[]} results
 * @param {string} [file] the record (bench/TARGETS.md; a test passes its own)
 */
export function recordBuilt(results, file = RECORD) {
  const rows = new Map()
  if (existsSync(file)) {
    for (const line of readFileSync(file, 'utf8').split('\n').filter((l) => /^\| [a-z0-9-]+ \| `/.test(l))) rows.set(line.split('|')[1].trim(), line.split('|').slice(1, -1).map((c) => c.trim()))
  }
  const commit = spawnSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim()
  for (const r of results.filter((x) => x.status === 'built')) {
    const old = rows.get(r.platform) ?? [r.platform, `\`${r.triple}\``, '', '–', '–', '']
    const time = `${Math.round(r.seconds ?? 0)} s`
    rows.set(r.platform, [r.platform, `\`${r.triple}\``, `${Math.round((r.bytes ?? 0) / 1024).toLocaleString('en')} KiB (${(r.bytes ?? 0).toLocaleString('en')} bytes)`, r.cold ? time : old[3], r.cold ? old[4] : time, `${new Date().toISOString().slice(0, 10)}, commit \`${commit}\``])
  }
  const order = TARGETS.map((t) => t.platform)
  const lines = [...rows.values()].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0])).map((c) => `| ${c.join(' | ')} |`)
  writeFileSync(file, `${RECORD_HEAD}${lines.join('\n')}\n`)
}

/**
 * Builds `targets` in order and records each outcome in the manifest as it lands.
 * @param {import('./targets.mjs').Target[]} targets @returns {BuildResult[]}
 */
export function buildTargets(targets) {
  mkdirSync(CROSS_DIR, { recursive: true })
  const results = []
  for (const target of targets) {
    const result = buildTarget(target)
    results.push(result)
    writeFileSync(MANIFEST, `${JSON.stringify({ ...readManifest(), [target.platform]: { ...result, at: new Date().toISOString() } }, null, 2)}\n`)
  }
  return results
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const toolsOnly = args.includes('--tools')
  const names = args.filter((a) => a !== '--tools')
  let targets
  try {
    targets = names.length > 0 ? names.map(findTarget) : TARGETS
  } catch (e) {
    console.error(/** @type {Error} */ (e).message)
    process.exit(64)
  }
  if (toolsOnly) {
    const bins = new Set(targets.filter((t) => !t.unbuildable).map(ensureTools).filter(Boolean))
    console.log([...bins].join(path.delimiter))
    process.exit(0)
  }
  const results = buildTargets(targets)
  recordBuilt(results)
  console.log('\ntarget                      status       seconds  size')
  for (const r of results) {
    const size = r.bytes ? `${(r.bytes / 1024).toFixed(0)} KiB` : ''
    console.log(`${r.triple.padEnd(28)}${r.status.padEnd(13)}${r.seconds ? r.seconds.toFixed(0).padStart(7) : '      -'}  ${size}${r.reason ? `  ${r.reason}` : ''}`)
  }
  const tools = Object.entries(installSeconds)
  if (tools.length > 0) console.log(`\ntool installs this run: ${tools.map(([k, v]) => `${k} ${v.toFixed(0)} s`).join(', ')}`)
  process.exit(results.some((r) => r.status === 'failed') ? 1 : 0)
}
