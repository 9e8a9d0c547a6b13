/**
 * @module __test__/e2e/e2e
 *
 * Contract: the end-to-end suite. A REAL DeepSeek Harness host (pinned, installed by the
 * harness into `.e2e-cache/` on first run, on Node 22) boots the `headless` profile with
 * dsh-fold installed the way a user installs it: `npm pack` of the root package and of the
 * linux-x64-gnu platform package (`scripts/pack.mjs`; nothing is built), both tarballs added
 * to a fresh temp profile's package.json, and the bundle joining `dsh.profile.bundles`.
 * `before` also installs the tarballs into an empty project with lifecycle scripts on and
 * no Rust toolchain on PATH (`verifyInstall`), and loads the addon from there alone. The model is a scripted OpenAI-compatible server on
 * 127.0.0.1 that rejects (HTTP 400) any request whose tool calls and results do not pair.
 * Each scenario asserts on what the model was sent and on the store file
 * `$DSH_HOME/storages/checkpoint.json`; the first also reads the durable session log and
 * proves, from the live host's memory map, that the addon came from the profile's install.
 *
 * Requests of one run fall in three classes: session-title requests (`isTitleRequest`),
 * report requests (the rewind summarizer's call: its last message is the report
 * instruction of `plugin/fold/summarize.js`), and agent requests (everything else, scripted in
 * order). Set DSH_FOLD_SKIP_E2E=1 to skip the suite; DSH_E2E_ECHO=1 echoes the host's output.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { execFileSync } from 'node:child_process'

import { hintLine } from '../../plugin/recall/hint.js'
import { reportFrame } from '../../plugin/fold/rewind.js'
import { splitReportFrame } from '../../plugin/fold/words.js'
import { pack, verifyInstall } from '../../scripts/pack.mjs'
import { readStoreFile } from '../reliability/helpers.mjs'
import { ensureHost } from './harness/install.mjs'
import { runHost, readSessionLog, sessionLogs } from './harness/host.mjs'
import { isTitleRequest, sequence, startModelServer } from './harness/model-server.mjs'

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the end-to-end suite (real DSH host) is skipped' : false
/** The first words of the report instruction (`INSTRUCTIONS` in plugin/fold/summarize.js, en and zh). */
const REPORT_INSTRUCTION = /^(Write a report that will replace the exploration above|请撰写一份报告，用来在你的上下文中替换上面的探索过程)/
const HOST_RUN_MS = 150_000
const TEST_MS = 240_000

// ---- what the model was sent ---------------------------------------------------------------

/** A wire message's text (string content or an array of text parts). @param {any} m */
const text = (m) => (typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? m.content.map((p) => p?.text ?? '').join('') : '')
/** @param {any} body */
const isReportRequest = (body) => body?.messages?.at(-1)?.role === 'user' && REPORT_INSTRUCTION.test(text(body.messages.at(-1)))
/** Names of the tool calls in a message list. @param {any[]} messages */
const callNames = (messages) => messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function.name))
/** The tool message answering the call named `name` (first one). @param {any[]} messages @param {string} name */
function resultOf(messages, name) {
  const call = messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.function.name === name)
  return call && messages.find((m) => m.role === 'tool' && m.tool_call_id === call.id)
}
/** A compact picture of a message list, for assertion messages. @param {any[]} messages */
const shape = (messages) =>
  messages.map((m) => m.role + (m.tool_calls ? `(${callNames([m]).join(',')})` : '') + (m.role === 'user' ? `[${text(m).slice(0, 40)}]` : '')).join(' ')

/**
 * A model script: titles answered, report requests answered from `reports` in order,
 * every other request from `agent` (the harness's `sequence`, which fails loudly past its end).
 * @param {Array<object|Function>} agent @param {Array<object|Function>} reports
 */
function script(agent, reports) {
  const agentTurns = sequence(agent, { title: 'E2E fold' })
  let r = 0
  return (/** @type {any} */ body, /** @type {number} */ index) => {
    if (!isReportRequest(body)) return agentTurns(body, index) // titles are answered there too
    const step = reports[r++]
    if (step === undefined) throw new Error(`report request ${index} is report call ${r} of ${reports.length} scripted`)
    return typeof step === 'function' ? step(body, r - 1) : step
  }
}

// ---- what was stored ------------------------------------------------------------------------

/** @param {string} dshHome */
const storePath = (dshHome) => path.join(dshHome, 'storages', 'checkpoint.json')
/** @param {string} dshHome @returns {{unit: {name: string, version: number}, global: any, tables: {marks?: Record<string, any>}}} */
const readStore = (dshHome) => JSON.parse(readFileSync(storePath(dshHome), 'utf8'))
/** The marks as any reader sees them: the store file with its journal replayed. @param {string} dshHome */
const marksOf = (dshHome) => [...readStoreFile(storePath(dshHome)).marks.values()]

/** The run's one durable session log. @param {string} dshHome */
function sessionLog(dshHome) {
  const logs = sessionLogs(dshHome)
  assert.equal(logs.length, 1, `expected one session log, found ${JSON.stringify(logs)}`)
  return readSessionLog(logs[0])
}

/** The native files mapped by the live host process running in `cwd` (Linux /proc). @param {string} cwd */
function hostNativeModules(cwd) {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readlinkSync(`/proc/${pid}/cwd`) !== cwd) continue
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('bin/host/boot.mjs')) continue
      const maps = readFileSync(`/proc/${pid}/maps`, 'utf8')
      return [...new Set(maps.split('\n').map((l) => l.split(/\s+/).slice(5).join(' ')).filter((f) => f.endsWith('.node')))]
    } catch {
      // a process that exited (or is not ours) while we looked
    }
  }
  throw new Error(`no live host process found with cwd ${cwd}`)
}

// ---- the suite ------------------------------------------------------------------------------

describe('dsh-fold end to end: packed tarballs in a real headless DSH host', { skip: SKIP }, () => {
  /** @type {{root: string, platform: string}} */
  let tarballs
  /** @type {string} */
  let packDir
  /** @type {Array<() => unknown>} */
  const cleanups = []

  before(() => {
    const t0 = performance.now()
    const host = ensureHost()
    packDir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-pack-'))
    tarballs = pack(packDir)
    // As an npm user installs them: lifecycle scripts on, no cargo/rustc on PATH; loads from the install alone.
    verifyInstall(tarballs)
    process.stderr.write(`[e2e] host ${host.hostDir}, tarballs ${JSON.stringify(tarballs)}, ready in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
  }, { timeout: 45 * 60_000 })

  after(async () => {
    for (const clean of cleanups.reverse()) await clean()
    if (packDir) rmSync(packDir, { recursive: true, force: true })
  })

  /**
   * One host run against a scripted model; the run's temp root is removed after the suite
   * (kept when DSH_E2E_KEEP=1, for post-mortems).
   * @param {{task: string, agent: Array<object|Function>, reports?: Array<object|Function>, cwd?: string}} options
   */
  async function run({ task, agent, reports = [], cwd }) {
    const server = await startModelServer(script(agent, reports))
    cleanups.push(() => server.close())
    const result = await runHost({ task, baseUrl: server.url, bundles: [tarballs.root, tarballs.platform], cwd, timeoutMs: HOST_RUN_MS })
    await server.close()
    if (process.env.DSH_E2E_KEEP !== '1') cleanups.push(result.cleanup)
    else process.stderr.write(`[e2e] kept ${result.root}\n`)
    const agentRequests = server.requests.filter((b) => !isTitleRequest(b) && !isReportRequest(b))
    const reportRequests = server.requests.filter(isReportRequest)
    const context = `host exit ${result.code} (signal ${result.signal}, timedOut ${result.timedOut})\nstdout: ${result.stdout}\nstderr: ${result.stderr.slice(-4000)}\nviolations: ${JSON.stringify(server.violations)}\nrequests:\n${server.requests.map((b, i) => `  #${i} ${isTitleRequest(b) ? 'title' : isReportRequest(b) ? 'report' : 'agent'}: ${shape(b.messages ?? [])}`).join('\n')}`
    return { ...result, server, agentRequests, reportRequests, context }
  }

  test('1. checkpoint → read a file → shell command → rewind → final answer: the fold replaces the exploration', { timeout: TEST_MS }, async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-fold-e2e-cwd-'))
    cleanups.push(() => rmSync(cwd, { recursive: true, force: true }))
    const notes = path.join(cwd, 'notes.txt')
    writeFileSync(notes, 'alpha: the flux capacitor needs 1.21 GW\nbeta: ZEBRA-42 is the build id\ngamma: ship on Friday\n')
    const REPORT = '## Findings\nnotes.txt has 3 lines; the build id is ZEBRA-42.\n## Recommended Next Step\nAnswer the user.'
    /** @type {string[]} */
    let natives = []

    const r = await run({
      task: 'What build id does notes.txt record, and how many lines does it have?',
      cwd,
      agent: [
        { content: 'Marking the investigation.', toolCalls: [{ id: 'call_ckpt', name: 'checkpoint', arguments: { objective: 'build id and line count of notes.txt' } }] },
        { toolCalls: [{ id: 'call_read', name: 'read', arguments: { file_path: notes } }] },
        { toolCalls: [{ id: 'call_bash', name: 'bash', arguments: { command: 'wc -l notes.txt', description: 'Count lines of notes.txt' } }] },
        { content: 'Folding the investigation.', toolCalls: [{ id: 'call_rewind', name: 'rewind', arguments: {} }] },
        { content: 'The build id is ZEBRA-42; notes.txt has 3 lines.' },
      ],
      reports: [
        (/** @type {any} */ body) => {
          natives = hostNativeModules(cwd) // the host is alive and waiting for this answer
          return { content: REPORT, reasoning: 'Summarizing.' }
        },
      ],
    })
    assert.equal(r.code, 0, r.context)
    assert.match(r.stdout, /ZEBRA-42; notes\.txt has 3 lines/, r.context)
    assert.deepEqual(r.server.violations, [], r.context)

    // The addon the host loaded is the platform package's binary inside the temp profile.
    assert.ok(natives.length > 0, 'the host mapped no .node file')
    // Ours by file name (dsh-fold.<platform>.node): a path may hold 'dsh-fold' anywhere, as npm
    // test's private TMPDIR (dsh-fold-npm-test-*) does for the host's own natives it extracts there.
    const ours = natives.filter((f) => /^dsh-fold\.[^/]+\.node$/.test(path.basename(f)))
    assert.deepEqual(ours, [path.join(r.profileDir, 'node_modules', 'dsh-fold-linux-x64-gnu', 'dsh-fold.linux-x64-gnu.node')], `mapped: ${natives.join(', ')}`)
    // (The host's own natives, e.g. node-pty, come from the pinned host install in .e2e-cache.)
    const fromRepo = natives.filter((f) => f.startsWith(REPO + path.sep) && !f.startsWith(path.join(REPO, '.e2e-cache') + path.sep))
    assert.deepEqual(fromRepo, [], 'a native module was loaded from the repo checkout')
    const installed = JSON.parse(readFileSync(path.join(r.profileDir, 'package.json'), 'utf8'))
    assert.ok(installed.dsh.profile.bundles.includes('dsh-fold'), 'dsh-fold did not join dsh.profile.bundles')
    assert.ok(!installed.dsh.profile.bundles.includes('dsh-fold-linux-x64-gnu'))

    // What the exploration sent: the real tools ran.
    assert.equal(r.agentRequests.length, 5, r.agentRequests.map((b) => shape(b.messages)).join('\n'))
    const [, afterCheckpoint, afterRead, afterBash, afterFold] = r.agentRequests
    assert.match(text(resultOf(afterCheckpoint.messages, 'checkpoint')), /^Checkpoint 1 set; call `rewind` when the investigation is done\.$/)
    assert.match(text(resultOf(afterRead.messages, 'read')), /ZEBRA-42 is the build id/)
    assert.match(text(resultOf(afterBash.messages, 'bash')), /\b3 notes\.txt/)

    // The report request saw the exploration, then the instruction.
    assert.equal(r.reportRequests.length, 1)
    const reportMessages = r.reportRequests[0].messages
    assert.ok(callNames(reportMessages).includes('read') && callNames(reportMessages).includes('bash'), shape(reportMessages))
    assert.ok(reportMessages.some((m) => m.role === 'tool' && /ZEBRA-42 is the build id/.test(text(m))))

    // The request after the fold: the report instead of the exploration, the checkpoint pair kept.
    const folded = afterFold.messages
    assert.deepEqual(callNames(folded), ['checkpoint', 'rewind'], shape(folded))
    assert.ok(!folded.some((m) => /ZEBRA-42 is the build id|3 notes\.txt/.test(text(m))), `the exploration is still visible: ${shape(folded)}`)
    assert.match(text(resultOf(folded, 'checkpoint')), /^Checkpoint 1 set;/)
    const at = (/** @type {(m: any) => boolean} */ p) => folded.findIndex(p)
    const ckptCall = at((m) => callNames([m]).includes('checkpoint'))
    // The bundle mounts `recall`, so the report ends with its hint line.
    const report = at((m) => m.role === 'user' && text(m) === `${reportFrame({ id: 1, objective: 'build id and line count of notes.txt' }, false)}${REPORT}\n\n${hintLine('recall', { fold: 1 })}`)
    const rewindCall = at((m) => callNames([m]).includes('rewind'))
    assert.ok(ckptCall >= 0 && report > ckptCall + 1 && rewindCall > report, shape(folded))
    assert.equal(folded[ckptCall + 1].role, 'tool')
    assert.match(text(resultOf(folded, 'rewind')), /^Checkpoint 1 folded: the \d+ messages? of its investigation \(\d+ chars\) (is|are) replaced by your report, above \(\d+ chars\)\. Continue the task;/)

    // The store: unit checkpoint, one mark, folded.
    const store = readStore(r.dshHome)
    assert.deepEqual(store.unit, { name: 'checkpoint', version: store.unit.version })
    const marks = marksOf(r.dshHome)
    assert.equal(marks.length, 1)
    assert.equal(marks[0].id, 1)
    assert.equal(marks[0].objective, 'build id and line count of notes.txt')
    assert.equal(typeof marks[0].foldedAt, 'number')
    assert.ok(marks[0].foldedAt >= marks[0].createdAt)

    // The durable session log still holds the exploration, and the replacement.
    const { header, events } = sessionLog(r.dshHome)
    assert.equal(marks[0].sessionId, header.id)
    assert.ok(events.every((e, i) => e.seq === i))
    const calls = events.filter((e) => e.type === 'assistant/message').flatMap((e) => e.data.message.content.filter((b) => b.type === 'tool-call'))
    assert.deepEqual(calls.map((c) => c.name), ['checkpoint', 'read', 'bash', 'rewind'])
    const results = events.filter((e) => e.type === 'tool/result').map((e) => e.data.message)
    const readCall = calls.find((c) => c.name === 'read')
    const answers = (/** @type {any} */ m) => (m.callId ?? m.source?.callId) === readCall.id
    assert.match(JSON.stringify(results.find(answers)), /ZEBRA-42 is the build id/)
    const replacement = events.find((e) => e.type === 'user/message' && e.data.source?.plugin === 'rewind')
    assert.ok(replacement, 'no report in the session log')
    assert.equal(replacement.data.source.markId, 1)
    assert.equal(replacement.surfaceOp?.op, 'replace')
    assert.ok(replacement.seq > marks[0].logLength)
    assert.ok(replacement.sourceEventSeqs.every((/** @type {number} */ s) => s >= marks[0].logLength))
    const readEvent = events.find((e) => e.type === 'assistant/message' && e.data.message.content.some((b) => b.id === readCall.id))
    assert.ok(replacement.sourceEventSeqs.includes(readEvent.seq), 'the read call is not among the folded events')
    assert.ok(!events.some((e) => /^(checkpoint|rewind)\//.test(e.type)), 'the plugin wrote its own events')
  })

  test('2. ending the turn with an active mark: the guard keeps the turn alive, the model rewinds, the turn ends', { timeout: TEST_MS }, async () => {
    const r = await run({
      task: 'Look around, then stop.',
      agent: [
        { toolCalls: [{ id: 'call_ckpt', name: 'checkpoint', arguments: { objective: 'look around' } }] },
        { toolCalls: [{ id: 'call_ls', name: 'bash', arguments: { command: 'echo looked-around-marker', description: 'Print a marker' } }] },
        { content: 'I looked around.' }, // tries to end the turn with mark 1 active
        (/** @type {any} */ body) => {
          const last = body.messages.at(-1)
          assert.equal(last.role, 'user', shape(body.messages))
          assert.match(text(last), /^\[Checkpoint 1 is still open: look around\]/)
          assert.match(text(last), /call `rewind` now; if you already gave your answer, call `rewind` and then end your turn without repeating it/)
          return { toolCalls: [{ id: 'call_rewind', name: 'rewind', arguments: {} }] }
        },
        { content: 'Stopped after folding.' },
      ],
      reports: [{ content: '## Findings\nThe looked-around-marker was printed.' }],
    })
    assert.equal(r.code, 0, r.context)
    assert.equal(r.stdout.trim(), 'Stopped after folding.', r.context)
    assert.deepEqual(r.server.violations, [], r.context)
    assert.equal(r.agentRequests.length, 5, r.agentRequests.map((b) => shape(b.messages)).join('\n'))
    // The warning reached the model once, after the text-only answer, in the same turn.
    const warned = r.agentRequests[3].messages
    assert.equal(warned.at(-2).role, 'assistant')
    assert.equal(text(warned.at(-2)), 'I looked around.')
    // The fold replaces the exploration with the report; the text-only answer and the warning
    // after it stay (an answer is never folded away), so the model still sees that it answered.
    const last = r.agentRequests[4].messages
    assert.deepEqual(callNames(last), ['checkpoint', 'rewind'], shape(last))
    assert.ok(!last.some((m) => /looked-around-marker\n/.test(text(m)) && m.role === 'tool'), shape(last))
    const report = last.findIndex((m) => m.role === 'user' && /The looked-around-marker was printed/.test(text(m)))
    assert.ok(report >= 0, shape(last))
    assert.equal(text(last[report + 1]), 'I looked around.', shape(last))
    assert.match(text(last[report + 2]), /^\[Checkpoint 1 is still open: look around\]/, shape(last))
    const [mark] = marksOf(r.dshHome)
    assert.equal(typeof mark.foldedAt, 'number')
    // One turn: the guard's warning did not start a new one.
    const { events } = sessionLog(r.dshHome)
    assert.equal(events.filter((e) => e.type === 'turn/start').length, 1)
    assert.deepEqual(events.filter((e) => e.type === 'turn/end').map((e) => e.data.reason.kind), ['completed'])
  })

  test('3. checkpoint and an exploration call in one assistant message: the fold keeps every request protocol-valid', { timeout: TEST_MS }, async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-fold-e2e-cwd-'))
    cleanups.push(() => rmSync(cwd, { recursive: true, force: true }))
    const file = path.join(cwd, 'parallel.txt')
    writeFileSync(file, 'PARALLEL-SECRET-7 lives here\n')
    const r = await run({
      task: 'Read parallel.txt.',
      cwd,
      agent: [
        {
          content: 'Checkpoint and read at once.',
          toolCalls: [
            { id: 'call_ckpt', name: 'checkpoint', arguments: { objective: 'parallel read' } },
            { id: 'call_read', name: 'read', arguments: { file_path: file } },
          ],
        },
        (/** @type {any} */ body) => {
          assert.match(text(resultOf(body.messages, 'read')), /PARALLEL-SECRET-7/)
          return { toolCalls: [{ id: 'call_rewind', name: 'rewind', arguments: {} }] }
        },
        { content: 'Read it: PARALLEL-SECRET-7.' },
      ],
      reports: [{ content: '## Findings\nparallel.txt holds PARALLEL-SECRET-7.' }],
    })
    assert.equal(r.code, 0, r.context)
    assert.deepEqual(r.server.violations, [], r.context)
    assert.equal(r.agentRequests.length, 3, r.agentRequests.map((b) => shape(b.messages)).join('\n'))
    const folded = r.agentRequests[2].messages
    // The whole parallel assistant message and both results joined the fold: nothing orphaned.
    assert.deepEqual(callNames(folded), ['rewind'], shape(folded))
    assert.ok(!folded.some((m) => m.role === 'tool' && /PARALLEL-SECRET-7/.test(text(m))), shape(folded))
    assert.ok(folded.some((m) => m.role === 'user' && /parallel\.txt holds PARALLEL-SECRET-7/.test(text(m))), shape(folded))
    assert.match(text(resultOf(folded, 'rewind')), /^Checkpoint \d+ folded: /)
    const [mark] = marksOf(r.dshHome)
    assert.equal(typeof mark.foldedAt, 'number')
  })

  test('4. rewind without a checkpoint: a NO_CHECKPOINT tool error, and the session goes on', { timeout: TEST_MS }, async () => {
    const r = await run({
      task: 'Fold, then answer.',
      agent: [
        { toolCalls: [{ id: 'call_rewind', name: 'rewind', arguments: {} }] },
        (/** @type {any} */ body) => {
          const error = resultOf(body.messages, 'rewind')
          assert.ok(error, shape(body.messages))
          assert.match(text(error), /NO_CHECKPOINT/)
          return { toolCalls: [{ id: 'call_echo', name: 'bash', arguments: { command: 'echo still-going', description: 'Print a marker' } }] }
        },
        (/** @type {any} */ body) => {
          assert.match(text(resultOf(body.messages, 'bash')), /still-going/)
          return { content: 'Nothing to fold; carried on.' }
        },
      ],
    })
    assert.equal(r.code, 0, r.context)
    assert.equal(r.stdout.trim(), 'Nothing to fold; carried on.', r.context)
    assert.deepEqual(r.server.violations, [], r.context)
    assert.equal(r.agentRequests.length, 3)
    assert.equal(r.reportRequests.length, 0)
    assert.match(text(resultOf(r.agentRequests[2].messages, 'rewind')), /NO_CHECKPOINT/)
    // The failure wrote nothing: no mark (the store file may not even exist).
    if (existsSync(storePath(r.dshHome))) assert.deepEqual(marksOf(r.dshHome), [])
    const { events } = sessionLog(r.dshHome)
    assert.ok(!events.some((e) => e.type === 'user/message' && e.data.source?.plugin === 'rewind'))
  })

  test('5. the report call returns an empty completion twice, then a report: the fold succeeds after retries', { timeout: TEST_MS }, async () => {
    const r = await run({
      task: 'Investigate, fold, answer.',
      agent: [
        { toolCalls: [{ id: 'call_ckpt', name: 'checkpoint', arguments: { objective: 'retry' } }] },
        { toolCalls: [{ id: 'call_echo', name: 'bash', arguments: { command: 'echo retry-exploration-marker', description: 'Print a marker' } }] },
        { toolCalls: [{ id: 'call_rewind', name: 'rewind', arguments: {} }] },
        { content: 'Folded after retries.' },
      ],
      reports: [{ content: '' }, { content: '' }, { content: '## Findings\nThe third report attempt landed.' }],
    })
    assert.equal(r.code, 0, r.context)
    assert.equal(r.stdout.trim(), 'Folded after retries.', r.context)
    assert.deepEqual(r.server.violations, [], r.context)
    assert.equal(r.reportRequests.length, 3)
    // Every attempt asked for the same region.
    const regions = r.reportRequests.map((b) => JSON.stringify(b.messages))
    assert.equal(new Set(regions).size, 1)
    assert.ok(r.reportRequests[0].messages.some((m) => m.role === 'tool' && /retry-exploration-marker/.test(text(m))))
    const folded = r.agentRequests.at(-1).messages
    assert.ok(folded.some((m) => m.role === 'user' && splitReportFrame(text(m)).body.startsWith('## Findings\nThe third report attempt landed.\n\n↩ ')), shape(folded))
    assert.ok(!folded.some((m) => m.role === 'tool' && /retry-exploration-marker/.test(text(m))), shape(folded))
    assert.match(text(resultOf(folded, 'rewind')), /^Checkpoint \d+ folded: .* replaced by your report/)
    const [mark] = marksOf(r.dshHome)
    assert.equal(typeof mark.foldedAt, 'number')
  })
  test('6. recall after the fold returns the exact folded line; economics prices the persisted log', { timeout: TEST_MS }, async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-fold-e2e-cwd-'))
    cleanups.push(() => rmSync(cwd, { recursive: true, force: true }))
    const ledger = path.join(cwd, 'ledger.txt')
    writeFileSync(ledger, Array.from({ length: 120 }, (_, i) => (i === 83 ? 'entry 84: invoice INV-7731 settled by ORCA-5 on 2026-03-14' : `entry ${i + 1}: routine transfer ${1000 + i}`)).join('\n') + '\n')
    const r = await run({
      task: 'Who settled invoice INV-7731?',
      cwd,
      agent: [
        { content: 'Marking the search.', toolCalls: [{ id: 'call_ckpt', name: 'checkpoint', arguments: { objective: 'who settled INV-7731' } }] },
        { toolCalls: [{ id: 'call_read', name: 'read', arguments: { file_path: ledger } }] },
        { toolCalls: [{ id: 'call_grep', name: 'bash', arguments: { command: 'grep -c transfer ledger.txt', description: 'Count transfers' } }] },
        { content: 'Folding.', toolCalls: [{ id: 'call_rewind', name: 'rewind', arguments: {} }] },
        (/** @type {any} */ body) => {
          const report = body.messages.find((/** @type {any} */ m) => m.role === 'user' && splitReportFrame(text(m)).body.startsWith('## Findings'))
          assert.ok(report && text(report).endsWith(hintLine('recall', { fold: 1 })), shape(body.messages))
          return { toolCalls: [{ id: 'call_recall', name: 'recall', arguments: { fold: 1, query: 'INV-7731' } }] }
        },
        { content: 'ORCA-5 settled INV-7731 on 2026-03-14.' },
      ],
      reports: [{ content: '## Findings\nledger.txt has 120 entries; one invoice line.\n## Recommended Next Step\nAnswer the user.' }],
    })
    assert.equal(r.code, 0, r.context)
    assert.deepEqual(r.server.violations, [], r.context)
    assert.equal(r.agentRequests.length, 6, r.context)
    // The ledger line is gone from the context after the fold, and back, verbatim, in recall's answer.
    const afterFold = r.agentRequests[4].messages
    assert.ok(!afterFold.some((m) => /ORCA-5/.test(text(m))), shape(afterFold))
    const answer = text(resultOf(r.agentRequests[5].messages, 'recall'))
    assert.match(answer, /^1 line in fold 1 match INV-7731:\n\[seq \d+ · read result\]\n {2}\d+: .*entry 84: invoice INV-7731 settled by ORCA-5 on 2026-03-14/, answer)

    // Economics of this very run, from its persisted log, as a user would run it.
    const [log] = sessionLogs(r.dshHome)
    const out = execFileSync(process.execPath, [path.join(REPO, 'bin', 'dsh-fold.mjs'), 'economics', log, '--json'], { encoding: 'utf8' })
    const a = JSON.parse(out)
    assert.equal(a.folds.length, 1)
    const [f] = a.folds
    assert.equal(f.report, 'llm')
    assert.equal(f.requestsAfter, 2)
    assert.ok(f.tokensFreed > 0 && f.inputTokensNotSent === 2 * f.tokensFreed, JSON.stringify(f))
    assert.ok(f.reportCall && f.reportCall.hit > 0 && f.reportCall.miss > 0 && f.reportCall.output > 0, JSON.stringify(f))
    assert.equal(a.requests.length, 6)
    assert.equal(a.totals.with.requests, 7) // six agent requests and the report call
    process.stderr.write(`[e2e] economics of scenario 6 (${log}):\n${execFileSync(process.execPath, [path.join(REPO, 'bin', 'dsh-fold.mjs'), 'economics', log], { encoding: 'utf8' })}\n`)
  })
})
