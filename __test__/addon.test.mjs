// The addon's API surface beyond the store verbs (see store.test.mjs): region selection and the
// commit check on session mirrors written by hand, the coded errors, sync/async parity, loading in
// a worker thread, and rewind's argument validation (rejected promises, never throws).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { Worker } from 'node:worker_threads'

import { addon, addonPath } from '../plugin/shared/addon.js'
import { withTimeout } from '../plugin/fold/summarize.js'
import { tempStore } from './helpers/dsh.mjs'
import { handMirror, handWords } from './helpers/mirror-records.mjs'

const fold = addon

const NONE = 0xffff_ffff
const NOTHING_AFTER_MARK = 'no surface nodes after the checkpoint mark'
const NOTHING_BEFORE_REWIND = 'no surface nodes between the checkpoint mark and the rewind call'
const REFERENCE_CODES = ['NO_CHECKPOINT', 'EMPTY_REGION', 'UNBALANCED', 'FOLD_IN_PROGRESS', 'CHANGED', 'SHRINK']

// ---- surfaces as session mirrors, written by hand (__test__/helpers/mirror-records.mjs) --------

/** A user node. */
const u = (seq, extra = {}) => ({ seq, kind: 1, chars: 10, ...extra })
/** An assistant node opening `opens` tool calls. */
const a = (seq, opens = 0, extra = {}) => ({ seq, kind: 2, chars: 10, link: opens, ...extra })
/** A tool result answering a call of assistant `opener` (undefined: unknown call). */
const r = (seq, opener, extra = {}) => ({ seq, kind: 3, chars: 10, link: opener === undefined ? 0 : opener + 1, ...extra })

/**
 * The surface `nodes` (in model order) as a session's mirror, and the rewind call's message.
 * @param {{seq: number, kind: number, origin?: number, chars?: number, link?: number}[]} nodes
 * @param {{events?: number, current?: number, others?: any[]}} [options]
 */
const surface = (nodes, { events, current, others } = {}) => ({ mirror: handMirror(nodes, { events, others }), current })
const select = (nodes, anchor, options) => {
  const s = surface(nodes, options)
  return fold.selectRegion(s.mirror, anchor, s.current)
}
const seqsOf = (region) => Array.from(region.seqs)

const isCoded = (code, message) => (e) => {
  assert.ok(e instanceof Error, 'an Error')
  assert.equal(e.name, 'FoldError')
  assert.equal(e.code, code, e.message)
  assert.ok(fold.isFoldError(e))
  if (message instanceof RegExp) assert.match(e.message, message)
  else if (message !== undefined) assert.equal(e.message, message)
  return true
}

// The usual shape: request, checkpoint call (mark mid-call: anchor 2), its result, exploration.
const MID_CALL = [u(0), a(1, 1), r(2, 1), a(3, 1), r(4, 3), a(5, 1), r(6, 5), a(7, 1)]

describe('selectRegion on session mirrors written by hand', () => {
  it('returns the FoldRegion: balanced span after the anchor, the checkpoint pair kept, the rewind call excluded', () => {
    const region = select(MID_CALL, 2, { current: 7 })
    assert.ok(region.seqs instanceof Uint32Array)
    assert.deepEqual({ ...region, seqs: seqsOf(region) }, {
      markId: 0,
      anchor: 2,
      start: 3,
      end: 6,
      seqs: [3, 4, 5, 6],
      foldedNodes: 4,
      foldedChars: 40,
    })
  })

  it('sums the nodes\' chars, whatever their kind', () => {
    const nodes = [u(0), a(1, 1, { chars: 7 }), r(2, 1), a(3, 1, { chars: 1000 }), r(4, 3, { chars: 123_456 }), { seq: 5, kind: 0, chars: 3 }, a(6, 1)]
    assert.equal(select(nodes, 2, { current: 6 }).foldedChars, 1000 + 123_456 + 3)
  })

  it('defect 1: chooses by origin and surface position, not seq (surface [6,2,3,4,5,7], anchor 3 → [4,5])', () => {
    const nodes = [u(6, { origin: 0 }), a(2, 1), r(3, 2), a(4, 1), r(5, 4), a(7, 1)]
    assert.deepEqual(seqsOf(select(nodes, 3, { current: 7 })), [4, 5])
    // a replacement standing for post-anchor events is folded like them
    const later = [u(0), a(1, 1), r(2, 1), u(8, { origin: 3 }), a(7, 1)]
    assert.deepEqual(seqsOf(select(later, 2, { current: 7 })), [8])
  })

  it('defect 3: exploration issued with the checkpoint call folds the whole message and all its results', () => {
    const nodes = [u(0), a(1, 3), r(2, 1), r(3, 1), r(4, 1), a(5, 1), r(6, 5), a(7, 1)]
    assert.deepEqual(seqsOf(select(nodes, 2, { current: 7 })), [1, 2, 3, 4, 5, 6])
  })

  it('a result inside the region pulls the start back to its call (pairing closure)', () => {
    // a user message stands between a parallel step's results: the step joins the fold whole
    const nodes = [u(0), a(1, 2), r(2, 1), u(3), r(4, 1), a(5, 1)]
    assert.deepEqual(seqsOf(select(nodes, 3, { current: 5 })), [1, 2, 3, 4])
    // a parallel step's only result after the mark is the checkpoint's own: the step stays
    const mid = [u(0), a(1, 2), r(2, 1), r(3, 1), a(4, 1), r(5, 4), a(6, 1)]
    assert.deepEqual(seqsOf(select(mid, 3, { current: 6 })), [4, 5])
  })

  it('an open call ends the region at the last closed cut; none left → UNBALANCED', () => {
    const cut = [u(0), a(1, 1), r(2, 1), a(3, 1), r(4, 3), a(5, 2), r(6, 5), a(7, 1)]
    assert.deepEqual(seqsOf(select(cut, 2, { current: 7 })), [3, 4])
    const none = [u(0), a(1, 1), r(2, 1), a(3, 2), r(4, 3), a(5, 1)]
    assert.throws(() => select(none, 2, { current: 5 }), isCoded('UNBALANCED', /balanced boundary/))
    // a call answered only after the rewind call is open for the fold too
    const late = [u(0), a(1, 1), r(2, 1), a(3, 1), a(5, 1), r(4, 3)]
    assert.throws(() => select(late, 2, { current: 5 }), isCoded('UNBALANCED'))
  })

  it('EMPTY_REGION with the reference messages', () => {
    assert.throws(() => select([u(0), a(1, 1), r(2, 1)], 3), isCoded('EMPTY_REGION', NOTHING_AFTER_MARK))
    assert.throws(() => select([u(0), a(1, 1), r(2, 1)], 2), isCoded('EMPTY_REGION', NOTHING_BEFORE_REWIND))
    assert.throws(() => select([u(0), a(1, 1), r(2, 1), a(3, 1)], 2, { current: 3 }), isCoded('EMPTY_REGION', NOTHING_BEFORE_REWIND))
    assert.throws(() => select([u(0)], 1, { events: 5 }), isCoded('EMPTY_REGION', NOTHING_AFTER_MARK))
    assert.throws(() => select([], 0, { events: 0 }), isCoded('EMPTY_REGION', NOTHING_AFTER_MARK))
  })

  it('orphaned results are never folded alone', () => {
    assert.throws(() => select([u(0), r(1), a(2, 1)], 1, { current: 2 }), isCoded('EMPTY_REGION', NOTHING_BEFORE_REWIND))
    assert.throws(() => select([u(0), r(1)], 1), isCoded('EMPTY_REGION', NOTHING_BEFORE_REWIND))
    // a result whose opener was replaced away (linked to a seq not on the surface) is an orphan too
    assert.throws(() => select([u(3, { origin: 0 }), r(4, 2), a(5, 1)], 4, { current: 5 }), isCoded('EMPTY_REGION', NOTHING_BEFORE_REWIND))
    // an orphan leading real work is skipped, the work is folded
    assert.deepEqual(seqsOf(select([u(0), r(1), a(2, 1), r(3, 2), a(4, 1)], 1, { current: 4 })), [2, 3])
  })

  it('without a current node, the region runs to the tail, or ends before the last assistant with an open call', () => {
    assert.deepEqual(seqsOf(select(MID_CALL.slice(0, 7), 2)), [3, 4, 5, 6])
    // the tail assistant's call is unanswered: it is the current step
    assert.deepEqual(seqsOf(select(MID_CALL, 2)), [3, 4, 5, 6])
  })

  it('reports on the surface do not change the selection', () => {
    const nodes = [...MID_CALL.slice(0, 7), u(8, { origin: 3, report: { markId: 1, sources: [3, 4] } }), a(9, 1)]
    assert.deepEqual(seqsOf(select(nodes, 2, { current: 9 })), [3, 4, 5, 6, 8])
  })

  it('a mirror claiming a huge log (a host bug) answers without a huge allocation', () => {
    const big = [u(4_000_000_000), a(4_000_000_001, 1), r(4_000_000_002, 4_000_000_001), a(4_000_000_003, 1)]
    assert.deepEqual(seqsOf(select(big, 4_000_000_001, { events: 0xffff_fff0, current: 4_000_000_003 })), [4_000_000_001, 4_000_000_002])
  })

  // What no session's mirror can hold: refused when the host describes it, or when a planner reads it.
  const invalid = [
    ['a seq at the event count', () => surface(MID_CALL, { events: 7 }), /is not below the event count 7/],
    ['a repeated seq', () => surface([u(0), u(0)]), /event 0 is described twice/],
    ['an origin after its seq', () => surface([u(0, { origin: 1 }), u(1)]), /origin 1 is after its seq/],
    ['a user node with a link', () => surface([u(0, { link: 1 })]), /a User node cannot link to calls/],
    ['a result linked to a later event', () => surface([r(0, 1), a(1, 1)]), /answers a call of later event 1/],
    ['a result linked to its own seq', () => surface([u(0), r(1, 1)]), /answers a call of later event 1/],
    ['a result linked to a user node', () => surface([u(0), r(1, 0)]), /linked to 0 which is not an assistant node/],
    ['more results than calls', () => surface([a(0, 1), r(1, 0), r(2, 0)]), /has more results than its 1 call/],
    ['a current seq not on the surface', () => surface(MID_CALL, { events: 20, current: 15 }), /current seq 15 is not on the surface/],
    ['a current seq that is not an assistant', () => surface(MID_CALL, { current: 2 }), /current seq 2 is not an assistant node/],
  ]
  for (const [name, build, message] of invalid) {
    it(`a mirror with ${name} → INVALID_ARGUMENT, thrown synchronously`, () => {
      assert.throws(() => {
        const s = build()
        fold.selectRegion(s.mirror, 0, s.current)
      }, isCoded('INVALID_ARGUMENT', message))
    })
  }

  const notMirrors = [
    ['a v1 snapshot (a Uint32Array)', () => new Uint32Array([1, 3, NONE, 0, 0])],
    ['an Array', () => [1, 3, NONE, 0, 0]],
    ['a plain object', () => ({ eventCount: 3 })],
    ['a JSON string', () => '[1,3]'],
    ['null', () => null],
    ['undefined', () => undefined],
  ]
  for (const [name, value] of notMirrors) {
    it(`a surface that is ${name} → INVALID_ARGUMENT`, () => {
      const expected = /mirror must be the session's SessionMirror \(plugin\/shared\/mirror\.js: mirrorOf\(session\)\.native\), got /
      assert.throws(() => fold.selectRegion(value(), 2), isCoded('INVALID_ARGUMENT', expected))
      assert.throws(() => fold.planMatches({ anchor: 2, seqs: new Uint32Array([3]) }, value()), isCoded('INVALID_ARGUMENT', expected))
    })
  }

  for (const [name, anchor] of [['negative', -1], ['fractional', 1.5], ['NaN', NaN], ['Infinity', Infinity], ['a string', '2'], ['a bigint', 2n], ['over u32', 2 ** 32], ['missing', undefined]]) {
    it(`an anchor that is ${name} → INVALID_ARGUMENT`, () => {
      assert.throws(() => fold.selectRegion(surface(MID_CALL).mirror, anchor), isCoded('INVALID_ARGUMENT', /anchor/))
    })
  }
})

describe('planMatches: the commit-time check', () => {
  const { mirror } = surface(MID_CALL)
  const matches = (plan, nodes, options = {}) => fold.planMatches(plan, surface(nodes, options).mirror, 7)

  it('holds for the region just selected, as a FoldRegion or a plain {anchor, seqs}', () => {
    const region = fold.selectRegion(mirror, 2, 7)
    assert.equal(fold.planMatches(region, mirror, 7), true)
    assert.equal(fold.planMatches({ anchor: 2, seqs: new Uint32Array([3, 4, 5, 6]) }, mirror, 7), true)
    // a FoldPlan carries more fields; only anchor and seqs matter
    assert.equal(fold.planMatches({ ...region, markId: 9, report: 'r', reportChars: 1 }, mirror, 7), true)
    // a surface with more nodes after the current one still matches
    assert.equal(matches(region, [...MID_CALL, r(8, 7)]), true)
  })

  it('fails when the region moved: another anchor, other seqs, a replace inside, a new node inside', () => {
    const region = fold.selectRegion(mirror, 2, 7)
    assert.equal(fold.planMatches({ anchor: 4, seqs: region.seqs }, mirror, 7), false)
    assert.equal(fold.planMatches({ anchor: 2, seqs: new Uint32Array([3, 4]) }, mirror, 7), false)
    assert.equal(fold.planMatches({ anchor: 2, seqs: new Uint32Array([]) }, mirror, 7), false)
    const compacted = [u(0), a(1, 1), r(2, 1), u(8, { origin: 3 }), a(5, 1), r(6, 5), a(7, 1)]
    assert.equal(matches(region, compacted), false)
    // (a node of kind other: a user message or an answer after the last tool work stays out)
    const grown = [...MID_CALL.slice(0, 7), { seq: 8, kind: 0 }, a(7, 1)]
    assert.equal(matches(region, grown, { events: 9 }), false)
  })

  it('is false, not a throw, when the surface now selects nothing', () => {
    const region = fold.selectRegion(mirror, 2, 7)
    const folded = [u(0), a(1, 1), r(2, 1), u(8, { origin: 3 }), a(7, 1)]
    assert.equal(fold.planMatches({ anchor: 9, seqs: region.seqs }, surface(folded).mirror, 7), false)
    assert.equal(matches(region, [u(0), a(1, 1), r(2, 1), a(3, 2), r(4, 3), a(7, 1)]), false)
  })

  it('throws INVALID_ARGUMENT for a bad plan', () => {
    for (const plan of [null, undefined, 3, 'plan', {}, { anchor: 2 }, { anchor: -1, seqs: new Uint32Array([3]) }, { anchor: 2, seqs: [3, 4, 5, 6] }, { anchor: 2, seqs: new Int32Array([3]) }]) {
      assert.throws(() => fold.planMatches(plan, mirror, 7), isCoded('INVALID_ARGUMENT'), `plan ${String(plan && JSON.stringify(plan))}`)
    }
  })
})

describe('coded errors', () => {
  it('foldErrorCodes() lists every code: the reference six, the store\'s, the fold\'s and INVALID_ARGUMENT', () => {
    const codes = fold.foldErrorCodes()
    assert.deepEqual(codes, [
      ...REFERENCE_CODES,
      'SUMMARIZE_FAILED',
      'ABORTED',
      'HOST_FAILED',
      'STORE_CORRUPT',
      'STORE_VERSION',
      'STORE_IO',
      'STORE_LOADING',
      'INVALID_ARGUMENT',
      'UNKNOWN_BLOCK',
      'PROTECTED',
      'STALE',
      'COMPACTION_BUSY',
      'INTERNAL',
    ])
    assert.equal(new Set(codes).size, codes.length)
    codes.push('MUTATED')
    assert.equal(fold.foldErrorCodes().includes('MUTATED'), false, 'a fresh array each call')
  })

  it('thrown (sync) and rejected (async) errors are Errors named FoldError with a code and a stack', async () => {
    let thrown
    try {
      fold.selectRegion(new Uint32Array(1), 0)
    } catch (e) {
      thrown = e
    }
    const rejected = await fold.mark(tempStore(), '', 1).catch((e) => e)
    for (const e of [thrown, rejected]) {
      assert.ok(e instanceof Error)
      assert.equal(e.name, 'FoldError')
      assert.equal(e.code, 'INVALID_ARGUMENT')
      assert.equal(typeof e.message, 'string')
      assert.ok(e.message.length > 0)
      assert.equal(typeof e.stack, 'string')
      assert.ok(fold.isFoldError(e))
      assert.ok(fold.foldErrorCodes().includes(e.code))
    }
  })

  it('isFoldError: an Error with one of our codes, nothing else', () => {
    const coded = (code) => Object.assign(new Error('x'), { code })
    for (const code of fold.foldErrorCodes()) assert.equal(fold.isFoldError(coded(code)), true, code)
    assert.equal(fold.isFoldError(Object.assign(new TypeError('x'), { code: 'SHRINK' })), true)
    const no = [
      undefined, null, 0, 'EMPTY_REGION', Symbol('x'), () => {},
      { code: 'EMPTY_REGION', message: 'not an Error' },
      new Error('no code'),
      coded('ENOENT'),
      coded('empty_region'),
      coded(7),
      Object.assign(new Error('x'), { code: { toString: () => 'SHRINK' } }),
    ]
    for (const value of no) assert.equal(fold.isFoldError(value), false, String(value?.code ?? value?.toString?.()))
    assert.equal(fold.isFoldError(), false)
  })
})

describe('sync / async parity: hasActive and hasActiveSync', () => {
  it('agree on no mark, an active mark, a folded mark and a newer active mark', async () => {
    const store = tempStore()
    // hasActiveSync answers from memory only (STORE_LOADING before the store is loaded; see
    // the next test), so the async read goes first and loads it.
    const both = async (session) => {
      const async_ = await fold.hasActive(store, session)
      const sync = fold.hasActiveSync(store, session)
      assert.equal(sync, async_, `parity for ${session}`)
      return sync
    }
    assert.equal(await both('s'), false)
    const first = await fold.mark(store, 's', 3)
    assert.equal(await both('s'), true)
    assert.equal(await both('other'), false)
    assert.equal(await fold.completeFold(store, 's', first.id), true)
    assert.equal(await both('s'), false)
    await fold.mark(store, 's', 9)
    assert.equal(await both('s'), true)
    // also through a StoreOptions reference to the same file
    assert.equal(fold.hasActiveSync({ path: store }, 's'), await fold.hasActive({ path: store }, 's'))
  })

  it('fail with the same code: sync throws, async rejects (and never throws)', async () => {
    const corrupt = tempStore()
    mkdirSync(path.dirname(corrupt), { recursive: true })
    writeFileSync(corrupt, 'not json')
    const cases = [
      [tempStore(), '', 'INVALID_ARGUMENT'],
      [tempStore(), 42, 'INVALID_ARGUMENT'],
      [42, 's', 'INVALID_ARGUMENT'],
      [{ path: 7 }, 's', 'INVALID_ARGUMENT'],
      [corrupt, 's', 'STORE_CORRUPT'],
    ]
    for (const [store, session, code] of cases) {
      let pending
      assert.doesNotThrow(() => (pending = fold.hasActive(store, session)))
      await assert.rejects(pending, isCoded(code))
      assert.throws(() => fold.hasActiveSync(store, session), isCoded(code))
    }
    // Before any load, the sync read does not read the disk on the JS thread: STORE_LOADING.
    const fresh = tempStore()
    assert.throws(() => fold.hasActiveSync(fresh, 's'), isCoded('STORE_LOADING'))
    assert.equal(await fold.hasActive(fresh, 's'), false)
    assert.equal(fold.hasActiveSync(fresh, 's'), false)
  })
})

describe('worker_threads', () => {
  /** Runs `body` (CommonJS, `fold` and `data` in scope) in a Worker; resolves with what it posts. */
  const inWorker = (body, data) =>
    new Promise((resolve, reject) => {
      const source = `
        const { parentPort, workerData: data } = require('node:worker_threads')
        const fold = require(data.addonPath)
        ;(async () => { ${body} })().then(
          (value) => parentPort.postMessage({ value }),
          (e) => parentPort.postMessage({ error: String(e && e.stack || e), code: e && e.code }),
        )`
      const worker = new Worker(source, { eval: true, workerData: { addonPath, ...data } })
      let message
      worker.on('message', (m) => (message = m))
      worker.on('error', reject)
      worker.on('exit', (code) => {
        if (code !== 0) return reject(new Error(`worker exited with ${code}`))
        if (message?.error) return reject(Object.assign(new Error(message.error), { code: message.code }))
        resolve(message?.value)
      })
    })

  it('loads the addon and runs mark + selectRegion (and coded errors) in a worker', async () => {
    const store = tempStore()
    const { load, log } = handWords(MID_CALL)
    const value = await inWorker(
      `
      const m = await fold.mark(data.store, 'worker-session', 2, 'from a worker')
      const mirror = new fold.SessionMirror()
      mirror.load(new Uint32Array(data.load))
      mirror.loadLog(0xffffffff, new Uint32Array(data.log))
      const region = fold.selectRegion(mirror, m.logLength, 7)
      let error
      try { fold.selectRegion(new Uint32Array(1), 0) } catch (e) { error = { code: e.code, name: e.name, isFoldError: fold.isFoldError(e), isError: e instanceof Error } }
      return { m, seqs: Array.from(region.seqs), isU32: region.seqs instanceof Uint32Array, matches: fold.planMatches(region, mirror, 7), active: fold.hasActiveSync(data.store, 'worker-session'), error }
      `,
      { store, load: Array.from(load), log: Array.from(log) },
    )
    assert.deepEqual(value, {
      m: { id: 1, logLength: 2 },
      seqs: [3, 4, 5, 6],
      isU32: true,
      matches: true,
      active: true,
      error: { code: 'INVALID_ARGUMENT', name: 'FoldError', isFoldError: true, isError: true },
    })
    // the main thread sees the worker's durable mark
    const latest = await fold.latestMark(store, 'worker-session')
    assert.equal(latest.objective, 'from a worker')
    assert.equal(await fold.hasActive(store, 'worker-session'), true)
  })

  it('several workers and the main thread share one store without losing marks', async () => {
    const store = tempStore()
    const body = `const ids = []; for (let i = 0; i < 20; i++) ids.push((await fold.mark(data.store, data.session, i)).id); return ids`
    const main = (async () => {
      const ids = []
      for (let i = 0; i < 20; i++) ids.push((await fold.mark(store, 'main', i)).id)
      return ids
    })()
    const all = (await Promise.all([inWorker(body, { store, session: 'w1' }), inWorker(body, { store, session: 'w2' }), main])).flat()
    assert.deepEqual(all.sort((x, y) => x - y), Array.from({ length: 60 }, (_, i) => i + 1))
  })

  it('a worker terminated while its rewind waits on the summarizer does not take the process down', async () => {
    const store = tempStore()
    const { load, log } = handWords(MID_CALL)
    const source = `
      const { parentPort, workerData: data } = require('node:worker_threads')
      const fold = require(data.addonPath)
      // The fold waits on JS continuations only; keep the worker alive until it is terminated.
      setInterval(() => {}, 1000)
      fold.mark(data.store, 'w', 2).then(() => {
        const mirror = new fold.SessionMirror()
        mirror.load(new Uint32Array(data.load))
        mirror.loadLog(0xffffffff, new Uint32Array(data.log))
        fold.rewind(data.store, 'w', {
          current: 7,
          snapshot: () => mirror,
          summarize: () => { parentPort.postMessage('summarizing'); return new Promise(() => {}) },
          commit: () => 'committed',
        }).catch(() => {})
      })`
    const worker = new Worker(source, { eval: true, workerData: { addonPath, store, load: Array.from(load), log: Array.from(log) } })
    await new Promise((resolve, reject) => {
      worker.on('message', resolve)
      worker.on('error', reject)
    })
    assert.equal(await worker.terminate(), 1)
    // the main thread keeps working, and the mark is still active: nothing was written
    assert.equal(await fold.hasActive(store, 'w'), true)
    assert.deepEqual(seqsOf(select(MID_CALL, 2, { current: 7 })), [3, 4, 5, 6])
  })
})

describe('rewind argument validation: rejected with INVALID_ARGUMENT, never thrown', () => {
  const { mirror: snapshot } = surface(MID_CALL)
  const host = (counter = { snapshot: 0 }) => ({
    current: 7,
    snapshot: () => {
      counter.snapshot++
      return snapshot
    },
    summarize: async () => 'report',
    commit: () => 'committed',
  })

  /** Calls rewind, checks it returned a promise without throwing, and that it rejects with `code`. */
  async function rejects(args, code, message) {
    let pending
    assert.doesNotThrow(() => (pending = fold.rewind(...args)))
    assert.ok(pending instanceof Promise)
    await assert.rejects(pending, isCoded(code, message))
  }

  const store = tempStore()
  const hosts = [
    ['null', null],
    ['undefined', undefined],
    ['a string', 'host'],
    ['a number', 7],
    ['a function', Object.assign(() => {}, host())],
  ]
  for (const [name, value] of hosts) {
    it(`host ${name}`, () => rejects([store, 's', value], 'INVALID_ARGUMENT', /host must be an object/))
  }

  for (const fn of ['snapshot', 'summarize', 'commit']) {
    for (const [name, value] of [['missing', undefined], ['a string', 'x'], ['an object', {}]]) {
      it(`host.${fn} ${name}`, async () => {
        const counter = { snapshot: 0 }
        const h = { ...host(counter), [fn]: value }
        await rejects([store, 's', h], 'INVALID_ARGUMENT', new RegExp(`host\\.${fn} must be a function`))
        assert.equal(counter.snapshot, 0)
      })
    }
  }

  const options = [
    ['a number', 5, /options must be an object/],
    ['a string', 'fast', /options must be an object/],
    ['maxSummarizationRetries 9', { maxSummarizationRetries: 9 }, /maxSummarizationRetries/],
    ['maxSummarizationRetries -1', { maxSummarizationRetries: -1 }, /maxSummarizationRetries/],
    ['maxSummarizationRetries 1.5', { maxSummarizationRetries: 1.5 }, /maxSummarizationRetries/],
    ['maxSummarizationRetries NaN', { maxSummarizationRetries: NaN }, /maxSummarizationRetries/],
    ['maxSummarizationRetries "2"', { maxSummarizationRetries: '2' }, /maxSummarizationRetries/],
    ['maxSummarizationRetries null', { maxSummarizationRetries: null }, /maxSummarizationRetries/],
    ['signal a string', { signal: 'abort' }, /options\.signal must be an AbortSignal/],
    ['signal an empty object', { signal: {} }, /options\.signal must be an AbortSignal/],
    ['signal without listeners', { signal: { aborted: false } }, /options\.signal must be an AbortSignal/],
    ['signal a boolean', { signal: true }, /options\.signal must be an AbortSignal/],
  ]
  for (const [name, value, message] of options) {
    it(`options: ${name}`, async () => {
      const counter = { snapshot: 0 }
      await fold.mark(store, 'opts', 2)
      await rejects([store, 'opts', host(counter), value], 'INVALID_ARGUMENT', message)
      assert.equal(counter.snapshot, 0, 'nothing was asked of the host')
      assert.equal(await fold.hasActive(store, 'opts'), true)
    })
  }

  it('bad store or session id', async () => {
    await rejects([42, 's', host()], 'INVALID_ARGUMENT', /store must be/)
    await rejects([{ path: '' }, 's', host()], 'INVALID_ARGUMENT')
    await rejects([store, 42, host()], 'INVALID_ARGUMENT', /sessionId must be a string/)
    await rejects([store, '', host()], 'INVALID_ARGUMENT', /sessionId/)
    await rejects([store, 'a\nb', host()], 'INVALID_ARGUMENT', /control characters/)
    await rejects([], 'INVALID_ARGUMENT')
  })

  it('absent options (undefined, null, {}) are the defaults', async () => {
    const s = tempStore()
    for (const [i, opts] of [undefined, null, {}, { maxSummarizationRetries: undefined, signal: undefined }].entries()) {
      await fold.mark(s, `defaults-${i}`, 2)
      const result = await fold.rewind(s, `defaults-${i}`, host(), opts)
      assert.deepEqual(result, { markId: i + 1, foldedNodes: 4, start: 3, end: 6, foldedChars: 40, reportChars: 6 })
    }
  })

  it('host callbacks that throw or answer garbage are classified rejections with the cause', async () => {
    const s = tempStore()
    await fold.mark(s, 'h', 2)
    const boom = new Error('snapshot exploded')
    await rejects([s, 'h', { ...host(), snapshot: () => { throw boom } }], 'HOST_FAILED', /snapshot exploded/)
    assert.equal((await fold.rewind(s, 'h', { ...host(), snapshot: () => { throw boom } }).catch((e) => e)).cause, boom)
    await rejects([s, 'h', { ...host(), snapshot: () => [snapshot] }], 'HOST_FAILED', /snapshot\(\) returned garbage: mirror must be the session's SessionMirror/)
    await rejects([s, 'h', { ...host(), snapshot: () => new Uint32Array([1, 3, NONE, 0, 0]) }], 'HOST_FAILED', /snapshot\(\) returned garbage: mirror must be the session's SessionMirror .*got object/)
    const commitBoom = new Error('append rejected')
    const failed = await fold.rewind(s, 'h', { ...host(), commit: () => { throw commitBoom } }).catch((e) => e)
    assert.ok(isCoded('HOST_FAILED', /append rejected/)(failed))
    assert.equal(failed.cause, commitBoom)
    await rejects([s, 'h', { ...host(), commit: () => 'maybe' }], 'HOST_FAILED', /'committed' or 'changed'/)
    for (const commit of [() => null, () => undefined, () => 1, async () => 'committed']) {
      await rejects([s, 'h', { ...host(), commit }], 'HOST_FAILED', /commit must synchronously return 'committed' or 'changed', got \w+; the fold state is unknown/)
    }
    await rejects([s, 'h', { ...host(), commit: () => 'changed' }], 'CHANGED')
    await rejects([s, 'h', { ...host(), summarize: () => 42 }], 'SUMMARIZE_FAILED', /summarize must return \(or resolve to\) a string or \{text, finish\?, usage\?, tokens\?\}, got number/)
    await rejects([s, 'h', { ...host(), summarize: () => { throw new Error('sync throw') } }], 'SUMMARIZE_FAILED', /sync throw/)
    await rejects([s, 'h', { ...host(), summarize: async () => ({ nope: 1 }) }], 'SUMMARIZE_FAILED')
    // none of it wrote anything: the mark is still active
    assert.equal(await fold.hasActive(s, 'h'), true)
  })

  it('an already aborted signal rejects ABORTED with its reason, before the summarizer runs', async () => {
    const s = tempStore()
    await fold.mark(s, 'ab', 2)
    let summarized = 0
    const reason = new Error('cancelled by the user')
    const failed = await fold
      .rewind(s, 'ab', { ...host(), summarize: async () => (summarized++, 'r') }, { signal: AbortSignal.abort(reason) })
      .catch((e) => e)
    assert.ok(isCoded('ABORTED')(failed))
    assert.equal(failed.cause, reason)
    assert.equal(summarized, 0)
    assert.equal(await fold.hasActive(s, 'ab'), true)
  })

  // Node's default N-API policy only warns (DEP0168) about an exception left pending in an addon
  // callback; the strict policy (Node's announced default) makes it an uncaught exception. These
  // run in a child process under the strict policy, so a regression is a crash, not a warning.
  const strict = (body) => {
    const script = `
      const fold = require(${JSON.stringify(addonPath)})
      const store = ${JSON.stringify(tempStore())}
      const mirror = new fold.SessionMirror()
      mirror.load(new Uint32Array(${JSON.stringify(Array.from(handWords(MID_CALL).load))}))
      mirror.loadLog(0xffffffff, new Uint32Array(0))
      const host = { current: 7, snapshot: () => mirror, summarize: async () => 'report', commit: () => 'committed' }
      const out = []
      ;(async () => { await fold.mark(store, 's', 2); ${body} })().then(
        () => process.stdout.write(JSON.stringify(out)),
        (e) => { console.error('FAILED', e); process.exit(3) },
      )`
    const child = spawnSync(process.execPath, ['--force-node-api-uncaught-exceptions-policy=true', '-e', script], { encoding: 'utf8', timeout: 60_000 })
    assert.equal(child.status, 0, `exit ${child.status}, stderr:\n${child.stderr}`)
    assert.doesNotMatch(child.stderr, /N-API|Uncaught/)
    return JSON.parse(child.stdout)
  }

  it('what summarize returns is awaited as `await` does: a value or a thenable folds, anything else is SUMMARIZE_FAILED', () => {
    const out = strict(`
      const returns = { undefined: () => undefined, null: () => null, number: () => 42, object: () => ({ nope: 1 }),
        thenableOfNumber: () => ({ then(resolve) { resolve(42) } }),
        string: () => 'report', thenable: () => ({ then(resolve) { resolve('report') } }), text: () => ({ text: 'report' }) }
      for (const [name, summarize] of Object.entries(returns)) {
        await fold.mark(store, name, 2)
        const e = await fold.rewind(store, name, { ...host, summarize }).then((r) => ({ code: 'FOLDED', message: String(r.reportChars), name: '' }), (e) => e)
        out.push([name, e.code, e.message, e.name, await fold.hasActive(store, name)])
      }`)
    const got = Object.fromEntries(out.map(([name, ...rest]) => [name, rest]))
    for (const [name, type] of [['undefined', 'undefined'], ['null', 'null'], ['number', 'number'], ['object', 'object'], ['thenableOfNumber', 'number']]) {
      const [code, message, errorName, active] = got[name]
      assert.equal(code, 'SUMMARIZE_FAILED', name)
      assert.equal(errorName, 'FoldError', name)
      assert.match(message, new RegExp(`summarize must return \\(or resolve to\\) a string or \\{text, finish\\?, usage\\?, tokens\\?\\}, got ${type}; nothing was folded`), name)
      assert.equal(active, true, `${name}: the mark is still active`)
    }
    for (const name of ['string', 'thenable', 'text']) assert.deepEqual(got[name], ['FOLDED', '6', '', false], name)
  })

  it('whatever a callback throws or rejects with (string, Symbol, Error) is the cause of a coded rejection, never a throw', () => {
    const out = strict(`
      const sym = Symbol('thrown'), err = new TypeError('typed')
      const cases = {
        'snapshot throws a string': [{ snapshot: () => { throw 'boom' } }, 'boom'],
        'snapshot throws a Symbol': [{ snapshot: () => { throw sym } }, sym],
        'snapshot throws an Error': [{ snapshot: () => { throw err } }, err],
        'summarize throws a string': [{ summarize: () => { throw 'sync' } }, 'sync'],
        'summarize rejects a Symbol': [{ summarize: () => Promise.reject(sym) }, sym],
        'summarize rejects an Error': [{ summarize: async () => { throw err } }, err],
        'commit throws a string': [{ commit: () => { throw 'append rejected' } }, 'append rejected'],
        'commit throws a Symbol': [{ commit: () => { throw sym } }, sym],
      }
      for (const [name, [patch, thrown]] of Object.entries(cases)) {
        let pending
        try { pending = fold.rewind(store, 's', { ...host, ...patch }) } catch (e) { out.push([name, 'THREW SYNCHRONOUSLY']); continue }
        const e = await pending.then(() => ({ code: 'RESOLVED' }), (e) => e)
        out.push([name, e.code, e.cause === thrown, fold.isFoldError(e), e.message])
      }`)
    const expected = {
      'snapshot throws a string': ['HOST_FAILED', /host\.snapshot\(\) threw: boom/],
      'snapshot throws a Symbol': ['HOST_FAILED', /host\.snapshot\(\) threw: a value that is not an Error/],
      'snapshot throws an Error': ['HOST_FAILED', /host\.snapshot\(\) threw: typed/],
      'summarize throws a string': ['SUMMARIZE_FAILED', /summarization failed: sync/],
      'summarize rejects a Symbol': ['SUMMARIZE_FAILED', /summarization failed/],
      'summarize rejects an Error': ['SUMMARIZE_FAILED', /summarization failed: typed/],
      'commit throws a string': ['HOST_FAILED', /commit failed: append rejected/],
      'commit throws a Symbol': ['HOST_FAILED', /commit failed/],
    }
    assert.deepEqual(out.map(([name]) => name), Object.keys(expected))
    for (const [name, code, sameCause, coded, message] of out) {
      assert.equal(code, expected[name][0], name)
      assert.equal(sameCause, true, `${name}: the cause is the thrown value itself`)
      assert.equal(coded, true, name)
      assert.match(message, expected[name][1], name)
    }
  })
})

describe('what JS hands back is awaited as `await` does, and every fold settles', () => {
  const { mirror } = surface(MID_CALL)
  /** @param {object} [over] */
  const host = (over = {}) => {
    const calls = { commit: 0 }
    return { calls, current: 7, snapshot: () => mirror, summarize: async () => 'report', commit: () => (calls.commit++, 'committed'), ...over }
  }
  /**
   * `promise`, or a rejection saying it never settled: a liveness bound far above anything a
   * fold needs here (no timing is asserted; a fold that is merely slow still passes).
   * @param {Promise<any>} promise
   */
  const settles = (promise) => {
    let timer
    const never = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('the fold never settled')), 20_000)
    })
    return Promise.race([promise, never]).finally(() => clearTimeout(timer))
  }
  /** A native promise whose own `then` calls back at once, on the caller's stack. */
  const syncThen = (/** @type {unknown} */ value) =>
    Object.assign(Promise.resolve('never read'), {
      then(/** @type {(v: unknown) => void} */ ok) {
        ok(value)
      },
    })

  it('a summarizer whose promise calls back synchronously (inside the fold) folds with that report', async () => {
    const s = tempStore()
    await fold.mark(s, 'sync', 2)
    const h = host({ summarize: () => syncThen('report') })
    const result = await settles(fold.rewind(s, 'sync', h))
    assert.equal(result.reportChars, 6)
    assert.equal(h.calls.commit, 1)
    // The session is not left locked: the next mark folds.
    await fold.mark(s, 'sync', 2)
    assert.equal((await settles(fold.rewind(s, 'sync', host()))).reportChars, 6)
  })

  it('a checkpoint service whose promises call back synchronously is awaited the same way', async () => {
    const mark = { id: 4, logLength: 2, foldedAt: null }
    let stamped = 0
    const service = { latestMark: () => syncThen(mark), completeFold: () => (stamped++, syncThen(true)) }
    const result = await settles(fold.rewind(service, 's', host()))
    assert.equal(result.markId, 4)
    assert.equal(stamped, 1)
    assert.equal(result.stampError, undefined)
  })

  it('a thenable that calls back twice (or resolves then rejects) counts once: the first answer', async () => {
    const s = tempStore()
    for (const [i, then] of [
      (/** @type {any} */ ok) => { ok('first report'); ok('second report, ignored') },
      (/** @type {any} */ ok, /** @type {any} */ err) => { ok('first report'); err(new Error('ignored')) },
      (/** @type {any} */ ok) => { ok('first report'); throw new Error('thrown after resolving: ignored') },
    ].entries()) {
      await fold.mark(s, `twice-${i}`, 2)
      const h = host({ summarize: () => ({ then }) })
      const result = await settles(fold.rewind(s, `twice-${i}`, h))
      assert.equal(result.reportChars, 'first report'.length, `case ${i}`)
      assert.equal(h.calls.commit, 1, `case ${i}: one commit`)
    }
  })

  it('a thenable that never calls back: the abort signal settles the fold and releases the session', async () => {
    const s = tempStore()
    await fold.mark(s, 'never', 2)
    const controller = new AbortController()
    let asked = 0
    const pending = fold.rewind(s, 'never', host({ summarize: () => (asked++, setImmediate(() => controller.abort(new Error('user cancelled'))), { then() {} }) }), { signal: controller.signal })
    const e = await settles(pending).catch((x) => x)
    assert.ok(isCoded('ABORTED')(e), String(e))
    assert.equal(e.cause?.message, 'user cancelled')
    assert.equal(asked, 1)
    assert.equal(await fold.hasActive(s, 'never'), true, 'nothing was folded')
    // The lock is released: the next rewind of the session is not FOLD_IN_PROGRESS, and folds.
    assert.equal((await settles(fold.rewind(s, 'never', host()))).reportChars, 6)
  })

  it("a thenable that never calls back: the plugin's report timeout settles the fold and releases the session", async () => {
    const s = tempStore()
    await fold.mark(s, 'timeout', 2)
    const summarize = withTimeout(() => ({ then() {} }), 30)
    const e = await settles(fold.rewind(s, 'timeout', host({ summarize }))).catch((x) => x)
    assert.ok(isCoded('SUMMARIZE_FAILED', /timed out after 30 ms \(reportTimeoutMs\)/)(e), String(e))
    assert.equal(await fold.hasActive(s, 'timeout'), true)
    assert.equal((await settles(fold.rewind(s, 'timeout', host()))).reportChars, 6)
  })
})

describe('rewind over a checkpoint service (the reference-shaped ctx.checkpoint)', () => {
  const { mirror: snapshot } = surface(MID_CALL)
  const host = () => ({ current: 7, snapshot: () => snapshot, summarize: async () => 'report', commit: () => 'committed' })
  /** A service with one mark of session 's' at anchor 2; `over` replaces its methods. */
  const service = (over = {}) => {
    const calls = { latest: 0, complete: /** @type {any[]} */ ([]) }
    const mark = { id: 7, logLength: 2, foldedAt: null }
    return {
      calls,
      mark,
      latestMark: async (/** @type {string} */ id) => (calls.latest++, id === 's' ? mark : undefined),
      completeFold: async (/** @type {string} */ id, /** @type {number} */ markId) => {
        calls.complete.push([id, markId])
        mark.foldedAt = 1
      },
      ...over,
    }
  }

  it("folds the service's mark and stamps it through completeFold(sessionId, markId)", async () => {
    const s = service()
    assert.deepEqual(await fold.rewind(s, 's', host()), { markId: 7, foldedNodes: 4, start: 3, end: 6, foldedChars: 40, reportChars: 6 })
    assert.deepEqual(s.calls.complete, [['s', 7]])
    await assert.rejects(fold.rewind(s, 's', host()), isCoded('EMPTY_REGION', /already folded/))
    await assert.rejects(fold.rewind(s, 'other', host()), isCoded('NO_CHECKPOINT'))
  })

  it('takes plain values as well as promises from latestMark and completeFold', async () => {
    const mark = { id: 3, logLength: 2 }
    const s = { latestMark: () => mark, completeFold: () => true }
    assert.equal((await fold.rewind(s, 's', host())).markId, 3)
    assert.equal((await fold.rewind({ latestMark: () => null, completeFold: () => true }, 's', host()).catch((e) => e)).code, 'NO_CHECKPOINT')
  })

  it('a latestMark that throws, rejects or answers garbage is HOST_FAILED with the cause; nothing runs', async () => {
    const boom = new Error('storage down')
    let snapshots = 0
    const counting = { ...host(), snapshot: () => (snapshots++, snapshot) }
    for (const [latestMark, message, cause] of /** @type {const} */ ([
      [() => { throw boom }, /latestMark\(\) threw: storage down/, boom],
      [async () => { throw boom }, /latestMark\(\) rejected: storage down/, boom],
      [async () => ({ id: 'seven', logLength: 2 }), /bad id/, undefined],
      [async () => ({ id: 1, logLength: -1 }), /bad logLength/, undefined],
      [async () => 42, /latestMark\(\) resolved to/, undefined],
    ])) {
      const e = await fold.rewind(service({ latestMark }), 's', counting).catch((x) => x)
      assert.ok(isCoded('HOST_FAILED', message)(e))
      assert.equal(e.cause, cause)
    }
    assert.equal(snapshots, 0)
  })

  it('the fold settles once the commit appended: it does not wait for the stamp', async () => {
    let asked = 0
    // A completeFold that never answers: the fold's result must not depend on it.
    const s = service({ completeFold: () => (asked++, new Promise(() => {})) })
    const result = await fold.rewind(s, 's', host())
    assert.deepEqual(result, { markId: 7, foldedNodes: 4, start: 3, end: 6, foldedChars: 40, reportChars: 6 })
    assert.equal(asked, 1, 'the stamp was asked for when the fold settled')
  })

  it('a completeFold that keeps failing does not fail the fold: onStampError is told after the result', async () => {
    let tries = 0
    const s = service({ completeFold: async () => { tries++; throw new Error('storage down') } })
    const told = /** @type {any[]} */ ([])
    const reported = new Promise((resolve) => {
      fold.rewind(s, 's', host(), { onStampError: (/** @type {any} */ e) => resolve(told.push(e)) }).then((result) => told.push(result))
    })
    await reported
    const [result, error] = told
    assert.equal(result.markId, 7, 'the result came first')
    assert.equal(result.stampError, undefined)
    assert.ok(error instanceof Error && error.name === 'FoldError')
    assert.equal(error.code, 'STORE_IO')
    assert.match(error.message, /^STORE_IO: the report was committed but mark 7 could not be stamped folded \(checkpoint\.completeFold\(\) failed: storage down\); the next rewind finishes the stamp$/)
    assert.equal(tries, 3)
  })

  it('without onStampError, a stamp that keeps failing is a process warning', async () => {
    const s = service({ completeFold: () => { throw new Error('disk full') } })
    const warned = new Promise((resolve) => process.once('warning', resolve))
    const result = await fold.rewind(s, 's', host())
    const warning = /** @type {any} */ (await warned)
    assert.equal(result.markId, 7)
    assert.equal(warning.code, 'STORE_IO')
    assert.match(warning.message, /mark 7 could not be stamped folded \(checkpoint\.completeFold\(\) failed: disk full\)/)
  })

  it('an onStampError that is no function is INVALID_ARGUMENT; one that throws loses nothing', async () => {
    await assert.rejects(fold.rewind(service(), 's', host(), { onStampError: 'log it' }), isCoded('INVALID_ARGUMENT', /onStampError must be a function/))
    const s = service({ completeFold: async () => { throw new Error('down') } })
    const result = await fold.rewind(s, 's', host(), { onStampError: () => { throw new Error('logger gone') } })
    assert.equal(result.markId, 7)
  })

  it('a service without a completeFold function is INVALID_ARGUMENT', async () => {
    await assert.rejects(fold.rewind({ latestMark: async () => undefined }, 's', host()), isCoded('INVALID_ARGUMENT', /checkpoint\.completeFold must be a function/))
  })
})

describe('rewind driven from the JS thread', () => {
  // No `current`: the last assistant node, its call unanswered, is the rewind's step.
  const { mirror: snapshot } = surface(MID_CALL)

  it('reads the mirror and selects the region before rewind returns, when the store is in memory', async () => {
    const s = tempStore()
    await fold.mark(s, 'sync', 2)
    /** @type {string[]} */
    const order = []
    const pending = fold.rewind(s, 'sync', {
      snapshot: () => (order.push('snapshot'), snapshot),
      summarize: async (/** @type {any} */ region) => (order.push(`summarize ${Array.from(region.seqs)}`), 'report'),
      commit: () => (order.push('commit'), 'committed'),
    })
    order.push('returned')
    await pending
    assert.deepEqual(order, ['snapshot', 'summarize 3,4,5,6', 'returned', 'commit'])
  })

  it('an abort fired inside summarize itself is honoured; one fired inside commit is not (the fold happened)', async () => {
    const s = tempStore()
    await fold.mark(s, 'in-summarize', 2)
    const first = new AbortController()
    const failed = await fold
      .rewind(s, 'in-summarize', { snapshot: () => snapshot, summarize: () => (first.abort('stop'), new Promise(() => {})), commit: () => 'committed' }, { signal: first.signal })
      .catch((e) => e)
    assert.ok(isCoded('ABORTED')(failed))
    assert.equal(failed.cause, 'stop')
    assert.equal(await fold.hasActive(s, 'in-summarize'), true)

    await fold.mark(s, 'in-commit', 2)
    const second = new AbortController()
    const result = await fold.rewind(
      s,
      'in-commit',
      { snapshot: () => snapshot, summarize: async () => 'report', commit: () => (second.abort('too late'), 'committed') },
      { signal: second.signal },
    )
    assert.equal(result.foldedNodes, 4)
    assert.equal(await fold.hasActive(s, 'in-commit'), false)
  })

  it('a summarizer that never settles is left behind by an abort, and the session can fold again', async () => {
    const s = tempStore()
    await fold.mark(s, 'hang', 2)
    const controller = new AbortController()
    let entered
    const summarizing = new Promise((resolve) => (entered = resolve))
    const pending = fold.rewind(
      s,
      'hang',
      { snapshot: () => snapshot, summarize: () => (entered(), new Promise(() => {})), commit: () => 'committed' },
      { signal: controller.signal },
    )
    await summarizing
    await assert.rejects(fold.rewind(s, 'hang', { snapshot: () => snapshot, summarize: async () => 'r', commit: () => 'committed' }), isCoded('FOLD_IN_PROGRESS'))
    controller.abort()
    await assert.rejects(pending, isCoded('ABORTED'))
    assert.equal((await fold.rewind(s, 'hang', { snapshot: () => snapshot, summarize: async () => 'r', commit: () => 'committed' })).foldedNodes, 4)
  })
})
