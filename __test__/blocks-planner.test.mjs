// The block planner through the addon (`planBlockSummary`) on the mirrors of REAL DeepSeek Harness
// Sessions (@deepseek-ai/dsh-session 0.1.0-rc.8), block ids tracked as block mode tracks them
// (plugin/shared/mirror.js, `trackBlockTool`): the seed's algebra committed for real in DSH's
// compaction vocabulary, each rule as the log shows it, every bad argument, the lock a rewind
// holds, and rewind's region read off the same mirror.
// Planning writes nothing: every test checks the log and the surface are unchanged by it.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import path from 'node:path'
import { after, describe, it } from 'node:test'

import { callBlockIds } from '../plugin/block/args.js'
import { trackBlockTool, withLog } from '../plugin/shared/mirror.js'
import { SessionBuilder, createUserMessage, protocolProblems, tempStore } from './helpers/dsh.mjs'

const require = createRequire(import.meta.url)
const fold = require(path.resolve(import.meta.dirname, '..'))

// Block mode's tool carries block ids, in every mirror of this process (as while the plugin is mounted).
after(trackBlockTool('block_run_code', callBlockIds))

let sessions = 0
const builder = (name = 'b') => new SessionBuilder(`blocks-${name}-${process.pid}-${++sessions}`)
let calls = 0

/**
 * One `block_run_code` step: an assistant message whose calls name block ids, then their results.
 * @param {SessionBuilder} b
 * @param {Array<object | null>} callArgs per call: `block_run_code` arguments (`{ids}` or `{id}`),
 *   or null for a call of another tool
 * @param {{answer?: boolean, text?: string}} [options] `answer: false` leaves the calls open
 * @returns {{message: number, results: number[], ids: string[]}}
 */
function step(b, callArgs, { answer = true, text = 'working on it' } = {}) {
  const ids = callArgs.map(() => `c${++calls}`)
  const message = b.assistant({
    text,
    reasoning: 'think first',
    calls: callArgs.map((args, i) =>
      args === null
        ? { id: ids[i], name: 'read', args: { path: 'README.md' } }
        : { id: ids[i], name: 'block_run_code', args: { ...args, description: 'a step', code: 'return 1' } },
    ),
  })
  const results = answer ? ids.map((id) => b.result(id, `output of ${id}`)) : []
  return { message, results, ids }
}

/** A block step of one call naming `ids`. @param {SessionBuilder} b @param {...string} ids */
const block = (b, ...ids) => step(b, [{ ids }])

/** The session's mirror as block mode hands it over: in step, its log index known. */
const mirror = (/** @type {SessionBuilder} */ b) => withLog(b.session).native

/** Plans on the session now and checks that planning changed nothing. */
function plan(b, targets, requestSeq = b.seq) {
  const before = { seq: b.session.seq, nodes: [...b.session.surface.nodes] }
  try {
    return fold.planBlockSummary(b.session.id, mirror(b), targets, requestSeq)
  } finally {
    assert.deepEqual({ seq: b.session.seq, nodes: [...b.session.surface.nodes] }, before, 'planning writes nothing')
  }
}

/** The commit plan, or a failed assertion. */
function commitPlan(b, targets, requestSeq) {
  const p = plan(b, targets, requestSeq)
  assert.equal(p.status, 'commit', JSON.stringify(p))
  return p.plan
}

/**
 * Commits a plan the way the block plugin does (the interface's four events): the summary
 * replaces the range and carries `remaining` in `source.blockPtc`.
 */
function commit(b, p, requestSeq = b.seq) {
  const compactionId = `blk-${b.seq}`
  const s = b.session
  const start = s.append('compaction/start', { compactionId, turn: null }).seq
  const summary = s.append('compaction/summary', {
    compactionId,
    summary: [{ type: 'text', text: 'summary' }],
    shadowedRange: { start: p.start, end: p.end },
    shadowedSeqs: Array.from(p.seqs),
    shadowedTokenCount: 10,
    provider: 'scripted',
    model: 'm1',
  }).seq
  const replacement = s.append(
    'user/message',
    createUserMessage({
      content: [{ type: 'text', text: `<block-summary>\n${p.closed.join(',')} done\n</block-summary>` }],
      source: { kind: 'plugin', plugin: 'compact', compactionId, blockPtc: { remaining: p.remaining, closed: p.closed, requestSeq } },
    }),
    { surfaceOp: { op: 'replace', start: p.start, end: p.end }, sourceEventSeqs: [start, summary, ...p.seqs] },
  ).seq
  s.append('compaction/end', { compactionId, turn: null })
  return replacement
}

/** The surface in the seed's notation: a block step by its ids, a summary as S[ids], a user message as u. */
function shape(b) {
  const log = b.session.events
  return b.session.surface.nodes
    .map((seq) => {
      const e = log[seq]
      if (e.type === 'user/message') return e.data.source.blockPtc ? `S[${e.data.source.blockPtc.remaining.join(',')}]` : 'u'
      if (e.type === 'assistant/message') {
        const ids = e.data.message.content.filter((c) => c.type === 'tool-call' && c.name === 'block_run_code').flatMap((c) => JSON.parse(c.arguments).ids ?? [JSON.parse(c.arguments).id])
        return ids.join(',') || 'x'
      }
      return null
    })
    .filter(Boolean)
    .join(' ')
}

/** An assertion that `fn` throws a FoldError with `code` whose message matches `re`. */
function throwsCoded(fn, code, re) {
  assert.throws(fn, (e) => {
    assert.equal(e.code, code, e.message)
    assert.equal(e.name, 'FoldError')
    assert.ok(fold.isFoldError(e))
    if (re) assert.match(e.message, re)
    return true
  })
}

const seed = () => {
  const b = builder('seed')
  b.user('do the work')
  for (const id of ['A', 'A', 'B', 'A', 'C', 'B']) block(b, id)
  return b
}

describe('the seed\'s algebra on a real session, committed in DSH\'s compaction vocabulary', () => {
  it('A A B A C B --[A]--> S[B] C B --[B]--> S[C] --[C]--> S[] and the DSH session accepts every commit', () => {
    const b = seed()
    assert.equal(shape(b), 'u A A B A C B')
    const a = commitPlan(b, ['A'])
    assert.deepEqual([a.remaining, a.closed, a.seqs.length], [['B'], ['A'], 8])
    assert.equal(a.start, b.session.surface.nodes[1])
    commit(b, a)
    assert.equal(shape(b), 'u S[B] C B')
    commit(b, commitPlan(b, ['B']))
    assert.equal(shape(b), 'u S[C]')
    const c = commitPlan(b, ['C'])
    assert.deepEqual([c.remaining, c.seqs.length], [[], 1])
    commit(b, c)
    assert.equal(shape(b), 'u S[]', 'a summary with no ids left stays')
    assert.deepEqual(protocolProblems(b.session.deriveMessages()), [])
    throwsCoded(() => plan(b, ['C']), 'UNKNOWN_BLOCK', /no block is open/)
  })

  it('A A B A C B --[A, B]--> S[C]', () => {
    const b = seed()
    const p = commitPlan(b, ['A', 'B'])
    assert.deepEqual([p.remaining, p.closed], [['C'], ['A', 'B']])
    commit(b, p)
    assert.equal(shape(b), 'u S[C]')
  })
})

describe('attribution read off the log', () => {
  it('a call tags its whole message (text, reasoning, calls) and its result; the legacy `id` is `ids: [id]`', () => {
    const b = builder()
    b.user('go')
    const s = step(b, [{ id: 'legacy' }])
    b.user('next')
    const p = commitPlan(b, ['legacy'])
    assert.deepEqual(Array.from(p.seqs), [s.message, ...s.results])
  })

  it('several block calls in one message tag it with the union; calls of other tools tag nothing', () => {
    const b = builder()
    const s = step(b, [{ ids: ['A'] }, null, { ids: ['B', 'C'] }])
    block(b, 'C')
    const p = commitPlan(b, ['B'])
    assert.deepEqual(Array.from(p.seqs), [s.message, ...s.results])
    assert.deepEqual(p.remaining, ['A', 'C'])
    throwsCoded(() => plan(b, ['read']), 'UNKNOWN_BLOCK', /"read"/)
  })

  it('a call the plugin refuses (both `id` and `ids`, duplicates, empty) tags nothing', () => {
    const b = builder()
    step(b, [{ id: 'A', ids: ['A'] }])
    step(b, [{ ids: ['B', 'B'] }])
    step(b, [{ ids: [] }])
    step(b, [{ ids: [''] }])
    throwsCoded(() => plan(b, ['A']), 'UNKNOWN_BLOCK', /no block is open/)
    throwsCoded(() => plan(b, ['B']), 'UNKNOWN_BLOCK')
  })

  it('arguments that are not JSON tag nothing', () => {
    const b = builder()
    const m = b.assistant({ calls: [{ id: 'bad', name: 'block_run_code', args: '{"ids": ["A"' }] })
    b.result('bad', 'invalid arguments')
    assert.equal(m, 0)
    throwsCoded(() => plan(b, ['A']), 'UNKNOWN_BLOCK')
  })

  it('another block tool name reads that tool\'s calls while it is tracked (the mirrors rebuild)', () => {
    const b = builder()
    const m = b.assistant({ calls: [{ id: 'x1', name: 'my_block_tool', args: { ids: ['A'] } }] })
    b.result('x1', 'ok')
    throwsCoded(() => plan(b, ['A']), 'UNKNOWN_BLOCK')
    const untrack = trackBlockTool('my_block_tool', callBlockIds)
    try {
      assert.equal(plan(b, ['A']).plan.start, m)
    } finally {
      untrack()
    }
    throwsCoded(() => plan(b, ['A']), 'UNKNOWN_BLOCK')
  })
})

describe('range and pairing', () => {
  it('the range is the run from the first to the last node of the targets; messages between go with it, the rest stays', () => {
    const b = builder()
    const before = b.user('first request')
    const a1 = block(b, 'A')
    const u = b.user('also check the tests')
    const bb = block(b, 'B')
    const a2 = block(b, 'A')
    const after = b.user('thanks')
    const p = commitPlan(b, ['A'])
    assert.deepEqual(Array.from(p.seqs), [a1.message, ...a1.results, u, bb.message, ...bb.results, a2.message, ...a2.results])
    assert.ok(!p.seqs.includes(before) && !p.seqs.includes(after))
    assert.deepEqual(p.remaining, ['B'])
    commit(b, p)
    assert.deepEqual(protocolProblems(b.session.deriveMessages()), [])
  })

  it('a result in the range pulls in the call issued before it, so nothing is orphaned', () => {
    const b = builder()
    b.user('go')
    const early = step(b, [null], { answer: false })
    const a = step(b, [{ ids: ['A'] }], { answer: false })
    const late = b.result(early.ids[0], 'late output')
    const ar = b.result(a.ids[0], 'a output')
    const p = commitPlan(b, ['A'])
    assert.deepEqual(Array.from(p.seqs), [early.message, a.message, late, ar])
    commit(b, p)
    assert.deepEqual(protocolProblems(b.session.deriveMessages()), [])
  })
})

describe('pending', () => {
  it('a summary asked for inside its own block waits for the program\'s result, then covers it', () => {
    const b = builder()
    b.user('go')
    block(b, 'A')
    const asking = step(b, [{ ids: ['A'] }], { answer: false })
    const requestSeq = b.seq
    const p = plan(b, ['A'], requestSeq)
    assert.deepEqual([p.status, p.waitFor], ['pending', 'results'])
    assert.match(p.reason, /^waiting for 1 tool call/)
    assert.doesNotMatch(p.reason, /\.$/, 'a phrase for the note, no full stop')
    const r = b.result(asking.ids[0], '{"replaced": 0, "pending": true}')
    const done = commitPlan(b, ['A'], requestSeq)
    assert.equal(done.end, r)
  })

  it('a summary asked for from another block commits at once and leaves the asking call alone', () => {
    const b = builder()
    const a = block(b, 'A')
    const asking = step(b, [{ ids: ['B'] }], { answer: false })
    const p = commitPlan(b, ['A'])
    assert.deepEqual(Array.from(p.seqs), [a.message, ...a.results])
    commit(b, p)
    b.result(asking.ids[0], 'ok')
    assert.deepEqual(protocolProblems(b.session.deriveMessages()), [])
  })

  it('an unmatched compaction/start makes it wait until its end, or until a session/end-seed makes it stale', () => {
    const b = builder()
    block(b, 'A')
    b.session.append('compaction/start', { compactionId: 'other', turn: null })
    const p = plan(b, ['A'])
    assert.deepEqual([p.status, p.waitFor], ['pending', 'compaction'])
    b.session.append('compaction/end', { compactionId: 'other', turn: null, error: 'gave up' })
    assert.equal(plan(b, ['A']).status, 'commit')
    // A crash inside a bracket, then a restore: DSH reads that start as stale, so does the planner.
    b.session.append('compaction/start', { compactionId: 'crashed', turn: null })
    assert.equal(plan(b, ['A']).waitFor, 'compaction')
    b.session.append('session/end-seed', {})
    assert.equal(plan(b, ['A']).status, 'commit')
  })
})

describe('rejections: nothing changes', () => {
  it('unknown ids: UNKNOWN_BLOCK naming them and the open blocks', () => {
    const b = seed()
    throwsCoded(() => plan(b, ['A', 'typo']), 'UNKNOWN_BLOCK', /block id\(s\) "typo"; the open blocks are "A", "B", "C"/)
  })

  it('a user message that arrived after the request inside the range: STALE; before it: part of the summary', () => {
    const b = builder()
    block(b, 'A')
    const requestSeq = b.seq
    const u = b.user('actually, use the other branch')
    block(b, 'A')
    throwsCoded(() => plan(b, ['A'], requestSeq), 'STALE', new RegExp(`seq ${u}.*write the summary again`))
    assert.equal(plan(b, ['A'], u + 1).status, 'commit')
  })

  it('agent instructions injected after the request count as new messages too (the model has not read them)', () => {
    const b = builder()
    block(b, 'A')
    const requestSeq = b.seq
    b.user('<system-reminder>AGENTS.md: never push</system-reminder>', { kind: 'agent-instructions' })
    block(b, 'A')
    throwsCoded(() => plan(b, ['A'], requestSeq), 'STALE')
  })

  it('block mode\'s own note about a summary it did not apply is no new user message: a summary written before it still lands', () => {
    const b = builder()
    block(b, 'A')
    const requestSeq = b.seq
    b.user('[block mode] Your summary of block B was not applied: STALE: …', { kind: 'plugin', plugin: 'dsh-fold/block', form: 'notice', summary: 'Block summary not applied: B', blockNotice: { requestSeqs: [1] } })
    block(b, 'A')
    assert.equal(plan(b, ['A'], requestSeq).status, 'commit')
  })

  it('another producer\'s compaction over part of the range after the request: STALE; before it: replaced without its ids', () => {
    const b = builder()
    block(b, 'A')
    const bb = block(b, 'B')
    block(b, 'A')
    const requestSeq = b.seq
    // What dsh-compaction-basic writes: a compact checkpoint without blockPtc.
    const r = b.replace(bb.message, bb.results[0])
    throwsCoded(() => plan(b, ['A'], requestSeq), 'STALE', new RegExp(`a rewind report or a compaction \\(seq ${r}\\)`))
    const p = commitPlan(b, ['A'], r + 1)
    assert.deepEqual(p.remaining, [], 'the compaction ended B')
    throwsCoded(() => plan(b, ['B']), 'UNKNOWN_BLOCK', /"B" was already replaced by another compaction/)
  })

  it('a protected message in the range: PROTECTED (the default rule: a system-kind message; or the host\'s own rule)', () => {
    const b = builder()
    block(b, 'A')
    const sys = b.user('you are a careful agent', { kind: 'system' })
    const instructions = b.user('AGENTS.md says', { kind: 'agent-instructions' })
    block(b, 'A')
    throwsCoded(() => plan(b, ['A']), 'PROTECTED', new RegExp(`seq ${sys}\\)`))
    // rc.8 puts no system message on the surface: without that node, nothing is protected...
    const c = builder()
    block(c, 'A')
    c.user('AGENTS.md says', { kind: 'agent-instructions' })
    block(c, 'A')
    assert.equal(plan(c, ['A']).status, 'commit')
    assert.ok(instructions > sys)
  })

  it('UNKNOWN_BLOCK, PROTECTED and STALE are dsh-fold codes', () => {
    for (const code of ['UNKNOWN_BLOCK', 'PROTECTED', 'STALE']) assert.ok(fold.foldErrorCodes().includes(code))
  })
})

describe('block ids', () => {
  it('are compared and returned as exact UTF-16: lone surrogates stay distinct, any script works', () => {
    const b = builder()
    const high = step(b, [{ ids: ['\ud800', '块-🧱'] }])
    const low = step(b, [{ ids: ['\udbff'] }])
    const p = commitPlan(b, ['\ud800'])
    assert.deepEqual(Array.from(p.seqs), [high.message, ...high.results])
    assert.deepEqual([p.remaining, p.closed], [['块-🧱'], ['\ud800']])
    assert.equal(commitPlan(b, ['\udbff']).start, low.message)
    throwsCoded(() => plan(b, ['\udfff']), 'UNKNOWN_BLOCK')
  })
})

describe('bad arguments: INVALID_ARGUMENT naming them, thrown synchronously, nothing planned', () => {
  const b = seed()
  const good = () => mirror(b)
  const call = (...args) => () => fold.planBlockSummary(...args)
  const MIRROR = /mirror must be the session's SessionMirror \(plugin\/shared\/mirror\.js: mirrorOf\(session\)\.native\), got /
  const unlearnt = () => {
    // A mirror loaded from a surface, its log index (DSH's compaction lock) not learnt yet.
    const m = new fold.SessionMirror()
    m.load(Uint32Array.of(3, 1, 0, 1, 0, 0, (1 << 2) | 1 | (1 << 8), 0, 5, 0xffff_ffff, 0, 0, 0, 0, 0, 0, 0xffff_ffff, 0, 0))
    return m
  }
  const cases = [
    ['sessionId missing', call(undefined, good(), ['A'], 0), /sessionId must be a string, got undefined/],
    ['sessionId a number', call(7, good(), ['A'], 0), /sessionId must be a string, got the number 7/],
    ['sessionId empty', call('', good(), ['A'], 0), /sessionId must be a non-empty string/],
    ['mirror null', call('s', null, ['A'], 0), /got null/],
    ['mirror a block snapshot (a Uint32Array)', call('s', Uint32Array.of(2, 0, 0, 0, 0, 0), ['A'], 0), MIRROR],
    ['mirror a plain object', call('s', { words: Uint32Array.of(2), ids: ['A'] }, ['A'], 0), MIRROR],
    ['mirror a string', call('s', 'words', ['A'], 0), /got a string/],
    ['mirror whose log index is not known yet', call('s', unlearnt(), ['A'], 0), /its log index is not known/],
    ['targets a string', call('s', good(), 'A', 0), /targets must be an array of block id strings, got a string/],
    ['targets with null', call('s', good(), ['A', null], 0), /targets\[1\] must be a string, got null/],
    ['targets empty', call('s', good(), [], 0), /targets must name at least one block id/],
    ['targets with an empty id', call('s', good(), [''], 0), /targets\[0\] is an empty string/],
    ['targets repeated', call('s', good(), ['A', 'A'], 0), /targets\[1\] repeats targets\[0\] \("A"\)/],
    ['requestSeq missing', call('s', good(), ['A']), /requestSeq must be a number, got undefined/],
    ['requestSeq negative', call('s', good(), ['A'], -1), /requestSeq must be an integer from 0/],
    ['requestSeq fractional', call('s', good(), ['A'], 1.5), /requestSeq must be an integer/],
    ['requestSeq NaN', call('s', good(), ['A'], NaN), /requestSeq must be an integer/],
    ['requestSeq past the log', call('s', good(), ['A'], 10_000), /requestSeq 10000 is past the log's length/],
  ]
  for (const [what, fn, re] of cases) {
    it(what, () => {
      const before = [...b.session.surface.nodes]
      throwsCoded(fn, 'INVALID_ARGUMENT', re)
      assert.deepEqual([...b.session.surface.nodes], before)
    })
  }
})

describe('the lock a rewind holds, and rewind beside block mode', () => {
  it('while a rewind of the session runs, its block summaries wait; other sessions plan; after it, the plan commits', async () => {
    const store = tempStore()
    const b = builder('locked')
    b.user('explore, then fold')
    const cp = b.assistant({ calls: [{ id: 'cp', name: 'checkpoint', args: {} }] })
    await fold.mark(store, b.session.id, b.seq)
    b.result('cp', 'marked')
    const a = block(b, 'A')
    block(b, 'A')
    const other = seed()

    let release
    const gate = new Promise((resolve) => (release = resolve))
    let summarizing
    const started = new Promise((resolve) => (summarizing = resolve))
    const host = {
      snapshot: () => mirror(b),
      summarize: async () => {
        summarizing()
        await gate
        return 'a short report'
      },
      commit: () => 'changed',
    }
    const rewinding = fold.rewind(store, b.session.id, host)
    await started
    const p = plan(b, ['A'])
    assert.deepEqual([p.status, p.waitFor], ['pending', 'rewind'])
    assert.match(p.reason, /rewind of this session/)
    assert.equal(plan(other, ['A']).status, 'commit', 'only that session waits')
    release()
    await assert.rejects(rewinding, (e) => e.code === 'CHANGED')
    const done = commitPlan(b, ['A'])
    assert.equal(done.start, a.message)
    assert.ok(cp < a.message)
  })

  it('rewind\'s region and block mode\'s plan read the same mirror', () => {
    const b = builder('v1')
    b.user('go')
    block(b, 'A')
    block(b, 'B')
    const region = fold.selectRegion(mirror(b), 1)
    assert.deepEqual(Array.from(region.seqs), b.session.surface.nodes.slice(1))
    assert.equal(plan(b, ['B']).status, 'commit')
  })
})
