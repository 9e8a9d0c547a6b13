// No panic crosses the Node-API boundary, and fault injection lives only in test builds.
//
// A panic unwinding out of an addon call aborts Node (SIGABRT, exit 134): the user's whole DSH
// host dies. Each case runs in a child process, so such an abort is seen as what it is. The
// getter case needs no fault: a checkpoint service whose `latestMark` getter answers differently
// on a second read aborted the release binary before round 3. The other panics are injected in
// the test build of the addon (the `test-faults` feature, __test__/helpers/faults.mjs) with
// `DSH_FOLD_TEST_FAULTS=panic:<place>`: every export, and every continuation and callback the
// binding hands to JS or runs on the async runtime, answers with a coded `INTERNAL` error and the
// process goes on. The release binary is shown to ignore the variable.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'

import { addonPath } from '../plugin/shared/addon.js'
import { faultsEnv } from './helpers/faults.mjs'
import { tempStore } from './helpers/dsh.mjs'
import { handWords } from './helpers/mirror-records.mjs'

/** The mirror's load of a session marked at log length 2 (the addon tests' MID_CALL surface). */
const LOAD = Array.from(
  handWords([
    { seq: 0, kind: 1, chars: 10 },
    { seq: 1, kind: 2, chars: 10, link: 1 },
    { seq: 2, kind: 3, chars: 10, link: 2 },
    { seq: 3, kind: 2, chars: 10, link: 1 },
    { seq: 4, kind: 3, chars: 10, link: 4 },
    { seq: 5, kind: 2, chars: 10, link: 1 },
    { seq: 6, kind: 3, chars: 10, link: 6 },
    { seq: 7, kind: 2, chars: 10, link: 1 },
  ]).load,
)

/**
 * Runs `body` (async JS with `fold`, `store`, `host`, `out` in scope) in a child process.
 * @param {string} body @param {NodeJS.ProcessEnv} [env]
 */
function child(body, env = process.env) {
  const script = `
    const fold = require(${JSON.stringify(addonPath)})
    const store = ${JSON.stringify(tempStore())}
    const mirror = new fold.SessionMirror()
    mirror.load(new Uint32Array(${JSON.stringify(LOAD)}))
    mirror.loadLog(0xffffffff, new Uint32Array(0))
    const host = { current: 7, snapshot: () => mirror, summarize: async () => 'report', commit: () => 'committed' }
    const out = {}
    const codeOf = async (f) => { try { await f(); return 'none' } catch (e) { return e?.code ?? String(e) } }
    ;(async () => { ${body} })().then(
      () => process.stdout.write(JSON.stringify(out)),
      (e) => { console.error('FAILED', e); process.exit(3) },
    )`
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env, timeout: 120_000 })
  return { status: r.status, signal: r.signal, stderr: r.stderr, out: r.status === 0 ? JSON.parse(r.stdout) : undefined }
}

describe('no panic crosses the Node-API boundary', () => {
  it('a checkpoint service whose latestMark getter changes on a second read: a coded answer, not SIGABRT', () => {
    const r = child(`
      let reads = 0
      const service = {
        get latestMark() { return ++reads === 1 ? () => null : 'not a function any more' },
        completeFold: () => true,
      }
      out.code = await codeOf(() => fold.rewind(service, 's', host))
      out.reads = reads
    `)
    assert.equal(r.signal, null, `the child died of ${r.signal} (exit 134 is SIGABRT):\n${r.stderr}`)
    assert.equal(r.status, 0, r.stderr)
    // Read once: the function it was when checked is the one called (it answers no mark).
    assert.deepEqual(r.out, { code: 'NO_CHECKPOINT', reads: 1 })
  })

  const exports = {
    selectRegion: `fold.selectRegion(mirror, 2, 7)`,
    planMatches: `fold.planMatches({ anchor: 2, seqs: new Uint32Array([3]) }, mirror, 7)`,
    isFoldError: `fold.isFoldError(new Error('x'))`,
    foldErrorCodes: `fold.foldErrorCodes()`,
    planBlockSummary: `fold.planBlockSummary('s', mirror, ['A'], 0)`,
    recallSearch: `fold.recallSearch(['a'], 'a')`,
    extractiveReport: `fold.extractiveReport('[]')`,
    decodeZstd: `fold.decodeZstd(new Uint8Array(0))`,
    decodeZstdLog: `fold.decodeZstdLog(new Uint8Array(0))`,
    hasActiveSync: `fold.hasActiveSync(store, 's')`,
    mark: `fold.mark(store, 's', 2)`,
    latestMark: `fold.latestMark(store, 's')`,
    hasActive: `fold.hasActive(store, 's')`,
    completeFold: `fold.completeFold(store, 's', 1)`,
    listMarks: `fold.listMarks(store, null)`,
    findMark: `fold.findMark(store, 1)`,
    openStore: `fold.openStore(store)`,
    compactStore: `fold.compactStore(store)`,
    closeStore: `fold.closeStore(store)`,
    rewind: `fold.rewind(store, 's', host)`,
    planCompaction: `fold.planCompaction(new Uint32Array(0), {})`,
    planCompactionRange: `fold.planCompactionRange(new Uint32Array(0), {}, 0, 0)`,
    foldInProgress: `fold.foldInProgress('s')`,
    reportFacts: `fold.reportFacts('{"role":"user","content":[]}')`,
    extractiveReportOf: `fold.extractiveReportOf([])`,
    trainOfThoughtOf: `fold.trainOfThoughtOf([], new Uint32Array(0), [], { intentChars: 100, namesChars: 100, stateChars: 100 })`,
    'SessionMirror.push': `new fold.SessionMirror().push(new Uint32Array(0))`,
    'SessionMirror.load': `new fold.SessionMirror().load(new Uint32Array([3, 0, 0, 0, 0]))`,
    'SessionMirror.loadLog': `new fold.SessionMirror().loadLog(0xffffffff, new Uint32Array(0))`,
    'SessionMirror.reset': `new fold.SessionMirror().reset()`,
    'SessionMirror.intern': `new fold.SessionMirror().intern(['a'])`,
    'SessionMirror.step': `new fold.SessionMirror().step(0, 0)`,
    'SessionMirror.eventCount': `new fold.SessionMirror().eventCount`,
    'SessionMirror.price': `new fold.SessionMirror().price(new Uint32Array(0))`,
    'SessionMirror.reportOf': `new fold.SessionMirror().reportOf(1, 0)`,
    'SessionMirror.replacements': `new fold.SessionMirror().replacements()`,
    'SessionMirror.originals': `new fold.SessionMirror().originals(0)`,
    'SessionMirror.canonical': `new fold.SessionMirror().canonical()`,
  }

  it('the list below is every function the addon exports', () => {
    // Classes (PascalCase) are listed by their methods (`SessionMirror.push`); ReportFacts is a
    // handle whose getters only read fields.
    const r = child(`out.functions = Object.keys(fold).filter((k) => typeof fold[k] === 'function' && /^[a-z]/.test(k)).sort()`)
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(r.out.functions, Object.keys(exports).filter((k) => !k.includes('.')).sort())
  })

  it('a panic in any export is a coded INTERNAL error (thrown, or a rejection for a promise), and the process goes on', () => {
    const places = Object.keys(exports)
    const r = child(
      `
      await fold.mark(store, 's', 2)
      for (const [place, call] of Object.entries(${JSON.stringify(exports)})) {
        process.env.DSH_FOLD_TEST_FAULTS = 'panic:' + place
        let e
        try { await eval(call) } catch (x) { e = x }
        process.env.DSH_FOLD_TEST_FAULTS = ''
        out[place] = e && { code: e.code, name: e.name, coded: fold.isFoldError(e), message: e.message }
      }
      // Without the fault, every export works again in the same process.
      out.after = await fold.rewind(store, 's', host).then((r) => r.reportChars)
    `,
      faultsEnv(''),
    )
    assert.equal(r.signal, null, `the child died of ${r.signal}:\n${r.stderr}`)
    assert.equal(r.status, 0, r.stderr)
    for (const place of places) {
      const e = r.out[place]
      assert.ok(e, `${place}: no error`)
      assert.equal(e.code, 'INTERNAL', `${place}: ${e.message}`)
      assert.equal(e.name, 'FoldError', place)
      assert.equal(e.coded, true, place)
      assert.match(e.message, new RegExp(`^dsh-fold internal error in ${place} \\(test fault panic:${place}\\); the call failed`), place)
    }
    assert.equal(r.out.after, 6)
  })

  it('a panic in a continuation, a runtime task or a settling callback rejects with INTERNAL and releases the session', () => {
    const r = child(
      `
      const service = (mark) => ({ latestMark: async () => mark, completeFold: async () => true })
      const cases = {
        'rewind.start': () => fold.rewind(store, 's', host),
        'rewind.mark': () => fold.rewind(service({ id: 1, logLength: 2 }), 's', host),
        'rewind.summary': () => fold.rewind(store, 's', host),
        'an async call': () => fold.listMarks(store, null),
        'settling an async call': () => fold.mark(store, 'other', 1),
      }
      for (const [place, run] of Object.entries(cases)) {
        await fold.mark(store, 's', 2)
        process.env.DSH_FOLD_TEST_FAULTS = 'panic:' + place
        const e = await run().then(() => undefined, (x) => x)
        process.env.DSH_FOLD_TEST_FAULTS = ''
        out[place] = { code: e?.code, message: e?.message }
        // The session's lock is free: the next rewind folds (or finds the mark already folded).
        out[place].next = await codeOf(() => fold.rewind(store, 's', host))
      }
      // The abort listener: the signal fires while the summary is awaited.
      await fold.mark(store, 's', 2)
      const controller = new AbortController()
      process.env.DSH_FOLD_TEST_FAULTS = 'panic:rewind.abort'
      const slow = { ...host, summarize: () => (setImmediate(() => controller.abort()), new Promise(() => {})) }
      const e = await fold.rewind(store, 's', slow, { signal: controller.signal }).then(() => undefined, (x) => x)
      process.env.DSH_FOLD_TEST_FAULTS = ''
      out['rewind.abort'] = { code: e?.code, message: e?.message, next: await codeOf(() => fold.rewind(store, 's', host)) }
    `,
      faultsEnv(''),
    )
    assert.equal(r.signal, null, `the child died of ${r.signal}:\n${r.stderr}`)
    assert.equal(r.status, 0, r.stderr)
    for (const [place, e] of Object.entries(r.out)) {
      assert.equal(e.code, 'INTERNAL', `${place}: ${e.message}`)
      assert.match(e.message, /the call failed, nothing it would have written was written, and the host keeps running/, place)
      assert.ok(['none', 'EMPTY_REGION'].includes(e.next), `${place}: the next rewind answered ${e.next}`)
    }
  })
})

describe('a panic in the stamp, which runs after the fold settled', () => {
  it('is the stamp failing late: the fold resolved, onStampError gets INTERNAL, the store still stamps', () => {
    const r = child(
      `
      const service = { latestMark: async () => ({ id: 1, logLength: 2 }), completeFold: async () => true }
      const cases = {
        'rewind.stamp': () => store,
        "the stamp's write": () => store,
        'rewind.stamped': () => service,
      }
      for (const [place, checkpoint] of Object.entries(cases)) {
        await fold.mark(store, 's', 2)
        const errors = []
        process.env.DSH_FOLD_TEST_FAULTS = 'panic:' + place
        const result = await fold.rewind(checkpoint(), 's', host, { onStampError: (e) => errors.push(e) })
        for (let i = 0; i < 1000 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
        process.env.DSH_FOLD_TEST_FAULTS = ''
        out[place] = { reportChars: result.reportChars, errors: errors.map((e) => ({ code: e.code, name: e.name, message: e.message })) }
        out[place].next = await codeOf(() => fold.rewind(store, 's', host))
      }
    `,
      faultsEnv(''),
    )
    assert.equal(r.signal, null, `the child died of ${r.signal}:\n${r.stderr}`)
    assert.equal(r.status, 0, r.stderr)
    for (const [place, c] of Object.entries(r.out)) {
      assert.equal(c.reportChars, 6, `${place}: the fold resolved`)
      assert.equal(c.errors.length, 1, `${place}: reported once`)
      assert.equal(c.errors[0].code, 'INTERNAL', place)
      assert.equal(c.errors[0].name, 'FoldError', place)
      assert.match(c.errors[0].message, /^INTERNAL: the report was committed but mark \d+ could not be stamped folded .*the next rewind finishes the stamp$/s, place)
      assert.ok(['none', 'EMPTY_REGION'].includes(c.next), `${place}: the next rewind answered ${c.next}`)
    }
  })
})

describe('fault injection is compiled into test builds only', () => {
  const body = `
    const warnings = []
    process.on('warning', (w) => warnings.push(w.code))
    out.region = await codeOf(() => fold.selectRegion(mirror, 2, 7))
    out.mark = await codeOf(() => fold.mark(store, 's', 2))
    await new Promise((r) => setImmediate(r))
    out.warnings = warnings
  `
  const faults = 'panic:selectRegion,panic:mark,sync-dir'

  it('the release binary ignores DSH_FOLD_TEST_FAULTS', () => {
    const r = child(body, { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: '', DSH_FOLD_TEST_FAULTS: faults })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(r.out, { region: 'none', mark: 'none', warnings: [] })
  })

  it('the test build honours it (the same script)', () => {
    const r = child(body, faultsEnv(faults))
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(r.out, { region: 'INTERNAL', mark: 'INTERNAL', warnings: [] })
    const synced = child(body, faultsEnv('sync-dir'))
    assert.equal(synced.status, 0, synced.stderr)
    assert.equal(synced.out.mark, 'none')
    assert.ok(synced.out.warnings.includes('DSH_FOLD_STORE_DURABILITY'), JSON.stringify(synced.out))
  })
})
