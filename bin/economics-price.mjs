/**
 * @module bin/economics-price
 * What the folds of one persisted session cost and saved, and what its compactions
 * (dsh-fold/compaction's and DSH's compaction-basic's) cost and freed: the analysis behind
 * `dsh-fold economics FILE` (bin/economics.mjs), which bin/economics-text.mjs and
 * bin/economics-html.mjs render.
 *
 * Contract. From the session's log alone (replayed into a real Session by the caller) it
 * rebuilds every model request the agent made and prices it twice — as it happened, and as
 * it would have happened with the same requests but none of the folds — under one cache model
 * and one price list, and reports per fold (rewind) and per block commit and in total.
 *
 * The requests. One agent request per `assistant/message` event (a model reply that landed):
 * its input is the latest `request/header` before it (system prompt + tool schemas) followed
 * by the surface as it stood just before the reply was appended; its output is the reply. A
 * rewind fold with an LLM report adds one report call at the fold: header + the folded
 * messages + the report instruction in, the report (without the recall hint line) out; an
 * extractive fold (its tool result says "extractive report") and a block commit (the agent
 * wrote the summary inside its own program) add none. A compaction whose summary came from a
 * model call (compaction-basic's, or dsh-fold/compaction with `summarizer: 'llm'`: its
 * `compaction/summary` says `llmStreamCall`) adds that call: header + the shadowed messages +
 * the backend's instruction in, the summary out (the provider's usage when the log has it);
 * an extractive one (dsh-fold/compaction's default) adds none. Requests that failed, retries of empty
 * report completions and title requests leave no trace in the log and are not counted.
 *
 * Without the folds. The same agent requests, with every fold and block replacement left out
 * of the surface walk, so the nodes they shadowed stay in place (compactions, of any backend,
 * still apply; a compaction that swallowed a fold's report swallows the fold's originals
 * instead). Each compaction is priced alone the way a fold is (the requests after it, without
 * it), next to the folds, and listed per backend (`compactions`: how many, their summary calls
 * and what those cost, the tokens they freed); the totals compare with and without the folds
 * and block commits.
 * The replies are assumed unchanged.
 *
 * Tokens: DSH's token meter (`@deepseek-ai/dsh-token-meter`, the heuristic the host uses):
 * `estimateMessage` per message, the meter's envelope price for system + tools.
 *
 * The cache model (prefix cache at message granularity): each request leaves a cached prefix
 * of its whole input plus its reply (the provider persists the end of a request's input and of
 * its output); a later request hits for its longest prefix — header, then messages, compared
 * by identity (the same log event) — equal to a prefix some earlier request left, and misses for
 * the rest. In an agent loop that is "up to the first difference from the previous request";
 * a report call in between does not evict the agent's prefix. Nothing expires.
 *
 * Bills: input hit × hit price + input miss × miss price + output × output price, per 1M
 * tokens; defaults are DeepSeek's published list (see `DEFAULT_PRICES`).
 */
import { isBlockCommitSource, isCompactionSource } from '../plugin/recall/log.js'
import { reportBody, splitReportFrame } from '../plugin/fold/words.js'
import { visibleChars } from '../plugin/shared/meter.js'
import { isRewindReportSource } from '../plugin/shared/session.js'
import { compactionBackend } from './session-log.mjs'

/**
 * DeepSeek API prices, USD per 1M tokens, deepseek-chat and deepseek-reasoner (DeepSeek-V3.1),
 * in effect from 2025-09-05 16:00 UTC: https://api-docs.deepseek.com/quick_start/pricing
 */
export const DEFAULT_PRICES = Object.freeze({ hit: 0.07, miss: 0.56, output: 1.68, currency: 'USD', source: 'api-docs.deepseek.com/quick_start/pricing (DeepSeek-V3.1, from 2025-09-05)' })

const MESSAGE_TYPES = new Set(['user/message', 'assistant/message', 'tool/result'])

/**
 * @typedef {object} Prices
 * @property {number} hit per 1M input tokens read from the cache
 * @property {number} miss per 1M input tokens not in the cache
 * @property {number} output per 1M output tokens
 * @property {string} currency
 * @property {string} [source]
 */

/**
 * @typedef {object} Fold one fold, block commit or compaction found in the log
 * @property {'fold' | 'block' | 'compaction'} kind
 * @property {string} name `fold 2` / `block auth, db` / `compaction 1a2b3c4d (dsh-fold)`
 * @property {number} seq the replacement's seq
 * @property {number[]} shadowed the message nodes it replaced, as they stood
 * @property {'llm' | 'extractive' | 'agent'} report who wrote the replacement
 * @property {'dsh-fold' | 'compaction-basic' | 'other'} [backend] a compaction's writer
 * @property {{inputTokens?: number, outputTokens?: number} | undefined} [usage] a compaction call's reported usage
 */

/** compaction-basic's summary instruction, priced: its ~2,300 chars (the package does not export it). */
export const BASIC_INSTRUCTION_TOKENS = 580

/**
 * @typedef {object} Bill
 * @property {number} requests
 * @property {number} input input tokens (hit + miss)
 * @property {number} hit
 * @property {number} miss
 * @property {number} output
 * @property {number} cost
 */

/** Which folds a log holds, in log order. @param {readonly any[]} events */
export function findFolds(events) {
  /** @type {Fold[]} */
  const folds = []
  for (const e of events) {
    if (e.type !== 'user/message' || e.surfaceOp?.op !== 'replace' || !Array.isArray(e.sourceEventSeqs)) continue
    const source = e.data?.source
    const shadowed = e.sourceEventSeqs.filter((/** @type {number} */ s) => MESSAGE_TYPES.has(events[s]?.type))
    if (isRewindReportSource(source) && Number.isSafeInteger(source.markId)) {
      folds.push({ kind: 'fold', name: `fold ${source.markId}`, seq: e.seq, shadowed, report: reportKind(events, e.seq) })
    } else if (isBlockCommitSource(source)) {
      const ids = [...(source.blockPtc.closed ?? [])]
      folds.push({ kind: 'block', name: `block ${ids.join(', ') || '(no ids)'}`, seq: e.seq, shadowed, report: 'agent' })
    } else if (isCompactionSource(source)) {
      const summary = events[e.sourceEventSeqs[1]]
      const data = summary?.type === 'compaction/summary' ? summary.data : undefined
      const { backend } = compactionBackend(source, data)
      const id = String(source.compactionId ?? e.seq).slice(0, 8)
      folds.push({ kind: 'compaction', name: `compaction ${id} (${backend})`, seq: e.seq, shadowed, report: data?.llmStreamCall ? 'llm' : 'extractive', backend, usage: data?.usage })
    }
  }
  return folds
}

/**
 * Who wrote a rewind's report: its frame says so (`plugin/fold/words.js`); a report committed
 * before reports had frames, by the rewind's tool result (the first `Folded …` result after the
 * replacement said "extractive report" for the extractive generator).
 * @param {readonly any[]} events @param {number} seq
 */
function reportKind(events, seq) {
  const text = (events[seq]?.data?.content ?? []).map((/** @type {any} */ b) => b?.text ?? '').join('')
  const framed = splitReportFrame(text)
  if (framed.head) return framed.extractive ? 'extractive' : 'llm'
  for (let i = seq + 1; i < events.length; i++) {
    const e = events[i]
    if (e.type !== 'tool/result') continue
    const result = JSON.stringify(e.data?.message?.content ?? '')
    if (/Folded \d+ surface node/.test(result)) return /into an extractive report/.test(result) ? 'extractive' : 'llm'
  }
  return 'llm'
}

/**
 * @typedef {object} ReportInstruction the rewind row's report instruction, from `plugin/fold/summarize.js`
 * @property {(facts: any, language: 'en' | 'zh') => string} instruction `reportInstruction`
 * @property {(session: any, seq: number) => string | undefined} latestRequest
 * @property {(foldedChars: number, maxTokens: number, language: 'en' | 'zh', shorter: boolean) => number} targetChars
 */

/**
 * What a fold's report instruction said, as far as the log tells: its mark, the user's request
 * before the region, what the user wrote in it, a length target from the region's size (at the
 * default `maxTokens`).
 * @param {readonly any[]} events @param {any} session @param {Fold} f @param {ReportInstruction} report
 */
function reportFactsOf(events, session, f, report) {
  const text = (/** @type {any} */ m) => (m?.content ?? []).map((/** @type {any} */ b) => (b?.type === 'text' ? b.text : '')).join('')
  const users = f.shadowed.map((s) => events[s]).filter((e) => e?.type === 'user/message' && e.data?.source?.kind === 'user')
  const chars = f.shadowed.reduce((n, s) => n + visibleChars(session.deriveEventMessage(events[s])?.content), 0)
  return {
    markId: events[f.seq].data?.source?.markId ?? 0,
    objective: null,
    request: report.latestRequest(session, Math.min(...f.shadowed)),
    during: users.map((e) => text(e.data)),
    targetChars: report.targetChars(chars, 1024, 'en', false),
  }
}

/**
 * @typedef {object} Request one agent request, as rebuilt
 * @property {number} seq the reply's seq
 * @property {number} turn
 * @property {number} step
 * @property {any} header the request header in effect
 * @property {number[]} nodes the surface sent, in model order
 */

/**
 * Walks the log's surface, leaving out the replacements in `skip`, and records the surface
 * before each reply.
 * @param {readonly any[]} events @param {Set<number>} skip replacement seqs left out
 * @returns {Request[]}
 */
export function walkRequests(events, skip) {
  /** @type {number[]} */
  let nodes = []
  /** @type {any} */
  let header
  /** @type {Request[]} */
  const requests = []
  /** @param {number[]} seqs @param {Set<number>} into */
  const expand = (seqs, into) => {
    for (const s of seqs) {
      into.add(s)
      if (skip.has(s)) expand(events[s].sourceEventSeqs ?? [], into)
    }
    return into
  }
  for (const e of events) {
    if (e.type === 'request/header') header = e.data?.header
    if (!MESSAGE_TYPES.has(e.type)) continue
    if (e.type === 'assistant/message') requests.push({ seq: e.seq, turn: e.data?.turn, step: e.data?.step, header, nodes: [...nodes] })
    if (e.surfaceOp === 'append' || e.surfaceOp === undefined) {
      nodes.push(e.seq)
      continue
    }
    if (skip.has(e.seq)) continue
    const { start, end } = e.surfaceOp
    const from = nodes.indexOf(start)
    const to = nodes.indexOf(end)
    if (from >= 0 && to >= from) {
      nodes.splice(from, to - from + 1, e.seq)
      continue
    }
    // Without the folds, a replacement over a left-out fold covers what that fold had shadowed.
    const gone = expand(e.sourceEventSeqs ?? [], new Set())
    const at = nodes.findIndex((s) => gone.has(s))
    nodes = nodes.filter((s) => !gone.has(s))
    nodes.splice(at < 0 ? nodes.length : at, 0, e.seq)
  }
  return requests
}

/**
 * Prices: message tokens (cached per event) and envelope tokens (cached per header).
 * @param {{estimateMessage(m: any): number, measure(session: any, header?: any): {totalTokens: number}}} meter
 * @param {any} session the replayed session (derives messages) @param {any} emptySession a session with no events
 */
export function pricer(meter, session, emptySession) {
  /** @type {Map<number, number>} */
  const nodes = new Map()
  /** @type {Map<string, {key: string, tokens: number}>} */
  const headers = new Map()
  const log = session.log ?? session.events
  return {
    /** @param {number} seq */
    node(seq) {
      let t = nodes.get(seq)
      if (t === undefined) {
        const message = session.deriveEventMessage(log[seq])
        t = message ? meter.estimateMessage(message) : 0
        nodes.set(seq, t)
      }
      return t
    },
    /** @param {any} message */
    message: (message) => meter.estimateMessage(message),
    /** The header's cache key and tokens. @param {any} header */
    header(header) {
      const json = JSON.stringify(header ?? null)
      let h = headers.get(json)
      if (!h) {
        h = { key: `h${headers.size}`, tokens: header ? meter.measure(emptySession, header).totalTokens : 0 }
        headers.set(json, h)
      }
      return h
    },
  }
}

/** The prefix cache: a trie of keys; `read(keys)` = how many leading keys are cached. */
class PrefixCache {
  root = new Map()
  /** @param {(string | number)[]} keys @returns {number} */
  read(keys) {
    let node = this.root
    let n = 0
    for (const k of keys) {
      const next = node.get(k)
      if (!next) break
      node = next
      n++
    }
    return n
  }
  /** @param {(string | number)[]} keys */
  write(keys) {
    let node = this.root
    for (const k of keys) {
      let next = node.get(k)
      if (!next) node.set(k, (next = new Map()))
      node = next
    }
  }
}

/**
 * @typedef {object} PricedRequest
 * @property {'agent' | 'report'} kind
 * @property {number} seq
 * @property {number} input
 * @property {number} hit
 * @property {number} miss
 * @property {number} output
 * @property {number} cost
 * @property {(string | number)[]} keys what it sent (cache keys)
 * @property {number[]} tokens tokens of each key
 * @property {number} hitKeys leading keys that hit
 */

/**
 * One scenario: its agent requests and report calls, in time order, priced under the cache
 * model. `reports` are `{seq, header, shadowed, instruction, output}`: a call made at `seq`.
 * @param {Request[]} requests @param {any[]} reports @param {ReturnType<typeof pricer>} price
 * @param {Prices} prices
 * @returns {PricedRequest[]}
 */
export function priceScenario(requests, reports, price, prices) {
  const timeline = [...requests.map((r) => ({ kind: /** @type {const} */ ('agent'), at: r.seq, r })), ...reports.map((r) => ({ kind: /** @type {const} */ ('report'), at: r.seq, r }))]
  timeline.sort((a, b) => a.at - b.at || (a.kind === 'report' ? -1 : 1))
  const cache = new PrefixCache()
  return timeline.map(({ kind, at, r }) => {
    const h = price.header(r.header)
    /** @type {(string | number)[]} */
    let keys
    /** @type {number[]} */
    let tokens
    let output
    /** @type {(string | number)[]} */
    let written
    if (kind === 'agent') {
      keys = [h.key, ...r.nodes]
      tokens = [h.tokens, ...r.nodes.map((/** @type {number} */ s) => price.node(s))]
      output = price.node(at)
      written = [...keys, at]
    } else {
      keys = [h.key, ...r.shadowed, `instruction:${r.instruction.key}`]
      tokens = [h.tokens, ...r.shadowed.map((/** @type {number} */ s) => price.node(s)), r.instruction.tokens]
      output = r.output
      written = keys
    }
    const hitKeys = cache.read(keys)
    cache.write(written)
    const hit = tokens.slice(0, hitKeys).reduce((a, b) => a + b, 0)
    const miss = tokens.slice(hitKeys).reduce((a, b) => a + b, 0)
    return { kind, seq: at, input: hit + miss, hit, miss, output, cost: cost(hit, miss, output, prices), keys, tokens, hitKeys }
  })
}

/** @param {number} hit @param {number} miss @param {number} output @param {Prices} p */
const cost = (hit, miss, output, p) => (hit * p.hit + miss * p.miss + output * p.output) / 1e6

/** @param {PricedRequest[]} priced @returns {Bill} */
function bill(priced) {
  const b = { requests: priced.length, input: 0, hit: 0, miss: 0, output: 0, cost: 0 }
  for (const r of priced) {
    b.input += r.input
    b.hit += r.hit
    b.miss += r.miss
    b.output += r.output
    b.cost += r.cost
  }
  return b
}

/**
 * The whole analysis.
 * @param {{events: readonly any[], session: any, emptySession: any, meter: any, prices: Prices, instructions: Record<string, string>, createUserMessage: (m: any) => any, report?: ReportInstruction}} input
 *   `report`: the rewind row's instruction builder (`plugin/fold/summarize.js`), to price each fold's
 *   instruction as written for it; without it, `instructions` (the fixed part) per language
 */
export function analyze({ events, session, emptySession, meter, prices, instructions, createUserMessage, report }) {
  const price = pricer(meter, session, emptySession)
  const folds = findFolds(events)
  // The totals compare with and without the folds and block commits; compactions apply in both.
  const all = new Set(folds.filter((f) => f.kind !== 'compaction').map((f) => f.seq))
  /** The report call of each LLM-reported fold: made at the fold, under the header then in effect. */
  const reportCalls = new Map()
  const withRequests = walkRequests(events, new Set())
  for (const f of folds) {
    if (f.report !== 'llm') continue
    const header = [...events.slice(0, f.seq)].reverse().find((e) => e.type === 'request/header')?.data?.header
    if (f.kind === 'compaction') {
      const summary = events[events[f.seq].sourceEventSeqs[1]]?.data
      const out = (summary?.summary ?? []).map((/** @type {any} */ b) => b.text ?? '').join('')
      const ours = f.backend === 'dsh-fold'
      const tokens = ours ? price.message(createUserMessage({ content: [{ type: 'text', text: instructions.compaction ?? '' }], source: { kind: 'plugin', plugin: 'dsh-fold-compaction' } })) : BASIC_INSTRUCTION_TOKENS
      reportCalls.set(f.seq, {
        seq: f.seq,
        header,
        shadowed: f.shadowed,
        instruction: { key: ours ? 'dsh-fold-compaction' : 'compaction-basic', tokens },
        output: f.usage?.outputTokens ?? price.message(createUserMessage({ content: [{ type: 'text', text: out }], source: { kind: 'plugin', plugin: 'compact' } })),
      })
      continue
    }
    const replacement = events[f.seq]
    const text = (replacement.data?.content ?? []).map((/** @type {any} */ b) => b.text ?? '').join('')
    const body = reportBody(text)
    const language = /^## 发现/m.test(body) ? 'zh' : 'en'
    // The instruction as the rewind row writes it for this fold (what the log can tell of it: the
    // user's request and messages, the region's size; the checkpoint's objective is the store's,
    // so it is left out), else its fixed part.
    const instruction = report ? report.instruction(reportFactsOf(events, session, f, report), language) : (instructions[language] ?? instructions.en)
    reportCalls.set(f.seq, {
      seq: f.seq,
      header,
      shadowed: f.shadowed,
      instruction: { key: report ? `${language}:${f.seq}` : language, tokens: price.message(createUserMessage({ content: [{ type: 'text', text: instruction }], source: { kind: 'plugin', plugin: 'rewind' } })) },
      output: price.message(createUserMessage({ content: [{ type: 'text', text: body }], source: { kind: 'plugin', plugin: 'rewind' } })),
    })
  }
  /** @param {Set<number>} skip */
  const scenario = (skip) => {
    const requests = skip.size ? walkRequests(events, skip) : withRequests
    const reports = [...reportCalls.values()].filter((r) => !skip.has(r.seq))
    return { requests, priced: priceScenario(requests, reports, price, prices) }
  }
  const withFolds = scenario(new Set())
  const withoutFolds = scenario(all)
  const agentWith = withFolds.priced.filter((r) => r.kind === 'agent')
  const agentWithout = withoutFolds.priced.filter((r) => r.kind === 'agent')
  const totalWith = bill(withFolds.priced)
  const totalWithout = bill(withoutFolds.priced)

  const perFold = folds.map((f) => {
    const foldedTokens = f.shadowed.reduce((n, s) => n + price.node(s), 0)
    const replacementTokens = price.node(f.seq)
    const alone = scenario(new Set([f.seq]))
    const aloneAgent = alone.priced.filter((r) => r.kind === 'agent')
    const after = agentWith.map((r, i) => ({ r, i })).filter(({ r }) => r.seq > f.seq)
    const notSent = after.reduce((n, { r, i }) => n + (aloneAgent[i].input - r.input), 0)
    // The prefix it invalidated: in the first request after it, the tokens past the
    // replacement that the request before it had cached (its input or its reply).
    let invalidated = 0
    const first = after[0]
    const before = agentWith.filter((r) => r.seq < f.seq).at(-1)
    if (first && before) {
      const cached = new Set([...before.keys, before.seq])
      const at = first.r.keys.indexOf(f.seq)
      for (let k = Math.max(at + 1, first.r.hitKeys); k < first.r.keys.length; k++) if (cached.has(first.r.keys[k])) invalidated += first.r.tokens[k]
    }
    const call = withFolds.priced.find((r) => r.kind === 'report' && r.seq === f.seq)
    const aloneBill = bill(alone.priced)
    // Paid once: the replacement and the invalidated prefix read at the miss price instead of
    // the hit price, and the report call; earned by every later request: the freed tokens it
    // does not read (at the hit price, as they would have been cached).
    const once = ((replacementTokens + invalidated) * (prices.miss - prices.hit)) / 1e6 + (call?.cost ?? 0)
    const perRequest = ((foldedTokens - replacementTokens) * prices.hit) / 1e6
    return {
      kind: f.kind,
      ...(f.backend ? { backend: f.backend } : {}),
      name: f.name,
      seq: f.seq,
      report: f.report,
      foldedNodes: f.shadowed.length,
      foldedTokens,
      replacementTokens,
      tokensFreed: foldedTokens - replacementTokens,
      requestsAfter: after.length,
      inputTokensNotSent: notSent,
      invalidatedTokens: invalidated,
      invalidatedCost: (invalidated * (prices.miss - prices.hit)) / 1e6,
      reportCall: call ? { input: call.input, hit: call.hit, miss: call.miss, output: call.output, cost: call.cost } : null,
      saved: aloneBill.cost - totalWith.cost,
      breakEvenRequests: perRequest > 0 ? Math.max(1, Math.ceil(once / perRequest)) : null,
    }
  })

  const requests = agentWith.map((r, i) => ({
    seq: r.seq,
    turn: withRequests[i].turn,
    step: withRequests[i].step,
    with: { input: r.input, hit: r.hit, miss: r.miss, output: r.output },
    without: { input: agentWithout[i].input, hit: agentWithout[i].hit, miss: agentWithout[i].miss },
    // The folds that landed since the previous request: this one is the first to go without them.
    after: folds.filter((f) => f.seq < r.seq && (i === 0 || f.seq > agentWith[i - 1].seq)).map((f) => f.name),
  }))
  return {
    prices,
    folds: perFold,
    compactions: byBackend(perFold),
    requests,
    totals: {
      with: totalWith,
      without: totalWithout,
      saved: {
        input: totalWithout.input - totalWith.input,
        hit: totalWithout.hit - totalWith.hit,
        miss: totalWithout.miss - totalWith.miss,
        output: totalWithout.output - totalWith.output,
        cost: totalWithout.cost - totalWith.cost,
        percent: totalWithout.cost > 0 ? (100 * (totalWithout.cost - totalWith.cost)) / totalWithout.cost : 0,
      },
    },
    recordedUsage: recordedUsage(events),
  }
}

/**
 * The compactions per backend (dsh-fold/compaction's, compaction-basic's, any other's), in the
 * order each backend first compacted: how many, their summary calls and what those cost, the
 * tokens they freed.
 * @param {Array<{kind: string, backend?: string, tokensFreed: number, reportCall: {input: number, output: number, cost: number} | null}>} folds
 */
export function byBackend(folds) {
  /** @type {Map<string, {backend: string, compactions: number, modelCalls: number, callInput: number, callOutput: number, callCost: number, tokensFreed: number}>} */
  const out = new Map()
  for (const f of folds) {
    if (f.kind !== 'compaction') continue
    const backend = f.backend ?? 'other'
    const b = out.get(backend) ?? { backend, compactions: 0, modelCalls: 0, callInput: 0, callOutput: 0, callCost: 0, tokensFreed: 0 }
    b.compactions++
    b.tokensFreed += f.tokensFreed
    if (f.reportCall) {
      b.modelCalls++
      b.callInput += f.reportCall.input
      b.callOutput += f.reportCall.output
      b.callCost += f.reportCall.cost
    }
    out.set(backend, b)
  }
  return [...out.values()]
}

/** What the provider itself reported in the log's assistant messages, when it did. @param {readonly any[]} events */
function recordedUsage(events) {
  const u = { replies: 0, inputTokens: 0, cacheReadTokens: 0, outputTokens: 0 }
  for (const e of events) {
    const usage = e.type === 'assistant/message' ? e.data?.usage : undefined
    if (!usage) continue
    u.replies++
    u.inputTokens += usage.inputTokens ?? 0
    u.cacheReadTokens += usage.cacheReadTokens ?? 0
    u.outputTokens += usage.outputTokens ?? 0
  }
  return u.replies ? u : null
}
