/**
 * @module plugin/block/words
 * Every text block mode writes for the model, in English and Chinese, from the configured tool
 * names and the code runtime's language: the prompt section, the two tools' descriptions, the
 * refusals, the pending note, the note on summaries that were not applied, and each failure's
 * next step. Calls are spelled as a program writes them in either runtime (`await
 * tools.x({"key": …})` is TypeScript and Python alike). Messages from below (the planner's reason,
 * an argument check) are quoted as data in the Chinese texts.
 */
import { programCallee } from '../recall/hint.js'

/**
 * @typedef {object} BlockNames the configured names
 * @property {string} run the one tool called directly (`block_run_code`)
 * @property {string} summary the in-program callable (`block_summary`)
 * @property {string} [recall] the recall tool, when mounted
 */

/** @param {string} name */
const code = (name) => `\`${name}\``

/** A detail quoted as data, one line, no backticks. @param {string} text */
const quoted = (text) => `\`${text.replace(/\s+/g, ' ').replace(/`/g, "'").trim().replace(/[.。]$/, '')}\``

/** The runtime's language as the model knows it. @param {string | undefined} language */
export const runtimeName = (language) => (language === 'python' ? 'Python' : 'TypeScript')

const EN = {
  section: (/** @type {BlockNames} */ n) => `## Block mode

Work in blocks. Every action goes through ${code(n.run)}: a program that calls the tools as \`tools.<name>\`, tagged with \`ids\`, the blocks it works on. Nothing else can be called directly.

A block is one sub-goal with a clear finish: an investigation, a change and the check that it works. Keep one sub-goal's work under one id, and give a program every id it serves. Split a large task into its separable sub-goals rather than one block for everything or one block per call; a small task may be a single block.

Close each block as soon as its sub-goal is done, before moving on, from a program: \`await ${programCallee(n.summary)}({"ids": ["<id>"], "summary": "..."})\`. Closing a block from inside its own program is normal: the summary lands after that program's result. The summary replaces every message from the block's first appearance to its last, including user messages and workspace instructions (AGENTS.md) that arrived in between, so write it to stand alone: the goal, what was done and found (exact paths, commands, identifiers, numbers), every requirement, correction or constraint that arrived in the span, what is left and the next step, or that only reporting to the user remains.`,
  recallSection: (/** @type {BlockNames} */ n) =>
    `\n\nA closed block is not lost: inside a ${code(n.run)} program, \`await ${programCallee(/** @type {string} */ (n.recall))}({"block": "<id>", "query": "text or /regex/"})\` returns its exact original lines (without \`query\`, an index). Like every tool here, it cannot be called directly.`,
  runTool: (/** @type {BlockNames} */ n, /** @type {string} */ runtime) =>
    `Run a ${runtime} program that calls tools as \`tools.<name>\` (see the SDK), tagged with the block ids it works on. The only tool you may call directly. Close a finished block with \`await ${programCallee(n.summary)}({"ids": [...], "summary": "..."})\` inside a program.`,
  runParams: {
    ids: 'The blocks this program works on: a non-empty list of distinct ids, e.g. ["auth-refactor"]. Keep one sub-goal under one id.',
    id: 'Legacy: one block id, the same as `ids: [id]`. Pass `ids` or `id`, not both.',
    description: 'What this program does, in 5-10 words (shown in the UI).',
    code: 'The program. Top-level `await` works; `return` a value to make it the result.',
    timeoutMs: (/** @type {number} */ max) => `This program's time budget in milliseconds (1 to ${max}).`,
  },
  summaryTool: (/** @type {BlockNames} */ n) =>
    `Close finished blocks: replace every message from the first to the last appearance of \`ids\` in your context with \`summary\`. Only inside a ${code(n.run)} program; closing the block the program itself belongs to is normal (the summary lands after the program's result).`,
  summaryParams: {
    ids: 'The blocks to close: a non-empty list of distinct ids.',
    id: 'Legacy: one block id, the same as `ids: [id]`. Pass `ids` or `id`, not both.',
    summary:
      "Your own summary of everything between these ids' first and last appearance. Keep exactly every requirement, correction and constraint the user (or workspace instructions) added in that span. State the goal, what was done and found, what is left and the next step — or that only reporting to the user remains. Keep the details later steps need (paths, commands, identifiers, numbers).",
  },
  directCall: (/** @type {BlockNames} */ n) => `In block mode only ${code(n.run)} may be called directly`,
  nested: (/** @type {BlockNames} */ n) => `${code(n.run)} cannot run inside a program; call the tools you need from this program (\`tools.<name>\`)`,
  onlyInProgram: (/** @type {BlockNames} */ n) => `${code(n.summary)} is callable only inside a ${code(n.run)} program`,
  pending: (/** @type {string} */ reason) => `Queued: ${reason}. The summary replaces the blocks as soon as that clears, before your next step; do not call it again for them.`,
  notApplied: (/** @type {string} */ ids, /** @type {string} */ error) => `[block mode] Your summary of block ${ids} was not applied: ${error}`,
  notAppliedSummary: (/** @type {string} */ ids) => `Block summary not applied: ${ids}`,
  more: (/** @type {number} */ n) => ` and ${n} more`,
  frame: { intro: 'This is your own summary of your earlier work; it replaces that work in your context.', ids: 'Block ids: ' },
  /** The failure text: the message as it is, then the next step. */
  failure: (/** @type {string} */ what, /** @type {string} */ next) => `${/[.!?。]$/.test(what) ? what : `${what}.`}${next ? ` ${next}` : ''}`,
  next: {
    INVALID_ARGUMENT: () => 'Fix the arguments and call again.',
    UNKNOWN_BLOCK: (/** @type {BlockNames} */ n) => `Name ids your ${code(n.run)} calls carried; nothing was closed.`,
    PROTECTED: () => 'Nothing was replaced; close a set of ids whose range does not cross that message.',
    STALE: (/** @type {BlockNames} */ n) => `A user message arrived inside the range after you wrote the summary: read it, then call ${code(n.summary)} again with a summary that carries it.`,
  },
}

const ZH = {
  section: (/** @type {BlockNames} */ n) => `## 区块模式

按区块（block）工作。所有操作都通过 ${code(n.run)} 执行：一段用 \`tools.<name>\` 调用工具的程序，并用 \`ids\` 标明它属于哪些区块。其它工具都不能直接调用。

一个区块是一个有明确完成条件的子目标：一次调查、一处修改及其验证。同一子目标的工作放在同一个 id 下，服务多个区块的程序带上所有相关 id。大任务按可分开的子目标拆分，不要整个任务共用一块，也不要每次调用新建一块；小任务可以只用一块。

每个子目标完成后立即在程序中收口，再继续后面的工作：\`await ${programCallee(n.summary)}({"ids": ["<id>"], "summary": "..."})\`。在区块自己的程序里收口是正常做法，摘要会在该程序的结果之后生效。摘要替换该区块从第一次出现到最后一次出现之间的全部消息，包括其间到达的用户消息和工作区指令（AGENTS.md），所以要让它能独立成立：目标、做了什么和发现了什么（准确的路径、命令、标识符、数字）、区间内新增的每条要求、纠正和约束、还剩什么以及下一步，或者只剩向用户报告结果。`,
  recallSection: (/** @type {BlockNames} */ n) =>
    `\n\n已收口的区块并未丢失：在 ${code(n.run)} 程序中，\`await ${programCallee(/** @type {string} */ (n.recall))}({"block": "<id>", "query": "文本或 /正则/"})\` 返回其原始行（不带 \`query\` 时返回索引）。与这里的其它工具一样，它不能直接调用。`,
  runTool: (/** @type {BlockNames} */ n, /** @type {string} */ runtime) =>
    `运行一段 ${runtime} 程序，用 \`tools.<name>\` 调用工具（见 SDK），并标明它所属的区块 id。这是唯一可以直接调用的工具。区块完成后在程序中用 \`await ${programCallee(n.summary)}({"ids": [...], "summary": "..."})\` 收口。`,
  runParams: {
    ids: '本程序所属的区块：非空且不重复的 id 列表，例如 ["auth-refactor"]。同一子目标用同一个 id。',
    id: '旧参数：一个区块 id，等同于 `ids: [id]`。`ids` 与 `id` 二选一。',
    description: '本程序做什么，5 到 10 个词（显示在界面中）。',
    code: '程序本身。支持顶层 `await`；`return` 的值即为结果。',
    timeoutMs: (/** @type {number} */ max) => `本程序的时间预算，单位毫秒（1 到 ${max}）。`,
  },
  summaryTool: (/** @type {BlockNames} */ n) =>
    `收口已完成的区块：用 \`summary\` 替换你上下文中 \`ids\` 从第一次出现到最后一次出现之间的全部消息。只能在 ${code(n.run)} 程序中调用；在程序自身所属的区块里收口是正常做法（摘要在该程序的结果之后生效）。`,
  summaryParams: {
    ids: '要收口的区块：非空且不重复的 id 列表。',
    id: '旧参数：一个区块 id，等同于 `ids: [id]`。`ids` 与 `id` 二选一。',
    summary: '由你自己撰写：这些 id 第一次到最后一次出现之间全部内容的总结。准确保留区间内用户（或工作区指令）新增的每条要求、纠正和约束。写清目标、做了什么和发现了什么、还剩什么以及下一步 —— 或者只剩向用户报告结果。保留后续步骤需要的细节（路径、命令、标识符、数字）。',
  },
  directCall: (/** @type {BlockNames} */ n) => `区块模式下只能直接调用 ${code(n.run)}`,
  nested: (/** @type {BlockNames} */ n) => `${code(n.run)} 不能在程序内运行；请在当前程序中调用你需要的工具（\`tools.<name>\`）`,
  onlyInProgram: (/** @type {BlockNames} */ n) => `${code(n.summary)} 只能在 ${code(n.run)} 程序中调用`,
  pending: (/** @type {string} */ reason) => `已排队（${quoted(reason)}）。一旦条件满足，摘要立即替换这些区块（在你的下一步之前）；不要为它们再次调用。`,
  notApplied: (/** @type {string} */ ids, /** @type {string} */ error) => `[区块模式] 你对区块 ${ids} 的摘要未被应用（${quoted(error)}）`,
  notAppliedSummary: (/** @type {string} */ ids) => `区块摘要未应用：${ids}`,
  more: (/** @type {number} */ n) => ` 等另外 ${n} 个`,
  frame: { intro: '以下是你自己对先前工作的总结，它在你的上下文中替换了那部分工作。', ids: '区块 id：' },
  failure: (/** @type {string} */ what, /** @type {string} */ next) => `未能完成（${quoted(what)}）。${next}`,
  next: {
    INVALID_ARGUMENT: () => '修正参数后再调用。',
    UNKNOWN_BLOCK: (/** @type {BlockNames} */ n) => `请使用你的 ${code(n.run)} 调用带过的 id；没有区块被收口。`,
    PROTECTED: () => '没有替换任何内容；请收口一组区间不跨过那条消息的 id。',
    STALE: (/** @type {BlockNames} */ n) => `你写完摘要后，区间内又到达了一条用户消息：先读它，再用包含它的摘要再次调用 ${code(n.summary)}。`,
  },
}

/** Both languages' words. */
export const WORDS = { en: EN, zh: ZH }

/** @param {'en' | 'zh' | undefined} language */
export const wordsOf = (language) => (language === 'zh' ? ZH : EN)
