/**
 * @module __test__/helpers/tmp
 * Temp folders for tests, removed when the test's process exits: `npm test` runs every suite
 * with a private TMPDIR and fails when anything is left in it (scripts/test.mjs). A test that
 * can remove its folder itself (`t.after`, `after`) does; this is for the helpers that hand out
 * folders many tests use (a fresh checkpoint store per test), which cannot know when the last
 * use is over. Removal happens at the process's `exit`, after its event loop ran dry: no store
 * write of the process is still under way then. A signal that ends the process without `exit`
 * (Ctrl-C, a runner's SIGTERM, a closed terminal's SIGHUP) removes them too, and then ends the
 * process with the same signal, as it would have ended without this module; a process that
 * handles the signal itself keeps doing so.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/** @type {Set<string>} */
const made = new Set()

/**
 * A fresh folder in the OS temp dir, removed at this process's exit.
 * @param {string} [prefix] the folder name's start (`dsh-fold-` unless said)
 */
export function tempDir(prefix = 'dsh-fold-') {
  const dir = mkdtempSync(path.join(tmpdir(), prefix))
  if (made.size === 0) {
    process.once('exit', removeAll)
    for (const signal of ENDING_SIGNALS) process.once(signal, removeAndDie)
  }
  made.add(dir)
  return dir
}

/** A fresh checkpoint store path (`<temp>/storages/checkpoint.json`; nothing created but the temp folder). @param {string} [prefix] */
export const tempStore = (prefix) => path.join(tempDir(prefix), 'storages', 'checkpoint.json')

/** Signals whose default action ends a Node process without its `exit` event. */
const ENDING_SIGNALS = /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])

/**
 * Removes the folders, then lets `signal` end the process by its default action. When the
 * process handles the signal itself (another listener), it decides: `exit` still removes them.
 * @param {NodeJS.Signals} signal
 */
function removeAndDie(signal) {
  for (const s of ENDING_SIGNALS) process.removeListener(s, removeAndDie)
  if (process.listenerCount(signal) > 0) return
  removeAll()
  process.kill(process.pid, signal)
}

function removeAll() {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
  made.clear()
}
