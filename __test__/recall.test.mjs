// The `recall` tool (`dsh-fold/recall`) on the real DeepSeek Harness packages: a real cordis
// Context with the real LlmRuntime (a scripted LlmAdapter as the model), SessionStore,
// AgentRegistry, SystemPrompt, ToolRuntime and AgentLoop, the real checkpoint/rewind plugins of
// this package, and real agent turns. Recall after one fold, after two, after a block commit
// (the 4-event bracket block mode writes), on a session replayed from its persisted log; what
// the model sees in the next request; every classified error; the answer bound; a regex that
// would backtrack forever elsewhere.
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'

import { compactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import { decodeStorageRecord } from '@deepseek-ai/dsh-session'

import { addon } from '../plugin/shared/addon.js'
import { writeCommit } from '../plugin/block/commit.js'
import { Checkpoint, Rewind } from '../plugin/index.js'
import { isReportInstruction } from '../plugin/fold/summarize.js'
import Recall, { Config as RecallConfig, RECALL_ERROR_CODES, RecallError, parseArgs, recall } from '../plugin/recall/recall.js'
import { hintLine, recallHint, splitRecallHint } from '../plugin/recall/hint.js'
import { splitReportFrame } from '../plugin/fold/words.js'
import { logIndex, originalSeqs, regionTexts } from '../plugin/recall/log.js'
import { ScriptedModel, Session, SessionBuilder, SessionId, bootHost, createUserMessage, probeTool, protocolProblems, runTurn, say, tempStore } from './helpers/dsh.mjs'
import { planBlocks } from './helpers/planners.mjs'
import { tempDir } from './helpers/tmp.mjs'

// ---- fixtures -------------------------------------------------------------------------------

const REPORT = '## Findings\nThe parser drops the last token before a trailing comment.'
/** What the `probe` tool returns for a path: 40 numbered lines, one of them the needle. */
const fileText = (/** @type {string} */ p) =>
  Array.from({ length: 40 }, (_, i) => (i === 27 ? `${p}:28: ERROR E0425 cannot find value \`tail\` in this scope` : `${p}:${i + 1}: line ${i + 1} of ${p}`)).join('\n')

const probe = probeTool(fileText)

const isReportRequest = (/** @type {any} */ options) => isReportInstruction(options.messages.at(-1))
const textOf = (/** @type {any} */ m) =>
  (m?.content ?? [])
    .map((/** @type {any} */ b) => (b.type === 'text' ? b.text : b.type === 'tool-result' ? textOf(b) : ''))
    .join('')
const callReply = (/** @type {string} */ id, /** @type {string} */ name, args = {}) => ({ calls: [{ id, name, args }] })
/** The tool result answering call `id` in a request's messages. @param {any} request @param {string} id */
const resultFor = (request, id) => request.messages.find((/** @type {any} */ m) => m.content?.some((/** @type {any} */ b) => b.type === 'tool-result' && b.toolCallId === id))

/**
 * A real host with checkpoint, rewind (LLM reports from the script) and recall mounted.
 * `replies` are the agent's model answers in order; report calls are answered with REPORT.
 * @param {any[]} replies @param {{recall?: object, mountRecall?: boolean, rewind?: object}} [o]
 */
async function setup(replies, { recall: recallConfig = {}, mountRecall = true, rewind = {} } = {}) {
  const queue = [...replies]
  const model = new ScriptedModel((options) => (isReportRequest(options) ? say(REPORT) : (queue.shift() ?? say('done'))))
  const root = await bootHost(model)
  await root.plugin(Checkpoint, { store: tempStore() })
  await root.plugin(Rewind, rewind)
  if (mountRecall) await root.plugin(Recall, recallConfig)
  root.tools.register(probe)
  return { root, model, agentRequests: () => model.requests.filter((r) => !isReportRequest(r)) }
}

/** A real agent on a fresh session. @param {any} root @param {string} id */
async function agentOf(root, id) {
  const handle = await root.agents.create({ sessionId: SessionId(id), agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
  return handle.agent
}

/** Asserts `promise` rejects with a RecallError of `code`; returns it. */
async function rejectsWith(/** @type {Promise<any>} */ promise, /** @type {string} */ code) {
  let error
  await assert.rejects(promise, (e) => {
    error = e
    assert.ok(e instanceof RecallError, `a RecallError, got ${e}`)
    assert.equal(/** @type {any} */ (e).code, code, /** @type {any} */ (e).message)
    assert.ok(/** @type {any} */ (e).message.startsWith(`${code}: `))
    return true
  })
  return /** @type {any} */ (error)
}

/** One exploration, folded: checkpoint → two probes in parallel → rewind. */
const exploreAndFold = (/** @type {string} */ k, /** @type {string[]} */ paths) => [
  callReply(`k${k}`, 'checkpoint', { objective: `explore ${paths.join(', ')}` }),
  { text: `Reading ${paths.join(' and ')}.`, calls: paths.map((p, i) => ({ id: `p${k}${i}`, name: 'probe', args: { path: p } })) },
  callReply(`r${k}`, 'rewind'),
]

// ---- config and arguments ---------------------------------------------------------------------

describe('recall config and arguments', () => {
  it('defaults: tool `recall`, answers up to 8000 chars; bad rows are refused', () => {
    assert.deepEqual(RecallConfig({}), { toolName: 'recall', maxChars: 8000 })
    assert.throws(() => RecallConfig({ maxChars: 10 }))
    assert.throws(() => RecallConfig({ toolName: 'bad name' }))
  })

  it('normalizes arguments and classifies every bad one as INVALID_ARGUMENT', () => {
    assert.deepEqual(parseArgs(undefined), { around: 0 })
    assert.deepEqual(parseArgs({ fold: 'latest', query: 'x', around: 3 }), { fold: 'latest', query: 'x', around: 3 })
    assert.deepEqual(parseArgs({ fold: '12' }), { fold: 12, around: 0 })
    assert.deepEqual(parseArgs({ block: 'auth', fold: null }), { block: 'auth', around: 0 })
    for (const bad of [
      'x',
      [1],
      { fold: 0 },
      { fold: -1 },
      { fold: 1.5 },
      { fold: 'first' },
      { fold: '01' },
      { block: '' },
      { block: 7 },
      { fold: 1, block: 'a' },
      { query: '' },
      { query: 5 },
      { around: -1 },
      { around: 21 },
      { around: 1.5 },
      { limit: 3 },
    ]) {
      assert.throws(() => parseArgs(bad), (e) => e instanceof RecallError && e.code === 'INVALID_ARGUMENT', JSON.stringify(bad))
    }
  })

  it('arguments the model inflates are refused in messages of bounded length (a prefix of a value, 12 names)', () => {
    const huge = 'z'.repeat(1_000_000)
    const keys = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}${'w'.repeat(50)}`, 1]))
    for (const [what, bad, message] of /** @type {const} */ ([
      ['100,000 unknown keys', keys, /^INVALID_ARGUMENT: unknown arguments "k0w+…, .* and 99988 more; use fold, block, compaction, query, around\.$/],
      ['a compaction id of a million chars', { compaction: huge }, /^INVALID_ARGUMENT: compaction must be a compaction id or "latest", got "z{39}…\.$/],
      ['a fold of a million chars', { fold: huge }, /^INVALID_ARGUMENT: fold must be a mark id .*, got "z{39}…\.$/],
      ['a fold that is a huge array', { fold: new Array(100_000).fill(7) }, /got \[7,7,7.*…\.$/],
      ['a block id of a million chars', { block: huge }, /^INVALID_ARGUMENT: block "z{39}… is 1000000 characters long; a block id has at most 256\.$/],
      ['a query that is a huge object', { query: keys }, /^INVALID_ARGUMENT: query must be a non-empty string .*, got \{"k0w+…\.$/],
      ['an around that is a long string', { around: huge }, /got "z{39}…\.$/],
    ])) {
      let e
      try {
        parseArgs(bad)
      } catch (x) {
        e = /** @type {any} */ (x)
      }
      assert.ok(e instanceof RecallError, what)
      assert.equal(e.code, 'INVALID_ARGUMENT', what)
      assert.ok(e.message.length < 800, `${what}: ${e.message.length} chars`)
      assert.match(e.message, message, what)
    }
  })

  it('the hint line names the tool and the target, and can be split off again', () => {
    const en = hintLine('recall', { fold: 3 })
    assert.match(en, /^↩ Details of the folded steps are not lost: `recall\(\{"fold": 3, "query": "text or \/regex\/"\}\)`/)
    assert.match(hintLine('dig', { block: 'auth "x"' }, 'zh'), /`dig\(\{"block": "auth \\"x\\"", "query": "文本或 \/正则\/"\}\)`/)
    assert.equal(recallHint({ get: () => undefined }, { fold: 1 }), '')
    assert.equal(recallHint({ get: () => ({ toolName: 'recall' }) }, { fold: 1 }), `\n\n${en.replace('3', '1')}`)
    assert.deepEqual(splitRecallHint(`body\n\n${en}`), { body: 'body', hint: `\n\n${en}` })
    assert.deepEqual(splitRecallHint('body only'), { body: 'body only', hint: '' })
  })

  it('where recall is reachable only from a program, the line spells the call as a program writes it', () => {
    const inBlock = hintLine('recall', { block: 'A' }, 'en', { program: 'block_run_code' })
    assert.equal(inBlock, '↩ Details of the folded steps are not lost: inside a `block_run_code` program, `await tools.recall({"block": "A", "query": "text or /regex/"})` returns their exact lines; without `query`, an index.')
    assert.equal(hintLine('recall', { fold: 2 }, 'zh', { program: 'run_code' }), '↩ 被折叠步骤的细节并未丢失：在 `run_code` 程序中，`await tools.recall({"fold": 2, "query": "文本或 /正则/"})` 返回其原始行；不带 `query` 时返回索引。')
    // A tool name that is no JavaScript identifier is reached by index.
    assert.match(hintLine('dig-2', { fold: 1 }, 'en', { program: 'block_run_code' }), /`await tools\["dig-2"\]\(\{"fold": 1, /)
    assert.equal(recallHint({ get: () => ({ toolName: 'recall' }) }, { block: 'A' }, 'en', { program: 'block_run_code' }), `\n\n${inBlock}`)
    assert.deepEqual(splitRecallHint(`body\n\n${inBlock}`), { body: 'body', hint: `\n\n${inBlock}` })
    // A target named like an Object.prototype member is still a block, not a fold.
    assert.match(hintLine('recall', { block: 'constructor' }), /"block": "constructor"/)
  })
})

// ---- recall after folds, in real agent turns --------------------------------------------------

describe('recall in real agent turns', () => {
  it('after a fold: the report ends with the hint, and the next request shows the exact folded line with its seq and tool', async () => {
    const { root, agentRequests } = await setup([
      ...exploreAndFold('1', ['src/lexer.rs', 'src/parser.rs']),
      callReply('q1', 'recall', { fold: 1, query: 'E0425' }),
      say('The error is E0425 in src/parser.rs line 28.'),
    ])
    const agent = await agentOf(root, 'one-fold')
    await runTurn(agent, 'Why does the build fail?')
    const requests = agentRequests()
    assert.equal(requests.length, 5)
    // The request after the fold: the probes are gone, the report stands, ending with the hint.
    const afterFold = requests[3]
    assert.ok(!afterFold.messages.some((/** @type {any} */ m) => /line 12 of src\/lexer\.rs/.test(textOf(m))))
    const report = afterFold.messages.find((/** @type {any} */ m) => m.source?.plugin === 'rewind')
    assert.equal(splitReportFrame(textOf(report)).body, `${REPORT}\n\n${hintLine('recall', { fold: 1 })}`)
    // The request after recall: the tool result holds the exact line of both files, seq and tool named.
    const answer = textOf(resultFor(requests[4], 'q1'))
    const log = agent.session.events
    const probeResults = log.filter((/** @type {any} */ e) => e.type === 'tool/result' && /^p1/.test(e.data.message.content[0].toolCallId))
    assert.equal(probeResults.length, 2)
    assert.match(answer, /^2 lines in fold 1 match E0425:/)
    for (const [i, file] of ['src/lexer.rs', 'src/parser.rs'].entries()) {
      assert.ok(answer.includes(`[seq ${probeResults[i].seq} · probe result]\n  28: ${file}:28: ERROR E0425 cannot find value \`tail\` in this scope`), answer)
    }
    assert.deepEqual(protocolProblems(agent.session.deriveMessages()), [])
    // Recall wrote nothing but its own call and result: no store write, no plugin event.
    assert.equal(log.filter((/** @type {any} */ e) => e.type === 'user/message' && e.data.source?.plugin === 'recall').length, 0)
  })

  it('after two folds: each by its mark id, "latest", every fold at once, the index, and context lines', async () => {
    const { root } = await setup([...exploreAndFold('1', ['a.rs']), ...exploreAndFold('2', ['b.rs', 'c.rs']), say('done')])
    const agent = await agentOf(root, 'two-folds')
    await runTurn(agent, 'Look at a, then b and c.')
    const session = agent.session
    assert.deepEqual(logIndex(session).regions.map((r) => [r.kind, r.markId]), [['fold', 1], ['fold', 2]])

    const one = await root.recall.recall(session, { fold: 1, query: 'E0425' })
    assert.equal(one.matches, 1)
    assert.match(one.text, /a\.rs:28: ERROR E0425/)
    assert.doesNotMatch(one.text, /b\.rs|c\.rs/)
    const two = await root.recall.recall(session, { fold: 'latest', query: 'E0425' })
    assert.equal(two.matches, 2)
    assert.match(two.text, /^2 lines in fold 2 match E0425:/)
    const all = await root.recall.recall(session, { query: '/E04\\d\\d/' })
    assert.equal(all.matches, 3)
    assert.match(all.text, /^3 lines in 2 folded regions match \/E04\\d\\d\/:\nfold 1:\n\[seq \d+ · probe result\]\n  28: a\.rs:28:.*\nfold 2:\n/)
    // Context: two lines either side, `-` for context and `:` for the match.
    const around = await root.recall.recall(session, { fold: 1, query: 'E0425', around: 2 })
    assert.match(around.text, /\n  26- a\.rs:26: line 26 of a\.rs\n  27- a\.rs:27: line 27 of a\.rs\n  28: a\.rs:28: ERROR E0425[^\n]*\n  29- a\.rs:29: line 29 of a\.rs\n  30- a\.rs:30: line 30 of a\.rs$/)
    // Call arguments and assistant text are searchable too.
    const args = await root.recall.recall(session, { fold: 2, query: '"path":"c.rs"' })
    assert.equal(args.matches, 1)
    assert.match(args.text, /· probe call\]\n  1: \{"path":"c\.rs"\}/)
    const said = await root.recall.recall(session, { query: 'Reading b.rs and c.rs' })
    assert.match(said.text, /· assistant text\]\n  1: Reading b\.rs and c\.rs\./)
    // Without a query: one line per folded message.
    const index = await root.recall.recall(session, { fold: 2 })
    assert.equal(index.matches, 0)
    const foldTwo = logIndex(session).regions[1]
    const seqs = originalSeqs(session, foldTwo)
    assert.equal(seqs.length, 3) // the assistant message with both calls, two results
    assert.match(index.text, new RegExp(`^fold 2: 3 folded messages, seq ${seqs[0]}..${seqs[2]}, \\d+ chars\\n  seq ${seqs[0]}  assistant text \\(1 line, 22 chars\\): Reading b.rs and c.rs. \\| probe call`))
    assert.equal(index.text.split('\n').filter((l) => /^ {2}seq \d+ {2}/.test(l)).length, 3)
    assert.match(index.text, /\nSearch them with query/)
  })

  it("another session's mark is FOREIGN_MARK and nothing of that session is read; a session with no fold is NOTHING_FOLDED", async () => {
    const { root } = await setup([...exploreAndFold('1', ['secret.rs']), say('done')])
    const owner = await agentOf(root, 'owner')
    await runTurn(owner, 'Explore secret.rs')
    assert.equal(logIndex(owner.session).regions.length, 1)
    const stranger = await agentOf(root, 'stranger')
    await rejectsWith(root.recall.recall(stranger.session, { fold: 1, query: 'E0425' }), 'NOTHING_FOLDED')
    // Once the stranger has a fold of its own, mark 1 is still not its to read.
    const b = new SessionBuilder(stranger.session)
    b.user('hello')
    b.assistant({ calls: [{ id: 's1', name: 'probe', args: { path: 'mine.rs' } }] })
    b.result('s1', fileText('mine.rs'))
    const mark = await root.checkpoint.mark(stranger.session, 'mine')
    b.assistant({ calls: [{ id: 's2', name: 'probe', args: { path: 'mine2.rs' } }] })
    b.result('s2', fileText('mine2.rs'))
    b.assistant({ calls: [{ id: 's3', name: 'rewind' }] })
    await root.rewind.rewind(stranger, undefined, { callId: 's3' })
    assert.equal(mark.id, 2)
    const e = await rejectsWith(root.recall.recall(stranger.session, { fold: 1, query: 'E0425' }), 'FOREIGN_MARK')
    assert.match(e.message, /mark 1 belongs to another session; recall reads only this session's folds \(folds here: 2\)/)
    assert.doesNotMatch(e.message, /secret/)
    // Its own fold reads fine; the owner's content never shows up in any of the stranger's answers.
    for (const args of [{}, { query: 'E0425' }, { query: '/secret/' }, { fold: 'latest' }]) {
      const r = await root.recall.recall(stranger.session, args)
      assert.doesNotMatch(r.text, /secret\.rs/, JSON.stringify(args))
    }
  })

  it('through the tool: errors reach the model classified, and the turn goes on', async () => {
    const { root, agentRequests } = await setup([
      callReply('q0', 'recall', { query: 'x' }), // nothing folded yet
      ...exploreAndFold('1', ['a.rs']),
      callReply('q1', 'recall', { fold: 9 }),
      callReply('q2', 'recall', { query: '/(?<=E)0425/' }),
      callReply('q3', 'recall', { query: '/(unclosed/' }),
      callReply('q4', 'recall', { block: 'auth' }),
      callReply('q5', 'recall', { fold: 1, block: 'auth' }),
      say('done'),
    ])
    const agent = await agentOf(root, 'errors')
    await runTurn(agent, 'go')
    const requests = agentRequests()
    const errorOf = (/** @type {string} */ id) => {
      const r = requests.map((req) => resultFor(req, id)).find(Boolean)
      assert.ok(r, `no result for ${id}`)
      const block = r.content.find((/** @type {any} */ b) => b.type === 'tool-result')
      assert.equal(block.isError, true, `${id} is an error result`)
      return textOf(r)
    }
    assert.match(errorOf('q0'), /NOTHING_FOLDED: nothing in this session has been folded yet/)
    assert.match(errorOf('q1'), /UNKNOWN_FOLD: this session has no fold of checkpoint mark 9; folds here: 1\./)
    assert.match(errorOf('q2'), /BAD_QUERY: the regex \/\(\?<=E\)0425\/ is not valid:[\s\S]*no look-around or backreferences/)
    assert.match(errorOf('q3'), /BAD_QUERY: the regex \/\(unclosed\/ is not valid/)
    assert.match(errorOf('q4'), /UNKNOWN_BLOCK: no block summary of this session covers block "auth"; no block has been summarized yet\./)
    assert.match(errorOf('q5'), /give one of fold, block and compaction, not several/)
    assert.deepEqual(protocolProblems(agent.session.deriveMessages()), [])
  })

  it('an unfolded mark of this session is UNKNOWN_FOLD saying so', async () => {
    const { root } = await setup([...exploreAndFold('1', ['a.rs']), callReply('k2', 'checkpoint', { objective: 'more' }), say('done')])
    const agent = await agentOf(root, 'unfolded')
    await runTurn(agent, 'go')
    const e = await rejectsWith(root.recall.recall(agent.session, { fold: 2 }), 'UNKNOWN_FOLD')
    assert.match(e.message, /checkpoint mark 2 of this session has not been folded yet \(call rewind first\); folds here: 1\./)
  })

  it('without the recall row, reports carry no hint (the promise would be empty)', async () => {
    const { root, agentRequests } = await setup([...exploreAndFold('1', ['a.rs']), say('done')], { mountRecall: false })
    const agent = await agentOf(root, 'no-recall')
    await runTurn(agent, 'go')
    const report = agentRequests().at(-1).messages.find((/** @type {any} */ m) => m.source?.plugin === 'rewind')
    assert.equal(splitReportFrame(textOf(report)).body, REPORT)
  })

  it('a renamed tool and the zh report language shape the hint', async () => {
    const { root, agentRequests } = await setup([...exploreAndFold('1', ['a.rs']), say('done')], {
      recall: { toolName: 'dig' },
      rewind: { reportLanguage: 'zh' },
    })
    const agent = await agentOf(root, 'renamed')
    await runTurn(agent, 'go')
    const report = agentRequests().at(-1).messages.find((/** @type {any} */ m) => m.source?.plugin === 'rewind')
    assert.ok(textOf(report).endsWith(`\n\n${hintLine('dig', { fold: 1 }, 'zh')}`))
    assert.ok(agentRequests()[0].tools.some((/** @type {any} */ t) => t.name === 'dig'))
  })
})

// ---- a block commit -------------------------------------------------------------------------

/**
 * Appends a block summary the way block mode commits one (DSH's compaction bracket: start,
 * summary, the replacement with `blockPtc`, end) over surface nodes [start..end].
 * @param {any} session @param {number} start @param {number} end @param {{closed: string[], remaining: string[]}} ids
 */
function commitBlock(session, start, end, { closed, remaining }) {
  const nodes = [...session.surface.nodes]
  const shadowed = nodes.slice(nodes.indexOf(start), nodes.indexOf(end) + 1)
  const compactionId = `c-${session.seq}`
  const startEvent = session.append('compaction/start', { compactionId, turn: 1 })
  const message = createUserMessage({
    content: [{ type: 'text', text: `<block-summary>\nsummary of ${closed.join(', ')}\n</block-summary>` }],
    source: { ...compactCheckpointSource(compactionId), blockPtc: { remaining, closed, requestSeq: startEvent.seq } },
  })
  const summary = session.append('compaction/summary', {
    compactionId,
    summary: message.content,
    shadowedRange: { start, end },
    shadowedSeqs: shadowed,
    shadowedTokenCount: 10,
    provider: 'scripted',
    model: 'm1',
  })
  const replacement = session.append('user/message', message, { surfaceOp: { op: 'replace', start, end }, sourceEventSeqs: [startEvent.seq, summary.seq, ...shadowed] })
  session.append('compaction/end', { compactionId, turn: 1 })
  return replacement.seq
}

describe('recall after block commits', () => {
  /** `A A B A C B`: block_run_code steps tagged with ids, each with its result. */
  function blocks() {
    const b = new SessionBuilder('blocks')
    b.turn = 1
    b.user('Refactor auth, then the cache.')
    /** @type {number[]} */
    const seqs = []
    for (const [i, id] of ['A', 'A', 'B', 'A', 'C', 'B'].entries()) {
      seqs.push(b.assistant({ calls: [{ id: `c${i}`, name: 'block_run_code', args: { ids: [id], description: `step ${i}`, code: `return read('${id}${i}.ts')` } }] }))
      seqs.push(b.result(`c${i}`, `${id}${i}.ts: export const value${i} = ${i} // TOKEN-${id}-${i}`))
    }
    return { session: b.session, seqs }
  }

  it("through block mode's own planner and commit writer: the summary ends with the hint, recall finds the block's lines", async () => {
    const { root } = await setup([])
    const { session, seqs } = blocks()
    const requestSeq = session.seq
    const outcome = planBlocks(session, ['A'], requestSeq)
    assert.equal(outcome.status, 'commit')
    const written = writeCommit(session, {
      plan: outcome.plan,
      summary: 'A: four steps, values 0, 1 and 3 exported.',
      requestSeq,
      route: { provider: 'scripted', model: 'm1' },
      turn: 1,
      metered: false,
      language: 'en',
      hint: (closed) => recallHint(root, { block: closed[0] }, 'en'),
    })
    assert.equal(written.replaced, 8)
    const summary = session.events[written.seqs.replacement]
    assert.equal(summary.data.source.plugin, 'compact')
    assert.deepEqual(summary.data.source.blockPtc.closed, ['A'])
    assert.ok(summary.data.content[0].text.endsWith(`A: four steps, values 0, 1 and 3 exported.\n\n${hintLine('recall', { block: 'A' })}\n</block-summary>`), summary.data.content[0].text)
    // The model, reading that line, asks for the block: the folded lines come back verbatim.
    const r = await root.recall.recall(session, { block: 'A', query: 'TOKEN-A' })
    assert.equal(r.matches, 3)
    assert.match(r.text, /^3 lines in block A match TOKEN-A:/)
    assert.ok(r.text.includes(`[seq ${seqs[1]} · block_run_code result]\n  1: A0.ts: export const value0 = 0 // TOKEN-A-0`), r.text)
  })

  it('recalls a closed block by id, and a block closed in two steps reaches into the nested summary', async () => {
    const { session, seqs } = blocks()
    // A A B A C B --[A]--> S[B] C B   (range: first A .. last A = steps 0..3)
    const s = commitBlock(session, seqs[0], seqs[7], { closed: ['A'], remaining: ['B'] })
    const a = await recall(session, { block: 'A', query: 'TOKEN-' }, { maxChars: 8000 })
    assert.equal(a.matches, 4)
    assert.match(a.text, /^4 lines in block A match TOKEN-:/)
    assert.match(a.text, /\[seq \d+ · block_run_code result\]\n {2}1: B2\.ts: export const value2 = 2 \/\/ TOKEN-B-2/)
    // B is still open but partly hidden inside S: `block: B` finds S.
    const early = await recall(session, { block: 'B', query: 'TOKEN-B' }, { maxChars: 8000 })
    assert.equal(early.matches, 1)
    // S[B] C B --[B]--> T[C]: closing B recalls everything, S's originals included.
    commitBlock(session, s, seqs[11], { closed: ['B'], remaining: ['C'] })
    const b = await recall(session, { block: 'B', query: '/TOKEN-B-\\d/' }, { maxChars: 8000 })
    assert.equal(b.matches, 2)
    assert.match(b.text, /^2 lines in block B match/)
    const t = logIndex(session).regions.at(-1)
    assert.equal(originalSeqs(session, t).length, 12) // S opened up: all six steps and their results
    assert.ok(!regionTexts(session, t).some((x) => x.text.includes('<block-summary>')))
    // The index names the tool of every call; the calls' arguments are recalled verbatim.
    const args = await recall(session, { block: 'B', query: "read('C4.ts')" }, { maxChars: 8000 })
    assert.match(args.text, /· block_run_code call\]\n {2}1: \{"ids":\["C"\],"description":"step 4","code":"return read\('C4\.ts'\)"\}/)
    await rejectsWith(recall(session, { block: 'Z' }, { maxChars: 8000 }), 'UNKNOWN_BLOCK')
    await rejectsWith(recall(session, { fold: 'latest' }, { maxChars: 8000 }), 'NOTHING_FOLDED')
  })
})

// ---- a session replayed from its log ----------------------------------------------------------

describe('recall on a session replayed from its persisted log', () => {
  it('reads the same lines from a real Session rebuilt from session.jsonl as from the live one', async () => {
    const { root } = await setup([...exploreAndFold('1', ['a.rs', 'b.rs']), say('done')])
    const agent = await agentOf(root, 'persisted')
    await runTurn(agent, 'go')
    const live = await root.recall.recall(agent.session, { query: 'E0425', around: 1 })
    // Persist as the jsonl backend lays it out (a header line, then one event per line), read back.
    const dir = tempDir('dsh-fold-recall-')
    const file = path.join(dir, 'session.jsonl')
    const header = { type: 'session', version: 0, id: agent.session.id, createdAt: 0, cwd: tmpdir() }
    writeFileSync(file, [header, ...agent.session.events].map((e) => JSON.stringify(e)).join('\n') + '\n')
    const [head, ...rows] = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    const replayed = Session.create(SessionId(head.id), rows.flatMap((r) => decodeStorageRecord(r)))
    const again = await recall(replayed, { query: 'E0425', around: 1 }, { maxChars: 8000 })
    assert.equal(again.text, live.text)
    assert.equal(again.matches, 2)
  })

  it('reads a log a real headless DSH host persisted (zstd frames) into a Session and recalls from it', async () => {
    // The e2e scenario 6 log (see __test__/economics.test.mjs): the ledger line the fold hid.
    const file = path.join(path.dirname(new URL(import.meta.url).pathname), 'fixtures', 'economics', 'e2e-recall.session.jsonl.zstd')
    const [head, ...rows] = addon.decodeZstd(readFileSync(file)).toString('utf8').trim().split('\n').map((l) => JSON.parse(l))
    const session = Session.create(SessionId(head.id), rows.flatMap((r) => decodeStorageRecord(r)))
    const r = await recall(session, { fold: 1, query: 'ORCA-5' }, { maxChars: 8000 })
    assert.match(r.text, /^1 line in fold 1 match ORCA-5:\n\[seq \d+ · read result\]\n {2}\d+: .*entry 84: invoice INV-7731 settled by ORCA-5 on 2026-03-14$/)
    const index = await recall(session, { fold: 'latest' }, { maxChars: 8000 })
    assert.match(index.text, /^fold 1: 4 folded messages, seq \d+\.\.\d+, \d+ chars\n {2}seq \d+ {2}read call/)
  })
})

// ---- bounds -------------------------------------------------------------------------------------

describe('recall bounds', () => {
  /** A detached session with one fold of a huge output. @param {string} output */
  async function bigFold(output) {
    const { root } = await setup([])
    const agent = await agentOf(root, `big-${output.length}`)
    const b = new SessionBuilder(agent.session)
    b.turn = 1
    b.user('go')
    await root.checkpoint.mark(agent.session, 'big')
    b.assistant({ calls: [{ id: 'x1', name: 'probe', args: { path: 'big' } }] })
    b.result('x1', output)
    b.assistant({ calls: [{ id: 'x2', name: 'rewind' }] })
    await root.rewind.rewind(agent, undefined, { callId: 'x2' })
    return { root, session: agent.session }
  }

  it('never answers more than maxChars, says how many lines it left out, and clips long lines around the match', async () => {
    const lines = Array.from({ length: 5000 }, (_, i) => `row ${i}: value=${i * 7} status=ok`)
    lines[4321] = `${'x'.repeat(5000)} NEEDLE ${'y'.repeat(5000)}`
    const { root, session } = await bigFold(lines.join('\n'))
    const r = await root.recall.recall(session, { query: 'status=ok' })
    assert.equal(r.matches, 4999)
    assert.ok(r.truncated)
    assert.ok(r.text.length <= 8000, `${r.text.length} chars`)
    assert.ok(r.shown > 50 && r.shown < 4999)
    assert.match(r.text, new RegExp(`\\n… ${4999 - r.shown} more matching lines not shown \\(answer limit 8000 chars\\): narrow the query, or pick one fold or block\\.$`))
    const needle = await root.recall.recall(session, { query: 'NEEDLE' })
    const shownLine = needle.text.split('\n').find((l) => l.startsWith('  4322:'))
    assert.ok(shownLine && shownLine.length < 600, shownLine?.length)
    assert.match(shownLine, /^ {2}4322: …x+ NEEDLE y+…$/)
    // The index is bounded the same way.
    const index = await recall(session, { fold: 1 }, { maxChars: 500 })
    assert.ok(index.text.length <= 500, `${index.text.length} chars`)
  })

  it('a pattern that backtracks exponentially elsewhere runs to the end here', async () => {
    const { root, session } = await bigFold(`${'a'.repeat(200_000)}!`)
    for (const query of ['/(a+)+$/', '/^(a|aa)*$/', '/^(a*)*$/']) {
      const r = await root.recall.recall(session, { query })
      assert.equal(r.matches, 0, query)
    }
    const huge = await rejectsWith(root.recall.recall(session, { query: '/\\w{1000}{1000}/' }), 'BAD_QUERY')
    assert.match(huge.message, /compiles to more than \d+ bytes/)
    await rejectsWith(root.recall.recall(session, { query: 'q'.repeat(1025) }), 'BAD_QUERY')
  })

  it('every error code is one of RECALL_ERROR_CODES', () => {
    assert.deepEqual([...RECALL_ERROR_CODES].sort(), ['BAD_QUERY', 'FOREIGN_MARK', 'INVALID_ARGUMENT', 'NOTHING_FOLDED', 'UNKNOWN_BLOCK', 'UNKNOWN_COMPACTION', 'UNKNOWN_FOLD'])
  })
})

describe("recall's regex engine as the addon ships it", () => {
  const texts = ['错误：解析失败 in src/解析器.rs 第１２行', 'ÉTÉ est là\u3000fin', 'Ошибка: ФАЙЛ']
  /** @param {string} query */
  const lines = (query) => {
    const found = addon.recallSearch(texts, query)
    const out = []
    for (let w = 0; w < found.hits.length; w += 4) out.push(Array.from(found.hits.slice(w, w + 4)))
    return out
  }

  it('matches Chinese (and other non-ASCII) text as before the Unicode tables were trimmed', () => {
    // The same figures as the core's test, which runs with the full tables.
    assert.deepEqual(lines('解析'), [[0, 0, 3, 5]])
    assert.deepEqual(lines('/解析.败/'), [[0, 0, 3, 7]])
    assert.deepEqual(lines('/^\\w+/'), [[0, 0, 0, 2], [1, 0, 0, 3], [2, 0, 0, 6]])
    assert.deepEqual(lines('/第\\d+行/'), [[0, 0, 22, 26]])
    assert.deepEqual(lines('/là\\sfin/'), [[1, 0, 8, 14]])
    assert.deepEqual(lines('/\\bsrc\\b/'), [[0, 0, 11, 14]])
    assert.deepEqual(lines('/été/i'), [[1, 0, 0, 3]])
    assert.deepEqual(lines('файл'), [[2, 0, 8, 12]])
    assert.deepEqual(lines('/ошибка/i'), [[2, 0, 0, 6]])
  })

  it("folds case by Unicode's simple case folding from its own table, before a class is negated", () => {
    const folded = ['KELVIN \u212A and long \u017F', 'ΣΊΣΥΦΟΣ ς', 'A', 'b']
    const found = (/** @type {string} */ q) => Array.from(addon.recallSearch(folded, q).hits)
    // The Kelvin sign folds with k, the long s with s, final sigma with Σ and σ (the regex crate's folding).
    assert.deepEqual(found('/\u{212A}/i'), [0, 0, 0, 1])
    assert.deepEqual(found('long s'), [0, 0, 13, 19])
    assert.deepEqual(found('σ'), [1, 0, 0, 1])
    // [^a] under the i flag names neither a nor A.
    assert.deepEqual(found('/^[^a]$/i'), [3, 0, 0, 1])
    // An inline (?i) is refused with what to write instead.
    assert.throws(() => addon.recallSearch(folded, '/(?i)abc/'), (e) => /** @type {any} */ (e).code === 'INVALID_ARGUMENT' && /\(\/pattern\/i\)/.test(/** @type {any} */ (e).message))
  })

  it('refuses script and category classes, which the binary leaves out, as a coded bad query', () => {
    for (const query of ['/\\p{Han}/', '/\\p{Greek}/', '/\\p{Lu}/']) {
      assert.throws(() => addon.recallSearch(texts, query), (e) => /** @type {any} */ (e).code === 'INVALID_ARGUMENT' && /is not valid/.test(/** @type {any} */ (e).message), query)
    }
  })
})
