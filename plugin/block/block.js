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
import { recallHint, recallToolName } from '../recall/hint.js'
import { languageOf } from '../shared/language.js'
import { runtimeName, wordsOf } from './words.js'
import { SessionBlocks } from './log.js'
import { liveCompaction, mirrorOf, mountMirror, trackBlockTool, useMeter, withLog } from '../shared/mirror.js'

/**
 * @typedef {object} BlockConfig
 * @property {string} toolName the direct tool (`block_run_code`)
 * @property {string} summaryToolName the in-program callable (`block_summary`)
 * @property {'en' | 'zh'} [language] of every text; unset: the rewind row's `reportLanguage`, else en
 * @property {number} maxTimeoutMs the largest `timeoutMs` a program may ask for
 */
export const Config = Schema.object({
  toolName: Schema.string().pattern(/^[a-zA-Z0-9_-]{1,64}$/).default('block_run_code').description('The one tool the model may call directly.'),
  summaryToolName: Schema.string().pattern(/^[a-zA-Z_][a-zA-Z0-9_]{0,63}$/).default('block_summary').description('The callable that closes blocks, reachable only inside programs.'),
  language: Schema.union(['en', 'zh']).description("Language of the prompt section, the tools' descriptions, the summary frame, the notes and the failures (default: the rewind row's reportLanguage, else en)."),
  maxTimeoutMs: Schema.natural().min(1).max(2_147_483_647).default(600_000).description('Largest per-program `timeoutMs` the model may ask for.'),
})

/** The seed's refusal, naming the configured tool. @param {string} tool @param {'en' | 'zh'} [language] */
export const directCallRefusal = (tool, language = 'en') => wordsOf(language).directCall({ run: tool, summary: '' })

/**
 * A coded failure as the tool result carries it: a `HarnessError`, so DSH records the code in
 * the result's `error.info`, and a message the model reads as `CODE: message next-step`.
 */
export class BlockModeError extends HarnessError {}

/**
 * @param {unknown} e @param {'en' | 'zh'} language @param {import('./words.js').BlockNames} names
 */
function toToolError(e, language, names) {
  const code = /** @type {any} */ (e)?.code
  if (typeof code !== 'string' || !addon.isFoldError(e)) return e
  const w = wordsOf(language)
  const next = /** @type {Record<string, (n: import('./words.js').BlockNames) => string>} */ (w.next)[code]?.(names) ?? ''
  return new BlockModeError(`${code}: ${w.failure(/** @type {Error} */ (e).message, next)}`, code, { cause: e })
}

/** Longest logged error a note quotes, in characters. */
const NOTE_ERROR_CHARS = 600
/** Most block ids a note names before "and N more". */
const NOTE_IDS = 6

/** @param {string[]} ids @param {'en' | 'zh'} language */
const idList = (ids, language) => (ids.length > NOTE_IDS ? `${ids.slice(0, NOTE_IDS).join(', ')}${wordsOf(language).more(ids.length - NOTE_IDS)}` : ids.join(', '))
/** @param {string} error */
const clipError = (error) => (error.length > NOTE_ERROR_CHARS ? `${error.slice(0, NOTE_ERROR_CHARS - 1)}…` : error)

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

  /** The language of every text: the row's `language`, else the rewind row's `reportLanguage`. */
  get language() {
    return languageOf(this.ctx, this.config.language)
  }

  /** The configured names every text uses (recall's, while mounted). */
  get names() {
    return { run: this.config.toolName, summary: this.config.summaryToolName, recall: recallToolName(this.ctx) }
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
      return { replaced: 0, tokensFreed: 0, pending: true, requestSeq: request.requestSeq, note: wordsOf(this.language).pending(outcome.reason) }
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
      language: this.language,
      // Recall is reachable only from a program here: the hint spells the call as one writes it.
      hint: (/** @type {string[]} */ closed) => recallHint(this.ctx, { block: closed[0] }, this.language, { program: this.config.toolName }),
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
          if (liveCompaction(session) !== undefined) continue
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
    const words = wordsOf(this.language)
    return createUserMessage({
      content: [{ type: 'text', text: failures.map((f) => words.notApplied(idList(f.targets, this.language), clipError(f.error))).join('\n') }],
      source: {
        kind: 'plugin',
        plugin: 'dsh-fold/block',
        form: 'notice',
        summary: boundContextSummary(words.notAppliedSummary([...new Set(failures.flatMap((f) => f.targets))].join(', '))),
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
  const { toolName } = config

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
    if (exec.parent === undefined) return exec.name === toolName ? undefined : wordsOf(mode.language).directCall(mode.names)
    return exec.name === toolName ? wordsOf(mode.language).nested(mode.names) : undefined
  })

  ctx.on('system-prompt/assemble', async (/** @type {any} */ assembly, /** @type {any} */ context, /** @type {() => Promise<any>} */ next) => {
    const assembled = await next()
    const presentation = ctx.tools.modeFor(context?.scope)
    if (presentation !== 'both') {
      throw new Error(`dsh-fold/block: this agent's tools are presented as "${presentation}"; block mode needs "both" (a tool-presentation row with mode: both, or DSH_TOOLS_MODE=both)`)
    }
    return { ...assembled, tools: assembled.tools.filter((/** @type {{name: string}} */ t) => t.name === toolName) }
  })

  // Read at each assembly: `recall` (and the rewind row the language may follow) may be mounted
  // (or renamed) after block mode.
  ctx.systemPrompt.section({
    name: `tool:${toolName}`,
    order: 140,
    text: () => {
      const words = wordsOf(mode.language)
      const names = mode.names
      return names.recall === undefined ? words.section(names) : words.section(names) + words.recallSection(names)
    },
  })

  ctx.tools.register(runTool(ctx, mode))
  ctx.tools.register(summaryTool(mode))

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

/**
 * Defines `description` getters on a tool and its parameters, read at each request: the texts
 * follow the row's language (which may follow the rewind row's) and the mounted names.
 * @param {any} tool a `defineTool` result @param {() => string} description
 * @param {Record<string, () => string>} params
 */
function describedLive(tool, description, params) {
  Object.defineProperty(tool, 'description', { enumerable: true, get: description })
  for (const [key, text] of Object.entries(params)) Object.defineProperty(tool.parameters.properties[key], 'description', { enumerable: true, get: text })
  return tool
}

/** @param {any} ctx @param {BlockMode} mode */
function runTool(ctx, mode) {
  const { toolName, maxTimeoutMs } = mode.config
  // run_code's renderer, so the content the model reads is exactly Code Mode's.
  const transport = () => ctx.tools.get(RUN_CODE_NAME) ?? ctx.tools.requireCodeTransport()
  const words = () => wordsOf(mode.language)
  const tool = defineTool({
    name: toolName,
    description: '',
    parameters: {
      ids: { type: 'array', items: { type: 'string' }, description: '' },
      id: { type: 'string', description: '' },
      description: { type: 'string', required: true, description: '' },
      code: { type: 'string', required: true, description: '' },
      timeoutMs: { type: 'integer', description: '' },
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
      if (exec.parent !== undefined) throw new Error(words().nested(mode.names))
      let timeoutMs
      try {
        normalizeBlockIds(args)
        normalizeDescription(args.description)
        timeoutMs = normalizeTimeout(args.timeoutMs, maxTimeoutMs)
      } catch (e) {
        throw toToolError(e, mode.language, mode.names)
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
  // The program's language is the mounted code runtime's (TypeScript or Python).
  return describedLive(tool, () => words().runTool(mode.names, runtimeName(ctx.get('codeRuntime')?.language)), {
    ids: () => words().runParams.ids,
    id: () => words().runParams.id,
    description: () => words().runParams.description,
    code: () => words().runParams.code,
    timeoutMs: () => words().runParams.timeoutMs(maxTimeoutMs),
  })
}

/** @param {BlockMode} mode */
function summaryTool(mode) {
  const { summaryToolName } = mode.config
  const words = () => wordsOf(mode.language)
  const tool = defineTool({
    name: summaryToolName,
    description: '',
    parameters: {
      ids: { type: 'array', items: { type: 'string' }, description: '' },
      id: { type: 'string', description: '' },
      summary: { type: 'string', required: true, description: '' },
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
        if (exec.parent === undefined) throw codedError('INVALID_ARGUMENT', words().onlyInProgram(mode.names))
        const targets = normalizeBlockIds(args)
        const summary = normalizeSummary(args.summary)
        const session = exec.agent?.session
        if (!session) throw new Error(`${summaryToolName} needs an owning agent session`)
        return mode.request(session, { requestSeq: session.seq, targets, summary, route: routeOf(session, exec.agent) })
      } catch (e) {
        throw toToolError(e, mode.language, mode.names)
      }
    },
  })
  return describedLive(tool, () => words().summaryTool(mode.names), {
    ids: () => words().summaryParams.ids,
    id: () => words().summaryParams.id,
    summary: () => words().summaryParams.summary,
  })
}

/** The `dsh-fold/block` plugin. */
export default { name: 'dsh-fold-block', inject: ['tools', 'systemPrompt', 'codeRuntime'], Config, apply }
