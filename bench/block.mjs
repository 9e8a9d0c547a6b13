/**
 * @module bench/block
 * Block mode, the planning half (issue 11, round 3): what a block summary costs to plan on a
 * 10,000-event session. Planning is one synchronous call on the JS thread: the session's mirror
 * (plugin/shared/mirror.js, fed as events were appended; `withLog` checks it is in step) handed to
 * `planBlockSummary(...)` (the addon reads the block surface off the mirror and applies the rules):
 * no snapshot crosses. Target: median ≤ 50 µs. The commit's four appends and their price are the
 * block plugin's figure: `measureCommit` (bench/lib/block-commit.mjs), run after the planning
 * shapes, `result.commit`.
 *
 * Sessions are real `@deepseek-ai/dsh-session` Sessions in the shape the rc.8 Code Mode loop
 * writes them: per turn `turn/start`, a user prompt, steps of `step/start`, `assistant/chunk`
 * deltas, an `assistant/message` with one `block_run_code` call (sometimes a second, naming
 * another block), `tool/call`, the program's sub-calls (`tool/code-dispatch-start` /
 * `tool/code-dispatch`, log-only), `tool/result`, `step/end`; a block spans 3–10 steps. Two
 * shapes at the same size:
 *
 * - **closed as it goes**: the model closes each block from inside its last program, and the
 *   summary lands right after that program's result (the deferred commit: `compaction/start`,
 *   `compaction/summary`, the replacement `user/message`, `compaction/end`), so the surface
 *   stays short and holds many summaries;
 * - **never closed**: no block is ever summarized, the longest surface a session of that size
 *   has.
 *
 * The measured plan is the normal case: the current block's last program asked for its
 * summary (pending while it ran) and its result has just landed; the plan is a commit.
 *
 * - **warm**: the session's mirror is in step (fed by the listener as events are appended): median
 *   of repeated plans, with the mirror's check and the plan also timed apart;
 * - **first call**: a session the plugin has never seen (the first summary after a restore or a
 *   fork, or in a fresh process): a fresh replay of the recorded session each repetition
 *   (untimed), then one timed plan, whose mirror is described inside it (block mode has every
 *   event described). The first repetition is also the first in the process.
 * - **baseline** in the same run, interleaved with the warm plans: one plain JS pass over the
 *   surface that reads each node's event (the least any JS-side planner does). (Round 2's path, a
 *   v2 snapshot built in JS and decoded by the addon, is gone with the snapshot formats: the
 *   mirror is the planner's only input since issue 31.)
 *
 * - **a flood of ids** (issue 22, item 1): a program passing `block_summary` 200,000 ids for the
 *   price of one call. Before round 3 the planner compared every id with every earlier one on
 *   the JS thread (measured: 20k ids 0.33 s, 200k ids 47 s, every session frozen meanwhile).
 *   Timed: the tool's argument check (`normalizeBlockIds`) and the addon's `planBlockSummary`,
 *   each with 200,000 ids (both refuse the list by its length: `INVALID_ARGUMENT`), and, as the
 *   same run's baseline, a plan at the cap (256 ids, none of them open: `UNKNOWN_BLOCK`, the
 *   most a request may make the planner compare). Target: 200k ids answered in ≤ 50 ms.
 *
 * Checks (also with `--quick`): the plan is a commit whose seqs are exactly the current block's
 * surface nodes and whose `remaining` is as the shape predicts, and committing it leaves every
 * call on the surface with its result.
 */
import { pathToFileURL } from 'node:url'

import { CallId, createAssistantMessage, createToolResultMessage, createUserMessage } from '@deepseek-ai/dsh-llm'
import { Session, SessionId } from '@deepseek-ai/dsh-session'

import { callBlockIds, normalizeBlockIds } from '../plugin/block/args.js'
import { addon } from '../plugin/shared/addon.js'
import { trackBlockTool, withLog } from '../plugin/shared/mirror.js'
import { measureCommit, protocolValid } from './lib/block-commit.mjs'
import { check, emit, load, log, parseArgs } from './lib/common.mjs'
import { prng } from './lib/session.mjs'
import { now, quiesce, summarize, us } from './lib/stats.mjs'


const PROSE =
  'read the parser module then explain how the tokenizer works and close this block before the lexer ' +
  'src/parser.rs src/lexer.rs cargo test passed 12 failed 0 grep -rn fn tokenize const result await tools.read'

/**
 * Records a block-mode session of about `targetEvents` events, ending right after the current
 * block's last program returned (its summary asked for from inside it).
 * @param {number} targetEvents
 * @param {{close?: boolean, seed?: number}} [options] `close`: summarize each block as it ends
 * @returns {{ops: {type: string, data: any, opts?: any}[], session: any, current: string, requestSeq: number, expect: {seqs: number[], remaining: string[]}}}
 */
export function recordBlockSession(targetEvents, { close = true, seed = 0xb10c } = {}) {
  const rand = prng(seed + targetEvents + (close ? 1 : 0))
  const words = PROSE.split(' ')
  const text = (/** @type {number} */ n) => {
    let s = ''
    while (s.length < n) s += `${words[rand.int(0, words.length - 1)]} `
    return s.slice(0, n)
  }
  const session = Session.create(SessionId(`block-bench-${close ? 'closed' : 'open'}`))
  // Block ids tracked while recording (its summaries are planned on the session's mirror); a
  // caller that tracks them already keeps its mirrors as they are.
  const untrack = trackBlockTool('block_run_code', callBlockIds)
  /** @type {{type: string, data: any, opts?: any}[]} */
  const ops = []
  const append = (/** @type {string} */ type, /** @type {any} */ data, /** @type {any} */ opts) => {
    const event = opts === undefined ? session.append(type, data) : session.append(type, data, opts)
    ops.push(opts === undefined ? { type, data: event.data } : { type, data: event.data, opts })
    return event.seq
  }
  const source = { provider: 'deepseek', model: 'deepseek-chat' }
  let turn = 0
  let calls = 0
  let blocks = 0

  /**
   * One step running a program in `ids` (plus, sometimes, a second program in `also`).
   * @param {number} step @param {string[]} ids @param {string[] | undefined} also
   * @param {() => void} [afterResult] runs right after the result lands (the deferred commit)
   * @returns {{message: number, result: number}}
   */
  const programStep = (step, ids, also, afterResult) => {
    append('step/start', { turn, step })
    const programs = [ids, ...(also ? [also] : [])].map((blockIds) => ({
      id: CallId(`call_${++calls}`),
      json: JSON.stringify({ ids: blockIds, description: text(rand.int(20, 60)), code: text(rand.int(200, 1500)) }),
    }))
    const content = [
      ...(rand.chance(0.7) ? [{ type: 'reasoning', text: text(rand.int(40, 800)) }] : []),
      ...(rand.chance(0.4) ? [{ type: 'text', text: text(rand.int(20, 200)) }] : []),
      ...programs.map((p) => ({ type: 'tool-call', id: p.id, name: 'block_run_code', arguments: p.json })),
    ]
    const chunks = content.map((block, index) =>
      append('assistant/chunk', {
        turn,
        step,
        chunk: block.type === 'tool-call' ? { type: 'tool-call-delta', index, id: block.id, name: block.name, argumentsDelta: block.arguments } : { type: `${block.type}-delta`, index, text: block.text },
      }),
    )
    const message = append('assistant/message', { turn, step, message: createAssistantMessage({ content, source }) }, { surfaceOp: 'append', sourceEventSeqs: chunks })
    let result = -1
    for (const p of programs) {
      const callSeq = append('tool/call', { turn, step, callId: p.id, name: 'block_run_code', arguments: p.json })
      for (let k = 1, n = rand.int(1, 3); k <= n; k++) {
        const sub = { rootCallId: p.id, parentCallId: p.id, subCallId: `${p.id}:code:${k}`, name: 'read', arguments: { path: `src/f${k}.rs` } }
        append('tool/code-dispatch-start', sub)
        append('tool/code-dispatch', { ...sub, isError: false, content: [{ type: 'text', text: text(rand.int(40, 400)) }] })
      }
      const output = JSON.stringify({ logs: [], result: text(rand.int(60, 3000)) })
      result = append('tool/result', { turn, step, message: createToolResultMessage({ callId: p.id, content: [{ type: 'text', text: output }], isError: false }) }, { surfaceOp: 'append', sourceEventSeqs: [callSeq] })
    }
    afterResult?.()
    append('step/end', { turn, step })
    return { message, result }
  }

  /** The deferred commit of a summary of `targets` asked for at `requestSeq`, planned on the session's mirror. */
  const commitSummary = (/** @type {string[]} */ targets, /** @type {number} */ requestSeq) => {
    const planned = addon.planBlockSummary(session.id, withLog(session).native, targets, requestSeq)
    check(planned.status === 'commit', `closing ${targets} while recording: ${JSON.stringify(planned)}`)
    const p = /** @type {any} */ (planned).plan
    const compactionId = `block-${session.seq}`
    const start = append('compaction/start', { compactionId, turn })
    const summary = append('compaction/summary', {
      compactionId,
      summary: [{ type: 'text', text: 'summary' }],
      shadowedRange: { start: p.start, end: p.end },
      shadowedSeqs: Array.from(p.seqs),
      shadowedTokenCount: 100,
      ...source,
    })
    const body = `<block-summary>\n${text(rand.int(200, 900))}\n${p.remaining.length ? `Block ids: ${p.remaining.join(', ')}\n` : ''}</block-summary>`
    append(
      'user/message',
      createUserMessage({ content: [{ type: 'text', text: body }], source: { kind: 'plugin', plugin: 'compact', compactionId, blockPtc: { remaining: p.remaining, closed: p.closed, requestSeq } } }),
      { surfaceOp: { op: 'replace', start: p.start, end: p.end }, sourceEventSeqs: [start, summary, ...p.seqs] },
    )
    append('compaction/end', { compactionId, turn })
  }

  append('request/header', { header: { config: { ...source, maxTokens: 8192 }, system: text(3000), tools: [] }, reason: 'initial' })
  /** @type {{current: string, requestSeq: number, first: number, last: number} | undefined} */
  let final
  // Turns of 1–2 blocks each, until the session is about the target size; the last block is the measured one.
  while (!final) {
    turn++
    append('turn/start', { turn })
    append('step/start', { turn, step: 0 })
    append('user/message', createUserMessage({ content: [{ type: 'text', text: text(rand.int(30, 400)) }], source: { kind: 'user' } }), { surfaceOp: 'append' })
    append('step/end', { turn, step: 0 })
    let step = 0
    for (let b = rand.int(1, 2); b > 0 && !final; b--) {
      const id = `block-${++blocks}`
      const steps = rand.int(3, 10)
      const lastBlock = session.seq > targetEvents - 12 * steps
      let first = -1
      for (let k = 1; k <= steps; k++) {
        const also = !lastBlock && rand.chance(0.08) ? [`side-${blocks}`] : undefined
        const closing = k === steps
        // The closing program asks for the summary while it runs (the request's log length is
        // the result's seq); the deferred commit lands right after the result.
        const { message, result } = programStep(++step, [id], also, () => {
          if (closing && close && !lastBlock) commitSummary([id], session.seq - 1)
        })
        if (first < 0) first = message
        if (closing && lastBlock) final = { current: id, requestSeq: result, first, last: result }
      }
    }
    if (final) break // the measured point: right after the current block's last result
    append('step/start', { turn, step: ++step })
    append('assistant/message', { turn, step, message: createAssistantMessage({ content: [{ type: 'text', text: text(rand.int(40, 600)) }], source }) }, { surfaceOp: 'append' })
    append('step/end', { turn, step })
    append('turn/end', { turn, reason: { kind: 'completed' } })
  }
  untrack()
  const nodes = [...session.surface.nodes]
  const seqs = nodes.slice(nodes.indexOf(final.first), nodes.indexOf(final.last) + 1)
  return { ops, session, current: final.current, requestSeq: final.requestSeq, expect: { seqs, remaining: [] } }
}

/** Replays recorded appends into a fresh Session (identical seqs, data and surface). */
export function replay(/** @type {{type: string, data: any, opts?: any}[]} */ ops, name = 'replay') {
  const session = Session.create(SessionId(name))
  for (const op of ops) op.opts === undefined ? session.append(op.type, op.data) : session.append(op.type, op.data, op.opts)
  return session
}

/** The measured call: one synchronous plan on the session's mirror, timed whole and in its two parts (µs). */
function timedPlan(/** @type {any} */ session, /** @type {string} */ current, /** @type {number} */ requestSeq) {
  const t0 = now()
  const mirror = withLog(session).native
  const t1 = now()
  const plan = addon.planBlockSummary(session.id, mirror, [current], requestSeq)
  const t2 = now()
  return { plan, total: us(t0, t2), snapshot: us(t0, t1), planOnly: us(t1, t2) }
}

/** The result checks, asserted in every mode. */
function checkPlan(/** @type {any} */ r, /** @type {any} */ planned, /** @type {string} */ name) {
  check(planned.status === 'commit', `${name}: the plan is a commit (${JSON.stringify(planned)})`)
  check(JSON.stringify(Array.from(planned.plan.seqs)) === JSON.stringify(r.expect.seqs), `${name}: the plan replaces exactly the current block's nodes`)
  check(JSON.stringify(planned.plan.remaining) === JSON.stringify(r.expect.remaining), `${name}: remaining ids`)
  check(JSON.stringify(planned.plan.closed) === JSON.stringify([r.current]), `${name}: closed ids`)
}

/** @param {number} events @param {boolean} close @param {{warm: number, first: number}} reps */
async function measureShape(events, close, reps) {
  const name = close ? 'closed as it goes' : 'never closed'
  const r = recordBlockSession(events, { close })
  const surfaceNodes = r.session.surface.nodes.length
  const summaries = r.session.surface.nodes.filter((/** @type {number} */ s) => r.session.log[s].data?.source?.blockPtc).length

  // First call: a session the encoder never saw.
  const first = { total: /** @type {number[]} */ ([]), snapshot: /** @type {number[]} */ ([]), plan: /** @type {number[]} */ ([]) }
  for (let i = 0; i < reps.first; i++) {
    const session = replay(r.ops, `block-bench-first-${i}`)
    await quiesce(20)
    const t = timedPlan(session, r.current, r.requestSeq)
    checkPlan(r, t.plan, `${name}, first call`)
    first.total.push(t.total)
    first.snapshot.push(t.snapshot)
    first.plan.push(t.planOnly)
  }

  // Warm: the recorded session itself, described once before (untimed).
  const session = r.session
  checkPlan(r, timedPlan(session, r.current, r.requestSeq).plan, `${name}, warm`)
  const warm = { total: /** @type {number[]} */ ([]), snapshot: /** @type {number[]} */ ([]), plan: /** @type {number[]} */ ([]) }
  const pass = /** @type {number[]} */ ([])
  const anchor = r.expect.seqs[0]
  await quiesce()
  for (let i = 0; i < reps.warm; i++) {
    // Interleaved with the baselines, so all see the same machine load.
    const t = timedPlan(session, r.current, r.requestSeq)
    warm.total.push(t.total)
    warm.snapshot.push(t.snapshot)
    warm.plan.push(t.planOnly)
    const t1 = now()
    let touched = 0
    const log = session.log
    for (const seq of session.surface.nodes) {
      const e = log[seq]
      touched += e.type.length + (e.data?.message?.content?.length ?? e.data?.content?.length ?? 0)
    }
    const t2 = now()
    pass.push(us(t1, t2))
    check(touched > 0, 'baseline')
  }

  // Committing the plan keeps the surface protocol-valid (on a replay: the recording stays as is).
  const copy = replay(r.ops, 'block-bench-commit')
  const p = /** @type {any} */ (addon.planBlockSummary(copy.id, withLog(copy).native, [r.current], r.requestSeq)).plan
  copy.append(
    'user/message',
    createUserMessage({ content: [{ type: 'text', text: '<block-summary>\ndone\n</block-summary>' }], source: { kind: 'plugin', plugin: 'compact', compactionId: 'x', blockPtc: { remaining: p.remaining, closed: p.closed, requestSeq: r.requestSeq } } }),
    { surfaceOp: { op: 'replace', start: p.start, end: p.end }, sourceEventSeqs: Array.from(p.seqs) },
  )
  check(protocolValid(copy), `${name}: every call on the surface keeps its result after the commit`)

  const out = {
    name,
    events: session.seq,
    surfaceNodes,
    summaries,
    ids: new Set(r.ops.flatMap((o) => o.type === 'assistant/message' ? o.data.message.content.filter((b) => b.type === 'tool-call').flatMap((b) => callBlockIds(b.arguments)) : [])).size,
    replaced: r.expect.seqs.length,
    warm: { total: summarize(warm.total), snapshot: summarize(warm.snapshot), plan: summarize(warm.plan), n: reps.warm },
    first: { total: summarize(first.total.slice(1)), snapshot: summarize(first.snapshot.slice(1)), plan: summarize(first.plan.slice(1)), firstInProcess: first.total[0], n: reps.first },
    baseline: { jsPass: summarize(pass) },
  }
  log(
    `${name}: ${out.events} events, ${surfaceNodes} surface nodes (${summaries} summaries), ${out.ids} ids: ` +
      `warm ${out.warm.total.median.toFixed(1)} µs (snapshot ${out.warm.snapshot.median.toFixed(1)}, plan ${out.warm.plan.median.toFixed(1)}), ` +
      `first call ${out.first.total.median.toFixed(0)} µs (first in process ${out.first.firstInProcess.toFixed(0)} µs), ` +
      `JS pass ${out.baseline.jsPass.median.toFixed(1)} µs`,
  )
  return out
}

/**
 * A flood of ids against the planner and the tool's argument check (see the module docs).
 * @param {number} events @param {number} reps
 */
export async function measureFlood(events, reps) {
  const r = recordBlockSession(events, { close: false })
  const mirror = withLog(r.session).native
  const flood = Array.from({ length: 200_000 }, (_, i) => `flood-${i}`)
  const atCap = Array.from({ length: addon.MAX_BLOCK_TARGETS }, (_, i) => `cap-${i}`)
  const codeOf = (/** @type {() => unknown} */ f) => {
    try {
      f()
      return 'none'
    } catch (e) {
      return /** @type {any} */ (e).code
    }
  }
  const times = { args: /** @type {number[]} */ ([]), plan: /** @type {number[]} */ ([]), cap: /** @type {number[]} */ ([]) }
  await quiesce()
  for (let i = 0; i < reps; i++) {
    let t0 = now()
    const argsCode = codeOf(() => normalizeBlockIds({ ids: flood }))
    times.args.push(us(t0, now()) / 1000)
    t0 = now()
    const planCode = codeOf(() => addon.planBlockSummary(r.session.id, mirror, flood, r.requestSeq))
    times.plan.push(us(t0, now()) / 1000)
    t0 = now()
    const capCode = codeOf(() => addon.planBlockSummary(r.session.id, mirror, atCap, r.requestSeq))
    times.cap.push(us(t0, now()) / 1000)
    check(argsCode === 'INVALID_ARGUMENT' && planCode === 'INVALID_ARGUMENT', `200k ids are refused by their count (${argsCode}, ${planCode})`)
    check(capCode === 'UNKNOWN_BLOCK', `256 unknown ids are UNKNOWN_BLOCK (${capCode})`)
  }
  const out = { ids: flood.length, events: r.session.seq, args: summarize(times.args), plan: summarize(times.plan), atCap: summarize(times.cap), n: reps, unit: 'ms' }
  log(
    `flood: 200,000 ids answered in ${out.plan.median.toFixed(3)} ms by planBlockSummary, ${out.args.median.toFixed(3)} ms by the tool's argument check; ` +
      `a plan at the cap (256 unknown ids, ${out.events} events) ${out.atCap.median.toFixed(3)} ms`,
  )
  return out
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { quick, out } = parseArgs()
  const events = quick ? 2_000 : 10_000
  const reps = quick ? { warm: 20, first: 3 } : { warm: 400, first: 16 }
  const result = { quick, load: { start: load(), end: NaN }, target: { medianUs: 50 }, shapes: /** @type {any[]} */ ([]) }
  // Block mode tracks its tool's ids in every session mirror (as the plugin does at mount).
  trackBlockTool('block_run_code', callBlockIds)
  for (const close of [true, false]) result.shapes.push(await measureShape(events, close, reps))
  // The commit half (bench/lib/block-commit.mjs): the plugin's whole commit vs DSH's own four appends.
  const commitReps = quick ? { reps: 4, first: 2 } : { reps: 120, first: 12 }
  result.commit = /** @type {any[]} */ ([])
  for (const close of [true, false]) {
    const r = recordBlockSession(events, { close })
    result.commit.push(await measureCommit(r, commitReps, { addon, replay, name: close ? 'closed as it goes' : 'never closed' }))
  }
  result.commitTarget = { ratio: 1.5 }
  result.flood = await measureFlood(events, quick ? 3 : 40)
  result.floodTarget = { medianMs: 50 }
  result.load.end = load()
  emit(out, result)
}
