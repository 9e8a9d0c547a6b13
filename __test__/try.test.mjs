/**
 * `dsh-fold try` against a real installed host (the README's: pnpm, rc.8, the HMR override;
 * __test__/helpers/readme-host.mjs), run as a user runs it: `dsh` on PATH, a HOME whose
 * `~/.dsh` holds a profile of their own (which must stay untouched), TMPDIR private to the test
 * (so what `try` leaves behind is visible).
 *
 * The scripted path end to end (checkpoint → explore → rewind → recall on the workspace it
 * writes, and block mode's programs), the pinned host in the cache when nothing is installed,
 * a named profile, and the real-model path's wiring (the user's key and endpoint reach the
 * host; here the endpoint is a scripted OpenAI-compatible server on 127.0.0.1).
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: try boots a real DSH host' : false
const HMR_ROW = "- insert:\n    - id: launcher-hmr\n      name: '@deepseek-ai/cordis-plugin-hmr'\n      config: { root: [] }\n"

/** Every file under `dir`: hash and mtime. @param {string} dir */
function snapshot(dir) {
  /** @type {Record<string, string>} */
  const out = {}
  for (const rel of readdirSync(dir, { recursive: true }).map(String).sort()) {
    const st = statSync(path.join(dir, rel), { throwIfNoEntry: false })
    if (!st) continue
    out[rel] = st.isDirectory() ? 'dir' : `${createHash('sha256').update(readFileSync(path.join(dir, rel))).digest('hex')} ${st.mtimeMs}`
  }
  return out
}

/**
 * Runs the command (this checkout's, or the executable `bin`); resolves {code, stdout, stderr}.
 * @param {string[]} args @param {Record<string, string | undefined>} env @param {string} [bin]
 */
function run(args, env, bin) {
  return /** @type {Promise<{code: number | null, stdout: string, stderr: string}>} */ (
    new Promise((resolve, reject) => {
      const full = { ...process.env, ...env }
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k]
      const child = bin ? spawn(bin, args, { env: full, stdio: ['ignore', 'pipe', 'pipe'] }) : spawn(process.execPath, [BIN, ...args], { env: full, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
      const timer = setTimeout(() => child.kill('SIGKILL'), 300_000)
      child.on('error', reject)
      child.on('close', (code) => {
        clearTimeout(timer)
        resolve({ code, stdout, stderr })
      })
    })
  )
}

describe('dsh-fold try on a real installed host', { skip: SKIP }, () => {
  /** @type {ReturnType<typeof import('./helpers/readme-host.mjs').ensureReadmeHost>} */
  let readme
  /** @type {string} */
  let tmp
  /** @type {string} */
  let home
  /** @type {string} */
  let tmpdirOfRuns
  let userPath = ''
  /** @type {Record<string, string>} */
  let homeBefore
  /** The environment of a user with the README's host on PATH and no key. */
  /** The pids of host processes (bin/host/boot.mjs) started by a run of this suite. */
  const hostsOfThisRun = () =>
    readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('bin/host/boot.mjs') && readFileSync(`/proc/${p}/environ`, 'utf8').includes(tmpdirOfRuns)
      } catch {
        return false
      }
    })
  const userEnv = () => ({ HOME: home, PATH: userPath, TMPDIR: tmpdirOfRuns, DSH_HOME: undefined, DEEPSEEK_API_KEY: undefined, DEEPSEEK_BASE_URL: undefined, DSH_TOOLS_MODE: undefined, DSH_FOLD_CACHE: path.join(tmp, 'no-cache') })
  /** @type {string | undefined} */
  let namedDshHome
  /** A DSH home of the user's own, its headless profile with dsh-fold added by `dsh plugin add` (made once). */
  const namedHome = async () => {
    if (namedDshHome) return namedDshHome
    const { pack } = await import('../scripts/pack.mjs')
    const tarballs = pack(path.join(tmp, 'pack'))
    const dshHome = path.join(tmp, 'named', '.dsh')
    mkdirSync(dshHome, { recursive: true })
    writeFileSync(path.join(dshHome, 'cordis.patch.yml'), HMR_ROW)
    execFileSync('dsh', ['plugin', '--profile', 'headless', 'add', tarballs.root, tarballs.platform], { env: { ...process.env, ...userEnv(), DSH_HOME: dshHome, HOME: path.dirname(dshHome), npm_config_store_dir: readme.storeDir, DSH_FOLD_CACHE: '' }, stdio: ['ignore', 'ignore', 'pipe'] })
    namedDshHome = dshHome
    return dshHome
  }

  before(async () => {
    const { ensureReadmeHost } = await import('./helpers/readme-host.mjs')
    readme = ensureReadmeHost()
    tmp = mkdtempSync(path.join(tmpdir(), 'dsh-fold-try-test-'))
    home = path.join(tmp, 'home')
    tmpdirOfRuns = path.join(tmp, 'tmp')
    mkdirSync(tmpdirOfRuns, { recursive: true })
    // The user's own ~/.dsh: a profile and a store that try must never touch.
    mkdirSync(path.join(home, '.dsh', 'profiles', 'mine'), { recursive: true })
    writeFileSync(path.join(home, '.dsh', 'profiles', 'mine', 'package.json'), '{"name":"mine","dsh":{"profile":{"bundles":["@deepseek-ai/dsh-base"]}}}\n')
    mkdirSync(path.join(home, '.dsh', 'storages'), { recursive: true })
    writeFileSync(path.join(home, '.dsh', 'storages', 'checkpoint.json'), '{"unit":{"name":"checkpoint","version":2},"global":{"nextId":1},"tables":{"marks":{}}}\n')
    homeBefore = snapshot(path.join(home, '.dsh'))
    userPath = [path.dirname(readme.node22), readme.hostBin, path.dirname(readme.pnpm), process.env.PATH].join(path.delimiter)
  }, { timeout: 600_000 })
  after(() => rmSync(tmp, { recursive: true, force: true }))

  test('scripted: checkpoint → explore → rewind → recall in the installed host, printed as it happens; nothing of ~/.dsh touched, nothing left behind', async () => {
    const r = await run(['try'], userEnv())
    assert.equal(r.code, 0, r.stdout + r.stderr)
    const out = r.stdout
    assert.match(out, /^dsh-fold try: no DEEPSEEK_API_KEY, so a scripted model plays the agent/)
    assert.match(out, /\nhost: +@deepseek-ai\/dsh 0\.1\.0-rc\.8 \(`dsh` on PATH .*\), Node v22\./)
    assert.match(out, /\nhome: +a temporary DSH home .* \(removed at the end; --keep keeps it\), profile headless, dsh-fold 0\.1\.0 installed from this checkout/)
    // The order of what the model did, as the log recorded it.
    const order = [
      /→ checkpoint \{"objective":"find why node src\/main\.js greets the wrong person"\}/,
      /← checkpoint: Checkpoint 1 set; call `rewind` when the investigation is done\./,
      /→ bash \$ ls -R/,
      /→ read \{"file_path":"src\/main\.js"\}\n {2}→ grep \{"pattern":"name","path":"src"\}/,
      /← bash: Hello, Adda!/,
      /→ rewind \{\}/,
      /⤷ fold of mark 1: \d+ surface nodes \(seq \d+\.\.\d+\) replaced by a \d+-char report \(with its frame and recall's hint line: \d+ chars in all\); the model reads from now on:\n {4}│ \[Checkpoint 1 — find why node src\/main\.js greets the wrong person\] A report extracted from that investigation's steps;[^\n]*\n {4}│\s*\n {4}│ ## Findings/,
      /← rewind: Checkpoint 1 folded: the \d+ messages of its investigation \(\d+ chars\) are replaced by a report extracted from them, above \(\d+ chars\)\./,
      /→ recall \{"fold":"latest","query":"displayName","around":0\}/,
      /← recall: \d+ lines: \d+ lines? in fold 1 match displayName:/,
      /answer: node src\/main\.js prints "Hello, Adda!" instead of "Hello, Ada!"\./,
      /The defaults line, as recall returned it from the folded exploration: `user: \{ name: 'Ada', displayName: 'Adda' \},`/,
      /\ndone in [\d.]+ s: 8 tool calls \(0 failed\), fold of mark 1: \d+ surface nodes → a \d+-char report\n/,
    ]
    let at = 0
    for (const re of order) {
      const m = re.exec(out.slice(at))
      assert.ok(m, `not found after offset ${at}: ${re}\n${out}`)
      at += m.index + m[0].length
    }
    // One figure for the fold's report: the transcript's is the rewind result's.
    assert.equal(/replaced by a (\d+)-char report/.exec(out)?.[1], /replaced by a report extracted from them, above \((\d+) chars\)/.exec(out)?.[1], out)
    assert.deepEqual(snapshot(path.join(home, '.dsh')), homeBefore, '~/.dsh untouched')
    // (node-compile-cache is Node's own, made by the npm that installs the tarballs: a shared cache, not a leftover)
    assert.deepEqual(readdirSync(tmpdirOfRuns).filter((f) => f !== 'node-compile-cache'), [], 'the temporary DSH home, workspace and the host\'s temp files are removed')
  })

  test('--json: the run in numbers', async () => {
    const r = await run(['try', '--json'], userEnv())
    assert.equal(r.code, 0, r.stderr)
    const j = JSON.parse(r.stdout)
    assert.equal(j.model, 'scripted')
    assert.equal(j.completed, true)
    assert.equal(j.turnEnd, 'completed')
    assert.equal(j.temporary, true)
    assert.equal(j.toolCalls, 8)
    assert.equal(j.failedCalls, 0)
    assert.equal(j.folds.length, 1)
    assert.equal(j.folds[0].kind, 'fold')
    assert.equal(j.folds[0].markId, 1)
    assert.ok(j.folds[0].replaced >= 5, JSON.stringify(j.folds))
    assert.match(j.folds[0].reportFirstLine, /^\[Checkpoint 1 — find why node src\/main\.js greets the wrong person\] A report extracted/)
    assert.match(j.answer, /Fix: in src\/config\.js/)
    assert.match(r.stderr, /⤷ fold of mark 1/, 'the transcript goes to stderr under --json')
  })

  test('--compaction: the run-log survey fills a 20,000-token window, dsh-fold/compaction compacts it (printed like a fold), recall reads the deploy line back from it', async () => {
    const r = await run(['try', '--compaction'], userEnv())
    assert.equal(r.code, 0, r.stdout + r.stderr)
    const out = r.stdout
    assert.match(out, /\ncompaction: dsh-fold\/compaction for this run only \(an overlay; no profile file is written\), the model's context window set to 20,000 tokens so it compacts within a short task\n/)
    const order = [
      /→ bash \$ ls -l logs/,
      /→ read \{"file_path":"logs\/runs-2025-06\.log"\}/,
      /⤷ compaction by dsh-fold\/compaction \(pressure\): \d+ messages \(seq \d+\.\.\d+\), [\d,]+ chars → a [\d,]+-char checkpoint, 0 model calls, \d+ ms; the model reads from now on:\n(?: {4}│[^\n]*\n)+? {4}│ <compacted-summary>\n/,
      /→ checkpoint \{"objective":"find why node src\/main\.js greets the wrong person"\}/,
      /⤷ fold of mark 1: /,
      /→ recall \{"compaction":"latest","query":"deploy","around":0\}/,
      /← recall: \d+ lines: 1 line in compaction [0-9a-f-]+ match deploy:/,
      /It started with this deploy, as recall returned it from the compacted run logs: `2025-06-14T09:12:44Z deploy 3f2c1e9 \(release 1\.4\.0\): src\/config\.js DEFAULTS\.user gains displayName: 'Adda'`/,
      /\ndone in [\d.]+ s: 13 tool calls \(0 failed\), fold of mark 1: \d+ surface nodes → a \d+-char report; compaction by dsh-fold\/compaction \(\d+ messages, [\d,]+ → [\d,]+ chars, 0 model calls, \d+ ms\)\n/,
    ]
    let at = 0
    for (const re of order) {
      const m = re.exec(out.slice(at))
      assert.ok(m, `not found after offset ${at}: ${re}\n${out}`)
      at += m.index + m[0].length
    }
    // The compaction line's figures are the log's: the checkpoint it printed is as long as it says.
    const [, before, after] = /compaction by dsh-fold\/compaction \(pressure\): \d+ messages \(seq \d+\.\.\d+\), ([\d,]+) chars → a ([\d,]+)-char checkpoint/.exec(out) ?? []
    assert.ok(Number(before.replace(/,/g, '')) > 3 * Number(after.replace(/,/g, '')), `${before} → ${after}`)
    assert.deepEqual(snapshot(path.join(home, '.dsh')), homeBefore, '~/.dsh untouched')
    assert.deepEqual(readdirSync(tmpdirOfRuns).filter((f) => f !== 'node-compile-cache'), [], 'nothing left behind')

    const j = await run(['try', '--compaction', '--json'], userEnv())
    assert.equal(j.code, 0, j.stderr)
    const { compactions, completed } = JSON.parse(j.stdout)
    assert.equal(completed, true)
    assert.ok(compactions.length >= 1)
    const [c] = compactions
    assert.equal(c.backend, 'dsh-fold/compaction')
    assert.equal(c.trigger, 'pressure')
    assert.equal(c.modelCalls, 0)
    assert.ok(c.replaced >= 3 && c.charsBefore > c.charsAfter && c.ms >= 0, JSON.stringify(c))
    assert.equal(c.error, undefined)
  })

  test('a compaction by compaction-basic is printed with its model call: the profile\'s backend at a small window (a --patch), the real-model path', async () => {
    const { startModelServer } = await import('../bin/host/model-server.mjs')
    const big = (/** @type {number} */ k) => `for i in $(seq 1 250); do echo "data/part${k}/file$i.bin: checksum mismatch at block $i"; done`
    let step = 0
    const summaries = []
    const server = await startModelServer((/** @type {any} */ body) => {
      const last = body.messages?.at(-1)
      const text = typeof last?.content === 'string' ? last.content : (last?.content ?? []).map((/** @type {any} */ p) => p.text ?? '').join('')
      if (!(body.tools?.length > 0) && typeof body.max_tokens === 'number' && body.max_tokens <= 256) return { content: 'Checksums' }
      if (text.startsWith('You are now acting as a compaction engine')) {
        summaries.push(body)
        return { content: '## Goal\n- Find checksum mismatches.\n## Progress\n- Parts 1-3 scanned: every block mismatches.' }
      }
      const k = ++step
      return k <= 5 ? { content: `Part ${k}.`, toolCalls: [{ name: 'bash', arguments: { command: big(k), description: `scan part ${k}` } }] } : { content: 'Every part mismatches.' }
    })
    try {
      const patch = path.join(tmp, 'window.patch.yml')
      writeFileSync(patch, JSON.stringify([{ id: 'llm-deepseek', config: { defaultContextWindow: 16000, models: [] } }]))
      const cwd = path.join(tmp, 'scan')
      mkdirSync(cwd, { recursive: true })
      const r = await run(['try', '--cwd', cwd, '--patch', patch, 'Check every data part for checksum mismatches.'], { ...userEnv(), DEEPSEEK_API_KEY: 'sk-user-key', DEEPSEEK_BASE_URL: server.url })
      assert.equal(r.code, 0, r.stdout + r.stderr)
      assert.ok(summaries.length >= 1, 'basic asked the model for a summary')
      assert.match(r.stdout, /⤷ compaction by compaction-basic \(automatic\): \d+ messages \(seq \d+\.\.\d+\), [\d,]+ chars → a [\d,]+-char checkpoint, 1 model call, [\d.]+ (ms|s); the model reads from now on:\n {4}│ /)
      assert.match(r.stdout, /; compaction by compaction-basic \(\d+ messages, [\d,]+ → [\d,]+ chars, 1 model call, \d+ ms\)/)
    } finally {
      await server.close()
    }
  })

  test('block mode: DSH_TOOLS_MODE=both and the block row as a --patch; the block closes itself and recall reads it back', async () => {
    const patch = path.join(tmp, 'block.patch.yml')
    writeFileSync(patch, '- insert:\n    - id: block-mode\n      name: dsh-fold/block\n')
    const r = await run(['try', '--patch', patch], { ...userEnv(), DSH_TOOLS_MODE: 'both' })
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /→ block_run_code \[explore\] List the project and read the entry point\n {6}· bash \$ ls -R ← /)
    assert.match(r.stdout, /· block_summary \{"ids":\["explore"\].*← \{"replaced":0,"tokensFreed":0,"pending":true/)
    assert.match(r.stdout, /⤷ block summary closing \[explore\]: \d+ messages \(seq \d+\.\.\d+, ~\d+ tokens\) replaced; the model reads from now on:\n {4}│ <block-summary>/)
    assert.match(r.stdout, /· recall \{"block":"explore","query":"displayName","around":0\} ← \d+ lines: \d+ lines? in block explore match displayName:/)
    assert.match(r.stdout, /done in [\d.]+ s: \d+ tool calls \(0 failed\), block summary \[explore\]: \d+ messages → \d+ chars/)
  })

  test('no host installed: the pinned host, installed into dsh-fold\'s cache (here the test cache, already filled)', async () => {
    const { CACHE } = await import('./e2e/harness/install.mjs')
    const r = await run(['try', '--json'], { ...userEnv(), PATH: [path.dirname(readme.node22), process.env.PATH].join(path.delimiter), DSH_FOLD_CACHE: CACHE })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /No DSH host installed here; using the pinned @deepseek-ai\/dsh 0\.1\.0-rc\.8 and Node 22 in dsh-fold's cache/)
    const j = JSON.parse(r.stdout)
    assert.match(j.host.how, /^pinned, in .*host-/)
    assert.equal(j.completed, true)
    assert.equal(j.folds.length, 1)
  })

  test('--profile/--dsh-home: runs in that profile (dsh-fold added with `dsh plugin add`), keeps its session; a profile without dsh-fold is refused with the fix', async () => {
    const dshHome = await namedHome()
    const env = { ...userEnv(), DSH_HOME: dshHome }
    const r = await run(['try', '--dsh-home', dshHome, '--json'], env)
    assert.equal(r.code, 0, r.stderr)
    const j = JSON.parse(r.stdout)
    assert.equal(j.temporary, false)
    assert.equal(j.dshHome, dshHome)
    assert.ok(j.sessionLog.startsWith(path.join(dshHome, 'sessions')), j.sessionLog)
    assert.ok(statSync(j.sessionLog).size > 0, 'the session stays in the named home')
    assert.equal(j.folds.length, 1)
    // --compaction in a profile that compacts with dsh-fold/compaction already (`compaction
    // enable`): the profile mounts it, the run only shrinks the window, no profile file changes.
    execFileSync(process.execPath, [BIN, 'compaction', 'enable', '--profile', 'headless'], { env: { ...process.env, ...env, HOME: path.dirname(dshHome) }, stdio: ['ignore', 'ignore', 'pipe'] })
    const ownFiles = () => ['cordis.patch.yml', '.dsh-fold-compaction.json', 'package.json'].map((f) => readFileSync(path.join(dshHome, 'profiles', 'headless', f), 'utf8'))
    const profileBefore = ownFiles()
    const swapped = await run(['try', '--dsh-home', dshHome, '--compaction'], env)
    assert.equal(swapped.code, 0, swapped.stdout + swapped.stderr)
    assert.match(swapped.stdout, /\ncompaction: dsh-fold\/compaction \(the profile mounts it\), the model's context window set to 20,000 tokens/)
    assert.match(swapped.stdout, /⤷ compaction by dsh-fold\/compaction \(pressure\)/)
    assert.deepEqual(ownFiles(), profileBefore, 'the profile\'s patch, record and manifest are not written by try')
    // The profile's own copy (installed, not a checkout) runs try in a temporary home: it packs
    // its installed folder and the platform package it loaded.
    const copy = await run(['try', '--json'], { ...userEnv(), DSH_HOME: undefined }, path.join(dshHome, 'profiles', 'headless', 'node_modules', '.bin', 'dsh-fold'))
    assert.equal(copy.code, 0, copy.stderr)
    const cj = JSON.parse(copy.stdout)
    assert.equal(cj.temporary, true)
    assert.equal(cj.folds.length, 1)
    assert.match(copy.stderr, /dsh-fold 0\.1\.0 installed from this installed copy \(.*profiles\/headless\/node_modules\/dsh-fold\/?\), packed/)
    const other = await run(['try', '--profile', 'mine'], userEnv())
    assert.equal(other.code, 1)
    assert.match(other.stderr, /profile mine in .*\.dsh has no dsh-fold bundle; add it \(dsh plugin --profile mine add dsh-fold\)/)
    assert.deepEqual(snapshot(path.join(home, '.dsh')), homeBefore, '~/.dsh untouched')
  })

  test('with DEEPSEEK_API_KEY: the user\'s key and endpoint reach the host, the task runs in --cwd', async () => {
    const { startModelServer, sequence } = await import('../bin/host/model-server.mjs')
    const server = await startModelServer(sequence([
      { content: 'Listing.', toolCalls: [{ name: 'bash', arguments: { command: 'ls', description: 'List files' } }] },
      { content: 'There is one file, notes.txt.' },
    ]))
    try {
      const cwd = path.join(tmp, 'project')
      mkdirSync(cwd, { recursive: true })
      writeFileSync(path.join(cwd, 'notes.txt'), 'hello\n')
      const r = await run(['try', '--cwd', cwd, 'What files are here?'], { ...userEnv(), DEEPSEEK_API_KEY: 'sk-user-key', DEEPSEEK_BASE_URL: server.url })
      assert.equal(r.code, 0, r.stdout + r.stderr)
      assert.match(r.stdout, /^dsh-fold try: DEEPSEEK_API_KEY is set, so DeepSeek's model works on your task \(at http:\/\/127\.0\.0\.1:\d+\)\./)
      assert.match(r.stdout, /← bash: notes\.txt/)
      assert.match(r.stdout, /answer: There is one file, notes\.txt\./)
      const agent = server.requests.filter((b) => b.tools?.length)
      assert.ok(agent.length >= 2)
      assert.equal(server.headers[server.requests.indexOf(agent[0])].authorization, 'Bearer sk-user-key')
      assert.ok(JSON.stringify(agent[0].messages).includes('What files are here?'))
    } finally {
      await server.close()
    }
  })

  test('Ctrl-C mid-run: exit 130, the host\'s process group gone, the temporary home removed', async () => {
    const full = { ...process.env, ...userEnv() }
    for (const [k, v] of Object.entries(userEnv())) if (v === undefined) delete full[k]
    const child = spawn(process.execPath, [BIN, 'try'], { env: full, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d) => (out += d))
    /** @type {Promise<number | null>} */
    const closed = new Promise((resolve) => child.on('close', (c) => resolve(c)))
    // Interrupt while this run's host is running. (Waiting for the transcript's first tool call
    // raced the run on a fast machine: the transcript follows the session log every 400 ms, so a
    // scripted run could finish before its first line was printed, and the SIGINT came too late.)
    let interrupted = false
    while (!interrupted && child.exitCode === null) {
      if (hostsOfThisRun().length > 0) {
        child.kill('SIGINT')
        interrupted = true
      } else await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const code = await closed
    assert.ok(interrupted, `the host of this run was never seen running:\n${out}`)
    assert.equal(code, 130, out)
    assert.doesNotMatch(out, /^done in /m, 'the run was cut short')
    assert.deepEqual(hostsOfThisRun(), [], 'no host process of this run is left')
    assert.deepEqual(readdirSync(tmpdirOfRuns).filter((f) => f !== 'node-compile-cache'), [], 'the temporary home is removed')
  })

  test('Ctrl-C with --dsh-home: the host shuts down before try exits, and the user\'s session log keeps what the host held in memory (no lost tail, no torn record)', async () => {
    const dshHome = await namedHome()
    const { startModelServer, isTitleRequest } = await import('../bin/host/model-server.mjs')
    const { readSessionLog } = await import('../bin/session-log.mjs')
    const { sessionLogs } = await import('../bin/host/launch.mjs')
    const { decodeStorageRecord, SESSION_FORMAT_VERSION } = await import('@deepseek-ai/dsh-session')
    // The model streams the start of its answer and stalls: the host is mid-turn when Ctrl-C comes.
    const server = await startModelServer((body) => (isTitleRequest(body) ? { content: 'A title' } : { content: 'Looking at the files', hang: true }))
    const dir = path.join(tmp, 'interrupted')
    mkdirSync(dir, { recursive: true })
    // DSH's persistence writes streamed chunks in batches, at most writeBatchMaxDelayMs apart (and
    // at the next request or tool call): with the delay at 10 minutes, what the model streamed is
    // in the host's memory only until its shutdown drains the batch. A test plugin says when the
    // host has it.
    const seen = path.join(dir, 'chunk-seen')
    writeFileSync(path.join(dir, 'observer.mjs'), `import { writeFileSync } from 'node:fs'
export const name = 'try-test-chunk-observer'
export function apply (ctx, config) {
  ctx.on('session/event', (session, event) => { if (event.type === 'assistant/chunk') writeFileSync(config.file, String(event.seq)) })
}
`)
    const patch = path.join(dir, 'interrupt.patch.yml')
    writeFileSync(patch, JSON.stringify([
      { id: 'session-persistence-jsonl', config: { root: path.join(dshHome, 'sessions'), writeBatchMaxDelayMs: 600_000 } },
      { insert: [{ id: 'chunk-observer', name: path.join(dir, 'observer.mjs'), config: { file: seen } }] },
    ]))
    try {
      const before = new Set(sessionLogs(dshHome))
      const env = { ...process.env, ...userEnv(), DEEPSEEK_API_KEY: 'sk-user-key', DEEPSEEK_BASE_URL: server.url }
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k]
      const child = spawn(process.execPath, [BIN, 'try', '--dsh-home', dshHome, '--cwd', dir, '--patch', patch, 'Look around.'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (out += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (out += d))
      /** @type {Promise<number | null>} */
      const closed = new Promise((resolve) => child.on('close', (c) => resolve(c)))
      while (child.exitCode === null && !existsSync(seen)) await new Promise((resolve) => setTimeout(resolve, 20))
      assert.ok(existsSync(seen), `the host never streamed the model's answer:\n${out}`)
      const chunkSeq = Number(readFileSync(seen, 'utf8'))
      child.kill('SIGINT')
      const code = await closed
      assert.equal(code, 130, out)
      assert.deepEqual(hostsOfThisRun(), [], 'no host process of this run is left')
      const logs = sessionLogs(dshHome).filter((f) => !before.has(f))
      assert.equal(logs.length, 1, out)
      const log = readSessionLog(logs[0], { decodeStorageRecord, formatVersion: SESSION_FORMAT_VERSION })
      assert.equal(log.warning, null, 'the log has no torn tail')
      const types = log.events.map((e) => e.type)
      assert.ok(log.events.some((e) => e.seq === chunkSeq && e.type === 'assistant/chunk'), `the streamed answer the host held (seq ${chunkSeq}) is not in the log: it ends ${types.slice(-6).join(', ')}\n${out}`)
      assert.ok(log.events.some((e) => e.type === 'user/message' && JSON.stringify(e.data).includes('Look around.')), 'the task is in the log')
      assert.deepEqual(readdirSync(tmpdirOfRuns).filter((f) => f !== 'node-compile-cache'), [], 'the run\'s temporary folder is removed')
      assert.match(out, /\ndsh-fold try: interrupted; the host is shutting down \(it writes out its session log\), at most 10 s; Ctrl-C again kills it now\n/)
      assert.match(out, /\ndsh-fold try: interrupted; the host has shut down; its session log: .*session\.jsonl/)
    } finally {
      await server.close()
    }
  })

  test('usage: --cwd without a key, no TASK with a key', async () => {
    const a = await run(['try', '--cwd', tmp], userEnv())
    assert.equal(a.code, 64)
    assert.match(a.stderr, /--cwd applies to a run with a real model/)
    const b = await run(['try'], { ...userEnv(), DEEPSEEK_API_KEY: 'sk-x' })
    assert.equal(b.code, 64)
    assert.match(b.stderr, /try needs a TASK when DEEPSEEK_API_KEY is set/)
    assert.deepEqual(readdirSync(tmpdirOfRuns).filter((f) => f !== 'node-compile-cache'), [], 'a refused run leaves nothing')
  })
})
