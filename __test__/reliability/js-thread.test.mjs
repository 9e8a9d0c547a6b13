// No disk I/O and no wait on another thread's file work on the JS thread (DESIGN § Round 2).
//
// The store file is made a FIFO: reading it blocks until another process writes into it, so a
// read on the JS thread would freeze it for good. Each scenario runs in a child process that
// prints `free` once its JS thread has come back around the event loop after the reads under
// test; the parent only then feeds the FIFO. A child that never prints `free` within a minute
// had its JS thread stuck in the store: the test fails (and the child is killed), instead of
// the suite hanging. Nothing here measures time.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { addonPath, fold, tempStore } from './helpers.mjs'

const FREE_WITHIN_MS = 60_000

/** Replaces `file` with a FIFO; returns a function that feeds it `bytes` from another process. */
function fifoInPlaceOf(file, bytes) {
  const saved = `${file}.saved`
  writeFileSync(saved, bytes)
  unlinkSync(file)
  const made = spawnSync('mkfifo', ['-m', '600', file], { encoding: 'utf8' })
  assert.equal(made.status, 0, `mkfifo failed: ${made.stderr || made.error}`)
  // `cat` blocks until the store opens the FIFO for reading, then writes and closes it.
  return () => spawn('sh', ['-c', 'cat "$0" > "$1"', saved, file], { stdio: 'ignore' })
}

/**
 * Runs `body` (an async function body; `fold`, `store`, `assert`, `step(name)` and `free()` in
 * scope) in a child process. `step(name)` prints `name` and waits for a line on stdin, after
 * the parent ran `on[name](child)`; `free()` prints `free` once the JS thread came back around
 * the event loop, and the parent then runs `on.free()`. Resolves once the child exited 0.
 * @param {string} body
 * @param {{store: string, on: Record<string, (child: import('node:child_process').ChildProcess) => void>, env?: object}} options
 */
function scenario(body, { store, on, env = {} }) {
  const source = `
    const assert = require('node:assert/strict')
    const fold = require(${JSON.stringify(addonPath)})
    const store = ${JSON.stringify(store)}
    const lines = require('node:readline').createInterface({ input: process.stdin })[Symbol.asyncIterator]()
    const step = async (name) => { process.stdout.write(name + '\\n'); await lines.next() }
    const free = () => new Promise((resolve) => setImmediate(() => { process.stdout.write('free\\n'); resolve() }))
    ;(async () => { ${body} })().then(
      () => { process.stdout.write('done\\n'); process.exit(0) },
      (e) => { process.stderr.write(String(e && e.stack || e)); process.exit(3) },
    )`
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } })
    let err = ''
    const stuck = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the child's JS thread never came back within ${FREE_WITHIN_MS / 1000} s: it is stuck on the store's file work\n${err}`))
    }, FREE_WITHIN_MS)
    let pending = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (d) => {
      pending += d
      let nl
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl)
        pending = pending.slice(nl + 1)
        if (line === 'free') {
          clearTimeout(stuck)
          on.free(child)
        } else if (on[line]) {
          on[line](child)
          child.stdin.write('go\n')
        }
      }
    })
    child.stdin.on('error', () => {})
    child.stderr.on('data', (d) => (err += d))
    child.on('close', (code, signal) => {
      clearTimeout(stuck)
      if (code === 0) resolve(undefined)
      else reject(new Error(`child exit ${code ?? signal}: ${err}`))
    })
  })
}

describe('the JS thread never waits on the store file', () => {
  it('the first load: hasActive and latestMark answer off-thread; hasActiveSync says STORE_LOADING instead of reading', async () => {
    const file = tempStore()
    await fold.mark(file, 's', 3)
    const feed = fifoInPlaceOf(file, readFileSync(file))
    await scenario(
      `
      let settled = 0
      const active = fold.hasActive(store, 's').then((v) => (settled++, v))
      const latest = fold.latestMark(store, 's').then((v) => (settled++, v))
      assert.throws(() => fold.hasActiveSync(store, 's'), (e) => e.code === 'STORE_LOADING' && fold.isFoldError(e))
      await free()
      assert.equal(settled, 0, 'answered before the file could be read')
      assert.equal(await active, true)
      assert.equal((await latest).id, 1)
      assert.equal(fold.hasActiveSync(store, 's'), true)
      `,
      { store: file, on: { free: feed } },
    )
  })

  it('a re-read in progress (listMarks after another process wrote) never holds up the readers of memory', async () => {
    const file = tempStore()
    await fold.mark(file, 's', 3)
    let feed = () => {}
    await scenario(
      `
      assert.equal((await fold.latestMark(store, 's')).id, 1)
      await step('loaded')
      // another process marked 't' and the file is now a FIFO: the listing re-reads it and
      // blocks there, on a worker thread, until the parent feeds it
      const listing = fold.listMarks(store)
      await new Promise((resolve) => setTimeout(resolve, 50))
      assert.equal(fold.hasActiveSync(store, 's'), true)
      assert.equal(await fold.hasActive(store, 's'), true)
      assert.equal((await fold.latestMark(store, 's')).id, 1)
      await free()
      assert.deepEqual((await listing).map((m) => m.sessionId).sort(), ['s', 't'])
      `,
      {
        store: file,
        on: {
          loaded: () => {
            const other = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(addonPath)}).mark(${JSON.stringify(file)}, 't', 1)`])
            assert.equal(other.status, 0, String(other.stderr))
            feed = fifoInPlaceOf(file, readFileSync(file))
          },
          free: () => feed(),
        },
      },
    )
  })
})
