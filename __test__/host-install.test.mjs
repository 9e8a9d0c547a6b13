/**
 * The host cache's installer (bin/host/install.mjs: what `dsh-fold try` and the test harness
 * install the pinned host and Node 22 with) leaves no temp folder behind: a fill that fails
 * removes its `<kind>-<hash>.tmp-<pid>` folder, and the temp folder of an installer that died
 * (kill -9) is swept by the next run, while a live installer's survives.
 *
 * Real parts: real npm against a registry on 127.0.0.1 that refuses connections (a failed
 * install) or accepts them and never answers (an install in progress, killed with SIGKILL);
 * nothing is downloaded.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const INSTALL = pathToFileURL(path.join(ROOT, 'bin', 'host', 'install.mjs')).href
const TEMP = /\.tmp-\d+$/

/** Resolves when `check()` holds; polls every 50 ms (no time limit: the test's own applies). @param {() => boolean} check */
async function until(check) {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 50))
}

describe('the host cache installer leaves no temp folder behind', () => {
  /** @type {string} */
  let dir
  /** A port nothing listens on. */
  let refused = 0
  /** @type {import('node:net').Server} */
  let silent
  /** @type {import('node:net').Socket[]} */
  const held = []

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-host-install-'))
    const probe = createServer()
    await new Promise((resolve) => probe.listen(0, '127.0.0.1', () => resolve(undefined)))
    refused = /** @type {import('node:net').AddressInfo} */ (probe.address()).port
    await new Promise((resolve) => probe.close(resolve))
    // A registry that takes every connection and never answers: npm waits on it.
    silent = createServer((socket) => held.push(socket))
    await new Promise((resolve) => silent.listen(0, '127.0.0.1', () => resolve(undefined)))
  })
  after(async () => {
    for (const s of held) s.destroy()
    await new Promise((resolve) => silent.close(resolve))
    rmSync(dir, { recursive: true, force: true })
  })

  /** The environment of an installer whose npm talks to `registry` only, with an empty cache of its own. @param {string} registry @param {string} name */
  const npmEnv = (registry, name) => ({
    ...process.env,
    npm_config_registry: registry,
    npm_config_cache: path.join(dir, `npm-cache-${name}`),
    npm_config_fetch_retries: '0',
    npm_config_update_notifier: 'false',
  })

  test('an install that fails (the registry refuses) removes its temp folder and says why', () => {
    const cache = path.join(dir, 'refused')
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', `import(${JSON.stringify(INSTALL)}).then((m) => m.ensureHost({ cache: ${JSON.stringify(cache)} }))`], {
      env: npmEnv(`http://127.0.0.1:${refused}/`, 'refused'),
      encoding: 'utf8',
    })
    assert.notEqual(r.status, 0, 'the install cannot succeed')
    assert.match(r.stderr, /installing node from the npm registry/)
    assert.deepEqual(readdirSync(cache).filter((n) => TEMP.test(n)), [], 'no temp folder is left')
    assert.ok(!readdirSync(cache).some((n) => n.endsWith('.lock')), 'the lock is released')
  })

  test('an installer killed with SIGKILL mid-install: its temp folder survives while it lives, and the next run sweeps it', async () => {
    const cache = path.join(dir, 'killed')
    // The installer, in its own process group with its npm: kill -9 takes both.
    const installer = spawn(process.execPath, ['--input-type=module', '-e', `import(${JSON.stringify(INSTALL)}).then((m) => m.ensureHost({ cache: ${JSON.stringify(cache)} }))`], {
      env: npmEnv(`http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (silent.address()).port}/`, 'killed'),
      detached: true,
      stdio: 'ignore',
    })
    const exited = new Promise((resolve) => installer.on('exit', resolve))
    const temps = () => (existsSync(cache) ? readdirSync(cache).filter((n) => TEMP.test(n)) : [])
    // npm is waiting on the silent registry once it has connected.
    await until(() => temps().length === 1 && held.length > 0)
    const [live] = temps()
    assert.equal(live.replace(/^.*\.tmp-/, ''), String(installer.pid))

    // Another user of the cache meanwhile (a ready part of its own): the live installer's temp survives.
    const { ensureCached } = await import(INSTALL)
    const other = ensureCached({ cache, kind: 'other', pins: ['a'], fill: (tmp) => writeFileSync(path.join(tmp, 'x'), 'x'), log: () => {} })
    assert.ok(existsSync(path.join(other, '.ready')))
    assert.ok(temps().includes(live), 'a live installer\'s temp folder is not swept')

    process.kill(-(/** @type {number} */ (installer.pid)), 'SIGKILL')
    await exited
    assert.deepEqual(temps(), [live], 'a killed installer leaves its temp folder (nothing could remove it)')

    // The next run: the dead installer's temp folder is swept, whatever it installs.
    ensureCached({ cache, kind: 'other', pins: ['a'], fill: () => assert.fail('ready already'), log: () => {} })
    assert.deepEqual(temps(), [], 'the next run sweeps the dead installer\'s temp folder')
    assert.ok(existsSync(path.join(other, '.ready')), 'and keeps what is installed')
  })

  test('a temp folder of the same pins as a ready install is swept too once its installer is gone', async () => {
    const { ensureCached } = await import(INSTALL)
    const cache = path.join(dir, 'same-pins')
    const ready = ensureCached({ cache, kind: 'part', pins: ['p'], fill: (tmp) => writeFileSync(path.join(tmp, 'x'), 'x'), log: () => {} })
    // What an installer killed before its rename leaves: its pid is gone (a child that exited).
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout
    mkdirSync(path.join(cache, `${path.basename(ready)}.tmp-${dead}`, 'node_modules'), { recursive: true })
    ensureCached({ cache, kind: 'part', pins: ['p'], fill: () => assert.fail('ready already'), log: () => {} })
    assert.deepEqual(readdirSync(cache).filter((n) => TEMP.test(n)), [])
  })
})
