// `dsh-fold economics FILE`, run as a real process on real persisted session logs: the demo's
// (`dsh-fold demo --save`), one written by a real agent turn on the real DSH packages with an
// LLM-reported fold, and the CLI fixtures' bad logs. Numbers are checked against DSH's own
// token meter (a real TokenMeter on a cordis Context) applied by hand to what the log holds;
// the cache model against hand-built logs.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

import { TokenMeter } from '@deepseek-ai/dsh-token-meter'
import { defineTool } from '@deepseek-ai/dsh-tools'

import { DEFAULT_PRICES, findFolds, walkRequests } from '../bin/economics-price.mjs'
import { addon } from '../plugin/shared/addon.js'
import { writeCommit } from '../plugin/block/commit.js'
import { Checkpoint, INSTRUCTIONS, Recall, Rewind } from '../plugin/index.js'
import { splitRecallHint } from '../plugin/recall/hint.js'
import { splitReportFrame } from '../plugin/fold/words.js'
import { isReportInstruction } from '../plugin/fold/summarize.js'
import { Context, ScriptedModel, Session, SessionBuilder, SessionId, bootHost, createUserMessage, runTurn, say, tempStore } from './helpers/dsh.mjs'
import { planBlocks } from './helpers/planners.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const FIXTURES = path.join(ROOT, '__test__', 'fixtures', 'cli')
const DIR = mkdtempSync(path.join(tmpdir(), 'dsh-fold-economics-'))
after(() => rmSync(DIR, { recursive: true, force: true }))

/** Runs the command. @param {string[]} args */
function cli(args) {
  return /** @type {Promise<{code: number | null, stdout: string, stderr: string}>} */ (
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
      child.on('error', reject)
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })
  )
}

/** DSH's token meter, as the command uses it. */
async function meter() {
  const ctx = new Context()
  await ctx.plugin(TokenMeter)
  return ctx.get('tokenMeter')
}

/** Reads a session.jsonl back into events. @param {string} file */
const eventsOf = (file) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => JSON.parse(l))

/** Writes a session's log as the jsonl backend does. @param {any} session @param {string} file */
function persist(session, file) {
  const header = { type: 'session', version: 0, id: session.id, createdAt: 0, cwd: tmpdir() }
  writeFileSync(file, `${[header, ...session.events].map((e) => JSON.stringify(e)).join('\n')}\n`)
}

// ---- the demo ---------------------------------------------------------------------------------

describe('economics of the demo session', () => {
  const file = path.join(DIR, 'demo.jsonl')

  it('demo --save writes a log that replays, and economics prices its one extractive fold', async () => {
    const demo = await cli(['demo', '--save', file])
    assert.equal(demo.code, 0, demo.stderr)
    assert.match(demo.stdout, /wrote .*demo\.jsonl \(the session log; price it: dsh-fold economics /)
    const r = await cli(['economics', file, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const a = JSON.parse(r.stdout)
    assert.equal(a.sessionId, 'demo-session')
    assert.deepEqual(a.prices, DEFAULT_PRICES)
    assert.equal(a.folds.length, 1)
    const [f] = a.folds
    assert.equal(f.kind, 'fold')
    assert.equal(f.name, 'fold 1')
    assert.equal(f.report, 'extractive')
    assert.equal(f.reportCall, null)
    assert.equal(f.foldedNodes, 7)

    // Check every figure against the meter applied by hand to the log.
    const events = eventsOf(file)
    const m = await meter()
    const session = Session.create(SessionId('check'), events)
    const tokens = (/** @type {number} */ seq) => m.estimateMessage(session.deriveEventMessage(events[seq]))
    const replacement = events[f.seq]
    assert.equal(replacement.data.source.plugin, 'rewind')
    const folded = replacement.sourceEventSeqs.reduce((n, s) => n + tokens(s), 0)
    assert.equal(f.foldedTokens, folded)
    assert.equal(f.replacementTokens, tokens(f.seq))
    assert.equal(f.tokensFreed, folded - tokens(f.seq))
    const replies = events.filter((e) => e.type === 'assistant/message')
    assert.equal(a.requests.length, replies.length)
    assert.equal(f.requestsAfter, replies.filter((e) => e.seq > f.seq).length)
    assert.equal(f.requestsAfter, 4)
    // Every request after the fold sends exactly the freed tokens less.
    assert.equal(f.inputTokensNotSent, f.requestsAfter * f.tokensFreed)
    for (const q of a.requests) assert.equal(q.without.input - q.with.input, q.seq > f.seq ? f.tokensFreed : 0)
    // The invalidated prefix: the rewind call's own assistant message, cached as the reply of the request before.
    const rewindReply = replies.filter((e) => e.seq < f.seq).at(-1)
    assert.equal(f.invalidatedTokens, tokens(rewindReply.seq))
    // The first request after the fold hits up to the fold, and misses from it on.
    const first = a.requests.find((/** @type {any} */ q) => q.seq > f.seq)
    const header = m.measure(Session.create(SessionId('empty')), events.find((e) => e.type === 'request/header').data.header).totalTokens
    const nodesBefore = [1, 2, 3, 4].map((s) => events[s]).filter((e) => ['user/message', 'assistant/message', 'tool/result'].includes(e.type))
    assert.equal(first.with.hit, header + nodesBefore.reduce((n, e) => n + tokens(e.seq), 0))
    assert.deepEqual(first.after, ['fold 1'])
    // Totals add up, and both scenarios bill the same replies.
    const { with: w, without: wo, saved: s } = a.totals
    assert.equal(w.input, w.hit + w.miss)
    assert.equal(wo.input - w.input, s.input)
    assert.equal(s.input, f.inputTokensNotSent)
    assert.equal(w.output, wo.output)
    assert.equal(w.requests, wo.requests)
    // --json rounds money to a millionth.
    const price = (/** @type {any} */ b) => Math.round(b.hit * 0.07 + b.miss * 0.56 + b.output * 1.68) / 1e6
    assert.equal(w.cost, price(w))
    assert.equal(wo.cost, price(wo))
    assert.ok(Math.abs(f.saved - s.cost) < 1.5e-6, 'one fold: its own effect is the total')
    // The pay-back point: once (replacement + invalidated at miss - hit) over freed tokens at the hit price.
    const once = ((f.replacementTokens + f.invalidatedTokens) * (0.56 - 0.07)) / 1e6
    assert.equal(f.breakEvenRequests, Math.ceil(once / ((f.tokensFreed * 0.07) / 1e6)))
    assert.equal(Math.sign(s.cost), f.requestsAfter >= f.breakEvenRequests ? 1 : -1)
  })

  it('the text report says the same, with the price list it used', async () => {
    const r = await cli(['economics', file])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^session demo-session: \d+ events, 9 agent requests, 1 fold, 0 block commits\n/)
    assert.match(r.stdout, /prices per 1M tokens: cache hit 0\.07, cache miss 0\.56, output 1\.68 USD \(api-docs\.deepseek\.com\/quick_start\/pricing/)
    assert.match(r.stdout, /\nfold 1 at seq \d+: 7 messages, [\d,]+ tokens → report of [\d,]+ tokens: [\d,]+ tokens freed\n {2}4 requests followed; they did not send [\d,]+ input tokens\n/)
    assert.match(r.stdout, /report call: none \(extractive report, no model call\)/)
    assert.match(r.stdout, /\nwith folds +9 +[\d,]+/)
    assert.match(r.stdout, /\nwithout folds +9 +[\d,]+/)
    const custom = await cli(['economics', file, '--hit-price', '0.5', '--miss-price', '2', '--output-price', '8', '--currency', 'cny'])
    assert.equal(custom.code, 0, custom.stderr)
    assert.match(custom.stdout, /prices per 1M tokens: cache hit 0\.5, cache miss 2, output 8 CNY\n/)
  })
})

// ---- a log persisted by a real DSH host ------------------------------------------------------

describe('economics of a log a real headless DSH host persisted (e2e scenario 6)', () => {
  // __test__/fixtures/economics/e2e-recall.session.jsonl.zstd: the session.jsonl.zstd the pinned
  // DSH host wrote in e2e scenario 6 (checkpoint, read, bash, rewind with an LLM report, recall,
  // answer), copied from a kept run (DSH_E2E_KEEP=1). Several zstd frames; the host's own tool
  // schemas in its request headers; with the token meter mounted, the fold's compaction/prune.
  const FILE = path.join(ROOT, '__test__', 'fixtures', 'economics', 'e2e-recall.session.jsonl.zstd')

  it('prices it as printed in the README and the report', async () => {
    const r = await cli(['economics', FILE, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const a = JSON.parse(r.stdout)
    assert.equal(a.requests.length, 6)
    const [f] = a.folds
    assert.deepEqual(
      { name: f.name, report: f.report, foldedNodes: f.foldedNodes, foldedTokens: f.foldedTokens, replacementTokens: f.replacementTokens, tokensFreed: f.tokensFreed, requestsAfter: f.requestsAfter, inputTokensNotSent: f.inputTokensNotSent, invalidatedTokens: f.invalidatedTokens, breakEvenRequests: f.breakEvenRequests },
      { name: 'fold 1', report: 'llm', foldedNodes: 4, foldedTokens: 1200, replacementTokens: 70, tokensFreed: 1130, requestsAfter: 2, inputTokensNotSent: 2260, invalidatedTokens: 17, breakEvenRequests: 19 },
    )
    assert.deepEqual({ ...f.reportCall, cost: undefined }, { input: 9710, hit: 8249, miss: 1461, output: 33, cost: undefined })
    const { with: w, without: wo } = a.totals
    assert.deepEqual([w.requests, w.input, w.hit, w.miss, w.output], [7, 62835, 51671, 11164, 166])
    assert.deepEqual([wo.requests, wo.input, wo.hit, wo.miss, wo.output], [6, 55385, 45769, 9616, 133])
    assert.ok(a.recordedUsage && a.recordedUsage.replies === 6, 'the host logged the provider usage of every reply')
    const text = await cli(['economics', FILE])
    assert.match(text.stdout, /the folds cost \$0\.001335 more \(15\.2% over the bill without folds\)/)
  })
})

// ---- an LLM-reported fold in a real agent turn --------------------------------------------------

describe('economics of a real agent turn with an LLM report', () => {
  it('prices the report call: header hit, region and instruction missed, the report (no hint) out', async () => {
    const REPORT = '## Findings\nThe config loader resolves includes relative to the including file.'
    const isReport = (/** @type {any} */ o) => isReportInstruction(o.messages.at(-1))
    const replies = [
      { calls: [{ id: 'k1', name: 'checkpoint', args: { objective: 'includes' } }] },
      { calls: [{ id: 'p1', name: 'probe', args: { path: 'loader.rs' } }, { id: 'p2', name: 'probe', args: { path: 'include.rs' } }] },
      { calls: [{ id: 'r1', name: 'rewind' }] },
      { calls: [{ id: 'p3', name: 'probe', args: { path: 'main.rs' } }] },
      say('Includes resolve relative to the including file.'),
    ]
    const model = new ScriptedModel((o) => (isReport(o) ? say(REPORT) : (replies.shift() ?? say('done'))))
    const root = await bootHost(model)
    await root.plugin(Checkpoint, { store: tempStore() })
    await root.plugin(Rewind)
    await root.plugin(Recall)
    root.tools.register(
      defineTool({
        name: 'probe',
        description: 'Read a file.',
        parameters: { path: { type: 'string', description: 'The file.' } },
        output: { schema: { type: 'object', properties: { text: { type: 'string' } }, additionalProperties: false }, render: (/** @type {any} */ _a, /** @type {any} */ v) => [{ type: 'text', text: v.text }] },
        async execute(/** @type {any} */ args) {
          return { text: Array.from({ length: 60 }, (_, i) => `${args.path}:${i + 1}: fn step_${i}() -> Result<()> { include(\"${i}.toml\")? }`).join('\n') }
        },
      }),
    )
    const handle = await root.agents.create({ sessionId: SessionId('llm-fold'), agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
    await runTurn(handle.agent, 'How does the config loader resolve includes?')
    const file = path.join(DIR, 'llm-fold.jsonl')
    persist(handle.agent.session, file)

    const r = await cli(['economics', file, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const a = JSON.parse(r.stdout)
    assert.equal(a.folds.length, 1)
    const [f] = a.folds
    assert.equal(f.report, 'llm')
    const events = eventsOf(file)
    const m = await meter()
    const session = Session.create(SessionId('check'), events)
    const tokens = (/** @type {number} */ seq) => m.estimateMessage(session.deriveEventMessage(events[seq]))
    const header = events.filter((e) => e.type === 'request/header' && e.seq < f.seq).at(-1).data.header
    const headerTokens = m.measure(Session.create(SessionId('empty')), header).totalTokens
    const region = events[f.seq].sourceEventSeqs.reduce((n, s) => n + tokens(s), 0)
    // The instruction the model was sent, but for the checkpoint's objective, which the log does
    // not hold (economics says it was not stated).
    const sent = model.requests.find(isReport).messages.at(-1).content.map((/** @type {any} */ b) => b.text ?? '').join('')
    assert.ok(sent.endsWith(INSTRUCTIONS.en))
    const logged = sent.replace(/^Its purpose \(checkpoint 1\): includes$/m, "Its purpose (checkpoint 1) was not stated; infer it from the exploration and the user's request.")
    assert.notEqual(logged, sent)
    const instruction = m.estimateMessage(createUserMessage({ content: [{ type: 'text', text: logged }], source: { kind: 'plugin', plugin: 'rewind' } }))
    const text = events[f.seq].data.content[0].text
    assert.ok(splitReportFrame(text).head && splitReportFrame(text).body.startsWith(REPORT) && splitRecallHint(text).hint, 'the report carries its frame and the recall hint')
    const output = m.estimateMessage(createUserMessage({ content: [{ type: 'text', text: REPORT }], source: { kind: 'plugin', plugin: 'rewind' } }))
    assert.deepEqual(f.reportCall, {
      input: headerTokens + region + instruction,
      hit: headerTokens,
      miss: region + instruction,
      output,
      // --json rounds money to a millionth
      cost: Math.round(headerTokens * 0.07 + (region + instruction) * 0.56 + output * 1.68) / 1e6,
    })
    // The model really was asked once for the report; the scenario with folds has one request more.
    assert.equal(model.requests.filter(isReport).length, 1)
    assert.equal(a.totals.with.requests, a.totals.without.requests + 1)
    assert.equal(f.requestsAfter, 2)
    assert.equal(f.inputTokensNotSent, 2 * f.tokensFreed)
    // With the meter mounted the fold logged DSH's shadow price; it changes nothing here.
    assert.ok(a.totals.saved.input > 0)
  })
})

// ---- a block commit, written by block mode's own planner and writer ----------------------------

describe('economics of a block commit', () => {
  it('no report call; the kept nodes after the range are the prefix it invalidated', async () => {
    const b = new SessionBuilder('block-economics')
    b.turn = 1
    b.user('Refactor auth, then the cache.')
    b.header({ provider: 'deepseek', model: 'deepseek-chat' }, { system: 'You are a coding agent.', tools: [{ name: 'block_run_code', description: 'Run a program.', parameters: { type: 'object', properties: {} } }] })
    /** @type {number[]} */
    const seqs = []
    for (const [i, id] of ['A', 'A', 'B', 'A', 'C', 'B'].entries()) {
      seqs.push(b.assistant({ calls: [{ id: `c${i}`, name: 'block_run_code', args: { ids: [id], description: `step ${i}`, code: `return read('${id}${i}.ts')` } }] }))
      seqs.push(b.result(`c${i}`, Array.from({ length: 30 }, (_, k) => `${id}${i}.ts:${k + 1}: export const v${k} = ${i * 100 + k}`).join('\n')))
    }
    const session = b.session
    const outcome = planBlocks(session, ['A'], session.seq)
    assert.equal(outcome.status, 'commit')
    const { seqs: written } = writeCommit(session, { plan: outcome.plan, summary: 'A done: v0..v29 of A0, A1, A3.', requestSeq: session.seq, route: undefined, turn: 1, metered: false, language: 'en' })
    b.assistant({ text: 'Continuing with C.' })
    b.assistant({ text: 'Done.' })
    const file = path.join(DIR, 'block.jsonl')
    persist(session, file)
    const r = await cli(['economics', file, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const a = JSON.parse(r.stdout)
    assert.equal(a.folds.length, 1)
    const [f] = a.folds
    assert.deepEqual([f.kind, f.name, f.report, f.reportCall, f.seq], ['block', 'block A', 'agent', null, written.replacement])
    assert.equal(f.foldedNodes, 8) // A A B A: four calls, four results
    assert.equal(f.requestsAfter, 2)
    const m = await meter()
    const events = eventsOf(file)
    const replayed = Session.create(SessionId('check'), events)
    const tokens = (/** @type {number} */ seq) => m.estimateMessage(replayed.deriveEventMessage(events[seq]))
    // r0 (the request that produced the last B call) had cached C's call and result and its own reply;
    // the first request after the commit re-reads them at the miss price. B's last result came later.
    assert.equal(f.invalidatedTokens, tokens(seqs[8]) + tokens(seqs[9]) + tokens(seqs[10]))
    assert.ok(a.totals.with.requests === a.totals.without.requests)
    assert.equal(a.totals.saved.input, 2 * f.tokensFreed)
    const text = await cli(['economics', file])
    assert.match(text.stdout, /\nblock A at seq \d+: 8 messages, [\d,]+ tokens → summary of [\d,]+ tokens/)
    assert.match(text.stdout, /report call: none \(the agent wrote the summary in its own request\)/)
    assert.match(text.stdout, /1 agent requests?|0 folds, 1 block commit/)
  })
})

// ---- the cache model on hand-built logs ------------------------------------------------------

describe('economics of compactions, per backend', () => {
  it('a session compacted by compaction-basic, then resumed with dsh-fold/compaction: each backend listed with its compactions, calls and tokens freed', async () => {
    const { agentOn, bootHost: bootCompaction, compactionsOf, PressureModel, probe, prompt } = await import('./compaction/harness.mjs')
    const steps = (/** @type {any} */ _o, /** @type {number} */ n) => (n % 9 === 8 ? { text: 'Done.' } : { calls: [probe(`e${n}`, `src/e/${n}.rs`)] })
    // compaction-basic first (its summary request answered by the scripted model)...
    const basicRoot = await bootCompaction({ model: new PressureModel({ contextWindow: 6000, script: steps }), backend: 'basic' })
    const first = await agentOn(basicRoot, 'econ-mixed')
    await prompt(first, 'Audit src/e.')
    const basicCount = compactionsOf(first.session).length
    assert.ok(basicCount >= 1)
    // ...then the same session, restored from its log, in a host with dsh-fold/compaction.
    const seed = JSON.parse(JSON.stringify(first.session.events))
    const foldRoot = await bootCompaction({ model: new PressureModel({ contextWindow: 6000, script: steps }), backend: 'fold' })
    const { agent } = await foldRoot.agents.create({ sessionId: SessionId('econ-mixed'), seed, agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
    await prompt(agent, 'And once more.')
    const all = compactionsOf(agent.session)
    const foldCount = all.length - basicCount
    assert.ok(foldCount >= 1, 'dsh-fold/compaction compacted the resumed session')
    const file = path.join(DIR, 'mixed.jsonl')
    persist(agent.session, file)

    const r = await cli(['economics', file, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const a = JSON.parse(r.stdout)
    assert.deepEqual(a.compactions.map((/** @type {any} */ b) => [b.backend, b.compactions, b.modelCalls]), [['compaction-basic', basicCount, basicCount], ['dsh-fold', foldCount, 0]])
    for (const b of a.compactions) {
      const mine = a.folds.filter((/** @type {any} */ f) => f.kind === 'compaction' && f.backend === b.backend)
      assert.equal(b.tokensFreed, mine.reduce((/** @type {number} */ x, /** @type {any} */ f) => x + f.tokensFreed, 0))
      assert.equal(b.callCost, Math.round(mine.reduce((/** @type {number} */ x, /** @type {any} */ f) => x + (f.reportCall?.cost ?? 0), 0) * 1e6) / 1e6)
    }
    assert.ok(a.compactions[0].callInput > 0 && a.compactions[0].callCost > 0, 'basic\'s calls are priced')
    assert.equal(a.compactions[1].callCost, 0)

    const text = await cli(['economics', file])
    assert.equal(text.code, 0, text.stderr)
    const basic = a.compactions[0]
    assert.match(text.stdout, new RegExp(`\\ncompactions by backend:\\n  compaction-basic: ${basicCount} compactions?, ${basicCount} summary calls? \\(${basic.callInput.toLocaleString('en-US')} input \\+ [\\d,]+ output tokens, \\$${basic.callCost.toFixed(6)}\\), [\\d,]+ tokens freed\\n  dsh-fold/compaction: ${foldCount} compactions?, no model call, ${a.compactions[1].tokensFreed.toLocaleString('en-US')} tokens freed\\n`))
  })
})

describe('the request rebuild and the cache model', () => {
  it('rebuilds each request from the surface before its reply; without the folds, shadowed nodes stay', () => {
    const b = new SessionBuilder('walk')
    b.turn = 1
    const u = b.user('go')
    b.header({ provider: 'p', model: 'm' }, { system: 'sys' })
    const a1 = b.assistant({ calls: [{ id: 'c1', name: 'probe' }] })
    const r1 = b.result('c1', 'one')
    const a2 = b.assistant({ calls: [{ id: 'c2', name: 'probe' }] })
    const r2 = b.result('c2', 'two')
    // A fold of [a1..r2], then a compaction over the user message and the fold's report.
    const report = b.session.append('user/message', createUserMessage({ content: [{ type: 'text', text: 'report' }], source: { kind: 'plugin', plugin: 'rewind', markId: 1 } }), {
      surfaceOp: { op: 'replace', start: a1, end: r2 },
      sourceEventSeqs: [a1, r1, a2, r2],
    }).seq
    const a3 = b.assistant({ text: 'next' })
    const compaction = b.replace(u, report, 'compacted')
    const a4 = b.assistant({ text: 'last' })
    const events = b.session.events
    const folds = findFolds(events)
    assert.deepEqual(folds, [{ kind: 'fold', name: 'fold 1', seq: report, shadowed: [a1, r1, a2, r2], report: 'llm' }])
    const withFolds = walkRequests(events, new Set())
    assert.deepEqual(
      withFolds.map((q) => [q.seq, q.nodes]),
      [
        [a1, [u]],
        [a2, [u, a1, r1]],
        [a3, [u, report]],
        [a4, [compaction, a3]],
      ],
    )
    assert.deepEqual([...b.session.surface.nodes], [compaction, a3, a4])
    // Without the fold: its originals stand where the report stood, and the compaction that
    // swallowed the report swallows them instead.
    const without = walkRequests(events, new Set([report]))
    assert.deepEqual(
      without.map((q) => [q.seq, q.nodes]),
      [
        [a1, [u]],
        [a2, [u, a1, r1]],
        [a3, [u, a1, r1, a2, r2]],
        [a4, [compaction, a3]],
      ],
    )
    assert.equal(withFolds[0].header.system, 'sys')
  })
})

// ---- bad input --------------------------------------------------------------------------------

describe('economics: bad input is classified', () => {
  const cases = [
    { args: ['economics'], code: 64, message: /economics needs a FILE/ },
    { args: ['economics', path.join(DIR, 'nope.jsonl')], code: 66, message: /no such file/ },
    // Torn tails are read as the host reads them (a warning), then there is no fold to price.
    { args: ['economics', path.join(FIXTURES, 'bad', 'corrupt-line.jsonl')], code: 1, message: /warning: .*line \d+ is not a valid event record and no completed turn follows it[\s\S]*NO_FOLDS/ },
    { args: ['economics', path.join(FIXTURES, 'bad', 'truncated.jsonl.zstd')], code: 1, message: /warning: .*the last zstd frame .* is incomplete[\s\S]*NO_FOLDS/ },
    { args: ['economics', path.join(FIXTURES, 'bad', 'version99.jsonl')], code: 65, message: /session format version 99, newer than the 0 this DSH reads/ },
    { args: ['economics', path.join(FIXTURES, 'bad', 'empty.jsonl')], code: 65, message: /is empty/ },
    { args: ['economics', path.join(FIXTURES, 'session.jsonl.zstd')], code: 1, message: /NO_FOLDS: session cli-fixture-parser-unicode has no fold \(rewind report\), no block commit and no compaction/ },
    { args: ['economics', path.join(FIXTURES, 'session.jsonl'), '--hit-price', 'cheap'], code: 64, message: /--hit-price must be a price per 1M tokens/ },
    { args: ['economics', path.join(FIXTURES, 'session.jsonl'), '--miss-price', '-1'], code: 64, message: /--miss-price must be a price/ },
    { args: ['economics', path.join(FIXTURES, 'session.jsonl'), '--hit-price', '1', '--miss-price', '2', '--output-price', '3', '--currency', 'US Dollar'], code: 64, message: /--currency must be a short currency code/ },
    { args: ['economics', path.join(FIXTURES, 'session.jsonl'), '--currency', 'CNY'], code: 64, message: /--currency names the currency of --hit-price, --miss-price and --output-price/ },
    { args: ['economics', path.join(FIXTURES, 'session.jsonl'), '--html'], code: 64, message: /--html needs a value/ },
    { args: ['economics', path.join(FIXTURES, 'session.jsonl'), '--bogus'], code: 64, message: /unknown option --bogus/ },
  ]
  for (const c of cases) {
    it(`${c.args.slice(1).map((a) => path.basename(a)).join(' ') || '(no file)'} → exit ${c.code}`, async () => {
      const r = await cli(c.args)
      assert.equal(r.code, c.code, r.stderr)
      assert.match(r.stderr, c.message)
      assert.match(r.stderr, /^dsh-fold: /)
      assert.equal(r.stdout, '')
    })
  }

  it('an output file that cannot be written is exit 73, and nothing is printed as if it worked', async () => {
    const demo = path.join(DIR, 'demo-73.jsonl')
    assert.equal((await cli(['demo', '--save', demo])).code, 0)
    const locked = path.join(DIR, 'locked')
    mkdirSync(locked)
    chmodSync(locked, 0o500)
    const target = process.getuid?.() === 0 ? path.join(DIR, 'no-such-dir', 'page.html') : path.join(locked, 'page.html')
    const r = await cli(['economics', demo, '--html', target])
    assert.equal(r.code, 73, r.stderr)
    assert.match(r.stderr, /cannot write .*page\.html/)
    assert.ok(!existsSync(target))
  })
})
