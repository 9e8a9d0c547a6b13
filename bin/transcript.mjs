// @ts-check
/**
 * @module bin/transcript
 * What `dsh-fold try` prints: a session's log turned, event by event, into what the model did —
 * its text, each tool call and what came back (sub-calls of a program indented under it), each
 * fold (the mark, what it replaced, the report the model reads from then on), each block summary,
 * each compaction (which backend, its trigger, the range, the chars it replaced and the
 * checkpoint's, its model calls and time, and the checkpoint the model reads from then on), and
 * the answer. Fed the log's events as they appear (`add`), it prints each event once, so
 * the same object follows a live session through repeated reads. `summary()` is the run in
 * numbers, `--json`'s shape. A fold's size is its report's, as the rewind result gives it; recall's
 * hint line after the report is named, not counted in.
 */

import { splitReportFrame } from '../plugin/fold/words.js'
import { splitRecallHint } from '../plugin/recall/hint.js'
import { visibleChars } from '../plugin/shared/meter.js'
import { compactionBackend } from './session-log.mjs'

/** The text blocks of a message's content, joined. @param {any[]} content */
const textOf = (content) => (Array.isArray(content) ? content.filter((b) => b?.type === 'text').map((b) => b.text).join('') : '')

/** The message an event carries (a user message's content, an assistant's or a tool result's message). @param {any} e */
const messageOf = (e) => (e?.data?.message ?? (e?.type === 'user/message' ? { content: e.data?.content } : null))

/** One line, cut to `max` chars. @param {string} s @param {number} [max] */
const line = (s, max = 150) => {
  const one = String(s).replace(/\s+/g, ' ').trim()
  return one.length > max ? `${one.slice(0, max - 1)}…` : one
}

/** A tool call's arguments, compact. @param {unknown} args */
function argsOf(args) {
  let value = args
  if (typeof args === 'string') {
    try {
      value = JSON.parse(args)
    } catch {
      return line(args, 120)
    }
  }
  if (value && typeof value === 'object') {
    const o = /** @type {Record<string, unknown>} */ (value)
    if (typeof o.command === 'string') return `$ ${line(o.command, 110)}`
    if (typeof o.code === 'string') return `[${Array.isArray(o.ids) ? o.ids.join(', ') : ''}] ${line(String(o.description ?? ''), 100)}`
  }
  return line(JSON.stringify(value), 120)
}

/** What a tool result says, in one line. @param {string} text @param {boolean} isError */
function resultOf(text, isError) {
  const lines = text.split('\n').filter((l) => l.trim())
  if (isError) return `error: ${line(lines[0] ?? '', 140)}`
  if (lines.length <= 1) return line(lines[0] ?? '(empty)', 140)
  return `${lines.length} lines: ${line(lines[0], 110)}`
}

export class Transcript {
  /** @param {{color?: boolean, reportLines?: number}} [options] */
  constructor({ reportLines = 16 } = {}) {
    this.reportLines = reportLines
    /** The next seq to print. */
    this.next = 0
    /** @type {Map<string, string>} call id → tool name */
    this.callNames = new Map()
    /** @type {Array<{name: string, args: string, result?: string, isError?: boolean, sub?: boolean}>} */
    this.calls = []
    /** @type {Array<{kind: 'fold' | 'block', markId?: number, ids?: string[], replaced: number, seqs: [number, number], reportChars: number, report: string}>} */
    this.folds = []
    /** @type {string | null} */
    this.answer = null
    /** @type {string | null} */
    this.turnEnd = null
    this.requests = 0
    /** @type {any} the latest compaction/summary, for the block commit's replacement */
    this.pendingSummary = null
    /**
     * @type {Array<{id: string, backend: string, trigger: string, seqs: [number, number] | null, replaced: number,
     *   charsBefore: number, charsAfter: number, modelCalls: number, ms: number | null, error?: string}>}
     */
    this.compactions = []
    /** @type {Map<string, {start: any, summary?: any, replacement?: any}>} compactions whose end is not logged yet, by id */
    this.open = new Map()
    /** @type {readonly any[]} the log's events, as last given to `add` */
    this.events = []
  }

  /**
   * Takes the log's events (all of them, or any prefix); returns the lines for the events not
   * seen before.
   * @param {any[]} events
   * @returns {string[]}
   */
  add(events) {
    this.events = events
    const out = []
    for (; this.next < events.length; this.next++) out.push(...this.event(events[this.next]))
    return out
  }

  /** @param {any} e @returns {string[]} */
  event(e) {
    const d = e.data ?? {}
    switch (e.type) {
      case 'assistant/message': {
        this.requests++
        const out = []
        const content = d.message?.content ?? []
        const text = textOf(content)
        const calls = content.filter((/** @type {any} */ b) => b?.type === 'tool-call')
        if (text.trim()) {
          if (calls.length === 0) this.answer = text
          out.push(calls.length === 0 ? `answer: ${text.trim().split('\n').join('\n        ')}` : `model: ${line(text, 160)}`)
        }
        for (const c of calls) {
          this.callNames.set(c.id, c.name)
          this.calls.push({ name: c.name, args: argsOf(c.arguments) })
          out.push(`  → ${c.name} ${argsOf(c.arguments)}`)
        }
        return out
      }
      case 'tool/result': {
        const out = []
        for (const block of d.message?.content ?? []) {
          if (block?.type !== 'tool-result') continue
          const name = this.callNames.get(block.toolCallId) ?? 'tool'
          const text = textOf(block.content)
          const call = [...this.calls].reverse().find((c) => c.name === name && c.result === undefined && !c.sub)
          if (call) Object.assign(call, { result: resultOf(text, Boolean(block.isError)), isError: Boolean(block.isError) })
          out.push(`  ← ${name}: ${resultOf(text, Boolean(block.isError))}`)
        }
        return out
      }
      case 'tool/code-dispatch': {
        const text = textOf(d.content)
        this.calls.push({ name: d.name, args: argsOf(d.arguments), result: resultOf(text, Boolean(d.isError)), isError: Boolean(d.isError), sub: true })
        return [`      · ${d.name} ${argsOf(d.arguments)} ← ${resultOf(text, Boolean(d.isError))}`]
      }
      case 'compaction/start':
        this.open.set(d.compactionId, { start: e })
        return []
      case 'compaction/summary':
        this.pendingSummary = d
        if (this.open.has(d.compactionId)) /** @type {any} */ (this.open.get(d.compactionId)).summary = d
        return []
      case 'compaction/end':
        return this.compactionEnd(e)
      case 'user/message': {
        const source = d.source ?? {}
        const text = textOf(d.content)
        const seqs = (e.sourceEventSeqs ?? []).filter((/** @type {number} */ s) => typeof s === 'number')
        if (source.kind === 'plugin' && source.plugin === 'rewind' && e.surfaceOp?.op === 'replace') {
          // The report's size is the rewind result's figure: the report as its writer wrote it.
          // The message also holds the frame the plugin writes above it (round 4) and, with the
          // recall row, recall's hint line below it; those are named, with the message's total.
          const { head, body: framed } = splitReportFrame(text)
          const { body, hint } = splitRecallHint(framed)
          const fold = { kind: /** @type {const} */ ('fold'), markId: source.markId, replaced: seqs.length, seqs: /** @type {[number, number]} */ ([e.surfaceOp.start, e.surfaceOp.end]), reportChars: body.length, report: text }
          this.folds.push(fold)
          const around = [head && 'its frame', hint && "recall's hint line"].filter(Boolean).join(' and ')
          const rest = around ? ` (with ${around}: ${text.length} chars in all)` : ''
          return [`  ⤷ fold of mark ${fold.markId}: ${fold.replaced} surface nodes (seq ${fold.seqs[0]}..${fold.seqs[1]}) replaced by a ${fold.reportChars}-char report${rest}; the model reads from now on:`, ...this.quote(text)]
        }
        const ptc = source.blockPtc ?? d.blockPtc
        if (e.surfaceOp?.op === 'replace' && ptc) {
          const summary = this.pendingSummary
          this.pendingSummary = null
          const closed = ptc.closed ?? []
          const fold = { kind: /** @type {const} */ ('block'), ids: closed, replaced: summary?.shadowedSeqs?.length ?? seqs.length, seqs: /** @type {[number, number]} */ ([e.surfaceOp.start, e.surfaceOp.end]), reportChars: text.length, report: text }
          this.folds.push(fold)
          return [`  ⤷ block summary closing [${closed.join(', ')}]: ${fold.replaced} messages (seq ${fold.seqs[0]}..${fold.seqs[1]}${summary ? `, ~${summary.shadowedTokenCount} tokens` : ''}) replaced; the model reads from now on:`, ...this.quote(text)]
        }
        if (e.surfaceOp?.op === 'replace' && typeof source.compactionId === 'string' && this.open.has(source.compactionId)) {
          // A compaction's checkpoint: told at its `compaction/end`, with the time it took.
          /** @type {any} */ (this.open.get(source.compactionId)).replacement = e
          this.pendingSummary = null
          return []
        }
        if (e.surfaceOp?.op === 'replace') {
          const summary = this.pendingSummary
          this.pendingSummary = null
          return [`  ⤷ the host replaced seq ${e.surfaceOp.start}..${e.surfaceOp.end} (${summary?.shadowedSeqs?.length ?? seqs.length} messages${summary ? `, ~${summary.shadowedTokenCount} tokens` : ''}) with a ${text.length}-char ${source.plugin === 'compact' ? 'compaction summary' : 'replacement'}`]
        }
        return []
      }
      case 'turn/end': {
        const reason = d.reason ?? {}
        this.turnEnd = reason.kind ?? 'unknown'
        return reason.kind === 'completed' ? [] : [`turn ended: ${reason.kind}${reason.error ? ` (${reason.error.code ?? ''} ${line(reason.error.message ?? '', 200)})` : ''}`]
      }
      default:
        return []
    }
  }

  /**
   * A compaction, once its bracket closes: who wrote the checkpoint, why, what it replaced
   * (messages, their model-visible chars) and with what, its model calls, its time.
   * @param {any} e the `compaction/end` event @returns {string[]}
   */
  compactionEnd(e) {
    const d = e.data ?? {}
    const open = this.open.get(d.compactionId)
    if (!open) return []
    this.open.delete(d.compactionId)
    const { start, summary, replacement } = open
    const source = replacement?.data?.source ?? {}
    const { backend, modelCalls } = compactionBackend(source, summary)
    const name = backend === 'dsh-fold' ? 'dsh-fold/compaction' : backend
    const trigger = source.foldCompaction?.trigger ?? (start.data?.sourceCommandId !== undefined || start.data?.turn === null ? '/compact' : 'automatic')
    const shadowed = /** @type {number[]} */ (summary?.shadowedSeqs ?? [])
    const charsBefore = shadowed.reduce((n, seq) => n + visibleChars(messageOf(this.events[seq])), 0)
    const text = replacement ? textOf(replacement.data?.content) : ''
    const ms = typeof e.time === 'number' && typeof start.time === 'number' ? e.time - start.time : null
    const took = ms === null ? '' : `, ${ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`}`
    const seqs = /** @type {[number, number] | null} */ (replacement?.surfaceOp ? [replacement.surfaceOp.start, replacement.surfaceOp.end] : null)
    const c = { id: String(d.compactionId), backend: name, trigger, seqs, replaced: shadowed.length, charsBefore, charsAfter: text.length, modelCalls, ms, ...(d.error ? { error: String(d.error) } : {}) }
    this.compactions.push(c)
    const calls = `${modelCalls} model call${modelCalls === 1 ? '' : 's'}`
    if (d.error || !replacement) return [`  ⤷ compaction by ${name} (${trigger}) failed${took ? ` after${took.slice(1)}` : ''}: ${line(String(d.error ?? 'no checkpoint was written'), 200)}`]
    // A surface span, in surface order: an earlier replacement (a higher seq) may come first.
    const range = seqs ? ` (seq ${seqs[0]}..${seqs[1]}${seqs[0] > seqs[1] ? `, the replacement at seq ${seqs[0]} first` : ''})` : ''
    return [
      `  ⤷ compaction by ${name} (${trigger}): ${c.replaced} messages${range}, ${charsBefore.toLocaleString('en-US')} chars → a ${text.length.toLocaleString('en-US')}-char checkpoint, ${calls}${took}; the model reads from now on:`,
      ...this.quote(text),
    ]
  }

  /** A report, indented, cut after `reportLines` lines. @param {string} text */
  quote(text) {
    const lines = text.trimEnd().split('\n')
    const shown = lines.slice(0, this.reportLines).map((l) => `    │ ${l}`)
    if (lines.length > this.reportLines) shown.push(`    │ … (${lines.length - this.reportLines} more lines)`)
    return shown
  }

  /** The run in numbers. */
  summary() {
    return {
      requests: this.requests,
      toolCalls: this.calls.length,
      failedCalls: this.calls.filter((c) => c.isError).length,
      folds: this.folds.map(({ report, ...f }) => ({ ...f, reportFirstLine: report.split('\n')[0] })),
      compactions: this.compactions,
      answer: this.answer,
      turnEnd: this.turnEnd,
    }
  }
}
