/**
 * @module bench/lib/session
 * Realistic DSH sessions for the benchmarks, built with the real `@deepseek-ai/dsh-session`
 * `Session` and the real message constructors of `@deepseek-ai/dsh-llm`, in the shape the
 * real agent loop (`@deepseek-ai/dsh-agent-loop`) writes:
 *
 *   request/header + request/context once; per turn `turn/start`, steps, `turn/end`;
 *   per step `step/start`, the user prompt (first step), `assistant/chunk` deltas (log-only),
 *   `assistant/message` (sourceEventSeqs = its chunks), then per tool call `tool/call`
 *   (log-only) and `tool/result` (sourceEventSeqs = [its call]), `step/end`.
 *
 * Assistant messages carry reasoning and/or text and 0–4 PARALLEL tool calls; results vary
 * in size (half small, a third medium, a sixth large: 40 B to 24 KB). Before the fold, a
 * compaction replacement (`user/message` with `surfaceOp: replace` over the oldest ~70 % of
 * the surface, source `{kind:'plugin', plugin:'compact'}`) is appended, as in real long
 * sessions; then a turn with a `checkpoint` call (the mark is taken between its `tool/call`
 * and its `tool/result`, as the real tool runs), an exploration of 10 steps with parallel
 * calls, and the assistant message carrying the `rewind` call with its `tool/call` logged:
 * the fold runs at that point.
 *
 * The session is recorded once as a list of `append` calls and replayed into a fresh
 * `Session` for every measured fold (identical seqs, data and surface), outside the timed
 * region. Everything is deterministic (seeded PRNG).
 */
import { Session, SessionId } from '@deepseek-ai/dsh-session'

import { SessionBuilder } from '../../bin/session.mjs'

/** mulberry32: a small deterministic PRNG. @param {number} seed */
export function prng(seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    /** integer in [lo, hi] */
    int: (/** @type {number} */ lo, /** @type {number} */ hi) => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (/** @type {number} */ p) => next() < p,
  }
}

const WORDS = (
  'the function returns a promise that resolves once the store file is durable on disk and the ' +
  'surface snapshot lists every node in model order so the region ends before the current step ' +
  'src/lib.rs crates/fold-core/src/region.rs error TypeError cannot read property of undefined at ' +
  'line 42 column 7 grep -rn needle haystack cargo test passed 12 failed 0 ignored 3 warning unused ' +
  'import let mut seqs Vec u32 with_capacity fn select surface anchor origin pairing closure result'
).split(' ')

/** A pool of pseudo-prose to slice text from (one big string; slices are cheap). */
function textPool(rand, chars) {
  const parts = []
  let n = 0
  while (n < chars) {
    const w = WORDS[rand.int(0, WORDS.length - 1)]
    parts.push(w)
    n += w.length + 1
  }
  return parts.join(' ')
}

/**
 * Records a realistic session ending at the rewind call, with the package's session builder
 * (bin/session.mjs) in loop mode.
 * @param {number} targetEvents approximate event count at the fold point
 * @param {{seed?: number, explorationSteps?: number, compaction?: boolean}} [options] `compaction:
 *   false` leaves the surface holding most of the log's messages (a session never compacted)
 */
export function recordSession(targetEvents, options = {}) {
  const rand = prng(options.seed ?? 0x5eed + targetEvents)
  const pool = textPool(rand, 64 * 1024)
  const text = (/** @type {number} */ n) => {
    const start = rand.int(0, pool.length - n - 1)
    return pool.slice(start, start + n)
  }
  /** @type {{type: string, data: any, opts?: any}[]} */
  const ops = []
  const b = new SessionBuilder('record', {
    loop: true,
    model: { provider: 'deepseek', model: 'deepseek-chat' },
    // The stream as the loop logs it: 1-3 deltas per block.
    pieces: () => rand.int(1, 3),
    onAppend: (type, data, opts) => ops.push(opts === undefined ? { type, data } : { type, data, opts }),
  })
  const session = b.session
  let callCounter = 0

  const resultSize = () => {
    const r = rand.next()
    if (r < 0.5) return rand.int(40, 500)
    if (r < 0.84) return rand.int(500, 4000)
    return rand.int(4000, 24000)
  }

  /**
   * One model step: the assistant message (after its chunks), then its calls and results.
   * @param {{calls?: {name: string, args: object, output?: string}[], text?: string, reasoning?: string}} shape
   * @param {{stopBeforeResults?: boolean, beforeResult?: () => void}} [hooks]
   */
  const modelStep = (shape, hooks = {}) => {
    const calls = (shape.calls ?? []).map((c) => ({ ...c, id: `call_${++callCounter}` }))
    const usage = { inputTokens: rand.int(2000, 60000), outputTokens: rand.int(20, 900) }
    b.assistant({ text: shape.text, reasoning: shape.reasoning, calls: calls.map((c) => ({ id: c.id, name: c.name, args: c.args })), usage })
    if (hooks.stopBeforeResults) return calls
    for (const c of calls) b.toolCall(c.id)
    for (const c of calls) {
      hooks.beforeResult?.()
      b.result(c.id, c.output ?? text(resultSize()), rand.chance(0.04))
    }
    return calls
  }

  const toolNames = ['read_file', 'grep', 'bash', 'list_dir', 'web_fetch']
  const someCalls = (/** @type {number} */ lo, /** @type {number} */ hi) =>
    Array.from({ length: rand.int(lo, hi) }, () => {
      const name = toolNames[rand.int(0, toolNames.length - 1)]
      return { name, args: { path: `src/${text(rand.int(8, 30)).replace(/\s+/g, '_')}.rs`, query: text(rand.int(5, 60)) } }
    })

  /** One ordinary turn: a prompt, 1-6 steps with parallel calls, a final answer. */
  const ordinaryTurn = () => {
    b.turnStart()
    const steps = rand.int(1, 6)
    for (let step = 1; step <= steps + 1; step++) {
      b.stepStart()
      if (step === 1) b.user(text(rand.int(30, 600)))
      const last = step === steps + 1
      modelStep({
        reasoning: rand.chance(0.7) ? text(rand.int(40, 1500)) : undefined,
        text: last || rand.chance(0.5) ? text(rand.int(20, last ? 1200 : 300)) : undefined,
        calls: last ? [] : someCalls(1, 4),
      })
      b.stepEnd()
    }
    b.turnEnd()
  }

  // The request header and route, once (the loop logs them on the first request).
  b.header({ provider: 'deepseek', model: 'deepseek-chat', maxTokens: 8192 }, { system: text(3000), tools: [] })
  b.logOnly('request/context', { provider: 'deepseek', model: 'deepseek-chat', contextWindow: 128000 })

  const explorationSteps = options.explorationSteps ?? 10
  // The checkpoint turn costs about 14 events per exploration step plus ~40.
  const tail = explorationSteps * 14 + 40
  while (session.seq < targetEvents - tail) ordinaryTurn()

  // Warm point: a live plugin would have seen the session up to here (see README, "warm").
  const warmAt = ops.length

  // A compaction replacement over the oldest ~70 % of the surface, at a turn boundary:
  // from the first node to the node just before a later turn's user prompt.
  const nodes = [...session.surface.nodes]
  const log = session.log
  const prompts = nodes.map((seq, i) => [seq, i]).filter(([seq]) => log[seq].type === 'user/message')
  if (prompts.length >= 2 && options.compaction !== false) {
    const cutAt = prompts[Math.max(1, Math.floor(prompts.length * 0.7))][1]
    b.replace(nodes[0], nodes[cutAt - 1], `Summary of the earlier conversation:\n${text(4000)}`, {
      kind: 'plugin',
      plugin: 'compact',
      compactionId: `compaction-${targetEvents}`,
    })
  }

  // The checkpoint turn: the mark is taken between the checkpoint's tool/call and its result.
  b.turnStart()
  b.stepStart()
  b.user('Find out why the fold test fails on CI.')
  let anchor = -1
  modelStep(
    { text: 'I will investigate.', calls: [{ name: 'checkpoint', args: { objective: 'why the fold test fails on CI' }, output: '{"id":1,"logLength":0}' }] },
    { beforeResult: () => (anchor = session.seq) },
  )
  b.stepEnd()
  for (let step = 0; step < explorationSteps; step++) {
    b.stepStart()
    modelStep({ reasoning: rand.chance(0.7) ? text(rand.int(40, 800)) : undefined, calls: someCalls(1, 3) })
    b.stepEnd()
  }
  b.stepStart()
  const [rewindCall] = modelStep({ text: 'Done; folding the exploration.', calls: [{ name: 'rewind', args: {} }] }, { stopBeforeResults: true })
  b.toolCall(rewindCall.id)

  return {
    ops,
    warmAt,
    anchor,
    callId: rewindCall.id,
    events: session.seq,
    nodes: session.surface.nodes.length,
  }
}

/**
 * Replays a recording into a fresh real `Session` (outside any timed region).
 * @param {ReturnType<typeof recordSession>} rec
 * @param {string} id
 * @param {(session: any) => void} [atWarm] called once the events before the compaction are in
 * @param {{holdLast?: boolean}} [options] `holdLast`: leave the last recorded append out (the
 *   caller appends it later with `appendLast`)
 */
export function replay(rec, id, atWarm, options) {
  return replayInto(rec, Session.create(SessionId(id)), atWarm, options)
}

/**
 * Replays a recording into `session` (a fresh one, possibly attached to a host).
 * @param {ReturnType<typeof recordSession>} rec
 * @param {any} session
 * @param {(session: any) => void} [atWarm] called once the events before the compaction are in
 * @param {{holdLast?: boolean}} [options] as `replay`'s
 */
export function replayInto(rec, session, atWarm, { holdLast = false } = {}) {
  const { ops } = rec
  for (let i = 0; i < ops.length - (holdLast ? 1 : 0); i++) {
    if (i === rec.warmAt && atWarm) atWarm(session)
    const op = ops[i]
    if (op.opts === undefined) session.append(op.type, op.data)
    else session.append(op.type, op.data, op.opts)
  }
  return session
}

/**
 * Appends the recording's last append (held back by `replay(..., {holdLast: true})`).
 * @param {ReturnType<typeof recordSession>} rec @param {any} session
 */
export function appendLast(rec, session) {
  const op = rec.ops[rec.ops.length - 1]
  return op.opts === undefined ? session.append(op.type, op.data) : session.append(op.type, op.data, op.opts)
}
