/**
 * @module plugin/recall/recall
 * `ctx.recall` and the model-facing `recall` tool: the exact lines a fold hid, read back from
 * the calling agent's own session log.
 *
 * A fold (rewind) or a block commit replaces messages on the model-visible surface; the
 * append-only log keeps them, and so does a compaction (by any backend). `recall({fold?, block?,
 * compaction?, query?, around?})` selects folded regions of the agent's session (`fold`: a mark
 * id or `'latest'`; `block`: a block id; `compaction`: a compaction id or `'latest'`; none of
 * them: every folded region, each once — a region another selected region took in is read
 * through that one), and returns either the lines of their original messages (assistant
 * text and reasoning, tool-call arguments, tool outputs, user messages) that match `query` —
 * a smart-case substring or a `/regex/` run by the addon's linear-time engine — each under its
 * seq and tool name, with `around` lines of context; or, without a query, an index with one
 * line per folded message. The answer never exceeds `maxChars`.
 *
 * What it never does: read another session (only `exec.agent.session`), read a file, write
 * anything. Failures are `RecallError`s with a stable `code`: `INVALID_ARGUMENT`,
 * `BAD_QUERY`, `NOTHING_FOLDED`, `UNKNOWN_FOLD`, `FOREIGN_MARK` (the mark belongs to another
 * session: nothing of it is read), `UNKNOWN_BLOCK`, `UNKNOWN_COMPACTION`.
 */
import { Service } from '@deepseek-ai/cordis'
import { defineTool } from '@deepseek-ai/dsh-tools'
import Schema from '@deepseek-ai/schemastery'

import { addon } from '../shared/addon.js'
import { brief, listed } from '../shared/errors.js'
import { languageOf } from '../shared/language.js'
import { mountMirror } from '../shared/mirror.js'
import { hintLine } from './hint.js'
import { logIndex, originalSeqs, regionTexts } from './log.js'
import { wordsOf } from './words.js'

/**
 * @typedef {object} RecallConfig
 * @property {string} toolName model-facing tool name
 * @property {number} maxChars the longest answer, in UTF-16 units
 * @property {'en' | 'zh'} [language] of the tool's texts; unset: the rewind row's `reportLanguage`
 */
export const Config = Schema.object({
  toolName: Schema.string().pattern(/^[a-zA-Z0-9_-]{1,64}$/).default('recall').description('Model-facing tool name.'),
  maxChars: Schema.natural().min(500).max(200000).default(8000).description('Longest answer the tool returns, in characters.'),
  language: Schema.union(['en', 'zh']).description("Language of the tool's description, answers and failures (default: the rewind row's reportLanguage, else en)."),
})

/** Most context lines around a match. */
export const MAX_AROUND = 20
/** Longest line shown whole; a longer one is shown as a window around its match. */
const LINE_CHARS = 240

export const RECALL_ERROR_CODES = /** @type {const} */ (['INVALID_ARGUMENT', 'BAD_QUERY', 'NOTHING_FOLDED', 'UNKNOWN_FOLD', 'FOREIGN_MARK', 'UNKNOWN_BLOCK', 'UNKNOWN_COMPACTION'])

/** A recall failure: `code` is one of `RECALL_ERROR_CODES`; the message ends with what to do. */
export class RecallError extends Error {
  /** @param {(typeof RECALL_ERROR_CODES)[number]} code @param {string} message */
  constructor(code, message) {
    super(`${code}: ${message}`)
    this.name = 'RecallError'
    this.code = code
  }
}

/**
 * @typedef {object} RecallArgs
 * @property {number | 'latest' | string} [fold] a mark id (a digit string is accepted) or 'latest'
 * @property {string} [block] a block id
 * @property {string} [compaction] a compaction id or 'latest'
 * @property {string} [query] a substring, or `/regex/flags`
 * @property {number} [around] context lines on each side of a match (with a query)
 */

/**
 * @typedef {object} RecallResult
 * @property {string} text what the model reads
 * @property {number} regions folded regions searched or indexed
 * @property {number} matches matching lines (all of them; with a query)
 * @property {number} shown lines shown (matches, or index lines)
 * @property {boolean} truncated whether `maxChars` cut the answer short
 */

const KNOWN_ARGS = new Set(['fold', 'block', 'compaction', 'query', 'around'])

/**
 * Checks and normalizes the tool's arguments. Linear in their size, and every message quotes
 * at most a short prefix of a value and 12 names (the model can send anything here).
 * @param {unknown} raw @param {'en' | 'zh'} [language] of the failures' texts
 */
export function parseArgs(raw, language = 'en') {
  const e = wordsOf(language).errors
  if (raw === undefined || raw === null) raw = {}
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new RecallError('INVALID_ARGUMENT', e.notObject)
  const args = /** @type {Record<string, unknown>} */ (raw)
  const unknown = Object.keys(args).filter((k) => !KNOWN_ARGS.has(k) && args[k] !== undefined)
  if (unknown.length) throw new RecallError('INVALID_ARGUMENT', e.unknownArgs(unknown.length, listed(unknown, brief)))
  /** @type {{fold?: number | 'latest', block?: string, compaction?: string, query?: string, around: number}} */
  const out = { around: 0 }
  const fold = args.fold ?? undefined
  if (fold !== undefined) {
    if (fold === 'latest') out.fold = 'latest'
    else if (typeof fold === 'number' && Number.isSafeInteger(fold) && fold >= 1) out.fold = fold
    else if (typeof fold === 'string' && /^[1-9]\d{0,15}$/.test(fold)) out.fold = Number(fold)
    else throw new RecallError('INVALID_ARGUMENT', e.fold(brief(fold)))
  }
  const block = args.block ?? undefined
  if (block !== undefined) {
    if (typeof block !== 'string' || !block.trim()) throw new RecallError('INVALID_ARGUMENT', e.block(brief(block)))
    if (block.length > addon.MAX_BLOCK_ID_LENGTH) throw new RecallError('INVALID_ARGUMENT', e.blockLength(brief(block), block.length, addon.MAX_BLOCK_ID_LENGTH))
    out.block = block
  }
  const compaction = args.compaction ?? undefined
  if (compaction !== undefined) {
    if (typeof compaction !== 'string' || !compaction.trim() || compaction.length > 200) throw new RecallError('INVALID_ARGUMENT', e.compaction(brief(compaction)))
    out.compaction = compaction
  }
  if ([out.fold, out.block, out.compaction].filter((x) => x !== undefined).length > 1) throw new RecallError('INVALID_ARGUMENT', e.several)
  const query = args.query ?? undefined
  if (query !== undefined) {
    if (typeof query !== 'string' || query === '') throw new RecallError('INVALID_ARGUMENT', e.query(brief(query)))
    out.query = query
  }
  const around = args.around ?? undefined
  if (around !== undefined) {
    if (typeof around !== 'number' || !Number.isInteger(around) || around < 0 || around > MAX_AROUND) {
      throw new RecallError('INVALID_ARGUMENT', e.around(MAX_AROUND, brief(around)))
    }
    out.around = around
  }
  return out
}

/** A region's name for the model. @param {import('./log.js').FoldedRegion} r @param {'en' | 'zh'} [language] */
export function regionName(r, language = 'en') {
  const w = wordsOf(language).region
  if (r.kind === 'compaction') return w.compaction(String(r.compactionId))
  return r.kind === 'fold' ? w.fold(/** @type {number} */ (r.markId)) : w.block((r.closed?.length ? r.closed : r.remaining ?? []).join(', '))
}

/**
 * A folded text's label for the model (`read result`, `bash result (error)`, `user message`...),
 * in `language`: log.js labels them in English; the words say them in either.
 * @param {string} label @param {'en' | 'zh'} language
 */
function labelIn(label, language) {
  if (language === 'en') return label
  const w = wordsOf(language).label
  if (label === 'assistant text') return w.text
  if (label === 'assistant reasoning') return w.reasoning
  if (label === 'user message') return w.user
  let m = /^(.*) result( \(error\))?$/.exec(label)
  if (m) return w.result(m[1], Boolean(m[2]))
  if ((m = /^(.*) call$/.exec(label))) return w.call(m[1])
  if ((m = /^(.*) message$/.exec(label))) return w.other(m[1])
  return label
}

/**
 * Recall from `session`'s own folded regions. Pure reading: no store write, no session append.
 * @param {any} session the calling agent's session
 * @param {unknown} rawArgs the tool's arguments
 * @param {{maxChars: number, toolName?: string, rewindName?: string, language?: 'en' | 'zh', markOwner?: (markId: number) => Promise<{sessionId: string, folded: boolean} | null>}} options
 *   `markOwner` tells which session a mark id belongs to (from the checkpoint store), so an
 *   unknown id can be told apart from another session's; `rewindName` the rewind row's tool
 * @returns {Promise<RecallResult>}
 */
export async function recall(session, rawArgs, options) {
  const language = options.language ?? 'en'
  const args = parseArgs(rawArgs, language)
  const regions = await select(session, args, options)
  const texts = regions.map((r) => regionTexts(session, r).map((t) => ({ ...t, label: labelIn(t.label, language) })))
  return args.query === undefined ? index(session, regions, texts, options.maxChars, language) : search(regions, texts, args.query, args.around, options.maxChars, language)
}

/**
 * @param {any} session @param {ReturnType<typeof parseArgs>} args
 * @param {{toolName?: string, rewindName?: string, language?: 'en' | 'zh', markOwner?: (markId: number) => Promise<{sessionId: string, folded: boolean} | null>}} options
 */
async function select(session, args, options) {
  const all = logIndex(session).regions
  const tool = options.toolName ?? 'recall'
  const e = wordsOf(options.language).errors
  if (!all.length) throw new RecallError('NOTHING_FOLDED', e.nothing)
  const folds = all.filter((r) => r.kind === 'fold')
  const foldIds = [...new Set(folds.map((r) => r.markId))]
  if (args.fold === 'latest') {
    const latest = folds.at(-1)
    if (!latest) throw new RecallError('NOTHING_FOLDED', e.onlyBlocks(listed(blockIds(all), shortId), tool))
    return [latest]
  }
  if (typeof args.fold === 'number') {
    const id = args.fold
    const found = folds.filter((r) => r.markId === id).at(-1)
    if (found) return [found]
    const owner = await options.markOwner?.(id).catch(() => null)
    if (owner && owner.sessionId !== session.id) {
      throw new RecallError('FOREIGN_MARK', e.foreign(id, tool, foldIds.length ? e.foldsHere(listed(foldIds)) : e.noneFolded))
    }
    const why = owner && !owner.folded ? e.notFolded(id, options.rewindName ?? 'rewind') : e.noFold(id)
    throw new RecallError('UNKNOWN_FOLD', e.unknownFold(why, foldIds.length ? e.foldsHere(listed(foldIds)) : e.noFoldHere))
  }
  if (args.compaction !== undefined) {
    const compactions = all.filter((r) => r.kind === 'compaction')
    const found = args.compaction === 'latest' ? compactions.at(-1) : compactions.filter((r) => r.compactionId === args.compaction).at(-1)
    if (found) return [found]
    const known = compactions.map((r) => r.compactionId)
    throw new RecallError('UNKNOWN_COMPACTION', e.unknownCompaction(brief(args.compaction), known.length ? e.compactionsHere(listed(known, shortId)) : e.noneCompacted))
  }
  if (args.block !== undefined) {
    const id = args.block
    const found = all.filter((r) => r.kind === 'block' && (r.closed?.includes(id) || r.remaining?.includes(id))).at(-1)
    if (found) return [found]
    const known = blockIds(all)
    throw new RecallError('UNKNOWN_BLOCK', e.unknownBlock(brief(id), known.length ? e.blocksHere(listed(known, shortId)) : e.noneSummarized))
  }
  return outermost(session, all)
}

/**
 * The regions no other region took in: a region among another's sources (a fold's report that
 * a later compaction replaced) is read through that one, so no line is returned twice.
 * @param {any} session @param {import('./log.js').FoldedRegion[]} regions
 */
function outermost(session, regions) {
  const { bySeq } = logIndex(session)
  const inner = new Set()
  for (const r of regions) for (const s of r.sources) if (s !== r.seq && bySeq.has(s)) inner.add(s)
  return regions.filter((r) => !inner.has(r.seq))
}

/** A block id in a list: cut to 40 characters. @param {string} id */
const shortId = (id) => (id.length > 40 ? `${id.slice(0, 40)}…` : id)

/** Every block id a commit of the session closed or carries. @param {import('./log.js').FoldedRegion[]} regions */
function blockIds(regions) {
  return [...new Set(regions.flatMap((r) => (r.kind === 'block' ? [...(r.closed ?? []), ...(r.remaining ?? [])] : [])))]
}

/** Keeps adding lines while they fit in `maxChars`. */
class Answer {
  /** @param {number} maxChars */
  constructor(maxChars) {
    this.maxChars = maxChars
    /** @type {string[]} */
    this.lines = []
    this.length = 0
    this.full = false
  }
  /** Adds `line` if it fits (with room kept for a closing note); false once full. @param {string} line */
  add(line) {
    if (this.full) return false
    if (this.length + line.length + 1 > this.maxChars - 160) {
      this.full = true
      return false
    }
    this.lines.push(line)
    this.length += line.length + 1
    return true
  }
  text() {
    return this.lines.join('\n')
  }
}

/** One line, cut to `LINE_CHARS` around `[start, end)`. @param {string} line @param {number} [start] @param {number} [end] */
function clip(line, start = 0, end = 0) {
  if (line.length <= LINE_CHARS) return line
  const from = Math.max(0, Math.min(start - 60, line.length - LINE_CHARS))
  const to = Math.min(line.length, Math.max(from + LINE_CHARS, end))
  return `${from > 0 ? '…' : ''}${line.slice(from, Math.min(to, from + LINE_CHARS * 2))}${to < line.length ? '…' : ''}`
}

/**
 * A region's heading.
 * @param {any} session @param {import('./log.js').FoldedRegion} r @param {import('./log.js').RecallText[]} texts @param {'en' | 'zh'} language
 */
function heading(session, r, texts, language) {
  const w = wordsOf(language)
  const seqs = originalSeqs(session, r)
  const chars = texts.reduce((n, t) => n + t.text.length, 0)
  const span = seqs.length ? w.span(Math.min(...seqs), Math.max(...seqs)) : ''
  return w.heading(regionName(r, language), seqs.length, span, chars)
}

/**
 * Without a query: one line per folded message.
 * @param {any} session @param {import('./log.js').FoldedRegion[]} regions
 * @param {import('./log.js').RecallText[][]} texts @param {number} maxChars @param {'en' | 'zh'} language
 * @returns {RecallResult}
 */
function index(session, regions, texts, maxChars, language) {
  const w = wordsOf(language)
  const out = new Answer(maxChars)
  let shown = 0
  let total = 0
  regions.forEach((r, i) => {
    out.add(heading(session, r, texts[i], language))
    /** @type {Map<number, import('./log.js').RecallText[]>} */
    const bySeq = new Map()
    for (const t of texts[i]) bySeq.set(t.seq, [...(bySeq.get(t.seq) ?? []), t])
    for (const [seq, parts] of bySeq) {
      total++
      const summary = parts
        .map((p) => {
          const lines = p.text.split('\n').length
          const first = p.text.split('\n').find((l) => l.trim()) ?? ''
          return w.indexLine(p.label, lines, p.text.length, first.trim().slice(0, 100))
        })
        .join(' | ')
      if (out.add(`  seq ${seq}  ${summary}`.slice(0, 400))) shown++
    }
  })
  const truncated = shown < total
  let text = out.text()
  if (truncated) text += `\n${w.indexMore(total - shown, maxChars)}`
  else text += `\n${w.indexEnd}`
  return { text, regions: regions.length, matches: 0, shown, truncated }
}

/**
 * With a query: the matching lines, grouped by message, with context.
 * @param {import('./log.js').FoldedRegion[]} regions @param {import('./log.js').RecallText[][]} texts
 * @param {string} query @param {number} around @param {number} maxChars @param {'en' | 'zh'} language
 * @returns {RecallResult}
 */
function search(regions, texts, query, around, maxChars, language) {
  const w = wordsOf(language)
  const flat = texts.flatMap((ts, region) => ts.map((t) => ({ ...t, region })))
  let found
  try {
    // At most one line shown per 8 chars of answer: enough to fill it, bounded however many lines match.
    found = addon.recallSearch(flat.map((t) => t.text), query, Math.ceil(maxChars / 8))
  } catch (e) {
    if (/** @type {any} */ (e)?.code === 'INVALID_ARGUMENT') throw new RecallError('BAD_QUERY', w.errors.badQuery(/** @type {Error} */ (e).message))
    throw e
  }
  const out = new Answer(maxChars)
  const where = regions.length === 1 ? regionName(regions[0], language) : w.regions(regions.length)
  out.add(w.found(found.total, where, query))
  /** @type {Map<number, {line: number, col: number, colEnd: number}[]>} text index → its matching lines */
  const hitsByText = new Map()
  for (let w = 0; w < found.hits.length; w += 4) {
    const t = found.hits[w]
    const hit = { line: found.hits[w + 1], col: found.hits[w + 2], colEnd: found.hits[w + 3] }
    const list = hitsByText.get(t)
    if (list) list.push(hit)
    else hitsByText.set(t, [hit])
  }
  let shown = 0
  let lastRegion = -1
  for (const [t, hits] of hitsByText) {
    const text = flat[t]
    if (regions.length > 1 && text.region !== lastRegion) {
      lastRegion = text.region
      if (!out.add(`${regionName(regions[text.region], language)}${language === 'zh' ? '：' : ':'}`)) break
    }
    if (!out.add(`[seq ${text.seq} · ${text.label}]`)) break
    const lines = text.text.split('\n')
    const matched = new Map(hits.map((h) => [h.line, h]))
    let printedTo = -1
    for (const h of hits) {
      const from = Math.max(h.line - around, printedTo + 1)
      const to = Math.min(h.line + around, lines.length - 1)
      if (printedTo >= 0 && from > printedTo + 1) out.add('  …')
      for (let l = from; l <= to; l++) {
        const m = matched.get(l)
        const body = lines[l].replace(/\r$/, '')
        if (!out.add(`  ${l + 1}${m ? ':' : '-'} ${m ? clip(body, m.col, m.colEnd) : clip(body)}`)) break
        if (m) shown++
      }
      printedTo = Math.max(printedTo, to)
      if (out.full) break
    }
    if (out.full) break
  }
  const truncated = shown < found.total
  let answer = out.text()
  if (truncated) answer += `\n${w.searchMore(found.total - shown, maxChars)}`
  return { text: answer, regions: regions.length, matches: found.total, shown, truncated }
}

/** The `tool-recall` plugin: provides `ctx.recall` and the model-facing tool. */
export default class RecallService extends Service {
  static inject = ['tools']
  static Config = Config

  /** @param {any} ctx @param {RecallConfig} config */
  constructor(ctx, config) {
    super(ctx, 'recall')
    this.ctx = ctx
    this.config = config
    /** The model-facing tool name, read by `recallHint` (plugin/recall/hint.js). */
    this.toolName = config.toolName
    ctx.tools.register(this.#tool())
    // The folded regions are listed off each session's mirror, fed as events are appended.
    mountMirror(ctx)
  }

  /**
   * The hint line producers append to a replacement's text (see plugin/recall/hint.js).
   * @param {{fold: number} | {block: string}} target @param {'en' | 'zh'} [language]
   * @param {import('./hint.js').HintForm} [form] `{program}` where recall is reachable only from a program
   */
  hint(target, language, form) {
    return hintLine(this.toolName, target, language, form)
  }

  /**
   * Recalls from the session's folded regions (the tool's work, for other plugins too).
   * @param {any} session @param {unknown} args
   * @returns {Promise<RecallResult>}
   */
  recall(session, args) {
    if (!session?.id) return Promise.reject(new Error('recall needs a session'))
    const rewind = this.ctx.get('rewind')?.config?.toolName
    return recall(session, args, {
      maxChars: this.config.maxChars,
      toolName: this.toolName,
      rewindName: typeof rewind === 'string' ? rewind : undefined,
      language: this.language,
      markOwner: (id) => this.markOwner(id),
    })
  }

  /** The language of this row's texts: its `language`, else the rewind row's `reportLanguage`. */
  get language() {
    return languageOf(this.ctx, this.config.language)
  }

  /**
   * Which session a mark id belongs to, from the checkpoint store when `ctx.checkpoint` is
   * mounted: one mark's lookup (`findMark`), and only its owner and folded flag are read;
   * nothing of another session is.
   * Not `#private`: cordis calls service methods with `this` bound to its tracing proxy.
   * @param {number} markId
   */
  async markOwner(markId) {
    const checkpoint = this.ctx.get('checkpoint')
    if (!checkpoint?.store) return null
    const mark = await addon.findMark(checkpoint.store, markId)
    return mark ? { sessionId: mark.sessionId, folded: mark.foldedAt !== null } : null
  }

  #tool() {
    const name = this.config.toolName
    const tool = defineTool({
      name,
      description: '',
      parameters: {
        fold: { description: '', oneOf: [{ type: 'integer' }, { type: 'string' }] },
        block: { type: 'string', description: '' },
        compaction: { type: 'string', description: '' },
        query: { type: 'string', description: '' },
        around: { type: 'integer', description: '' },
      },
      output: {
        schema: {
          type: 'object',
          properties: {
            text: { type: 'string', required: true },
            regions: { type: 'integer', required: true },
            matches: { type: 'integer', required: true },
            shown: { type: 'integer', required: true },
            truncated: { type: 'boolean', required: true },
          },
          additionalProperties: false,
        },
        render: (/** @type {any} */ _args, /** @type {RecallResult} */ value) => [{ type: 'text', text: value.text }],
      },
      presentCall: (/** @type {any} */ args) => ({
        card: 'generic',
        title: 'Recall',
        subtitle: [args?.fold !== undefined ? `fold ${args.fold}` : args?.block !== undefined ? `block ${args.block}` : args?.compaction !== undefined ? `compaction ${args.compaction}` : 'all folds', args?.query].filter(Boolean).join(' · '),
      }),
      execute: async (/** @type {any} */ args, /** @type {any} */ exec) => {
        const session = exec.agent?.session
        if (!session) throw new Error('recall needs an owning agent session')
        return this.recall(session, args)
      },
    })
    // Read at each request, in the row's language (the rewind row it may follow mounts in any order).
    const words = () => wordsOf(this.language)
    Object.defineProperty(tool, 'description', { enumerable: true, get: () => words().description })
    const props = tool.parameters.properties
    for (const key of /** @type {const} */ (['fold', 'block', 'compaction', 'query'])) {
      Object.defineProperty(props[key], 'description', { enumerable: true, get: () => words().params[key] })
    }
    Object.defineProperty(props.around, 'description', { enumerable: true, get: () => words().params.around(MAX_AROUND) })
    return tool
  }
}
