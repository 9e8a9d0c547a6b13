/**
 * @module plugin/compaction/summary
 * Writes a compaction's summary from the policy's plan (`planCompaction`, rules in
 * `crates/fold-core/src/compaction/mod.rs`): each item in range order — a user message word for
 * word (a long paste cut to its head and tail, the middle left to recall), a rewind report, a
 * block summary or an earlier compaction summary as written, a run of tool work as the addon's
 * extractive report within the plan's budget, or a one-line pointer where the plan ran out of
 * room — then, for a range with tool work, the train of thought (`### Where you left off`: the
 * model's latest words verbatim, the names in play, the open state of the work, written by the
 * core from the report facts within the plan's `thought` room, rule 7) — inside DSH's checkpoint
 * framing (`<compacted-summary>`, which DSH's client renders and basic's summarizer recognises),
 * ending with the recall hint when the recall row is mounted. A later checkpoint carries an
 * earlier one's items, not its train of thought (it writes its own). When the plan left any of
 * the user's words as pointers (a user message, or an earlier checkpoint of ours that carried
 * them), the body opens with a note saying so and how small the checkpoint had to be.
 *
 * The `llm` summarizer: one `ctx.llm.stream` call, routed and framed as compaction-basic does it
 * (the conversation's own system prompt and tools, the range's messages, the instruction last,
 * `purpose: 'compaction'`); its text replaces the work runs, and the verbatim items follow it.
 * This module writes text only; the transaction that appends it is `engine.js`.
 */
import { BlockAssembler, createUserMessage } from '@deepseek-ai/dsh-llm'

import { addon } from '../shared/addon.js'
import { eventLog, regionMessages } from '../shared/session.js'
import { programCallee, recallHint, recallToolName, splitRecallHint } from '../recall/hint.js'
import { reportFactsOf } from './report-facts.js'
import { attachmentLine, isAttachment } from '../shared/attachments.js'

/** DSH's token meter's density: the plan's budget is in chars. */
const CHARS_PER_TOKEN = 4

export const OPEN_TAG = '<compacted-summary>'
export const CLOSE_TAG = '</compacted-summary>'

const TEXT = {
  en: {
    preamble:
      'This is a checkpoint of the earlier conversation, made without a model call: the user\'s messages and your own reports and summaries are kept as they were written, and each run of tool work is condensed to its commands, outcomes, error lines and files. Treat it as established context and continue the task from the messages that follow; do not acknowledge the checkpoint.',
    user: (/** @type {number} */ seq) => `### User message (seq ${seq})`,
    report: (/** @type {number} */ seq, /** @type {string} */ mark) => (mark ? `### Your report of checkpoint${mark} (seq ${seq})` : `### Your fold report (seq ${seq})`),
    block: (/** @type {number} */ seq) => `### Your block summary (seq ${seq})`,
    foreign: (/** @type {number} */ seq) => `### Earlier checkpoint (seq ${seq})`,
    work: (/** @type {number} */ a, /** @type {number} */ b) => `### Tool work (seq ${a}–${b}), condensed`,
    llmWork: '### The work in this span, summarized',
    cut: (/** @type {number} */ n, /** @type {string} */ how) => `\n[… ${n} chars of this message are left out here${how}]\n`,
    pointer: (/** @type {string} */ what, /** @type {number} */ chars, /** @type {string} */ how) => `${what}: ${chars} chars, left out of this checkpoint for space${how}.`,
    tooSmall: (/** @type {number} */ steps, /** @type {string} */ how) => `${steps} messages of tool work, too long to condense in the space left${how}.`,
    how: (/** @type {string} */ call) => `; \`${call}\` returns it`,
    carried: (/** @type {string} */ what, /** @type {number} */ chars) => `${what}: ${chars} chars, carried by an earlier checkpoint and left out here for space.`,
    thought: '### Where you left off',
    lostWords: (/** @type {number} */ n, /** @type {number} */ tokens, /** @type {string | undefined} */ call) =>
      `Note: at this context window this checkpoint may take about ${tokens} tokens, too few for all of the user's words: ${n === 1 ? 'one item that holds them is a one-line pointer' : `${n} items that hold them are one-line pointers`} below, the oldest first${call ? `; \`${call}\` returns them word for word` : ''}.`,
  },
  zh: {
    preamble:
      '这是此前对话的检查点，未调用模型生成：用户的消息以及你自己写的报告和总结按原文保留，每段工具操作被压缩为其命令、结果、错误行和文件。把它当作已确立的上下文，从后面的消息继续任务；不要提及此检查点。',
    user: (/** @type {number} */ seq) => `### 用户消息（seq ${seq}）`,
    report: (/** @type {number} */ seq, /** @type {string} */ mark) => (mark ? `### 你对检查点${mark} 的报告（seq ${seq}）` : `### 你的折叠报告（seq ${seq}）`),
    block: (/** @type {number} */ seq) => `### 你的区块总结（seq ${seq}）`,
    foreign: (/** @type {number} */ seq) => `### 更早的检查点（seq ${seq}）`,
    work: (/** @type {number} */ a, /** @type {number} */ b) => `### 工具操作（seq ${a}–${b}），已压缩`,
    llmWork: '### 此区间工作的总结',
    cut: (/** @type {number} */ n, /** @type {string} */ how) => `\n[… 此处省略了这条消息的 ${n} 个字符${how}]\n`,
    pointer: (/** @type {string} */ what, /** @type {number} */ chars, /** @type {string} */ how) => `${what}：${chars} 个字符，因篇幅未放入此检查点${how}。`,
    tooSmall: (/** @type {number} */ steps, /** @type {string} */ how) => `${steps} 条工具操作消息，剩余篇幅不足以压缩${how}。`,
    how: (/** @type {string} */ call) => `；\`${call}\` 可取回原文`,
    carried: (/** @type {string} */ what, /** @type {number} */ chars) => `${what}：${chars} 个字符，由更早的检查点带入，因篇幅在此省略。`,
    thought: '### 你停下的地方',
    lostWords: (/** @type {number} */ n, /** @type {number} */ tokens, /** @type {string | undefined} */ call) =>
      `注意：在当前上下文窗口下，此检查点至多约 ${tokens} 个 token，放不下用户的全部原话：下文有 ${n} 项含有用户原话的条目只剩一行指引，从最早的开始${call ? `；\`${call}\` 可逐字取回` : ''}。`,
  },
}

/** The text of a message's text blocks. @param {any} message */
const textOf = (message) =>
  (message?.content ?? [])
    .filter((/** @type {any} */ b) => b?.type === 'text')
    .map((/** @type {any} */ b) => b.text)
    .join('')

/**
 * The body an earlier checkpoint carries: the text inside its `<compacted-summary>` tags (ours
 * or compaction-basic's), without a trailing recall hint; the whole text when it has no tags.
 * @param {string} text
 */
export function checkpointBody(text) {
  const open = text.indexOf(OPEN_TAG)
  const close = text.lastIndexOf(CLOSE_TAG)
  const inner = open >= 0 && close > open ? text.slice(open + OPEN_TAG.length, close) : text
  return splitRecallHint(inner.trim()).body.trim()
}

/**
 * The note a carried work heading ends with (once: a heading carried again keeps one). It names
 * no tool: the checkpoint's last line says how to get the lines back when the recall row is
 * mounted, in its configured name.
 */
const CARRIED_NOTE = { en: ' (condensed earlier)', zh: '（之前已压缩）' }
/** Every note already at the end of a heading, in either language (and as earlier versions wrote it). */
const CARRIED_NOTES = /(?: \(condensed earlier(?:; recall returns its lines)?\)|（之前已压缩(?:；recall 可取回原文)?）)+$/

/** Headings of condensed tool work in our summaries (both languages, extractive and llm). */
const WORK_HEADING = /^### (Tool work \(seq|工具操作（seq|The work in this span|此区间工作的总结)/

/** The note that opens a checkpoint whose room was too small for all of the user's words. */
const LOST_NOTE = /^(?:Note: at this context window|注意：在当前上下文窗口下)/

/** The heading of a checkpoint's train of thought, the last part of its body (both languages). */
const THOUGHT_HEADING = /\n### (?:Where you left off|你停下的地方)\n/

/**
 * What a later compaction carries of one of our earlier checkpoints: its user messages, reports,
 * block summaries and earlier foreign checkpoints as written; of each condensed tool-work part
 * only its heading and a note that recall returns it (the work was condensed once; the next
 * checkpoint condenses only new work, so carried text does not grow with every pass); not its
 * train of thought (where the model was then: the later checkpoint says where it is now).
 * @param {string} text the checkpoint message's text
 * @param {'en' | 'zh'} [language]
 */
export function carriedText(text, language = 'en') {
  const whole = checkpointBody(text)
  // The train of thought is the checkpoint's own moment: a later one writes its own.
  const at = `\n${whole}`.search(THOUGHT_HEADING)
  const body = at < 0 ? whole : whole.slice(0, Math.max(0, at - 1)).trimEnd()
  const parts = body.split(/\n(?=### )/)
  // A note that the user's words did not all fit was about that checkpoint's room, not this one's.
  if (LOST_NOTE.test(parts[0])) parts.shift()
  return parts.map((part) => (WORK_HEADING.test(part) ? `${part.split('\n', 1)[0].replace(CARRIED_NOTES, '')}${CARRIED_NOTE[language]}` : part)).join('\n')
}

/** Carried parts that a trimmed checkpoint may leave to recall: the model's reports and
 * summaries and another backend's checkpoints (never the user's words). */
const TRIMMABLE = /^### (Your report of checkpoint|Your fold report|Your rewind report|Your block summary|Earlier checkpoint|你对检查点|你的折叠报告|你的 rewind 报告|你的区块总结|更早的检查点)/

/**
 * What a later compaction carries of an earlier checkpoint of ours in at most `maxChars` (rule 6
 * of the policy, `trim`): `carriedText`, with its carried reports and summaries, oldest first,
 * each as a one-line pointer until it fits (`maxChars` undefined: all of them).
 * @param {string} text @param {'en' | 'zh'} [language] @param {number} [maxChars]
 */
export function trimmedCarried(text, language = 'en', maxChars = 0) {
  const t = TEXT[language] ?? TEXT.en
  const parts = carriedText(text, language).split(/\n(?=### )/)
  let length = parts.reduce((n, p) => n + p.length, 0) + parts.length - 1
  for (let i = 0; i < parts.length && length > maxChars; i++) {
    if (!TRIMMABLE.test(parts[i])) continue
    const pointer = t.carried(parts[i].split('\n', 1)[0].replace(/^### /, ''), parts[i].length)
    if (pointer.length >= parts[i].length) continue
    length += pointer.length - parts[i].length
    parts[i] = pointer
  }
  return parts.join('\n')
}

/**
 * An earlier checkpoint's core: what it carries with every carried report and summary as a
 * pointer (the least a trimmed checkpoint takes).
 * @param {string} text @param {'en' | 'zh'} [language]
 */
export const carriedCore = (text, language = 'en') => trimmedCarried(text, language, 0)

/** Where a block the checkpoint carries as itself (an image) stands while its text is composed. */
const HELD = /\u0000held:(\d+)\u0000/g

/**
 * @typedef {object} Composed
 * @property {string} text the replacement's whole text (its text blocks, joined)
 * @property {any[]} content the replacement's blocks: its text, with each image a user message
 *   (or an earlier checkpoint of ours) carried in place as the block itself
 * @property {{verbatim: number, cut: number, condensed: number, trimmed: number, pointers: number}} counts items by treatment
 */

/**
 * Writes the summary of `plan` (extractive).
 * @param {any} ctx the backend's context (the recall hint reads `ctx.recall`)
 * @param {any} session
 * @param {import('../../index.js').CompactionPlan} plan
 * @param {{compactionId: string, language: 'en' | 'zh', llmText?: string, program?: string}} options
 *   `llmText`: the llm summarizer's text, which then stands for every work run; `program`: the
 *   tool the model runs programs with when recall is reachable only from one (block mode)
 * @returns {Composed}
 */
export function composeSummary(ctx, session, plan, { compactionId, language, llmText, program }) {
  const t = TEXT[language] ?? TEXT.en
  const log = eventLog(session)
  const seqs = plan.seqs
  const tool = recallToolName(ctx)
  const args = `{"compaction": ${JSON.stringify(compactionId)}, "query": "…"}`
  const call = tool === undefined ? undefined : program ? `await ${programCallee(tool)}(${args})` : `${tool}(${args})`
  const how = call === undefined ? '' : t.how(call)
  const counts = { verbatim: 0, cut: 0, condensed: 0, trimmed: 0, pointers: 0 }
  /** @type {any[]} the blocks carried as themselves, by their stand-in's number */
  const held = []
  const hold = (/** @type {any} */ block) => `\u0000held:${held.push(block) - 1}\u0000`
  /** The lines naming a user message's attachments (each image also held in place after its line). @param {any} message @param {boolean} keep */
  const attachments = (message, keep) =>
    (message?.content ?? [])
      .filter(isAttachment)
      .map((/** @type {any} */ b) => `\n${attachmentLine(b, language)}${keep && b.type === 'image' ? `\n${hold(b)}` : ''}`)
      .join('')
  /**
   * A user message's words with every other block in its place: named on a line of its own and,
   * for an image, carried as the block itself (DSH's `ImageBlock` is valid in a user message).
   * @param {any} message
   */
  const userBody = (message) =>
    (message?.content ?? [])
      .map((/** @type {any} */ b) => (b?.type === 'text' ? b.text : isAttachment(b) ? `\n${attachmentLine(b, language)}\n${b.type === 'image' ? hold(b) : ''}` : ''))
      .join('')
  /** An earlier checkpoint of ours, its images held where they stand (their lines are in its text). @param {any} message */
  const checkpointText = (message) =>
    (message?.content ?? []).map((/** @type {any} */ b) => (b?.type === 'text' ? b.text : b?.type === 'image' ? hold(b) : '')).join('')
  /** @type {string[]} */
  const parts = []
  if (llmText !== undefined) parts.push(`${t.llmWork}\n${llmText.trim()}`)
  const base = plan.startPos
  for (const item of plan.items) {
    const first = seqs[item.start - base]
    const last = seqs[item.end - 1 - base]
    if (item.source === 'work') {
      if (llmText !== undefined) continue
      if (item.treatment === 'pointer') {
        counts.pointers++
        parts.push(`${t.work(first, last)}\n${t.tooSmall(item.end - item.start, how)}`)
        continue
      }
      // Each message's facts were read as it landed (report-facts.js): the run's text is not
      // serialized or scanned again here.
      const facts = []
      for (const seq of seqs.subarray(item.start - base, item.end - base)) {
        const f = reportFactsOf(session, seq)
        if (f) facts.push(f)
      }
      let report
      try {
        report = addon.extractiveReportOf(facts, { language, maxChars: Math.max(1, item.maxChars ?? 0) })
      } catch (e) {
        if (/** @type {any} */ (e)?.code !== 'SHRINK') throw e
        report = t.tooSmall(item.end - item.start, how)
      }
      counts.condensed++
      parts.push(`${t.work(first, last)}\n${report}`)
      continue
    }
    const event = log[first]
    const text = textOf(event.data)
    const heading =
      item.source === 'user'
        ? t.user(first)
        : item.source === 'rewind-report'
          ? t.report(first, Number.isSafeInteger(event.data?.source?.markId) ? ` ${event.data.source.markId}` : '')
          : item.source === 'block-summary'
            ? t.block(first)
            : t.foreign(first)
    const user = item.source === 'user'
    if (item.treatment === 'pointer') {
      counts.pointers++
      // A user message left out still names what it carried beside its words.
      parts.push(`${t.pointer(heading.replace(/^### /, ''), text.length, how)}${user ? attachments(event.data, false) : ''}`)
      continue
    }
    if (item.treatment === 'trim') {
      counts.trimmed++
      parts.push(trimmedCarried(checkpointText(event.data), language, item.maxChars ?? 0))
      continue
    }
    if (item.treatment === 'cut') {
      counts.cut++
      const head = item.head ?? 0
      const tail = item.tail ?? 0
      parts.push(`${heading}\n${text.slice(0, head)}${t.cut(text.length - head - tail, how)}${text.slice(text.length - tail)}${attachments(event.data, true)}`)
      continue
    }
    counts.verbatim++
    // Our own earlier checkpoint is spliced in as the parts it already is; another backend's
    // keeps a heading of its own.
    if (item.source === 'compaction-summary') parts.push(carriedText(checkpointText(event.data), language))
    else if (item.source === 'foreign-summary') parts.push(`${heading}\n${checkpointBody(text)}`)
    else parts.push(`${heading}\n${user ? userBody(event.data) : text}`)
  }
  // Say it when the user's words did not all fit (a message of theirs, or an earlier checkpoint
  // of ours carrying them, left as a pointer): first, so it is read before anything else.
  const lost = plan.items.filter((i) => i.treatment === 'pointer' && (i.source === 'user' || i.source === 'compaction-summary')).length
  if (lost > 0) parts.unshift(t.lostWords(lost, Math.floor(plan.budgetChars / CHARS_PER_TOKEN), call))
  const thought = trainOfThought(session, plan, { language, written: parts.join('\n\n'), recall: tool === undefined ? undefined : program ? programCallee(tool) : tool })
  if (thought) parts.push(`${t.thought}\n${thought}`)
  const hint = recallHint(ctx, { compaction: compactionId }, language, program ? { program } : {})
  const whole = `${t.preamble}\n\n${OPEN_TAG}\n${parts.join('\n\n')}${hint}\n${CLOSE_TAG}`
  // The held blocks go back where they stood, between the text around them.
  /** @type {any[]} */
  const content = []
  let at = 0
  for (const m of whole.matchAll(HELD)) {
    if (m.index > at) content.push({ type: 'text', text: whole.slice(at, m.index) })
    content.push(held[Number(m[1])])
    at = m.index + m[0].length
  }
  if (at < whole.length) content.push({ type: 'text', text: whole.slice(at) })
  return { text: content.filter((b) => b.type === 'text').map((b) => b.text).join(''), content, counts }
}

/**
 * The range's train of thought (rule 7 of the policy; written by the core from the report facts
 * read once per message): the model's latest words, the names in play, the open state of the
 * work, within the plan's room; `''` when the plan gives it none or there is nothing to say.
 * Names the model wrote in the kept tail, or that `written` (the checkpoint's other parts)
 * holds, are not listed again.
 * @param {any} session @param {import('../../index.js').CompactionPlan} plan
 * @param {{language: 'en' | 'zh', written: string, recall: string | undefined}} options
 */
function trainOfThought(session, plan, { language, written, recall }) {
  const room = plan.thought
  if (!room || room.intentChars + room.namesChars + room.stateChars === 0) return ''
  const log = eventLog(session)
  const facts = []
  const seqs = []
  for (const item of plan.items) {
    if (item.source !== 'work') continue
    for (const seq of plan.seqs.subarray(item.start - plan.startPos, item.end - plan.startPos)) {
      if (!WORK_EVENTS.has(log[seq]?.type)) continue
      const f = reportFactsOf(session, seq)
      if (f) {
        facts.push(f)
        seqs.push(seq)
      }
    }
  }
  if (facts.length === 0) return ''
  // The kept tail's model messages: what it names there, the model still sees.
  const tail = []
  const nodes = session.surface.nodes
  for (let i = plan.endPos; i < nodes.length; i++) {
    if (log[nodes[i]]?.type !== 'assistant/message') continue
    const f = reportFactsOf(session, nodes[i])
    if (f) tail.push(f)
  }
  return addon.trainOfThoughtOf(facts, Uint32Array.from(seqs), tail, { language, intentChars: room.intentChars, namesChars: room.namesChars, stateChars: room.stateChars, written, ...(recall === undefined ? {} : { recall }) })
}

/** The events whose messages are the agent's work (what the report facts read). */
const WORK_EVENTS = new Set(['assistant/message', 'tool/result'])

export const INSTRUCTIONS = {
  en: `Condense the tool work in the conversation above into a checkpoint another model can resume from. The user's messages and any reports or summaries already in it are kept word for word beside your text, so do not repeat them. Use terse Markdown bullets under these headings:

## Work done
## Files and code
## Errors and fixes
## In progress
## Next step

Keep exact file paths, commands, error strings, identifiers and numbers. Do not call tools and do not mention this request.`,
  zh: `把上面对话中的工具操作压缩成一个检查点，供另一个模型接续工作。用户的消息以及其中已有的报告和总结会按原文保留在你的文字旁边，不要重复它们。在以下标题下用简洁的 Markdown 要点书写：

## 已完成的工作
## 文件与代码
## 错误与修复
## 进行中
## 下一步

原样保留文件路径、命令、错误字符串、标识符和数字。不要调用工具，也不要提及此请求。`,
}

/** Provider failure codes no fallback can fix: the route's configuration is wrong. */
const MISCONFIGURATION_CODES = new Set(['NO_ADAPTER', 'MISSING_CREDENTIAL', 'INVALID_CREDENTIAL', 'AUTH'])

/**
 * The `llm` summarizer's one call: routed as compaction-basic routes it (the configured pair,
 * else the latest request header's, else the agent's), replaying the conversation's system
 * prompt, tools and the range's messages with the instruction last.
 * @param {{llm: any, session: any, agent: any, seqs: Uint32Array, route: {provider: string, model: string} | undefined,
 *   maxTokens: number, language: 'en' | 'zh', timeoutMs: number, signal?: AbortSignal}} input
 * @returns {Promise<{text: string, rawOutput: any[], provider: string, model: string, maxTokens: number, usage?: any}>}
 */
export async function llmSummary({ llm, session, agent, seqs, route, maxTokens, language, timeoutMs, signal }) {
  const header = session.requestHeader?.()
  const target = route ?? routeOf(session, agent)
  if (!target) {
    throw Object.assign(new Error('no provider/model available for the compaction summary: set both summarizationProvider and summarizationModel, route one request, or give the agent both'), { misconfigured: true })
  }
  const timeout = AbortSignal.timeout(timeoutMs)
  const cancel = signal ? AbortSignal.any([signal, timeout]) : timeout
  const messages = [
    ...regionMessages(session, seqs),
    createUserMessage({ content: [{ type: 'text', text: INSTRUCTIONS[language] ?? INSTRUCTIONS.en }], source: { kind: 'plugin', plugin: 'dsh-fold-compaction' } }),
  ]
  const assembler = new BlockAssembler()
  for await (const chunk of llm.stream({
    provider: target.provider,
    model: target.model,
    messages,
    ...(header?.system !== undefined ? { system: header.system } : {}),
    ...(header?.tools !== undefined ? { tools: [...header.tools] } : {}),
    maxTokens,
    sessionId: session.id,
    purpose: 'compaction',
    signal: cancel,
  })) {
    assembler.push(chunk)
  }
  const finish = assembler.finish
  if (finish?.kind === 'error' || finish?.kind === 'aborted' || finish?.kind === 'max-tokens') {
    if (finish.kind === 'aborted' && signal?.aborted) throw signal.reason
    const failure = finish.failure ?? {}
    const error = new Error(`compaction summary call ended with ${finish.kind}${failure.message ? `: ${failure.message}` : ''}${timeout.aborted ? ` (summaryTimeoutMs ${timeoutMs} ms)` : ''}`)
    throw MISCONFIGURATION_CODES.has(failure.code) ? Object.assign(error, { misconfigured: true }) : error
  }
  const rawOutput = assembler.blocks()
  const text = rawOutput.filter((/** @type {any} */ b) => b.type === 'text').map((/** @type {any} */ b) => b.text).join('')
  if (!text.trim()) throw new Error('the compaction summary call returned no text')
  return { text, rawOutput, provider: target.provider, model: target.model, maxTokens, ...(assembler.usage ? { usage: assembler.usage } : {}) }
}

/**
 * The latest routed request's provider/model, else the agent's.
 * @param {any} session @param {any} agent
 * @returns {{provider: string, model: string} | undefined}
 */
export function routeOf(session, agent) {
  const config = session.requestHeader?.()?.config
  if (config?.provider && config?.model) return { provider: config.provider, model: config.model }
  const options = agent?.options
  if (options?.provider && options?.model) return { provider: options.provider, model: options.model }
  return undefined
}
