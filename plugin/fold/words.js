/**
 * @module plugin/fold/words
 * Every text checkpoint and rewind put in front of the model, in English and Chinese, built from
 * the configured tool names: the prompt section, the tool descriptions, the two results, the
 * frame around a fold's report, the turn guard's warning, and what every failure says.
 *
 * The rules of the wording, in one place:
 * - every text names the tools as configured (`names`), never the defaults;
 * - a text never points at a tool that is not mounted (`names.rewind` is undefined when the
 *   rewind row is not: the checkpoint tool then says a mark changes nothing);
 * - every result says what happened in the model's terms (checkpoints, its investigation, its
 *   messages, its report), never the fold's machinery (surface nodes, seqs), and what to do next;
 * - every failure reads `CODE: what happened. Whether the checkpoint is still open. What to do:
 *   retry, continue, or tell the user.` The code is the stable contract; the rest is for the model.
 *   Details from below (a file, a provider's message) are quoted in a code span, as data;
 * - English and Chinese say the same things (`__test__/model-text.test.mjs` renders every entry
 *   under renamed tools and both languages).
 */

import { splitRecallHint } from '../recall/hint.js'

/**
 * @typedef {object} Names the model-facing tool names, as configured
 * @property {string} checkpoint
 * @property {string} [rewind] undefined when no rewind row is mounted
 */

/**
 * @typedef {object} MarkFacts what a text says about a checkpoint
 * @property {number} id
 * @property {string | null} [objective]
 */

/**
 * @typedef {object} FoldResultFacts a rewind's result (the reference's shape)
 * @property {number} markId
 * @property {number} foldedNodes
 * @property {number} foldedChars
 * @property {number} reportChars
 * @property {'extractive'} [report]
 */

/**
 * @typedef {'open' | 'folded' | 'none' | 'unset' | 'unknown'} MarkState whether a checkpoint is
 *   open after a failure: `open` (the latest mark is still active), `folded`, `none` (the session
 *   has no mark), `unset` (a checkpoint call failed: none was set), `unknown` (the store cannot say)
 */

/**
 * @typedef {object} FailureFacts what a failure's text is built from
 * @property {string} code
 * @property {string} [detail] the error's own message (quoted as data), when it helps
 * @property {MarkFacts | null} [mark] the session's latest mark, when known
 * @property {MarkState} state
 * @property {'route' | 'provider' | 'credentials'} [misconfigured] what the user must set
 * @property {boolean} [again] the same transient failure already happened for this checkpoint
 */

/** The longest objective a text quotes, in characters. */
const OBJECTIVE_CHARS = 160
/** The longest detail a failure quotes, in characters. */
const DETAIL_CHARS = 300

/** An objective on one line, cut to `OBJECTIVE_CHARS`. @param {string | null | undefined} objective */
export function shortObjective(objective) {
  if (typeof objective !== 'string') return ''
  const one = objective.replace(/\s+/g, ' ').trim()
  return one.length > OBJECTIVE_CHARS ? `${one.slice(0, OBJECTIVE_CHARS - 1)}…` : one
}

/** A detail quoted as data: one line, no backticks, cut to `DETAIL_CHARS`. @param {string} text */
function quoted(text) {
  const one = text.replace(/\s+/g, ' ').replace(/`/g, "'").trim().replace(/[.。]$/, '')
  return `\`${one.length > DETAIL_CHARS ? `${one.slice(0, DETAIL_CHARS - 1)}…` : one}\``
}

/** @param {string} name */
const code = (name) => `\`${name}\``

const EN = {
  section: (/** @type {Required<Names>} */ n) =>
    `## Checkpoints

An investigation is a self-contained lookup or diagnosis (reading files, searching, running experiments) whose raw output you will not need again once you know the answer. Call ${code(n.checkpoint)} with a short \`objective\` before one, and ${code(n.rewind)} as soon as it is done, before you answer or start other work: its steps are replaced by your own report of them, and user messages that arrived meanwhile are folded into it too. Keep one checkpoint open at a time. Do not checkpoint the whole task, or text you will edit next: you need that verbatim.`,
  checkpointTool: (/** @type {Names} */ n) =>
    n.rewind
      ? `Marks the start of an investigation: a lookup or diagnosis whose raw output you will not need once you know the answer. Call it before the investigation's first step. Not for the whole task, for text you will edit next, or while a checkpoint is open. Returns the checkpoint's number; call ${code(n.rewind)} when the investigation is done.`
      : 'Marks the start of an investigation. No fold tool is mounted in this host, so a checkpoint changes nothing in your context; you need not call it.',
  objective: 'What the investigation should find out, in a few words (optional).',
  rewindTool: (/** @type {Required<Names>} */ n) =>
    `Replaces everything since the open checkpoint with your own report of it (findings, files, decisions, open questions, next step). Call it as soon as the investigation is done, before you answer or start other work. Not while you still need its raw output: the steps leave your context. Returns what was folded; the report takes the steps' place.`,
  marked: (/** @type {number} */ id, /** @type {number | undefined} */ previous, /** @type {Names} */ n) =>
    `Checkpoint ${id} set${n.rewind ? `; call ${code(n.rewind)} when the investigation is done` : ''}.` +
    (previous === undefined ? '' : ` Checkpoint ${previous} was still open: this one replaces it, and the steps since checkpoint ${previous} stay in your context unfolded.`),
  folded: (/** @type {FoldResultFacts} */ r) =>
    `Checkpoint ${r.markId} folded: ${r.foldedNodes === 1 ? 'the 1 message of its investigation' : `the ${r.foldedNodes} messages of its investigation`} (${r.foldedChars} chars) ${r.foldedNodes === 1 ? 'is' : 'are'} replaced by ${r.report === 'extractive' ? 'a report extracted from them' : 'your report'}, above (${r.reportChars} chars). Continue the task; if you already answered the user, end your turn without repeating the answer.`,
  frame: (/** @type {MarkFacts} */ m, /** @type {boolean} */ extractive) => {
    const objective = shortObjective(m.objective)
    const head = `[Checkpoint ${m.id}${objective ? ` — ${objective}` : ''}]`
    return extractive
      ? `${head} A report extracted from that investigation's steps; it replaces them and is not a message from the user. Continue the task; its next step is a suggestion.`
      : `${head} Your own report of that investigation; it replaces its steps and is not a message from the user. Continue the task; its next step is a suggestion.`
  },
  guard: (/** @type {MarkFacts} */ m, /** @type {Required<Names>} */ n) => {
    const objective = shortObjective(m.objective)
    return `[Checkpoint ${m.id} is still open${objective ? `: ${objective}` : ''}] You have not folded the investigation you marked. If it is done, call ${code(n.rewind)} now; if you already gave your answer, call ${code(n.rewind)} and then end your turn without repeating it. If it is not done, continue it.`
  },
  state: {
    open: (/** @type {number} */ id) => `Checkpoint ${id} is still open.`,
    folded: (/** @type {number} */ id) => `Checkpoint ${id} is already folded.`,
    none: () => 'No checkpoint is open.',
    unset: () => 'No checkpoint was set.',
    unknown: () => 'Whether a checkpoint is open cannot be read.',
  },
  detail: (/** @type {string} */ d) => ` (${quoted(d)})`,
  /** @type {Record<string, (f: FailureFacts, n: Required<Names>, id: string) => [string, string]>} what happened, what to do */
  failures: {
    NO_CHECKPOINT: (_f, n) => ['There is no checkpoint to fold in this session.', `Nothing changed. Continue the task; next time, call ${code(n.checkpoint)} before an investigation and ${code(n.rewind)} after it.`],
    EMPTY_REGION: (f, n, id) =>
      f.state === 'folded'
        ? [`Checkpoint ${id} was folded already; there is nothing new to fold.`, `Nothing changed. Continue the task; call ${code(n.checkpoint)} before the next investigation.`]
        : [`There is no tool work since checkpoint ${id} to fold (an answer or a user message after the investigation stays as it is).`, `Nothing changed. If you already answered, end your turn; otherwise continue, and call ${code(n.rewind)} after the investigation.`],
    UNBALANCED: (_f, n, id) => [`A tool call since checkpoint ${id} has no result yet, so its investigation cannot be folded cleanly.`, `Nothing changed. Call ${code(n.rewind)} again once that call has returned.`],
    FOLD_IN_PROGRESS: (_f, n) => ['A fold of this session is already running.', `Do not call ${code(n.rewind)} again for it: its result will come. Continue the task.`],
    CHANGED: (_f, n) => ['Your context changed while the report was being written (another fold or a compaction landed).', `Nothing changed. Call ${code(n.rewind)} again.`],
    SHRINK: (_f, n) => ['The report came out no shorter than the investigation it would replace, so folding would save nothing.', `Nothing changed, and the investigation needs no fold: continue the task without calling ${code(n.rewind)} for it.`],
    SUMMARIZE_FAILED: (f, n) =>
      f.misconfigured
        ? [
            `The report call is misconfigured${f.detail ? EN.detail(f.detail) : ''}.`,
            `Do not retry: tell the user to set ${
              f.misconfigured === 'route'
                ? '`summarizationProvider` and `summarizationModel` in the tool-rewind row (or route the session to a model)'
                : f.misconfigured === 'provider'
                  ? 'a provider that is installed in `summarizationProvider` of the tool-rewind row'
                  : "the report call's provider credentials"
            }. Nothing changed; continue the task with the investigation unfolded.`,
          ]
        : [
            `The report could not be written${f.detail ? EN.detail(f.detail) : ''}.`,
            f.again
              ? 'Nothing changed. It failed twice: do not retry; continue the task with the investigation unfolded, and tell the user if the fold matters.'
              : `Nothing changed. Call ${code(n.rewind)} once more; if it fails again, continue the task with the investigation unfolded.`,
          ],
    ABORTED: (_f, n) => ['The fold was cancelled.', `Nothing changed. Call ${code(n.rewind)} again if the investigation should still be folded.`],
    COMPACTION_BUSY: (_f, n) => ['A compaction of your context was still running.', `Nothing changed. Call ${code(n.rewind)} again.`],
    HOST_FAILED: (f, n) => [
      `The host failed during the fold${f.detail ? EN.detail(f.detail) : ''}.`,
      f.again ? 'Nothing changed. It failed twice: do not retry; continue the task with the investigation unfolded, and tell the user what failed.' : `Nothing changed. Call ${code(n.rewind)} once more; if it fails again, continue unfolded and tell the user.`,
    ],
    STORE_CORRUPT: (f) => [`The checkpoint store cannot be read${f.detail ? EN.detail(f.detail) : ''}; it was left as it was.`, 'Checkpoints cannot be set or folded until the user repairs or moves the file. Do not retry: tell the user, and continue the task without checkpoints.'],
    STORE_VERSION: (f) => [`The checkpoint store was written by a newer dsh-fold${f.detail ? EN.detail(f.detail) : ''}; it was left as it was.`, 'Checkpoints cannot be set or folded here until the user upgrades dsh-fold or moves the file. Do not retry: tell the user, and continue the task without checkpoints.'],
    STORE_IO: (f) => [`The checkpoint store could not be read or written${f.detail ? EN.detail(f.detail) : ''}.`, 'Do not retry now: tell the user what failed, and continue the task without checkpoints.'],
    STORE_LOADING: () => ['The checkpoint store is still loading.', 'Call again in a moment.'],
    INVALID_ARGUMENT: (f) => [`The arguments were refused${f.detail ? EN.detail(f.detail) : ''}.`, 'Fix them and call again.'],
    INTERNAL: (f) => [`dsh-fold failed internally, through no fault of your call${f.detail ? EN.detail(f.detail) : ''}.`, 'Nothing changed. Do not retry: continue the task with the investigation unfolded, and tell the user.'],
  },
  other: (/** @type {FailureFacts} */ f) => [`The fold failed${f.detail ? EN.detail(f.detail) : ''}.`, 'Nothing changed. Continue the task.'],
}

const ZH = {
  section: (/** @type {Required<Names>} */ n) =>
    `## 检查点

调查是一次自成一体的查找或诊断（读文件、搜索、做实验），一旦知道答案，就不再需要它的原始输出。调查开始前调用 ${code(n.checkpoint)}，附一个简短的 \`objective\`；调查一结束，在回答或开始其它工作之前调用 ${code(n.rewind)}：调查的各个步骤会被替换为你自己写的报告，其间到达的用户消息也一并折叠进报告。同一时间只保留一个未折叠的检查点。不要为整个任务设检查点，也不要为接下来要编辑的文本设检查点：那些内容你需要原样保留。`,
  checkpointTool: (/** @type {Names} */ n) =>
    n.rewind
      ? `标记一次调查的开始：一次查找或诊断，知道答案后就不再需要它的原始输出。在调查的第一步之前调用。不要用于整个任务、接下来要编辑的文本，也不要在已有未折叠的检查点时调用。返回检查点编号；调查完成后调用 ${code(n.rewind)}。`
      : '标记一次调查的开始。此宿主没有挂载折叠工具，检查点不会改变你的上下文；无需调用。',
  objective: '调查要查明什么，几个词即可（可选）。',
  rewindTool: (/** @type {Required<Names>} */ _n) =>
    '把当前未折叠的检查点之后的全部内容替换为你自己写的报告（发现、文件、决策、未解决的问题、下一步）。调查一结束就调用，在回答或开始其它工作之前。仍需要其原始输出时不要调用：这些步骤会离开你的上下文。返回折叠了什么；报告占据这些步骤原来的位置。',
  marked: (/** @type {number} */ id, /** @type {number | undefined} */ previous, /** @type {Names} */ n) =>
    `已设置检查点 ${id}${n.rewind ? `；调查完成后调用 ${code(n.rewind)}` : ''}。` +
    (previous === undefined ? '' : `检查点 ${previous} 仍未折叠：本检查点取代了它，检查点 ${previous} 之后的步骤将留在你的上下文中，不会折叠。`),
  folded: (/** @type {FoldResultFacts} */ r) =>
    `检查点 ${r.markId} 已折叠：其调查的 ${r.foldedNodes} 条消息（${r.foldedChars} 个字符）已替换为上方${r.report === 'extractive' ? '从中摘录的报告' : '你自己写的报告'}（${r.reportChars} 个字符）。继续任务；如果你已经回答了用户，直接结束本回合，不要重复回答。`,
  frame: (/** @type {MarkFacts} */ m, /** @type {boolean} */ extractive) => {
    const objective = shortObjective(m.objective)
    const head = `[检查点 ${m.id}${objective ? ` — ${objective}` : ''}]`
    return extractive
      ? `${head} 这是从该调查的步骤中摘录的报告，它替换了这些步骤，不是用户的消息。继续任务；其中的下一步只是建议。`
      : `${head} 这是你对该调查自己写的报告，它替换了调查的各个步骤，不是用户的消息。继续任务；其中的下一步只是建议。`
  },
  guard: (/** @type {MarkFacts} */ m, /** @type {Required<Names>} */ n) => {
    const objective = shortObjective(m.objective)
    return `[检查点 ${m.id} 仍未折叠${objective ? `：${objective}` : ''}] 你标记的调查还没有折叠。如果调查已完成，现在调用 ${code(n.rewind)}；如果你已经给出了回答，调用 ${code(n.rewind)} 后结束本回合，不要重复回答。如果调查尚未完成，继续进行。`
  },
  state: {
    open: (/** @type {number} */ id) => `检查点 ${id} 仍未折叠。`,
    folded: (/** @type {number} */ id) => `检查点 ${id} 已经折叠。`,
    none: () => '当前没有未折叠的检查点。',
    unset: () => '没有设置检查点。',
    unknown: () => '无法读取是否有未折叠的检查点。',
  },
  detail: (/** @type {string} */ d) => `（${quoted(d)}）`,
  /** @type {Record<string, (f: FailureFacts, n: Required<Names>, id: string) => [string, string]>} */
  failures: {
    NO_CHECKPOINT: (_f, n) => ['此会话没有可折叠的检查点。', `没有任何改变。继续任务；下次在调查前调用 ${code(n.checkpoint)}，调查后调用 ${code(n.rewind)}。`],
    EMPTY_REGION: (f, n, id) =>
      f.state === 'folded'
        ? [`检查点 ${id} 已经折叠过，没有新的内容可折叠。`, `没有任何改变。继续任务；下次调查前调用 ${code(n.checkpoint)}。`]
        : [`检查点 ${id} 之后没有可折叠的工具操作（调查之后的回答或用户消息保持原样）。`, `没有任何改变。如果你已经回答，结束本回合；否则继续，调查结束后调用 ${code(n.rewind)}。`],
    UNBALANCED: (_f, n, id) => [`检查点 ${id} 之后有一个工具调用还没有结果，调查无法干净地折叠。`, `没有任何改变。等该调用返回后再次调用 ${code(n.rewind)}。`],
    FOLD_IN_PROGRESS: (_f, n) => ['此会话已有一次折叠正在进行。', `不要为它再次调用 ${code(n.rewind)}：它的结果会到来。继续任务。`],
    CHANGED: (_f, n) => ['撰写报告期间你的上下文发生了变化（另一次折叠或压缩已落地）。', `没有任何改变。再次调用 ${code(n.rewind)}。`],
    SHRINK: (_f, n) => ['报告没有比它要替换的调查更短，折叠不会节省任何内容。', `没有任何改变，这次调查也无需折叠：继续任务，不要为它调用 ${code(n.rewind)}。`],
    SUMMARIZE_FAILED: (f, n) =>
      f.misconfigured
        ? [
            `报告调用的配置有误${f.detail ? ZH.detail(f.detail) : ''}。`,
            `不要重试：告诉用户在 tool-rewind 行中设置${
              f.misconfigured === 'route'
                ? ' `summarizationProvider` 和 `summarizationModel`（或让会话路由到某个模型）'
                : f.misconfigured === 'provider'
                  ? ' `summarizationProvider` 为已安装的提供方'
                  : '报告调用所用提供方的凭据'
            }。没有任何改变；继续任务，调查保持未折叠。`,
          ]
        : [
            `报告未能写成${f.detail ? ZH.detail(f.detail) : ''}。`,
            f.again ? '没有任何改变。已经失败两次：不要重试；继续任务，调查保持未折叠，如折叠很重要请告诉用户。' : `没有任何改变。再调用一次 ${code(n.rewind)}；如果再次失败，继续任务，调查保持未折叠。`,
          ],
    ABORTED: (_f, n) => ['折叠已被取消。', `没有任何改变。如果仍需折叠这次调查，再次调用 ${code(n.rewind)}。`],
    COMPACTION_BUSY: (_f, n) => ['你的上下文正在进行的压缩尚未结束。', `没有任何改变。再次调用 ${code(n.rewind)}。`],
    HOST_FAILED: (f, n) => [
      `折叠期间宿主出错${f.detail ? ZH.detail(f.detail) : ''}。`,
      f.again ? '没有任何改变。已经失败两次：不要重试；继续任务，调查保持未折叠，并告诉用户出了什么错。' : `没有任何改变。再调用一次 ${code(n.rewind)}；如果再次失败，继续任务，调查保持未折叠，并告诉用户。`,
    ],
    STORE_CORRUPT: (f) => [`无法读取检查点存储${f.detail ? ZH.detail(f.detail) : ''}；文件保持原样。`, '在用户修复或移走该文件之前，无法设置或折叠检查点。不要重试：告诉用户，然后不使用检查点继续任务。'],
    STORE_VERSION: (f) => [`检查点存储由更新版本的 dsh-fold 写入${f.detail ? ZH.detail(f.detail) : ''}；文件保持原样。`, '在用户升级 dsh-fold 或移走该文件之前，这里无法设置或折叠检查点。不要重试：告诉用户，然后不使用检查点继续任务。'],
    STORE_IO: (f) => [`无法读写检查点存储${f.detail ? ZH.detail(f.detail) : ''}。`, '现在不要重试：告诉用户出了什么错，然后不使用检查点继续任务。'],
    STORE_LOADING: () => ['检查点存储仍在加载。', '稍后再调用。'],
    INVALID_ARGUMENT: (f) => [`参数被拒绝${f.detail ? ZH.detail(f.detail) : ''}。`, '修正参数后再调用。'],
    INTERNAL: (f) => [`dsh-fold 内部出错，与你的调用无关${f.detail ? ZH.detail(f.detail) : ''}。`, '没有任何改变。不要重试：继续任务，调查保持未折叠，并告诉用户。'],
  },
  other: (/** @type {FailureFacts} */ f) => [`折叠失败${f.detail ? ZH.detail(f.detail) : ''}。`, '没有任何改变。继续任务。'],
}

/** Both languages' words. */
export const WORDS = { en: EN, zh: ZH }

/** @param {'en' | 'zh' | undefined} language */
export const wordsOf = (language) => (language === 'zh' ? ZH : EN)

/** Codes whose failure text quotes the error's own message (what the model or the user needs). */
const QUOTES_DETAIL = new Set(['SUMMARIZE_FAILED', 'HOST_FAILED', 'STORE_CORRUPT', 'STORE_VERSION', 'STORE_IO', 'INVALID_ARGUMENT', 'INTERNAL'])

/**
 * What a fold or checkpoint failure says to the model: `CODE: what happened. State. What to do.`
 * @param {FailureFacts} facts
 * @param {Names} names
 * @param {'en' | 'zh'} [language]
 */
export function failureText(facts, names, language = 'en') {
  const w = wordsOf(language)
  const n = { checkpoint: names.checkpoint, rewind: names.rewind ?? 'rewind' }
  const id = facts.mark ? String(facts.mark.id) : '?'
  const f = { ...facts, detail: QUOTES_DETAIL.has(facts.code) ? facts.detail : undefined }
  const [what, next] = (w.failures[facts.code] ?? w.other)(f, n, id)
  const state =
    facts.code === 'EMPTY_REGION' && facts.state === 'folded'
      ? ''
      : facts.state === 'open' || facts.state === 'folded'
        ? facts.mark
          ? w.state[facts.state](facts.mark.id)
          : ''
        : w.state[facts.state]()
  // Chinese sentences follow each other without a space.
  const gap = language === 'zh' ? '' : ' '
  return `${facts.code}: ${what}${state ? `${gap}${state}` : ''}${gap}${next}`
}

/** Where the frame of a fold's report starts (both languages): its first line is the frame. */
const FRAME_HEAD = /^\[(?:Checkpoint|检查点) \d+[^\n]*\n\n/

/**
 * A fold's report text without its frame (the first paragraph the plugin wrote above it), and
 * whether the frame says the extractive generator wrote it: `{head, body, extractive}`.
 * @param {string} text
 */
export function splitReportFrame(text) {
  const head = FRAME_HEAD.exec(text)?.[0] ?? ''
  const extractive = head !== '' && /\] (?:A report extracted from|这是从该调查的步骤中摘录的报告)/.test(head)
  return { head, body: text.slice(head.length), extractive }
}

/**
 * A fold's report as its writer wrote it: the committed text without the frame above it and the
 * recall hint below it (what `reportChars` and the shrink check count).
 * @param {string} text
 */
export function reportBody(text) {
  return splitRecallHint(splitReportFrame(text).body).body
}

/**
 * The mark a checkpoint tool's rendered result names (`Checkpoint N set`, `已设置检查点 N`), or
 * undefined for any other text: what the session log keeps of a checkpoint call.
 * @param {string} text
 */
export function checkpointResultId(text) {
  const m = /^(?:Checkpoint (\d+) set\b|已设置检查点 (\d+)[；。])/.exec(text)
  return m ? Number(m[1] ?? m[2]) : undefined
}
