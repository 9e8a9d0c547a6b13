/**
 * Docs as tests: the shell blocks of README.md and of every docs/*.md page run, in order, as a
 * user would paste them, in one sandbox: a temporary HOME (with the checkout at `~/dsh-fold`),
 * no DSH_HOME (so `~/.dsh`), a private TMPDIR, a PATH of this Node and the system's, no DSH_*,
 * DEEPSEEK_* or npm_* variables from the caller (the machine's TLS trust and proxy variables are
 * kept: they are the machine's). Downloads go through caches shared between runs
 * (`npm_config_cache`, pnpm's `store-dir` and `DSH_FOLD_CACHE` in the test cache, the tools
 * cache `DSH_FOLD_TARGETS_CACHE` when set; the rehearsal registry in the sandbox's own
 * `DSH_FOLD_REHEARSAL_DIR`), so
 * the blocks install for real and fast: `npm install … node@22 pnpm@10`, the host with pnpm,
 * dsh-fold into profiles.
 *
 * What a block may say about itself, in an HTML comment right before its fence:
 * - `<!-- test: skip REASON -->` — not run here; listed by this test with its reason;
 * - `<!-- test: model -->` — it talks to a model: this block (and only it) runs with
 *   DEEPSEEK_BASE_URL/DEEPSEEK_API_KEY pointing at a scripted OpenAI-compatible model on
 *   127.0.0.1 (a user has their key in the environment instead);
 * - `<!-- test: server REGEX -->` — a server: started, passes when its output matches REGEX, then
 *   stopped (its whole process group);
 * - on a `text` block, `<!-- test: output -->` — the previous shell block's output must contain
 *   it: lines in order, `…` alone skips lines, `…` inside a line matches anything there, the
 *   sandbox's HOME reads as `~`;
 * - on a `text` block, `<!-- test: output-of NAME [ARGS] -->` — it must equal what generator NAME
 *   produces now (DSH_FOLD_UPDATE_DOCS=1 rewrites the block in the page and its Chinese twin).
 * The pages say how dsh-fold installs today (the checkout's `npm run pack` tarballs, as step 4 of
 * the README); a by-name `add dsh-fold` is marked skip until dsh-fold is published, so every
 * command that runs here runs as written. Each block runs with
 * `bash -e -o pipefail`; its exported variables and working folder carry over to the next block
 * of the page, and the README's final state is where each docs page starts.
 *
 * Also checked: the README stays within 300 lines (en and zh), every relative link of every page
 * points at a file (and heading) that exists, docs/economics-demo.svg is what
 * `dsh-fold economics --svg` writes for the demo's log now, and every figure a page quotes from a
 * generated table is still its source's: a table marked `<!-- test: rows-from FILE -->` is made
 * of FILE's rows, and from `<!-- test: figures-from SOURCE… [in column N] -->` to the next
 * heading every figure is one of the sources' (__test__/helpers/figures.mjs).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { killGroup, stopGroup } from '../bin/host/launch.mjs'
import { anchorsOf, blocksOf, matchesExcerpt } from './helpers/markdown.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the docs install a real DSH host' : false
/** The pages in reading order; a page not named here (a new one) runs after them, so none is left out. */
const ORDER = ['index', 'host', 'fold', 'recall', 'block-mode', 'compaction', 'economics', 'cli', 'store', 'performance', 'reliability', 'differences', 'building', 'releasing']
const PAGES = [
  'README.md',
  ...ORDER.map((p) => `docs/${p}.md`),
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md') && !f.endsWith('.zh.md') && !ORDER.includes(f.slice(0, -3)))
    .sort()
    .map((f) => `docs/${f}`),
]

/** A free TCP port on 127.0.0.1 is `port`? @param {number} port */
function portFree(port) {
  return new Promise((resolve) => {
    const s = createServer()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

/** The docs test's scripted model: a fold in native mode, a closed block in block mode, else a greeting. */
function docsModel() {
  let n = 0
  return (/** @type {any} */ body) => {
    const tools = (body.tools ?? []).map((/** @type {any} */ t) => t.function?.name)
    const last = body.messages?.at(-1)
    const lastText = typeof last?.content === 'string' ? last.content : (last?.content ?? []).map((/** @type {any} */ p) => p.text ?? '').join('')
    if (!(tools.length > 0) && typeof body.max_tokens === 'number' && body.max_tokens <= 256) return { content: 'Docs test' }
    if (/^Write a report that will replace the exploration above/.test(lastText)) return { content: '## Findings\n- Listed the folder.' }
    const step = n++
    if (tools.length === 1 && tools[0] === 'block_run_code') {
      if (step === 0) return { toolCalls: [{ name: 'block_run_code', arguments: { ids: ['files'], description: 'List the files and close the block', code: "const ls = await tools.bash({ command: 'ls', description: 'List files' })\nawait tools.block_summary({ ids: ['files'], summary: 'Listed the folder.' })\nreturn ls" } }] }
      return { content: 'Done: the block is closed.' }
    }
    if (['checkpoint', 'rewind'].every((t) => tools.includes(t))) {
      const steps = [
        { toolCalls: [{ name: 'checkpoint', arguments: { objective: 'look at the files' } }] },
        { toolCalls: [{ name: 'bash', arguments: { command: 'ls', description: 'List files' } }] },
        { toolCalls: [{ name: 'rewind', arguments: {} }] },
      ]
      return steps[step] ?? { content: 'Done: I looked at the files and folded the exploration.' }
    }
    return { content: 'Hello from the docs test model.' }
  }
}

describe('the README and docs pages, run as written', { skip: SKIP }, () => {
  /** @type {string} */
  let tmp
  /** @type {string} */
  let home
  /** @type {Record<string, string>} */
  let baseEnv
  /** The state file carrying exported variables between blocks, and the working folder. */
  let state = ''
  let cwd = ''
  /** @type {string[]} */
  const listed = []

  before(async () => {
    const { CACHE, ensureHost } = await import('./e2e/harness/install.mjs')
    ensureHost() // the pinned host `try` falls back to, from the test cache
    tmp = mkdtempSync(path.join(tmpdir(), 'dsh-fold-docs-'))
    home = path.join(tmp, 'home')
    mkdirSync(path.join(tmp, 'tmp'), { recursive: true })
    mkdirSync(home, { recursive: true })
    symlinkSync(ROOT, path.join(home, 'dsh-fold'))
    // pnpm's global config: its package store in the test cache, so the host installs from it.
    mkdirSync(path.join(home, '.config', 'pnpm'), { recursive: true })
    writeFileSync(path.join(home, '.config', 'pnpm', 'rc'), `store-dir=${path.join(CACHE, 'pnpm-store')}\n`)
    baseEnv = {
      HOME: home,
      USER: process.env.USER ?? 'user',
      LANG: 'C.UTF-8',
      TMPDIR: path.join(tmp, 'tmp'),
      PATH: [path.dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin'].join(path.delimiter),
      npm_config_cache: path.join(CACHE, 'npm-cache'),
      npm_config_update_notifier: 'false',
      // The machine's TLS trust and proxies are the machine's, not the user's: kept.
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY)$/.test(k))),
      DSH_FOLD_CACHE: CACHE,
      // releasing.md's rehearsals write their registry here, not into the checkout's target/,
      // where npm test's own rehearsal left its transcript.
      DSH_FOLD_REHEARSAL_DIR: path.join(tmp, 'rehearsal'),
      ...(process.env.CARGO_HOME ? { CARGO_HOME: process.env.CARGO_HOME } : {}),
      ...(process.env.DSH_FOLD_TARGETS_CACHE ? { DSH_FOLD_TARGETS_CACHE: process.env.DSH_FOLD_TARGETS_CACHE } : {}),
      ...(process.env.RUSTUP_HOME ? { RUSTUP_HOME: process.env.RUSTUP_HOME } : {}),
    }
    state = path.join(tmp, 'state.sh')
    writeFileSync(state, '')
    cwd = home
  }, { timeout: 900_000 })
  after(() => {
    if (listed.length) console.log(`docs test, not run as written:\n${listed.map((l) => `  ${l}`).join('\n')}`)
    rmSync(tmp, { recursive: true, force: true })
  })

  /**
   * Runs one shell block in the sandbox; resolves {code, stdout, stderr}.
   * @param {Block} block @param {string} script @param {Record<string, string>} env @param {{server?: RegExp}} [options]
   */
  function runBlock(block, script, env, { server } = {}) {
    const wrapped = [
      'set -e -o pipefail',
      `source ${JSON.stringify(state)}`,
      `cd ${JSON.stringify(cwd)}`,
      script,
      `export -p | grep -v -E '^declare -x (DEEPSEEK_|OLDPWD|PWD|SHLVL|_=)' > ${JSON.stringify(state)}.new`,
      `pwd > ${JSON.stringify(state)}.cwd`,
    ].join('\n')
    return /** @type {Promise<{code: number | null, stdout: string, stderr: string}>} */ (
      new Promise((resolve) => {
        const child = spawn('bash', ['-c', wrapped], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
        let stdout = ''
        let stderr = ''
        let done = false
        let stopping = false
        /** @type {Promise<void>} */
        const closed = new Promise((resolveClosed) => child.on('close', () => resolveClosed()))
        // A block's processes (a server, a host) are stopped the one graceful way (bin/host/launch.mjs).
        const stop = () => child.pid && stopGroup(child.pid, closed)
        const finish = (/** @type {number | null} */ code) => {
          if (done) return
          done = true
          clearTimeout(timer)
          resolve({ code, stdout, stderr })
        }
        child.stdout.setEncoding('utf8').on('data', (d) => {
          stdout += d
          // A server that is up is stopped; the block ends (passes) once its processes are gone.
          if (server?.test(stdout) && !stopping) {
            stopping = true
            stop()
          }
        })
        child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
        const timer = setTimeout(() => {
          stop()
          finish(null)
        }, 600_000)
        child.on('close', (code) => {
          if (child.pid) killGroup(child.pid, 'SIGKILL') // what the block left in its group
          finish(server ? (server.test(stdout) ? 0 : code ?? 1) : code)
        })
      })
    )
  }

  for (const page of PAGES) {
    test(`${page}: every shell block runs as written`, { timeout: 1_800_000 }, async (t) => {
      const text = readFileSync(path.join(ROOT, page), 'utf8')
      const blocks = blocksOf(page, text)
      if (page !== 'README.md') cwd = home
      /** @type {{block: Block, stdout: string} | null} */
      let previous = null
      for (const block of blocks) {
        const where = `${page}:${block.line}`
        if (block.lang === 'text' && block.marker === 'output') {
          assert.ok(previous, `${where}: an output block with no shell block before it`)
          const actual = previous.stdout.split(home).join('~').replace(/\x1b\[[0-9;]*m/g, '')
          assert.ok(matchesExcerpt(actual, block.body), `${where}: the output of ${previous.block.file}:${previous.block.line} does not match the page.\n--- page ---\n${block.body}\n--- actual ---\n${actual}`)
          continue
        }
        if (!['bash', 'sh'].includes(block.lang)) continue
        if (block.marker.startsWith('skip')) {
          listed.push(`${where} skipped: ${block.marker.replace(/^skip\s*/, '')}`)
          continue
        }
        const env = { ...baseEnv }
        /** @type {Awaited<ReturnType<typeof import('../bin/host/model-server.mjs').startModelServer>> | null} */
        let model = null
        if (block.marker === 'model') {
          const { startModelServer } = await import('../bin/host/model-server.mjs')
          model = await startModelServer(docsModel())
          Object.assign(env, { DEEPSEEK_BASE_URL: model.url, DEEPSEEK_API_KEY: 'sk-docs-test' })
        }
        let script = block.body
        let server
        if (block.marker.startsWith('server ')) {
          server = new RegExp(block.marker.slice('server '.length))
          const port = /--port (\d+)/.exec(script)?.[1]
          if (port && !(await portFree(Number(port)))) {
            listed.push(`${where}: port ${port} was busy on this machine; ran with --port 0`)
            script = script.replace(`--port ${port}`, '--port 0')
          }
        }
        const t0 = performance.now()
        const r = await runBlock(block, script, env, { server })
        await model?.close()
        t.diagnostic(`${where} (${((performance.now() - t0) / 1000).toFixed(1)} s): ${block.body.split('\n')[0]}`)
        if (process.env.DSH_FOLD_DOCS_ECHO) t.diagnostic(`--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`)
        assert.equal(r.code, 0, `${where} failed (exit ${r.code}):\n${block.body}\n--- stdout ---\n${r.stdout.slice(-4000)}\n--- stderr ---\n${r.stderr.slice(-4000)}`)
        if (model) assert.deepEqual(model.violations, [], `${where}: the model was sent an invalid history`)
        if (!server) {
          writeFileSync(state, readFileSync(`${state}.new`))
          cwd = readFileSync(`${state}.cwd`, 'utf8').trim()
        }
        previous = { block, stdout: r.stdout }
      }
    })
  }
})

describe('generated and structural checks of the docs', () => {
  test('the README front page stays within 300 lines, en and zh', () => {
    for (const f of ['README.md', 'README.zh.md']) {
      const n = readFileSync(path.join(ROOT, f), 'utf8').split('\n').length
      assert.ok(n <= 300, `${f} has ${n} lines`)
    }
  })

  test('every relative link of every page points at a file, and at a heading there', () => {
    const files = ['README.md', 'README.zh.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]
    for (const f of files) {
      const text = readFileSync(path.join(ROOT, f), 'utf8').replace(/```[\s\S]*?```/g, '')
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]
        if (/^[a-z]+:/.test(target)) continue
        const [file, anchor] = target.split('#')
        const resolved = file ? path.join(ROOT, path.dirname(f), file) : path.join(ROOT, f)
        assert.ok(existsSync(resolved), `${f}: link ${target} points at nothing`)
        if (anchor && resolved.endsWith('.md')) assert.ok(anchorsOf(readFileSync(resolved, 'utf8')).has(anchor), `${f}: link ${target}: no heading #${anchor} in ${path.relative(ROOT, resolved)}`)
      }
    }
  })

  test('the generated blocks (output-of) are what their generators produce now', async () => {
    const { generate } = await import('./helpers/docs-generators.mjs')
    const update = process.env.DSH_FOLD_UPDATE_DOCS === '1'
    for (const f of readdirSync(path.join(ROOT, 'docs')).filter((x) => x.endsWith('.md')).map((x) => `docs/${x}`).concat(['README.md', 'README.zh.md'])) {
      const generated = blocksOf(f, readFileSync(path.join(ROOT, f), 'utf8')).filter((b) => b.marker.startsWith('output-of '))
      for (let i = 0; i < generated.length; i++) {
        // Parsed again each time: a rewritten block moves the lines after it.
        const text = readFileSync(path.join(ROOT, f), 'utf8')
        const block = blocksOf(f, text).filter((b) => b.marker.startsWith('output-of '))[i]
        const [, name, args] = /^output-of (\S+)\s*(.*)$/.exec(block.marker) ?? []
        const want = (await generate(name, args)).replace(/\n+$/, '')
        if (block.body === want) continue
        assert.ok(update, `${f}:${block.line}: generated block ${name} is stale (DSH_FOLD_UPDATE_DOCS=1 rewrites it)\n--- page ---\n${block.body}\n--- now ---\n${want}`)
        const lines = text.split('\n')
        let end = block.line
        while (!/^\s*```\s*$/.test(lines[end])) end++
        lines.splice(block.line, end - block.line, ...want.split('\n'))
        writeFileSync(path.join(ROOT, f), lines.join('\n'))
      }
    }
  })

  test('figures quoted from generated tables are what the tables say now (rows-from, figures-from)', async () => {
    const { checkedText, figuresIn, markedBlocks, quotes, tableRows } = await import('./helpers/figures.mjs')
    const { X64_BINARY_BUDGET, binaryName } = await import('../scripts/targets.mjs')
    /** A source's text: a repository file, or `addon-binary` (the x64 addon's size). @param {string} name */
    const sourceText = (name) => {
      if (name !== 'addon-binary') return readFileSync(path.join(ROOT, name), 'utf8')
      const binary = path.join(ROOT, binaryName(X64_BINARY_BUDGET.target))
      assert.ok(existsSync(binary), `addon-binary: no x64 Linux addon at ${binary} (npm install builds it)`)
      return `${statSync(binary).size} bytes`
    }
    const problems = []
    let checked = 0
    for (const f of readdirSync(path.join(ROOT, 'docs')).filter((x) => x.endsWith('.md')).map((x) => `docs/${x}`).concat(['README.md', 'README.zh.md'])) {
      for (const block of markedBlocks(readFileSync(path.join(ROOT, f), 'utf8'))) {
        const source = block.sources.map(sourceText).join('\n')
        if (block.kind === 'rows-from') {
          const have = new Set(source.split('\n').map((l) => l.trim()))
          const rows = block.lines.filter((l) => !/^\|[\s:|-]+\|$/.test(l.trim())).slice(1)
          for (const row of rows) if (!have.has(row.trim())) problems.push(`${f}:${block.line}: a row not in ${block.sources.join(' ')}: ${row.slice(0, 120)}`)
          checked += rows.length
          continue
        }
        const have = figuresIn(source)
        for (const figure of figuresIn(checkedText(block))) {
          checked++
          if (!quotes(figure, have)) problems.push(`${f}:${block.line}: ${figure.text} is not a figure of ${block.sources.join(' ')}`)
        }
      }
    }
    assert.deepEqual(problems, [], `${problems.length} quoted figures are not their source's (of ${checked} checked)`)
    assert.ok(checked > 100, `only ${checked} figures checked: the markers are gone?`)
    assert.ok(tableRows(['| a | b |']).length === 1)
  })

  test('docs/economics-demo.svg is what `dsh-fold economics --svg` writes for the demo log now', (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-svg-'))
    t.after(() => rmSync(dir, { recursive: true, force: true }))
    const bin = path.join(ROOT, 'bin', 'dsh-fold.mjs')
    assert.equal(spawnSync(process.execPath, [bin, 'demo', '--save', path.join(dir, 'demo.jsonl')]).status, 0)
    const r = spawnSync(process.execPath, [bin, 'economics', path.join(dir, 'demo.jsonl'), '--svg', path.join(dir, 'e.svg')], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    assert.equal(readFileSync(path.join(dir, 'e.svg'), 'utf8'), readFileSync(path.join(ROOT, 'docs', 'economics-demo.svg'), 'utf8'))
  })
})
