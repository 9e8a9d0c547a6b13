// @ts-check
/**
 * @module scripts/steps
 * Running `npm test`'s steps (scripts/test.mjs) so that stopping the run leaves nothing behind.
 *
 * Each step is a child process leading a process group of its own. A Ctrl-C, a CI runner's
 * SIGTERM or a closed terminal's SIGHUP reaches the run, which passes that signal on to the
 * running step's group once and gives the step `STEP_GRACE_MS` to end as it ends on its own
 * Ctrl-C: a test file stops the hosts it booted, the rehearsal its registry, a cargo build its
 * compilers. Whatever of the group is still there after that is killed. Then `onStop` runs (the
 * private TMPDIR's removal) and the run ends by the same signal, as it would have without any
 * of this. A second signal while the step is stopping kills its group at once.
 *
 * Without this, the run (which waited in `spawnSync`) died at a `kill` of its own pid without
 * removing its TMPDIR, and the step went on running with no parent; at a terminal's Ctrl-C the
 * step was stopped but the TMPDIR stayed.
 */
import { spawn } from 'node:child_process'
import { constants } from 'node:os'

import { running } from '../bin/durable.mjs'
import { killGroup, stopGroup } from '../bin/host/launch.mjs'

/**
 * How long a stopped step gets before its group is killed: a test file that booted a host
 * gives it `HOST_SHUTDOWN_GRACE_MS` (10 s) to shut down, and the test runner waits for its
 * files; 30 s leaves room for that on a loaded machine.
 */
export const STEP_GRACE_MS = 30_000

/** The signals that stop a run. */
const STOPPING = /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])

/**
 * A runner of steps. `run(cmd, args, env)` runs one step to its end: a step that fails ends the
 * run with exit code 1, naming it. The signal handlers stay installed for the run's life.
 * @param {{cwd: string, onStop: () => void, graceMs?: number, name?: string}} options
 *   `onStop` runs once, after a stopped step has ended and before the run ends by its signal;
 *   `name` is how messages call the run (`npm test`)
 */
export function stepRunner({ cwd, onStop, graceMs = STEP_GRACE_MS, name = 'npm test' }) {
  /** @type {{pid: number, exited: Promise<unknown>, label: string} | null} */
  let current = null
  /** @type {NodeJS.Signals | null} */
  let stopping = null

  /** @param {NodeJS.Signals} signal */
  const stop = (signal) => {
    if (stopping !== null) {
      if (current) {
        console.error(`\n${name}: ${signal} again: killing \`${current.label}\` now`)
        killGroup(current.pid, 'SIGKILL')
      }
      return
    }
    stopping = signal
    const step = current
    if (step) console.error(`\n${name}: ${signal}: stopping \`${step.label}\` (at most ${graceMs / 1000} s; ${signal} again kills it now)`)
    const ended = step ? stopGroup(step.pid, step.exited, { signal, graceMs }) : Promise.resolve()
    void ended.finally(() => {
      for (const s of STOPPING) process.removeListener(s, stop)
      try {
        onStop()
      } finally {
        process.kill(process.pid, signal)
        // Another listener kept the signal from ending the process: end it as the shell would.
        setImmediate(() => process.exit(128 + constants.signals[signal]))
      }
    })
  }
  for (const s of STOPPING) process.on(s, stop)

  /**
   * Runs one step; resolves when it passed. Standard output and error are the run's; standard
   * input is none (a step in a group of its own must not read the terminal).
   * @param {string} cmd @param {string[]} args @param {Record<string, string>} [env]
   * @returns {Promise<void>}
   */
  async function run(cmd, args, env) {
    const label = `${cmd} ${args.join(' ')}`
    console.log(`\n$ ${label}`)
    if (stopping !== null) return new Promise(() => {})
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, ...env }, detached: true })
    /** @type {Promise<{code: number | null, signal: NodeJS.Signals | null, error?: Error}>} */
    const exited = new Promise((resolve) => {
      child.once('error', (error) => resolve({ code: null, signal: null, error }))
      child.once('exit', (code, signal) => resolve({ code, signal }))
    })
    if (child.pid !== undefined) current = { pid: child.pid, exited, label }
    const { code, signal, error } = await exited
    // A stopped run ends by its signal once `stop` has killed what is left of the group; nothing
    // after this step runs.
    if (stopping !== null) return new Promise(() => {})
    current = null
    // The step's leader is gone; so must be anything it left running in its group (`-pid`: the
    // group's processes). A process that was exiting with it gets a moment to be gone before it
    // is named.
    if (child.pid !== undefined && running(-child.pid)) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      if (running(-child.pid)) {
        console.error(`${name}: \`${label}\` left processes running in its group; killing them`)
        killGroup(child.pid, 'SIGKILL')
      }
    }
    if (code !== 0) {
      console.error(`\n${name}: \`${label}\` failed (${error ? error.message : `exit ${code ?? signal}`})`)
      process.exit(1)
    }
  }

  return { run }
}
