// @ts-check
/**
 * @module bin/report-facts
 * The facts a fold report must keep, read from a region INDEPENDENTLY of the report's code
 * (nothing here imports or mirrors `crates/fold-core/src/report`), and how many of them a text
 * keeps. The report test (`__test__/report-trajectories.test.mjs`), the report bench
 * (`bench/report.mjs`) and `dsh-fold fold --json` all grade with these definitions:
 *
 * - **paths** the agent itself named: in tool-call arguments, a whole value under a path-like
 *   key (`path`, `filePath`, `file_path`, `dirPath`, `cwd`, ...) and path tokens in every other
 *   argument string except file bodies (`content`, `old_string`, `new_string`, `diff`, ...);
 *   path tokens in the assistant's own text (not in user text, reasoning or tool outputs). A
 *   path token has a `/` and either starts at `/`, `./`, `../` or `~/`, has two slashes, or ends
 *   in `.ext`; or it is a bare `name.ext` with a source-file extension. URLs are not paths.
 * - **commands**: the first line (trimmed) of every shell call's `command` (a tool named like
 *   `bash`, `shell`, `exec`, `terminal`, `command`).
 * - **errors**: trimmed output lines with an error cue (`error`, `fail`, `traceback`, `denied`,
 *   `not found`, `cannot`, ...) at a word start or ending a name before a single `:`
 *   (`TypeError:`), or an error symbol (`✗`, `❌`), of every call but a successful read of a
 *   source, document or data file: a read tool (`read_file`, `read_text_file`, `view_file`,
 *   `Read`, ...) or a shell command that only prints files (`cat`, `head`, `tail`, `nl`, `sed`,
 *   ... piped through filters, redirecting nothing). A read of a log or a program's output file
 *   (`build.log`, `nohup.out`, `test_output.txt`: an output extension, or an output word in a
 *   name whose extension is not a source one) is diagnostics: its error lines count. Each
 *   distinct line counts once.
 *
 * Retention is verbatim: a fact counts as kept when its first 200 chars occur in the text.
 * `headTail` is the baseline, DSH's `tool-result-pruner` applied to the region: every tool
 * output longer than 8192 code points keeps its first 4096 and last 1024 code points around a
 * fixed marker; everything else stays (call arguments decoded from their JSON, so a command is
 * its own text, not its escaped form).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'

/** The recorded agent trajectories the test and the bench grade on. */
export const TRAJECTORY_DIR = path.join(import.meta.dirname, '..', '__test__', 'fixtures', 'trajectories')

/**
 * Every segment the corpus's manifest (`sources.json`) lists, by name order, with its source's
 * agent and model. @returns {{name: string, agent: string, model: string, messages: any[]}[]}
 */
export function loadSegments(dir = TRAJECTORY_DIR) {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'sources.json'), 'utf8'))
  const sources = new Map(manifest.sources.map((/** @type {any} */ s) => [s.id, s]))
  return manifest.segments
    .map((/** @type {any} */ seg) => ({
      name: seg.name,
      agent: sources.get(seg.source).agent,
      model: seg.model ?? sources.get(seg.source).model,
      messages: JSON.parse(readFileSync(path.join(dir, `${seg.name}.json`), 'utf8')),
    }))
    .sort((/** @type {any} */ a, /** @type {any} */ b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

const norm = (/** @type {string} */ k) => k.toLowerCase().replace(/[-_]/g, '')
const PATH_KEYS = new Set(['path', 'filepath', 'file', 'filename', 'targetfile', 'dirpath', 'dir', 'directory', 'cwd', 'workdir', 'notebookpath', 'target'])
const BODY_KEYS = new Set(['content', 'oldstring', 'newstring', 'oldstr', 'newstr', 'filetext', 'text', 'patch', 'diff', 'code', 'insertlines', 'newsource'])
const SHELL = /bash|shell|exec|terminal|command/i
const READ = /^(read|view|open|cat)$|(read|view|open)_?(text_?)?file/i
const EXT = 'py|pyx|pyi|rs|toml|lock|json|js|mjs|cjs|ts|tsx|jsx|md|rst|txt|ini|cfg|yml|yaml|sh|c|h|cc|cpp|go|java|rb|html|css|log|inc|in'
const SLASHED = /(?<![\w.\/~@+:-])(?:~\/|\.{1,2}\/|\/)?[\w@+.-]+(?:\/[\w@+.-]+)+\/?/g
const BARE = new RegExp(`(?<![\\w.\\/~@+-])[A-Za-z_][\\w-]*\\.(?:${EXT})(?![\\w/])`, 'g')

/** Path tokens of free text. @param {string} s @param {Set<string>} out */
function scanPaths(s, out) {
  for (const [m] of s.matchAll(SLASHED)) {
    const tok = m.replace(/[.\-/]+$/, '')
    const last = tok.slice(tok.lastIndexOf('/') + 1)
    const rooted = /^(?:\/|\.{1,2}\/|~\/)/.test(tok)
    const slashes = tok.split('/').length - 1
    if (!/[A-Za-z]/.test(tok)) continue
    if (rooted || slashes >= 2 || /\.[A-Za-z0-9]{1,5}$/.test(last)) out.add(tok)
  }
  for (const [m] of s.matchAll(BARE)) out.add(m)
}

const PRINTS_FILES = new Set(['cat', 'head', 'tail', 'nl', 'less', 'more', 'bat', 'sed'])
const KEEPS_FILE_TEXT = new Set([...PRINTS_FILES, 'grep', 'egrep', 'rg', 'awk', 'cut', 'sort', 'uniq', 'tr'])
const SOURCE_EXT = new Set(EXT.split('|').filter((e) => e !== 'txt' && e !== 'log'))
const OUTPUT_EXT = /\.(?:log|out|err|stderr|stdout|trace)$/i
const OUTPUT_WORD = /^(?:logs?|outputs?|out|stderr|stdout|err|errors|results?|trace|traceback|junit)$/i

/** A log or a program's output file, by its name. @param {string} file */
function isOutputFile(file) {
  const name = file.slice(file.lastIndexOf('/') + 1)
  if (OUTPUT_EXT.test(name)) return true
  const dot = name.lastIndexOf('.')
  if (dot > 0 && SOURCE_EXT.has(name.slice(dot + 1).toLowerCase())) return false
  return name.split(/[._-]/).some((w) => OUTPUT_WORD.test(w))
}

/**
 * The files a shell command's first line only prints (`undefined` when it does anything else):
 * past `cd` and env assignments, a file-printing program naming files, then only filters, and
 * no redirection into a file.
 * @param {string} line
 */
function printedFiles(line) {
  /** @type {string[]} */
  const files = []
  let first = true
  for (const segment of line.split(/\|\|?|;|&&?/)) {
    const words = segment.trim().split(/\s+/).filter(Boolean)
    while (words.length && ((/=/.test(words[0]) && !words[0].startsWith('-')) || ['sudo', 'env', 'time', 'nice', 'nohup', 'exec', 'command', 'builtin'].includes(words[0]))) words.shift()
    if (!words.length) continue
    const program = /** @type {string} */ (words.shift()).split('/').pop() ?? ''
    if (['cd', 'pushd', 'source', '.', 'export', 'set'].includes(program)) continue
    if (!(first ? PRINTS_FILES : KEEPS_FILE_TEXT).has(program)) return undefined
    for (const w of words) {
      if (w === 'tee' || /^1?>/.test(w) || (/>/.test(w) && !w.startsWith('2>')) || (program === 'sed' && w.startsWith('-i'))) return undefined
      if (first && !w.startsWith('-') && !w.startsWith('2>')) files.push(w.replace(/^['"]+|['"]+$/g, ''))
    }
    first = false
  }
  return files.length ? files : undefined
}

/**
 * Whether a call's successful output is a file's content (a read of a file that is not a log
 * or an output file): its error lines are not diagnostics.
 * @param {{name: string, args: any}} c
 */
function readsContent(c) {
  if (READ.test(c.name) && !SHELL.test(c.name)) {
    const target = Object.entries(c.args ?? {}).find(([k, v]) => PATH_KEYS.has(norm(k)) && typeof v === 'string')?.[1]
    return typeof target !== 'string' || !isOutputFile(target.trim())
  }
  if (!SHELL.test(c.name) || typeof c.args.command !== 'string') return false
  const files = printedFiles(c.args.command.split('\n')[0])
  return files !== undefined && !files.some(isOutputFile)
}

/** Tool calls in order with parsed arguments and their outputs. @param {any[]} messages */
export function callsOf(messages) {
  const byId = new Map()
  const calls = []
  for (const m of messages) {
    for (const b of m.content) {
      if (b.type === 'tool-call') {
        let args = b.arguments
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args)
          } catch {
            args = { raw: args }
          }
        }
        const c = { name: b.name, args: args ?? {}, outputs: /** @type {{text: string, isError: boolean}[]} */ ([]) }
        byId.set(b.id, c)
        calls.push(c)
      } else if (b.type === 'tool-result') {
        const text = b.content.filter((/** @type {any} */ x) => x.type === 'text').map((/** @type {any} */ x) => x.text).join('\n')
        byId.get(b.toolCallId)?.outputs.push({ text, isError: !!b.isError })
      }
    }
  }
  return calls
}

/** @param {any} v @param {string} key @param {Set<string>} out */
function argPaths(v, key, out) {
  if (typeof v === 'string') {
    const k = norm(key)
    if (BODY_KEYS.has(k)) return
    if (PATH_KEYS.has(k) && v.trim() && !/\s/.test(v.trim())) out.add(v.trim())
    else scanPaths(v, out)
  } else if (Array.isArray(v)) v.forEach((x) => argPaths(x, key, out))
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) argPaths(x, k, out)
}

const CUES = ['error', 'err!', 'fail', 'panic', 'exception', 'traceback', 'fatal', 'abort', 'denied', 'not found', 'no such file', 'cannot', "can't", 'unable to', 'segmentation fault', 'timed out']
const SYMBOLS = ['✗', '✘', '❌']
/** @param {string} line */
export function isErrorLine(line) {
  const l = line.toLowerCase()
  for (const c of CUES) {
    for (let i = l.indexOf(c); i !== -1; i = l.indexOf(c, i + 1)) {
      const wordStart = i === 0 || !/[a-z]/.test(l[i - 1])
      const nameColon = l[i + c.length] === ':' && l[i + c.length + 1] !== ':'
      if (wordStart || nameColon) return true
    }
  }
  return SYMBOLS.some((s) => line.includes(s))
}

/** The region's model-visible size: text, reasoning, call arguments, outputs (UTF-16 units). */
export function visibleChars(/** @type {any[]} */ messages) {
  let n = 0
  const blocks = (/** @type {any[]} */ bs) => {
    for (const b of bs) {
      if (b.type === 'text' || b.type === 'reasoning') n += b.text.length
      else if (b.type === 'tool-call') n += typeof b.arguments === 'string' ? b.arguments.length : JSON.stringify(b.arguments ?? null).length
      else if (b.type === 'tool-result') blocks(b.content)
    }
  }
  for (const m of messages) blocks(m.content)
  return n
}

/**
 * The facts of a region.
 * @param {any[]} messages
 * @returns {{paths: string[], commands: string[], errors: string[], visible: number}}
 */
export function regionFacts(messages) {
  /** @type {Set<string>} */
  const paths = new Set()
  /** @type {Set<string>} */
  const commands = new Set()
  /** @type {Set<string>} */
  const errors = new Set()
  for (const c of callsOf(messages)) {
    argPaths(c.args, '', paths)
    if (SHELL.test(c.name) && typeof c.args.command === 'string') {
      const first = c.args.command.split('\n')[0].trim()
      if (first) commands.add(first)
    }
    const content = readsContent(c)
    for (const o of c.outputs) {
      if (content && !o.isError) continue
      for (const raw of o.text.split('\n')) {
        const line = raw.trim()
        if (line && isErrorLine(line)) errors.add(line)
      }
    }
  }
  for (const m of messages) {
    if (m.role !== 'assistant') continue
    for (const b of m.content) if (b.type === 'text') scanPaths(b.text, paths)
  }
  return { paths: [...paths], commands: [...commands], errors: [...errors], visible: visibleChars(messages) }
}

const PREFIX = 200
/**
 * Kept fraction of each fact kind (null when the region has none).
 * @param {string} text @param {ReturnType<typeof regionFacts>} facts
 */
export function retention(text, facts) {
  const kept = (/** @type {string[]} */ items) => (items.length ? items.filter((s) => text.includes(s.slice(0, PREFIX))).length / items.length : null)
  return { paths: kept(facts.paths), commands: kept(facts.commands), errors: kept(facts.errors) }
}

/**
 * How many facts of each kind a text keeps, of how many.
 * @param {string} text @param {ReturnType<typeof regionFacts>} facts
 * @returns {{paths: {kept: number, total: number}, commands: {kept: number, total: number}, errors: {kept: number, total: number}}}
 */
export function keptCounts(text, facts) {
  const count = (/** @type {string[]} */ items) => ({ kept: items.filter((s) => text.includes(s.slice(0, PREFIX))).length, total: items.length })
  return { paths: count(facts.paths), commands: count(facts.commands), errors: count(facts.errors) }
}

/**
 * The facts of a region a text does not keep (for failure messages).
 * @param {string} text @param {ReturnType<typeof regionFacts>} facts
 */
export function missing(text, facts) {
  const gone = (/** @type {string[]} */ items) => items.filter((s) => !text.includes(s.slice(0, PREFIX)))
  return { paths: gone(facts.paths), commands: gone(facts.commands), errors: gone(facts.errors) }
}

/** The mean of the numbers in `xs`, skipping nulls (NaN when there are none). @param {(number | null)[]} xs */
export function mean(xs) {
  const v = /** @type {number[]} */ (xs.filter((x) => x !== null))
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN
}

const HEAD = 4096
const TAIL = 1024
const THRESHOLD = 8192
const MARKER = '\n\n[... tool result middle pruned ...]\n\n'

/**
 * The head+tail baseline: the region's model-visible text after DSH's tool-result-pruner (every
 * output over 8192 code points keeps head 4096 + marker + tail 1024 code points). Call
 * arguments are written decoded: the tool name, then each string value on its own line.
 * @param {any[]} messages @returns {string}
 */
export function headTail(messages) {
  const parts = []
  /** @param {any} v @param {string[]} out */
  const strings = (v, out) => {
    if (typeof v === 'string') out.push(v)
    else if (Array.isArray(v)) v.forEach((x) => strings(x, out))
    else if (v && typeof v === 'object') Object.values(v).forEach((x) => strings(x, out))
    else if (v !== null && v !== undefined) out.push(String(v))
  }
  for (const m of messages) {
    for (const b of m.content) {
      if (b.type === 'text' || b.type === 'reasoning') parts.push(b.text)
      else if (b.type === 'tool-call') {
        let args = b.arguments
        if (typeof args === 'string') {
          try {
            args = JSON.parse(args)
          } catch {}
        }
        const out = [b.name]
        strings(args, out)
        parts.push(out.join('\n'))
      } else if (b.type === 'tool-result') {
        for (const x of b.content) {
          if (x.type !== 'text') continue
          const cps = Array.from(x.text)
          parts.push(cps.length > THRESHOLD ? cps.slice(0, HEAD).join('') + MARKER + cps.slice(-TAIL).join('') : x.text)
        }
      }
    }
  }
  return parts.join('\n')
}
