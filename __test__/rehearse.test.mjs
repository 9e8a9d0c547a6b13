/**
 * @module __test__/rehearse.test
 * `npm run release:rehearse` as a process, the parts `npm test`'s own rehearsal step never
 * exercises: `--serve` and being interrupted. Each run is the real thing — verdaccio from npm on
 * 127.0.0.1, the release's publish path (`napi artifacts`, `napi prepublish`, `npm publish`) — on
 * the binary built at the repository root, given as the workflow's downloaded artifacts
 * (`--artifacts`), with its own rehearsal folder (`DSH_FOLD_REHEARSAL_DIR`) and a private TMPDIR,
 * so "nothing left behind" is checked on folders nothing else writes to.
 * - `--serve`: prints the URL, serves the storage in verdaccio's layout (with every manifest
 *   naming the repository GitHub Actions says it runs in, as npm's provenance check wants), and on
 *   Ctrl-C (SIGINT to its process group, as a terminal sends it) or SIGTERM stops verdaccio
 *   gracefully and exits 0, leaving no process and no temp folder; the storage stays, and a new
 *   verdaccio on the same config serves the same release.
 * - Ctrl-C in the middle (after the publish, while the by-name installs run): exit 130, verdaccio
 *   stopped gracefully, the sandboxes and their processes gone, no temp folder.
 * Skipped without the root binary (`npm run build`) or under DSH_FOLD_SKIP_E2E (verdaccio and the
 * DSH host come from the npm registry).
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'

const ROOT = path.resolve(import.meta.dirname, '..')
const BINARY = path.join(ROOT, 'dsh-fold.linux-x64-gnu.node')
const SKIP = process.env.DSH_FOLD_SKIP_E2E
  ? 'DSH_FOLD_SKIP_E2E is set: the rehearsal installs verdaccio and a DSH host from the npm registry'
  : !(process.platform === 'linux' && process.arch === 'x64' && existsSync(BINARY)) ? 'needs the linux-x64-gnu binary at the repository root (npm run build)' : false

/** Processes (other than this one) whose command line or working folder is under `dir`. @param {string} dir */
function processesUnder(dir) {
  const found = []
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
      let cwd = ''
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`)
      } catch {
        // not ours to read
      }
      if (cmdline.includes(dir) || cwd.startsWith(dir)) found.push(`${pid}: ${cmdline}`)
    } catch {
      // gone meanwhile
    }
  }
  return found
}

/**
 * A rehearsal in its own process group, as a shell runs a foreground job; lines are collected.
 * @param {string} root the test's folder @param {string[]} args
 */
function startRehearsal(root, args) {
  const env = {
    ...process.env,
    TMPDIR: path.join(root, 'tmp'),
    DSH_FOLD_REHEARSAL_DIR: path.join(root, 'rehearsal'),
    GITHUB_SERVER_URL: 'https://github.com',
    GITHUB_REPOSITORY: 'rehearsal/dsh-fold',
    npm_config_update_notifier: 'false',
  }
  delete env.NODE_TEST_CONTEXT
  const child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'rehearse.mjs'), '--artifacts', path.join(root, 'artifacts'), '--targets', 'linux-x64-gnu', ...args], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  /** @type {{re: RegExp, resolve: (m: RegExpExecArray) => void}[]} */
  const waiting = []
  const poll = () => {
    for (const w of [...waiting]) {
      const m = w.re.exec(stdout + stderr)
      if (m) {
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve(m)
      }
    }
  }
  child.stdout.setEncoding('utf8').on('data', (d) => ((stdout += d), poll()))
  child.stderr.setEncoding('utf8').on('data', (d) => ((stderr += d), poll()))
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  return {
    child,
    exited,
    output: () => ({ stdout, stderr }),
    /** @param {RegExp} re @returns {Promise<RegExpExecArray>} */
    waitFor: (re) =>
      new Promise((resolve, reject) => {
        waiting.push({ re, resolve })
        poll()
        exited.then((code) => reject(new Error(`the rehearsal exited (${code}) before printing ${re}:\n${stdout}\n${stderr}`)))
      }),
    /** @param {NodeJS.Signals} sig */
    signal: (sig) => process.kill(-(/** @type {number} */ (child.pid)), sig),
  }
}

/** The test's own folder: the root binary laid out as download-artifact leaves it, a private TMPDIR. */
function workspace() {
  const root = mkdtempSync(path.join(tmpdir(), 'dsh-fold-rehearse-test-'))
  mkdirSync(path.join(root, 'tmp'))
  mkdirSync(path.join(root, 'artifacts', 'bindings-x86_64-unknown-linux-gnu'), { recursive: true })
  copyFileSync(BINARY, path.join(root, 'artifacts', 'bindings-x86_64-unknown-linux-gnu', 'dsh-fold.linux-x64-gnu.node'))
  return root
}

describe('npm run release:rehearse as a process', { skip: SKIP }, () => {
  const roots = /** @type {string[]} */ ([])
  after(() => {
    for (const r of roots) rmSync(r, { recursive: true, force: true })
  })

  for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
    it(`--serve prints its URL, serves the release in verdaccio's layout, and stops cleanly on ${sig}`, { timeout: 600_000 }, async () => {
      const root = workspace()
      roots.push(root)
      const run = startRehearsal(root, ['--no-checks', '--serve'])
      const [, url] = await run.waitFor(/serving the rehearsal registry on (http:\/\/127\.0\.0\.1:\d+\/) until Ctrl-C/)
      assert.match(run.output().stdout, new RegExp(`npm_config_registry=${url.replace(/[.]/g, '\\.')} dsh plugin --profile headless add dsh-fold`))
      for (const name of ['dsh-fold', 'dsh-fold-linux-x64-gnu']) {
        const doc = await (await fetch(`${url}${name}`)).json()
        assert.equal(doc['dist-tags'].latest, '0.1.0', name)
        assert.equal(doc.versions['0.1.0'].repository.url, 'git+https://github.com/rehearsal/dsh-fold.git', `${name}: the repository npm's provenance check compares`)
        const tarball = await fetch(doc.versions['0.1.0'].dist.tarball)
        assert.equal(tarball.status, 200, `${name}'s tarball is served`)
        await tarball.arrayBuffer()
      }
      const storage = path.join(root, 'rehearsal', 'storage')
      assert.ok(existsSync(path.join(storage, 'dsh-fold', 'package.json')) && existsSync(path.join(storage, 'dsh-fold-linux-x64-gnu', 'package.json')), 'verdaccio\'s own layout')
      assert.deepEqual(readdirSync(storage).filter((f) => f.endsWith('.tgz')), [])

      run.signal(sig)
      assert.equal(await run.exited, 0, `${run.output().stdout}\n${run.output().stderr}`)
      assert.match(run.output().stderr, /\[rehearse\] verdaccio stopped: exit 0 after SIGTERM/)
      assert.doesNotMatch(run.output().stderr, /killing it/)
      await assert.rejects(fetch(`${url}-/ping`), 'nothing answers on the URL any more')
      assert.deepEqual(processesUnder(root), [])
      assert.deepEqual(readdirSync(path.join(root, 'tmp')), [], 'no temp folder left')
      // The storage stays: any verdaccio on the config serves the same release.
      const { startRegistry } = await import('../scripts/registry.mjs')
      const again = await startRegistry(path.join(root, 'rehearsal'))
      try {
        const doc = await (await fetch(`${again.url}dsh-fold`)).json()
        assert.deepEqual(Object.keys(doc.versions), ['0.1.0'])
      } finally {
        await again.stop()
      }
    })
  }

  it('Ctrl-C while the by-name installs run: exit 130, verdaccio stopped gracefully, no sandbox, process or temp folder left', { timeout: 900_000 }, async () => {
    const root = workspace()
    roots.push(root)
    const run = startRehearsal(root, [])
    await run.waitFor(/\[rehearse\] published dsh-fold@0\.1\.0/)
    // Interrupted once the first check's sandbox (a clean HOME under the private TMPDIR) runs a
    // command: `dsh plugin add` and its pnpm.
    let ended = false
    run.exited.then(() => (ended = true))
    for (;;) {
      assert.ok(!ended, `the rehearsal ended before its first check ran:\n${run.output().stderr}`)
      const sandbox = readdirSync(path.join(root, 'tmp')).find((f) => f.startsWith('dsh-fold-rehearse-profile-'))
      if (sandbox && processesUnder(path.join(root, 'tmp', sandbox)).length > 0) break
      await new Promise((r) => setTimeout(r, 100))
    }
    run.signal('SIGINT')
    assert.equal(await run.exited, 130, `${run.output().stdout}\n${run.output().stderr}`)
    const { stderr } = run.output()
    assert.match(stderr, /\[rehearse\] SIGINT: stopping the registry and removing temp folders/)
    assert.match(stderr, /\[rehearse\] verdaccio stopped: exit 0 after SIGTERM/)
    assert.doesNotMatch(stderr, /killing it/)
    assert.deepEqual(processesUnder(root), [])
    assert.deepEqual(readdirSync(path.join(root, 'tmp')), [], 'no temp folder left (scratch, stage, sandboxes)')
    assert.ok(existsSync(path.join(root, 'rehearsal', 'config.yaml')), 'the registry\'s config stays, to be served again')
  })
})
