/**
 * @module bench/compaction
 * Figure 11: compaction on long sessions, `dsh-fold/compaction` vs DSH's `compaction-basic`, on
 * the same sessions.
 *
 * Sessions (100k–1M tokens) are made from the recorded trajectory corpus and replayed through a
 * real agent loop with each backend (`__test__/compaction/replay.mjs` says how: one user turn per
 * segment, subtasks placed as an agent places them, compaction-basic's summarizer answered with a
 * scripted summary of its usual size).
 *
 * Measured per pressure event and per compaction: wall time of the compaction (ours: the whole
 * `compactIfNeeded` that compacted — measure, snapshot, plan, summary, four appends; basic: the
 * same call with the scripted summary answering at once, so it excludes the model's latency);
 * model calls; whether one pass brought the request under the threshold; of the compacted
 * range's own messages (not those inside earlier summaries), the named paths, commands and
 * error lines kept (bin/report-facts.mjs's definitions), user messages and model-written
 * summaries kept verbatim, and whether recall finds each again; whether the range's end split
 * an active exploration or the block in progress; the tokens basic's summarizer call was sent;
 * and the train of thought (`__test__/oracles/train-of-thought.mjs`, with the model's recorded
 * next steps as the oracle): whether the model's latest text before the cut is carried, whether
 * the names it wrote in the range and writes again within its next 6 messages are in the context
 * after the compaction (and, of those the kept tail does not hold, the checkpoint's share), and
 * the checkpoint's own part over the range's new part (what earlier checkpoints in the range
 * carried, on both sides, left out).
 */
import '../__test__/helpers/dsh.mjs'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import { LlmRuntime } from '@deepseek-ai/dsh-llm'
import { TokenMeter } from '@deepseek-ai/dsh-token-meter'

import FoldCompaction from '../plugin/compaction/compaction.js'
import { eventLog } from '../plugin/shared/session.js'
import { compactionsOf, gradeRetention, replay, safeJson, script } from '../__test__/compaction/replay.mjs'
import { gradeCompaction, trainFigures } from '../__test__/oracles/train-of-thought.mjs'
import { emit, load, log, parseArgs } from './lib/common.mjs'
import { summarize as stats } from './lib/stats.mjs'

const { quick, out, opts } = parseArgs()
/** The sessions' sizes (tokens of recorded messages) and the context windows they run under. */
const ALL_RUNS = quick
  ? [{ tokens: 100_000, window: 32_000 }]
  : [
      { tokens: 100_000, window: 32_000 },
      { tokens: 300_000, window: 32_000 },
      { tokens: 1_000_000, window: 32_000 },
      { tokens: 1_000_000, window: 250_000 },
    ]
// Development runs: `--runs 1000000/250000,100000/32000` picks some, `--backends fold` one side.
const RUNS = typeof opts.runs === 'string' ? ALL_RUNS.filter((r) => opts.runs.split(',').includes(`${r.tokens}/${r.window}`)) : ALL_RUNS
const BACKENDS = typeof opts.backends === 'string' ? /** @type {('fold' | 'basic')[]} */ (opts.backends.split(',')) : /** @type {const} */ (['fold', 'basic'])
/**
 * Runs one session through a real agent loop with one backend and collects every compaction.
 * @param {'fold' | 'basic'} backend @param {ReturnType<typeof script>} turns @param {number} window
 */
async function run(backend, turns, window) {
  /** @type {any[]} */
  const events = []
  /** @type {number[]} */
  const warm = []
  const Timed = timed(backend === 'fold' ? FoldCompaction : BasicCompactionEngine, events, warm)
  const { root, session, model, dispose } = await replay({ backend: Timed, turns, window, sessionId: `bench-${backend}-${window}` })
  const compactions = await grade(root, session, events, window, turns)
  const summaryTokens = model.summaryRequests.map((o) => requestTokens(root, o))
  const surfaceTokens = root.tokenMeter?.measure?.(session)?.totalTokens
  await dispose()
  return { compactions, events, warm, modelCalls: model.summaryRequests.length, summaryRequestTokens: summaryTokens, surfaceTokens }
}

/** What DSH's meter prices a request at: system + tools + messages. @param {any} root @param {any} options */
function requestTokens(root, options) {
  let tokens = Math.ceil((options.system?.length ?? 0) / 4) + (options.tools?.length ? Math.ceil(JSON.stringify(options.tools).length / 4) : 0)
  for (const m of options.messages) tokens += root.tokenMeter.estimateMessage(m)
  return tokens
}

/**
 * Where a compaction's time goes, split between the backend's own work and DSH's parts it calls:
 * `append` (the session's appends, with every `session/event` listener they run: DSH's
 * persistence, projections, meter fold and invariant checks), `meter` (`tokenMeter.measure` and
 * `estimateMessage`), `modelInfo` (`llm.resolveModelInfo`). Only the outermost timed call
 * counts (an append's listeners that measure are the append's). Active only inside a timed
 * `compactIfNeeded`.
 */
const clock = { active: false, depth: 0, append: 0, meter: 0, modelInfo: 0 }
const now = () => Number(process.hrtime.bigint()) / 1e6

/**
 * Wraps `owner[key]` so its time inside a timed compaction counts as `part`.
 * @param {any} owner @param {string} key @param {'append' | 'meter' | 'modelInfo'} part
 */
function timePart(owner, key, part) {
  const original = owner[key]
  owner[key] = function (/** @type {any[]} */ ...args) {
    if (!clock.active || clock.depth > 0) return original.apply(this, args)
    clock.depth++
    const t0 = now()
    let result
    try {
      result = original.apply(this, args)
    } finally {
      clock.depth--
      if (!(result instanceof Promise)) clock[part] += now() - t0
    }
    // An async part (resolving model info) is awaited alone: its time is until it settles.
    if (result instanceof Promise) return result.finally(() => (clock[part] += now() - t0))
    return result
  }
}
timePart(TokenMeter.prototype, 'measure', 'meter')
timePart(TokenMeter.prototype, 'estimateMessage', 'meter')
timePart(LlmRuntime.prototype, 'resolveModelInfo', 'modelInfo')

/**
 * The backend class with every `compactIfNeeded` that compacted timed and described: the
 * checkpoint mark active and the block in progress then, how many compactions it made.
 * @param {any} Base @param {any[]} events @param {number[]} warm each `_warm`'s time (ours)
 */
function timed(Base, events, warm) {
  return class extends Base {
    /** Per-step work outside compactions (ours: describing new nodes, reading new messages' report facts). */
    _warm(/** @type {any} */ session) {
      const t0 = now()
      super._warm(session)
      warm.push(now() - t0)
    }

    async compactIfNeeded(/** @type {any} */ agent, /** @type {any} */ trigger, /** @type {any} */ signal) {
      const session = agent.session
      const before = eventLog(session).length
      const mark = await this.ctx.get('checkpoint')?.latestMark(session.id)
      if (!Object.hasOwn(session, 'append')) timePart(session, 'append', 'append')
      Object.assign(clock, { active: true, depth: 0, append: 0, meter: 0, modelInfo: 0 })
      const t0 = now()
      let result
      let error
      try {
        result = await super.compactIfNeeded(agent, trigger, signal)
      } catch (e) {
        error = e
      } finally {
        clock.active = false
      }
      const ms = now() - t0
      const parts = { append: clock.append, meter: clock.meter, modelInfo: clock.modelInfo }
      const log = eventLog(session)
      const made = log.slice(before).filter((e) => e.type === 'compaction/summary').length
      if (made > 0 || error) {
        const measured = this.ctx.tokenMeter.measure(session).totalTokens
        events.push({ trigger, ms, own: ms - parts.append - parts.meter - parts.modelInfo, ...parts, made, error: error ? String(error.message ?? error) : undefined, after: measured, from: before, to: log.length, mark: mark && mark.foldedAt === null ? mark.logLength : undefined })
      }
      if (error) throw error
      return result
    }
  }
}

/**
 * Grades every compaction of `session` (see the module docs).
 * @param {any} root @param {any} session @param {any[]} pressure @param {number} window @param {any[]} turns
 */
async function grade(root, session, pressure, window, turns) {
  const log = eventLog(session)
  const threshold = Math.floor(window * 0.8)
  const out = []
  const blockOf = new Map()
  for (const e of log) {
    if (e.type !== 'assistant/message') continue
    for (const b of e.data.message.content) if (b.type === 'tool-call' && b.name === 'block_run_code') blockOf.set(e.seq, safeJson(b.arguments)?.ids?.[0])
  }
  // The train of thought, against the model's recorded next steps.
  const train = new Map(compactionsOf(session).map((c) => [c.summary.seq, gradeCompaction(c, (m) => root.tokenMeter.estimateMessage(m))]))
  for (const e of log) {
    if (e.type !== 'compaction/summary') continue
    const replacement = log[e.seq + 1]
    const seqs = e.data.shadowedSeqs
    const { kept, verbatim, recall } = await gradeRetention(root, session, e)
    // Splits: the range took nodes of the exploration active then, or of the block in progress.
    const event = pressure.find((p) => e.seq >= p.from && e.seq < p.to)
    const inRange = new Set(seqs)
    const anchor = event?.mark
    const splitExploration = anchor !== undefined && seqs.some((s) => s >= anchor) && session.surface.nodes.length > 0
    const lastBlock = [...blockOf.entries()].filter(([s]) => s < e.seq).at(-1)
    const splitBlock = lastBlock !== undefined && inRange.has(lastBlock[0]) === false && seqs.some((s) => blockOf.get(s) === lastBlock[1])
    out.push({
      seq: e.seq,
      trigger: event?.trigger,
      shadowed: seqs.length,
      shadowedTokens: e.data.shadowedTokenCount,
      summaryTokens: root.tokenMeter.estimateMessage(replacement.data),
      kept,
      verbatim,
      recall,
      split: { exploration: splitExploration, block: splitBlock },
      threshold,
      train: train.get(e.seq),
    })
  }
  return out
}

const results = []
for (const r of RUNS) {
  const turns = script(r.tokens)
  for (const backend of BACKENDS) {
    log(`compaction: ${backend}, ${r.tokens} tokens, window ${r.window}`)
    const res = await run(backend, turns, r.window)
    const pressure = res.events
    const passes = pressure.filter((p) => p.trigger === 'pressure')
    const sum = (/** @type {(c: any) => number} */ f) => res.compactions.reduce((n, c) => n + f(c), 0)
    results.push({
      backend,
      tokens: r.tokens,
      window: r.window,
      turns: turns.length,
      pressureEvents: passes.length,
      onePass: passes.filter((p) => p.made === 1 && !p.error && p.after < Math.floor(r.window * 0.8)).length,
      failed: passes.filter((p) => p.error).map((p) => p.error).slice(0, 5),
      compactions: res.compactions.length,
      ms: stats(pressure.map((p) => p.ms)),
      // The same compactions' time split: the backend's own work, and each DSH part it calls.
      split: {
        own: stats(pressure.map((p) => p.own)),
        append: stats(pressure.map((p) => p.append)),
        meter: stats(pressure.map((p) => p.meter)),
        modelInfo: stats(pressure.map((p) => p.modelInfo)),
      },
      // The per-step preparation it moves out of the compaction (ours only).
      warmMs: backend === 'fold' ? stats(res.warm) : undefined,
      modelCalls: res.modelCalls,
      summaryRequestTokens: stats(res.summaryRequestTokens),
      facts: {
        paths: { kept: sum((c) => c.kept.paths.kept), total: sum((c) => c.kept.paths.total) },
        commands: { kept: sum((c) => c.kept.commands.kept), total: sum((c) => c.kept.commands.total) },
        errors: { kept: sum((c) => c.kept.errors.kept), total: sum((c) => c.kept.errors.total) },
      },
      verbatim: { kept: sum((c) => c.verbatim.kept), total: sum((c) => c.verbatim.total) },
      recall: { found: sum((c) => c.recall.found), tried: sum((c) => c.recall.tried) },
      splits: { exploration: res.compactions.filter((c) => c.split.exploration).length, block: res.compactions.filter((c) => c.split.block).length },
      shadowedTokens: stats(res.compactions.map((c) => c.shadowedTokens)),
      summaryTokens: stats(res.compactions.map((c) => c.summaryTokens)),
      // What the model needs next, from its recorded next steps (basic's summary here is a
      // scripted stand-in, so only ours is graded).
      train: backend === 'fold' ? trainFigures(res.compactions.map((c) => c.train)) : undefined,
    })
    log(JSON.stringify(results.at(-1)))
  }
}

if (quick) {
  // The smoke run's correctness checks: ours compacted without a model call, every event closed.
  const ours = results.find((r) => r.backend === 'fold')
  if (!ours?.compactions) throw new Error('bench compaction: no compaction happened')
  if (ours.modelCalls !== 0) throw new Error('bench compaction: dsh-fold/compaction made a model call')
}
emit(out, { load: { start: load(), end: load() }, runs: results })
