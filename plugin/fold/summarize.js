/**
 * @module plugin/fold/summarize
 * The report call: one `ctx.llm.stream` request that condenses a folded region.
 *
 * The request starts with the session's own system prompt and tool schemas exactly as the
 * last routed request carried them (that prefix is warm in the provider's KV cache), then the
 * region's messages, then the report instruction last: what the exploration was for (the
 * checkpoint's objective, the user's latest request, what the user wrote during it, quoted), a
 * length target, the sections with a hint each, "output only the report". A report cut off at the
 * output budget (finish `max-tokens`) is returned as such: the fold retries it or falls back.
 * Route: the configured
 * provider/model, else the session's latest `request/header`, else the agent's options;
 * none fails loud, as does a route the provider layer refuses (no adapter, bad credentials).
 * Thinking is turned off when the route offers an `off` effort: condensing is mechanical, and
 * reasoning tokens would compete with the report under `maxTokens`. Every attempt is cut off
 * after `reportTimeoutMs`. Only text blocks form the report.
 */
import { BlockAssembler, createUserMessage } from '@deepseek-ai/dsh-llm'

import { eventLog, regionMessages } from '../shared/session.js'

/** dsh-llm's `EMPTY_RESPONSE_CODE`, spelled out so the plugin loads on versions that do not export it. */
const EMPTY_RESPONSE = 'EMPTY_RESPONSE'

/**
 * The fixed part of the report instruction, per language: the sections with a hint each, "(none)"
 * for an empty one, the rules, "output only the report". It ends every instruction; what is
 * particular to the fold (`reportInstruction`) comes before it. The section names are the
 * extractive report's (`crates/fold-core/src/report/mod.rs`): one vocabulary for both writers.
 */
export const INSTRUCTIONS = {
  en: `Use these five Markdown sections, in this order, with terse bullets; under a section with nothing to say, write "(none)":

## Findings
What the exploration established, as it answers its purpose.
## Files and Artifacts
The files read, changed or created, and what matters in each.
## Decisions
What was decided, and why.
## Unresolved Questions
What is still unknown or failing.
## Recommended Next Step
The one next action toward the user's request.

Keep exact file paths, commands, error strings, identifiers and numbers verbatim. State what was established, not how. Do not call tools. Output only the report: no preamble, no closing remark.`,
  zh: `使用以下五个 Markdown 小节，按此顺序，用简洁的要点书写；某个小节无内容可写时，写"（无）"：

## 发现
探索确定了什么，对照它的目的作答。
## 文件与产物
读取、修改或创建的文件，以及每个文件中要紧的内容。
## 决策
做出了什么决定，以及原因。
## 未解决的问题
仍然未知或仍然失败的内容。
## 建议的下一步
朝着用户请求的下一个行动。

原样保留文件路径、命令、错误字符串、标识符和数字。写清确定了什么，而不是过程。不要调用工具。只输出报告本身：不要开场白，也不要结束语。`,
}

/** The words of the instruction's particular part, per language. */
const FACTS = {
  en: {
    opening: "Write a report that will replace the exploration above in your context. The exploration's steps will no longer be visible; only this report will.",
    purpose: (/** @type {number} */ id, /** @type {string} */ objective) => `Its purpose (checkpoint ${id}): ${objective}`,
    noPurpose: (/** @type {number} */ id) => `Its purpose (checkpoint ${id}) was not stated; infer it from the exploration and the user's request.`,
    request: (/** @type {string} */ text) => `The user's latest request, before the exploration:\n${quote(text)}`,
    during: 'The user wrote these during the exploration; they are folded with it, so carry their instructions and corrections into the report, in their words:',
    length: (/** @type {number} */ chars) => `Write at most about ${chars} characters.`,
    shorter: 'Your previous report was cut off at the length limit: write a shorter one.',
  },
  zh: {
    opening: '请撰写一份报告，用来在你的上下文中替换上面的探索过程。探索的各个步骤之后将不再可见，只有这份报告可见。',
    purpose: (/** @type {number} */ id, /** @type {string} */ objective) => `探索的目的（检查点 ${id}）：${objective}`,
    noPurpose: (/** @type {number} */ id) => `探索的目的（检查点 ${id}）没有写明；请根据探索过程和用户的请求推断。`,
    request: (/** @type {string} */ text) => `探索之前用户最近的请求：\n${quote(text)}`,
    during: '以下是用户在探索期间写的消息；它们会随探索一起被折叠，所以请把其中的指示和纠正用原话写进报告：',
    length: (/** @type {number} */ chars) => `报告最多写约 ${chars} 个字符。`,
    shorter: '你上一次的报告因长度上限被截断：请写得更短。',
  },
}

/** The longest user message the instruction quotes, and how many of the span's it quotes. */
const QUOTE_CHARS = 600
const QUOTED_MESSAGES = 6

/** `text` as a Markdown quote, cut to `QUOTE_CHARS`. @param {string} text */
function quote(text) {
  const cut = text.length > QUOTE_CHARS ? `${text.slice(0, QUOTE_CHARS - 1)}…` : text
  return cut
    .trim()
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n')
}

/** The text of a message's text blocks. @param {any} message */
const textOf = (message) =>
  (message?.content ?? [])
    .filter((/** @type {any} */ b) => b?.type === 'text')
    .map((/** @type {any} */ b) => b.text)
    .join('')

/** A message the user wrote (not a replacement, a tool result, a plugin's note). @param {any} message */
const isUsers = (message) => message?.role === 'user' && message?.source?.kind === 'user'

/**
 * The user's latest request before `seq`: the last message the user wrote, read back from the log
 * (a fold or a compaction may have replaced it on the surface; the log keeps it).
 * @param {any} session @param {number} seq
 */
export function latestRequest(session, seq) {
  const log = eventLog(session)
  for (let i = Math.min(seq, log.length) - 1; i >= 0; i--) {
    const event = log[i]
    if (event.type === 'user/message' && event.surfaceOp?.op !== 'replace' && isUsers(event.data)) return textOf(event.data)
  }
  return undefined
}

/**
 * @typedef {object} ReportFacts what the report instruction says about this fold
 * @property {number} markId
 * @property {string | null} [objective] the checkpoint's objective
 * @property {string} [request] the user's latest request before the exploration
 * @property {string[]} during what the user wrote during the exploration
 * @property {number} targetChars the report's length target
 * @property {boolean} [shorter] the previous attempt was cut off at the length limit
 */

/**
 * The whole report instruction: the opening, what this fold is for (the checkpoint's objective,
 * the user's latest request, what the user wrote during the exploration, quoted), the length
 * target, then the fixed part (`INSTRUCTIONS`).
 * @param {ReportFacts} facts @param {'en' | 'zh'} [language]
 */
export function reportInstruction(facts, language = 'en') {
  const w = FACTS[language] ?? FACTS.en
  const parts = [w.opening]
  const objective = typeof facts.objective === 'string' ? facts.objective.replace(/\s+/g, ' ').trim() : ''
  parts.push(objective ? w.purpose(facts.markId, objective) : w.noPurpose(facts.markId))
  if (facts.request?.trim()) parts.push(w.request(facts.request))
  if (facts.during.length) parts.push(`${w.during}\n${facts.during.slice(-QUOTED_MESSAGES).map(quote).join('\n\n')}`)
  parts.push(facts.shorter ? `${w.length(facts.targetChars)} ${w.shorter}` : w.length(facts.targetChars))
  parts.push(INSTRUCTIONS[language] ?? INSTRUCTIONS.en)
  return parts.join('\n\n')
}

/** Whether `message` is a report instruction (its text ends with the fixed part, either language). @param {any} message */
export const isReportInstruction = (message) => {
  const text = textOf(message)
  return Object.values(INSTRUCTIONS).some((fixed) => text.endsWith(fixed))
}

/**
 * The report's length target, in characters: a third of the exploration's visible text (a fold
 * must shrink it), at most what `maxTokens` can carry (about 3 chars a token in English, 1.2 in
 * Chinese), at least 200; halved after a report cut off at the length limit.
 * @param {number} foldedChars @param {number} maxTokens @param {'en' | 'zh'} language @param {boolean} shorter
 */
export function targetChars(foldedChars, maxTokens, language, shorter) {
  const budget = Math.floor(maxTokens * (language === 'zh' ? 1.2 : 3))
  const target = Math.max(200, Math.min(Math.floor(foldedChars / 3), budget))
  return Math.round((shorter ? target / 2 : target) / 10) * 10
}

/**
 * Provider failure codes that no retry or fallback can fix: the route names no adapter, or its
 * credentials are missing or refused. A fold that meets one fails loud, even with
 * `fallback: extractive` (the fallback covers failed or empty completions, not configuration).
 */
const MISCONFIGURATION_CODES = new Set(['NO_ADAPTER', 'MISSING_CREDENTIAL', 'INVALID_CREDENTIAL', 'AUTH'])

/**
 * An error of the report call's configuration: `what` the user must set — a `route` (no
 * provider/model resolvable), a `provider` (no adapter for it), `credentials` (missing or refused).
 * @param {string} message @param {'route' | 'provider' | 'credentials'} what
 */
function misconfiguration(message, what) {
  return Object.assign(new Error(message), { misconfigured: what })
}

/** Whether `e` is a misconfiguration of the report call (see `MISCONFIGURATION_CODES`). @param {unknown} e */
export const isMisconfiguration = (e) => {
  const what = /** @type {any} */ (e)?.misconfigured
  return what === 'route' || what === 'provider' || what === 'credentials' || what === true
}

/** @param {unknown} v */
const named = (v) => typeof v === 'string' && v.length > 0

/**
 * Which provider/model writes the report, as the reference resolves it: the configured
 * `summarizationProvider` + `summarizationModel` (only when both are set; one alone is ignored,
 * with a warning at mount), else the session's latest routed `request/header`, else the agent's
 * options when they name both. None → a misconfiguration.
 * @param {{summarizationProvider?: string, summarizationModel?: string}} config
 * @param {any} session
 * @param {any} agent
 * @returns {{provider: string, model: string}}
 */
export function resolveRoute(config, session, agent) {
  if (named(config.summarizationProvider) && named(config.summarizationModel)) {
    return { provider: /** @type {string} */ (config.summarizationProvider), model: /** @type {string} */ (config.summarizationModel) }
  }
  const header = session.requestHeader?.()?.config
  if (named(header?.provider) && named(header?.model)) return { provider: header.provider, model: header.model }
  const options = agent?.options
  if (named(options?.provider) && named(options?.model)) return { provider: options.provider, model: options.model }
  throw misconfiguration(
    'no provider/model available for rewind summarization: set both summarizationProvider and summarizationModel, route one request, or give the agent both a provider and a model',
    'route',
  )
}

/**
 * `summarize`, failing with a timeout error when an attempt takes longer than `ms` (the report
 * call's own signal is aborted too), so a hung summarizer never holds the session's fold lock.
 * The timer keeps the process alive while the call runs, as the call's own I/O would.
 * @template {(region: any, attempt: number, signal?: AbortSignal) => Promise<any>} F
 * @param {F} summarize @param {number} ms
 * @returns {(region: any, attempt: number) => Promise<any>}
 */
export function withTimeout(summarize, ms) {
  return (region, attempt) => {
    const controller = new AbortController()
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer
    const expired = new Promise((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(`the report call timed out after ${ms} ms (reportTimeoutMs)`)
        controller.abort(error)
        reject(error)
      }, ms)
    })
    return Promise.race([summarize(region, attempt, controller.signal), expired]).finally(() => clearTimeout(timer))
  }
}

/** Finish reasons of a report cut off at its output budget: never a whole report. */
export const TRUNCATED = new Set(['max-tokens', 'length'])

/**
 * A `summarize` callback for the addon's `rewind`; each attempt is one `ctx.llm.stream` call,
 * cut off after `config.reportTimeoutMs`. `mark` is the checkpoint the fold starts from (its
 * objective goes into the instruction when the region is that mark's).
 * @param {{llm: any, session: any, agent: any, config: {maxTokens: number, reportLanguage: 'en' | 'zh', reportTimeoutMs: number, summarizationProvider?: string, summarizationModel?: string}, signal?: AbortSignal, mark?: {id: number, objective?: string | null} | null}} options
 */
export function llmSummarizer({ llm, session, agent, config, signal, mark }) {
  /** @type {{provider: string, model: string, reasoningEffort?: string} | undefined} */
  let route
  /** Whether the last attempt was cut off at the length limit (the next asks for a shorter report). */
  let cut = false
  return withTimeout(async (/** @type {{seqs: Uint32Array, markId: number, foldedChars: number}} */ region, /** @type {number} */ attempt, /** @type {AbortSignal} */ timeout) => {
    const cancel = signal ? AbortSignal.any([signal, timeout]) : timeout
    if (!route) {
      route = resolveRoute(config, session, agent)
      // Probing the route's efforts never fails the fold (an unknown route fails at the call).
      const info = await llm.resolveModelInfo(route.provider, route.model, cancel).catch(() => undefined)
      if (info?.reasoning?.efforts?.some((/** @type {{id: string}} */ e) => e.id === 'off')) route.reasoningEffort = 'off'
    }
    const header = session.requestHeader?.()
    const explored = regionMessages(session, region.seqs)
    const language = config.reportLanguage === 'zh' ? 'zh' : 'en'
    const shorter = attempt > 0 && cut
    const instruction = reportInstruction(
      {
        markId: region.markId,
        objective: mark?.id === region.markId ? mark.objective : null,
        request: latestRequest(session, region.seqs[0] ?? session.seq),
        during: explored.filter(isUsers).map(textOf).filter((t) => t.trim()),
        targetChars: targetChars(region.foldedChars ?? 0, config.maxTokens, language, shorter),
        shorter,
      },
      language,
    )
    const messages = [...explored, createUserMessage({ content: [{ type: 'text', text: instruction }], source: { kind: 'plugin', plugin: 'rewind' } })]
    const assembler = new BlockAssembler()
    for await (const chunk of llm.stream({
      provider: route.provider,
      model: route.model,
      messages,
      ...(header?.system !== undefined ? { system: header.system } : {}),
      ...(header?.tools !== undefined ? { tools: header.tools } : {}),
      maxTokens: config.maxTokens,
      ...(route.reasoningEffort ? { reasoningEffort: route.reasoningEffort } : {}),
      signal: cancel,
      sessionId: session.id,
    })) {
      assembler.push(chunk)
    }
    const finish = assembler.finish
    const usage = assembler.usage
    const usageOut = usage ? { outputTokens: usage.outputTokens, ...(usage.reasoningTokens !== undefined ? { reasoningTokens: usage.reasoningTokens } : {}) } : undefined
    // DSH's provider adapters (dsh-llm-deepseek, dsh-llm-pi-ai) turn a completed response with
    // no content into an `error` finish coded EMPTY_RESPONSE (dsh-llm's EMPTY_RESPONSE_CODE)
    // instead of an empty message. That is an empty completion, which the fold retries up to
    // `maxSummarizationRetries`; throwing here would fail the fold on the first one.
    if (finish?.kind === 'error' && finish.failure?.code === EMPTY_RESPONSE) return { text: '', finish: 'empty', usage: usageOut }
    if (finish?.kind === 'error' || finish?.kind === 'aborted') {
      const failure = finish.failure ?? {}
      const message = `rewind summarization stream ended with ${finish.kind}: ${failure.message ?? 'no message'}${failure.code ? ` (${failure.code})` : ''}`
      throw MISCONFIGURATION_CODES.has(failure.code) ? misconfiguration(message, failure.code === 'NO_ADAPTER' ? 'provider' : 'credentials') : new Error(message)
    }
    const text = assembler
      .blocks()
      .filter((/** @type {{type: string}} */ b) => b.type === 'text')
      .map((/** @type {{text: string}} */ b) => b.text)
      .join('')
    // A report cut off at maxTokens is no whole report: the fold retries it (asking for a shorter
    // one) or, out of retries, fails or falls back — it never commits it.
    cut = TRUNCATED.has(finish?.kind)
    return { text, finish: finish?.kind, usage: usageOut }
  }, config.reportTimeoutMs)
}
