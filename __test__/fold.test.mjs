// The addon's fold engine (`rewind`) driven by a JS host over REAL DeepSeek Harness Sessions:
// the surface is the session's mirror (plugin/shared/mirror.js), the replacement is a real `session.append`,
// and every successful fold must leave a surface that a DSH session accepted and that an
// OpenAI-compatible API would accept (every call answered, every result with its call).
//
// The mark is taken the way the checkpoint tool takes it: mid-call, after the assistant message
// carrying the `checkpoint` call and before that call's result.
import assert from 'node:assert/strict'
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { addon } from '../plugin/shared/addon.js'
import { withLog } from '../plugin/shared/mirror.js'
import { regionMessages } from '../plugin/shared/session.js'
import { CallId, Session, SessionBuilder, SessionId, createToolResultMessage, createUserMessage, protocolProblems, tempStore } from './helpers/dsh.mjs'

const fold = addon

const NOTHING_AFTER_MARK = 'no surface nodes after the checkpoint mark'
const NOTHING_BEFORE_REWIND = 'no surface nodes between the checkpoint mark and the rewind call'

let sessions = 0
const builder = (name) => new SessionBuilder(`fold-${name}-${process.pid}-${++sessions}`)

/** A tool output long enough that any short report shrinks the region. */
const output = (what) => `${what}: ${'fn parse(input: &str) -> Result<Ast> { /* ... */ }\n'.repeat(8)}`

/** The report the scripted summarizer writes. */
const REPORT = 'Report: the parser bug is an off-by-one in parse_list (src/parser.rs:120).'

/**
 * What a fold reads: the session's mirror in step (its log index known), and the rewind call's
 * assistant message (its call still open), as the plugin's host names it.
 * @param {any} session @param {string} [callId]
 */
function surfaceOf(session, callId) {
  const kept = withLog(session)
  return { mirror: kept.native, current: callId === undefined ? undefined : kept.openers.get(callId) }
}

/** `selectRegion` on the session's mirror now. @param {any} session @param {number} anchor @param {string} [callId] */
function selectRegion(session, anchor, callId) {
  const { mirror, current } = surfaceOf(session, callId)
  return fold.selectRegion(mirror, anchor, current)
}

/**
 * The JS side of a fold, as plugin/fold/host.js does it: the session's mirror handed over when
 * asked, a scripted async summarizer, and a synchronous commit that re-checks the region and
 * appends the report.
 * @param {SessionBuilder} b
 * @param {{callId?: string, summarize?: (region: any, attempt: number) => any}} [options]
 */
function foldHost(b, { callId, summarize = async () => REPORT } = {}) {
  const session = b.session
  const calls = { snapshot: 0, summarize: /** @type {any[]} */ ([]), commit: /** @type {any[]} */ ([]), atCommit: /** @type {any} */ (null) }
  const host = {
    get current() {
      return surfaceOf(session, callId).current
    },
    snapshot: () => {
      calls.snapshot++
      return surfaceOf(session, callId).mirror
    },
    summarize: async (region, attempt) => {
      calls.summarize.push({ region, attempt, messages: regionMessages(session, region.seqs) })
      return summarize(region, attempt)
    },
    commit: (plan) => {
      calls.commit.push(plan)
      calls.atCommit = { seq: session.seq, surface: [...session.surface.nodes] }
      const { mirror, current } = surfaceOf(session, callId)
      if (!fold.planMatches(plan, mirror, current)) return 'changed'
      appendReport(session, plan)
      return 'committed'
    },
  }
  return { host, calls }
}

/** Appends the fold's replacement exactly as the rewind plugin's commit does. */
function appendReport(session, { markId, start, end, seqs, report }) {
  return session.append(
    'user/message',
    createUserMessage({ content: [{ type: 'text', text: report }], source: { kind: 'plugin', plugin: 'rewind', markId } }),
    { surfaceOp: { op: 'replace', start, end }, sourceEventSeqs: Array.from(seqs) },
  )
}

/** Marks mid-call, as the checkpoint tool does: after its assistant message, before its result. */
async function checkpoint(b, store, text = 'I will read the parser first.') {
  b.assistant({ text, calls: [{ id: 'ck', name: 'checkpoint', args: { objective: 'find the parser bug' } }] })
  const mark = await fold.mark(store, b.session.id, b.session.seq, 'find the parser bug')
  assert.equal(mark.logLength, b.session.seq)
  return mark
}

const nodes = (b) => [...b.session.surface.nodes]
const rejectsWith = (promise, code, message) =>
  assert.rejects(promise, (e) => {
    assert.equal(e.code, code, e.message)
    assert.equal(e.name, 'FoldError')
    assert.ok(fold.isFoldError(e))
    if (message instanceof RegExp) assert.match(e.message, message)
    else if (message !== undefined) assert.equal(e.message, message)
    return true
  })

/**
 * Runs `rewind` and checks everything a successful fold promises: the result, the ONE append
 * the session accepted (a replace over exactly `expected`, sourced from the mark), the surface
 * after it, the stamp, and — once the rewind tool's own result is on the surface, as the tool
 * appends it — a protocol-valid history.
 */
async function foldAndCheck(b, store, mark, expected, { callId = 'rw', host, finish = true, attempts = 1 } = {}) {
  const session = b.session
  const before = nodes(b)
  const seqBefore = session.seq
  const pos = before.indexOf(expected[0])
  assert.deepEqual(before.slice(pos, pos + expected.length), expected, 'the expected region is a run of the surface')
  const { host: h, calls } = host ?? foldHost(b, { callId })
  const region = selectRegion(session, mark.logLength, callId)
  assert.deepEqual(Array.from(region.seqs), expected)

  const result = await fold.rewind(store, session.id, h)

  assert.deepEqual(result, {
    markId: mark.id,
    foldedNodes: expected.length,
    start: expected[0],
    end: expected.at(-1),
    foldedChars: region.foldedChars,
    reportChars: REPORT.length,
  })
  // the session accepted exactly one append: the report, replacing the region (the surface may
  // have grown at its tail meanwhile: results of the rewind step's other calls)
  const at = calls.atCommit
  assert.deepEqual(at.surface.slice(0, before.length), before)
  assert.equal(session.seq, at.seq + 1)
  assert.ok(at.seq >= seqBefore)
  const report = session.events.at(-1)
  assert.equal(report.type, 'user/message')
  assert.deepEqual(report.surfaceOp, { op: 'replace', start: expected[0], end: expected.at(-1) })
  assert.deepEqual(report.sourceEventSeqs, expected)
  assert.deepEqual(report.data.source, { kind: 'plugin', plugin: 'rewind', markId: mark.id })
  assert.deepEqual(report.data.content, [{ type: 'text', text: REPORT }])
  assert.deepEqual(nodes(b), [...at.surface.slice(0, pos), report.seq, ...at.surface.slice(pos + expected.length)])
  // the summarizer saw the region's real messages
  assert.equal(calls.snapshot, 1, 'rewind snapshots once, before it returns its promise')
  assert.deepEqual(calls.summarize.map((c) => c.attempt), [...Array(attempts).keys()])
  for (const c of calls.summarize) {
    assert.deepEqual(Array.from(c.region.seqs), expected)
    assert.ok(c.messages.length > 0)
  }
  assert.equal(calls.commit.length, 1)
  // stamped: one fold per mark
  assert.equal(await fold.hasActive(store, session.id), false)
  assert.equal(typeof (await fold.latestMark(store, session.id)).foldedAt, 'number')
  if (finish) {
    // the rewind tool's own result closes its call, as the tool loop appends it
    if (surfaceOf(session, callId).current !== undefined) b.result(callId, `Folded ${expected.length} surface nodes.`)
    assert.deepEqual(protocolProblems(session.deriveMessages()), [])
  }
  return { result, report, calls }
}

/** Asserts that a failed rewind wrote nothing: same log, same surface, mark still active. */
async function assertUntouched(b, store, seq, surface) {
  assert.equal(b.session.seq, seq)
  assert.deepEqual(nodes(b), surface)
  assert.equal(await fold.hasActive(store, b.session.id), true)
}

/** user, checkpoint (mid-call mark), two exploration steps; returns the seqs. */
async function exploration(b, store) {
  const request = b.user('The parser rejects nested lists. Find out why.')
  const ck = b.seq
  const mark = await checkpoint(b, store)
  const ckResult = b.result('ck', JSON.stringify({ markId: mark.id }))
  const a1 = b.assistant({ calls: [{ id: 'r1', name: 'read', args: { path: 'src/parser.rs' } }] })
  const r1 = b.result('r1', output('src/parser.rs'))
  const a2 = b.assistant({ reasoning: 'parse_list looks wrong', calls: [{ id: 'g1', name: 'grep', args: { pattern: 'parse_list' } }] })
  const r2 = b.result('g1', output('grep parse_list'))
  return { mark, request, ck, ckResult, explored: [a1, r1, a2, r2] }
}

describe('rewind over real DSH sessions: the reference behaviours', () => {
  it('folds the balanced span after the anchor, excluding the rewind call; the checkpoint pair stays visible', async () => {
    const store = tempStore()
    const b = builder('basic')
    const { mark, request, ck, ckResult, explored } = await exploration(b, store)
    const rw = b.assistant({ text: 'Done exploring.', calls: [{ id: 'rw', name: 'rewind' }] })
    assert.equal(mark.logLength, ckResult, 'mid-call mark: the anchor is the checkpoint result seq')

    const { report, calls } = await foldAndCheck(b, store, mark, explored)

    assert.deepEqual(nodes(b), [request, ck, ckResult, report.seq, rw, rw + 2])
    // the summarizer got the exploration's messages (assistant calls and their results)
    const shapes = calls.summarize[0].messages.map((m) => `${m.role}:${m.content.map((c) => c.type).join('+')}`)
    assert.deepEqual(shapes, ['assistant:tool-call', 'user:tool-result', 'assistant:reasoning+tool-call', 'user:tool-result'])
    assert.equal(calls.summarize[0].region.markId, mark.id)
    assert.equal(calls.summarize[0].region.anchor, mark.logLength)
    assert.equal(calls.summarize[0].attempt, 0)
    // the model now sees: request, the checkpoint call with its result, the report, the rewind call
    const messages = b.session.deriveMessages()
    assert.equal(messages.length, 6)
    assert.ok(messages[1].content.some((c) => c.type === 'tool-call' && c.name === 'checkpoint'))
    assert.equal(messages[3].content[0].text, REPORT)
  })

  it('a session logged as the DSH agent loop logs it (step events, tool/call events, results citing them) folds the same', async () => {
    const store = tempStore()
    const b = new SessionBuilder(`fold-loop-${process.pid}`, { loop: true })
    b.turnStart()
    const request = b.user('The parser rejects nested lists. Find out why.')
    b.stepStart()
    const ck = b.assistant({ text: 'Marking this investigation.', calls: [{ id: 'ck', name: 'checkpoint', args: { objective: 'nested lists' } }] })
    b.toolCall('ck')
    // inside the checkpoint tool's execute: after its tool/call event, before its result
    const mark = await fold.mark(store, b.session.id, b.session.seq, 'nested lists')
    const ckResult = b.result('ck', JSON.stringify({ markId: mark.id }))
    b.stepEnd()
    const explored = []
    for (const [id, path] of [['r1', 'src/parser.rs'], ['r2', 'src/lexer.rs']]) {
      b.stepStart()
      explored.push(b.assistant({ calls: [{ id, name: 'read', args: { path } }] }))
      b.toolCall(id)
      explored.push(b.result(id, output(path)))
      b.stepEnd()
    }
    b.stepStart()
    const rw = b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    b.toolCall('rw')
    assert.equal(mark.logLength, ckResult)
    assert.ok(b.session.events.filter((e) => e.type === 'tool/call').length === 4)

    const { report } = await foldAndCheck(b, store, mark, explored)
    assert.deepEqual(nodes(b), [request, ck, ckResult, report.seq, rw, b.seq - 1])
    assert.deepEqual(b.session.events.at(-1).sourceEventSeqs, [b.calls.get('rw').seq], 'the rewind result cites its tool/call')
  })

  it('EMPTY_REGION when nothing follows the anchor but the checkpoint result', async () => {
    const store = tempStore()
    const b = builder('empty-after')
    b.user('Look at the parser.')
    const mark = await checkpoint(b, store)
    b.result('ck', JSON.stringify({ markId: mark.id }))
    b.logOnly()
    const [seq, surface] = [b.seq, nodes(b)]
    const { host, calls } = foldHost(b)
    // The checkpoint's own result follows the mark: "between", as the reference words it.
    await rejectsWith(fold.rewind(store, b.session.id, host), 'EMPTY_REGION', NOTHING_BEFORE_REWIND)
    assert.equal(calls.summarize.length, 0)
    await assertUntouched(b, store, seq, surface)
  })

  it('EMPTY_REGION when the mark is the log tail', async () => {
    const store = tempStore()
    const b = builder('empty-tail')
    b.user('Look at the parser.')
    await fold.mark(store, b.session.id, b.seq)
    const { host } = foldHost(b)
    await rejectsWith(fold.rewind(store, b.session.id, host), 'EMPTY_REGION', NOTHING_AFTER_MARK)
  })

  it('EMPTY_REGION when nothing stands between the checkpoint and the rewind call', async () => {
    const store = tempStore()
    const b = builder('empty-before')
    b.user('Look at the parser.')
    const mark = await checkpoint(b, store)
    b.result('ck', JSON.stringify({ markId: mark.id }))
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    const [seq, surface] = [b.seq, nodes(b)]
    const { host, calls } = foldHost(b, { callId: 'rw' })
    await rejectsWith(fold.rewind(store, b.session.id, host), 'EMPTY_REGION', NOTHING_BEFORE_REWIND)
    assert.equal(calls.summarize.length, 0)
    await assertUntouched(b, store, seq, surface)
  })

  it('UNBALANCED when the exploration ends in a call without its result and no earlier cut is closed', async () => {
    const store = tempStore()
    const b = builder('unbalanced')
    b.user('Look at the parser.')
    const mark = await checkpoint(b, store)
    b.result('ck', JSON.stringify({ markId: mark.id }))
    b.assistant({ calls: [{ id: 'a', name: 'read', args: { path: 'a' } }, { id: 'b', name: 'read', args: { path: 'b' } }] })
    b.result('a', output('a'))
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    const [seq, surface] = [b.seq, nodes(b)]
    const { host, calls } = foldHost(b, { callId: 'rw' })
    await rejectsWith(fold.rewind(store, b.session.id, host), 'UNBALANCED')
    assert.equal(calls.summarize.length, 0)
    await assertUntouched(b, store, seq, surface)
  })

  it('an open call later in the exploration ends the region at the last closed cut', async () => {
    const store = tempStore()
    const b = builder('closed-cut')
    b.user('Look at the parser.')
    const mark = await checkpoint(b, store)
    b.result('ck', JSON.stringify({ markId: mark.id }))
    const a1 = b.assistant({ calls: [{ id: 'r1', name: 'read', args: { path: 'a' } }] })
    const r1 = b.result('r1', output('a'))
    const open = b.assistant({ calls: [{ id: 'b', name: 'read', args: { path: 'b' } }, { id: 'c', name: 'read', args: { path: 'c' } }] })
    const rb = b.result('b', output('b'))
    const rw = b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    await foldAndCheck(b, store, mark, [a1, r1], { finish: false })
    assert.deepEqual(nodes(b).slice(-4), [b.seq - 1, open, rb, rw])
    // the fold orphaned nothing: only the calls that were already open are unanswered
    assert.deepEqual(protocolProblems(b.session.deriveMessages()).sort(), ['call c without its result', 'call rw without its result'])
    b.result('c', output('c'))
    b.result('rw', 'Folded 2 surface nodes.')
    assert.deepEqual(protocolProblems(b.session.deriveMessages()), [])
  })

  it('an orphaned result followed only by the rewind call is EMPTY_REGION, never folded alone', async () => {
    const store = tempStore()
    const b = builder('orphan-then-rewind')
    b.user('Look at the parser.')
    await fold.mark(store, b.session.id, b.seq)
    b.result('ghost', output('a result whose call is not on the surface'))
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    const [seq, surface] = [b.seq, nodes(b)]
    const { host, calls } = foldHost(b, { callId: 'rw' })
    await rejectsWith(fold.rewind(store, b.session.id, host), 'EMPTY_REGION', NOTHING_BEFORE_REWIND)
    assert.equal(calls.summarize.length, 0)
    await assertUntouched(b, store, seq, surface)
  })

  it('an orphaned result as the only node after the mark is EMPTY_REGION', async () => {
    const store = tempStore()
    const b = builder('orphan-only')
    b.user('Look at the parser.')
    await fold.mark(store, b.session.id, b.seq)
    b.result('ghost', output('a result whose call is not on the surface'))
    const [seq, surface] = [b.seq, nodes(b)]
    const { host } = foldHost(b)
    await rejectsWith(fold.rewind(store, b.session.id, host), 'EMPTY_REGION', NOTHING_BEFORE_REWIND)
    await assertUntouched(b, store, seq, surface)
  })

  it('with no assistant message for the current step yet, folds to the surface tail', async () => {
    const store = tempStore()
    const b = builder('tail')
    const { mark, request, ck, ckResult, explored } = await exploration(b, store)
    // ctx.rewind called between steps (no rewind call on the surface): no callId, or an unknown one
    for (const callId of [undefined, 'not-on-the-surface']) {
      const region = selectRegion(b.session, mark.logLength, callId)
      assert.deepEqual(Array.from(region.seqs), explored)
    }
    const { report } = await foldAndCheck(b, store, mark, explored, { callId: undefined })
    assert.deepEqual(nodes(b), [request, ck, ckResult, report.seq])
  })

  it('CHANGED when the surface moves while the report is written; nothing appended, and the retry folds', async () => {
    const store = tempStore()
    const b = builder('changed')
    const { mark, explored } = await exploration(b, store)
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    let compaction
    const { host, calls } = foldHost(b, {
      callId: 'rw',
      summarize: async () => {
        // a compaction lands over part of the region while the report is being written
        compaction = b.replace(explored[0], explored[1], 'compacted: read src/parser.rs')
        return REPORT
      },
    })
    await rejectsWith(fold.rewind(store, b.session.id, host), 'CHANGED')
    assert.equal(calls.commit.length, 1)
    await assertUntouched(b, store, compaction + 1, nodes(b))
    assert.equal(b.session.events.at(-1).data.source.kind, 'compaction', 'the fold appended nothing')
    // retryable: the next rewind folds the surface as it is now
    await foldAndCheck(b, store, mark, [compaction, explored[2], explored[3]])
  })

  it('a change outside the region while the report is written does not block the commit', async () => {
    const store = tempStore()
    const b = builder('benign')
    const { mark, explored } = await exploration(b, store)
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }, { id: 'ls', name: 'list', args: {} }] })
    const built = foldHost(b, {
      callId: 'rw',
      summarize: async () => {
        b.result('ls', 'src/ tests/') // the rewind step's parallel call finishes meanwhile
        return REPORT
      },
    })
    await foldAndCheck(b, store, mark, explored, { host: built })
  })

  it('one fold per mark: a second rewind is EMPTY_REGION and writes nothing', async () => {
    const store = tempStore()
    const b = builder('once')
    const { mark, explored } = await exploration(b, store)
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    await foldAndCheck(b, store, mark, explored)
    b.assistant({ calls: [{ id: 'rw2', name: 'rewind' }] })
    const [seq, surface] = [b.seq, nodes(b)]
    const { host, calls } = foldHost(b, { callId: 'rw2' })
    await rejectsWith(fold.rewind(store, b.session.id, host), 'EMPTY_REGION')
    assert.match((await fold.rewind(store, b.session.id, host).catch((e) => e)).message, /already folded/)
    assert.equal(calls.summarize.length, 0)
    assert.equal(b.seq, seq)
    assert.deepEqual(nodes(b), surface)
  })

  it('crash repair: a report committed but never stamped is recognised, stamped and returned, not folded again', async () => {
    const store = tempStore()
    const b = builder('repair')
    const { mark, explored } = await exploration(b, store)
    const rw = b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    const region = selectRegion(b.session, mark.logLength, 'rw')
    assert.deepEqual(Array.from(region.seqs), explored)
    // the commit ran (the report is on the surface, sourced from the mark), the stamp never did
    const report = appendReport(b.session, { ...region, markId: mark.id, report: REPORT })
    assert.equal(await fold.hasActive(store, b.session.id), true)
    const [seq, surface] = [b.seq, nodes(b)]

    const { host, calls } = foldHost(b, {
      callId: 'rw',
      summarize: async () => assert.fail('the summarizer must not be called for a repair'),
    })
    const result = await fold.rewind(store, b.session.id, host)

    assert.deepEqual(result, {
      markId: mark.id,
      foldedNodes: explored.length,
      start: explored[0],
      end: explored.at(-1),
      foldedChars: region.foldedChars,
      reportChars: REPORT.length,
    })
    assert.equal(calls.summarize.length, 0)
    assert.equal(calls.commit.length, 0)
    assert.equal(b.seq, seq, 'nothing appended')
    assert.deepEqual(nodes(b), surface)
    assert.ok(nodes(b).includes(report.seq))
    assert.equal(await fold.hasActive(store, b.session.id), false)
    assert.equal(typeof (await fold.latestMark(store, b.session.id)).foldedAt, 'number')
    // and the report is never folded again
    const again = foldHost(b, { callId: 'rw' })
    await rejectsWith(fold.rewind(store, b.session.id, again.host), 'EMPTY_REGION')
    assert.equal(again.calls.summarize.length, 0)
    b.result('rw', 'Folded.')
    assert.deepEqual(protocolProblems(b.session.deriveMessages()), [])
    assert.deepEqual(nodes(b), [0, 1, 2, report.seq, rw, b.seq - 1])
  })

  it('crash repair trusts no bare mark id: an old store\'s report is not the fold of a new mark with the same id', async () => {
    const store = tempStore()
    const b = builder('repair-old-id')
    const { mark, explored } = await exploration(b, store)
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    await foldAndCheck(b, store, mark, explored)
    assert.equal(mark.id, 1)
    // The user deletes the store (or points `store` elsewhere): ids restart at 1.
    rmSync(path.dirname(store), { recursive: true, force: true })
    const again = await checkpoint(b, store, 'A second investigation.')
    assert.equal(again.id, 1, 'the new store hands out id 1 again')
    b.result('ck', JSON.stringify({ markId: again.id }))
    const a = b.assistant({ calls: [{ id: 'r9', name: 'read', args: { path: 'src/lexer.rs' } }] })
    const r = b.result('r9', output('src/lexer.rs'))
    b.assistant({ calls: [{ id: 'rw2', name: 'rewind' }] })
    // The old report names mark 1 but was appended before this mark: the new exploration folds.
    const { result, calls } = await foldAndCheck(b, store, again, [a, r], { callId: 'rw2' })
    assert.equal(result.markId, 1)
    assert.equal(calls.summarize.length, 1)
  })

  it('crash repair carries mark ids past 2^32 whole', async () => {
    const store = tempStore()
    const big = 2 ** 32 + 1
    mkdirSync(path.dirname(store), { recursive: true })
    writeFileSync(store, JSON.stringify({ unit: { name: 'checkpoint', version: 1 }, global: { nextId: big }, tables: { marks: {} } }))
    const b = builder('repair-big-id')
    const { mark, explored } = await exploration(b, store)
    assert.equal(mark.id, big)
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    const region = selectRegion(b.session, mark.logLength, 'rw')
    // The commit landed, the stamp never did: the report names 2^32 + 1 (1 in 32 bits).
    appendReport(b.session, { ...region, markId: big, report: REPORT })
    const { host, calls } = foldHost(b, { callId: 'rw', summarize: async () => assert.fail('a repair makes no report') })
    const result = await fold.rewind(store, b.session.id, host)
    assert.equal(result.markId, big)
    assert.deepEqual([result.start, result.end, result.foldedNodes], [explored[0], explored.at(-1), explored.length])
    assert.equal(calls.summarize.length, 0)
    assert.equal(await fold.hasActive(store, b.session.id), false)
  })

  it('a stamp that fails after the commit does not fail the fold: the result returns, the failure is told late, the next rewind finishes the stamp', async () => {
    const store = tempStore()
    const dir = path.dirname(store)
    const b = builder('stamp-fails')
    const { mark, explored } = await exploration(b, store)
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    const { host, calls } = foldHost(b, { callId: 'rw' })
    const commit = host.commit
    host.commit = (plan) => {
      const answer = commit(plan)
      // The store's folder becomes a file: every write of the stamp fails (STORE_IO).
      renameSync(dir, `${dir}.away`)
      writeFileSync(dir, 'not a folder')
      return answer
    }
    let result
    try {
      const told = new Promise((resolve) => {
        fold.rewind(store, b.session.id, host, { onStampError: resolve }).then((r) => (result = r))
      })
      const error = /** @type {any} */ (await told)
      assert.equal(error.code, 'STORE_IO', 'the failure is told after the fold, with its code')
      assert.match(error.message, /the next rewind finishes the stamp/)
    } finally {
      rmSync(dir)
      renameSync(`${dir}.away`, dir)
    }
    const expected = { markId: mark.id, foldedNodes: explored.length, start: explored[0], end: explored.at(-1) }
    assert.deepEqual({ markId: result.markId, foldedNodes: result.foldedNodes, start: result.start, end: result.end }, expected)
    assert.equal(result.stampError, undefined, 'the result did not wait for the stamp')
    assert.equal(calls.commit.length, 1)
    const report = b.session.events.at(-1)
    assert.deepEqual(report.sourceEventSeqs, explored)
    // Not stamped: the mark still reads active, and the next rewind repairs it without folding.
    assert.equal(await fold.hasActive(store, b.session.id), true)
    const again = foldHost(b, { callId: 'rw', summarize: async () => assert.fail('a repair makes no report') })
    const repaired = await fold.rewind(store, b.session.id, again.host)
    assert.deepEqual({ ...repaired }, { ...expected, foldedChars: result.foldedChars, reportChars: result.reportChars })
    assert.equal(await fold.hasActive(store, b.session.id), false)
    assert.equal(b.session.seq, report.seq + 1, 'nothing appended by the repair')
  })

  it('FOLD_IN_PROGRESS while the same session is folding; the first fold still lands', async () => {
    const store = tempStore()
    const b = builder('in-progress')
    const { mark, explored } = await exploration(b, store)
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    let release
    const gate = new Promise((resolve) => (release = resolve))
    let entered
    const inSummarize = new Promise((resolve) => (entered = resolve))
    const first = foldHost(b, {
      callId: 'rw',
      summarize: async () => {
        entered()
        await gate
        return REPORT
      },
    })
    const running = fold.rewind(store, b.session.id, first.host)
    await inSummarize
    const second = foldHost(b, { callId: 'rw' })
    await rejectsWith(fold.rewind(store, b.session.id, second.host), 'FOLD_IN_PROGRESS')
    assert.equal(second.calls.summarize.length, 0)
    release()
    const result = await running
    assert.equal(result.markId, mark.id)
    assert.deepEqual(b.session.events.at(-1).sourceEventSeqs, explored)
  })
})

describe('rewind over real DSH sessions: failures before the commit write nothing', () => {
  async function ready(name) {
    const store = tempStore()
    const b = builder(name)
    const x = await exploration(b, store)
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    return { store, b, ...x, seq: b.seq, surface: nodes(b) }
  }

  it('retries empty completions, then folds with the first non-empty report', async () => {
    const { store, b, mark, explored } = await ready('retry')
    const replies = ['', '   \n', REPORT]
    const host = foldHost(b, { callId: 'rw', summarize: async (_r, attempt) => replies[attempt] })
    await foldAndCheck(b, store, mark, explored, { host, attempts: 3 })
  })

  it('SUMMARIZE_FAILED after the retries, with the finish reason and usage', async () => {
    const { store, b, seq, surface } = await ready('empty')
    const { host, calls } = foldHost(b, {
      callId: 'rw',
      summarize: async () => ({ text: '', finish: 'length', usage: { outputTokens: 1024, reasoningTokens: 1000 } }),
    })
    await assert.rejects(fold.rewind(store, b.session.id, host, { maxSummarizationRetries: 1 }), (e) => {
      assert.equal(e.code, 'SUMMARIZE_FAILED')
      // The reference's wording: retries counted, not attempts.
      assert.match(e.message, /no text report content after 1 retries \(finish: length, outputTokens: 1024, reasoningTokens: 1000\)/)
      return true
    })
    assert.equal(calls.summarize.length, 2)
    await assertUntouched(b, store, seq, surface)
  })

  it('SUMMARIZE_FAILED with the summarizer\'s own error as cause', async () => {
    const { store, b, seq, surface } = await ready('throws')
    const boom = new Error('provider unreachable')
    const { host } = foldHost(b, { callId: 'rw', summarize: async () => { throw boom } })
    await assert.rejects(fold.rewind(store, b.session.id, host), (e) => {
      assert.equal(e.code, 'SUMMARIZE_FAILED')
      assert.match(e.message, /provider unreachable/)
      assert.equal(e.cause, boom)
      return true
    })
    await assertUntouched(b, store, seq, surface)
  })

  it('SHRINK when the report is not shorter than the region', async () => {
    const { store, b, seq, surface, mark } = await ready('shrink')
    const region = selectRegion(b.session, mark.logLength, 'rw')
    const { host, calls } = foldHost(b, { callId: 'rw', summarize: async () => 'x'.repeat(region.foldedChars) })
    await rejectsWith(fold.rewind(store, b.session.id, host), 'SHRINK')
    assert.equal(calls.commit.length, 0)
    await assertUntouched(b, store, seq, surface)
  })

  it('ABORTED while the summarizer hangs, with the signal\'s reason as cause', async () => {
    const { store, b, seq, surface } = await ready('abort')
    const controller = new AbortController()
    const { host, calls } = foldHost(b, {
      callId: 'rw',
      summarize: () => {
        setImmediate(() => controller.abort(new Error('user pressed Esc')))
        return new Promise(() => {}) // never settles
      },
    })
    await assert.rejects(fold.rewind(store, b.session.id, host, { signal: controller.signal }), (e) => {
      assert.equal(e.code, 'ABORTED')
      assert.equal(e.cause.message, 'user pressed Esc')
      return true
    })
    assert.equal(calls.commit.length, 0)
    await assertUntouched(b, store, seq, surface)
  })

  it('an async commit breaks the contract: HOST_FAILED, and the report it appended is finished by the next rewind', async () => {
    const { store, b, seq, mark, explored } = await ready('async-commit')
    const { host } = foldHost(b, { callId: 'rw' })
    const asyncCommit = async (plan) => host.commit(plan)
    await rejectsWith(fold.rewind(store, b.session.id, { ...host, commit: asyncCommit }), 'HOST_FAILED', /must synchronously return/)
    // the append did run: the report is on the surface, the mark is not stamped
    assert.equal(b.seq, seq + 1)
    assert.deepEqual(b.session.events.at(-1).sourceEventSeqs, explored)
    assert.equal(await fold.hasActive(store, b.session.id), true)
    const repair = foldHost(b, { callId: 'rw', summarize: async () => assert.fail('no second report') })
    const result = await fold.rewind(store, b.session.id, repair.host)
    assert.equal(result.markId, mark.id)
    assert.deepEqual([result.start, result.end, result.foldedNodes], [explored[0], explored.at(-1), explored.length])
    assert.equal(b.seq, seq + 1)
    assert.equal(await fold.hasActive(store, b.session.id), false)
    b.result('rw', 'Folded.')
    assert.deepEqual(protocolProblems(b.session.deriveMessages()), [])
  })

  it('NO_CHECKPOINT without a mark', async () => {
    const store = tempStore()
    const b = builder('no-mark')
    b.user('hello')
    const { host } = foldHost(b)
    await rejectsWith(fold.rewind(store, b.session.id, host), 'NO_CHECKPOINT')
  })
})

describe('the reference defects (shared/dsh-facts.md), with the reference numbers', () => {
  it('defect 1: a compaction appended after the mark over pre-mark nodes is not folded (surface [6,2,3,4,5,7], logLength 3 → [4,5])', async () => {
    const store = tempStore()
    const b = builder('defect1')
    assert.equal(b.user('Earlier: we set up the repository.'), 0)
    assert.equal(b.user('The parser rejects nested lists. Find out why.'), 1)
    assert.equal(b.assistant({ text: 'Marking this investigation.', calls: [{ id: 'ck', name: 'checkpoint', args: { objective: 'nested lists' } }] }), 2)
    const mark = await fold.mark(store, b.session.id, b.session.seq, 'nested lists')
    assert.equal(mark.logLength, 3)
    assert.equal(b.result('ck', JSON.stringify({ markId: mark.id })), 3)
    assert.equal(b.assistant({ calls: [{ id: 'r1', name: 'read', args: { path: 'src/parser.rs' } }] }), 4)
    assert.equal(b.result('r1', output('src/parser.rs')), 5)
    // compaction lands mid-exploration over the pre-mark history [0..1], carrying the request
    assert.equal(b.replace(0, 1, 'Summary: the user asked why the parser rejects nested lists.'), 6)
    assert.equal(b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] }), 7)
    assert.deepEqual(nodes(b), [6, 2, 3, 4, 5, 7])
    // what the reference's `seq >= logLength` rule would fold
    const surface = nodes(b)
    assert.deepEqual(surface.slice(surface.findIndex((s) => s >= mark.logLength), surface.indexOf(7)), [6, 2, 3, 4, 5])

    await foldAndCheck(b, store, mark, [4, 5])

    assert.deepEqual(nodes(b), [6, 2, 3, 8, 7, 9])
    // the compaction summary (with the user's request) and the checkpoint pair survive
    assert.match(b.session.deriveMessages()[0].content[0].text, /nested lists/)
  })

  // Defect 2 (the turn guard that returns void) belongs to the plugin: __test__/plugin.test.mjs.

  it('defect 3: exploration issued with the checkpoint call in one message is folded whole, no call orphaned', async () => {
    const store = tempStore()
    const b = builder('defect3')
    const request = b.user('The parser rejects nested lists. Find out why.')
    const parallel = b.assistant({
      text: 'Checkpoint, and read both files at once.',
      calls: [
        { id: 'ck', name: 'checkpoint', args: { objective: 'nested lists' } },
        { id: 'r1', name: 'read', args: { path: 'src/parser.rs' } },
        { id: 'r2', name: 'read', args: { path: 'src/lexer.rs' } },
      ],
    })
    const mark = await fold.mark(store, b.session.id, b.session.seq, 'nested lists')
    const results = [b.result('ck', JSON.stringify({ markId: mark.id })), b.result('r1', output('src/parser.rs')), b.result('r2', output('src/lexer.rs'))]
    const a2 = b.assistant({ calls: [{ id: 'g1', name: 'grep', args: { pattern: 'parse_list' } }] })
    const r3 = b.result('g1', output('grep'))
    const rw = b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    const expected = [parallel, ...results, a2, r3]

    // the reference folds from the first seq >= logLength: the results, not their calls
    const reference = nodes(b).filter((s) => s >= mark.logLength && s < rw)
    assert.deepEqual(reference, [...results, a2, r3])
    const fork = Session.create(SessionId(`${b.session.id}-reference`), b.session.events)
    fork.append('user/message', createUserMessage({ content: [{ type: 'text', text: REPORT }], source: { kind: 'plugin', plugin: 'rewind' } }), {
      surfaceOp: { op: 'replace', start: reference[0], end: reference.at(-1) },
      sourceEventSeqs: reference,
    })
    assert.deepEqual(protocolProblems(fork.deriveMessages()).sort(), ['call ck without its result', 'call r1 without its result', 'call r2 without its result', 'call rw without its result'])

    const { report } = await foldAndCheck(b, store, mark, expected)
    assert.deepEqual(nodes(b), [request, report.seq, rw, b.seq - 1])
  })
})

describe('the mirror on a 10k-event real session', () => {
  it('measures the mirror (described from scratch, then in step) and selectRegion on it', async () => {
    const store = tempStore()
    const b = builder('10k')
    b.user('Explore the whole repository.')
    let mark
    let n = 0
    while (b.seq < 10_000 - 4) {
      const id = `c${n++}`
      b.logOnly()
      b.assistant({ text: `step ${n}`, calls: [{ id, name: 'read', args: { path: `src/file${n}.rs` } }] })
      if (!mark && b.seq >= 5_000) {
        // a mid-call mark half way through
        mark = await fold.mark(store, b.session.id, b.session.seq)
      }
      b.result(id, output(`src/file${n}.rs`))
    }
    b.assistant({ calls: [{ id: 'rw', name: 'rewind' }] })
    const events = b.seq
    const surfaceNodes = b.session.surface.nodes.length
    assert.ok(events >= 9_990 && events <= 10_000, `${events} events`)

    const time = (f) => {
      const t = process.hrtime.bigint()
      const v = f()
      return [Number(process.hrtime.bigint() - t) / 1e6, v]
    }
    const median = (f, runs = 50) => {
      const ms = []
      for (let i = 0; i < runs; i++) ms.push(time(f)[0])
      ms.sort((x, y) => x - y)
      return ms[Math.floor(runs / 2)]
    }

    // The builder's session is detached (no listener): its first use describes it whole.
    const [cold, { mirror, current }] = time(() => surfaceOf(b.session, 'rw'))
    const warm = median(() => surfaceOf(b.session, 'rw'))
    const [selectOnce, region] = time(() => fold.selectRegion(mirror, mark.logLength, current))
    const select = median(() => fold.selectRegion(mirror, mark.logLength, current))
    const plan = median(() => fold.planMatches(region, surfaceOf(b.session, 'rw').mirror, current))
    assert.ok(region.foldedNodes > 3000)
    assert.equal(region.end, b.seq - 2)

    console.log(
      `[10k mirror cost] ${events} events, ${surfaceNodes} surface nodes: ` +
        `described ${cold.toFixed(3)} ms, in step median(50) ${warm.toFixed(3)} ms; ` +
        `selectRegion first ${selectOnce.toFixed(3)} ms, median(50) ${select.toFixed(3)} ms (${region.foldedNodes} nodes); ` +
        `commit check (mirror in step + planMatches) median(50) ${plan.toFixed(3)} ms`,
    )

    // and the fold itself lands on the big session
    const { host } = foldHost(b, { callId: 'rw' })
    const result = await fold.rewind(store, b.session.id, host)
    assert.equal(result.foldedNodes, region.foldedNodes)
    b.result('rw', 'Folded.')
    assert.deepEqual(protocolProblems(b.session.deriveMessages()), [])
  })
})
