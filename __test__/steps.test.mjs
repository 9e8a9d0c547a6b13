// npm test's steps (scripts/steps.mjs): a signal to the run stops the running step as its own
// Ctrl-C would, kills what is left of its group, removes the run's TMPDIR and ends the run by
// the same signal; a failed step fails the run; a step's leftover processes do not outlive it.
// Each case runs a real driver process (the runner with one step, a real `node` child that
// itself starts a grandchild) and signals the driver's pid alone, as `kill PID` or a CI runner
// does; a terminal's Ctrl-C reaches the run alone too, since every step leads its own group.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'

import { running } from '../bin/durable.mjs'
import { killGroup } from '../bin/host/launch.mjs'
import { tempDir } from './helpers/tmp.mjs'

const STEPS = pathToFileURL(path.join(import.meta.dirname, '..', 'scripts', 'steps.mjs')).href

/** Driver groups still to kill if a case fails half-way. @type {Set<number>} */
const drivers = new Set()
after(() => {
  for (const pid of drivers) killGroup(pid, 'SIGKILL')
})

/**
 * The step: starts a grandchild that ignores SIGINT and SIGTERM (so only the group's SIGKILL ends
 * it) and writes its pid; writes `ready`; on SIGINT or SIGTERM, unless `stubborn`, takes 200 ms
 * to "shut down", writes `stopped-by-<signal>` and exits 0. `exit` ends it on its own with that
 * code right after `ready`.
 * @param {{stubborn?: boolean, exit?: number}} o
 */
const stepCode = ({ stubborn = false, exit }) => `
  const { spawn } = require('node:child_process')
  const { writeFileSync } = require('node:fs')
  const path = require('node:path')
  const dir = process.env.STEP_DIR
  const grandchild = spawn(process.execPath, ['-e', "process.on('SIGINT', () => {}); process.on('SIGTERM', () => {}); setInterval(() => {}, 1e9)"], { stdio: 'ignore' })
  writeFileSync(path.join(dir, 'grandchild.pid'), String(grandchild.pid))
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => {
    if (${stubborn}) return
    setTimeout(() => { writeFileSync(path.join(dir, 'stopped-by-' + signal), ''); process.exit(0) }, 200)
  })
  writeFileSync(path.join(dir, 'ready'), '')
  ${exit === undefined ? 'setInterval(() => {}, 1e9)' : `grandchild.unref(); process.exit(${exit})`}
`

/**
 * Starts a driver: a run with a private TMPDIR (`run-tmp/`, removed by `onStop` and at exit),
 * one step, then `after-step` written if the run goes on past it.
 * @param {{stubborn?: boolean, exit?: number, graceMs?: number}} [o]
 */
function driver({ stubborn, exit, graceMs = 20_000 } = {}) {
  const dir = tempDir('dsh-fold-steps-')
  mkdirSync(path.join(dir, 'run-tmp'))
  const code = `
    import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
    import path from 'node:path'
    import { stepRunner } from ${JSON.stringify(STEPS)}
    const dir = ${JSON.stringify(dir)}
    const removeTmp = () => rmSync(path.join(dir, 'run-tmp'), { recursive: true, force: true })
    process.on('exit', removeTmp)
    const { run } = stepRunner({ cwd: dir, onStop: removeTmp, graceMs: ${graceMs}, name: 'the driver' })
    await run(process.execPath, ['-e', ${JSON.stringify(stepCode({ stubborn, exit }))}], { STEP_DIR: dir })
    writeFileSync(path.join(dir, 'after-step'), '')
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  drivers.add(/** @type {number} */ (child.pid))
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  child.stdout.resume()
  /** @type {Promise<{code: number | null, signal: NodeJS.Signals | null, stderr: string}>} */
  const ended = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stderr })))
  return { child, dir, ended, stderr: () => stderr }
}

/** Waits for `check()` (polling; bounded so a broken case fails instead of hanging). @param {() => boolean} check @param {string} what */
async function until(check, what) {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 50))
  assert.ok(check(), `still waiting for ${what}`)
}

describe("npm test's steps, stopped by a signal", () => {
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
    it(`${signal} to the run: the step gets ${signal} and shuts down, its leftover grandchild is killed, the TMPDIR is removed, the run ends by ${signal}`, async () => {
      const { child, dir, ended } = driver()
      await until(() => existsSync(path.join(dir, 'ready')), 'the step to start')
      const grandchild = Number(readFileSync(path.join(dir, 'grandchild.pid'), 'utf8'))
      child.kill(signal)
      const { code, signal: endedBy, stderr } = await ended
      drivers.delete(/** @type {number} */ (child.pid))
      assert.deepEqual({ code, endedBy }, { code: null, endedBy: signal }, stderr)
      // The step got the same signal and ran its own shutdown (SIGHUP it does not handle: it dies of it).
      const stopped = ['SIGINT', 'SIGTERM'].includes(signal) ? `stopped-by-${signal}` : null
      if (stopped) assert.ok(existsSync(path.join(dir, stopped)), `the step did not shut down on ${signal}`)
      assert.match(stderr, new RegExp(`the driver: ${signal}: stopping \``))
      assert.equal(existsSync(path.join(dir, 'run-tmp')), false, 'the TMPDIR is still there')
      assert.equal(existsSync(path.join(dir, 'after-step')), false, 'the run went on after a stopped step')
      await until(() => !running(grandchild), 'the grandchild to be killed')
    })
  }

  it('a step that ignores the signal is killed after the grace, and the run still cleans up and ends by the signal', async () => {
    const { child, dir, ended } = driver({ stubborn: true, graceMs: 500 })
    await until(() => existsSync(path.join(dir, 'ready')), 'the step to start')
    const grandchild = Number(readFileSync(path.join(dir, 'grandchild.pid'), 'utf8'))
    child.kill('SIGTERM')
    const { signal, stderr } = await ended
    drivers.delete(/** @type {number} */ (child.pid))
    assert.equal(signal, 'SIGTERM', stderr)
    assert.equal(existsSync(path.join(dir, 'run-tmp')), false)
    await until(() => !running(grandchild), 'the grandchild to be killed')
  })

  it('a second signal while the step is stopping kills it at once', async () => {
    const { child, dir, ended, stderr } = driver({ stubborn: true, graceMs: 600_000 })
    await until(() => existsSync(path.join(dir, 'ready')), 'the step to start')
    child.kill('SIGINT')
    await until(() => /stopping `/.test(stderr()), 'the run to say it is stopping the step')
    child.kill('SIGINT')
    const { signal } = await ended
    drivers.delete(/** @type {number} */ (child.pid))
    assert.equal(signal, 'SIGINT')
    assert.match(stderr(), /the driver: SIGINT again: killing `.*` now/s)
    assert.equal(existsSync(path.join(dir, 'run-tmp')), false)
  })
})

describe("npm test's steps, ending on their own", () => {
  it('a step that passes: the run goes on; a grandchild it left running is named and killed', async () => {
    const { child, dir, ended } = driver({ exit: 0 })
    const { code, stderr } = await ended
    drivers.delete(/** @type {number} */ (child.pid))
    assert.equal(code, 0, stderr)
    assert.ok(existsSync(path.join(dir, 'after-step')), 'the run stopped after a step that passed')
    assert.match(stderr, /the driver: `.*` left processes running in its group; killing them/s)
    const grandchild = Number(readFileSync(path.join(dir, 'grandchild.pid'), 'utf8'))
    await until(() => !running(grandchild), 'the grandchild to be killed')
    assert.equal(existsSync(path.join(dir, 'run-tmp')), false)
  })

  it('a step that fails: the run fails with exit code 1, naming the step and its exit code, and goes no further', async () => {
    const { child, dir, ended } = driver({ exit: 3 })
    const { code, stderr } = await ended
    drivers.delete(/** @type {number} */ (child.pid))
    assert.equal(code, 1)
    assert.match(stderr, /the driver: `.* -e .*` failed \(exit 3\)/s)
    assert.equal(existsSync(path.join(dir, 'after-step')), false)
    assert.equal(existsSync(path.join(dir, 'run-tmp')), false)
  })

  it('a step that cannot start: the run fails with exit code 1, naming why', async () => {
    const dir = tempDir('dsh-fold-steps-')
    const code = `
      import { stepRunner } from ${JSON.stringify(STEPS)}
      const { run } = stepRunner({ cwd: ${JSON.stringify(dir)}, onStop: () => {}, name: 'the driver' })
      await run(${JSON.stringify(path.join(dir, 'no-such-program'))}, [])
    `
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const exit = await new Promise((resolve) => child.on('exit', resolve))
    assert.equal(exit, 1)
    assert.match(stderr, /the driver: `.*no-such-program ` failed \(spawn .*no-such-program ENOENT\)/)
  })
})
