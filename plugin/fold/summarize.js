/**
 * @module plugin/fold/summarize
 * The report call: one `ctx.llm.stream` request that condenses a folded region.
 *
 * The request starts with the session's own system prompt and tool schemas exactly as the
 * last routed request carried them (that prefix is warm in the provider's KV cache), then the
 * region's messages, then the report instruction last. Route: the configured
 * provider/model, else the session's latest `request/header`, else the agent's options;
 * none fails loud, as does a route the provider layer refuses (no adapter, bad credentials).
 * Thinking is turned off when the route offers an `off` effort: condensing is mechanical, and
 * reasoning tokens would compete with the report under `maxTokens`. Every attempt is cut off
 * after `reportTimeoutMs`. Only text blocks form the report.
 */
import { BlockAssembler, createUserMessage } from '@deepseek-ai/dsh-llm'

import { regionMessages } from '../shared/session.js'

/** dsh-llm's `EMPTY_RESPONSE_CODE`, spelled out so the plugin loads on versions that do not export it. */
const EMPTY_RESPONSE = 'EMPTY_RESPONSE'

export const INSTRUCTIONS = {
  en: `Write a report that will replace the exploration above in your context. The exploration's steps will no longer be visible; only this report will. Use these Markdown sections:

## Findings
## Files and Artifacts
## Decisions
## Unresolved Questions
## Recommended Next Step

Keep exact file paths, commands, error strings, identifiers and numbers verbatim. Be concise: state what was established, not how. Do not call tools.`,
  zh: `请撰写一份报告，用来在你的上下文中替换上面的探索过程。探索的各个步骤之后将不再可见，只有这份报告可见。使用以下 Markdown 小节：

## 发现
## 文件与产物
## 决定
## 未解决的问题
## 建议的下一步

原样保留文件路径、命令、错误字符串、标识符和数字。保持简洁：写清确定了什么，而不是过程。不要调用工具。`,
}

/**
 * Provider failure codes that no retry or fallback can fix: the route names no adapter, or its
 * credentials are missing or refused. A fold that meets one fails loud, even with
 * `fallback: extractive` (the fallback covers failed or empty completions, not configuration).
 */
const MISCONFIGURATION_CODES = new Set(['NO_ADAPTER', 'MISSING_CREDENTIAL', 'INVALID_CREDENTIAL', 'AUTH'])

/**
 * An error of the report call's configuration (no route, an unknown provider, bad credentials).
 * @param {string} message @param {unknown} [cause]
 */
function misconfiguration(message, cause) {
  return Object.assign(new Error(message, cause === undefined ? undefined : { cause }), { misconfigured: true })
}

/** Whether `e` is a misconfiguration of the report call (see `MISCONFIGURATION_CODES`). @param {unknown} e */
export const isMisconfiguration = (e) => /** @type {any} */ (e)?.misconfigured === true

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

/**
 * A `summarize` callback for the addon's `rewind`; each attempt is one `ctx.llm.stream` call,
 * cut off after `config.reportTimeoutMs`.
 * @param {{llm: any, session: any, agent: any, config: {maxTokens: number, reportLanguage: 'en' | 'zh', reportTimeoutMs: number, summarizationProvider?: string, summarizationModel?: string}, signal?: AbortSignal}} options
 */
export function llmSummarizer({ llm, session, agent, config, signal }) {
  /** @type {{provider: string, model: string, reasoningEffort?: string} | undefined} */
  let route
  return withTimeout(async (/** @type {{seqs: Uint32Array}} */ region, /** @type {number} */ _attempt, /** @type {AbortSignal} */ timeout) => {
    const cancel = signal ? AbortSignal.any([signal, timeout]) : timeout
    if (!route) {
      route = resolveRoute(config, session, agent)
      // Probing the route's efforts never fails the fold (an unknown route fails at the call).
      const info = await llm.resolveModelInfo(route.provider, route.model, cancel).catch(() => undefined)
      if (info?.reasoning?.efforts?.some((/** @type {{id: string}} */ e) => e.id === 'off')) route.reasoningEffort = 'off'
    }
    const header = session.requestHeader?.()
    const messages = [
      ...regionMessages(session, region.seqs),
      createUserMessage({ content: [{ type: 'text', text: INSTRUCTIONS[config.reportLanguage] ?? INSTRUCTIONS.en }], source: { kind: 'plugin', plugin: 'rewind' } }),
    ]
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
      throw MISCONFIGURATION_CODES.has(failure.code) ? misconfiguration(message) : new Error(message)
    }
    const text = assembler
      .blocks()
      .filter((/** @type {{type: string}} */ b) => b.type === 'text')
      .map((/** @type {{text: string}} */ b) => b.text)
      .join('')
    return { text, finish: finish?.kind, usage: usageOut }
  }, config.reportTimeoutMs)
}
