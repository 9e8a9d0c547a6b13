#!/usr/bin/env node
/**
 * @module bin/dsh-fold
 * The `dsh-fold` command: see a fold happen with no model and no key (`demo`), list the
 * marks of a store (`marks`), dry-run a fold over a persisted DSH session log (`fold`), and
 * install, remove or check block mode's `block-ptc` agent preset (`preset`, in preset.mjs).
 * Read-only except `demo` (a temp directory, and `--save FILE`), `economics --html/--svg` (the
 * files named) and `preset install|remove` (only `$DSH_HOME/.agent-presets/block-ptc` and its
 * backups folder).
 *
 * Exit codes: 0 ok; 1 the operation failed or was refused (e.g. NO_CHECKPOINT, EMPTY_REGION,
 * PRESET_MODIFIED); 64 bad usage; 65 a log, store or host file that cannot be read (corrupt,
 * newer format, unexpected shape); 66 a file, host or preset that does not exist; 73 a preset
 * that cannot be written; 70 an internal error (a bug: the stack is printed).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import path from 'node:path'

import { addon } from '../plugin/shared/addon.js'

const HELP = `dsh-fold — fold a DSH agent's finished exploration into a report

Usage:
  dsh-fold demo [--lang en|zh] [--json] [--save FILE]
      Build a realistic DSH session (real @deepseek-ai/dsh-session), mark, fold it with the
      extractive report (no model, no network) and show before/after. --save FILE plays the
      task to its end on the folded context and writes the session log (session.jsonl
      format) for "dsh-fold economics FILE".
  dsh-fold marks [--store PATH] [--session ID] [--json]
      List the checkpoint marks of a store (default $DSH_HOME/storages/checkpoint.json).
  dsh-fold fold FILE [--anchor N | --store PATH] [--lang en|zh] [--json]
      Dry-run a fold over a session log persisted by @deepseek-ai/dsh-session-persistence-jsonl
      (session.jsonl.zstd or session.jsonl): what would be folded from the session's latest
      mark (or --anchor N), the chars saved, the extractive report (the plugin's default budget)
      and how many of the region's paths, commands and error lines it keeps. Writes nothing.
  dsh-fold economics FILE [--json] [--html OUT] [--svg OUT] [--hit-price N] [--miss-price N]
                          [--output-price N] [--currency C]
      Replay a persisted session log and price every model request with and without its folds
      and block commits (DSH's token meter, a prefix-cache model, DeepSeek's price list per 1M
      tokens unless given): tokens freed, input not sent, cached prefix invalidated, report
      calls, and the total bill both ways. --html writes a self-contained page with a chart.
  dsh-fold preset install [--dsh-home DIR] [--host DIR] [--profile NAME] [--force] [--json]
      Write block mode's agent preset to $DSH_HOME/.agent-presets/block-ptc/: the installed
      host's \`code\` preset (found through $DSH_HOME/profiles, or --host DIR) with tool
      presentation \`both\` and the block rows. Refuses to replace a preset you edited (or did
      not get from dsh-fold) unless --force, which first moves it to .dsh-fold-backups/.
  dsh-fold preset remove [--dsh-home DIR] [--force] [--json]
      Remove that preset (same refusal and backup rules).
  dsh-fold preset status [--dsh-home DIR] [--host DIR] [--profile NAME] [--json]
      What is installed, and whether it still matches the host's current \`code\` preset.
  dsh-fold --help

Exit codes: 0 ok, 1 failed or refused (NO_CHECKPOINT, EMPTY_REGION, PRESET_MODIFIED, ...) or
nothing to price (NO_FOLDS), 64 bad usage, 65 unreadable or newer-format log/store/host file,
66 missing file or host, 73 a preset or output file that cannot be written.`

/** The largest anchor the engine takes (a u32 log length; 0xFFFF_FFFF is its "none"). */
const MAX_ANCHOR = 0xffff_fffe

class CliError extends Error {
  /** @param {string} message @param {number} exit */
  constructor(message, exit) {
    super(message)
    this.exit = exit
  }
}

/** @param {string[]} argv */
function parse(argv) {
  /** @type {{_: string[], [k: string]: string | boolean | string[]}} */
  const opts = { _: [] }
  const valued = new Set(['--store', '--session', '--anchor', '--lang', '--dsh-home', '--host', '--profile', '--save', '--html', '--svg', '--hit-price', '--miss-price', '--output-price', '--currency'])
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (valued.has(a)) {
      const v = argv[++i]
      if (v === undefined) throw new CliError(`${a} needs a value`, 64)
      opts[a.slice(2)] = v
    } else if (a === '--json' || a === '--force' || a === '--help' || a === '-h') opts[a === '-h' ? 'help' : a.slice(2)] = true
    else if (a.startsWith('-')) throw new CliError(`unknown option ${a}`, 64)
    else opts._.push(a)
  }
  const lang = opts.lang ?? 'en'
  if (lang !== 'en' && lang !== 'zh') throw new CliError('--lang must be en or zh', 64)
  return { ...opts, lang }
}

async function dsh() {
  try {
    return { ...(await import('@deepseek-ai/dsh-session')), ...(await import('../plugin/shared/mirror.js')), ...(await import('../plugin/shared/session.js')), ...(await import('../plugin/fold/host.js')) }
  } catch (e) {
    throw new CliError(`this command needs @deepseek-ai/dsh-session (a DSH install provides it): ${/** @type {Error} */ (e).message}`, 65)
  }
}

/** The model-visible size of a session's surface, as its mirror meters it. @param {any} session @param {(session: any) => any} mirrorOf */
const visible = (session, mirrorOf) => mirrorOf(session).native.surfacePrice().chars

/** @param {ReturnType<typeof parse>} opts */
async function demo(opts) {
  const { buildDemoSession } = await import('./demo-session.mjs')
  const { mirrorOf, sessionHost } = await dsh()
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-demo-'))
  try {
    const store = path.join(dir, 'storages', 'checkpoint.json')
    const { session, rewindCallId, step } = await buildDemoSession((s) => addon.mark(store, s.id, s.seq, 'find why cargo test -p parser fails'))
    const before = { nodes: session.surface.nodes.length, chars: visible(session, mirrorOf) }
    const { extractiveSummarizer } = await import('../plugin/fold/extractive.js')
    const started = process.hrtime.bigint()
    const result = await addon.rewind(store, session.id, sessionHost(session, extractiveSummarizer({ session, language: /** @type {'en'|'zh'} */ (opts.lang) }), { callId: rewindCallId }))
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    const after = { nodes: session.surface.nodes.length, chars: visible(session, mirrorOf) }
    const report = session.deriveEventMessage(session.events[session.surface.nodes.find((/** @type {number} */ s) => session.events[s].data?.source?.plugin === 'rewind')]).content[0].text
    if (opts.save !== undefined) await saveDemo(session, String(opts.save), result, step())
    if (opts.json) return print({ before, after, result, foldMs: ms, report, ...(opts.save !== undefined ? { saved: opts.save } : {}) }, true)
    console.log(`A DSH session: a user request, a checkpoint, reads, greps, a failing test run, parallel calls.\n`)
    console.log(`before the fold: ${before.nodes} surface nodes, ${before.chars} model-visible chars`)
    console.log(`after the fold:  ${after.nodes} surface nodes, ${after.chars} model-visible chars (${Math.round((100 * (before.chars - after.chars)) / before.chars)}% less)`)
    console.log(`folded ${result.foldedNodes} nodes (seq ${result.start}..${result.end}, ${result.foldedChars} chars) into a ${result.reportChars}-char extractive report in ${ms.toFixed(2)} ms; mark ${result.markId} folded\n`)
    console.log('--- the report the model now sees instead of the exploration ---\n')
    console.log(report)
    if (opts.save !== undefined) console.log(`\n--- the task went on to its end on the folded context; the session log is in ${opts.save} ---\n(price it: dsh-fold economics ${opts.save})`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Plays the demo task to its end after the fold and writes the session's log as the jsonl
 * persistence backend lays it out: a `session` header line, then one event per line.
 * @param {any} session @param {string} file @param {any} result the fold's result @param {number} step
 */
async function saveDemo(session, file, result, step) {
  if (!file.trim()) throw new CliError('--save needs a file path', 64)
  const { continueAfterFold } = await import('./demo-session.mjs')
  const { renderResult } = await import('../plugin/fold/rewind.js')
  continueAfterFold(session, renderResult({ ...result, report: 'extractive' }), step)
  const { SESSION_FORMAT_VERSION } = await dsh()
  const header = { type: 'session', version: SESSION_FORMAT_VERSION, id: session.id, createdAt: session.events[0]?.time ?? 0, cwd: '/work/app' }
  try {
    writeFileSync(file, `${[header, ...session.events].map((e) => JSON.stringify(e)).join('\n')}\n`)
  } catch (e) {
    throw new CliError(`cannot write ${file}: ${/** @type {Error} */ (e).message}`, 73)
  }
}

/** @param {ReturnType<typeof parse>} opts */
async function marks(opts) {
  const { defaultStorePath } = await import('../plugin/fold/checkpoint.js').catch(() => ({ defaultStorePath: undefined }))
  // The documented default, as plugin/fold/checkpoint.js computes it (that import needs the DSH
  // packages); never a path relative to the working directory (an empty DSH_HOME or HOME).
  const store = /** @type {string} */ (opts.store ?? defaultStorePath?.() ?? path.join(process.env.DSH_HOME || path.join(homedir(), '.dsh'), 'storages', 'checkpoint.json'))
  if (!existsSync(store)) throw new CliError(`no checkpoint store at ${store}`, 66)
  if (opts.session === '') throw new CliError('--session needs a non-empty session id', 64)
  const list = await addon.listMarks(store, /** @type {string | undefined} */ (opts.session) ?? null).catch(storeError)
  if (opts.json) return print(list, true)
  if (!list.length) return console.log(`no marks${opts.session ? ` for session ${opts.session}` : ''} in ${store}`)
  const now = Date.now()
  for (const m of list) {
    const state = m.foldedAt === null ? 'active' : 'folded'
    console.log(`#${m.id}\t${state}\t${m.sessionId}\tlogLength ${m.logLength}\t${age(now - m.createdAt)} ago${m.objective ? `\t${m.objective}` : ''}`)
  }
}

/** @param {number} ms */
function age(ms) {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.round(s / 60)}m`
  if (s < 86400) return `${Math.round(s / 3600)}h`
  return `${Math.round(s / 86400)}d`
}

/** @param {any} e @returns {never} */
function storeError(e) {
  throw new CliError(`${e.code ?? 'ERROR'}: ${e.message}`, e.code?.startsWith?.('STORE_') ? 65 : 1)
}

/**
 * Reads a persisted session log into its header and events.
 * @param {string} file
 */
async function readSessionLog(file) {
  const { decodeStorageRecord, SESSION_FORMAT_VERSION } = await dsh()
  let stat
  try {
    stat = statSync(file)
  } catch {
    throw new CliError(`no such file: ${file}`, 66)
  }
  if (stat.isDirectory()) {
    const inner = ['session.jsonl.zstd', 'session.jsonl'].map((f) => path.join(file, f)).find((f) => existsSync(f))
    if (!inner) throw new CliError(`${file} holds no session.jsonl.zstd or session.jsonl`, 66)
    return readSessionLog(inner)
  }
  let text
  try {
    const bytes = readFileSync(file)
    text = file.endsWith('.zstd') ? addon.decodeZstd(bytes).toString('utf8') : bytes.toString('utf8')
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${/** @type {Error} */ (e).message}`, 65)
  }
  const lines = text.split('\n').filter((l) => l.trim())
  if (!lines.length) throw new CliError(`${file} is empty`, 65)
  /** @type {any[]} */
  const rows = []
  for (const [i, line] of lines.entries()) {
    try {
      rows.push(JSON.parse(line))
    } catch {
      throw new CliError(`${file}:${i + 1} is not JSON (truncated or corrupt log)`, 65)
    }
  }
  const [header, ...records] = rows
  if (header?.type !== 'session' || typeof header.id !== 'string') throw new CliError(`${file} does not start with a session header`, 65)
  const known = typeof SESSION_FORMAT_VERSION === 'number' ? SESSION_FORMAT_VERSION : 0
  if (typeof header.version !== 'number' || header.version > known) {
    throw new CliError(`${file} has session format version ${header.version}, newer than the ${known} this DSH reads`, 65)
  }
  let events
  try {
    events = records.flatMap((r) => decodeStorageRecord(r))
  } catch (e) {
    throw new CliError(`${file}: ${/** @type {Error} */ (e).message}`, 65)
  }
  return { header, events }
}

/**
 * Reads a persisted session log and replays it into a real Session.
 * @param {string} file
 */
async function replaySession(file) {
  const { Session, SessionId } = await dsh()
  const { header, events } = await readSessionLog(file)
  const { type: _type, ...meta } = header
  try {
    return { header, events, session: Session.create(SessionId(header.id), events, meta) }
  } catch (e) {
    throw new CliError(`${file} does not replay into a session: ${/** @type {Error} */ (e).message}`, 65)
  }
}

/** @param {ReturnType<typeof parse>} opts */
async function fold(opts) {
  const file = opts._[1]
  if (!file) throw new CliError('fold needs a FILE (session.jsonl.zstd, session.jsonl, or their folder)', 64)
  const { mirrorOf, regionMessages } = await dsh()
  const { header, events, session } = await replaySession(file)
  let anchor
  let markId = null
  if (opts.anchor !== undefined) {
    // Decimal digits only: Number() would take '' as 0 (a fold from the log's start), '1e1', '0x10'.
    anchor = /^\d+$/.test(String(opts.anchor)) ? Number(opts.anchor) : NaN
    if (!(anchor <= MAX_ANCHOR)) throw new CliError(`--anchor must be an integer from 0 to ${MAX_ANCHOR}`, 64)
  } else {
    const { defaultStorePath } = await import('../plugin/fold/checkpoint.js')
    const store = /** @type {string} */ (opts.store ?? defaultStorePath())
    if (!existsSync(store)) throw new CliError(`no checkpoint store at ${store}; pass --store PATH or --anchor N`, 66)
    const mark = await addon.latestMark(store, header.id).catch(storeError)
    if (!mark) throw new CliError(`NO_CHECKPOINT: session ${header.id} has no mark in ${store}; pass --anchor N to try a log length`, 1)
    // As `rewind` does: the latest mark already folded leaves nothing to fold.
    if (mark.foldedAt !== null) {
      throw new CliError(`EMPTY_REGION: checkpoint mark ${mark.id} of session ${header.id} was already folded; pass --anchor ${mark.logLength} to dry-run it anyway`, 1)
    }
    anchor = mark.logLength
    markId = mark.id
  }
  let region
  try {
    // The session's mirror, described once from the replayed log: no snapshot crosses.
    region = addon.selectRegion(mirrorOf(session).native, anchor)
  } catch (e) {
    throw new CliError(`${/** @type {any} */ (e).code}: ${/** @type {Error} */ (e).message}`, 1)
  }
  const messages = regionMessages(session, region.seqs)
  let report
  try {
    // The plugin's budget: the addon's default, a function of the region's size.
    report = addon.extractiveReport(JSON.stringify(messages), { language: opts.lang })
  } catch (e) {
    throw new CliError(`${/** @type {any} */ (e).code}: ${/** @type {Error} */ (e).message}`, 1)
  }
  // Graded independently of the report's code (bin/report-facts.mjs).
  const { regionFacts, keptCounts } = await import('./report-facts.mjs')
  const retention = keptCounts(report, regionFacts(messages))
  const out = {
    sessionId: header.id,
    markId,
    anchor,
    foldedNodes: region.foldedNodes,
    start: region.start,
    end: region.end,
    foldedChars: region.foldedChars,
    reportChars: report.length,
    charsSaved: region.foldedChars - report.length,
    reportRatio: region.foldedChars > 0 ? report.length / region.foldedChars : 0,
    retention,
    report,
  }
  if (opts.json) return print(out, true)
  const kept = (/** @type {{kept: number, total: number}} */ k) => `${k.kept}/${k.total}`
  console.log(`session ${header.id}: ${events.length} events, ${session.surface.nodes.length} surface nodes; anchor ${anchor}${markId ? ` (mark ${markId})` : ''}`)
  console.log(`would fold ${out.foldedNodes} nodes (seq ${out.start}..${out.end}, ${out.foldedChars} chars) into a ${out.reportChars}-char report (${Math.round(100 * out.reportRatio)}%): ${out.charsSaved} chars saved (dry run: nothing written)`)
  console.log(`the report keeps paths ${kept(retention.paths)}, commands ${kept(retention.commands)}, error lines ${kept(retention.errors)} of the region's\n`)
  console.log(report)
}

/** @param {ReturnType<typeof parse>} opts */
async function preset(opts) {
  const verb = opts._[1]
  if (!['install', 'remove', 'status'].includes(verb)) throw new CliError(`preset needs install, remove or status${verb ? ` (got ${verb})` : ''}`, 64)
  if (opts._.length > 2) throw new CliError(`preset ${verb} takes no arguments (got ${opts._.slice(2).join(' ')})`, 64)
  for (const key of ['dsh-home', 'host', 'profile']) if (opts[key] === '') throw new CliError(`--${key} needs a non-empty value`, 64)
  if (verb !== 'install' && verb !== 'remove' && opts.force) throw new CliError('--force applies to preset install and preset remove', 64)
  if (verb === 'remove' && (opts.host !== undefined || opts.profile !== undefined)) throw new CliError('preset remove takes no --host/--profile: it only touches $DSH_HOME', 64)
  const presets = await import('./preset.mjs')
  let out
  try {
    out = verb === 'install' ? await presets.install(opts) : verb === 'remove' ? presets.remove(opts) : await presets.status(opts)
  } catch (e) {
    if (e instanceof presets.PresetError) throw new CliError(`${e.code}: ${e.message}`, e.exit)
    throw e
  }
  if (opts.json) return print(out, true)
  if (verb === 'status') return printPresetStatus(/** @type {any} */ (out))
  const r = /** @type {any} */ (out)
  for (const step of r.recovered ?? []) console.log(`finished an interrupted run: ${step}`)
  if (r.action === 'absent') return console.log(`${presets.PRESET_ID} is not installed at ${r.dir}; nothing removed`)
  if (r.action === 'removed') return console.log(`removed ${r.dir}${r.backup ? ` (moved to ${r.backup})` : ''}`)
  const from = `${r.record.host.package} ${r.record.host.version}'s code preset (${r.record.source.file})`
  if (r.action === 'unchanged') return console.log(`${presets.PRESET_ID} at ${r.dir} is already up to date with ${from}`)
  console.log(`${r.action} ${presets.PRESET_ID} at ${r.dir}\n  from ${from}, host found ${r.host.how}${r.record.commentsKept ? '' : '\n  note: the host file\'s comments could not be kept'}${r.backup ? `\n  your previous folder was moved to ${r.backup}` : ''}`)
  console.log('  choose "Block PTC" when creating a session (restart a running dsh to load the bundle\'s browser half)')
}

/** @param {any} s */
function printPresetStatus(s) {
  const state = { absent: 'not installed', installed: 'installed by dsh-fold, unmodified', modified: `installed by dsh-fold, edited since (${s.changed?.join(', ')})`, foreign: `present but not written by dsh-fold (${s.why})` }[/** @type {string} */ (s.state)]
  console.log(`${s.preset}: ${state}\n  folder: ${s.dir}`)
  if (s.installedBy) console.log(`  written by dsh-fold ${s.installedBy.version} from ${s.installedBy.source} (host ${s.installedBy.hostVersion})`)
  console.log(s.host ? `  host: @deepseek-ai/dsh ${s.host.version} at ${s.host.dir} (${s.host.how})` : `  host: not found (${s.hostError})`)
  if (s.matchesHost !== null) console.log(`  matches the host's current code preset: ${s.matchesHost ? 'yes' : 'no — run `dsh-fold preset install` to refresh it'}`)
  if (s.leftovers?.length) console.log(`  an interrupted install or remove left ${s.leftovers.join(', ')}; the next \`dsh-fold preset install\` or \`remove\` finishes it`)
  if (s.shadowedByShippedPreset) console.log(`  warning: the host ships its own ${s.preset} preset, which shadows this one`)
  console.log(`  profiles with the dsh-fold bundle: ${s.profilesWithDshFold.length ? s.profilesWithDshFold.join(', ') : 'none (add it with \`dsh plugin add dsh-fold\`; the preset\'s rows and the browser half need it)'}`)
}

/** @param {unknown} value @param {boolean} json */
function print(value, json) {
  console.log(json ? JSON.stringify(value, null, 2) : value)
}

async function main() {
  const opts = parse(process.argv.slice(2))
  const verb = opts._[0]
  if (opts.help || verb === 'help') return console.log(HELP)
  if (verb === 'demo') return demo(opts)
  if (verb === 'marks') return marks(opts)
  if (verb === 'fold') return fold(opts)
  if (verb === 'preset') return preset(opts)
  if (verb === 'economics') {
    const { runEconomics } = await import('./economics.mjs')
    return runEconomics(opts, {
      replay: replaySession,
      fail: (message, exit) => {
        throw new CliError(message, exit)
      },
    })
  }
  throw new CliError(verb ? `unknown command ${verb}\n\n${HELP}` : HELP, 64)
}

main().catch((e) => {
  if (e instanceof CliError) {
    console.error(`dsh-fold: ${e.message}`)
    process.exit(e.exit)
  }
  console.error(e)
  process.exit(70)
})
