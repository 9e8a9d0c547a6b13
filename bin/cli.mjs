// @ts-check
/**
 * @module bin/cli
 * What every `dsh-fold` subcommand shares: the command line's grammar, read from each command's
 * usage text; the overview and per-command help generated from those texts; usage errors; the
 * one-line "needs DSH" refusal; and the session-log and store helpers of the commands that read
 * them (demo, fold, marks, economics).
 *
 * A command is a module under `bin/` exporting `command = {usage, run, argHint?}`. Its usage text
 * is its declaration, as in docopt: the synopsis lines (`Usage: dsh-fold VERB …`, the
 * `       dsh-fold VERB …` lines under it, and lines of 20+ spaces that open a `[` group) name
 * every option the command takes; an option followed by a word (`--store PATH`) takes a value,
 * one followed by `]` is a flag; `[--a N | --b M]` makes two options exclusive; a value spelt
 * `en|zh` is a choice checked here; a lowercase word after the verb is an action (one per
 * line: `preset install|remove|status`), an uppercase one its single argument (`FILE`, or
 * `["TASK"]`: optional, and quoted, so a user who split it is told to quote it). `argHint` says
 * what the argument is when it is missing. Everything else a command checks, it checks in its
 * own `run`, in its own module; `run` returns the exit code (or nothing: 0).
 */
import { homedir } from 'node:os'
import path from 'node:path'

export class CliError extends Error {
  /** @param {string} message @param {number} exit */
  constructor(message, exit) {
    super(message)
    this.exit = exit
  }
}

/** Refuses the command line or the operation: `dsh-fold: MESSAGE` on stderr, exit `exit`. @param {string} message @param {number} exit @returns {never} */
export function fail(message, exit) {
  throw new CliError(message, exit)
}

/** @typedef {{_: string[], given: string[], verb?: string, help?: boolean, version?: boolean, [k: string]: any}} Opts */
/** @typedef {{usage: string, argHint?: string, run: (opts: Opts) => Promise<number | void>}} Command */
/**
 * What a usage text declares (see the module's header).
 * @typedef {{name: string, options: Map<string, string | null>, exclusive: string[][], args: [number, number, string], actions: boolean, quoted: boolean}} Grammar
 */

export const EXITS = `Exit codes: 0 ok; 1 failed or refused (NO_CHECKPOINT, EMPTY_REGION, PRESET_MODIFIED, a failed
doctor check, ...) or nothing to price (NO_FOLDS); 64 bad usage; 65 unreadable or newer-format
log/store/host file; 66 missing file or host; 69 the DeepSeek Harness packages are not installed
here; 73 a file that cannot be written.`

const SYNOPSIS = /^(Usage: | {7})dsh-fold |^ {20,}\[/

/** The synopsis lines of a usage text, as the overview shows them. @param {string} usage */
const synopsis = (usage) => usage.split('\n').filter((l) => SYNOPSIS.test(l)).map((l) => `  ${l.replace(/^(Usage: | {7})/, '')}`)

/**
 * Reads a command's grammar from its usage text.
 * @param {string} usage @returns {Grammar}
 */
export function grammarOf(usage) {
  const lines = usage.split('\n').filter((l) => SYNOPSIS.test(l))
  const name = /^Usage: dsh-fold (\S+)/.exec(lines[0] ?? '')?.[1]
  if (!name) throw new Error(`a usage text must open with "Usage: dsh-fold VERB": ${JSON.stringify(usage.slice(0, 60))}`)
  /** @type {Map<string, string | null>} */
  const options = new Map()
  /** @type {string[][]} */
  const exclusive = []
  /** @type {string[]} */
  const actions = []
  /** @type {{name: string, required: boolean, quoted: boolean} | null} */
  let argument = null
  for (const line of lines) {
    const tokens = line.replace(/^(Usage: | {7})dsh-fold \S+/, '').trim().split(/\s+/)
    let depth = 0
    /** @type {string | null} */
    let previous = null
    /** @type {string | null} */
    let either = null
    for (let i = 0; i < tokens.length; i++) {
      const raw = tokens[i]
      const bare = raw.replace(/^\[+/, '').replace(/\]+$/, '')
      depth += raw.length - raw.replace(/^\[+/, '').length
      const closes = raw.length - raw.replace(/\]+$/, '').length
      if (bare.startsWith('--')) {
        const next = tokens[i + 1]
        const valued = closes === 0 && next !== undefined && !/^(\[|--|\|$)/.test(next)
        const value = valued ? next.replace(/\]+$/, '') : null
        if (options.has(bare) && (options.get(bare) === null) !== (value === null)) throw new Error(`${name}: ${bare} is both a flag and valued in its usage`)
        options.set(bare, value)
        if (either) exclusive.push([either, bare])
        either = null
        previous = bare
        if (valued) {
          i++
          depth -= next.length - next.replace(/\]+$/, '').length
        }
      } else if (bare === '|') either = previous
      else if (bare) {
        const quoted = /^".*"$/.test(bare)
        const word = bare.replace(/^"|"$/g, '')
        if (/^[a-z]/.test(word)) actions.push(word)
        else argument = { name: word, required: depth === 0, quoted }
      }
      depth -= closes
    }
  }
  /** @type {[number, number, string]} */
  const args = actions.length ? [1, 1, actions.join('|')] : argument ? [argument.required ? 1 : 0, 1, argument.name] : [0, 0, '']
  return { name, options, exclusive, args, actions: actions.length > 0, quoted: argument?.quoted ?? false }
}

/**
 * The command line of a set of commands: its parser and its help.
 * @param {Command[]} commands in the overview's order
 */
export function program(commands) {
  /** @type {Map<string, Command & {grammar: Grammar}>} */
  const byName = new Map(commands.map((c) => {
    const grammar = grammarOf(c.usage)
    return [grammar.name, { ...c, grammar }]
  }))
  /** Every option of every command: whether it takes a value (options are read before the verb is known). @type {Map<string, boolean>} */
  const valued = new Map()
  for (const { grammar } of byName.values()) {
    for (const [flag, value] of grammar.options) {
      if (valued.has(flag) && valued.get(flag) !== (value !== null)) throw new Error(`${flag} takes a value in one command's usage and not in another's`)
      valued.set(flag, value !== null)
    }
  }
  const overview = `Usage: dsh-fold <subcommand> [options]   (dsh-fold <subcommand> --help for one)

${commands.flatMap((c) => synopsis(c.usage)).join('\n')}
  dsh-fold --help | --version

${EXITS}`

  /**
   * Parses the command line and checks it against the subcommand's grammar.
   * @param {string[]} argv @returns {Opts}
   */
  function parse(argv) {
    /** @type {Opts} */
    const opts = { _: [], given: [] }
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i]
      if (a === '--help' || a === '-h') opts.help = true
      else if (a === '--version' || a === '-V') opts.version = true
      else if (valued.get(a) === true) {
        const v = argv[++i]
        if (v === undefined) fail(`${a} needs a value`, 64)
        opts[a.slice(2)] = v
        opts.given.push(a)
      } else if (valued.get(a) === false) {
        opts[a.slice(2)] = true
        opts.given.push(a)
      } else if (a.startsWith('-') && a !== '-') fail(`unknown option ${a}`, 64)
      else opts._.push(a)
    }
    let verb = opts._[0]
    if (verb === 'help') {
      opts.help = true
      verb = opts._[1]
    }
    if (opts.help || opts.version) return { ...opts, verb }
    if (verb === undefined) fail(`a subcommand is needed\n\n${overview}`, 64)
    const command = byName.get(verb)
    if (!command) fail(`unknown command ${verb}\n\n${overview}`, 64)
    const { options, exclusive, args: [min, max, name], actions, quoted } = command.grammar
    for (const flag of opts.given) if (!options.has(flag)) fail(`${verb} does not take ${flag} (dsh-fold ${verb} --help)`, 64)
    for (const pair of exclusive) {
      if (pair.every((f) => opts.given.includes(f))) fail(`${pair.join(' and ')} exclude each other`, 64)
    }
    const args = opts._.slice(1)
    if (actions && args.length > 1) fail(`${verb} ${args[0]} takes no arguments (got ${args.slice(1).join(' ')})`, 64)
    if (args.length > max) {
      const extra = args.slice(max).join(' ')
      fail(max === 0 ? `${verb} takes no arguments (got ${extra})` : `${verb} takes one ${name} (got also ${extra})${quoted ? `; quote the ${name.toLowerCase()}` : ''}`, 64)
    }
    if (args.length < min) fail(`${verb} needs a ${name}${command.argHint ? ` (${command.argHint})` : ''}`, 64)
    for (const flag of opts.given) {
      const choices = options.get(flag)?.split('|') ?? []
      if (choices.length > 1 && !choices.includes(opts[flag.slice(2)])) fail(`${flag} must be ${choices.slice(0, -1).join(', ')} or ${choices.at(-1)}`, 64)
    }
    return { ...opts, verb }
  }

  /** The help `--help` prints: one command's usage, or the overview. @param {string} [verb] */
  const help = (verb) => {
    const command = verb === undefined ? undefined : byName.get(verb)
    return command ? `${command.usage}\n\n${EXITS}` : overview
  }

  /** @param {string} verb */
  const commandOf = (verb) => /** @type {Command} */ (byName.get(verb))

  return { parse, help, commandOf }
}

// ---- what the commands on a session log or a store share ---------------------------------------

/**
 * Imports modules that need the DeepSeek Harness packages; where they are not installed, one
 * line saying so (exit 69) instead of a module-resolution stack.
 * @template T @param {string} verb @param {() => Promise<T>} load @returns {Promise<T>}
 */
export async function needDsh(verb, load) {
  try {
    return await load()
  } catch (e) {
    const err = /** @type {any} */ (e)
    const missing = err?.code === 'ERR_MODULE_NOT_FOUND' && /['"](@deepseek-ai\/[^'"/]+)/.exec(String(err.message))?.[1]
    if (!missing) throw e
    return fail(`${verb} needs the DeepSeek Harness packages (@deepseek-ai/dsh-session and its peers; ${missing} is not installed here): run it where DSH is installed, e.g. as the profile's own copy (~/.dsh/profiles/<name>/node_modules/.bin/dsh-fold), or from a dsh-fold checkout after npm install`, 69)
  }
}

/** The DSH session packages and the plugin's session helpers. @param {string} verb */
export const dsh = (verb) =>
  needDsh(verb, async () => ({
    ...(await import('@deepseek-ai/dsh-session')),
    ...(await import('../plugin/shared/mirror.js')),
    ...(await import('../plugin/shared/session.js')),
    ...(await import('../plugin/fold/host.js')),
  }))

/** Confirms a written file: on stdout, or on stderr when stdout carries JSON. @param {string} file @param {boolean} json @param {string} [what] */
export const wrote = (file, json, what = '') => (json ? console.error : console.log)(`wrote ${file}${what ? ` (${what})` : ''}`)

/** Prints a value: as indented JSON under `--json`. @param {unknown} value @param {boolean} json */
export function print(value, json) {
  console.log(json ? JSON.stringify(value, null, 2) : value)
}

/** The documented default store: `$DSH_HOME/storages/checkpoint.json` (never relative to the working directory). */
export function defaultStore() {
  return path.join(process.env.DSH_HOME || path.join(homedir(), '.dsh'), 'storages', 'checkpoint.json')
}

/** A store error as the command line reports it (STORE_* codes: exit 65). @param {any} e @returns {never} */
export function storeError(e) {
  return fail(`${e.code ?? 'ERROR'}: ${e.message}`, e.code?.startsWith?.('STORE_') ? 65 : 1)
}

/**
 * Reads a persisted session log (bin/session-log.mjs: as the host reads it); a torn tail is
 * read with a one-line warning on stderr.
 * @param {string} file @param {string} verb
 */
export async function readLog(file, verb) {
  const { decodeStorageRecord, SESSION_FORMAT_VERSION } = await dsh(verb)
  const { readSessionLog, LogError } = await import('./session-log.mjs')
  try {
    const log = readSessionLog(file, { decodeStorageRecord, formatVersion: typeof SESSION_FORMAT_VERSION === 'number' ? SESSION_FORMAT_VERSION : 0 })
    if (log.warning) console.error(`dsh-fold: warning: ${log.warning}`)
    return log
  } catch (e) {
    if (e instanceof LogError) fail(e.message, e.exit)
    throw e
  }
}

/**
 * Replays `events` into a real Session.
 * @param {any} header @param {any[]} events @param {string} file @param {string} verb
 */
export async function replay(header, events, file, verb) {
  const { Session, SessionId } = await dsh(verb)
  const { type: _type, ...meta } = header
  try {
    return Session.create(SessionId(header.id), events, meta)
  } catch (e) {
    return fail(`${file} does not replay into a session: ${/** @type {Error} */ (e).message}`, 65)
  }
}
