/**
 * @module plugin/fold/rewind
 * `ctx.rewind`, the model-facing `rewind` tool and the turn guard: a drop-in for
 * `@dpskh/tool-rewind` over the dsh-fold addon.
 *
 * `rewind(agent, signal)` folds everything since the session's latest checkpoint mark into
 * a report. The path, top-down: the tool → this service → the fold's host (`./host.js`: it
 * waits while another producer holds DSH's compaction lock — a live `compaction/start` — at most
 * `reportTimeoutMs`, then `COMPACTION_BUSY`) over the session's mirror (`../shared/mirror.js`)
 * → the addon, which selects the region off the mirror (its rules are in
 * `crates/fold-core/src/region.rs`) and holds the session's fold lock; the report comes from
 * `ctx.llm` (or the extractive generator); the commit re-checks the region and appends ONE
 * replacement `user/message` (`surfaceOp: replace`, source `{kind:'plugin', plugin:'rewind',
 * markId}`) in one synchronous step, and the fold's result is out. The mark is stamped folded
 * right after, off the critical path; a stamp that fails is logged as a warning and the next
 * rewind finishes it. Any failure before the commit writes nothing; a compaction bracket opened
 * during the fold makes its commit `CHANGED`. No plugin events enter the session log.
 *
 * The turn guard: while the latest mark is active, `agent/turn-stopping` injects a standing
 * warning once per agent per turn, and returns the promise doing it, so the loop sees the
 * injected message before it decides whether the turn ends. A mark is active until its fold's
 * report is in the session log, whether or not its stamp reached the store (`./open-mark.js`). It
 * fires after the model replied, so the region leaves an answer already written in place
 * (region.rs, rule 3) and the warning says "if you already gave your answer, rewind and end your
 * turn without repeating it". After a
 * failure no retry fixes (`UNFIXABLE`, a misconfigured report call, a transient failure met twice)
 * it stays silent until new exploration lands, so it never contradicts the failure's advice.
 *
 * What the model reads (`./words.js`, in `reportLanguage`, in the configured names): the one
 * prompt section for both tools, the description, the result (`Checkpoint N folded: …`; the value
 * keeps the reference's shape), the report in its frame (`reportFrame`: which checkpoint, its
 * objective, whose report; outside the shrink check), the guard, and each failure's text (what
 * happened, whether the checkpoint is still open, what to do).
 */
import { Service } from '@deepseek-ai/cordis'
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import { defineTool } from '@deepseek-ai/dsh-tools'
import Schema from '@deepseek-ai/schemastery'

import { addon } from '../shared/addon.js'
import { isRewindError, toToolError } from '../shared/errors.js'
import { extractiveSummarizer, fallbackSummarizer } from './extractive.js'
import { isMisconfiguration, llmSummarizer } from './summarize.js'
import { foldHost } from './host.js'
import { failureText, wordsOf } from './words.js'
import { openMark } from './open-mark.js'
import { recallHint } from '../recall/hint.js'
import { mountMirror, useMeter } from '../shared/mirror.js'
import { REWIND_GUARD_SOURCE, REWIND_REPORT_SOURCE, eventLog, isRewindReportSource } from '../shared/session.js'

export { REWIND_GUARD_SOURCE, REWIND_REPORT_SOURCE, isRewindReportSource }

/**
 * @typedef {object} RewindConfig
 * @property {string} toolName
 * @property {number} maxTokens
 * @property {number} maxSummarizationRetries
 * @property {string} [summarizationProvider]
 * @property {string} [summarizationModel]
 * @property {'en' | 'zh'} reportLanguage
 * @property {'llm' | 'extractive'} summarizer
 * @property {'none' | 'extractive'} fallback
 * @property {number} reportTimeoutMs
 */
export const Config = Schema.object({
  toolName: Schema.string().min(1).default('rewind').description("Model-facing tool name (any name DSH's tool registry takes, e.g. `fold.rewind`)."),
  maxTokens: Schema.natural().min(1).default(1024).description('Output budget of the report call.'),
  maxSummarizationRetries: Schema.natural().min(0).max(8).default(2).description('Empty completions retried before the fold fails.'),
  summarizationProvider: Schema.string().description('Provider of the report call (default: the session\'s routed provider).'),
  summarizationModel: Schema.string().description('Model of the report call (default: the session\'s routed model).'),
  reportLanguage: Schema.union(['en', 'zh']).default('en').description('Language of everything rewind writes for the model (the prompt section, the results, the report and its frame, the guard, the failures), and of the rows that set no `language` of their own.'),
  summarizer: Schema.union(['llm', 'extractive']).default('llm').description('Who writes the report: the LLM, or the native extractive generator (no model call).'),
  fallback: Schema.union(['none', 'extractive']).default('none').description('With `extractive`, a fold whose LLM report fails, times out or stays empty lands with the extractive report (a misconfigured route still fails).'),
  reportTimeoutMs: Schema.natural().min(1).max(3_600_000).default(180_000).description('Time limit of each report call, in milliseconds.'),
})

/**
 * @typedef {{markId: number, foldedNodes: number, start: number, end: number, foldedChars: number, reportChars: number, tokensFreed?: number, report?: 'extractive'}} RewindResult
 */

/** Failures no retry can fix: the guard stays silent after them until new exploration lands. */
const UNFIXABLE = new Set(['EMPTY_REGION', 'SHRINK', 'INTERNAL'])
/** Failures a retry may fix; met twice for one checkpoint, they count as unfixable. */
const TRANSIENT = new Set(['SUMMARIZE_FAILED', 'HOST_FAILED'])

/**
 * What the user must set for a misconfigured report call (`route`, `provider`, `credentials`), or
 * undefined: the report call's own error rides as the fold error's `cause`.
 * @param {unknown} e
 * @returns {'route' | 'provider' | 'credentials' | undefined}
 */
function misconfigurationOf(e) {
  const cause = /** @type {any} */ (e)?.cause
  if (!isMisconfiguration(cause)) return undefined
  return cause.misconfigured === 'provider' || cause.misconfigured === 'credentials' ? cause.misconfigured : 'route'
}

/**
 * Renders a fold result for the model, in its terms: which checkpoint, what was folded, what to
 * do next (the value itself keeps the reference's shape).
 * @param {RewindResult} r @param {'en' | 'zh'} [language]
 */
export function renderResult(r, language = 'en') {
  return wordsOf(language).folded(r)
}

/**
 * The frame a fold's report is committed in: the line above it saying what it is (which
 * checkpoint, its objective, whose report, that its next step is a suggestion). Outside the
 * shrink check, like the recall hint below the report.
 * @param {{id: number, objective?: string | null}} mark @param {boolean} extractive @param {'en' | 'zh'} [language]
 */
export function reportFrame(mark, extractive, language = 'en') {
  return `${wordsOf(language).frame(mark, extractive)}\n\n`
}

/**
 * The tool that ran the program this call was made from (its root call's tool, read from the
 * open assistant message at the log's tail), or `undefined` for a direct call.
 * @param {any} exec the tool's execution context
 * @returns {string | undefined}
 */
function programToolOf(exec) {
  if (exec.parent === undefined || typeof exec.rootCallId !== 'string') return undefined
  const log = eventLog(exec.agent.session)
  for (let seq = log.length - 1; seq >= 0; seq--) {
    const event = log[seq]
    if (event.type !== 'assistant/message') continue
    const call = event.data?.message?.content?.find((/** @type {any} */ b) => b?.type === 'tool-call' && b.id === exec.rootCallId)
    if (call) return call.name
  }
  return undefined
}

/** The `tool-rewind` plugin: provides `ctx.rewind`, the tool, its prompt section and the turn guard. */
export default class RewindService extends Service {
  static inject = ['checkpoint', 'llm', 'tools', 'systemPrompt']
  static Config = Config

  /** @type {WeakMap<object, number>} agent → turn already warned in */
  #warned = new WeakMap()
  /**
   * Sessions whose latest mark had nothing to fold (`EMPTY_REGION`): the guard stays silent for
   * that mark until a tool result other than a rewind's lands after `seq` (the model explored
   * after rewinding too early). Not a `#private` field: `rewind()` is reached as
   * `ctx.rewind.rewind(...)`, and cordis calls service methods with `this` bound to its tracing
   * proxy, where reading a `#private` field throws a TypeError.
   * @type {Map<string, {markId: number, seq: number, calls: Set<string>}>}
   */
  unfoldable = new Map()

  /**
   * Sessions whose latest fold failed transiently (`TRANSIENT`), per checkpoint and code: the
   * second such failure of one checkpoint tells the model to stop retrying.
   * @type {Map<string, {markId: number, code: string, count: number}>}
   */
  failures = new Map()

  /** @type {object | undefined} DSH's `ctx.tokenMeter`, while mounted: the fold is then priced in tokens */
  meter = undefined

  /** @param {any} ctx @param {RewindConfig} config */
  constructor(ctx, config) {
    super(ctx, 'rewind')
    this.ctx = ctx
    this.config = config
    // Half a route is ignored, as the reference ignores it; say so once rather than never.
    if (Boolean(config.summarizationProvider) !== Boolean(config.summarizationModel)) {
      ctx.logger.warn(
        `rewind: only ${config.summarizationProvider ? 'summarizationProvider' : 'summarizationModel'} is configured; it is ignored (set both to route the report call) and the session's route is used`,
      )
    }
    // One section for both tools (read at each assembly: the checkpoint row names its tool).
    ctx.systemPrompt.section({ name: 'tool:rewind', order: 150, text: () => this.words.section(this.names()) })
    ctx.tools.register(this.#tool())
    // Every session of the host keeps its mirror, fed as events are appended.
    mountMirror(ctx)
    // DSH's token meter prices the mirrors' nodes while one is mounted (cordis 4 throws on
    // reading an un-injected service, and every `inject` entry is required: hence the nested
    // optional context).
    ctx.inject(['tokenMeter'], (/** @type {any} */ sub) => {
      sub.effect(() => {
        const off = useMeter(sub.tokenMeter)
        this.meter = sub.tokenMeter
        return () => {
          off()
          this.meter = undefined
        }
      }, 'dsh-fold/rewind: token meter')
    })
    ctx.on('agent/turn-stopping', (/** @type {{agent: any, turn: number}} */ payload) => this.#guard(payload))
  }

  /** The words of every text this row writes for the model, in its `reportLanguage`. */
  get words() {
    return wordsOf(this.config.reportLanguage)
  }

  /**
   * The tool names every text uses, as configured: this row's, and the checkpoint row's (the
   * reference's checkpoint service names no tool: its default).
   * @returns {{checkpoint: string, rewind: string}}
   */
  names() {
    const checkpoint = this.ctx.checkpoint
    const name = checkpoint?.toolName ?? checkpoint?.config?.toolName
    return { checkpoint: typeof name === 'string' ? name : 'checkpoint', rewind: this.config.toolName }
  }

  /**
   * Folds the exploration since the agent's session's latest checkpoint mark.
   * @param {any} agent the agent that owns the session (its options route the report as a last resort)
   * @param {AbortSignal} [signal]
   * @param {{callId?: string, program?: string}} [options] the rewind tool call's id, when called
   *   from it; `program`: the tool whose program called it (block mode's `block_run_code`, Code
   *   Mode's `run_code`), so the report's recall hint spells the call as a program writes it
   * @returns {Promise<RewindResult>}
   */
  async rewind(agent, signal, options = {}) {
    const session = agent?.session
    if (!session) throw new Error('rewind needs an agent with a session')
    const config = this.config
    let used = /** @type {'llm' | 'extractive'} */ (config.summarizer)
    const checkpoint = this.ctx.checkpoint
    // The mark the fold will start from, for its objective (read from memory; the addon reads it
    // again under the session's fold lock, and only a fold of that mark uses it).
    const latest = await Promise.resolve()
      .then(() => checkpoint.latestMark(session.id))
      .catch(() => undefined)
    const llm = () => llmSummarizer({ llm: this.ctx.llm, session, agent, config, signal, mark: latest })
    const extractive = () => extractiveSummarizer({ session, language: config.reportLanguage })
    const summarize =
      config.summarizer === 'extractive'
        ? extractive()
        : config.fallback === 'extractive'
          ? fallbackSummarizer(llm(), extractive(), config.maxSummarizationRetries, () => (used = 'extractive'))
          : llm()
    // dsh-fold's checkpoint: its store, read and stamped natively. Another checkpoint service
    // (the reference's): its own latestMark and completeFold, called by the addon.
    const store = checkpoint.store
    const marks = typeof store === 'string' || typeof store?.path === 'string' ? store : checkpoint
    try {
      const frame = (/** @type {number} */ markId) =>
        reportFrame({ id: markId, objective: latest?.id === markId ? latest.objective : null }, used === 'extractive', config.reportLanguage)
      const hint = (/** @type {number} */ markId) => recallHint(this.ctx, { fold: markId }, config.reportLanguage, { program: options.program })
      const metered = this.meter !== undefined
      // Waits out another producer's live compaction bracket, within the report's time bound.
      const host = await foldHost(this.ctx, session, summarize, { ...options, frame, hint, metered, timeoutMs: config.reportTimeoutMs, signal })
      const result = await addon.rewind(marks, session.id, host, {
        maxSummarizationRetries: config.maxSummarizationRetries,
        signal,
        // The fold happened; only the store's record of it is missing, and the next rewind (which
        // the turn guard asks for while the mark reads active) finishes it.
        onStampError: (/** @type {Error} */ error) => this.ctx.logger.warn('rewind: %s', error.message),
      })
      // A repaired fold (committed before a crash) is counted from its report on the surface.
      if (!host.committed) {
        const repaired = host.repaired(result.markId)
        result.reportChars = repaired.reportChars
        if (metered) result.tokensFreed = repaired.tokensFreed
      }
      this.failures.delete(session.id)
      return used === 'extractive' ? { ...result, report: 'extractive' } : result
    } catch (e) {
      // A cancelled rewind rejects with the signal's reason itself, as `fetch` does.
      if (/** @type {any} */ (e)?.code === 'ABORTED' && signal?.aborted) throw signal.reason
      await this.failed(session, e, options.callId)
      throw e
    }
  }

  /**
   * Records a failed fold: how many times the same transient failure hit the same checkpoint (the
   * second time its text says to stop retrying), and whether the guard must stay silent — after a
   * failure no retry can fix (`UNFIXABLE`, a misconfigured report call, a transient failure met
   * twice) — until new exploration lands.
   * Not `#private`: `rewind()` runs with `this` bound to cordis's tracing proxy.
   * @param {any} session @param {unknown} e @param {string} [callId] the rewind call's id
   */
  async failed(session, e, callId) {
    const code = /** @type {any} */ (e)?.code
    const mark = await this.ctx.checkpoint.latestMark(session.id).catch(() => null)
    if (!mark || mark.foldedAt !== null) return
    let again = false
    if (TRANSIENT.has(code) && !misconfigurationOf(e)) {
      const before = this.failures.get(session.id)
      const count = before?.markId === mark.id && before.code === code ? before.count + 1 : 1
      this.failures.set(session.id, { markId: mark.id, code, count })
      again = count >= 2
    }
    if (UNFIXABLE.has(code) || misconfigurationOf(e) || again) {
      this.unfoldable.set(session.id, { markId: mark.id, seq: session.seq, calls: new Set(callId === undefined ? [] : [callId]) })
    }
  }

  /**
   * What a failed fold's text is built from: the code, the underlying message, the checkpoint's
   * state now, what the user must configure, whether the same failure already happened.
   * @param {any} session @param {any} e
   * @returns {Promise<import('./words.js').FailureFacts>}
   */
  async failureFacts(session, e) {
    const code = typeof e?.code === 'string' ? e.code : 'INTERNAL'
    /** @type {import('./words.js').MarkState} */
    let state = 'unknown'
    let mark = null
    try {
      mark = (await this.ctx.checkpoint.latestMark(session.id)) ?? null
      state = !mark ? 'none' : mark.foldedAt === null ? 'open' : 'folded'
    } catch {
      // An unreadable store (STORE_*): the state stays unknown.
    }
    const cause = e?.cause instanceof Error ? e.cause : undefined
    const detail = String(cause?.message ?? e?.message ?? '').replace(/;? *nothing was (folded|written)[^;]*$/, '')
    const failure = this.failures.get(session.id)
    return {
      code,
      detail,
      mark: mark ? { id: mark.id, objective: mark.objective ?? null } : null,
      state,
      ...(misconfigurationOf(e) ? { misconfigured: misconfigurationOf(e) } : {}),
      again: Boolean(mark && failure?.markId === mark.id && failure.code === code && failure.count >= 2),
    }
  }

  /** @param {{agent: any, turn: number}} payload */
  #guard({ agent, turn }) {
    const session = agent?.session
    if (!session || this.#warned.get(agent) === turn) return
    // A mark whose fold the log holds is folded, even if its stamp was lost (./open-mark.js).
    return openMark(this.ctx.checkpoint, session, this.ctx.logger).then(
      (mark) => {
        if (!mark || this.#silenced(session, mark)) return
        this.#warned.set(agent, turn)
        agent.inject(
          createUserMessage({
            content: [{ type: 'text', text: this.words.guard(mark, this.names()) }],
            source: REWIND_GUARD_SOURCE,
          }),
        )
        // Resolve to nothing: a truthy value would stop the other turn-stopping listeners.
      },
      // An unreadable store (STORE_*): a rejected listener would end every turn with an error;
      // the guard stands aside instead, and `checkpoint`/`rewind` report the store's error.
      () => undefined,
    )
  }

  /**
   * Whether the guard stays silent for `mark`: it had nothing to fold, and no tool result other
   * than a rewind's has landed since (a rewind's own result is not exploration).
   * @param {any} session @param {{id: number}} mark
   */
  #silenced(session, mark) {
    const quiet = this.unfoldable.get(session.id)
    if (!quiet || quiet.markId !== mark.id) return false
    const log = eventLog(session)
    const rewinds = new Set()
    for (let seq = quiet.seq; seq < log.length; seq++) {
      const event = log[seq]
      if (event.type === 'assistant/message') {
        for (const block of event.data?.message?.content ?? []) {
          if (block?.type === 'tool-call' && block.name === this.config.toolName) rewinds.add(block.id)
        }
      } else if (event.type === 'tool/result') {
        const message = event.data?.message
        const callId = message?.source?.callId ?? message?.content?.[0]?.toolCallId
        if (!rewinds.has(callId) && !quiet.calls.has(callId)) {
          this.unfoldable.delete(session.id)
          return false
        }
      }
    }
    return true
  }

  #tool() {
    return defineTool({
      name: this.config.toolName,
      description: this.words.rewindTool(this.names()),
      parameters: {},
      output: {
        schema: {
          type: 'object',
          properties: {
            markId: { type: 'integer', required: true },
            foldedNodes: { type: 'integer', required: true },
            start: { type: 'integer', required: true },
            end: { type: 'integer', required: true },
            foldedChars: { type: 'integer', required: true },
            reportChars: { type: 'integer', required: true },
            tokensFreed: { type: 'integer' },
            report: { type: 'string', enum: ['extractive'] },
          },
          additionalProperties: false,
        },
        render: (/** @type {any} */ _args, /** @type {RewindResult} */ value) => [{ type: 'text', text: renderResult(value, this.config.reportLanguage) }],
      },
      presentCall: () => ({ card: 'generic', title: 'Rewind', kind: 'other' }),
      execute: async (/** @type {any} */ _args, /** @type {any} */ exec) => {
        if (!exec.agent?.session) throw new Error('rewind needs an owning agent session')
        try {
          return await this.rewind(exec.agent, exec.signal, { callId: exec.callId, program: programToolOf(exec) })
        } catch (e) {
          if (!isRewindError(e)) throw e
          const facts = await this.failureFacts(exec.agent.session, e)
          throw toToolError(e, () => failureText(facts, this.names(), this.config.reportLanguage))
        }
      },
    })
  }
}
