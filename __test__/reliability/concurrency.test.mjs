// Concurrency: several processes on one store at once, released together — markers, a process
// stamping folds with completeFold, and processes running real `rewind`s with a JS host — plus
// concurrent sessions inside each process (group commit). Every id is distinct, every mark is
// on disk with its session, and no `foldedAt` is lost.
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { fold, parseAcks, readStoreFile, runWorker, tempStore } from './helpers.mjs'

const MARKERS = 4
const MARKS_PER_MARKER = 250
const COMPLETERS = 1
const COMPLETE_CYCLES = 100
const FOLDERS = 2
const FOLD_CYCLES = 60

describe('one store, many processes at once', () => {
  it(`${MARKERS} processes × ${MARKS_PER_MARKER} marks while others completeFold and rewind`, { timeout: 300_000 }, async (t) => {
    const file = tempStore()
    const store = { path: file, maxMarksPerSession: 1000 } // nothing is pruned
    /** @type {{name: string, spec: import('./helpers.mjs').WorkerSpec}[]} */
    const plan = []
    for (let p = 0; p < MARKERS; p++) {
      // two sessions per process, marking concurrently: 125 + 125 = 250 marks
      const sessions = [`mark-${p}-a`, `mark-${p}-b`]
      plan.push({ name: `marker ${p}`, spec: { store, sessions, count: MARKS_PER_MARKER / 2, ops: 'mark', waitGo: true } })
    }
    for (let p = 0; p < COMPLETERS; p++) {
      plan.push({ name: `completer ${p}`, spec: { store, sessions: [`complete-${p}`], count: COMPLETE_CYCLES, ops: 'mark+complete', waitGo: true } })
    }
    for (let p = 0; p < FOLDERS; p++) {
      plan.push({ name: `folder ${p}`, spec: { store, sessions: [`fold-${p}`], count: FOLD_CYCLES, ops: 'mark+rewind', waitGo: true } })
    }

    // Start every process, wait until all are loaded, then release them together.
    const children = []
    let readyCount = 0
    let releaseAll
    const allReady = new Promise((resolve) => (releaseAll = resolve))
    const runs = plan.map(({ spec }) =>
      runWorker(spec, (child) => {
        children.push(child)
        if (++readyCount === plan.length) releaseAll()
      }),
    )
    await allReady
    const started = performance.now()
    for (const child of children) child.stdin.end('go\n')
    const results = await Promise.all(runs)
    const seconds = (performance.now() - started) / 1000

    /** @type {Map<number, string>} */
    const owner = new Map()
    const stamped = new Set()
    const folded = new Set()
    results.forEach((run, i) => {
      assert.equal(run.code, 0, `${plan[i].name} failed: ${run.stderr}`)
      assert.equal(run.lines.at(-1), 'done')
      const acks = parseAcks(run.lines)
      const perSession = new Map()
      for (const { id, session } of acks.marked) {
        assert.ok(!owner.has(id), `id ${id} handed to ${session} and ${owner.get(id)}`)
        owner.set(id, session)
        // ids grow within a session (and within the process)
        assert.ok(id > (perSession.get(session) ?? 0), `${session}: id ${id} after ${perSession.get(session)}`)
        perSession.set(session, id)
      }
      for (const id of acks.stamped) stamped.add(id)
      for (const id of acks.folded) folded.add(id)
    })

    const totalMarks = MARKERS * MARKS_PER_MARKER + COMPLETERS * COMPLETE_CYCLES + FOLDERS * FOLD_CYCLES
    assert.equal(owner.size, totalMarks)
    assert.equal(stamped.size, COMPLETERS * COMPLETE_CYCLES)
    assert.equal(folded.size, FOLDERS * FOLD_CYCLES)
    // Nobody crashed, so every id handed out was acknowledged: exactly 1..N, no gap, no repeat.
    assert.deepEqual([...owner.keys()].sort((a, b) => a - b), Array.from({ length: totalMarks }, (_, i) => i + 1))

    // The file: every mark with its session; every stamped or folded mark still folded, and
    // the markers' marks still active (nobody's write clobbered anybody's).
    const { nextId, marks, journal } = readStoreFile(file)
    assert.equal(journal.torn, false, 'nobody crashed: no torn journal tail')
    assert.equal(nextId, totalMarks + 1)
    assert.equal(marks.size, totalMarks)
    for (const [id, session] of owner) {
      const mark = marks.get(id)
      assert.ok(mark, `mark ${id} of ${session} is missing`)
      assert.equal(mark.sessionId, session)
      const shouldBeFolded = stamped.has(id) || folded.has(id)
      assert.equal(mark.foldedAt === null, !shouldBeFolded, `mark ${id} of ${session}: foldedAt ${mark.foldedAt}`)
    }
    // A fresh reader through the addon sees the same.
    const listed = await fold.listMarks(store)
    assert.equal(listed.length, totalMarks)
    assert.equal(listed.filter((m) => m.foldedAt !== null).length, stamped.size + folded.size)

    const processes = plan.length
    const figures =
      `[concurrency] ${processes} processes at once: ${MARKERS} × ${MARKS_PER_MARKER} marks, ` +
      `${COMPLETERS} × ${COMPLETE_CYCLES} mark+completeFold, ${FOLDERS} × ${FOLD_CYCLES} mark+rewind; ` +
      `${totalMarks} distinct ids, ${stamped.size + folded.size} foldedAt kept, ${seconds.toFixed(1)} s`
    t.diagnostic(figures)
    console.log(figures)
    rmSync(path.dirname(path.dirname(file)), { recursive: true, force: true })
  })
})
