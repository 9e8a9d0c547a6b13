/**
 * @module bench/compaction
 * Figure 11: compaction on long sessions, `dsh-fold/compaction` vs DSH's `compaction-basic`, on
 * the same sessions.
 *
 * Sessions (100k–1M tokens) are made from the recorded trajectory corpus
 * (`__test__/fixtures/trajectories/`, 38 segments, taken in name order and again from the start
 * when a session needs more): one user turn per segment, the segment's recorded assistant
 * messages as the scripted model's replies and its recorded tool outputs as the tools' results.
 * Subtasks are placed as an agent places them: every fourth segment is plain work; one opens
 * with `checkpoint` and stays an active exploration until the next one; one opens with
 * `checkpoint` and ends with `rewind` (a finished exploration, folded by the extractive report);
 * one runs in block mode (each call goes through `block_run_code` tagged with the segment's
 * block id — a stand-in that returns the recorded output: the bench host has no Code Mode).
 * Everything runs through a real `AgentLoop` + `TokenMeter` + `SessionStore` + the real
 * checkpoint/rewind plugins; the model's adapter reports a small context window, so pressure
 * triggers. compaction-basic's summarizer is answered by the same adapter with a scripted
 * summary of basic's usual size (its eight sections, ~6,000 chars).
 *
 * Measured per pressure event and per compaction: wall time of the compaction (ours: the whole
 * `compactIfNeeded` that compacted — measure, snapshot, plan, summary, four appends; basic: the
 * same call with the scripted summary answering at once, so it excludes the model's latency);
 * model calls; whether one pass brought the request under the threshold; of the compacted
 * range's own messages (not those inside earlier summaries), the named paths, commands and
 * error lines kept (bin/report-facts.mjs's definitions), user messages and model-written
 * summaries kept verbatim, and whether recall finds each again; whether the range's end split
 * an active exploration or the block in progress; the tokens basic's summarizer call was sent.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

import '../__test__/helpers/dsh.mjs'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import { LlmRuntime } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import { TokenMeter } from '@deepseek-ai/dsh-token-meter'
import { defineTool } from '@deepseek-ai/dsh-tools'

import { keptCounts, loadSegments, regionFacts } from '../bin/report-facts.mjs'
import FoldCompaction from '../plugin/compaction/compaction.js'
import Checkpoint from '../plugin/fold/checkpoint.js'
import Rewind from '../plugin/fold/rewind.js'
import Recall from '../plugin/recall/recall.js'
import { eventLog } from '../plugin/shared/session.js'
import { bootHost, PressureModel, prompt, textOf } from '../__test__/compaction/harness.mjs'
import { emit, load, log, parseArgs } from './lib/common.mjs'
import { summarize as stats } from './lib/stats.mjs'

const { quick, out, opts } = parseArgs()
const SEGMENTS = loadSegments()
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
const BASIC_SUMMARY = ['## Primary Request and Intent', '## Key Technical Concepts', '## Files and Code', '## Errors and Fixes', '## Pending Jobs', '## Current Work', '## Next Step', '## Critical Context']
  .map((h) => `${h}\n${'- a terse bullet of the kind a summarizer writes, naming a path like src/app/module.py and a command\n'.repeat(6)}`)
  .join('\n')

/**
 * One session's script: per turn, its prompt and its replies.
 * @param {number} tokens
 */
function script(tokens) {
  const turns = []
  let total = 0
  for (let k = 0; total < tokens; k++) {
    const seg = SEGMENTS[k % SEGMENTS.length]
    const round = Math.floor(k / SEGMENTS.length)
    const mode = ['plain', 'mark', 'mark-fold', 'block'][k % 4]
    const block = `seg${k}`
    /** @type {any[]} */
    const replies = []
    /** @type {Map<string, {text: string, isError: boolean}>} */
    const results = new Map()
    if (mode.startsWith('mark')) replies.push({ calls: [{ id: `k${k}-cp`, name: 'checkpoint', args: { objective: `${seg.name}` } }] })
    let pendingText = ''
    for (const m of seg.messages) {
      if (m.role === 'assistant' || m.source?.kind === 'model') {
        const text = m.content.filter((/** @type {any} */ b) => b.type === 'text').map((/** @type {any} */ b) => b.text).join('\n')
        const calls = m.content
          .filter((/** @type {any} */ b) => b.type === 'tool-call')
          .map((/** @type {any} */ b) => {
            const id = `k${k}-${b.id}`
            const args = typeof b.arguments === 'string' ? safeJson(b.arguments) : b.arguments ?? {}
            return mode === 'block' ? { id, name: 'block_run_code', args: { ids: [block], description: b.name, code: `await tools.${b.name}(${JSON.stringify(args)})` } } : { id, name: toolName(b.name), args }
          })
        if (!calls.length) {
          pendingText += (pendingText ? '\n' : '') + text
          continue
        }
        replies.push({ text: [pendingText, text].filter(Boolean).join('\n'), calls })
        pendingText = ''
      } else {
        for (const b of m.content) {
          if (b.type !== 'tool-result') continue
          const text = (b.content ?? []).map((/** @type {any} */ c) => c.text ?? '').join('\n')
          results.set(`k${k}-${b.toolCallId}`, { text, isError: Boolean(b.isError) })
        }
      }
    }
    if (mode === 'mark-fold') replies.push({ calls: [{ id: `k${k}-rw`, name: 'rewind', args: {} }] })
    replies.push({ text: [pendingText, `Finished ${seg.name}${round ? ` (round ${round + 1})` : ''}.`].filter(Boolean).join('\n') })
    const segTokens = Math.ceil(JSON.stringify(seg.messages).length / 4)
    total += segTokens
    turns.push({ prompt: `Task ${k + 1} (${mode}): work through ${seg.name}. Keep every change minimal; report the files you touched.`, replies, results, mode, block })
  }
  return turns
}

/** @param {string} s */
function safeJson(s) {
  try {
    return JSON.parse(s)
  } catch {
    return { raw: s }
  }
}

/** Tool names the bench host registers (checkpoint and rewind are ours). @param {string} name */
const toolName = (name) => (name === 'checkpoint' || name === 'rewind' ? `${name}_recorded` : name)

/**
 * Runs one session through a real agent loop with one backend and collects every compaction.
 * @param {'fold' | 'basic'} backend @param {ReturnType<typeof script>} turns @param {number} window
 */
async function run(backend, turns, window) {
  let turn = 0
  let reply = 0
  const model = new PressureModel({
    contextWindow: window,
    script: () => {
      const t = turns[turn]
      const r = t.replies[Math.min(reply++, t.replies.length - 1)]
      return r
    },
    summarize: () => ({ text: BASIC_SUMMARY }),
  })
  /** @type {any[]} */
  const events = []
  const results = new Map()
  for (const t of turns) for (const [id, r] of t.results) results.set(id, r)
  const names = new Set(turns.flatMap((t) => t.replies.flatMap((r) => (r.calls ?? []).map((/** @type {any} */ c) => c.name))))
  const store = path.join(mkdtempSync(path.join(tmpdir(), 'dsh-fold-bench-compaction-')), 'checkpoint.json')
  /** @type {number[]} */
  const warm = []
  const Timed = timed(backend === 'fold' ? FoldCompaction : BasicCompactionEngine, events, warm)
  const root = await bootHost({
    model,
    backend: 'none',
    before: async (r) => {
      await r.plugin(Checkpoint, { store })
      await r.plugin(Rewind, { summarizer: 'extractive' })
      await r.plugin(Recall, {})
      for (const name of names) {
        if (name === 'checkpoint' || name === 'rewind') continue
        r.tools.register(
          defineTool({
            name,
            description: `Recorded tool ${name}.`,
            parameters: {},
            output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
            execute: async (_args, exec) => {
              const recorded = results.get(exec.callId)
              if (recorded?.isError) throw new Error(recorded.text)
              return recorded?.text ?? ''
            },
          }),
        )
      }
    },
  })
  await root.plugin(Timed, {})
  const { agent } = await root.agents.create({ sessionId: SessionId(`bench-${backend}-${window}`), agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
  for (turn = 0; turn < turns.length; turn++) {
    reply = 0
    await prompt(agent, turns[turn].prompt)
  }
  const session = agent.session
  const compactions = await grade(root, session, events, window, turns)
  const summaryTokens = model.summaryRequests.map((o) => requestTokens(root, o))
  await root.dispose?.()
  return { compactions, events, warm, modelCalls: model.summaryRequests.length, summaryRequestTokens: summaryTokens, surfaceTokens: root.tokenMeter?.measure?.(session)?.totalTokens }
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

/** @param {string} s */
const escapeRe = (s) => `/${s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/`

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
  for (const e of log) {
    if (e.type !== 'compaction/summary') continue
    const replacement = log[e.seq + 1]
    const text = textOf(replacement.data)
    const seqs = e.data.shadowedSeqs
    const messages = []
    const verbatim = []
    for (const s of seqs) {
      const ev = log[s]
      const m = session.deriveEventMessage(ev)
      if (!m) continue
      const source = ev.data?.source
      const replaced = ev.surfaceOp?.op === 'replace'
      if (ev.type === 'user/message' && (source?.kind === 'user' || (replaced && source?.plugin !== 'compact') || source?.blockPtc)) verbatim.push({ seq: s, text: textOf(ev.data) })
      if (!replaced) messages.push(m)
    }
    const facts = regionFacts(messages.map((m) => ({ ...m, role: m.role ?? 'user' })))
    const kept = keptCounts(text, facts)
    if (process.env.BENCH_MISSING) {
      const { missing } = await import('../bin/report-facts.mjs')
      const gone = missing(text, facts)
      // BENCH_MISSING=<file>: every compaction's whole record (its text, what it missed) as a JSON line.
      if (process.env.BENCH_MISSING !== '1') (await import('node:fs')).appendFileSync(process.env.BENCH_MISSING, `${JSON.stringify({ seq: e.seq, text, gone, totals: { paths: facts.paths.length, commands: facts.commands.length, errors: facts.errors.length }, range: e.data.shadowedTokenCount, fold: replacement.data.source.foldCompaction })}\n`)
      else if (gone.paths.length + gone.commands.length) console.error('MISSING', e.seq, JSON.stringify(e.data.summary?.[0]?.text?.length), JSON.stringify({ ...gone, errors: gone.errors.slice(0, 3) }).slice(0, 600), 'items', JSON.stringify(replacement.data.source.foldCompaction?.items), 'degraded', replacement.data.source.foldCompaction?.degraded)
    }
    const verbatimKept = verbatim.filter((v) => text.includes(v.text.slice(0, Math.min(v.text.length, 2000)))).length
    // Recall: every verbatim item and a sample of facts, by this compaction's id.
    const id = e.data.compactionId
    let recallTried = 0
    let recallFound = 0
    const probes = [...verbatim.map((v) => v.text.split('\n').find((l) => l.trim().length > 8)?.trim().slice(0, 80)), ...facts.errors.slice(0, 10), ...facts.paths.slice(0, 5), ...facts.commands.slice(0, 5)].filter(Boolean)
    for (const q of probes) {
      recallTried++
      // A call's arguments are recalled as the model wrote them (JSON): a command with quotes is
      // found in its JSON-escaped form.
      const text = /** @type {string} */ (q).slice(0, 120)
      let found = false
      for (const query of new Set([text, JSON.stringify(text).slice(1, -1)])) {
        const r = await root.recall.recall(session, { compaction: id, query: escapeRe(query) }).catch(() => ({ matches: 0 }))
        if (r.matches > 0) found = true
      }
      if (found) recallFound++
    }
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
      verbatim: { total: verbatim.length, kept: verbatimKept },
      recall: { tried: recallTried, found: recallFound },
      split: { exploration: splitExploration, block: splitBlock },
      threshold,
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
