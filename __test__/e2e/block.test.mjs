/**
 * @module __test__/e2e/block
 *
 * Contract: block mode end to end. A REAL DeepSeek Harness host (pinned, Node 22, from the
 * harness) boots the `headless` profile with dsh-fold installed from its packed tarballs,
 * `DSH_TOOLS_MODE=both`, and the block row (`{id: 'block-mode', name: 'dsh-fold/block'}`) in
 * a patch overlay; the model is the protocol-validating scripted server on 127.0.0.1 (a
 * request whose tool calls and results do not pair is answered HTTP 400 and recorded).
 *
 * 1. Two blocks open at once; one is closed from inside its own program (pending, then
 *    committed right after that program's result), the other later from a third block's
 *    program (committed at once). Every request is checked (only `block_run_code` on the
 *    wire, the summaries in place of the blocks), and the persisted `session.jsonl.zstd` is
 *    decoded and checked for the four-event brackets. Along the way: a folder's AGENTS.md,
 *    injected when a program reads a file there, is summarized with its block and is NOT
 *    injected again at the next steps; it comes back only when a file there is read again.
 * 2. Restart: the host is killed (SIGKILL) while a program that asked for its own block's
 *    summary is still running; a second host resumes the persisted session, and the pending
 *    summary is committed from the log before the resumed agent's first request.
 * 3. A host whose tools are not presented as `both` refuses the row at boot, naming why.
 * Set DSH_FOLD_SKIP_E2E=1 to skip; DSH_E2E_ECHO=1 echoes the host's output.
 */
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'

import { pack } from '../../scripts/pack.mjs'
import { ensureHost } from './harness/install.mjs'
import { readSessionLog, runHost, sessionLogs } from './harness/host.mjs'
import { isTitleRequest, sequence, startModelServer } from './harness/model-server.mjs'
import { resumeRows } from './harness/resume.mjs'

const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the end-to-end suite (real DSH host) is skipped' : false
const HOST_RUN_MS = 150_000
const TEST_MS = 300_000
const BLOCK_ROW = { id: 'block-mode', name: 'dsh-fold/block' }
const ENV = { DSH_TOOLS_MODE: 'both' }

/** A wire message's text. @param {any} m */
const text = (m) => (typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? m.content.map((p) => p?.text ?? '').join('') : '')
/** A compact picture of a wire message list. @param {any[]} messages */
const shape = (messages) =>
  messages
    .map((m) => (m.tool_calls ? `assistant(${m.tool_calls.map((c) => c.function.name).join(',')})` : m.role === 'user' && text(m).startsWith('<block-summary>') ? 'summary' : m.role))
    .join(' ')
/** The block-summary texts of a message list. @param {any[]} messages */
const summaries = (messages) => messages.filter((m) => m.role === 'user' && text(m).startsWith('<block-summary>')).map(text)
/** A `block_run_code` tool call for the scripted server. */
const block = (/** @type {string} */ id, /** @type {string[]} */ ids, /** @type {string} */ code) => ({
  toolCalls: [{ id, name: 'block_run_code', arguments: { ids, description: `program ${id}`, code } }],
})
/** The tool message answering call `id`. @param {any[]} messages @param {string} id */
const answer = (messages, id) => messages.find((m) => m.role === 'tool' && m.tool_call_id === id)

/** The block-mode commits in a decoded log, each as its four events. @param {any[]} events */
function brackets(events) {
  return events
    .filter((e) => e.type === 'user/message' && e.data.source?.blockPtc)
    .map((replacement) => ({ start: events[replacement.seq - 2], summary: events[replacement.seq - 1], replacement, end: events[replacement.seq + 1] }))
}

/** Asserts one commit's four events are DSH's compaction bracket, adjacent and consistent. @param {any} c */
function assertBracket(c) {
  assert.deepEqual([c.start.type, c.summary.type, c.replacement.type, c.end.type], ['compaction/start', 'compaction/summary', 'user/message', 'compaction/end'])
  const id = c.replacement.data.source.compactionId
  for (const e of [c.start, c.summary, c.end]) assert.equal(e.data.compactionId, id)
  assert.equal(c.replacement.data.source.plugin, 'compact')
  assert.equal(c.end.data.error, undefined)
  const seqs = c.summary.data.shadowedSeqs
  assert.deepEqual(c.summary.data.shadowedRange, { start: seqs[0], end: seqs.at(-1) })
  assert.deepEqual(c.replacement.surfaceOp, { op: 'replace', start: seqs[0], end: seqs.at(-1) })
  assert.deepEqual(c.replacement.sourceEventSeqs, [c.start.seq, c.summary.seq, ...seqs])
  assert.ok(c.summary.data.shadowedTokenCount > 0)
  assert.deepEqual(c.summary.data.summary, c.replacement.data.content)
}

describe('block mode end to end: a real headless DSH host in Code Mode (`both`)', { skip: SKIP }, () => {
  /** @type {{root: string, platform: string}} */
  let tarballs
  /** @type {string} */
  let packDir
  /** @type {Array<() => unknown>} */
  const cleanups = []

  before(() => {
    ensureHost()
    packDir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-pack-'))
    tarballs = pack(packDir)
  }, { timeout: 45 * 60_000 })

  after(async () => {
    for (const clean of cleanups.reverse()) await clean()
    if (packDir) rmSync(packDir, { recursive: true, force: true })
  })

  /**
   * One host run against a scripted model.
   * @param {{task: string, agent: any[], cwd?: string, rows?: any[], env?: object, root?: string, onStart?: (pid: number) => void, install?: boolean}} o
   */
  async function run({ task, agent, cwd, rows = [BLOCK_ROW], env = ENV, root, onStart, install = true }) {
    const server = await startModelServer(sequence(agent, { title: 'E2E block mode' }))
    cleanups.push(() => server.close())
    const result = await runHost({
      task,
      baseUrl: server.url,
      bundles: install ? [tarballs.root, tarballs.platform] : [],
      patchRows: rows,
      env: /** @type {Record<string, string>} */ (env),
      cwd,
      root,
      onStart,
      timeoutMs: HOST_RUN_MS,
    })
    await server.close()
    if (process.env.DSH_E2E_KEEP !== '1') cleanups.push(result.cleanup)
    const agentRequests = server.requests.filter((b) => !isTitleRequest(b))
    const context = `host exit ${result.code} (signal ${result.signal}, timedOut ${result.timedOut})\nstdout: ${result.stdout}\nstderr: ${result.stderr.slice(-4000)}\nviolations: ${JSON.stringify(server.violations)}\nrequests:\n${agentRequests.map((b, i) => `  #${i}: ${shape(b.messages ?? [])}`).join('\n')}`
    return { ...result, server, agentRequests, context }
  }

  test('1. two blocks: one closed from inside itself, one later; the persisted log holds both brackets', { timeout: TEST_MS }, async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-fold-e2e-block-'))
    cleanups.push(() => rmSync(cwd, { recursive: true, force: true }))
    mkdirSync(path.join(cwd, '.git'))
    mkdirSync(path.join(cwd, 'sub'))
    const notes = path.join(cwd, 'notes.txt')
    const data = path.join(cwd, 'sub', 'data.txt')
    writeFileSync(notes, 'alpha: the flux capacitor needs 1.21 GW\nbeta: ZEBRA-42 is the build id\ngamma: ship on Friday\n')
    writeFileSync(data, 'DATA-99 lives in sub\n')
    writeFileSync(path.join(cwd, 'sub', 'AGENTS.md'), 'Sub rule: quote DATA values in capitals.\n')
    const RULE = /Sub rule: quote DATA values in capitals/
    const SUB_SUMMARY = 'sub/data.txt holds DATA-99; sub/AGENTS.md: quote DATA values in capitals.'
    const NOTES_SUMMARY = 'notes.txt: the build id is ZEBRA-42 (3 lines).'

    /** What precedes the work in every request: the system prompt, the task and the host's context. */
    let head = ''
    const r = await run({
      task: 'What is the build id, and what does sub/data.txt hold?',
      cwd,
      agent: [
        (/** @type {any} */ body) => {
          head = shape(body.messages)
          assert.match(head, /^system user/)
          return block('call_n1', ['notes'], `return await tools.read({file_path: ${JSON.stringify(notes)}})`)
        },
        block('call_s1', ['sub'], `return await tools.read({file_path: ${JSON.stringify(data)}})`),
        (/** @type {any} */ body) => {
          // Both blocks are open; the folder's instructions arrived after the read in it.
          assert.match(text(answer(body.messages, 'call_n1')), /ZEBRA-42 is the build id/)
          assert.ok(body.messages.some((/** @type {any} */ m) => m.role === 'user' && RULE.test(text(m))), shape(body.messages))
          return block('call_s2', ['sub'], `await tools.bash({command: 'echo sub-marker-5', description: 'Print a marker'}); return await tools.block_summary({ids: ['sub'], summary: ${JSON.stringify(SUB_SUMMARY)}})`)
        },
        (/** @type {any} */ body) => {
          // Block `sub` (both programs, their results and the instructions between) is one summary.
          assert.equal(shape(body.messages), `${head} assistant(block_run_code) tool summary`)
          assert.ok(!body.messages.some((/** @type {any} */ m) => RULE.test(text(m)) && !text(m).startsWith('<block-summary>')), 'the instructions came back')
          assert.ok(!body.messages.some((/** @type {any} */ m) => /sub-marker-5|DATA-99 lives/.test(text(m))))
          assert.match(summaries(body.messages)[0], new RegExp(SUB_SUMMARY.replace(/[.*]/g, '\\$&')))
          return block('call_r1', ['report'], `return await tools.block_summary({ids: ['notes'], summary: ${JSON.stringify(NOTES_SUMMARY)}})`)
        },
        (/** @type {any} */ body) => {
          assert.equal(shape(body.messages), `${head} summary summary assistant(block_run_code) tool`)
          const result = JSON.parse(text(answer(body.messages, 'call_r1')))
          assert.equal(result.replaced, 2)
          assert.ok(result.tokensFreed > 0)
          assert.equal(result.pending, undefined)
          assert.ok(!body.messages.some((/** @type {any} */ m) => RULE.test(text(m)) && !text(m).startsWith('<block-summary>')), 'the instructions came back without a touch')
          return block('call_r2', ['report'], `return await tools.read({file_path: ${JSON.stringify(data)}})`)
        },
        (/** @type {any} */ body) => {
          // Reading in the folder again brings its instructions back.
          assert.ok(body.messages.some((/** @type {any} */ m) => m.role === 'user' && !text(m).startsWith('<block-summary>') && RULE.test(text(m))), shape(body.messages))
          return { content: 'The build id is ZEBRA-42; sub/data.txt holds DATA-99.' }
        },
      ],
    })
    assert.equal(r.code, 0, r.context)
    assert.match(r.stdout, /ZEBRA-42; sub\/data\.txt holds DATA-99/, r.context)
    assert.deepEqual(r.server.violations, [], r.context)
    assert.equal(r.agentRequests.length, 6, r.context)
    for (const body of r.agentRequests) assert.deepEqual(body.tools.map((/** @type {any} */ t) => t.function.name), ['block_run_code'])
    assert.match(text(r.agentRequests[0].messages[0]), /## Block mode/)

    // The persisted log: two brackets, in order, each adjacent and consistent.
    const logs = sessionLogs(r.dshHome)
    assert.equal(logs.length, 1, JSON.stringify(logs))
    assert.ok(logs[0].endsWith('session.jsonl.zstd'))
    const { events } = readSessionLog(logs[0])
    assert.ok(events.every((e, i) => e.seq === i))
    const [sub, notesCommit] = brackets(events)
    for (const c of [sub, notesCommit]) assertBracket(c)
    assert.deepEqual(sub.replacement.data.source.blockPtc.closed, ['sub'])
    assert.deepEqual(notesCommit.replacement.data.source.blockPtc.closed, ['notes'])
    // `sub` was requested from inside call_s2 and landed right after its result.
    const resultOf = (/** @type {string} */ id) => events.find((e) => e.type === 'tool/result' && e.data.message.content[0].toolCallId === id)
    assert.equal(sub.start.seq, resultOf('call_s2').seq + 1)
    const subDispatch = events.find((e) => e.type === 'tool/code-dispatch' && e.data.name === 'block_summary' && e.data.rootCallId === 'call_s2')
    assert.equal(JSON.parse(subDispatch.data.content[0].text).pending, true)
    assert.equal(sub.replacement.data.source.blockPtc.requestSeq, JSON.parse(subDispatch.data.content[0].text).requestSeq)
    // The instructions message was among what `sub` replaced.
    const instructions = events.find((e) => e.type === 'user/message' && e.data.source?.kind === 'agent-instructions' && RULE.test(JSON.stringify(e.data.content)))
    assert.ok(sub.summary.data.shadowedSeqs.includes(instructions.seq))
    // `notes` was closed from call_r1's program, before its result.
    assert.ok(notesCommit.end.seq < resultOf('call_r1').seq)
    assert.equal(notesCommit.summary.data.provider, sub.summary.data.provider)
  })

  test('2. restart: a summary pending when the host was killed is committed from the persisted log when the session is resumed', { timeout: TEST_MS }, async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-fold-e2e-block-'))
    cleanups.push(() => rmSync(cwd, { recursive: true, force: true }))
    const notes = path.join(cwd, 'notes.txt')
    writeFileSync(notes, 'alpha: the flux capacitor needs 1.21 GW\nbeta: ZEBRA-42 is the build id\n')
    const SUMMARY = 'notes.txt: the build id is ZEBRA-42.'
    const root = mkdtempSync(path.join(tmpdir(), 'dsh-e2e-'))
    const dshHome = path.join(root, 'home', '.dsh')
    /** @type {number | undefined} */
    let pid
    /** @type {any[]} */
    let logged = []
    // Kill the host (SIGKILL, its whole process group) once the persisted log holds the pending
    // answer and the program is stuck in its next sub-call.
    const killWhenLogged = async () => {
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 200))
        const [file] = sessionLogs(dshHome)
        if (!file) continue
        logged = readSessionLog(file).events
        const pending = logged.some((e) => e.type === 'tool/code-dispatch' && e.data.name === 'block_summary')
        const stuck = logged.some((e) => e.type === 'tool/code-dispatch-start' && e.data.name === 'bash')
        if (pending && stuck) return process.kill(-(/** @type {number} */ (pid)), 'SIGKILL')
      }
    }
    /** @type {Promise<unknown> | undefined} */
    let killer
    const first = await run({
      task: 'What is the build id?',
      cwd,
      root,
      onStart: (p) => (pid = p),
      agent: [
        block('call_a1', ['A'], `return await tools.read({file_path: ${JSON.stringify(notes)}})`),
        () => {
          killer = killWhenLogged()
          return block('call_a2', ['A'], `const s = await tools.block_summary({ids: ['A'], summary: ${JSON.stringify(SUMMARY)}}); await tools.bash({command: 'sleep 600', description: 'Wait'}); return s`)
        },
      ],
    })
    await killer
    assert.equal(first.signal, 'SIGKILL', first.context)
    const [file] = sessionLogs(dshHome)
    const crashed = readSessionLog(file)
    const answer = JSON.parse(crashed.events.find((e) => e.type === 'tool/code-dispatch' && e.data.name === 'block_summary').data.content[0].text)
    assert.equal(answer.pending, true)
    assert.deepEqual(brackets(crashed.events), [], 'the summary landed before the kill')
    assert.ok(!crashed.events.some((e) => e.type === 'tool/result' && e.data.message.content[0].toolCallId === 'call_a2'))

    // A second host resumes the session: DSH's persistence closes the interrupted turn, the
    // plugin finds the pending request in the log and commits it before the agent's request.
    const second = await run({
      task: 'Go on.',
      cwd,
      root,
      install: false,
      rows: [BLOCK_ROW, ...resumeRows(crashed.header.id)],
      agent: [
        (/** @type {any} */ body) => {
          assert.deepEqual(summaries(body.messages).length, 1, shape(body.messages))
          assert.ok(summaries(body.messages)[0].includes(SUMMARY))
          assert.ok(!body.messages.some((/** @type {any} */ m) => m.role === 'tool' || m.tool_calls), shape(body.messages))
          assert.ok(!body.messages.some((/** @type {any} */ m) => /ZEBRA-42 is the build id/.test(text(m))), shape(body.messages))
          assert.equal(text(body.messages.at(-1)), 'Go on.')
          return { content: 'Resumed: the build id is ZEBRA-42.' }
        },
      ],
    })
    assert.equal(second.code, 0, second.context)
    assert.match(second.stdout, /Resumed: the build id is ZEBRA-42\./, second.context)
    assert.deepEqual(second.server.violations, [], second.context)
    assert.equal(second.agentRequests.length, 1, second.context)

    const { events } = readSessionLog(file)
    const endSeed = events.findLast((e) => e.type === 'session/end-seed')
    assert.ok(endSeed, 'no restore boundary in the log')
    const [commit] = brackets(events)
    assertBracket(commit)
    assert.ok(commit.start.seq > endSeed.seq)
    assert.equal(commit.start.data.turn, null, 'committed between turns: a standalone bracket')
    assert.equal(commit.replacement.data.source.blockPtc.requestSeq, answer.requestSeq)
    // The interrupted program's synthetic result (DSH's closer) was replaced with the block.
    const closer = events.find((e) => e.type === 'tool/result' && e.data.message.content[0].toolCallId === 'call_a2')
    assert.ok(commit.summary.data.shadowedSeqs.includes(closer.seq))
    const nextTurn = events.findLast((e) => e.type === 'turn/start')
    assert.ok(commit.end.seq < nextTurn.seq)
  })

  test('3. a host presenting tools natively refuses the block row at boot, naming DSH_TOOLS_MODE=both', { timeout: TEST_MS }, async () => {
    const r = await run({ task: 'never runs', env: {}, agent: [] })
    assert.notEqual(r.code, 0, r.context)
    assert.match(r.stderr, /dsh-fold\/block: the host presents tools as "native".*DSH_TOOLS_MODE=both/s, r.context)
    assert.equal(r.agentRequests.length, 0)
  })
})
