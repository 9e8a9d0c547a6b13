// The session mirror (plugin/shared/mirror.js + the addon's SessionMirror) on real DSH Sessions:
// random event sequences on sessions a real SessionStore owns — user messages, assistant
// messages with parallel calls (block calls naming ids), results in any order, log-only events,
// compactions in DSH's own four events, rewind reports after DSH's shadow price, block
// summaries, tool results rewritten in place — with forks (`sessions.fork`) and restores (a
// session created from another's events). After every step the mirror the plugin keeps, fed by
// its `session/event` listener, must equal a mirror described afresh from the session, and hold
// exactly the facts the independent oracles (__test__/oracles/: what rewind's and block mode's
// planners must see, described from the session alone) give: every surface node's kind, origin,
// chars, calls and the call it answers, every rewind report's account, the rewind call's
// message, and with block ids tracked every node's protection, provenance and ids and DSH's
// compaction lock. (The planners' answers on those facts are held to the decoded snapshot
// formats in crates/fold-core/tests/*_props.rs.)
// `DSH_FOLD_MIRROR_CASES` sets the number of random sessions (default 16).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { TokenMeter } from '@deepseek-ai/dsh-token-meter'
import { SessionStore } from '@deepseek-ai/dsh-session'
import { compactCheckpointSource } from '@deepseek-ai/dsh-compaction'

import { addon } from '../plugin/shared/addon.js'
import { freshMirror, mirrorOf, mountMirror, trackBlockTool, useMeter, withLog } from '../plugin/shared/mirror.js'
import { callBlockIds } from '../plugin/block/args.js'
import { describeBlockSurface } from './oracles/block-surface.mjs'
import { describeSurface } from './oracles/surface.mjs'
import { CallId, Context, Session, SessionId, createAssistantMessage, createToolResultMessage, createUserMessage } from './helpers/dsh.mjs'

const CASES = Number(process.env.DSH_FOLD_MIRROR_CASES ?? 16)
const STEPS = 40
const IDS = ['A', 'B', 'C']
const MODEL = { provider: 'p', model: 'm' }

/** mulberry32. @param {number} seed */
function prng(seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return { next, int: (/** @type {number} */ lo, /** @type {number} */ hi) => lo + Math.floor(next() * (hi - lo + 1)), pick: (/** @type {any[]} */ xs) => xs[Math.floor(next() * xs.length)] }
}

async function host() {
  const root = new Context()
  await root.plugin(SessionStore)
  await new Promise((resolve) => setTimeout(resolve, 5))
  mountMirror(root)
  return root
}

/** Random appends to a live session, one per call; returns a new session after a fork or restore. */
class Driver {
  /** @param {any} root @param {any} session @param {ReturnType<typeof prng>} rand */
  constructor(root, session, rand) {
    this.root = root
    this.session = session
    this.rand = rand
    this.calls = 0
    this.marks = 0
    this.sessions = 0
    /** @type {string[]} calls issued, not answered yet */
    this.open = []
    /** @type {string | undefined} the last assistant message's first call (the "rewind call") */
    this.lastCall = undefined
  }

  text(n = this.rand.int(1, 400)) {
    return 'the quick brown fox src/lib.rs '.repeat(Math.ceil(n / 30)).slice(0, n)
  }

  step() {
    const { rand, session } = this
    const nodes = [...session.surface.nodes]
    const r = rand.int(0, 99)
    if (r < 10) return void session.append(rand.pick(['step/start', 'step/end', 'assistant/chunk', 'session/title']), { n: r })
    if (r < 24) {
      const which = rand.int(0, 5)
      // The user's, injected instructions, or block mode's note naming summaries it did not apply.
      const source = which === 0 ? { kind: 'agent-instructions' } : which === 1 ? { kind: 'plugin', plugin: 'dsh-fold/block', form: 'notice', blockNotice: { requestSeqs: [session.seq - 1] } } : { kind: 'user' }
      return void session.append('user/message', createUserMessage({ content: [{ type: 'text', text: this.text() }], source }), { surfaceOp: 'append' })
    }
    if (r < 48) {
      const content = []
      if (rand.int(0, 1)) content.push({ type: 'reasoning', text: this.text() })
      if (rand.int(0, 1)) content.push({ type: 'text', text: this.text() })
      const calls = rand.int(0, 3)
      this.lastCall = undefined
      for (let i = 0; i < calls; i++) {
        const id = CallId(`c${++this.calls}`)
        this.lastCall ??= id
        this.open.push(id)
        const block = rand.int(0, 2) > 0
        const args = block ? { ids: [rand.pick(IDS), ...(rand.int(0, 3) === 0 ? [rand.pick(IDS)] : [])], description: 'd', code: this.text(40) } : { path: this.text(12) }
        content.push({ type: 'tool-call', id, name: block ? 'block_run_code' : 'read', arguments: JSON.stringify(args) })
      }
      return void session.append('assistant/message', { turn: 1, step: 1, message: createAssistantMessage({ content, source: MODEL }) }, { surfaceOp: 'append' })
    }
    if (r < 68 && this.open.length) {
      const id = this.open.splice(rand.int(0, this.open.length - 1), 1)[0]
      const call = session.append('tool/call', { turn: 1, step: 1, callId: id, name: 'read', arguments: '{}' })
      return void session.append('tool/result', { turn: 1, step: 1, message: createToolResultMessage({ callId: id, content: [{ type: 'text', text: this.text() }], isError: false }) }, { surfaceOp: 'append', sourceEventSeqs: [call.seq] })
    }
    if (r < 86 && nodes.length) {
      let i = rand.int(0, nodes.length - 1)
      let j = rand.int(0, nodes.length - 1)
      if (i > j) [i, j] = [j, i]
      const range = nodes.slice(i, j + 1)
      const op = { op: 'replace', start: nodes[i], end: nodes[j] }
      const kind = rand.int(0, 2)
      if (kind === 0) {
        // DSH's compaction, its four events; sometimes left open (a crash inside it).
        const compactionId = `k${session.seq}`
        const start = session.append('compaction/start', { compactionId, turn: 1 })
        const message = createUserMessage({ content: [{ type: 'text', text: this.text(200) }], source: compactCheckpointSource(compactionId) })
        const summary = session.append('compaction/summary', { compactionId, summary: message.content, shadowedRange: { start: op.start, end: op.end }, shadowedSeqs: range, shadowedTokenCount: 9, provider: 'p', model: 'm' })
        session.append('user/message', message, { surfaceOp: op, sourceEventSeqs: [start.seq, summary.seq, ...range] })
        if (rand.int(0, 4) > 0) session.append('compaction/end', { compactionId, turn: 1 })
      } else if (kind === 1) {
        // A rewind report, after DSH's shadow price.
        const markId = ++this.marks + (rand.int(0, 5) === 0 ? 2 ** 40 : 0)
        session.append('compaction/prune', { shadowedRange: { start: op.start, end: op.end }, shadowedSeqs: range, shadowedTokenCount: 9 })
        session.append('user/message', createUserMessage({ content: [{ type: 'text', text: this.text(100) }], source: { kind: 'plugin', plugin: 'rewind', markId } }), { surfaceOp: op, sourceEventSeqs: range })
      } else {
        // A block summary closing one id, carrying others.
        const closed = [rand.pick(IDS)]
        const remaining = IDS.filter((x) => x !== closed[0] && rand.int(0, 1))
        const compactionId = `b${session.seq}`
        const start = session.append('compaction/start', { compactionId, turn: 1 })
        const message = createUserMessage({ content: [{ type: 'text', text: '<block-summary>s</block-summary>' }], source: { ...compactCheckpointSource(compactionId), blockPtc: { remaining, closed, requestSeq: start.seq } } })
        const summary = session.append('compaction/summary', { compactionId, summary: message.content, shadowedRange: { start: op.start, end: op.end }, shadowedSeqs: range, shadowedTokenCount: 9, provider: 'p', model: 'm' })
        session.append('user/message', message, { surfaceOp: op, sourceEventSeqs: [start.seq, summary.seq, ...range] })
        session.append('compaction/end', { compactionId, turn: 1 })
      }
      return
    }
    if (r < 91) {
      // A tool result rewritten in place, as DSH's pruner does.
      const results = nodes.filter((s) => session.log[s].type === 'tool/result')
      if (!results.length) return
      const seq = rand.pick(results)
      const original = session.log[seq].data
      const block = original.message.content[0]
      const data = { ...original, message: { ...original.message, content: [{ ...block, content: [{ type: 'text', text: 'pruned' }] }] } }
      return void session.append('tool/result', data, { surfaceOp: { op: 'replace', start: seq, end: seq }, sourceEventSeqs: [seq] })
    }
    if (r < 96 && session.seq > 0) {
      // A fork from any point of the log.
      const child = this.root.sessions.fork(session, rand.int(0, session.seq - 1), `fork-${process.pid}-${++forks}`)
      this.session = child
      return
    }
    // A restore: a new session created from this one's events.
    this.session = this.root.sessions.create(`restored-${process.pid}-${++forks}`, { seed: session.events })
  }
}
let forks = 0

/** A string as the core holds a block id: its UTF-16 code units. @param {string} id */
const units = (id) => Array.from({ length: id.length }, (_, i) => id.charCodeAt(i))

/** The kept mirror equals a fresh one, and holds the facts the oracles describe. */
function check(/** @type {any} */ session, /** @type {string} */ context, /** @type {{callId?: string, ids: boolean}} */ { callId, ids }) {
  const kept = withLog(session)
  const fresh = freshMirror(session)
  assert.equal(kept.native.canonical(ids), fresh.canonical(ids), `${context}: the kept mirror differs from a fresh description`)
  const mirror = JSON.parse(kept.native.canonical(ids))
  const oracle = describeSurface(session, { callId })
  assert.equal(mirror.event_count, oracle.eventCount, `${context}: event count`)
  const onSurface = new Set(session.surface.nodes)
  assert.deepEqual(
    mirror.nodes.map((/** @type {any} */ n) => ({ seq: n.seq, kind: n.kind, origin: n.origin, chars: n.chars, opens: n.opens, opener: n.opener })),
    // The mirror links a result to its call while that call stands on the surface (an orphan's
    // unknown opener and a shadowed one are the same to every planner).
    oracle.nodes.map((n) => ({ ...n, opener: n.opener !== null && onSurface.has(n.opener) ? n.opener : null })),
    `${context}: the surface's nodes`,
  )
  assert.deepEqual(
    mirror.nodes.filter((/** @type {any} */ n) => n.report).map((/** @type {any} */ n) => ({ seq: n.seq, markId: n.report.mark_id, foldedNodes: n.report.folded_nodes, start: n.report.start, end: n.report.end, foldedChars: n.report.folded_chars })),
    oracle.reports,
    `${context}: the rewind reports on the surface`,
  )
  // The rewind call's message, as the fold's host names it (plugin/fold/host.js), while it stands
  // on the surface (a mirror rebuilt from the surface knows the calls of the messages on it).
  if (callId !== undefined && oracle.current !== undefined && onSurface.has(oracle.current)) {
    assert.equal(kept.openers.get(callId), oracle.current, `${context}: the rewind call's message`)
  }
  // Block mode's facts, when block mode tracks the ids (else the mirror describes none).
  if (!ids) return
  const blocks = describeBlockSurface(session)
  assert.equal(kept.native.openCompaction() !== null, blocks.openCompaction, `${context}: DSH's compaction lock`)
  const userAuthored = new Set(['User', 'Injected'])
  const replacement = (/** @type {any} */ source) => typeof source === 'object' || source === 'BlockSummary' || source === 'CompactionSummary' || source === 'Rewrite'
  assert.deepEqual(
    mirror.nodes.map((/** @type {any} */ n) => ({
      seq: n.seq,
      protected: n.protected,
      userAuthored: n.kind === 'User' && userAuthored.has(n.source),
      provenance: n.kind === 'User' && n.source === 'BlockSummary' ? 'BlockSummary' : (n.kind === 'User' || n.kind === 'ToolResult') && replacement(n.source) ? 'Replacement' : 'Appended',
      ids: n.ids,
    })),
    blocks.nodes.map((n) => ({ ...n, ids: n.ids && n.ids.map(units) })),
    `${context}: the surface's block facts`,
  )
}

describe('the session mirror on real DSH sessions', () => {
  for (const [label, setup] of /** @type {const} */ ([
    ['from the surface (no block ids tracked), no meter', {}],
    ['every event (block ids tracked), priced by the meter', { blocks: true, meter: true }],
  ])) {
    it(`equals a fresh description and holds the oracles' facts after every step: ${label}`, async () => {
      const root = await host()
      const off = [setup.blocks ? trackBlockTool('block_run_code', callBlockIds) : () => {}, setup.meter ? useMeter(Object.create(TokenMeter.prototype)) : () => {}]
      try {
        for (let c = 0; c < CASES; c++) {
          const seed = 0x5eed + c
          const rand = prng(seed)
          const d = new Driver(root, root.sessions.create(`mirror-${process.pid}-${++forks}`), rand)
          for (let s = 0; s < STEPS; s++) {
            d.step()
            const session = d.session
            // The listener fed the kept mirror as each event was appended (a fork or a restore
            // was described once, when it was created): nothing left to catch up.
            assert.equal(mirrorOf(session).native.eventCount, session.seq)
            // ...with its log index (open compaction, replacements) read then too, so the first
            // fold of a resumed session walks no log.
            assert.equal(mirrorOf(session).native.logKnown, true, `seed ${seed}, step ${s}: log index known`)
            // The rewind call runs before its result exists: name it only while it is open.
            const open = d.lastCall !== undefined && d.open.includes(d.lastCall)
            check(session, `seed ${seed}, step ${s}`, { callId: open ? d.lastCall : undefined, ids: Boolean(setup.blocks) })
            check(session, `seed ${seed}, step ${s}, no call named`, { ids: Boolean(setup.blocks) })
          }
        }
      } finally {
        for (const f of off) f()
        root.stop?.()
      }
    })
  }

  it('a session that lived before the plugin mounted, or appends it never saw, is caught up or rebuilt', async () => {
    const root = new Context()
    await root.plugin(SessionStore)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const session = root.sessions.create(`early-${process.pid}`)
    const d = new Driver(root, session, prng(7))
    for (let i = 0; i < 30; i++) {
      d.step()
      d.session = session // no forks here
    }
    mountMirror(root)
    // Described at mount, then fed.
    const kept = mirrorOf(session).native
    assert.equal(kept.eventCount, session.seq)
    assert.equal(kept.logKnown, true, 'the log index is read at mount too')
    session.append('user/message', createUserMessage({ content: [{ type: 'text', text: 'after mount' }], source: { kind: 'user' } }), { surfaceOp: 'append' })
    assert.equal(kept.eventCount, session.seq, 'fed by the listener')
    // A detached session (no listener at all) is caught up at its next use.
    const detached = Session.create(SessionId(`detached-${process.pid}`), session.events)
    const m = mirrorOf(detached).native
    detached.append('user/message', createUserMessage({ content: [{ type: 'text', text: 'x' }], source: { kind: 'user' } }), { surfaceOp: 'append' })
    assert.equal(m.eventCount, detached.seq - 1)
    assert.equal(withLog(detached).native.canonical(), freshMirror(detached).canonical())
    root.stop?.()
  })

  it('a mirror out of step refuses to answer until it is rebuilt from its session', () => {
    const session = Session.create(SessionId(`broken-${process.pid}`))
    session.append('user/message', createUserMessage({ content: [{ type: 'text', text: 'x' }], source: { kind: 'user' } }), { surfaceOp: 'append' })
    const call = { type: 'tool-call', id: CallId('c1'), name: 'read', arguments: '{}' }
    session.append('assistant/message', { turn: 1, step: 1, message: createAssistantMessage({ content: [call], source: { kind: 'model', provider: 'p', model: 'm' } }) }, { surfaceOp: 'append' })
    session.append('tool/result', { turn: 1, step: 1, message: createToolResultMessage({ callId: CallId('c1'), content: [{ type: 'text', text: 'y' }], isError: false }) }, { surfaceOp: 'append' })
    const native = mirrorOf(session).native
    // A record for the wrong seq: INVALID_ARGUMENT, and the mirror says it is broken.
    assert.throws(() => native.push(new Uint32Array([5, 0])), (e) => /** @type {any} */ (e).code === 'INVALID_ARGUMENT')
    assert.match(native.broken, /event 5 arrived when event 3 was next/)
    assert.throws(() => addon.selectRegion(native, 0), (e) => /** @type {any} */ (e).code === 'INVALID_ARGUMENT')
    // The next use rebuilds it from the session.
    assert.equal(mirrorOf(session).native.broken, null)
    assert.equal(addon.selectRegion(mirrorOf(session).native, 0).foldedNodes, 3)
  })
})
