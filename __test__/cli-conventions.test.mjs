/**
 * The `dsh-fold` command's conventions (issue 22, items 10 and 11), on the real command run as
 * a process: help per subcommand, `--version`, usage errors (exit 64) for stray positionals,
 * options a subcommand does not take and exclusive options, `--currency` only with prices,
 * every written file confirmed, rounded money in `--json`, one `dsh-fold:` prefix, `fold` on a
 * log with no store (the demo's own saved log), and — installed from its packed tarballs into a
 * project with no DSH packages, as `npx dsh-fold` gets it — one line and no stack for every
 * subcommand that needs DSH.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const FIXTURES = path.join(ROOT, '__test__', 'fixtures', 'cli')
const VERSION = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version
const SUBCOMMANDS = ['demo', 'marks', 'fold', 'economics', 'preset', 'try', 'doctor', 'compaction']

/**
 * Runs a command; resolves {code, stdout, stderr}.
 * @param {string} bin @param {string[]} args @param {{cwd?: string, env?: Record<string, string>}} [options]
 */
function run(bin, args, { cwd = ROOT, env = {} } = {}) {
  return /** @type {Promise<{code: number | null, stdout: string, stderr: string}>} */ (
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [bin, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
      child.on('error', reject)
      child.on('close', (code) => {
        clearTimeout(timer)
        resolve({ code, stdout, stderr })
      })
    })
  )
}

/** @param {import('node:test').TestContext} t */
function tempDir(t) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-conv-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const cli = (/** @type {string[]} */ args, /** @type {{cwd?: string, env?: Record<string, string>}} */ options = {}) => run(BIN, args, options)

describe('dsh-fold conventions', () => {
  test('--help after a subcommand prints that subcommand\'s usage only, exit 0', async () => {
    for (const verb of SUBCOMMANDS) {
      for (const flag of ['--help', '-h']) {
        const r = await cli([verb, flag])
        assert.equal(r.code, 0, `${verb} ${flag}: ${r.stderr}`)
        assert.equal(r.stderr, '')
        assert.match(r.stdout, new RegExp(`^Usage: dsh-fold ${verb}\\b`), `${verb} ${flag}`)
        for (const other of SUBCOMMANDS.filter((v) => v !== verb)) {
          assert.ok(!new RegExp(`dsh-fold ${other}\\b`).test(r.stdout), `${verb} --help mentions dsh-fold ${other}:\n${r.stdout}`)
        }
      }
    }
    // `help VERB` is the same text; `--help` alone lists every subcommand.
    assert.equal((await cli(['help', 'fold'])).stdout, (await cli(['fold', '--help'])).stdout)
    const all = await cli(['--help'])
    for (const verb of SUBCOMMANDS) assert.match(all.stdout, new RegExp(`dsh-fold ${verb}\\b`))
  })

  test('each usage line brackets what is optional: every synopsis is docs/cli.md\'s, `try`\'s TASK included', async () => {
    // docs/cli.md gives each subcommand's synopsis in a code block; the command's own usage
    // (its --help and the overview) must say the same, brackets and all.
    const page = readFileSync(path.join(ROOT, 'docs', 'cli.md'), 'utf8')
    const all = (await cli(['--help'])).stdout
    for (const verb of SUBCOMMANDS) {
      const first = (await cli([verb, '--help'])).stdout.split('\n')[0].replace(/^Usage: /, '')
      assert.ok(page.includes(`\n${first}\n`), `${verb}: the usage line is not docs/cli.md's synopsis:\n${first}`)
      assert.ok(all.includes(`  ${first}\n`), `${verb}: the overview shows another usage line than --help:\n${first}`)
    }
    assert.match((await cli(['try', '--help'])).stdout, /^Usage: dsh-fold try .* \["TASK"\]\n/, 'TASK is optional: without DEEPSEEK_API_KEY the scripted task runs')
  })

  test('--version prints the package version, exit 0', async () => {
    for (const args of [['--version'], ['-V']]) {
      const r = await cli(args)
      assert.equal(r.code, 0)
      assert.equal(r.stdout, `dsh-fold ${VERSION}\n`)
      assert.equal(r.stderr, '')
    }
  })

  test('no subcommand: the usage on stderr with one prefix-free line first, exit 64 (never "dsh-fold: dsh-fold —")', async () => {
    const r = await cli([])
    assert.equal(r.code, 64)
    assert.equal(r.stdout, '')
    assert.ok(!r.stderr.includes('dsh-fold: dsh-fold'), r.stderr)
    assert.match(r.stderr, /^dsh-fold: a subcommand is needed/)
    assert.match(r.stderr, /Usage:/)
    for (const args of [['frobnicate'], ['marks', '--bogus'], ['fold']]) {
      const e = await cli(args)
      assert.equal(e.code, 64)
      assert.ok(!e.stderr.includes('dsh-fold: dsh-fold'), e.stderr)
      assert.equal(e.stderr.match(/dsh-fold: /g)?.length, 1, `one prefix: ${e.stderr}`)
    }
  })

  test('an unexpected positional is a usage error (64) for every subcommand', async (t) => {
    const dir = tempDir(t)
    const log = path.join(FIXTURES, 'session.jsonl')
    const cases = [
      [['demo', 'extra'], /demo takes no arguments \(got extra\)/],
      [['marks', 'extra'], /marks takes no arguments \(got extra\)/],
      [['fold', log, 'extra'], /fold takes one FILE \(got also extra\)/],
      [['economics', log, 'extra'], /economics takes one FILE \(got also extra\)/],
      [['preset', 'status', 'extra'], /preset status takes no arguments \(got extra\)/],
      [['doctor', 'extra'], /doctor takes no arguments \(got extra\)/],
      [['try', 'one', 'two'], /try takes one TASK \(got also two\); quote the task/],
    ]
    for (const [args, message] of cases) {
      const r = await cli(/** @type {string[]} */ (args), { env: { DSH_HOME: dir } })
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, /** @type {RegExp} */ (message))
      assert.equal(r.stdout, '')
    }
  })

  test('an option the subcommand does not take, or two exclusive options, is a usage error (64)', async (t) => {
    const dir = tempDir(t)
    const log = path.join(FIXTURES, 'session.jsonl')
    const store = path.join(FIXTURES, 'checkpoint.json')
    const cases = [
      [['fold', log, '--anchor', '3', '--store', store], /--anchor and --store exclude each other/],
      [['marks', '--anchor', '3'], /marks does not take --anchor/],
      [['demo', '--store', store], /demo does not take --store/],
      [['fold', log, '--html', path.join(dir, 'x.html')], /fold does not take --html/],
      [['economics', log, '--lang', 'zh'], /economics does not take --lang/],
      [['doctor', '--save', 'x'], /doctor does not take --save/],
    ]
    for (const [args, message] of cases) {
      const r = await cli(/** @type {string[]} */ (args), { env: { DSH_HOME: dir } })
      assert.equal(r.code, 64, `${args.join(' ')}: exit ${r.code} ${r.stderr}`)
      assert.match(r.stderr, /** @type {RegExp} */ (message))
      assert.ok(!existsSync(path.join(dir, 'x.html')))
    }
  })

  test('--currency without a price is a usage error: it never relabels the USD list', async () => {
    const log = path.join(ROOT, '__test__', 'fixtures', 'economics', 'e2e-recall.session.jsonl.zstd')
    const r = await cli(['economics', log, '--currency', 'CNY'])
    assert.equal(r.code, 64, r.stderr)
    assert.match(r.stderr, /--currency names the currency of --hit-price, --miss-price and --output-price/)
    assert.equal(r.stdout, '')
    const ok = await cli(['economics', log, '--currency', 'CNY', '--hit-price', '0.5', '--miss-price', '2', '--output-price', '8', '--json'])
    assert.equal(ok.code, 0, ok.stderr)
    assert.equal(JSON.parse(ok.stdout).prices.currency, 'CNY')
  })

  test('money in --json is rounded to a millionth', async () => {
    const log = path.join(ROOT, '__test__', 'fixtures', 'economics', 'e2e-recall.session.jsonl.zstd')
    const r = await cli(['economics', log, '--json'])
    assert.equal(r.code, 0, r.stderr)
    /** Every number under a money key has at most 6 decimals. @param {any} v @param {string} key */
    const walk = (v, key) => {
      if (typeof v === 'number' && /cost|saved|price|^hit$|^miss$|^output$/i.test(key) && !Number.isInteger(v)) {
        assert.ok(Math.abs(v * 1e6 - Math.round(v * 1e6)) < 1e-6, `${key} = ${v} is not rounded`)
      }
      if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, Array.isArray(v) ? key : k)
    }
    const out = JSON.parse(r.stdout)
    walk(out, '')
    assert.ok(JSON.stringify(out).length < r.stdout.length + 1)
    assert.ok(!/\d\.\d{7,}/.test(r.stdout), 'no number with more than 6 decimals')
  })

  test('every file written is confirmed, on stderr under --json', async (t) => {
    const dir = tempDir(t)
    const log = path.join(ROOT, '__test__', 'fixtures', 'economics', 'e2e-recall.session.jsonl.zstd')
    const html = path.join(dir, 'e.html')
    const svg = path.join(dir, 'e.svg')
    const text = await cli(['economics', log, '--html', html, '--svg', svg])
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, new RegExp(`wrote ${html.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
    assert.match(text.stdout, new RegExp(`wrote ${svg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
    rmSync(html)
    rmSync(svg)
    const json = await cli(['economics', log, '--json', '--svg', svg])
    assert.equal(json.code, 0, json.stderr)
    JSON.parse(json.stdout)
    assert.match(json.stderr, /wrote .*e\.svg/)
    assert.ok(existsSync(svg))
    const saved = path.join(dir, 'demo.jsonl')
    const demo = await cli(['demo', '--json', '--save', saved])
    assert.equal(demo.code, 0, demo.stderr)
    assert.equal(JSON.parse(demo.stdout).saved, saved)
    assert.match(demo.stderr, /wrote .*demo\.jsonl/)
  })

  test('fold with no store reads the mark from the log\'s latest checkpoint call, and says so (the demo\'s own saved log)', async (t) => {
    const dir = tempDir(t)
    const saved = path.join(dir, 'demo.jsonl')
    assert.equal((await cli(['demo', '--save', saved])).code, 0)
    const env = { DSH_HOME: path.join(dir, 'empty-home') }
    const r = await cli(['fold', saved], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /no checkpoint store at .*; using the log's latest checkpoint call: mark 1 \(log length 4\)/)
    assert.match(r.stdout, /mark 1 was folded at seq \d+ in this log: dry-running the fold on the log before it/)
    assert.match(r.stdout, /would fold 7 nodes \(seq 5\.\.11, 5119 chars\)/)
    const json = JSON.parse((await cli(['fold', saved, '--json'], { env })).stdout)
    assert.equal(json.markId, 1)
    assert.equal(json.anchor, 4)
    assert.equal(json.markFrom, 'log')
    assert.equal(json.foldedNodes, 7)
    // The CLI fixture's log (its checkpoint call answered, the rewind call open): the same mark the store holds.
    const expected = JSON.parse(readFileSync(path.join(FIXTURES, 'expected.json'), 'utf8'))
    const fromLog = JSON.parse((await cli(['fold', path.join(FIXTURES, 'session.jsonl.zstd'), '--json'], { env })).stdout)
    const fromStore = JSON.parse((await cli(['fold', path.join(FIXTURES, 'session.jsonl.zstd'), '--store', path.join(FIXTURES, 'checkpoint.json'), '--json'], { env })).stdout)
    assert.equal(fromLog.markId, expected.mark.id)
    assert.equal(fromLog.anchor, expected.mark.logLength)
    assert.equal(fromStore.markFrom, 'store')
    assert.match(fromLog.notes[0], /using the log's latest checkpoint call/)
    assert.deepEqual({ ...fromLog, markFrom: 'x', notes: undefined }, { ...fromStore, markFrom: 'x', notes: undefined })
    // A log with no checkpoint call at all: NO_CHECKPOINT, naming both places looked at.
    const plain = readFileSync(path.join(FIXTURES, 'session.jsonl'), 'utf8').split('\n').filter((l) => !l.includes('checkpoint')).join('\n')
    writeFileSync(path.join(dir, 'none.jsonl'), plain)
    const none = await cli(['fold', path.join(dir, 'none.jsonl')], { env })
    assert.equal(none.code, 1)
    assert.match(none.stderr, /NO_CHECKPOINT: no checkpoint store at .* and no checkpoint call in the log; pass --store PATH or --anchor N/)
  })
})

describe('dsh-fold installed without DSH (as npx gets it)', () => {
  /** @type {string} */
  let project
  /** @type {string} */
  let bin
  before(async () => {
    const { pack } = await import('../scripts/pack.mjs')
    project = mkdtempSync(path.join(tmpdir(), 'dsh-fold-npx-'))
    const tarballs = pack(path.join(project, 'pack'))
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'npx-like', private: true }))
    // What npx installs: the package and its dependencies; the DSH peers are optional and left out.
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--prefer-offline', '--loglevel=error', tarballs.platform, tarballs.root], { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] })
    assert.ok(!existsSync(path.join(project, 'node_modules', '@deepseek-ai')), 'no DSH package in the project')
    bin = path.join(project, 'node_modules', 'dsh-fold', 'bin', 'dsh-fold.mjs')
  }, { timeout: 300_000 })
  after(() => rmSync(project, { recursive: true, force: true }))

  test('every subcommand that needs DSH says so in one line (exit 69), never a module stack', async () => {
    const home = path.join(project, 'home')
    mkdirSync(home, { recursive: true })
    const log = path.join(FIXTURES, 'session.jsonl')
    for (const args of [['demo'], ['fold', log, '--anchor', '0'], ['economics', log], ['marks', '--store', path.join(FIXTURES, 'checkpoint.json')]]) {
      const r = await run(bin, args, { cwd: project, env: { DSH_HOME: home } })
      assert.ok(!/ERR_MODULE_NOT_FOUND|at .*\.mjs:\d+|node:internal/.test(r.stderr), `${args[0]}: a stack:\n${r.stderr}`)
      if (args[0] === 'marks') {
        assert.equal(r.code, 0, `marks needs only the addon: ${r.stderr}`)
        continue
      }
      assert.equal(r.code, 69, `${args[0]}: exit ${r.code}: ${r.stderr}`)
      assert.equal(r.stderr.trim().split('\n').length, 1, `${args[0]}: one line:\n${r.stderr}`)
      assert.match(r.stderr, new RegExp(`^dsh-fold: ${args[0]} needs the DeepSeek Harness packages \\(@deepseek-ai/dsh-session\\b`))
    }
    for (const args of [['--help'], ['--version'], ['fold', '--help'], ['preset', 'status']]) {
      const r = await run(bin, args, { cwd: project, env: { DSH_HOME: home } })
      assert.ok(!/ERR_MODULE_NOT_FOUND|node:internal/.test(r.stderr), `${args.join(' ')}:\n${r.stderr}`)
      assert.ok(r.code === 0 || r.code === 66, `${args.join(' ')}: exit ${r.code}: ${r.stderr}`)
    }
  })
})
