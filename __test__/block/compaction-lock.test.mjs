// Block mode and the `dsh-fold/compaction` backend in one real host (Node >= 22, see
// harness.mjs): a block summary asked for while the backend's own bracket is open waits for its
// `compaction/end` and lands right after it, never inside it. The bracket is a real one: the
// backend's automatic compaction at a step boundary of a real AgentLoop turn, its `llm` summary
// call held open by the scripted model. The summary request goes through the real ToolRuntime
// with a parent token, exactly as a program's `tools.block_summary(...)` sub-call does.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import FoldCompaction from '../../plugin/compaction/compaction.js'
import { agentOn, assertMeterAgrees, blockCall, bootBlockHost, commitsOf, prompt } from './harness.mjs'

/** A gate a test opens. */
function gate() {
  /** @type {() => void} */
  let open = () => {}
  const opened = new Promise((/** @type {(v?: any) => void} */ resolve) => (open = resolve))
  return { open, opened }
}

/** Waits until `check()` holds (event-loop turns, no timing asserted). @param {() => boolean} check */
async function until(check) {
  for (let i = 0; i < 2000 && !check(); i++) await new Promise((r) => setTimeout(r, 2))
  assert.ok(check(), 'timed out waiting')
}

/** The backend's own compactions of a session (not block mode's brackets). @param {any} session */
const ownCompactions = (session) => session.events.filter((/** @type {any} */ e) => e.type === 'compaction/start' && !e.data.blockPtc)

const SUMMARY_A = 'A: the build id is ZEBRA-42.'

describe("block mode waits for the compaction backend's bracket", () => {
  it('a block summary asked for inside the bracket is queued, and lands right after its compaction/end', async () => {
    const held = gate()
    /** @type {any[]} */
    const summaryRequests = []
    // The agent's replies, in order: two long programs of block B, then one of block A; the
    // compaction runs before the next step, then the turn ends.
    const replies = [
      { calls: [blockCall('c1', ['B'], 'return "B output line, src/b/one.rs: ok\\n".repeat(300)')] },
      { calls: [blockCall('c2', ['B'], 'return "B output line, src/b/two.rs: ok\\n".repeat(300)')] },
      { calls: [blockCall('c3', ['A'], 'return "A output line, src/a/x.rs: ok\\n".repeat(150)')] },
      { text: 'done' },
    ]
    let next = 0
    const answer = async (/** @type {any} */ options) => {
      if (options.purpose === 'compaction') {
        summaryRequests.push(options)
        await held.opened
        return { text: '## Summary\n- block B read src/b/one.rs, two.rs and three.rs' }
      }
      // From A's program on, the routed model reports a window whose threshold (0.8 of it) the
      // context as it stands now just reaches: A's output puts the next step over it.
      if (next === 2) window = Math.ceil(root.tokenMeter.measure(session).totalTokens / 0.8)
      const reply = replies[next++]
      if (!reply) throw new Error(`the agent asked past its script (request ${next})`)
      return reply
    }
    const { root, model } = await bootBlockHost({ script: Array.from({ length: 12 }, () => answer) })
    let window = 1_000_000
    const resolveModel = model.resolveModel.bind(model)
    model.resolveModel = async (/** @type {string} */ provider, /** @type {string} */ id) => ({ ...(await resolveModel(provider, id)), context: { contextWindow: window } })
    // The backend, with an llm summary the model holds.
    await root.plugin(FoldCompaction, { summarizer: 'llm' })
    const agent = await agentOn(root)
    const session = agent.session
    const turn = prompt(agent, 'read the notes')
    await until(() => summaryRequests.length === 1)
    const [start] = ownCompactions(session)
    assert.ok(start, 'the backend opened its bracket')
    const length = session.events.length
    const nodes = [...session.surface.nodes]

    // A program's block_summary sub-call, while the bracket is open.
    const result = await root.tools.execute({ callId: 'inside', name: 'block_summary', arguments: { ids: ['A'], summary: SUMMARY_A }, agent, parent: Symbol('program'), signal: new AbortController().signal })
    assert.equal(result.isError, false, result.error?.message)
    assert.equal(result.value.pending, true, 'the summary did not wait for the open bracket')
    assert.match(result.value.note, /compaction/)
    assert.equal(session.events.length, length, 'block mode wrote inside the backend\'s bracket')
    assert.deepEqual([...session.surface.nodes], nodes)

    held.open()
    await turn
    const end = session.events.find((/** @type {any} */ e) => e.type === 'compaction/end' && e.data.compactionId === start.data.compactionId)
    assert.ok(end && end.data.error === undefined, 'the backend\'s compaction committed')
    // Inside the backend's bracket: its own summary and replacement, nothing of block mode's.
    assert.deepEqual(session.events.slice(start.seq + 1, end.seq).map((/** @type {any} */ e) => e.type), ['compaction/summary', 'user/message'])
    const commits = commitsOf(session)
    assert.equal(commits.length, 1, 'the queued summary landed once')
    assert.deepEqual(commits[0].replacement.data.source.blockPtc.closed, ['A'])
    assert.ok(commits[0].start.seq > end.seq, 'the block summary landed after the backend\'s compaction/end')
    assert.ok(session.deriveMessages().some((/** @type {any} */ m) => m.content.some((/** @type {any} */ b) => b.type === 'text' && b.text.includes(SUMMARY_A))))
    assertMeterAgrees(root, session)
  })
})
