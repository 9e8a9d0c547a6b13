/**
 * The tests' temp folders (helpers/tmp.mjs) go when the test process ends, however it ends: a
 * normal exit, and also Ctrl-C or a runner's SIGTERM, which end a Node process without its
 * `exit` event. The process still dies of the signal, as it would without the helper.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'

const TMP = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), 'helpers', 'tmp.mjs')).href

/**
 * Runs a process that takes a temp folder and a store path, then waits (or exits when `exit`);
 * sends `signal` once it printed them. Resolves with the folders and how it ended.
 * @param {NodeJS.Signals | null} signal
 */
function runChild(signal) {
  const script = `import { tempDir, tempStore } from ${JSON.stringify(TMP)}
const dir = tempDir(); const store = tempStore()
console.log(JSON.stringify([dir, store]))
${signal ? 'setInterval(() => {}, 1000)' : ''}`
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (d) => {
      out += d
      if (signal && out.includes('\n')) child.kill(signal)
    })
    child.on('error', reject)
    child.on('exit', (code, sig) => resolve({ made: JSON.parse(out), code, sig }))
  })
}

describe('helpers/tmp: temp folders go however the test process ends', () => {
  it('at a normal exit', async () => {
    const { made, code } = /** @type {any} */ (await runChild(null))
    assert.equal(code, 0)
    const [dir, store] = made
    assert.ok(!existsSync(dir), `${dir} left behind`)
    assert.ok(!existsSync(path.dirname(path.dirname(store))), `${store}'s folder left behind`)
  })
  for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
    it(`at ${signal}, and the process still dies of it`, async () => {
      const { made, sig } = /** @type {any} */ (await runChild(signal))
      assert.equal(sig, signal, 'the signal ends the process as it would without the helper')
      const [dir, store] = made
      assert.ok(!existsSync(dir), `${dir} left behind`)
      assert.ok(!existsSync(path.dirname(path.dirname(store))), `${store}'s folder left behind`)
    })
  }
})
