// The journal beside the store file (`checkpoint.json.journal`), on real files and processes:
// torn tails cut at every byte of the last append, garbage tails, damage before a whole line,
// newer journals, a SIGKILL in the middle of an append (a test-only fault parks the writer
// halfway), and a process folding the journal into the store file while others append.
// Each store read here is a fresh one (a new directory, or a new process), so what is tested
// is what a reader finds on disk; the journal is also read by the README's format alone
// (helpers.mjs parseJournal), independently of the addon.
import assert from 'node:assert/strict'
import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { assertCoded, failure, fileState, fold, journalLine, parseAcks, parseJournal, readStoreFile, runWorker, tempDir, tempStore } from './helpers.mjs'
import { faultsEnv } from '../helpers/faults.mjs'

/** A store with a few marks and stamps, so its journal holds several appends. */
async function seeded() {
  const file = tempStore()
  const store = { path: file, maxMarksPerSession: 1000 }
  await fold.mark(store, 'a', 3, 'first') // the first write: the store file, and an empty journal
  await fold.mark(store, 'b', 4, 'second')
  assert.equal(await fold.completeFold(store, 'a', 1), true)
  await fold.mark(store, 'a', 9, 'third')
  const journal = readFileSync(`${file}.journal`)
  const parsed = parseJournal(journal)
  assert.equal(parsed.torn, false)
  assert.deepEqual(parsed.changes.map((c) => c.op), ['mark', 'fold', 'mark'])
  return { file, journal }
}

/** Copies the store file with `journal` as its journal into a fresh directory (a fresh store). */
function copyWith(file, journal) {
  const copy = path.join(tempDir('dsh-fold-journal-'), 'checkpoint.json')
  copyFileSync(file, copy)
  writeFileSync(`${copy}.journal`, journal, { mode: 0o600 })
  return copy
}

const ids = async (file) => (await fold.listMarks({ path: file, maxMarksPerSession: 1000 })).map((m) => m.id).sort((x, y) => x - y)

describe('a torn journal tail is dropped, and cut by the next writer; nothing acknowledged is lost', () => {
  it('the last append cut at every byte', async () => {
    const { file, journal } = await seeded()
    const lastStart = journal.lastIndexOf(0x0a, journal.length - 2) + 1
    let cases = 0
    for (let cut = lastStart; cut < journal.length; cut++) {
      const copy = copyWith(file, journal.subarray(0, cut))
      const before = fileState(copy)
      // Readers: the marks of every whole line; the torn one (mark 3) is not there.
      assert.deepEqual(await ids(copy), [1, 2], `cut at ${cut}`)
      assert.deepEqual(fileState(copy), before, `a read changed the files (cut at ${cut})`)
      // The next writer cuts the tail and appends: the journal is whole again.
      const m = await fold.mark(copy, 'c', 1)
      assert.equal(m.id, 3, `cut at ${cut}: ids go on from the whole lines`)
      const after = readFileSync(`${copy}.journal`)
      assert.deepEqual(after.subarray(0, lastStart), journal.subarray(0, lastStart))
      const parsed = parseJournal(after)
      assert.equal(parsed.torn, false)
      assert.equal(parsed.valid, after.length)
      assert.deepEqual(parsed.changes.map((c) => c.op), ['mark', 'fold', 'mark'])
      assert.deepEqual([...readStoreFile(copy).marks.keys()].sort(), [1, 2, 3])
      cases++
    }
    assert.ok(cases > 50)
  })

  it('garbage after the last whole line (zeros of a file extended but never written, stray text, a torn batch with a newline)', async () => {
    const { file, journal } = await seeded()
    const tails = [Buffer.alloc(4096), Buffer.from('\0\0\0\n\0\0'), Buffer.from('deadbeef {"changes":[]}\n'), Buffer.from('not a line at all'), journalLine({ changes: [] }).subarray(0, 20)]
    for (const tail of tails) {
      const copy = copyWith(file, Buffer.concat([journal, tail]))
      assert.deepEqual(await ids(copy), [1, 2, 3], JSON.stringify(tail.toString('latin1').slice(0, 30)))
      assert.equal((await fold.mark(copy, 'c', 1)).id, 4)
      assert.equal(parseJournal(readFileSync(`${copy}.journal`)).torn, false)
    }
  })

  it('a torn header (a journal being started): read as empty, restarted by the next writer', async () => {
    const { file } = await seeded()
    await fold.compactStore(file) // everything is in the store file now
    const header = readFileSync(`${file}.journal`)
    const copy = copyWith(file, header.subarray(0, 30))
    assert.deepEqual(await ids(copy), [1, 2, 3])
    assert.equal((await fold.mark(copy, 'c', 1)).id, 4)
    assert.deepEqual([...readStoreFile(copy).marks.keys()].sort(), [1, 2, 3, 4])
  })
})

describe('damage that is not a torn tail is refused, and nothing is written', () => {
  it('a damaged line followed by a whole one → STORE_CORRUPT naming the journal', async () => {
    const { file, journal } = await seeded()
    const secondLine = journal.indexOf(0x0a) + 1
    for (const at of [secondLine + 3, secondLine + 12, secondLine]) {
      const damaged = Buffer.from(journal)
      damaged[at] ^= 0x04
      const copy = copyWith(file, damaged)
      const before = fileState(copy)
      for (const call of [() => fold.latestMark(copy, 'a'), () => fold.listMarks(copy), () => fold.mark(copy, 'a', 1), () => fold.completeFold(copy, 'a', 3), () => fold.compactStore(copy)]) {
        const e = await failure(call)
        assertCoded(e, 'STORE_CORRUPT')
        assert.ok(e.message.includes(`${copy}.journal`), e.message)
      }
      assert.deepEqual(fileState(copy), before)
    }
  })

  it('a journal of a newer version, or a change this version does not know → STORE_VERSION', async () => {
    const { file, journal } = await seeded()
    const body = journal.subarray(journal.indexOf(0x0a) + 1)
    const newer = Buffer.concat([journalLine({ journal: 'checkpoint', version: 2, id: '0123456789abcdef' }), body])
    const unknown = Buffer.concat([journal, journalLine({ changes: [{ op: 'rename', id: 1, to: 'x' }] })])
    for (const bytes of [newer, unknown]) {
      const copy = copyWith(file, bytes)
      const before = fileState(copy)
      assertCoded(await failure(() => fold.mark(copy, 'a', 1)), 'STORE_VERSION')
      assertCoded(await failure(() => fold.listMarks(copy)), 'STORE_VERSION')
      assert.deepEqual(fileState(copy), before)
    }
  })

  it('a journal mark the store file gives to another session (not this store\'s journal) → STORE_CORRUPT', async () => {
    const { file, journal } = await seeded()
    const foreign = Buffer.concat([journal, journalLine({ changes: [{ op: 'mark', mark: { id: 1, sessionId: 'zz', logLength: 1, createdAt: 1, foldedAt: null } }] })])
    const copy = copyWith(file, foreign)
    assertCoded(await failure(() => fold.listMarks(copy)), 'STORE_CORRUPT')
  })

  it('unknown fields in a journaled mark are kept through the next rewrite of the store file', async () => {
    const { file, journal } = await seeded()
    const mark = { id: 4, sessionId: 'x', logLength: 2, createdAt: Date.now(), foldedAt: null, colour: 'teal' }
    const copy = copyWith(file, Buffer.concat([journal, journalLine({ changes: [{ op: 'mark', mark }] })]))
    assert.deepEqual(await ids(copy), [1, 2, 3, 4])
    await fold.compactStore(copy)
    assert.equal(JSON.parse(readFileSync(copy, 'utf8')).tables.marks['4'].colour, 'teal')
  })
})

describe('processes', () => {
  it('SIGKILL in the middle of an append: the half-written line is cut, every acknowledged mark stays', async () => {
    const file = tempStore()
    const store = { path: file, maxMarksPerSession: 1000 }
    for (let i = 0; i < 3; i++) await fold.mark(store, 'seed', i)
    const journal = `${file}.journal`
    const before = readFileSync(journal)
    // The worker's append writes half its line, fsyncs it, and parks (a fault of the test build).
    const run = await runWorker({ store, sessions: ['victim'], count: 1, ops: 'mark', env: faultsEnv('torn-append') }, (child) => {
      const poll = setInterval(() => {
        const now = readFileSync(journal)
        if (now.length > before.length && now.at(-1) !== 0x0a) {
          clearInterval(poll)
          child.kill('SIGKILL')
        }
      }, 5)
    })
    assert.equal(run.signal, 'SIGKILL')
    assert.deepEqual(parseAcks(run.lines).marked, [], 'nothing was acknowledged')
    const torn = readFileSync(journal)
    assert.ok(torn.length > before.length && parseJournal(torn).torn, 'the journal ends in half a line')
    // This process's store (loaded before) catches up at its next write: cuts, appends.
    const next = await fold.mark(store, 'seed', 9)
    assert.equal(next.id, 4)
    const after = parseJournal(readFileSync(journal))
    assert.equal(after.torn, false)
    assert.deepEqual([...readStoreFile(file).marks.keys()].sort(), [1, 2, 3, 4])
  })

  it('a process folding the journal into the store file over and over while two others append', { timeout: 300_000 }, async (t) => {
    const file = tempStore()
    const store = { path: file, maxMarksPerSession: 100_000 }
    await fold.mark(store, 'seed', 0)
    const children = []
    let ready = 0
    let release
    const allReady = new Promise((resolve) => (release = resolve))
    const onReady = (child) => {
      children.push(child)
      if (++ready === 3) release()
    }
    const runs = [
      runWorker({ store, sessions: ['p-a', 'p-b'], count: 150, ops: 'mark', waitGo: true }, onReady),
      runWorker({ store, sessions: ['q-a'], count: 150, ops: 'mark+complete', waitGo: true }, onReady),
      runWorker({ store, sessions: ['compactor'], count: 120, ops: 'compact', waitGo: true }, onReady),
    ]
    await allReady
    for (const child of children) child.stdin.end('go\n')
    const results = await Promise.all(runs)
    const acked = new Map()
    const stamped = new Set()
    let compactions = 0
    for (const run of results) {
      assert.equal(run.code, 0, run.stderr)
      const acks = parseAcks(run.lines)
      for (const { id, session } of acks.marked) {
        assert.ok(!acked.has(id), `id ${id} handed out twice`)
        acked.set(id, session)
      }
      for (const id of acks.stamped) stamped.add(id)
      compactions += acks.compacted
    }
    assert.equal(acked.size, 450)
    assert.equal(compactions, 120)
    // On disk (read by the format alone) and through a fresh reader: every mark, every stamp.
    const onDisk = readStoreFile(file)
    const listed = await fold.listMarks(store)
    for (const marks of [onDisk.marks, new Map(listed.map((m) => [m.id, m]))]) {
      for (const [id, session] of acked) {
        assert.equal(marks.get(id)?.sessionId, session, `mark ${id}`)
        assert.equal(marks.get(id).foldedAt !== null, stamped.has(id), `mark ${id} foldedAt`)
      }
    }
    // A last compaction leaves the store file complete on its own (what DSH tooling reads).
    await fold.compactStore(store)
    const alone = readStoreFile(file)
    assert.equal(alone.base.size, 451)
    assert.equal(alone.journal.changes.length, 0)
    const figures = `[journal] 3 processes: 450 marks and 150 stamps appended while another compacted 120 times; all on disk; store file ${statSync(file).size} B`
    t.diagnostic(figures)
    console.log(figures)
  })
})
