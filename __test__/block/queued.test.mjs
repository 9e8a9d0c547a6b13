// A queued block summary never lands over model-written text that arrived after it was written
// (issue 22 item 5). Real DeepSeek Harness parts on Node >= 22 (see harness.mjs): a real
// AgentLoop drives a scripted model through real `block_run_code` programs; checkpoint and rewind
// are this package's own plugins on a real store file.
//
// The rule: a summary requested before another model-written summary (a block summary, or a
// rewind report) landed in its range is stale. It is rejected — logged in a closed bracket,
// nothing replaced, every id still owned as before — and the model reads one short note about
// it in its next request, so what it wrote is never dropped without a word.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { adoptSessionEvent, interruptedTurnClosers } from '@deepseek-ai/dsh-session'
import { tmpdir } from 'node:os'

import { Checkpoint, Rewind } from '../../plugin/index.js'
import { tempStore } from '../helpers/dsh.mjs'
import { SessionId, agentOn, assertMeterAgrees, blockCall, bootBlockHost, commitsOf, dispatchesOf, meterAtEveryCommit, prompt, shape, textOf, valueOf } from './harness.mjs'

const SUMMARY_A = 'A: the build id is ZEBRA-42.'
const SUMMARY_B = 'B: alpha needs 1.21 GW; ship on Friday.'
const SUMMARY_A2 = 'A again: the build id is ZEBRA-42 (B is summarized apart).'

/** The block-mode failure brackets of a session: each `compaction/end` carrying an error. @param {any} session */
const failuresOf = (session) => session.events.filter((/** @type {any} */ e) => e.type === 'compaction/end' && e.data.blockPtc && e.data.error)
/** The notes block mode wrote for the model. @param {any[]} messages */
const notesIn = (messages) => messages.filter((m) => m.role === 'user' && m.source?.kind === 'plugin' && m.source?.blockNotice)

describe('a queued summary that another model-written summary overtook', () => {
  it('B, A, B, then a program tagged A queues A\'s summary and closes B at once: A\'s summary is rejected, B\'s stays, the model is told', async () => {
    const { root, model } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', ['B'], 'return await tools.lookup({key: "alpha"})')] },
        { calls: [blockCall('c2', ['A'], 'return await tools.lookup({key: "beta"})')] },
        { calls: [blockCall('c3', ['B'], 'return await tools.lookup({key: "gamma"})')] },
        {
          calls: [
            blockCall(
              'c4',
              ['A'],
              `const a = await tools.block_summary({ids: ["A"], summary: ${JSON.stringify(SUMMARY_A)}}); const b = await tools.block_summary({ids: ["B"], summary: ${JSON.stringify(SUMMARY_B)}}); return {a, b}`,
            ),
          ],
        },
        // Told that A's summary was not applied, the model closes A again.
        { calls: [blockCall('c5', ['A'], `return await tools.block_summary({ids: ["A"], summary: ${JSON.stringify(SUMMARY_A2)}})`)] },
        { text: 'done' },
      ],
    })
    const agent = await agentOn(root)
    const session = agent.session
    const meter = meterAtEveryCommit(root, session)
    await prompt(agent, 'read the notes')

    const [a, b] = dispatchesOf(session, 'c4')
      .filter((d) => d.name === 'block_summary')
      .map(valueOf)
    assert.equal(a.pending, true, 'A\'s summary waits for its own program')
    assert.equal(b.pending, undefined, 'B\'s summary lands at once')
    assert.deepEqual(b.ids, ['A'], 'B\'s range holds A\'s first step: its summary carries A')

    // The request after c4: B's summary is in the context, A's stale summary is not.
    const next = model.requests[4].messages
    const texts = next.map(textOf)
    assert.ok(texts.some((t) => t.startsWith('<block-summary>') && t.includes(SUMMARY_B)), `B's summary was lost: ${shape(next)}\n${texts.join('\n---\n')}`)
    assert.ok(!texts.some((t) => t.includes(SUMMARY_A)), 'A\'s stale summary was applied')
    assert.equal(shape(next), 'user summary assistant(block_run_code) tool user')

    // Rejected, logged in a closed bracket, nothing replaced by it.
    const failures = failuresOf(session)
    assert.equal(failures.length, 1)
    assert.deepEqual(failures[0].data.blockPtc, { closed: ['A'], requestSeq: a.requestSeq })
    assert.match(failures[0].data.error, /^STALE: another block summary \(seq \d+\)/)

    // One short note, in that very request, naming the summary and why.
    const notes = notesIn(next)
    assert.equal(notes.length, 1)
    const note = textOf(notes[0])
    assert.match(note, /^\[block mode\] Your summary of block A was not applied: STALE: /)
    assert.match(note, /another block summary \(seq \d+\) landed inside the range of block\(s\) "A" after this summary was written/)
    assert.ok(note.length < 600, `the note is short: ${note.length} chars`)
    assert.deepEqual(notes[0].source.blockNotice, { requestSeqs: [a.requestSeq] })
    assert.equal(notes[0].source.form, 'notice')

    // The ids kept their owners: A could be closed again, and B's summary went with it only
    // because the new summary of A was written after the model read it.
    const commits = commitsOf(session)
    assert.equal(commits.length, 2)
    assert.deepEqual(commits[0].replacement.data.source.blockPtc.closed, ['B'])
    assert.deepEqual(commits[1].replacement.data.source.blockPtc.closed, ['A'])
    assert.ok(commits[1].summary.data.shadowedSeqs.includes(commits[0].replacement.seq))
    assert.equal(notesIn(model.requests[5].messages).length, 0, 'the note is told once')
    assert.equal(meter.error, undefined)
    assertMeterAgrees(root, session)
  })

  it('a rewind report that landed inside a queued block\'s range: the summary is rejected, the report stays, the model is told', async () => {
    const { root, model } = await bootBlockHost({
      script: [
        { calls: [blockCall('c1', ['A'], 'await tools.checkpoint({objective: "read the notes"}); return await tools.lookup({key: "alpha"})')] },
        // Enough output that the extractive report is shorter than what it folds.
        { calls: [blockCall('c2', ['B'], 'const b = await tools.lookup({key: "beta"}); return [b, ...Array.from({length: 40}, (_, i) => `line ${i} of the notes`)].join("\\n")')] },
        { calls: [blockCall('c3', ['A'], `const s = await tools.block_summary({ids: ["A"], summary: ${JSON.stringify(SUMMARY_A)}}); const r = await tools.rewind({}); return {s, r}`)] },
        { text: 'done' },
      ],
    })
    await root.plugin(Checkpoint, { store: tempStore() })
    await root.plugin(Rewind, { summarizer: 'extractive' })
    const agent = await agentOn(root)
    const session = agent.session
    await prompt(agent, 'read with a checkpoint')

    const [s] = dispatchesOf(session, 'c3')
      .filter((d) => d.name === 'block_summary')
      .map(valueOf)
    assert.equal(s.pending, true)
    const report = session.events.find((/** @type {any} */ e) => e.type === 'user/message' && e.data.source?.plugin === 'rewind' && e.surfaceOp?.op === 'replace')
    assert.ok(report, 'the rewind folded nothing')
    assert.ok(report.seq > s.requestSeq, 'the report came after the summary was written')

    const failures = failuresOf(session)
    assert.equal(failures.length, 1)
    assert.match(failures[0].data.error, /^STALE: /)
    assert.deepEqual(commitsOf(session), [], 'the stale summary replaced the report')

    const next = model.requests[3].messages
    assert.ok(next.some((m) => textOf(m) === textOf(report.data)), 'the report left the context')
    const notes = notesIn(next)
    assert.equal(notes.length, 1, `no note: ${shape(next)}`)
    assert.match(textOf(notes[0]), /^\[block mode\] Your summary of block A was not applied: STALE: a rewind report or a compaction \(seq \d+\)/)
  })

  it('a failure logged just before a crash is told once, in the first request after the restore', async () => {
    /** The B, A, B session of the first test, up to c4's program. */
    const programs = [
      { calls: [blockCall('c1', ['B'], 'return await tools.lookup({key: "alpha"})')] },
      { calls: [blockCall('c2', ['A'], 'return await tools.lookup({key: "beta"})')] },
      { calls: [blockCall('c3', ['B'], 'return await tools.lookup({key: "gamma"})')] },
      { calls: [blockCall('c4', ['A'], `await tools.block_summary({ids: ["A"], summary: ${JSON.stringify(SUMMARY_A)}}); return await tools.block_summary({ids: ["B"], summary: ${JSON.stringify(SUMMARY_B)}})`)] },
      { text: 'done' },
    ]
    /** @type {any[] | undefined} */
    let crashed
    const first = await bootBlockHost({ script: programs })
    first.root.on('session/event', (/** @type {any} */ s, /** @type {any} */ e) => {
      // The process dies right after the failure is logged, before any later step.
      if (e.type === 'compaction/end' && e.data.error && !crashed) crashed = JSON.parse(JSON.stringify(s.events))
    })
    await prompt(await agentOn(first.root), 'read the notes')
    const events = /** @type {any[]} */ (crashed)
    assert.ok(events, 'no failure was logged')
    const seed = [...events, ...interruptedTurnClosers(events).map(adoptSessionEvent)]

    /** Restores `seed` on a fresh host and runs one prompt; returns the first request's messages. @param {any[]} seed @param {string} id */
    const restoreAndPrompt = async (seed, id) => {
      const { root, model } = await bootBlockHost({ script: [{ text: 'ok' }] })
      const { agent } = await root.agents.create({ sessionId: SessionId(id), seed, agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
      await prompt(agent, 'continue')
      return { messages: model.requests[0].messages, session: agent.session }
    }
    const restored = await restoreAndPrompt(seed, 'restored')
    const notes = notesIn(restored.messages)
    assert.equal(notes.length, 1, shape(restored.messages))
    assert.match(textOf(notes[0]), /^\[block mode\] Your summary of block A was not applied: STALE: another block summary/)
    assert.equal(restored.messages.at(-1), notes[0], 'the note follows the user\'s prompt in that step')
    // Told: the same log restored again owes nothing.
    const again = await restoreAndPrompt(JSON.parse(JSON.stringify(restored.session.events)), 'again')
    assert.equal(notesIn(again.messages).length, 1, 'the earlier note stays in the history')
    assert.equal(again.session.events.filter((/** @type {any} */ e) => e.type === 'user/message' && e.data.source?.blockNotice).length, 1, 'told twice')
  })
})
