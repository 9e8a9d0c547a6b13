/**
 * @module plugin/block/block
 * Block mode (`dsh-fold/block`): the model works in blocks and closes each with its own
 * summary. In DSH's Code Mode with tool presentation `both`:
 *
 * - `block_run_code({ids, description, code, timeoutMs?})` is the one tool the model may call
 *   directly. It hands the program to the host's own `run_code` through `ctx.tools.execute`
 *   with the parent token and the SAME call id, and returns run_code's result unchanged, so
 *   programs, sub-call ids (`<callId>:code:<n>`) and rendering are exactly Code Mode's.
 *   `ids` tag the call's whole assistant message and its result (the log's tool-call
 *   arguments are the only record of it).
 * - `tools.block_summary({ids, summary})`, callable only inside a program, replaces the
 *   surface run from the first to the last message of those blocks with the model's summary.
 *   The range is planned by the addon (`planBlockSummary`, rules in
 *   `crates/fold-core/src/blocks.rs`) on the session's mirror (`../shared/mirror.js`, which reads
 *   each block call's ids as it is appended); the four events are written by `commit.js`. A summary requested from inside its own block waits for the
 *   program's result (it is pending): it is queued and lands right after that result, before
 *   the next model request.
 * - A guard refuses every direct call but `block_run_code`, and a `block_run_code` nested in
 *   a program; a `system-prompt/assemble` listener narrows the wire tool list to
 *   `block_run_code` (the generated SDK still lists every tool); a prompt section says how to
 *   size and close blocks, and, when `recall` is mounted, how to call it from a program. The
 *   recall hint that ends each summary spells the call as a program writes it
 *   (`await tools.recall({...})` inside a `block_run_code` program): a direct call is refused.
 * - Pending requests are rebuilt from the log (`log.js`) when a session is created —
 *   restored from disk or forked — and whenever the plugin mounts.
 * - A queued summary that can no longer land (stale: the user, another block summary or a rewind
 *   report or compaction arrived in its range after it was written; protected; unknown by then)
 *   replaces nothing and is logged in a closed bracket; the agent's next step carries one short
 *   note saying which summary was not applied and why (an `agent/pre-step` listener adds it to
 *   the step's messages; the log says which failures were told, so each is told once, also after
 *   a restart).
 *
 * A host without Code Mode fails at mount: the `codeRuntime` service is injected (DSH's boot
 * audit names it when absent), and `apply` throws naming what else is missing.
 */
import { scopeOf } from '@deepseek-ai/dsh-scope'
import { defineTool, RUN_CODE_NAME } from '@deepseek-ai/dsh-tools'
import { HarnessError, boundContextSummary, createUserMessage } from '@deepseek-ai/dsh-llm'
import Schema from '@deepseek-ai/schemastery'

import { addon } from '../shared/addon.js'
import { blockIdsOrNone, callBlockIds, codedError, normalizeBlockIds, normalizeDescription, normalizeSummary, normalizeTimeout, MAX_DESCRIPTION_CHARS } from './args.js'
import { writeCommit, writeFailure } from './commit.js'
import { programCallee, recallHint, recallToolName } from '../recall/hint.js'
import { SessionBlocks } from './log.js'
import { mirrorOf, mountMirror, trackBlockTool, useMeter, withLog } from '../shared/mirror.js'

/**
 * @typedef {object} BlockConfig
 * @property {string} toolName the direct tool (`block_run_code`)
 * @property {string} summaryToolName the in-program callable (`block_summary`)
 * @property {'en' | 'zh'} language of the prompt section, the summary frame and the notes
 * @property {number} maxTimeoutMs the largest `timeoutMs` a program may ask for
 */
export const Config = Schema.object({
  toolName: Schema.string().pattern(/^[a-zA-Z0-9_-]{1,64}$/).default('block_run_code').description('The one tool the model may call directly.'),
  summaryToolName: Schema.string().pattern(/^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/).default('block_summary').description('The callable that closes blocks, reachable only inside programs.'),
  language: Schema.union(['en', 'zh']).default('en').description('Language of the prompt section, the summary frame and the notes.'),
  maxTimeoutMs: Schema.natural().min(1).max(2_147_483_647).default(600_000).description('Largest per-program `timeoutMs` the model may ask for.'),
})

/** The seed's refusal, naming the configured tool. @param {string} tool */
export const directCallRefusal = (tool) => `In block mode only \`${tool}\` may be called directly`

/** @param {string} tool */
const nestedRefusal = (tool) => `\`${tool}\` cannot run inside a program; call the tools you need from this program (\`tools.<name>\`)`

/** What the model should do after each coded failure. @type {Record<string, string>} */
const NEXT_STEP = {
  INVALID_ARGUMENT: 'Fix the arguments and call again.',
  UNKNOWN_BLOCK: 'Name ids your `block_run_code` calls carried; nothing was closed.',
  PROTECTED: 'Nothing was replaced; close a set of ids whose range does not cross that message.',
  STALE: 'A user message arrived inside the range after you wrote the summary: read it, then call `block_summary` again with a summary that carries it.',
}

/**
 * A coded failure as the tool result carries it: a `HarnessError`, so DSH records the code in
 * the result's `error.info`, and a message the model reads as `CODE: message next-step`.
 */
export class BlockModeError extends HarnessError {}

/** @param {unknown} e */
function toToolError(e) {
  const code = /** @type {any} */ (e)?.code
  if (typeof code !== 'string' || !addon.isFoldError(e)) return e
  const message = /** @type {Error} */ (e).message
  const what = /[.!?。]$/.test(message) ? message : `${message}.`
  return new BlockModeError(`${code}: ${what}${NEXT_STEP[code] ? ` ${NEXT_STEP[code]}` : ''}`, code, { cause: e })
}

const PROMPT = {
  en: (/** @type {string} */ run, /** @type {string} */ summary) => `## Block mode

Work in blocks. Every action goes through \`${run}\`: a program that calls the tools as \`tools.<name>\`, tagged with \`ids\`, the blocks it works on. Nothing else can be called directly.

A block is one sub-goal with a clear finish: an investigation, a change and the check that it works. Keep one sub-goal's work under one id, and give a program every id it serves. Split a large task into its separable sub-goals rather than one block for everything or one block per call; a small task may be a single block.

Close each block as soon as its sub-goal is done, before moving on, from a program: \`await tools.${summary}({ids: ['<id>'], summary: '...'})\`. Closing a block from inside its own program is normal: the summary lands after that program's result. The summary replaces every message from the block's first appearance to its last, including user messages and workspace instructions (AGENTS.md) that arrived in between, so write it to stand alone: the goal, what was done and found (exact paths, commands, identifiers, numbers), every requirement, correction or constraint that arrived in the span, what is left and the next step, or that only reporting to the user remains.`,
  zh: (/** @type {string} */ run, /** @type {string} */ summary) => `## 区块模式

按区块（block）工作。所有操作都通过 \`${run}\` 执行：一段用 \`tools.<name>\` 调用工具的程序，并用 \`ids\` 标明它属于哪些区块。其它工具都不能直接调用。

一个区块是一个有明确完成条件的子目标：一次调查、一处修改及其验证。同一子目标的工作放在同一个 id 下，服务多个区块的程序带上所有相关 id。大任务按可分开的子目标拆分，不要整个任务共用一块，也不要每次调用新建一块；小任务可以只用一块。

每个子目标完成后立即在程序中收口，再继续后面的工作：\`await tools.${summary}({ids: ['<id>'], summary: '...'})\`。在区块自己的程序里收口是正常做法，摘要会在该程序的结果之后生效。摘要替换该区块从第一次出现到最后一次出现之间的全部消息，包括其间到达的用户消息和工作区指令（AGENTS.md），所以要让它能独立成立：目标、做了什么和发现了什么（准确的路径、命令、标识符、数字）、区间内新增的每条要求、纠正和约束、还剩什么以及下一步，或者只剩向用户报告结果。`,
}

/** The prompt's paragraph on recall, when a `recall` tool is mounted. */
const RECALL_PROMPT = {
  en: (/** @type {string} */ run, /** @type {string} */ recall) =>
    `\n\nA closed block is not lost: inside a \`${run}\` program, \`await ${programCallee(recall)}({block: '<id>', query: 'text or /regex/'})\` returns its exact original lines (without \`query\`, an index). Like every tool here, it cannot be called directly.`,
  zh: (/** @type {string} */ run, /** @type {string} */ recall) =>
    `\n\n已收口的区块并未丢失：在 \`${run}\` 程序中，\`await ${programCallee(recall)}({block: '<id>', query: '文本或 /正则/'})\` 返回其原始行（不带 \`query\` 时返回索引）。与这里的其它工具一样，它不能直接调用。`,
}

const PENDING_NOTE = {
  en: (/** @type {string} */ reason) => `Queued: ${reason}. The summary replaces the blocks as soon as that clears, before your next step; do not call it again for them.`,
  zh: (/** @type {string} */ reason) => `已排队：${reason}。一旦条件满足，摘要立即替换这些区块（在你的下一步之前）；不要为它们再次调用。`,
}

/** Longest logged error a note quotes, in characters. */
const NOTE_ERROR_CHARS = 600
/** Most block ids a note names before "and N more". */
const NOTE_IDS = 6

/** @param {string[]} ids */
const idList = (ids) => (ids.length > NOTE_IDS ? `${ids.slice(0, NOTE_IDS).join(', ')} and ${ids.length - NOTE_IDS} more` : ids.join(', '))
/** @param {string} error */
const clipError = (error) => (error.length > NOTE_ERROR_CHARS ? `${error.slice(0, NOTE_ERROR_CHARS - 1)}…` : error)

/** The note for deferred summaries that were not applied: one line each. */
const NOT_APPLIED = {
  en: {
    line: (/** @type {import('./log.js').Failure} */ f) =>
      `[block mode] Your summary of block ${idList(f.targets)} was not applied: ${clipError(f.error)}`,
    summary: (/** @type {string[]} */ ids) => `Block summary not applied: ${ids.join(', ')}`,
  },
  zh: {
    line: (/** @type {import('./log.js').Failure} */ f) =>
      `[区块模式] 你对区块 ${idList(f.targets)} 的摘要未被应用：${clipError(f.error)}`,
    summary: (/** @type {string[]} */ ids) => `区块摘要未应用：${ids.join(', ')}`,
  },
}

/** Events after which a queued summary may be able to land. */
const RETRY_ON = new Set(['tool/result', 'user/message', 'assistant/message', 'compaction/end', 'turn/end', 'session/end-seed'])

/**
 * The route of the request that wrote a summary: the session's latest request header, else
 * the agent's options.
 * @param {any} session @param {any} agent
 */
function routeOf(session, agent) {
  const config = session.requestHeader?.()?.config
  if (typeof config?.provider === 'string' && typeof config?.model === 'string') return { provider: config.provider, model: config.model }
  const options = agent?.options
  if (typeof options?.provider === 'string' && typeof options?.model === 'string') return { provider: options.provider, model: options.model }
  return undefined
}

/**
 * Refuses to mount where block mode cannot work, naming what is missing.
 * @param {any} ctx @param {BlockConfig} config
 */
function assertCodeMode(ctx, config) {
  const missing = ['execute', 'guard', 'register', 'modeFor'].filter((m) => typeof ctx.tools?.[m] !== 'function').map((m) => `ctx.tools.${m}`)
  if (typeof ctx.systemPrompt?.section !== 'function') missing.push('ctx.systemPrompt.section')
  if (missing.length > 0) {
    throw new Error(`dsh-fold/block: this host has no Code Mode tool registry (missing ${missing.join(', ')}); block mode needs @deepseek-ai/dsh-tools >= 0.1.0-rc.8`)
  }
  // A host-plane row guards and narrows every agent, so the deployment itself must present
  // tools as `both`; a preset-plane row's presentation is checked per request instead.
  if (scopeOf(ctx) === undefined) {
    const mode = ctx.tools.modeFor(undefined)
    if (mode !== 'both') {
      throw new Error(
        `dsh-fold/block: the host presents tools as "${mode}", and block mode needs "both" (\`${config.toolName}\` delegates to \`${RUN_CODE_NAME}\`, and plugin tools are callable directly only under "both"): run the headless host with DSH_TOOLS_MODE=both, or set the tools row's mode to both`,
      )
    }
  }
}

/**
 * One mounted block mode: its tools, guard, prompt, queue and recovery.
 */
class BlockMode {
  /** @type {WeakMap<object, SessionBlocks>} */
  #sessions = new WeakMap()
  /** @type {WeakSet<object>} sessions with a drain already scheduled */
  #scheduled = new WeakSet()
  /** Whether DSH's token meter is mounted: commits are then priced in its tokens. */
  metered = false

  /** @param {any} ctx @param {BlockConfig} config */
  constructor(ctx, config) {
    this.ctx = ctx
    this.config = config
  }

  /** @param {any} session */
  stateOf(session) {
    let state = this.#sessions.get(session)
    if (!state) this.#sessions.set(session, (state = new SessionBlocks(this.config.summaryToolName)))
    state.catchUp(session)
    return state
  }

  /**
   * Plans a request against the session as it is now.
   * @param {any} session @param {import('./log.js').SummaryRequest} request
   * @returns {import('../../index.js').BlockPlan}
   */
  plan(session, request) {
    return addon.planBlockSummary(session.id, withLog(session).native, request.targets, request.requestSeq)
  }

  /**
   * Closes blocks now, or queues the summary when its range is not ready.
   * @param {any} session @param {import('./log.js').SummaryRequest} request
   */
  request(session, request) {
    const state = this.stateOf(session)
    const outcome = this.plan(session, request)
    if (outcome.status === 'pending') {
      state.enqueue(request)
      return { replaced: 0, tokensFreed: 0, pending: true, requestSeq: request.requestSeq, note: PENDING_NOTE[this.config.language](outcome.reason) }
    }
    const { seqs: _seqs, ...result } = writeCommit(session, { ...this.#commitInput(state, request), plan: outcome.plan })
    state.catchUp(session)
    return result
  }

  /** @param {SessionBlocks} state @param {import('./log.js').SummaryRequest} request */
  #commitInput(state, request) {
    return {
      summary: request.summary,
      requestSeq: request.requestSeq,
      route: request.route ?? state.route,
      turn: state.openTurn,
      metered: this.metered,
      language: this.config.language,
      // Recall is reachable only from a program here: the hint spells the call as one writes it.
      hint: (/** @type {string[]} */ closed) => recallHint(this.ctx, { block: closed[0] }, this.config.language, { program: this.config.toolName }),
    }
  }

  /** Schedules one drain of the session's queue outside the current append. @param {any} session */
  schedule(session) {
    if (this.#scheduled.has(session)) return
    this.#scheduled.add(session)
    queueMicrotask(() => {
      this.#scheduled.delete(session)
      this.#guarded('landing queued summaries', () => this.drain(session))
    })
  }

  /**
   * Runs microtask work so that a failure is logged, never thrown into the host's event loop.
   * @param {string} what @param {() => void} work
   */
  #guarded(what, work) {
    try {
      work()
    } catch (error) {
      this.ctx.logger?.warn?.(`dsh-fold/block: ${what} failed: ${/** @type {Error} */ (error)?.message ?? error}`)
    }
  }

  /**
   * Lands every queued summary whose range is ready, in request order; logs the ones that can
   * no longer land.
   * @param {any} session
   */
  drain(session) {
    const state = this.stateOf(session)
    for (const request of [...state.queue.values()]) {
      try {
        let outcome
        try {
          outcome = this.plan(session, request)
        } catch (error) {
          // The request can never land as written. Log it in a closed bracket — unless another
          // producer's compaction is open, which a bracket may not cross: retry after it.
          if (state.openCompaction !== undefined) continue
          writeFailure(session, { requestSeq: request.requestSeq, targets: request.targets, turn: state.openTurn, error })
          this.ctx.logger?.warn?.(`block summary of request ${request.requestSeq} (${request.targets.join(', ')}) failed: ${/** @type {Error} */ (error).message}`)
          continue
        } finally {
          state.catchUp(session)
        }
        if (outcome.status === 'pending') continue
        writeCommit(session, { ...this.#commitInput(state, request), plan: outcome.plan })
      } catch (error) {
        // A failed write closed its own bracket with the error (and so settled the request).
        this.ctx.logger?.warn?.(`block summary of request ${request.requestSeq} could not be written: ${/** @type {Error} */ (error).message}`)
      } finally {
        state.catchUp(session)
      }
    }
  }

  /**
   * Rebuilds a session's pending requests from its log and tries them. The session's mirror is
   * brought in step here too, so a restored or forked session's first summary does not pay for
   * describing its whole history.
   * @param {any} session
   */
  recover(session) {
    const state = this.stateOf(session)
    mirrorOf(session)
    if (state.queue.size > 0) this.schedule(session)
  }

  /**
   * The note owed to the model about deferred summaries that were not applied, or `undefined`:
   * a `user/message` (a plugin `notice`) whose source names the requests it reports, so reading
   * it back from the log settles them.
   * @param {any} session
   */
  noteFor(session) {
    const state = this.stateOf(session)
    if (state.untold.size === 0) return undefined
    const failures = [...state.untold.values()]
    const words = NOT_APPLIED[this.config.language]
    return createUserMessage({
      content: [{ type: 'text', text: failures.map(words.line).join('\n') }],
      source: {
        kind: 'plugin',
        plugin: 'dsh-fold/block',
        form: 'notice',
        summary: boundContextSummary(words.summary([...new Set(failures.flatMap((f) => f.targets))])),
        blockNotice: { requestSeqs: failures.map((f) => f.requestSeq) },
      },
    })
  }

  /** @param {any} session @param {any} event */
  onEvent(session, event) {
    const state = this.#sessions.get(session)
    if (state === undefined || state.queue.size === 0 || !RETRY_ON.has(event.type)) return
    this.schedule(session)
  }
}

/**
 * @param {any} ctx
 * @param {BlockConfig} config
 */
export function apply(ctx, config) {
  config = Config(config)
  assertCodeMode(ctx, config)
  const mode = new BlockMode(ctx, config)
  const { toolName, summaryToolName, language } = config

  // The session mirrors read each block call's ids as it is appended (they need every event of
  // a session, so a restored one is described whole, once); DSH's token meter prices their nodes
  // when the host mounts one (dsh-base does), which prices the commit.
  ctx.effect(() => trackBlockTool(toolName, (/** @type {unknown} */ args) => callBlockIds(args)), 'dsh-fold/block: block ids')
  ctx.inject(['tokenMeter'], (/** @type {any} */ meterCtx) => {
    meterCtx.effect(() => {
      const off = useMeter(meterCtx.tokenMeter)
      mode.metered = true
      return () => {
        off()
        mode.metered = false
      }
    }, 'dsh-fold/block: token meter')
  })
  mountMirror(ctx)

  ctx.tools.guard((/** @type {any} */ exec) => {
    if (exec.parent === undefined) return exec.name === toolName ? undefined : directCallRefusal(toolName)
    return exec.name === toolName ? nestedRefusal(toolName) : undefined
  })

  ctx.on('system-prompt/assemble', async (/** @type {any} */ assembly, /** @type {any} */ context, /** @type {() => Promise<any>} */ next) => {
    const assembled = await next()
    const presentation = ctx.tools.modeFor(context?.scope)
    if (presentation !== 'both') {
      throw new Error(`dsh-fold/block: this agent's tools are presented as "${presentation}"; block mode needs "both" (a tool-presentation row with mode: both, or DSH_TOOLS_MODE=both)`)
    }
    return { ...assembled, tools: assembled.tools.filter((/** @type {{name: string}} */ t) => t.name === toolName) }
  })

  // Read at each assembly: `recall` may be mounted (or renamed) after block mode.
  const prompt = PROMPT[language](toolName, summaryToolName)
  ctx.systemPrompt.section({
    name: `tool:${toolName}`,
    order: 140,
    text: () => {
      const recall = recallToolName(ctx)
      return recall === undefined ? prompt : prompt + RECALL_PROMPT[language](toolName, recall)
    },
  })

  ctx.tools.register(runTool(ctx, config))
  ctx.tools.register(summaryTool(mode, config))

  // The agent's next step carries the note about deferred summaries that were not applied.
  ctx.on('agent/pre-step', async (/** @type {{agent: any}} */ payload, /** @type {() => Promise<any>} */ next) => {
    const decision = await next()
    const session = payload.agent?.session
    if (decision?.kind !== 'enter' || !session) return decision
    const note = mode.noteFor(session)
    return note ? { ...decision, messages: [...decision.messages, note] } : decision
  })

  ctx.on('session/event', (/** @type {any} */ session, /** @type {any} */ event) => mode.onEvent(session, event))
  ctx.on('session/created', (/** @type {any} */ session) => mode.recover(session))
  for (const session of ctx.get('sessions')?.list() ?? []) mode.recover(session)
}

/**
 * The error a failed delegated program becomes: run_code's own message (and code) unchanged,
 * or the timeout, when `timeoutMs` cut the program short.
 * @param {any} result @param {number | undefined} timeoutMs @param {AbortSignal} timer
 */
function delegatedError(result, timeoutMs, timer) {
  if (timeoutMs !== undefined && timer.aborted) {
    return new Error(`the program exceeded its timeoutMs budget (${timeoutMs} ms): ${result.error?.message ?? 'aborted'}`)
  }
  const info = result.error?.info
  const error = new HarnessError(result.error?.message ?? 'run_code failed', info?.code ?? 'CODE_RUN_FAILED')
  if (typeof info?.name === 'string') error.name = info.name
  return error
}

/** @param {any} ctx @param {BlockConfig} config */
function runTool(ctx, { toolName, maxTimeoutMs }) {
  // run_code's renderer, so the content the model reads is exactly Code Mode's.
  const transport = () => ctx.tools.get(RUN_CODE_NAME) ?? ctx.tools.requireCodeTransport()
  return defineTool({
    name: toolName,
    description:
      'Run a TypeScript program that calls tools as `tools.<name>` (see the SDK), tagged with the block ids it works on. The only tool you may call directly. Close a finished block with `await tools.block_summary({ids, summary})` inside a program.',
    parameters: {
      ids: { type: 'array', items: { type: 'string' }, description: 'The blocks this program works on: a non-empty list of distinct ids, e.g. ["auth-refactor"]. Keep one sub-goal under one id.' },
      id: { type: 'string', description: 'Legacy: one block id, the same as `ids: [id]`. Pass `ids` or `id`, not both.' },
      description: { type: 'string', required: true, description: 'What this program does, in 5-10 words (shown in the UI).' },
      code: { type: 'string', required: true, description: 'The program. Top-level `await` works; `return` a value to make it the result.' },
      timeoutMs: { type: 'integer', description: `This program's time budget in milliseconds (1 to ${maxTimeoutMs}).` },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: { logs: { type: 'array', required: true, items: { type: 'string' } }, result: { type: 'json' } },
      },
      render: (/** @type {any} */ args, /** @type {any} */ value) => transport().output.render(args, value),
    },
    presentCall: (/** @type {any} */ args) => ({
      card: 'generic',
      title: `[${blockIdsOrNone(args).join(', ')}] ${String(args.description ?? '').slice(0, MAX_DESCRIPTION_CHARS)}`,
      kind: 'execute',
      rawInput: args.code,
    }),
    execute: async (/** @type {any} */ args, /** @type {any} */ exec) => {
      if (exec.parent !== undefined) throw new Error(nestedRefusal(toolName))
      let timeoutMs
      try {
        normalizeBlockIds(args)
        normalizeDescription(args.description)
        timeoutMs = normalizeTimeout(args.timeoutMs, maxTimeoutMs)
      } catch (e) {
        throw toToolError(e)
      }
      const timer = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs)
      const result = await ctx.tools.execute({
        callId: exec.callId,
        rootCallId: exec.rootCallId,
        name: RUN_CODE_NAME,
        arguments: { code: args.code, description: args.description },
        ...(exec.agent !== undefined ? { agent: exec.agent } : {}),
        parent: exec.token,
        signal: timer ? AbortSignal.any([exec.signal, timer]) : exec.signal,
      })
      // What the program's sub-calls deferred (images, extra context) and a concluded turn
      // belong to this call, as they would to a direct run_code.
      for (const context of result.additionalContexts ?? []) exec.deferContext(context)
      if (result.concludesTurn) exec.concludeTurn()
      if (result.isError) throw delegatedError(result, timeoutMs, /** @type {AbortSignal} */ (timer ?? exec.signal))
      return result.value
    },
  })
}

/** @param {BlockMode} mode @param {BlockConfig} config */
function summaryTool(mode, { summaryToolName, toolName }) {
  return defineTool({
    name: summaryToolName,
    description: `Close finished blocks: replace every message from the first to the last appearance of \`ids\` in your context with \`summary\`. Only inside a \`${toolName}\` program; closing the block the program itself belongs to is normal (the summary lands after the program's result).`,
    parameters: {
      ids: { type: 'array', items: { type: 'string' }, description: 'The blocks to close: a non-empty list of distinct ids.' },
      id: { type: 'string', description: 'Legacy: one block id, the same as `ids: [id]`. Pass `ids` or `id`, not both.' },
      summary: {
        type: 'string',
        required: true,
        description:
          'Your own summary of everything between these ids\' first and last appearance. Keep exactly every requirement, correction and constraint the user (or workspace instructions) added in that span. State the goal, what was done and found, what is left and the next step — or that only reporting to the user remains. Keep the details later steps need (paths, commands, identifiers, numbers).',
      },
    },
    output: {
      schema: {
        type: 'object',
        additionalProperties: false,
        properties: {
          replaced: { type: 'integer', required: true },
          tokensFreed: { type: 'integer', required: true },
          ids: { type: 'array', items: { type: 'string' } },
          pending: { type: 'boolean' },
          requestSeq: { type: 'integer' },
          note: { type: 'string' },
        },
      },
      render: (/** @type {any} */ _args, /** @type {any} */ value) => [{ type: 'text', text: JSON.stringify(value) }],
    },
    presentCall: (/** @type {any} */ args) => ({ card: 'generic', title: 'Block summary', subtitle: blockIdsOrNone(args).join(', ') }),
    execute: async (/** @type {any} */ args, /** @type {any} */ exec) => {
      try {
        if (exec.parent === undefined) throw codedError('INVALID_ARGUMENT', `\`${summaryToolName}\` is callable only inside a \`${toolName}\` program`)
        const targets = normalizeBlockIds(args)
        const summary = normalizeSummary(args.summary)
        const session = exec.agent?.session
        if (!session) throw new Error(`${summaryToolName} needs an owning agent session`)
        return mode.request(session, { requestSeq: session.seq, targets, summary, route: routeOf(session, exec.agent) })
      } catch (e) {
        throw toToolError(e)
      }
    },
  })
}

/** The `dsh-fold/block` plugin. */
export default { name: 'dsh-fold-block', inject: ['tools', 'systemPrompt', 'codeRuntime'], Config, apply }
