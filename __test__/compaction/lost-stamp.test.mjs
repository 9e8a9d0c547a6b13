// A lost stamp plus a compaction never folds the user's later request away (issue 28, item 1).
// A rewind's report lands but its durable stamp does not (the store's folder is a file at that
// moment, as after a crash between commit and stamp), so the mark still reads active; then a
// compaction — dsh-fold's backend or DSH's compaction-basic — replaces the history, the report
// with it. From then on the fold must be found in the session's log wherever its report now is:
// the turn guard asks for no rewind, and a rewind called anyway finishes the stamp and returns
// the fold's result instead of folding everything since the compaction (the user's next request
// with it) into a second report of the same mark. Each case runs on real DSH parts in child
// processes (`lost-stamp-child.mjs`), in one process or with a restart between the phases: the
// restarted host re-reads the store file and rebuilds its mirror from the restored session.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lost-stamp-child.mjs')
const scratch = mkdtempSync(path.join(tmpdir(), 'dsh-fold-lost-stamp-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

/**
 * Runs `phases` in one child process; returns its answers and facts.
 * @param {object} args
 * @returns {Promise<{answers: Record<string, any>, facts: any}>}
 */
function child(args) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CHILD, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    p.stdout.on('data', (d) => (out += d))
    p.stderr.on('data', (d) => (err += d))
    p.on('error', reject)
    p.on('close', (code) => {
      const line = out.trim().split('\n').at(-1) ?? ''
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`the scenario's process exited ${code}:\n${err}\n${out}`))
      else resolve(JSON.parse(line))
    })
  })
}

/**
 * The scenario's phases, split into processes at `restartAfter` (none: one process).
 * @param {'fold' | 'basic'} backend @param {string[]} phases @param {string | null} restartAfter
 */
async function scenario(backend, phases, restartAfter) {
  const dir = mkdtempSync(path.join(scratch, `${backend}-`))
  const store = path.join(dir, 'storages', 'checkpoint.json')
  const cut = restartAfter === null ? phases.length : phases.indexOf(restartAfter) + 1
  const runs = [phases.slice(0, cut), phases.slice(cut)].filter((p) => p.length > 0)
  /** @type {Record<string, any>} */
  const answers = {}
  /** @type {any[]} each process's facts at its end */
  const facts = []
  let logIn = null
  for (const [i, part] of runs.entries()) {
    const logOut = path.join(dir, `log-${i}.json`)
    const run = await child({ backend, store, phases: part, logIn, logOut })
    Object.assign(answers, run.answers)
    facts.push(run.facts)
    logIn = logOut
  }
  const log = JSON.parse(readFileSync(/** @type {string} */ (logIn), 'utf8'))
  return { answers, facts, last: facts.at(-1), log }
}

/** The one report of mark 1 in `log`. @param {any[]} log */
function theReport(log) {
  const reports = log.filter((e) => e.type === 'user/message' && e.data?.source?.plugin === 'rewind' && e.data.source.markId === 1)
  assert.equal(reports.length, 1, `reports of mark 1 in the log: ${reports.map((e) => e.seq).join(', ')}`)
  return reports[0]
}

for (const backend of /** @type {const} */ (['fold', 'basic'])) {
  const name = backend === 'fold' ? "dsh-fold's compaction" : "DSH's compaction-basic"
  for (const restartAfter of [null, 'fold', 'compact']) {
    const when = restartAfter === null ? 'in one process' : `with a restart after the ${restartAfter === 'fold' ? 'fold' : 'compaction'}`
    describe(`a lost stamp, then ${name}, ${when}`, () => {
      it("the guard asks for no second fold: the user's later request stays in context and the mark is stamped", async () => {
        const { facts, last, log } = await scenario(backend, ['fold', 'compact', 'heal', 'later'], restartAfter)
        const report = theReport(log)
        assert.equal(log.some((e) => e.surfaceOp?.op === 'replace' && e.seq > report.seq && e.sourceEventSeqs?.includes(report.seq)), true, 'the compaction replaced the report')
        if (restartAfter === 'fold') assert.equal(facts[0].active, true, 'the stamp was lost: the mark reads active after the fold')
        assert.equal(last.laterInContext, true, "the user's later request was folded away")
        assert.equal(last.warningsAfterLater, 0, 'the guard asked for a rewind of a mark already folded')
        assert.equal(last.active, false, 'the mark is stamped folded')
      })

      it('a rewind called anyway repairs the stamp and returns the fold, folding nothing again', async () => {
        const { answers, last, log } = await scenario(backend, ['fold', 'compact', 'heal', 'rewind', 'later'], restartAfter)
        const report = theReport(log)
        const cited = report.sourceEventSeqs
        assert.equal(answers.rewind.code, undefined, answers.rewind.message)
        assert.equal(answers.rewind.markId, 1)
        assert.equal(answers.rewind.foldedNodes, cited.length)
        assert.deepEqual([answers.rewind.start, answers.rewind.end], [cited[0], cited.at(-1)])
        assert.ok(answers.rewind.foldedChars > 0 && answers.rewind.reportChars > 0)
        assert.equal(last.laterInContext, true)
        assert.equal(last.active, false)
      })
    })
  }
}
