// Pending summaries survive the process: a request answered `pending` is rebuilt from the log
// alone (its `tool/code-dispatch` result, named by no commit) when the session is created
// again — restored after a crash, or forked with `sessions.fork` — and when the plugin mounts
// on a host that already holds the session. Real DSH parts on Node >= 22; the "crash" is the
// log as it stood while a program was still running, restored the way DSH's persistence
// restores it (`interruptedTurnClosers` appended, then a seeded session).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { adoptSessionEvent, interruptedTurnClosers } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'

import Block from '../../plugin/block/block.js'
import { agentOn, assertMeterAgrees, blockCall, bootBlockHost, commitsOf, dispatchesOf, prompt, textOf, valueOf } from './harness.mjs'

const SUMMARY = 'alpha needs 1.21 GW; the build id is ZEBRA-42.'

/**
 * Runs a session until block A's summary is pending inside its own block, and returns the log
 * as it stood then (what a process killed at that moment left on disk).
 * @param {{foreign?: boolean}} [options] also leave another producer's compaction open
 */
async function crashedLog({ foreign = false } = {}) {
  /** @type {any[] | undefined} */
  let snapshot
  const { root } = await bootBlockHost({
    tools: (host) => {
      host.tools.register(
        defineTool({
          name: 'crash',
          description: 'Test: capture the log as a crash would leave it, once the summary\'s answer is logged.',
          parameters: {},
          output: { schema: { type: 'integer' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
          execute: async (_args, exec) => {
            const session = exec.agent.session
            const logged = () => session.events.some((/** @type {any} */ e) => e.type === 'tool/code-dispatch' && e.data.name === 'block_summary')
            while (!logged()) await new Promise((resolve) => setImmediate(resolve))
            snapshot = JSON.parse(JSON.stringify(session.events))
            return session.seq
          },
        }),
      )
      host.tools.register(
        defineTool({
          name: 'foreign_start',
          description: 'Test: another producer opens a compaction and never closes it.',
          parameters: {},
          output: { schema: { type: 'integer' }, render: (_a, v) => [{ type: 'text', text: String(v) }] },
          execute: async (_args, exec) => {
            const session = exec.agent.session
            const turn = session.events.findLast((/** @type {any} */ e) => e.type === 'turn/start').data.turn
            return session.append('compaction/start', { compactionId: 'foreign', turn }).seq
          },
        }),
      )
    },
    script: [
      { calls: [blockCall('c1', ['A'], 'return await tools.lookup({key: "alpha"})')] },
      {
        calls: [
          blockCall('c2', ['A'], `${foreign ? 'await tools.foreign_start({}); ' : ''}await tools.lookup({key: "beta"}); const r = await tools.block_summary({ids: ["A"], summary: ${JSON.stringify(SUMMARY)}}); await tools.crash({}); return r`),
        ],
      },
      { text: 'done' },
    ],
  })
  const agent = await agentOn(root, 'crashed')
  await prompt(agent, 'read and close')
  const events = /** @type {any[]} */ (snapshot)
  const pending = valueOf(dispatchesOf({ events }, 'c2').find((d) => d.name === 'block_summary'))
  assert.equal(pending.pending, true)
  assert.ok(!events.some((e) => e.type === 'user/message' && e.data.source?.blockPtc), 'the crash came after the commit')
  // What DSH's persistence does on load: close the interrupted turn, then seed a session.
  const seed = [...events, ...interruptedTurnClosers(events).map(adoptSessionEvent)]
  return { seed, requestSeq: pending.requestSeq, crashedAt: events.length }
}

/** Lets the plugin's microtask drain run. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

/** The one commit of a session, checked for the bracket and a standalone owner. @param {any} session @param {number} requestSeq */
function assertRecovered(session, requestSeq) {
  const commits = commitsOf(session)
  assert.equal(commits.length, 1, 'expected one commit')
  const [{ start, summary, replacement, end }] = commits
  assert.deepEqual([start.type, summary.type, replacement.type, end.type], ['compaction/start', 'compaction/summary', 'user/message', 'compaction/end'])
  assert.equal(start.data.turn, null, 'a commit between turns is standalone')
  assert.equal(end.data.error, undefined)
  assert.deepEqual(replacement.data.source.blockPtc, { remaining: [], closed: ['A'], requestSeq })
  assert.ok(textOf(replacement.data).includes(SUMMARY))
  // The whole block is gone from the surface: both programs and their results.
  const visible = session.deriveMessages().map(textOf).join('\n')
  assert.ok(!visible.includes('ZEBRA-42 is the build id'), 'the block is still visible')
  return commits[0]
}

describe('pending summaries are rebuilt from the log', () => {
  it('after a crash and restore: committed as soon as the session is created again', async () => {
    const { seed, requestSeq } = await crashedLog()
    const { root } = await bootBlockHost()
    const session = root.sessions.create('restored', { seed })
    await settle()
    const commit = assertRecovered(session, requestSeq)
    // After the seed's end marker, on the interrupted program's synthetic result.
    const endSeed = session.events.findLast((/** @type {any} */ e) => e.type === 'session/end-seed').seq
    assert.ok(commit.start.seq > endSeed)
    assertMeterAgrees(root, session)
  })

  it('a fork carries the pending request and commits it on its own', async () => {
    const { seed, requestSeq } = await crashedLog()
    const { root } = await bootBlockHost()
    const source = root.sessions.create('source', { seed })
    const boundary = source.events.findLast((/** @type {any} */ e) => e.type === 'session/end-seed').seq
    const child = root.sessions.fork(source, boundary, 'child')
    await settle()
    const mine = assertRecovered(child, requestSeq)
    const theirs = assertRecovered(source, requestSeq)
    assert.notEqual(mine.replacement.data.source.compactionId, theirs.replacement.data.source.compactionId)
    assertMeterAgrees(root, child)
  })

  it('when the plugin mounts on a host already holding the session', async () => {
    const { seed, requestSeq } = await crashedLog()
    const { root } = await bootBlockHost({ block: false })
    const session = root.sessions.create('restored', { seed })
    await settle()
    assert.deepEqual(commitsOf(session), [])
    await root.plugin(Block)
    await settle()
    assertRecovered(session, requestSeq)
  })

  it('a compaction lock left open by the crash is stale after the restore, and does not hold the summary', async () => {
    const { seed, requestSeq } = await crashedLog({ foreign: true })
    assert.ok(seed.some((e) => e.type === 'compaction/start' && e.data.compactionId === 'foreign'))
    const { root } = await bootBlockHost()
    const session = root.sessions.create('restored', { seed })
    await settle()
    assertRecovered(session, requestSeq)
  })

  it('a request already committed is not committed again, and a logged failure is not retried', async () => {
    const { seed } = await crashedLog()
    const { root } = await bootBlockHost()
    const once = root.sessions.create('once', { seed })
    await settle()
    assert.equal(commitsOf(once).length, 1)
    // The committed log, restored again: nothing is owed.
    const again = root.sessions.create('again', { seed: JSON.parse(JSON.stringify(once.events)) })
    await settle()
    assert.equal(commitsOf(again).length, 1)
    assert.equal(again.events.filter((/** @type {any} */ e) => e.type === 'compaction/start').length, 1)
  })
})
