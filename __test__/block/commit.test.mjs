// The four-event writer (`plugin/block/commit.js`) on real detached DSH Sessions: its shape,
// its body, and the rule that no path leaves a `compaction/start` without its end.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { TokenMeter } from '@deepseek-ai/dsh-token-meter'

import { NO_METER_NOTE, priceNodes, summaryBody, writeCommit, writeFailure } from '../../plugin/block/commit.js'
import { visibleChars } from '../../plugin/shared/meter.js'
import { useMeter } from '../../plugin/shared/mirror.js'
import { SessionBuilder } from '../helpers/dsh.mjs'

/** A session with two block calls and their results: user(0..) A-call, result, B-call, result. */
function built() {
  const b = new SessionBuilder('commit-writer')
  b.turn = 1
  b.logOnly('turn/start', { turn: 1 })
  b.logOnly('step/start', { turn: 1, step: 1 })
  const user = b.user('Find the build id')
  const a = b.assistant({ calls: [{ id: 'c1', name: 'block_run_code', args: { ids: ['A'], description: 'a', code: 'return 1' } }] })
  const ra = b.result('c1', 'alpha: the flux capacitor needs 1.21 GW')
  const c = b.assistant({ calls: [{ id: 'c2', name: 'block_run_code', args: { ids: ['B'], description: 'b', code: 'return 2' } }] })
  const rc = b.result('c2', 'beta: ZEBRA-42 is the build id')
  b.logOnly('step/end', { turn: 1, step: 1 })
  return { session: b.session, user, a, ra, c, rc }
}

/** The plan the planner would hand over for a summary of A. */
const planOf = (/** @type {number[]} */ seqs, remaining = /** @type {string[]} */ ([])) => ({
  start: seqs[0],
  end: seqs[seqs.length - 1],
  seqs: Uint32Array.from(seqs),
  remaining,
  closed: ['A'],
})

/** DSH's real meter, un-mounted: its estimator is a pure method. */
const meter = Object.create(TokenMeter.prototype)

/** Runs `f` while the session mirrors price nodes with `meter` (as a host with the meter mounted). */
function priced(/** @type {() => void} */ f) {
  const off = useMeter(meter)
  try {
    f()
  } finally {
    off()
  }
}

describe('writeCommit', () => {
  it('appends start, summary, replacement, end adjacent, priced by the meter (through the session mirror)', () => {
    const { session, user, a, ra, c, rc } = built()
    const before = session.seq
    /** @type {any} */
    let result
    priced(() => {
      result = writeCommit(session, {
        plan: planOf([a, ra], ['B']),
        summary: 'alpha needs 1.21 GW',
        requestSeq: before,
        route: { provider: 'p', model: 'm' },
        turn: 1,
        metered: true,
        language: 'en',
      })
    })
    const [start, summary, replacement, end] = session.events.slice(before)
    assert.deepEqual(result.seqs, { start: start.seq, summary: summary.seq, replacement: replacement.seq, end: end.seq })
    assert.equal(session.seq, before + 4)
    const expected = [a, ra].reduce((t, s) => t + meter.estimateMessage(session.deriveEventMessage(session.events[s])), 0)
    assert.deepEqual({ replaced: result.replaced, tokensFreed: result.tokensFreed, ids: result.ids, note: result.note }, { replaced: 2, tokensFreed: expected, ids: ['B'], note: undefined })
    assert.equal(summary.data.shadowedTokenCount, expected)
    assert.deepEqual([...session.surface.nodes], [user, replacement.seq, c, rc])
    assert.deepEqual(summary.data.summary, replacement.data.content)
    assert.equal(summary.data.provider, 'p')
    assert.deepEqual(start.data, { compactionId: start.data.compactionId, turn: 1, blockPtc: { closed: ['A'], requestSeq: before } })
    assert.deepEqual(end.data, start.data)
  })

  it('without a meter: prices model-visible characters / 4 and says so', () => {
    const { session, a, ra } = built()
    const result = writeCommit(session, { plan: planOf([a, ra]), summary: 's', requestSeq: session.seq, route: undefined, turn: 1, metered: false, language: 'en' })
    const chars = [a, ra].reduce((t, s) => t + visibleChars(session.deriveEventMessage(session.events[s]).content), 0)
    assert.equal(result.tokensFreed, Math.ceil(chars / 4))
    assert.equal(result.note, NO_METER_NOTE.en)
    assert.equal(result.ids, undefined)
    const summary = session.events[result.seqs.summary]
    assert.equal(summary.data.shadowedTokenCount, result.tokensFreed)
    assert.deepEqual([summary.data.provider, summary.data.model], ['unknown', 'unknown'])
  })

  it('a replacement the session refuses: the bracket is closed with the error, the surface untouched', () => {
    const { session, a, c } = built()
    const nodes = [...session.surface.nodes]
    const before = session.seq
    // A range whose end is not on the surface: the session rejects the replace.
    assert.throws(
      () => writeCommit(session, { plan: { ...planOf([a, c]), end: 999 }, summary: 's', requestSeq: before, route: undefined, turn: 1, metered: true, language: 'en' }),
      /999|surface/,
    )
    const [start, summary, end, ...rest] = session.events.slice(before)
    assert.deepEqual(rest, [])
    assert.deepEqual([start.type, summary.type, end.type], ['compaction/start', 'compaction/summary', 'compaction/end'])
    assert.equal(end.data.compactionId, start.data.compactionId)
    assert.match(end.data.error, /999|surface/)
    assert.deepEqual([...session.surface.nodes], nodes)
  })
})

describe('writeFailure', () => {
  it('logs a request that cannot land as a closed bracket naming it', () => {
    const { session } = built()
    const nodes = [...session.surface.nodes]
    const before = session.seq
    const error = Object.assign(new Error('a user message arrived inside the range'), { code: 'STALE' })
    writeFailure(session, { requestSeq: 3, targets: ['A'], turn: 1, error })
    const [start, end] = session.events.slice(before)
    assert.equal(session.seq, before + 2)
    assert.equal(start.type, 'compaction/start')
    assert.deepEqual(end.data, { compactionId: start.data.compactionId, turn: 1, error: 'STALE: a user message arrived inside the range', blockPtc: { closed: ['A'], requestSeq: 3 } })
    assert.deepEqual([...session.surface.nodes], nodes)
  })
})

describe('the summary body and its price', () => {
  it('frames the agent\'s own summary; names the ids it carries only when there are some', () => {
    assert.equal(
      summaryBody('S', ['B', 'C']),
      '<block-summary>\nThis is your own summary of your earlier work; it replaces that work in your context.\nBlock ids: B, C\n\nS\n</block-summary>',
    )
    assert.equal(summaryBody('S', []), '<block-summary>\nThis is your own summary of your earlier work; it replaces that work in your context.\n\nS\n</block-summary>')
    assert.match(summaryBody('S', ['B'], 'zh'), /^<block-summary>\n以下是你自己对先前工作的总结.*\n区块 id：B\n\nS\n<\/block-summary>$/s)
  })

  it('prices an empty assistant node at zero, as the meter does', () => {
    const b = new SessionBuilder('empty')
    b.logOnly('step/start', { turn: 0, step: 1 })
    const empty = b.assistant({})
    priced(() => assert.equal(priceNodes(b.session, { seqs: [empty] }, true), 0))
    assert.equal(priceNodes(b.session, { seqs: [empty] }, false), 0)
  })
})
