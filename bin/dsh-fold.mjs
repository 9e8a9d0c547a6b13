#!/usr/bin/env node
/**
 * @module bin/dsh-fold
 * The `dsh-fold` command: see a fold with no model and no key (`demo`), run one task in a real
 * DSH host (`try`), check an installation (`doctor`), list the marks of a store (`marks`),
 * dry-run a fold over a persisted DSH session log (`fold`), price a session's folds
 * (`economics`), install, remove or check block mode's `block-ptc` agent preset (`preset`), and
 * choose each profile's compaction backend (`compaction`, bin/compaction.mjs: its options, usage
 * and checks are declared there).
 *
 * Conventions: `dsh-fold VERB --help` prints that subcommand's usage only; `--version`; an
 * option a subcommand does not take, a stray positional or two exclusive options are usage
 * errors (64); every file written is confirmed (on stderr under `--json`, which keeps stdout
 * for the JSON); subcommands that need the DeepSeek Harness packages say so in one line (69)
 * where they are not installed. Writes only: `demo --save FILE`, `economics --html/--svg`,
 * `preset install|remove` (`$DSH_HOME/.agent-presets/block-ptc` and its backups folder),
 * `compaction enable|disable` (one profile's `cordis.patch.yml` and its record) and `try` (a
 * temporary DSH home unless `--dsh-home`/`--profile` name one).
 *
 * Exit codes: 0 ok; 1 the operation failed or was refused (NO_CHECKPOINT, EMPTY_REGION,
 * PRESET_MODIFIED, a doctor check, a try run that did not finish); 64 bad usage; 65 a log,
 * store or host file that cannot be read (corrupt, newer format, unexpected shape); 66 a file,
 * host or preset that does not exist; 69 the DeepSeek Harness packages are not installed here;
 * 73 a file that cannot be written; 70 an internal error (a bug: the stack is printed).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { addon } from '../plugin/shared/addon.js'
import { checkpointResultId } from '../plugin/fold/words.js'
import { command as compaction } from './compaction.mjs'

const VERSION = JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')).version

/**
 * Each subcommand: its usage (first line `Usage: dsh-fold VERB ...`), the options it takes,
 * how many positionals, and which options exclude each other.
 * @type {Record<string, {usage: string, options: string[], args: [number, number, string], exclusive?: string[][]}>}
 */
const COMMANDS = {
  demo: {
    usage: `Usage: dsh-fold demo [--lang en|zh] [--json] [--save FILE]
  Build a realistic DSH session (real @deepseek-ai/dsh-session), mark, fold it with the
  extractive report (no model, no network) and show before/after. --save FILE plays the task
  to its end on the folded context and writes the session log (session.jsonl format) for
  the economics subcommand.`,
    options: ['--lang', '--json', '--save'],
    args: [0, 0, ''],
  },
  try: {
    usage: `Usage: dsh-fold try [--profile NAME] [--dsh-home DIR] [--patch FILE] [--cwd DIR] [--compaction] [--keep] [--json] ["TASK"]
  Boot a real DSH host headless with dsh-fold's rows and run one task, printing what the
  model did and each fold. The host is the one you installed (found from \`dsh\` on PATH or
  $DSH_HOME/profiles), else the pinned @deepseek-ai/dsh 0.1.0-rc.8, installed with Node 22
  into dsh-fold's cache on first use (about a minute; $DSH_FOLD_CACHE moves it).
  With DEEPSEEK_API_KEY set the model is DeepSeek's and the task runs in --cwd (default: here);
  without one a scripted model shows checkpoint -> explore -> rewind -> recall on a small
  workspace it writes (TASK is then optional). Without --profile/--dsh-home nothing outside a
  temporary DSH home is touched; with them, that profile (dsh-fold installed in it) is used.
  --patch adds a patch overlay (e.g. block mode's row, with DSH_TOOLS_MODE=both);
  --compaction swaps in dsh-fold/compaction for the run, at a small context window, and the
  scripted model first surveys run logs long enough to compact (each compaction is printed
  like a fold); --keep leaves the temporary DSH home and workspace in place; --json prints the
  run as JSON.`,
    options: ['--profile', '--dsh-home', '--patch', '--cwd', '--compaction', '--keep', '--json'],
    args: [0, 1, 'TASK'],
  },
  doctor: {
    usage: `Usage: dsh-fold doctor [--profile NAME] [--dsh-home DIR] [--json]
  Check an installation, one line per check (✓ or ✗ with the command that fixes it): Node
  (>= 22 for the host and block mode), the host and its version, the launcher on rc.8, the
  dsh-fold bundle in the profile (default: headless) and each of its rows, the compaction
  backend it mounts (and every other profile's, when a swap stops one from starting), what
  block mode needs, the block-ptc preset, the checkpoint store, and the addon binary for this
  platform. Exit 0 only when every check passes.`,
    options: ['--profile', '--dsh-home', '--json'],
    args: [0, 0, ''],
  },
  marks: {
    usage: `Usage: dsh-fold marks [--store PATH] [--session ID] [--json]
  List the checkpoint marks of a store (default $DSH_HOME/storages/checkpoint.json).`,
    options: ['--store', '--session', '--json'],
    args: [0, 0, ''],
  },
  fold: {
    usage: `Usage: dsh-fold fold FILE [--anchor N | --store PATH] [--lang en|zh] [--json]
  Dry-run a fold over a session log persisted by DSH (session.jsonl.zstd, session.jsonl, or
  their folder): what would be folded from the session's latest mark, the chars saved, the
  extractive report (the plugin's default budget) and how many of the region's paths,
  commands and error lines it keeps. The mark is --anchor N (a log length), else the session's
  latest mark in --store (default $DSH_HOME/storages/checkpoint.json), else the latest
  checkpoint call recorded in the log itself. A torn tail (what a crash leaves) is read up to
  the last complete record, with a warning. Writes nothing.`,
    options: ['--anchor', '--store', '--lang', '--json'],
    args: [1, 1, 'FILE'],
    exclusive: [['--anchor', '--store']],
  },
  economics: {
    usage: `Usage: dsh-fold economics FILE [--json] [--html OUT] [--svg OUT]
                          [--hit-price N --miss-price N --output-price N [--currency C]]
  Replay a persisted session log and price every model request with and without its folds
  and block commits (DSH's token meter, a prefix-cache model, DeepSeek's USD price list per 1M
  tokens unless prices are given; --currency names their currency): tokens freed, input not
  sent, cached prefix invalidated, report calls, and the total bill both ways. --html writes a
  self-contained page with a chart, --svg the chart alone.`,
    options: ['--json', '--html', '--svg', '--hit-price', '--miss-price', '--output-price', '--currency'],
    args: [1, 1, 'FILE'],
  },
  preset: {
    usage: `Usage: dsh-fold preset install [--dsh-home DIR] [--host DIR] [--profile NAME] [--force] [--json]
       dsh-fold preset remove [--dsh-home DIR] [--force] [--json]
       dsh-fold preset status [--dsh-home DIR] [--host DIR] [--profile NAME] [--json]
  install: write block mode's agent preset to $DSH_HOME/.agent-presets/block-ptc/: the
  installed host's \`code\` preset (found through $DSH_HOME/profiles, or --host DIR) with tool
  presentation \`both\` and the block rows. Refuses to replace a preset you edited (or did not
  get from dsh-fold) unless --force, which first moves it to .dsh-fold-backups/.
  remove: remove that preset (same refusal and backup rules).
  status: what is installed, and whether it still matches the host's current \`code\` preset.`,
    options: ['--dsh-home', '--host', '--profile', '--force', '--json'],
    args: [1, 1, 'install|remove|status'],
  },
  compaction,
}

const EXITS = `Exit codes: 0 ok; 1 failed or refused (NO_CHECKPOINT, EMPTY_REGION, PRESET_MODIFIED, a failed
doctor check, ...) or nothing to price (NO_FOLDS); 64 bad usage; 65 unreadable or newer-format
log/store/host file; 66 missing file or host; 69 the DeepSeek Harness packages are not installed
here; 73 a file that cannot be written.`

/** The synopsis lines of a usage text (its `dsh-fold ...` lines, continuation lines included). @param {string} usage */
const synopsis = (usage) => usage.split('\n').filter((l) => /^(Usage: | {7})dsh-fold |^ {20,}\[/.test(l)).map((l) => `  ${l.replace(/^(Usage: | {7})/, '')}`)

const HELP = `Usage: dsh-fold <subcommand> [options]   (dsh-fold <subcommand> --help for one)

${Object.values(COMMANDS).flatMap((c) => synopsis(c.usage)).join('\n')}
  dsh-fold --help | --version

${EXITS}`

/** Options that take a value; every other option is a flag. */
const VALUED = new Set(['--store', '--session', '--anchor', '--lang', '--dsh-home', '--host', '--profile', '--save', '--html', '--svg', '--hit-price', '--miss-price', '--output-price', '--currency', '--patch', '--cwd'])
const FLAGS = new Set(['--json', '--force', '--keep', '--compaction'])

/** The largest anchor the engine takes (a u32 log length; 0xFFFF_FFFF is its "none"). */
const MAX_ANCHOR = 0xffff_fffe

class CliError extends Error {
  /** @param {string} message @param {number} exit */
  constructor(message, exit) {
    super(message)
    this.exit = exit
  }
}

/**
 * Parses the command line and checks it against the subcommand's options and arguments.
 * @param {string[]} argv
 * @returns {{verb?: string, help?: boolean, version?: boolean, _: string[], [k: string]: any}}
 */
function parse(argv) {
  /** @type {{_: string[], given: string[], [k: string]: any}} */
  const opts = { _: [], given: [] }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') opts.help = true
    else if (a === '--version' || a === '-V') opts.version = true
    else if (VALUED.has(a)) {
      const v = argv[++i]
      if (v === undefined) throw new CliError(`${a} needs a value`, 64)
      opts[a.slice(2)] = v
      opts.given.push(a)
    } else if (FLAGS.has(a)) {
      opts[a.slice(2)] = true
      opts.given.push(a)
    } else if (a.startsWith('-') && a !== '-') throw new CliError(`unknown option ${a}`, 64)
    else opts._.push(a)
  }
  let verb = opts._[0]
  if (verb === 'help') {
    opts.help = true
    verb = opts._[1]
  }
  if (opts.help || opts.version) return { ...opts, verb }
  if (verb === undefined) throw new CliError(`a subcommand is needed\n\n${HELP}`, 64)
  const spec = COMMANDS[verb]
  if (!spec) throw new CliError(`unknown command ${verb}\n\n${HELP}`, 64)
  for (const flag of opts.given) if (!spec.options.includes(flag)) throw new CliError(`${verb} does not take ${flag} (dsh-fold ${verb} --help)`, 64)
  for (const pair of spec.exclusive ?? []) {
    if (pair.every((f) => opts.given.includes(f))) throw new CliError(`${pair.join(' and ')} exclude each other`, 64)
  }
  const [min, max, name] = spec.args
  const args = opts._.slice(1)
  if ((verb === 'preset' || verb === 'compaction') && args.length > 1) throw new CliError(`${verb} ${args[0]} takes no arguments (got ${args.slice(1).join(' ')})`, 64)
  if (args.length > max) {
    const extra = args.slice(max).join(' ')
    throw new CliError(max === 0 ? `${verb} takes no arguments (got ${extra})` : `${verb} takes one ${name} (got also ${extra})${verb === 'try' ? '; quote the task' : ''}`, 64)
  }
  if (args.length < min) throw new CliError(`${verb} needs a ${name}${verb === 'fold' || verb === 'economics' ? ' (session.jsonl.zstd, session.jsonl, or their folder)' : ''}`, 64)
  const lang = opts.lang ?? 'en'
  if (lang !== 'en' && lang !== 'zh') throw new CliError('--lang must be en or zh', 64)
  return { ...opts, verb, lang }
}

/**
 * Imports modules that need the DeepSeek Harness packages; where they are not installed, one
 * line saying so (exit 69) instead of a module-resolution stack.
 * @template T @param {string} verb @param {() => Promise<T>} load @returns {Promise<T>}
 */
async function needDsh(verb, load) {
  try {
    return await load()
  } catch (e) {
    const err = /** @type {any} */ (e)
    const missing = err?.code === 'ERR_MODULE_NOT_FOUND' && /['"](@deepseek-ai\/[^'"/]+)/.exec(String(err.message))?.[1]
    if (!missing) throw e
    throw new CliError(`${verb} needs the DeepSeek Harness packages (@deepseek-ai/dsh-session and its peers; ${missing} is not installed here): run it where DSH is installed, e.g. as the profile's own copy (~/.dsh/profiles/<name>/node_modules/.bin/dsh-fold), or from a dsh-fold checkout after npm install`, 69)
  }
}

/** The DSH session packages and the plugin's session helpers. @param {string} verb */
const dsh = (verb) =>
  needDsh(verb, async () => ({
    ...(await import('@deepseek-ai/dsh-session')),
    ...(await import('../plugin/shared/mirror.js')),
    ...(await import('../plugin/shared/session.js')),
    ...(await import('../plugin/fold/host.js')),
  }))

/** Confirms a written file: on stdout, or on stderr when stdout carries JSON. @param {string} file @param {boolean} json @param {string} [what] */
const wrote = (file, json, what = '') => (json ? console.error : console.log)(`wrote ${file}${what ? ` (${what})` : ''}`)

/** The model-visible size of a session's surface, as its mirror meters it. @param {any} session @param {(session: any) => any} mirrorOf */
const visible = (session, mirrorOf) => mirrorOf(session).native.surfacePrice().chars

/** @param {ReturnType<typeof parse>} opts */
async function demo(opts) {
  const { buildDemoSession } = await needDsh('demo', () => import('./demo-session.mjs'))
  const { mirrorOf, sessionHost } = await dsh('demo')
  if (opts.save !== undefined && !String(opts.save).trim()) throw new CliError('--save needs a file path', 64)
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-demo-'))
  const store = path.join(dir, 'storages', 'checkpoint.json')
  try {
    const objective = 'find why cargo test -p parser fails'
    const language = /** @type {'en'|'zh'} */ (opts.lang)
    const { session, rewindCallId, step } = await buildDemoSession((s) => addon.mark(store, s.id, s.seq, objective))
    const before = { nodes: session.surface.nodes.length, chars: visible(session, mirrorOf) }
    const { extractiveSummarizer } = await import('../plugin/fold/extractive.js')
    const { reportFrame } = await import('../plugin/fold/rewind.js')
    // The report in the frame the rewind row commits it in (what the model reads).
    const frame = (/** @type {number} */ id) => reportFrame({ id, objective }, true, language)
    const started = process.hrtime.bigint()
    const result = await addon.rewind(store, session.id, sessionHost(session, extractiveSummarizer({ session, language }), { callId: rewindCallId, frame }))
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    const after = { nodes: session.surface.nodes.length, chars: visible(session, mirrorOf) }
    const report = session.deriveEventMessage(session.events[session.surface.nodes.find((/** @type {number} */ s) => session.events[s].data?.source?.plugin === 'rewind')]).content[0].text
    if (opts.save !== undefined) await saveDemo(session, String(opts.save), result, step, language)
    if (opts.json) {
      print({ before, after, result, foldMs: ms, report, ...(opts.save !== undefined ? { saved: opts.save } : {}) }, true)
      if (opts.save !== undefined) wrote(String(opts.save), true, 'the demo session log')
      return
    }
    console.log(`A DSH session: a user request, a checkpoint, reads, greps, a failing test run, parallel calls.\n`)
    console.log(`before the fold: ${before.nodes} surface nodes, ${before.chars} model-visible chars`)
    console.log(`after the fold:  ${after.nodes} surface nodes, ${after.chars} model-visible chars (${Math.round((100 * (before.chars - after.chars)) / before.chars)}% less)`)
    console.log(`folded ${result.foldedNodes} nodes (seq ${result.start}..${result.end}, ${result.foldedChars} chars) into a ${result.reportChars}-char extractive report in ${ms.toFixed(2)} ms; mark ${result.markId} folded\n`)
    console.log('--- the report the model now sees instead of the exploration ---\n')
    console.log(report)
    if (opts.save !== undefined) {
      console.log(`\n--- the task went on to its end on the folded context ---`)
      wrote(String(opts.save), false, `the session log; price it: dsh-fold economics ${opts.save}`)
    }
  } finally {
    // The fold's stamp is written after the fold resolved: the store is closed (the stamp has
    // landed) before its folder goes, or the stamp would bring the folder back.
    await addon.closeStore(store)
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Plays the demo task to its end after the fold and writes the session's log as the jsonl
 * persistence backend lays it out: a `session` header line, then one event per line.
 * @param {any} session @param {string} file @param {any} result the fold's result @param {() => number} step
 * @param {'en' | 'zh'} lang the demo's language
 */
async function saveDemo(session, file, result, step, lang) {
  const { continueAfterFold } = await import('./demo-session.mjs')
  const { renderResult } = await import('../plugin/fold/rewind.js')
  continueAfterFold(session, renderResult({ ...result, report: 'extractive' }, lang), step())
  const { SESSION_FORMAT_VERSION } = await dsh('demo')
  const header = { type: 'session', version: SESSION_FORMAT_VERSION, id: session.id, createdAt: session.events[0]?.time ?? 0, cwd: '/work/app' }
  try {
    writeFileSync(file, `${[header, ...session.events].map((e) => JSON.stringify(e)).join('\n')}\n`)
  } catch (e) {
    throw new CliError(`cannot write ${file}: ${/** @type {Error} */ (e).message}`, 73)
  }
}

/** The documented default store: `$DSH_HOME/storages/checkpoint.json` (never relative to the working directory). */
function defaultStore() {
  return path.join(process.env.DSH_HOME || path.join(homedir(), '.dsh'), 'storages', 'checkpoint.json')
}

/** @param {ReturnType<typeof parse>} opts */
async function marks(opts) {
  const store = /** @type {string} */ (opts.store ?? defaultStore())
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
 * Reads a persisted session log (bin/session-log.mjs: as the host reads it); a torn tail is
 * read with a one-line warning on stderr.
 * @param {string} file @param {string} verb
 */
async function readLog(file, verb) {
  const { decodeStorageRecord, SESSION_FORMAT_VERSION } = await dsh(verb)
  const { readSessionLog, LogError } = await import('./session-log.mjs')
  try {
    const log = readSessionLog(file, { decodeStorageRecord, formatVersion: typeof SESSION_FORMAT_VERSION === 'number' ? SESSION_FORMAT_VERSION : 0 })
    if (log.warning) console.error(`dsh-fold: warning: ${log.warning}`)
    return log
  } catch (e) {
    if (e instanceof LogError) throw new CliError(e.message, e.exit)
    throw e
  }
}

/**
 * Replays `events` into a real Session.
 * @param {any} header @param {any[]} events @param {string} file @param {string} verb
 */
async function replay(header, events, file, verb) {
  const { Session, SessionId } = await dsh(verb)
  const { type: _type, ...meta } = header
  try {
    return Session.create(SessionId(header.id), events, meta)
  } catch (e) {
    throw new CliError(`${file} does not replay into a session: ${/** @type {Error} */ (e).message}`, 65)
  }
}

/**
 * The latest checkpoint call recorded in a log: the last successful tool result the checkpoint
 * tool rendered (`Checkpoint N set…`, either language; or, as earlier versions rendered it, the
 * value itself, `{"id": N, "logLength": M}`), and where (if anywhere) the log holds that mark's
 * fold. The log keeps only the rendered text, so the mark's log length is where the tool ran:
 * the result's own seq when nothing but log-only events came between its call and it (the mark is
 * taken while the tool runs, right before its result), else just after the call's `tool/call`
 * event (parallel calls answered first: the earliest it can be).
 * @param {any[]} events
 * @returns {{id: number, logLength: number, seq: number, foldedAt: number | null} | null}
 */
function checkpointInLog(events) {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]
    if (e.type !== 'tool/result') continue
    for (const block of e.data?.message?.content ?? []) {
      if (block?.type !== 'tool-result' || block.isError) continue
      const text = (block.content ?? []).filter((/** @type {any} */ c) => c?.type === 'text').map((/** @type {any} */ c) => c.text).join('')
      const mark = markOfResult(text, events, e, block.toolCallId)
      if (!mark) continue
      // Its fold, if the log holds it: the rewind report naming the mark, appended after it.
      const report = events.find((x) => x.seq > e.seq && x.type === 'user/message' && x.data?.source?.plugin === 'rewind' && x.data?.source?.markId === mark.id)
      return { ...mark, seq: e.seq, foldedAt: report ? report.seq : null }
    }
  }
  return null
}

/**
 * Why a dry run found nothing to fold, said from what the log holds after the mark (the
 * addon's wording speaks of the rewind call, which a dry run does not have); null when
 * nothing on the surface follows the mark (the addon's "no surface nodes after the checkpoint
 * mark" says it).
 * @param {any} session the replayed session
 * @param {{anchor: number, markId: number | null, markFrom: 'anchor' | 'store' | 'log', torn: boolean}} mark
 * @returns {string | null}
 */
function nothingToFold(session, { anchor, markId, markFrom, torn }) {
  const events = session.events
  const after = session.surface.nodes.filter((/** @type {number} */ seq) => seq >= anchor)
  if (after.length === 0) return null
  const contentOf = (/** @type {number} */ seq) => events[seq].data?.message?.content ?? []
  /** Call id → the seq of the step after the mark that made it. @type {Map<string, number>} */
  const stepOf = new Map()
  for (const seq of after) {
    if (events[seq].type !== 'assistant/message') continue
    for (const b of contentOf(seq)) if (b?.type === 'tool-call') stepOf.set(b.id, seq)
  }
  /** Step seq → how many of its calls have a result on the surface. @type {Map<number, number>} */
  const resultsOf = new Map()
  /** @type {Set<string>} */
  const whys = new Set()
  /** What follows the mark, in order: a sentence, or a step's seq (told once its results are counted). @type {Array<string | number>} */
  const held = []
  for (const seq of after) {
    const e = events[seq]
    if (e.type === 'tool/result') {
      const ids = contentOf(seq).map((/** @type {any} */ b) => b?.toolCallId)
      const step = ids.map((/** @type {string} */ id) => stepOf.get(id)).find((s) => s !== undefined)
      if (step !== undefined) {
        resultsOf.set(step, (resultsOf.get(step) ?? 0) + ids.length)
        continue // told with its step
      }
      const text = contentOf(seq).flatMap((/** @type {any} */ b) => b?.content ?? []).map((/** @type {any} */ c) => c?.text ?? '').join('')
      if (/^\{"id":\d+,"logLength":\d+\}$/.test(text.trim()) || checkpointResultId(text) !== undefined) {
        whys.add("the checkpoint's call and result stay visible")
        held.push(`the checkpoint call's own result (seq ${seq})`)
      } else {
        whys.add('a result stays with its call, which stands before the mark')
        held.push(`a tool result (seq ${seq})`)
      }
    } else if (e.type === 'assistant/message') {
      held.push(seq)
    } else held.push(`a ${e.type} event (seq ${seq})`)
  }
  const told = held.map((seq) => {
    if (typeof seq === 'string') return seq
    const calls = contentOf(seq).filter((/** @type {any} */ b) => b?.type === 'tool-call').length
    if (calls === 0) {
      whys.add("the model's last answer stays")
      return `the model's answer at seq ${seq}`
    }
    const open = calls - (resultsOf.get(seq) ?? 0)
    if (open <= 0) return `the model's step at seq ${seq} with its results`
    whys.add('a step still waiting for its results is never folded')
    const calling = calls === 1 ? 'whose tool call has' : open === calls ? `whose ${calls} tool calls have` : `${open} of whose ${calls} tool calls ${open === 1 ? 'has' : 'have'}`
    return `the model's step at seq ${seq}, ${calling} no result`
  })
  const last = events.length - 1
  const part = torn ? `the readable part (seq 0..${last}; the torn tail after it is dropped)` : `the log (seq 0..${last})`
  const mark = markId === null ? `log length ${anchor} (--anchor)` : `checkpoint mark ${markId} (log length ${anchor}, ${markFrom === 'log' ? "read from the log's checkpoint call" : 'from the store'})`
  const list = told.length === 1 ? told[0] : `${told.slice(0, -1).join(', ')} and ${told.at(-1)}`
  return `nothing to fold after ${mark}: ${part} holds after the mark only ${list}; ${[...whys].join(', and ')}, so nothing is left to fold`
}

/**
 * The mark a checkpoint result names, and its log length, or null for any other result.
 * @param {string} text @param {any[]} events @param {any} result the `tool/result` event @param {string} callId
 */
function markOfResult(text, events, result, callId) {
  let value
  try {
    value = JSON.parse(text)
  } catch {
    // Not the legacy value: the rendered result.
  }
  const keys = value && typeof value === 'object' ? Object.keys(value).sort().join(',') : ''
  if (keys === 'id,logLength' && Number.isInteger(value.id) && Number.isInteger(value.logLength)) return { id: value.id, logLength: value.logLength }
  const id = checkpointResultId(text)
  if (id === undefined) return null
  let call = -1
  for (let j = result.seq - 1; j >= 0 && call < 0; j--) {
    const x = events[j]
    if ((x.type === 'tool/call' && x.data?.callId === callId) || (x.type === 'assistant/message' && x.data?.message?.content?.some((/** @type {any} */ b) => b?.type === 'tool-call' && b.id === callId))) call = j
  }
  const between = events.slice(call + 1, result.seq)
  const quiet = between.every((x) => !['user/message', 'assistant/message', 'tool/result'].includes(x.type))
  return { id, logLength: quiet || call < 0 ? result.seq : call + 1 }
}

/** @param {ReturnType<typeof parse>} opts */
async function fold(opts) {
  const file = opts._[1]
  const { mirrorOf, regionMessages } = await dsh('fold')
  const { header, events, warning } = await readLog(file, 'fold')
  let anchor
  let markId = null
  /** @type {'anchor' | 'store' | 'log'} */
  let markFrom = 'anchor'
  /** @type {string[]} */
  const notes = []
  let replayed = events
  if (opts.anchor !== undefined) {
    // Decimal digits only: Number() would take '' as 0 (a fold from the log's start), '1e1', '0x10'.
    anchor = /^\d+$/.test(String(opts.anchor)) ? Number(opts.anchor) : NaN
    if (!(anchor <= MAX_ANCHOR)) throw new CliError(`--anchor must be an integer from 0 to ${MAX_ANCHOR}`, 64)
  } else {
    const store = /** @type {string} */ (opts.store ?? defaultStore())
    const mark = existsSync(store) ? await addon.latestMark(store, header.id).catch(storeError) : null
    if (opts.store !== undefined && !existsSync(store)) throw new CliError(`no checkpoint store at ${store}`, 66)
    if (opts.store !== undefined && !mark) throw new CliError(`NO_CHECKPOINT: session ${header.id} has no mark in ${store}; pass --anchor N to try a log length`, 1)
    if (mark) {
      markFrom = 'store'
      // As `rewind` does: the latest mark already folded leaves nothing to fold.
      if (mark.foldedAt !== null && !checkpointInLog(events)?.foldedAt) {
        throw new CliError(`EMPTY_REGION: checkpoint mark ${mark.id} of session ${header.id} was already folded; pass --anchor ${mark.logLength} to dry-run it anyway`, 1)
      }
      anchor = mark.logLength
      markId = mark.id
    } else {
      const found = checkpointInLog(events)
      const where = existsSync(store) ? `no mark of session ${header.id} in ${store}` : `no checkpoint store at ${store}`
      if (!found) throw new CliError(`NO_CHECKPOINT: ${where} and no checkpoint call in the log; pass --store PATH or --anchor N`, 1)
      markFrom = 'log'
      notes.push(`${where}; using the log's latest checkpoint call: mark ${found.id} (log length ${found.logLength}) from its result at seq ${found.seq}`)
      anchor = found.logLength
      markId = found.id
    }
    // A mark the log shows folded: dry-run the fold as it stood, on the log before its commit.
    const inLog = checkpointInLog(events)
    if (inLog && inLog.id === markId && inLog.logLength === anchor && inLog.foldedAt !== null) {
      // The commit is the report, with DSH's shadow-price event right before it when a meter was mounted.
      const cut = events[inLog.foldedAt - 1]?.type === 'compaction/prune' ? inLog.foldedAt - 1 : inLog.foldedAt
      notes.push(`mark ${markId} was folded at seq ${inLog.foldedAt} in this log: dry-running the fold on the log before it (seq 0..${cut - 1})`)
      replayed = events.slice(0, cut)
    }
  }
  const session = await replay(header, replayed, file, 'fold')
  let region
  try {
    // The session's mirror, described once from the replayed log: no snapshot crosses.
    region = addon.selectRegion(mirrorOf(session).native, anchor)
  } catch (e) {
    const why = /** @type {any} */ (e).code === 'EMPTY_REGION' ? nothingToFold(session, { anchor, markId, markFrom, torn: warning !== null }) : null
    throw new CliError(`${/** @type {any} */ (e).code}: ${why ?? /** @type {Error} */ (e).message}`, 1)
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
    markFrom,
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
    ...(notes.length ? { notes } : {}),
  }
  if (opts.json) return print(out, true)
  const kept = (/** @type {{kept: number, total: number}} */ k) => `${k.kept}/${k.total}`
  for (const note of notes) console.log(note)
  console.log(`session ${header.id}: ${replayed.length} events, ${session.surface.nodes.length} surface nodes; anchor ${anchor}${markId ? ` (mark ${markId})` : ''}`)
  console.log(`would fold ${out.foldedNodes} nodes (seq ${out.start}..${out.end}, ${out.foldedChars} chars) into a ${out.reportChars}-char report (${Math.round(100 * out.reportRatio)}%): ${out.charsSaved} chars saved (dry run: nothing written)`)
  console.log(`the report keeps paths ${kept(retention.paths)}, commands ${kept(retention.commands)}, error lines ${kept(retention.errors)} of the region's\n`)
  console.log(report)
}

/** @param {ReturnType<typeof parse>} opts */
async function preset(opts) {
  const verb = opts._[1]
  if (!['install', 'remove', 'status'].includes(verb)) throw new CliError(`preset needs install, remove or status (got ${verb})`, 64)
  for (const key of ['dsh-home', 'host', 'profile']) if (opts[key] === '') throw new CliError(`--${key} needs a non-empty value`, 64)
  if (verb === 'status' && opts.force) throw new CliError('preset status does not take --force (dsh-fold preset --help)', 64)
  if (verb === 'remove' && (opts.host !== undefined || opts.profile !== undefined)) throw new CliError('preset remove takes no --host/--profile: it only touches $DSH_HOME', 64)
  const presets = await import('./preset.mjs')
  if (verb !== 'remove' && opts.host === undefined) {
    // A profile made by `dsh plugin add` links no host packages until `dsh` first runs it: then
    // the host is the one `dsh` on PATH runs.
    try {
      presets.findHost(opts, presets.resolveDshHome(opts))
    } catch (e) {
      const { hostOnPath } = await import('./host/find.mjs')
      const onPath = e instanceof presets.PresetError && e.code === 'HOST_NOT_FOUND' ? hostOnPath() : null
      if (onPath) opts = { ...opts, host: onPath.dir }
    }
  }
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
  console.log(`  profiles with the dsh-fold bundle: ${s.profilesWithDshFold.length ? s.profilesWithDshFold.join(', ') : 'none (add it with `dsh plugin --profile NAME add dsh-fold`; the preset\'s rows and the browser half need it)'}`)
}

/** @param {unknown} value @param {boolean} json */
function print(value, json) {
  console.log(json ? JSON.stringify(value, null, 2) : value)
}

async function main() {
  const opts = parse(process.argv.slice(2))
  if (opts.version) return console.log(`dsh-fold ${VERSION}`)
  if (opts.help) return console.log(opts.verb && COMMANDS[opts.verb] ? `${COMMANDS[opts.verb].usage}\n\n${EXITS}` : HELP)
  const fail = (/** @type {string} */ message, /** @type {number} */ exit) => {
    throw new CliError(message, exit)
  }
  switch (opts.verb) {
    case 'demo':
      return demo(opts)
    case 'marks':
      return marks(opts)
    case 'fold':
      return fold(opts)
    case 'preset':
      return preset(opts)
    case 'try': {
      const { runTry } = await import('./try.mjs')
      process.exitCode = await runTry(opts, { fail })
      return
    }
    case 'compaction': {
      const { runCompaction } = await import('./compaction.mjs')
      process.exitCode = await runCompaction(opts, { fail })
      return
    }
    case 'doctor': {
      const { runDoctor } = await import('./doctor.mjs')
      process.exitCode = await runDoctor(opts, { fail })
      return
    }
    case 'economics': {
      const { runEconomics } = await needDsh('economics', () => import('./economics.mjs'))
      return runEconomics(opts, {
        replay: async (/** @type {string} */ file) => {
          const { header, events } = await readLog(file, 'economics')
          return { header, events, session: await replay(header, events, file, 'economics') }
        },
        fail,
        wrote: (/** @type {string} */ file, /** @type {string} */ what) => wrote(file, Boolean(opts.json), what),
      })
    }
  }
}

main().catch((e) => {
  if (e instanceof CliError) {
    console.error(`dsh-fold: ${e.message}`)
    process.exit(e.exit)
  }
  console.error(e)
  process.exit(70)
})
