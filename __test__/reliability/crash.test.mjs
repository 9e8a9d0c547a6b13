// Crash safety: a worker marks and stamps (completeFold, or a real rewind) or folds the journal
// into the store file in a loop and reports every acknowledged operation; the parent kills it
// with SIGKILL at a random moment, over and over, on one store. After every kill: the store
// file parses (JSON.parse + unit) and the journal reads by its documented format (a torn tail
// at most), every acknowledged mark is there, every acknowledged stamp is there (a rewind's
// stamp is acknowledged by the next mark the worker acknowledged: the fold does not wait for
// it), and no id is ever handed out twice.
import assert from 'node:assert/strict'
import { existsSync, rmSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { fold, parseAcks, readStoreFile, runWorker, strayTempFiles, tempStore } from './helpers.mjs'

const KILLS = Number(process.env.DSH_FOLD_CRASH_KILLS ?? 120)
const SESSIONS = ['crash-a', 'crash-b', 'crash-c']

/** A deterministic PRNG, so a failing run can be replayed with the printed seed. */
function prng(seed) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('SIGKILL at random moments', () => {
  it(`${KILLS} kills of a worker marking and stamping: nothing acknowledged is lost, no id reused`, { timeout: 300_000 }, async (t) => {
    const seed = Number(process.env.DSH_FOLD_CRASH_SEED ?? Date.now() % 1_000_000)
    const random = prng(seed)
    // No pruning, so "every acknowledged mark is present" is checkable to the end.
    const file = tempStore()
    const store = { path: file, maxMarksPerSession: 1_000_000 }
    /** @type {Map<number, string>} acknowledged mark id → session */
    const acked = new Map()
    /** @type {Set<number>} acknowledged stamps */
    const stamped = new Set()
    let killedMidRun = 0
    let tornTails = 0
    let lastNextId = 1
    const started = performance.now()

    for (let k = 0; k < KILLS; k++) {
      const session = SESSIONS[k % SESSIONS.length]
      // Rotate plain marking, mark+completeFold, mark+rewind (whose stamp is the same durable
      // write) and mark+compactStore, so kills land inside every kind of write: journal
      // appends, and rewrites of the store file with the journal's reset.
      const ops = /** @type {const} */ (['mark', 'mark+complete', 'mark+rewind', 'mark+compact'])[k % 4]
      const lifetime = 20 + random() * 60
      const run = await runWorker({ store, sessions: [session], ops }, (child) => {
        setTimeout(() => child.kill('SIGKILL'), lifetime)
      })
      const context = `kill ${k} (seed ${seed}, ${ops}, ${lifetime.toFixed(0)} ms)`
      assert.equal(run.signal, 'SIGKILL', `${context}: the worker ended on its own: ${run.stderr}`)
      const acks = parseAcks(run.lines)
      if (acks.marked.length) killedMidRun++

      // Ids are never reused: each acknowledged id is new, and above every id the file held
      // before this worker started (those may include marks written but never acknowledged).
      for (const { id, session: s } of acks.marked) {
        assert.ok(!acked.has(id), `${context}: id ${id} acknowledged twice`)
        assert.ok(id >= lastNextId, `${context}: id ${id} is below the nextId ${lastNextId} already on disk`)
        assert.equal(s, session)
        acked.set(id, s)
      }
      for (const id of acks.stamped) stamped.add(id)
      // A rewind resolves once its replacement is appended, before its stamp is written (the
      // session log is the fold's record; crash repair finishes a stamp that never landed). Its
      // stamp was queued first, so the worker's next acknowledged mark, written after it by the
      // group commit, acknowledges the stamp too.
      for (const id of acks.folded) if (acks.marked.some((m) => m.id > id)) stamped.add(id)

      // The file as any reader sees it: whole, and holding everything acknowledged.
      if (!existsSync(file)) {
        // Killed before the first write ever landed (possible on a loaded machine).
        assert.equal(acked.size, 0, `${context}: marks were acknowledged but there is no file`)
        continue
      }
      const { nextId, marks, journal } = readStoreFile(file)
      if (journal.torn) tornTails++
      assert.ok(nextId >= lastNextId, `${context}: nextId went back from ${lastNextId} to ${nextId}`)
      lastNextId = nextId
      for (const [id, s] of acked) {
        const mark = marks.get(id)
        assert.ok(mark, `${context}: acknowledged mark ${id} is missing`)
        assert.equal(mark.sessionId, s, `${context}: mark ${id} changed session`)
      }
      for (const id of stamped) {
        assert.equal(typeof marks.get(id).foldedAt, 'number', `${context}: acknowledged stamp of ${id} is lost`)
      }
    }

    // The addon agrees with the raw file (a fresh re-read in this process).
    const listed = await fold.listMarks(store)
    const onDisk = readStoreFile(file)
    assert.deepEqual(listed.map((m) => m.id).sort((a, b) => a - b), [...onDisk.marks.keys()].sort((a, b) => a - b))
    for (const id of stamped) assert.equal(typeof listed.find((m) => m.id === id).foldedAt, 'number')
    // Each write clears the temp files of writers killed before their rename (under the file
    // lock, any temp file is a dead writer's), so at most the last kill's one is left...
    const stray = strayTempFiles(file)
    assert.ok(stray.length <= 1, `temp files piled up: ${stray.join(', ')}`)
    // ...and the store still takes writes after all of it, which clears that one too.
    const next = await fold.mark(store, 'after', 1)
    assert.ok(next.id >= lastNextId)
    assert.deepEqual(strayTempFiles(file), [])

    const figures =
      `[crash] ${KILLS} SIGKILLs survived (${killedMidRun} after at least one acknowledged mark), ` +
      `${acked.size} acknowledged marks and ${stamped.size} acknowledged stamps (completeFold or rewind) all present, ` +
      `${onDisk.marks.size} marks on disk, journal torn tails found after a kill: ${tornTails} (cut by the next writer), ` +
      `temp files left by the last kill: ${stray.length} (cleared by the next write), ` +
      `seed ${seed}, ${((performance.now() - started) / 1000).toFixed(1)} s`
    t.diagnostic(figures)
    console.log(figures)
    // Most kills land while marking; a loaded machine may slow the first write of some workers.
    assert.ok(killedMidRun >= KILLS / 4, `too few kills landed while marking (${killedMidRun}/${KILLS})`)
    rmSync(path.dirname(path.dirname(file)), { recursive: true, force: true })
  })
})
