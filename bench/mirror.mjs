/**
 * @module bench/mirror
 * Figure 9, the session mirror (plugin/shared/mirror.js + the addon's SessionMirror): what
 * keeping one per live session costs the host.
 *
 * - **Per appended event**: the mirror's `session/event` listener (`onSessionEvent`: describe
 *   the event, push its record to the addon), each call timed alone, over every event of the
 *   recorded ~50k-event sessions (compacted and not) replayed into a fresh Session. Target: p50
 *   ≤ 2 µs.
 * - **DSH's append with the listener vs without**: two real hosts (cordis Context + DSH's
 *   SessionStore), one with the mirror mounted, one without; the same ~50k appends into a session
 *   attached to each, interleaved append by append, each timed alone. Target: median ≤ 1.05×.
 *   The same once more with DSH's token meter mounted in both hosts and measuring the session
 *   (as compaction-basic does at every step): what an append costs in a dsh-base host.
 * - **Memory per 50k-event session**: the addon's heap for one mirror describing every event
 *   (`heapBytes`: what the listener leaves after feeding a live session), and the JS heap the
 *   plugin keeps beside it (the call-id map), measured as the heap growth over several sessions'
 *   mirrors after a full GC.
 */
import { Context } from '@deepseek-ai/cordis'
import { SessionProjectionRegistry } from '@deepseek-ai/dsh-session-projection'
import { SessionStore } from '@deepseek-ai/dsh-session'
import { TokenMeter } from '@deepseek-ai/dsh-token-meter'

import { callBlockIds } from '../plugin/block/args.js'
import { mirrorOf, mountMirror, onSessionEvent, trackBlockTool } from '../plugin/shared/mirror.js'
import { check, emit, load, log, parseArgs } from './lib/common.mjs'
import { recordSession, replay } from './lib/session.mjs'
import { now, quiesce, summarize, us } from './lib/stats.mjs'

const { quick, out } = parseArgs()
const EVENTS = quick ? 5_000 : 50_000
const MEMORY_SESSIONS = quick ? 2 : 6

/** @param {number[]} xs */
const percentile = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))]

/** Each listener call timed alone, over every event of a replay. */
function perEvent(/** @type {any} */ rec, /** @type {string} */ id) {
  const target = replay({ ...rec, ops: [] }, id)
  const times = new Float64Array(rec.ops.length)
  for (let i = 0; i < rec.ops.length; i++) {
    const op = rec.ops[i]
    const event = op.opts === undefined ? target.append(op.type, op.data) : target.append(op.type, op.data, op.opts)
    const t0 = now()
    onSessionEvent(target, event)
    times[i] = us(t0, now())
  }
  check(mirrorOf(target).native.eventCount === target.seq, 'the listener fed every event')
  const sorted = Array.from(times).sort((a, b) => a - b)
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length
  return { events: sorted.length, p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99), max: sorted.at(-1), mean }
}

/** A host: DSH's session store, with or without the mirror and the token meter. */
async function host(/** @type {{mirror: boolean, meter: boolean}} */ { mirror, meter }) {
  const root = new Context()
  if (meter) await root.plugin(SessionProjectionRegistry)
  await root.plugin(SessionStore)
  if (meter) await root.plugin(TokenMeter)
  await new Promise((resolve) => setTimeout(resolve, 10))
  if (mirror) mountMirror(root)
  return root
}

/** DSH's append, timed append by append, interleaved between a host without and one with the mirror. */
async function appendOverhead(/** @type {any} */ rec, /** @type {boolean} */ meter) {
  const plain = await host({ mirror: false, meter })
  const mirrored = await host({ mirror: true, meter })
  const a = plain.sessions.create(`plain-${meter}`)
  const b = mirrored.sessions.create(`mirrored-${meter}`)
  // The token meter syncs only the sessions it measured: measure both, as compaction-basic does.
  if (meter) {
    plain.tokenMeter.measure(a)
    mirrored.tokenMeter.measure(b)
  }
  const without = new Float64Array(rec.ops.length)
  const withMirror = new Float64Array(rec.ops.length)
  const run = (/** @type {any} */ session, /** @type {any} */ op) => {
    const t0 = now()
    if (op.opts === undefined) session.append(op.type, op.data)
    else session.append(op.type, op.data, op.opts)
    return us(t0, now())
  }
  await quiesce()
  for (let i = 0; i < rec.ops.length; i++) {
    const op = rec.ops[i]
    if (i % 2 === 0) {
      without[i] = run(a, op)
      withMirror[i] = run(b, op)
    } else {
      withMirror[i] = run(b, op)
      without[i] = run(a, op)
    }
  }
  check(mirrorOf(b).native.eventCount === b.seq, 'the mirrored host fed its session')
  const s = (/** @type {Float64Array} */ xs) => summarize(Array.from(xs))
  return { meter, events: rec.ops.length, without: s(without), with: s(withMirror), ratio: s(withMirror).median / s(without).median }
}

/**
 * Heap of the mirrors of several replays of one session, each described from its first event
 * (what the listener leaves after feeding every event: block mode's tracking on, so every event
 * is described, as the listener describes them).
 */
async function memory(/** @type {any} */ rec) {
  const sessions = Array.from({ length: MEMORY_SESSIONS }, (_, i) => replay(rec, `memory-${i}`))
  const untrack = trackBlockTool('block_run_code', callBlockIds)
  global.gc?.()
  await quiesce(100)
  const before = process.memoryUsage()
  const native = sessions.map((session) => mirrorOf(session).native.heapBytes())
  global.gc?.()
  await quiesce(100)
  const after = process.memoryUsage()
  const openers = sessions.reduce((n, session) => n + mirrorOf(session).openers.size, 0) / sessions.length
  untrack()
  const n = sessions.length
  return {
    sessions: n,
    events: sessions[0].seq,
    surfaceNodes: sessions[0].surface.nodes.length,
    calls: openers,
    nativeBytes: native.reduce((a, b) => a + b, 0) / n,
    jsHeapBytes: (after.heapUsed - before.heapUsed) / n,
    rssBytes: (after.rss - before.rss) / n,
  }
}

const result = { quick, load: { start: load(), end: NaN }, perEvent: /** @type {any[]} */ ([]), append: /** @type {any[]} */ ([]), memory: /** @type {any[]} */ ([]) }
for (const compaction of [false, true]) {
  const rec = recordSession(EVENTS, { compaction })
  const label = compaction ? 'compacted' : 'uncompacted'
  const p = { label, ...perEvent(rec, `per-event-${label}`) }
  result.perEvent.push(p)
  log(`per event (${label}, ${p.events} events): p50 ${p.p50.toFixed(2)} µs, p90 ${p.p90.toFixed(2)} µs, p99 ${p.p99.toFixed(2)} µs, mean ${p.mean.toFixed(2)} µs`)
  if (!compaction) {
    for (const meter of [false, true]) {
      const a = await appendOverhead(rec, meter)
      result.append.push(a)
      log(`append ${meter ? '(token meter measuring)' : '(bare store)'}: ${a.without.median.toFixed(2)} µs without, ${a.with.median.toFixed(2)} µs with the mirror (×${a.ratio.toFixed(3)})`)
    }
  }
  const m = { label, ...(await memory(rec)) }
  result.memory.push(m)
  log(`memory (${label}, ${m.events} events, ${m.surfaceNodes} surface nodes): addon ${(m.nativeBytes / 1024).toFixed(0)} KiB, JS heap ${(m.jsHeapBytes / 1024).toFixed(0)} KiB, RSS ${(m.rssBytes / 1024).toFixed(0)} KiB per session`)
}
result.load.end = load()
emit(out, result)
