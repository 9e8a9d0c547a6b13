/**
 * @module __test__/helpers/tmp
 * Temp folders for tests, removed when the test's process exits: `npm test` runs every suite
 * with a private TMPDIR and fails when anything is left in it (scripts/test.mjs). A test that
 * can remove its folder itself (`t.after`, `after`) does; this is for the helpers that hand out
 * folders many tests use (a fresh checkpoint store per test), which cannot know when the last
 * use is over. Removal happens at the process's `exit`, after its event loop ran dry: no store
 * write of the process is still under way then.
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
  if (made.size === 0) process.once('exit', removeAll)
  made.add(dir)
  return dir
}

/** A fresh checkpoint store path (`<temp>/storages/checkpoint.json`; nothing created but the temp folder). @param {string} [prefix] */
export const tempStore = (prefix) => path.join(tempDir(prefix), 'storages', 'checkpoint.json')

function removeAll() {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
  made.clear()
}
