/**
 * @module plugin/compaction/compaction
 * `dsh-fold/compaction`: a DSH compaction backend (`ctx.compaction`, a `CompactionEngine` from
 * `@deepseek-ai/dsh-compaction`), a drop-in for dsh-base's `compaction-basic` row that knows the
 * model's structure and needs no model call.
 *
 * Contract (DSH's, `@deepseek-ai/dsh-compaction` README "Surface contract" and "Blocking"):
 * - one transaction for every entry point (`compactIfNeeded`, `compactNow`, `compactRegion`):
 *   the range is validated at commit time (balanced edges, checked with the package's
 *   `toolPairingBalancedBefore/After` on the surface as it is then), the durable lock checked — a live
 *   `compaction/start` (no end, no later `session/end-seed`) is `busy` — and a rewind holding the
 *   session's fold lock makes a compaction decline (`busy` for `/compact`, `null` under
 *   pressure); then `compaction/start` is appended synchronously, the summary written, and
 *   `compaction/summary` (range, shadowed seqs, the meter's shadow price, provider/model),
 *   the replacement `user/message` (`compactCheckpointSource(compactionId)`, `surfaceOp:
 *   replace`, `sourceEventSeqs` [start, summary, ...shadowed]) and `compaction/end` follow.
 *   Any failure after the start makes exactly one `compaction/end {error}` attempt. With the
 *   extractive summarizer nothing yields between the start and the end.
 * - automatic brackets belong to the open turn; `/compact`'s (`compactNow`) to no turn
 *   (`turn: null`, idle admission reserved through `agent.runMaintenance`, flushed before it
 *   resolves); failures are `ManualCompactionError`s (`busy | cancelled | changed | summary |
 *   commit | persistence`).
 * - pressure at step boundaries (`agent/pre-step`) from `ctx.tokenMeter.measure()` against the
 *   routed model's context window (`ctx.llm.resolveModelInfo`), with compaction-basic's policy
 *   keys; provider context overflow (`agent/request-error`, `CONTEXT_WINDOW_EXCEEDED`) retried
 *   after a reduction, at most `maxOverflowRetries` times per idle period.
 *
 * What is new is the policy (`crates/fold-core/src/compaction/mod.rs`, through the addon's
 * `planCompaction` on the session's mirror, with what the mirror does not keep beside it:
 * overlay.js): where the range ends and what the summary carries; `summary.js` writes it.
 */
import { randomUUID } from 'node:crypto'

import { CompactionEngine, CompactionId, ManualCompactionError, compactCheckpointSource, toolPairingBalancedAfter, toolPairingBalancedBefore } from '@deepseek-ai/dsh-compaction'
import { CONTEXT_WINDOW_EXCEEDED_CODE, createUserMessage, errorChain } from '@deepseek-ai/dsh-llm'

import { addon } from '../shared/addon.js'
import { Config, budgets, policyFor, resolveConfig, summaryCap } from './config.js'
import { eventLog } from '../shared/session.js'
import { openTurn } from './lock.js'
import { callBlockIds } from '../block/args.js'
import { liveCompaction, mirrorOf, mountMirror, trackBlockTool, useMeter } from '../shared/mirror.js'
import { compactionOverlay } from './overlay.js'
import { openMark } from '../fold/open-mark.js'
import { warmReportFacts } from './report-facts.js'
import { OWN_MARKER } from './source.js'
import { composeSummary, llmSummary, routeOf } from './summary.js'
import { languageOf } from '../shared/language.js'

export { Config }

/** The provider/model `compaction/summary` names for a summary written without a model call. */
export const EXTRACTIVE_ROUTE = Object.freeze({ provider: 'dsh-fold', model: 'extractive' })

/** A summary that could not be written smaller than its range, or whose call failed. */
class SummaryError extends Error {}
/** The range changed while an `llm` summary was being written. */
class ChangedError extends Error {}

/** @param {any} session */
const routedTarget = (session) => {
  const c = session.requestHeader?.()?.config
  return c?.provider && c?.model ? { provider: c.provider, model: c.model } : undefined
}

/** The `dsh-fold/compaction` backend. */
export default class FoldCompactionEngine extends CompactionEngine {
  static inject = ['llm', 'tokenMeter', 'sessions']
  static Config = Config

  /** Not `#private`: cordis calls service methods with `this` bound to its tracing proxy. */
  overflowRetries = new WeakMap()
  overflowAgents = new WeakMap()
  warnedTargets = new Set()

  /** @param {any} ctx @param {Record<string, any>} [config] */
  constructor(ctx, config = {}) {
    super(ctx)
    this.config = resolveConfig(config)
    // The policy reads each session's mirror (fed as events are appended): priced by DSH's
    // meter, block ids read off `blockToolName`'s calls.
    mountMirror(ctx)
    ctx.effect(() => useMeter(ctx.tokenMeter), 'dsh-fold/compaction: token meter')
    ctx.effect(() => trackBlockTool(this.config.blockToolName, (/** @type {unknown} */ args) => callBlockIds(args)), 'dsh-fold/compaction: block ids')
    if (this.config.auto) this._registerAutomatic()
  }

  _registerAutomatic() {
    const { ctx } = this
    const log = (/** @type {any} */ r, /** @type {string} */ why) =>
      ctx.logger?.info?.(`compaction (${why}): ${r.shadowedSeqs.length} surface nodes (seqs ${r.shadowedRange.start}-${r.shadowedRange.end}, ~${r.shadowedTokenCount} tokens) into ~${r.foldCompaction?.summaryTokens ?? '?'} tokens`)
    ctx.on('agent/pre-step', async (/** @type {any} */ { agent, signal }, /** @type {() => any} */ next) => {
      if (!signal?.aborted) {
        try {
          const result = await this.compactIfNeeded(agent, 'pressure', signal)
          if (result) log(result, 'step pressure')
        } catch (error) {
          const key = /** @type {any} */ (error)?.targetKey
          if (key === undefined || !this.warnedTargets.has(key)) {
            if (key !== undefined) this.warnedTargets.add(key)
            ctx.logger?.warn?.(`step compaction failed: ${/** @type {Error} */ (error)?.message ?? error}; continuing the turn`)
          }
        }
      }
      return next()
    })
    ctx.on('agent/status', (/** @type {any} */ { agent, status }) => {
      if (status === 'idle') this.overflowRetries.delete(agent)
    })
    ctx.on('session/event', (/** @type {any} */ session, /** @type {any} */ event) => {
      // Read each new work message for the report after its step, outside the append, so a
      // compaction does not read a long range inside the step boundary it runs at.
      if (event.type === 'step/end') queueMicrotask(() => this._warm(session))
      if (event.type !== 'assistant/message') return
      const agent = this.overflowAgents.get(session)
      if (agent !== undefined) this.overflowRetries.delete(agent)
    })
    ctx.on('agent/request-error', async (/** @type {any} */ { agent, failure, signal }, /** @type {() => any} */ next) => {
      if (failure?.code !== CONTEXT_WINDOW_EXCEEDED_CODE || signal?.aborted) return next()
      this.overflowAgents.set(agent.session, agent)
      const target = routedTarget(agent.session)
      if (!target) return next()
      const retries = this.overflowRetries.get(agent) ?? 0
      if (retries >= policyFor(this.config, target).maxOverflowRetries) return next()
      const generation = agent.session.surface.replaceGeneration
      let result = null
      try {
        result = await this.compactIfNeeded(agent, 'context-overflow', signal)
      } catch (error) {
        ctx.logger?.warn?.(`context-overflow compaction failed: ${/** @type {Error} */ (error)?.message ?? error}`)
      }
      if (signal?.aborted || agent.session.surface.replaceGeneration <= generation) return next()
      if (result) log(result, 'context overflow recovery')
      this.overflowRetries.set(agent, retries + 1)
      return { kind: 'retry' }
    })
  }

  /** @param {any} session */
  _warm(session) {
    try {
      // The extractive summary condenses work runs from facts read once per message, here (the
      // llm summarizer reads them only when it falls back).
      if (this.config.summarizer === 'extractive') warmReportFacts(session)
    } catch (error) {
      this.ctx.logger?.warn?.(`dsh-fold/compaction: reading the session's new messages failed: ${/** @type {Error} */ (error)?.message ?? error}`)
    }
  }

  /**
   * Anchors (log lengths) of the session's active checkpoint marks, when a checkpoint service
   * is mounted (dsh-fold's, or the reference's `latestMark`).
   * @param {any} session @returns {Promise<number[]>}
   */
  async _anchors(session) {
    const checkpoint = this.ctx.get?.('checkpoint')
    if (typeof checkpoint?.latestMark !== 'function') return []
    try {
      // Open until its fold is in the log, whatever the store says (../fold/open-mark.js).
      const mark = await openMark(checkpoint, session, this.ctx.logger)
      return mark && Number.isInteger(mark.logLength) ? [mark.logLength] : []
    } catch {
      // An unreadable checkpoint store: plan as if no mark were active (the rewind reports the store's error).
      return []
    }
  }

  /**
   * Plans on the session as it is now.
   * @param {any} session @param {'pressure' | 'context-overflow' | 'manual'} trigger
   * @param {{thresholdTokens?: number, retainTokens?: number, contextWindow?: number}} pressure
   * @param {number[]} anchors
   * @param {any} [measured] a `tokenMeter.measure(session)` already taken: reused while the log
   *   has not grown since (the meter clones the whole surface at every call)
   */
  _plan(session, trigger, pressure, anchors, measured) {
    const measurement = measured?.logRevision === eventLog(session).length ? measured : this.ctx.tokenMeter.measure(session)
    const params = {
      trigger,
      totalTokens: measurement.totalTokens,
      thresholdTokens: pressure.thresholdTokens ?? 0,
      retainTokens: pressure.retainTokens ?? 0,
      maxSummaryTokens: summaryCap(this.config, pressure.contextWindow),
      pasteChars: this.config.pasteChars,
      intentChars: this.config.intentChars,
      namesChars: this.config.namesChars,
    }
    const plan = addon.planCompaction(mirrorOf(session).native, params, compactionOverlay(session, anchors))
    return { plan, measurement }
  }

  /**
   * The routed model's context window, when its adapter knows it (never fails: a manual or
   * overflow compaction needs none).
   * @param {any} session @param {any} agent @param {AbortSignal} [signal]
   */
  async _contextWindow(session, agent, signal) {
    const target = routedTarget(session) ?? routeOf(session, agent)
    if (!target) return undefined
    const info = await this.ctx.llm.resolveModelInfo(target.provider, target.model, signal).catch(() => undefined)
    const window = info?.context?.contextWindow
    return Number.isInteger(window) && window > 0 ? window : undefined
  }

  /**
   * @param {any} agent @param {'pressure' | 'context-overflow'} trigger @param {AbortSignal} signal
   * @returns {Promise<any>}
   */
  async compactIfNeeded(agent, trigger, signal) {
    const session = agent.session
    const target = routedTarget(session)
    if (!target) return null
    if (addon.foldInProgress(String(session.id))) return null
    const policy = policyFor(this.config, target)
    if (trigger === 'context-overflow') {
      const anchors = await this._anchors(session)
      const contextWindow = await this._contextWindow(session, agent, signal)
      const { plan, measurement } = this._plan(session, 'context-overflow', { contextWindow }, anchors)
      if (!plan) return null
      return this._transact(agent, plan, measurement, { owner: 'turn', trigger, signal, policy })
    }
    const info = await this.ctx.llm.resolveModelInfo(target.provider, target.model, signal)
    const targetKey = `${target.provider}/${target.model}`
    if (liveCompaction(session) !== undefined) throw new ManualCompactionError('busy', 'automatic pressure compaction: another compaction of this session is in progress')
    // Read at every step boundary (each event once), so the bracket's owner is known at once
    // when a compaction comes, not by reading every event since the last one.
    openTurn(session)
    const contextWindow = info?.context?.contextWindow
    if (contextWindow === undefined) throw Object.assign(new Error(`dsh-fold/compaction: no context capacity for ${targetKey}; configure contextWindow on that adapter model`), { targetKey })
    let spec
    try {
      spec = budgets(policy, contextWindow, targetKey)
    } catch (e) {
      throw Object.assign(/** @type {Error} */ (e), { targetKey })
    }
    // The step boundary's common case, below the threshold, costs one measurement; above it,
    // that measurement is the plan's too (taken again only if the log grew meanwhile).
    let measured = this.ctx.tokenMeter.measure(session)
    if (measured.totalTokens < spec.thresholdTokens) return null
    const anchors = await this._anchors(session)
    let result = null
    for (let attempt = 0; attempt <= policy.compactionRetries; attempt++) {
      const { plan, measurement } = this._plan(session, 'pressure', { ...spec, contextWindow }, anchors, measured)
      if (measurement.totalTokens < spec.thresholdTokens) return result
      if (!plan) return result
      result = await this._transact(agent, plan, measurement, { owner: 'turn', trigger, signal, policy })
      // The meter prices the replace as the range's nodes out and the summary in (its surface
      // fold): when that is under the threshold the pass relieved it, without measuring again.
      if (measurement.totalTokens - result.shadowedTokenCount + result.foldCompaction.summaryTokens < spec.thresholdTokens) return result
      measured = this.ctx.tokenMeter.measure(session)
      if (measured.totalTokens < spec.thresholdTokens) return result
    }
    throw new Error(`compaction still above threshold after ${policy.compactionRetries + 1} compaction pass(es) (${measured.totalTokens} estimated tokens >= threshold ${spec.thresholdTokens})`)
  }

  /**
   * `/compact`: compact useful history below any pressure, between turns.
   * @param {any} agent @param {AbortSignal} signal @param {string} [sourceCommandId]
   */
  compactNow(agent, signal, sourceCommandId) {
    signal.throwIfAborted()
    try {
      return agent.runMaintenance(async (/** @type {AbortSignal} */ agentSignal) => {
        const operation = AbortSignal.any([agentSignal, signal])
        try {
          operation.throwIfAborted()
          const session = agent.session
          if (addon.foldInProgress(String(session.id))) throw new ManualCompactionError('busy', 'manual compaction: a rewind of this session is in progress')
          const anchors = await this._anchors(session)
          const contextWindow = await this._contextWindow(session, agent, operation)
          const { plan, measurement } = this._plan(session, 'manual', { contextWindow }, anchors)
          if (!plan) return null
          const target = routedTarget(session) ?? routeOf(session, agent)
          return await this._transact(agent, plan, measurement, {
            owner: null,
            trigger: 'manual',
            signal: operation,
            sourceCommandId,
            policy: target ? policyFor(this.config, target) : this.config,
            flush: () => this.ctx.sessions.flush(session),
          })
        } catch (error) {
          if (agentSignal.aborted && operation.reason === agentSignal.reason) throw new ManualCompactionError('cancelled', 'manual compaction was cancelled', { cause: error })
          operation.throwIfAborted()
          throw error
        }
      })
    } catch (error) {
      throw new ManualCompactionError('busy', 'manual compaction requires an idle agent with no waking queued work', { cause: error })
    }
  }

  /**
   * Compacts surface nodes `[start, end]` (seqs, by surface position) of `agent.session`.
   * @param {number} start @param {number} end @param {any} agent @param {AbortSignal} [signal]
   */
  async compactRegion(start, end, agent, signal) {
    const session = agent.session
    const nodes = session.surface.nodes
    const startPos = nodes.indexOf(start)
    const endPos = nodes.indexOf(end)
    if (startPos < 0) throw new Error(`compactRegion: start seq ${start} not found in surface`)
    if (endPos < 0) throw new Error(`compactRegion: end seq ${end} not found in surface`)
    if (startPos > endPos) throw new Error(`compactRegion: start seq ${start} (position ${startPos}) is after end seq ${end} (position ${endPos}) on the surface`)
    if (!toolPairingBalancedBefore(session, start)) throw new Error(`compactRegion: start seq ${start} is not a balanced boundary (would split a step's tool-call/result pair)`)
    if (!toolPairingBalancedAfter(session, end)) throw new Error(`compactRegion: end seq ${end} is not a balanced boundary (would split a step, or the step is still open)`)
    if (liveCompaction(session) !== undefined) throw new ManualCompactionError('busy', 'compaction: compaction already in progress; the session compaction lock is already active')
    const anchors = await this._anchors(session)
    const contextWindow = await this._contextWindow(session, agent, signal)
    // From here to the bracket's start nothing yields: the range validated above may have
    // moved while the awaits ran, so it is found again on the surface as it is now.
    const nowStart = session.surface.nodes.indexOf(start)
    const nowEnd = session.surface.nodes.indexOf(end)
    if (nowStart !== startPos || nowEnd !== endPos) throw new Error(`compactRegion: the range ${start}..${end} moved on the surface while the compaction was prepared`)
    const measurement = this.ctx.tokenMeter.measure(session)
    const plan = addon.planCompactionRange(
      mirrorOf(session).native,
      { trigger: 'manual', totalTokens: measurement.totalTokens, thresholdTokens: 0, retainTokens: 0, maxSummaryTokens: summaryCap(this.config, contextWindow), pasteChars: this.config.pasteChars, intentChars: this.config.intentChars, namesChars: this.config.namesChars },
      startPos,
      endPos + 1,
      compactionOverlay(session, anchors),
    )
    const target = routedTarget(session) ?? routeOf(session, agent)
    return this._transact(agent, plan, measurement, { owner: 'turn', trigger: 'region', signal, policy: target ? policyFor(this.config, target) : this.config })
  }

  /**
   * The one transaction: lock, bracket, summary, commit (module docs).
   * @param {any} agent @param {import('../../index.js').CompactionPlan} plan @param {any} measurement
   * @param {{owner: 'turn' | null, trigger: string, signal?: AbortSignal, sourceCommandId?: string, policy: any, flush?: () => Promise<void>}} options
   */
  async _transact(agent, plan, measurement, { owner, trigger, signal, sourceCommandId, policy, flush }) {
    const session = agent.session
    const manual = owner === null
    if (manual) signal?.throwIfAborted()
    const held = liveCompaction(session)
    if (held !== undefined) throw new ManualCompactionError('busy', `${trigger} compaction: another compaction of this session is in progress (compaction/start at seq ${held})`)
    if (addon.foldInProgress(String(session.id))) throw new ManualCompactionError('busy', `${trigger} compaction: a rewind of this session is in progress`)
    let turn = null
    if (manual) {
      if (openTurn(session) !== null) throw new ManualCompactionError('busy', 'manual compaction: the session already has an open turn')
    } else {
      turn = openTurn(session)
      if (turn === null) throw new Error('compaction: no open turn — automatic compaction events must be enclosed in a turn')
    }
    const seqs = Array.from(plan.seqs)
    // DSH's own pairing rule on the range as the surface has it now, at commit time for every
    // entry point (the plan was made on the mirror): an unbalanced cut is refused before the
    // bracket, so nothing is written.
    if (!pairingBalanced(session, seqs)) {
      const why = new Error(`${trigger} compaction: the planned range ${plan.start}..${plan.end} is not balanced by DSH's toolPairingBalancedBefore/After (it would split a tool call from its result); nothing was written`)
      throw manual ? new ManualCompactionError('commit', 'manual compaction did not commit cleanly', { cause: why }) : why
    }
    const shadowedTokenCount = measurement.nodes.slice(plan.startPos, plan.endPos).reduce((n, /** @type {any} */ node) => n + node.tokens, 0)
    const before = [...session.surface.nodes]
    const compactionId = CompactionId(randomUUID())
    const lifecycle = { compactionId, ...(sourceCommandId === undefined ? {} : { sourceCommandId }), turn }
    const startEvent = session.append('compaction/start', lifecycle)
    let stage = 'summary'
    let closed = false
    /** @type {{error: unknown, stage: string} | undefined} */
    let failure
    let result
    try {
      const written = await this._summarize(agent, plan, { compactionId: String(compactionId), signal, policy, seqs })
      if (manual) signal?.throwIfAborted()
      if (written.waited && !this._stable(session, seqs, before, manual)) throw new ChangedError('compaction: the selected span changed while the summary was written')
      const source = {
        ...compactCheckpointSource(compactionId, sourceCommandId),
        [OWN_MARKER]: { trigger, summarizer: written.summarizer, splits: plan.splits, degraded: plan.degraded, items: written.counts },
      }
      const message = createUserMessage({ content: written.content, source })
      const summaryTokens = this.ctx.tokenMeter.estimateMessage(message)
      if (summaryTokens >= shadowedTokenCount) throw new SummaryError(`summary is not smaller than the shadowed content (${summaryTokens} estimated tokens >= ${shadowedTokenCount})`)
      stage = 'commit'
      const summaryEvent = session.append('compaction/summary', {
        compactionId,
        ...(sourceCommandId === undefined ? {} : { sourceCommandId }),
        summary: message.content,
        ...(written.llm ? { rawOutput: written.llm.rawOutput, llmStreamCall: true } : {}),
        shadowedRange: { start: plan.start, end: plan.end },
        shadowedSeqs: seqs,
        shadowedTokenCount,
        provider: written.llm?.provider ?? EXTRACTIVE_ROUTE.provider,
        model: written.llm?.model ?? EXTRACTIVE_ROUTE.model,
        ...(written.llm ? { maxTokens: written.llm.maxTokens } : {}),
        ...(written.llm?.usage ? { usage: written.llm.usage } : {}),
      })
      session.append('user/message', message, {
        surfaceOp: { op: 'replace', start: plan.start, end: plan.end },
        sourceEventSeqs: [startEvent.seq, summaryEvent.seq, ...seqs],
      })
      const endEvent = session.append('compaction/end', lifecycle)
      closed = true
      result = {
        compactionId,
        ...(sourceCommandId === undefined ? {} : { sourceCommandId }),
        startSeq: startEvent.seq,
        summarySeq: summaryEvent.seq,
        endSeq: endEvent.seq,
        summary: message.content,
        shadowedRange: { start: plan.start, end: plan.end },
        shadowedSeqs: seqs,
        shadowedTokenCount,
        foldCompaction: { trigger, summarizer: written.summarizer, summaryTokens, splits: plan.splits, degraded: plan.degraded, relieves: plan.relieves },
      }
    } catch (error) {
      failure = { error, stage }
      if (!closed) {
        try {
          session.append('compaction/end', { ...lifecycle, error: errorChain(error) })
          closed = true
        } catch (closeError) {
          // The unmatched start stays: the intentional busy signal (DSH's "Blocking").
          failure = { error: closeError, stage: 'commit' }
        }
      }
    }
    let flushFailure
    if (closed && flush) {
      try {
        await flush()
      } catch (e) {
        flushFailure = e
      }
    }
    if (manual) signal?.throwIfAborted()
    if (failure) {
      if (!manual) throw failure.error
      if (failure.stage === 'commit') throw new ManualCompactionError('commit', 'manual compaction did not commit cleanly', { cause: failure.error })
      if (failure.error instanceof ChangedError) throw new ManualCompactionError('changed', 'the compacted history changed during manual compaction', { cause: failure.error })
      throw new ManualCompactionError('summary', 'manual compaction could not produce a smaller summary', { cause: failure.error })
    }
    if (flushFailure) throw new ManualCompactionError('persistence', 'manual compaction durability checkpoint failed', { cause: flushFailure })
    return result
  }

  /**
   * Writes the summary: extractive (synchronous), or one `llm` call with the extractive summary
   * as its fallback (a misconfigured route still fails).
   * @param {any} agent @param {any} plan
   * @param {{compactionId: string, signal?: AbortSignal, policy: any, seqs: number[]}} options
   */
  async _summarize(agent, plan, { compactionId, signal, policy, seqs }) {
    // The row's language, else the rewind row's reportLanguage (rows mount in any order).
    const language = languageOf(this.ctx, this.config.language)
    // In block mode recall is reachable only from a program: the hint spells the call so.
    const program = this.ctx.get?.('tools')?.get?.(this.config.blockToolName) ? this.config.blockToolName : undefined
    if (this.config.summarizer === 'llm') {
      try {
        const route = policy.summarizationProvider ? { provider: policy.summarizationProvider, model: policy.summarizationModel } : undefined
        const llm = await llmSummary({
          llm: this.ctx.llm,
          session: agent.session,
          agent,
          seqs: Uint32Array.from(seqs),
          route,
          maxTokens: policy.maxTokens,
          language,
          timeoutMs: this.config.summaryTimeoutMs,
          signal,
        })
        const composed = composeSummary(this.ctx, agent.session, plan, { compactionId, language, llmText: llm.text, program })
        return { ...composed, summarizer: 'llm', llm, waited: true }
      } catch (error) {
        if (signal?.aborted || /** @type {any} */ (error)?.misconfigured) throw error
        this.ctx.logger?.warn?.(`compaction summary call failed (${/** @type {Error} */ (error)?.message ?? error}); writing the extractive summary instead`)
        return { ...composeSummary(this.ctx, agent.session, plan, { compactionId, language, program }), summarizer: 'extractive', llm: undefined, waited: true }
      }
    }
    return { ...composeSummary(this.ctx, agent.session, plan, { compactionId, language, program }), summarizer: 'extractive', llm: undefined, waited: false }
  }

  /**
   * After an `llm` summary's wait: automatic compaction wants the whole surface unchanged (DSH's
   * rule inside a turn); `/compact` only the selected span (context injected meanwhile stays).
   * @param {any} session @param {number[]} seqs @param {number[]} before the surface at the start
   * @param {boolean} manual
   */
  _stable(session, seqs, before, manual) {
    const nodes = session.surface.nodes
    if (!manual) return nodes.length === before.length && before.every((s, i) => nodes[i] === s)
    const at = nodes.indexOf(seqs[0])
    if (at < 0 || !seqs.every((s, i) => nodes[at + i] === s)) return false
    return pairingBalanced(session, seqs)
  }
}

/**
 * Whether a range of surface seqs has balanced edges by DSH's rule: no tool call crosses the cut
 * before its first seq or after its last.
 * @param {any} session @param {number[]} seqs
 */
function pairingBalanced(session, seqs) {
  if (seqs.length === 0) return false
  try {
    return toolPairingBalancedBefore(session, seqs[0]) && toolPairingBalancedAfter(session, seqs[seqs.length - 1])
  } catch {
    // A seq no longer on the surface, or a result without its call: not a cut DSH would take.
    return false
  }
}
