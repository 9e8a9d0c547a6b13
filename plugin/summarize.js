/**
 * @module plugin/summarize
 * The report call: one `ctx.llm.stream` request that condenses a folded region.
 *
 * The request starts with the session's own system prompt and tool schemas exactly as the
 * last routed request carried them (that prefix is warm in the provider's KV cache), then the
 * region's messages, then the report instruction last. Route: the configured
 * provider/model, else the session's latest `request/header`, else the agent's options;
 * none (or half of one) fails loud. Thinking is turned off when the route offers an `off`
 * effort: condensing is mechanical, and reasoning tokens would compete with the report
 * under `maxTokens`. Only text blocks form the report.
 */
import { BlockAssembler, createUserMessage } from '@deepseek-ai/dsh-llm'

import { regionMessages } from './surface.js'

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
 * Which provider/model writes the report.
 * @param {{summarizationProvider?: string, summarizationModel?: string}} config
 * @param {any} session
 * @param {any} agent
 * @returns {{provider: string, model: string}}
 */
export function resolveRoute(config, session, agent) {
  const candidates = [
    ['the rewind config (summarizationProvider/summarizationModel)', config.summarizationProvider, config.summarizationModel],
    ["the session's latest request header", session.requestHeader?.()?.config?.provider, session.requestHeader?.()?.config?.model],
    ["the agent's options", agent?.options?.provider, agent?.options?.model],
  ]
  for (const [where, provider, model] of candidates) {
    if (provider === undefined && model === undefined) continue
    if (typeof provider !== 'string' || !provider || typeof model !== 'string' || !model) {
      throw new Error(`rewind: ${where} names only half a route (provider ${JSON.stringify(provider)}, model ${JSON.stringify(model)}); set both`)
    }
    return { provider, model }
  }
  throw new Error('rewind: no provider/model for the report: set summarizationProvider and summarizationModel, or run the agent with a routed model')
}

/**
 * A `summarize` callback for the addon's `rewind`.
 * @param {{llm: any, session: any, agent: any, config: {maxTokens: number, reportLanguage: 'en' | 'zh', summarizationProvider?: string, summarizationModel?: string}, signal?: AbortSignal}} options
 */
export function llmSummarizer({ llm, session, agent, config, signal }) {
  /** @type {{provider: string, model: string, reasoningEffort?: string} | undefined} */
  let route
  return async (/** @type {{seqs: Uint32Array}} */ region) => {
    if (!route) {
      route = resolveRoute(config, session, agent)
      const info = await llm.resolveModelInfo(route.provider, route.model, signal)
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
      signal,
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
      throw new Error(`the report call ended with ${finish.kind}: ${failure.message ?? 'no message'}${failure.code ? ` (${failure.code})` : ''}`)
    }
    const text = assembler
      .blocks()
      .filter((/** @type {{type: string}} */ b) => b.type === 'text')
      .map((/** @type {{text: string}} */ b) => b.text)
      .join('')
    return { text, finish: finish?.kind, usage: usageOut }
  }
}
