// @ts-check
/**
 * @module bin/session-log
 * The CLI's one reader of persisted DSH session logs (`session.jsonl.zstd`, `session.jsonl`, or
 * their session folder), used by `dsh-fold fold`, `economics` and `try`. It reads a log the way
 * the host's own backend (`@deepseek-ai/dsh-session-persistence-jsonl`, `readPrefix`) reads it
 * when it reopens a session, so a log the host would open is read to the same events and a log
 * the host would refuse is refused:
 *
 * - the first line (JSONL) or the first frame (zstd) is the session header, complete; a header
 *   from another format version is refused before anything else is read;
 * - every complete line (ending in a newline) is one storage row, decoded with DSH's own
 *   `decodeStorageRecord`, whose events must continue the seq count;
 * - a final line with no newline is a torn tail: what a crash mid-append leaves; it is dropped;
 * - a line that does not decode, or that skips seqs, ends the readable prefix: if a completed
 *   turn (`turn/end`) follows it, the log is damaged before its tail and refused naming the
 *   line; otherwise it is an unfinished write, dropped with what follows;
 * - zstd: frames are located by their headers (the addon's `decodeZstdLog`); a final frame the
 *   file ends inside is a torn tail whose decodable prefix is kept (complete lines only); a
 *   complete frame must decode, match its checksum and hold whole lines, else it is refused
 *   naming the frame; bytes that are not a frame where one must start are refused too.
 *
 * `compactionBackend(source, summary)` says who wrote a compaction's checkpoint, from its
 * replacement's source and its `compaction/summary`: dsh-fold/compaction (its source carries
 * `foldCompaction`), compaction-basic (a summary from one `ctx.llm.stream()` call, no
 * `foldCompaction`), or another backend; and how many model calls it made.
 *
 * The result says what was dropped in `warning` (one line, or null for an intact log). Failures
 * are `LogError {code, exit}`: LOG_MISSING (66) no such file; LOG_CORRUPT (65) damaged or not a
 * log; LOG_VERSION (65) written by a newer DSH. Messages are sentences that name the file and the
 * line or frame. Nothing is ever written.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'

import { addon } from '../plugin/shared/addon.js'

/** A log that cannot be read; `exit` is the CLI's exit code for it. */
export class LogError extends Error {
  /** @param {'LOG_MISSING' | 'LOG_CORRUPT' | 'LOG_VERSION'} code @param {string} message */
  constructor(code, message) {
    super(message)
    this.name = 'LogError'
    this.code = code
    this.exit = code === 'LOG_MISSING' ? 66 : 65
  }
}

const NEWLINE = 10

/**
 * @typedef {object} ReadOptions
 * @property {(row: any) => any[]} decodeStorageRecord DSH's row decoder (`@deepseek-ai/dsh-session`)
 * @property {number} formatVersion the session format version this DSH reads (`SESSION_FORMAT_VERSION`)
 */

/**
 * @typedef {object} SessionLog
 * @property {string} file the log file read (inside the folder, when a folder was given)
 * @property {any} header the session header line
 * @property {any[]} events the readable events, seq 0 upward
 * @property {string | null} warning what was dropped from the tail, in one line; null when nothing
 */

/**
 * Resolves a session folder to its log: `session.jsonl.zstd` first, else `session.jsonl`.
 * @param {string} file
 */
export function resolveLogFile(file) {
  let stat
  try {
    stat = statSync(file)
  } catch {
    throw new LogError('LOG_MISSING', `no such file: ${file}`)
  }
  if (!stat.isDirectory()) return file
  const inner = ['session.jsonl.zstd', 'session.jsonl'].map((f) => path.join(file, f)).find((f) => existsSync(f))
  if (!inner) throw new LogError('LOG_MISSING', `${file} holds no session.jsonl.zstd or session.jsonl`)
  return inner
}

/** A short, printable start of some bytes, for a message. @param {Buffer} bytes */
const preview = (bytes) => bytes.subarray(0, 16).toString('utf8').replace(/[\x00-\x1f\x7f\ufffd]/g, '?')

/**
 * Reads a persisted session log.
 * @param {string} given a log file or a session folder
 * @param {ReadOptions} options
 * @returns {SessionLog}
 */
export function readSessionLog(given, { decodeStorageRecord, formatVersion }) {
  const file = resolveLogFile(given)
  /** @type {Buffer} */
  let bytes
  try {
    bytes = readFileSync(file)
  } catch (e) {
    throw new LogError('LOG_CORRUPT', `cannot read ${file}: ${/** @type {Error} */ (e).message}`)
  }
  if (bytes.length === 0) throw new LogError('LOG_CORRUPT', `${file} is empty`)
  const corrupt = (/** @type {string} */ what) => new LogError('LOG_CORRUPT', `${file}: ${what}`)

  /** @type {Buffer} */
  let text
  /** @type {number[] | null} */
  let frameEnds = null
  /** @type {{frame: number, byte: number} | null} */
  let torn = null
  if (file.endsWith('.zstd')) {
    let log
    try {
      log = addon.decodeZstdLog(bytes)
    } catch (e) {
      const message = /** @type {Error} */ (e).message
      if (message.startsWith('the data is not zstd-compressed') && bytes[0] === 0x7b) {
        throw new LogError('LOG_CORRUPT', `${file} is not zstd-compressed (it starts with '${preview(bytes)}'): a plain session.jsonl named .zstd? Rename it to .jsonl`)
      }
      throw corrupt(message)
    }
    text = log.text
    frameEnds = log.frameEnds
    torn = log.tornFrame === null || log.tornFrame === undefined ? null : { frame: log.tornFrame, byte: /** @type {number} */ (log.tornByte) }
    if (frameEnds.length === 0) throw corrupt(`its first frame (the session header) is incomplete`)
    const first = text.subarray(0, frameEnds[0])
    if (first.indexOf(NEWLINE) !== first.length - 1) throw corrupt('its first zstd frame is not exactly one line (the session header)')
  } else {
    text = bytes
  }

  const headerEnd = text.indexOf(NEWLINE)
  if (headerEnd === -1) throw corrupt('its first line (the session header) is incomplete: the log ends before its newline')
  const header = parseHeader(text.subarray(0, headerEnd), file, formatVersion)

  /** The zstd frame holding a byte of `text`, for messages. @param {number} at */
  const frameOf = (at) => (frameEnds ? frameEnds.findIndex((end) => at < end) : -1)
  const completeEnd = frameEnds ? /** @type {number} */ (frameEnds.at(-1)) : text.length

  const scan = new Scanner(decodeStorageRecord, file)
  scan.lines(text, headerEnd + 1, completeEnd)
  if (frameEnds && (scan.committed !== completeEnd || scan.issue)) {
    // A complete frame is written whole: damage inside one is never a torn tail.
    const at = scan.issue ? scan.issue.start : scan.committed
    const line = scan.issue ? scan.issue.line : scan.line + 1
    throw corrupt(`zstd frame ${frameOf(at)} holds ${scan.issue ? `line ${line}, which ${scan.issue.what}` : `the start of line ${line} but not its end`}: a complete frame is never torn, so the log is damaged`)
  }
  const before = scan.events.length
  if (torn) scan.lines(text, completeEnd, text.length)

  let warning = null
  const read = `read the ${scan.events.length} complete events before it`
  if (torn) {
    warning = `${file}: the last zstd frame (frame ${torn.frame}, byte ${torn.byte}) is incomplete (what a crash mid-write leaves); ${read}${scan.events.length > before ? `, ${scan.events.length - before} of them recovered from it` : ''}`
  } else if (scan.issue) {
    warning = `${file}: line ${scan.issue.line} ${scan.issue.what} and no completed turn follows it (an unfinished write); ${read}`
  } else if (scan.committed < text.length) {
    warning = `${file}: line ${scan.line + 1} is torn (no newline: what a crash mid-write leaves); ${read}`
  }
  return { file, header, events: scan.events, warning }
}

/**
 * Parses the header line; refuses another format version before checking its shape, as DSH does.
 * @param {Buffer} line @param {string} file @param {number} known
 */
function parseHeader(line, file, known) {
  /** @type {any} */
  let header
  try {
    header = JSON.parse(line.toString('utf8'))
  } catch {
    throw new LogError('LOG_CORRUPT', `${file}: line 1 (the session header) is not JSON`)
  }
  const version = header?.version
  if (header && typeof header === 'object' && typeof version === 'number' && version !== known) {
    throw new LogError('LOG_VERSION', version > known
      ? `${file} has session format version ${version}, newer than the ${known} this DSH reads: upgrade DSH to read it`
      : `${file} has session format version ${version}; this DSH reads version ${known} only`)
  }
  if (header?.type !== 'session' || typeof header.id !== 'string' || typeof version !== 'number') {
    throw new LogError('LOG_CORRUPT', `${file} does not start with a session header`)
  }
  return header
}

/** The line scanner: DSH's `SessionLogScanner` rules over complete lines of decoded text. */
class Scanner {
  /** @param {(row: any) => any[]} decode @param {string} file */
  constructor(decode, file) {
    this.decode = decode
    this.file = file
    /** @type {any[]} */
    this.events = []
    /** The line number of the last complete line seen (the header is line 1). */
    this.line = 1
    /** Where the readable prefix ends in the text. */
    this.committed = 0
    /** @type {{line: number, start: number, what: string} | null} the first line that broke the prefix */
    this.issue = null
  }

  /** Scans the complete lines of `text[from, to)`; a trailing fragment is left uncommitted. @param {Buffer} text @param {number} from @param {number} to */
  lines(text, from, to) {
    if (this.committed === 0) this.committed = from
    for (let start = from, nl = text.indexOf(NEWLINE, start); nl !== -1 && nl < to; start = nl + 1, nl = text.indexOf(NEWLINE, start)) {
      this.line++
      this.row(text.subarray(start, nl), start, nl + 1)
    }
  }

  /** @param {Buffer} bytes @param {number} start @param {number} end */
  row(bytes, start, end) {
    /** @type {any[]} */
    let decoded
    try {
      decoded = this.decode(JSON.parse(bytes.toString('utf8')))
      if (!Array.isArray(decoded)) throw new Error('not a row')
    } catch {
      this.issue ??= { line: this.line, start, what: 'is not a valid event record' }
      return
    }
    const turnEnds = decoded.some((e) => e?.type === 'turn/end')
    if (this.issue) {
      if (turnEnds) this.refuse()
      return
    }
    const rowStart = this.events.length
    for (const event of decoded) {
      if (event?.seq !== this.events.length) {
        const expected = this.events.length
        this.events.length = rowStart
        this.issue = { line: this.line, start, what: `jumps from seq ${expected - 1} to seq ${event?.seq} (events are missing)` }
        if (turnEnds) this.refuse()
        return
      }
      this.events.push(event)
    }
    this.committed = end
  }

  /** A completed turn after a broken line: the damage is not a tail. @returns {never} */
  refuse() {
    const issue = /** @type {{line: number, what: string}} */ (this.issue)
    throw new LogError('LOG_CORRUPT', `${this.file}: line ${issue.line} ${issue.what}, and the completed turn at line ${this.line} comes after it: the log is damaged before its tail`)
  }
}

/**
 * Who wrote a compaction's checkpoint, and its model calls (DSH's `compaction/summary` marks a
 * summary from one call through the context's LLM with `llmStreamCall`).
 * @param {any} source the replacement `user/message`'s `data.source`
 * @param {any} summary the `compaction/summary` event's data, if any
 * @returns {{backend: 'dsh-fold' | 'compaction-basic' | 'other', modelCalls: number}}
 */
export function compactionBackend(source, summary) {
  const modelCalls = summary?.llmStreamCall === true ? 1 : 0
  const backend = source?.foldCompaction || summary?.provider === 'dsh-fold' ? 'dsh-fold' : summary?.llmStreamCall ? 'compaction-basic' : 'other'
  return { backend, modelCalls }
}
