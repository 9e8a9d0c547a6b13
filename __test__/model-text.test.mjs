// What the model reads (issue 32), on the real AgentLoop: a scripted model (a real LlmAdapter)
// drives real agent turns of a real DSH host (LlmRuntime, SessionStore, AgentRegistry,
// SystemPrompt, ToolRuntime, AgentLoop) with dsh-fold's checkpoint, rewind and recall rows; every
// assertion reads a request the model was sent. One describe per item of the issue: every
// replacement says what it is; an answer is never folded away; failures and the guard agree; the
// report call knows the purpose; one clear "when"; the standing cost (names and language: see
// __test__/model-text-zh.test.mjs).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { Checkpoint, INSTRUCTIONS, Rewind, isRewindReportSource } from '../plugin/index.js'
import { isReportInstruction } from '../plugin/fold/summarize.js'
import { WORDS, failureText, splitReportFrame } from '../plugin/fold/words.js'
import { ScriptedModel, bootHost, createUserMessage, protocolProblems, runTurn, say, tempStore } from './helpers/dsh.mjs'
import { calls, resultOf, scriptedHost, textOf } from './helpers/model-text.mjs'
import { faultsEnv } from './helpers/faults.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

// ---- the scripted model and its requests --------------------------------------------------------

/** Whether a message is the turn guard's warning. @param {any} m */
const isWarning = (m) => m.role === 'user' && m.source?.kind === 'plugin' && m.source?.plugin === 'rewind' && m.source.markId === undefined

const PARSER = [
  'parser.js:',
  ...Array.from({ length: 12 }, (_, i) => `${i + 1}: function rule${i}() { return expect(TOKENS[${i}]) }`),
  '13: function skipComment() { while (!eof()) next(); next() } // the extra next() consumes EOF',
].join('\n')
const REPORT = '## Findings\n- `skipComment` in parser.js consumes the EOF token.\n## Recommended Next Step\n- Remove the extra `next()`.'
const ANSWER = 'The parser drops the last token when the input ends in a comment: `skipComment` consumes the EOF token.'

/**
 * A real host with the fold rows, a `probe` tool answering PARSER, and a scripted model: agent
 * requests take the next reply of `replies` (then `say('Done.')`), report calls answer `report`.
 * @param {any[]} replies
 * @param {{report?: any, rewind?: object, checkpoint?: object}} [o]
 */
function host(replies, { report = say(REPORT), rewind = {}, checkpoint = {} } = {}) {
  return scriptedHost({
    replies,
    report,
    done: say('Done.'),
    file: PARSER,
    rows: async (root) => {
      await root.plugin(Checkpoint, { store: tempStore(), ...checkpoint })
      await root.plugin(Rewind, rewind)
    },
  })
}

const warningsIn = (/** @type {any} */ session) => session.events.filter((/** @type {any} */ e) => e.type === 'user/message' && isWarning(e.data))

// ---- 1. every replacement says what it is --------------------------------------------------------

describe('1. every replacement says what it is', () => {
  it("frames the report (the checkpoint, its objective, the model's own report, not the user's, the next step a suggestion) and says in the result what was folded and what to do next", async () => {
    const h = await host([
      calls('k1', 'checkpoint', { objective: 'find why the parser drops tokens' }),
      calls('p1', 'probe', { path: 'parser.js' }),
      { text: 'Found it; folding the investigation.', calls: [{ id: 'r1', name: 'rewind', args: {} }] },
      say(ANSWER),
    ])
    await runTurn(h.agent, 'Why does the parser drop the last token?')
    const after = h.agentRequests()[3]
    const report = after.messages.find((/** @type {any} */ m) => isRewindReportSource(m.source))
    const { head, body } = splitReportFrame(textOf(report))
    assert.equal(
      head,
      '[Checkpoint 1 — find why the parser drops tokens] Your own report of that investigation; it replaces its steps and is not a message from the user. Continue the task; its next step is a suggestion.\n\n',
    )
    assert.equal(body, REPORT, 'the report itself is as written')
    const result = resultOf(after, 'r1')
    assert.equal(
      textOf(result),
      'Checkpoint 1 folded: the 2 messages of its investigation (' + (JSON.stringify({ path: 'parser.js' }).length + PARSER.length) + ` chars) are replaced by your report, above (${REPORT.length} chars). Continue the task; if you already answered the user, end your turn without repeating the answer.`,
    )
    assert.doesNotMatch(textOf(result), /surface|seq|node/, 'no machinery words')
    assert.deepEqual(protocolProblems(after.messages), [])
  })

  it('an extractive report says it was extracted, not written', async () => {
    const h = await host([calls('k1', 'checkpoint', { objective: 'read the parser' }), calls('p1', 'probe', { path: 'parser.js' }), calls('r1', 'rewind')], { rewind: { summarizer: 'extractive' } })
    await runTurn(h.agent, 'Look at the parser.')
    const after = h.agentRequests()[3]
    const report = textOf(after.messages.find((/** @type {any} */ m) => isRewindReportSource(m.source)))
    assert.ok(report.startsWith("[Checkpoint 1 — read the parser] A report extracted from that investigation's steps; it replaces them and is not a message from the user."), report)
    assert.match(textOf(resultOf(after, 'r1')), /are replaced by a report extracted from them, above/)
    assert.equal(h.reportRequests().length, 0)
  })
})

// ---- 2. an answer is never folded away ---------------------------------------------------------

describe('2. an answer is never folded away', () => {
  it('the model answers with an open checkpoint, then obeys the guard: the next request still shows that it answered', async () => {
    const h = await host([
      calls('k1', 'checkpoint', { objective: 'find why the parser drops tokens' }),
      calls('p1', 'probe', { path: 'parser.js' }),
      say(ANSWER), // the turn would end here, the checkpoint still open
      calls('r1', 'rewind'), // the guard's warning brought the model back
      say('(folded)'),
    ])
    await runTurn(h.agent, 'Why does the parser drop the last token?')
    const requests = h.agentRequests()
    assert.equal(requests.length, 5)
    // The warning says what to do when the answer is already written.
    const warning = requests[3].messages.at(-1)
    assert.ok(isWarning(warning))
    assert.equal(
      textOf(warning),
      '[Checkpoint 1 is still open: find why the parser drops tokens] You have not folded the investigation you marked. If it is done, call `rewind` now; if you already gave your answer, call `rewind` and then end your turn without repeating it. If it is not done, continue it.',
    )
    // After the fold: the request, the checkpoint, the report, the answer, the warning, the rewind.
    const after = requests[4].messages
    const shape = after.map((/** @type {any} */ m) => (isRewindReportSource(m.source) && m.source.markId ? 'report' : isWarning(m) ? 'warning' : m.source?.kind === 'tool' ? 'tool' : m.content.some((/** @type {any} */ b) => b.type === 'tool-call') ? `call:${m.content.find((/** @type {any} */ b) => b.type === 'tool-call').name}` : m.role))
    assert.deepEqual(shape, ['user', 'call:checkpoint', 'tool', 'report', 'assistant', 'warning', 'call:rewind', 'tool'])
    assert.equal(textOf(after[4]), ANSWER, 'the answer stands after the report')
    assert.ok(!after.some((/** @type {any} */ m) => m.content.some((/** @type {any} */ b) => b.type === 'tool-call' && b.name === 'probe')), 'the exploration is folded')
    assert.deepEqual(protocolProblems(after), [])
    // The report writer was given the exploration only, not the answer.
    const explored = h.reportRequests()[0].messages.slice(0, -1)
    assert.ok(!explored.some((/** @type {any} */ m) => textOf(m) === ANSWER))
    assert.equal(warningsIn(h.agent.session).length, 1)
    assert.equal(await h.root.checkpoint.hasActive(h.agent.session.id), false)
  })
})

// ---- 3. failures and the guard agree -----------------------------------------------------------

describe('3. failures and the guard agree', () => {
  it('after SHRINK the guard stays silent until new exploration (before: a warning at every turn end)', async () => {
    const h = await host(
      [
        calls('k1', 'checkpoint', { objective: 'read the parser' }),
        calls('p1', 'probe', { path: 'parser.js' }),
        calls('r1', 'rewind'), // the report is longer than the exploration: SHRINK
        say('The investigation was short; here is the answer.'),
        say('turn 2'),
        say('turn 3'),
        calls('p2', 'probe', { path: 'parser.js' }), // turn 4: new exploration
        say('turn 4'),
        calls('r2', 'rewind'), // the guard asked again; still too short: SHRINK
        say('turn 4, done'),
      ],
      { report: say('x'.repeat(PARSER.length * 3)) },
    )
    await runTurn(h.agent, 'Look at the parser.')
    const failed = textOf(resultOf(h.agentRequests()[3], 'r1'))
    assert.equal(
      failed,
      'Error: SHRINK: The report came out no shorter than the investigation it would replace, so folding would save nothing. Checkpoint 1 is still open. Nothing changed, and the investigation needs no fold: continue the task without calling `rewind` for it.',
    )
    await runTurn(h.agent, 'Anything else?')
    await runTurn(h.agent, 'And now?')
    assert.equal(warningsIn(h.agent.session).length, 0, 'no warning over three turns')
    await runTurn(h.agent, 'Look again.')
    assert.equal(warningsIn(h.agent.session).length, 1, 'new exploration: the guard warns again, once')
  })

  it('a misconfigured report call says "do not retry; tell the user what to set", and the guard stays silent', async () => {
    const h = await host(
      [calls('k1', 'checkpoint', { objective: 'read the parser' }), calls('p1', 'probe', { path: 'parser.js' }), calls('r1', 'rewind'), say('Not folded; the answer is …'), say('turn 2')],
      { rewind: { summarizationProvider: 'nowhere', summarizationModel: 'none' } },
    )
    await runTurn(h.agent, 'Look at the parser.')
    const failed = textOf(resultOf(h.agentRequests()[3], 'r1'))
    assert.match(failed, /^Error: SUMMARIZE_FAILED: The report call is misconfigured \(`[^`]+`\)\. Checkpoint 1 is still open\. Do not retry: tell the user to set a provider that is installed in `summarizationProvider` of the tool-rewind row\. Nothing changed; continue the task with the investigation unfolded\.$/)
    await runTurn(h.agent, 'Anything else?')
    assert.equal(warningsIn(h.agent.session).length, 0)
  })

  it('a report call that fails: retry once; failed twice: stop retrying, and the guard agrees', async () => {
    let calls_ = 0
    const h = await host(
      [
        calls('k1', 'checkpoint', { objective: 'read the parser' }),
        calls('p1', 'probe', { path: 'parser.js' }),
        calls('r1', 'rewind'), // fails
        say('The report failed; answering anyway.'), // the guard warns (a retry may help)
        calls('r2', 'rewind'), // fails again
        say('Answered; leaving it unfolded.'), // no second warning this turn, and none next turn
        say('turn 2'),
      ],
      {
        rewind: { maxSummarizationRetries: 0 },
        report: () => {
          calls_++
          throw new Error('the provider is down')
        },
      },
    )
    await runTurn(h.agent, 'Look at the parser.')
    const requests = h.agentRequests()
    assert.match(textOf(resultOf(requests[3], 'r1')), /^Error: SUMMARIZE_FAILED: The report could not be written \(`[^`]*the provider is down[^`]*`\)\. Checkpoint 1 is still open\. Nothing changed\. Call `rewind` once more; if it fails again, continue the task with the investigation unfolded\.$/)
    assert.ok(isWarning(requests[4].messages.at(-1)), 'after one failure the guard asks for the retry')
    assert.match(textOf(resultOf(requests[5], 'r2')), /Nothing changed\. It failed twice: do not retry; continue the task with the investigation unfolded/)
    await runTurn(h.agent, 'Anything else?')
    assert.equal(warningsIn(h.agent.session).length, 1, 'silent after the second failure')
    assert.equal(calls_, 2)
  })

  it('after INTERNAL (a panic of dsh-fold caught at the Node-API boundary) the text says do not retry, tell the user, and the guard stays silent', () => {
    // The faults build of the addon (the only one that honours DSH_FOLD_TEST_FAULTS), in a child.
    const url = (/** @type {string} */ p) => JSON.stringify(pathToFileURL(path.join(ROOT, p)).href)
    const script = `
      const { bootHost, ScriptedModel, say, tempStore, probeTool, runTurn, SessionId } = await import(${url('__test__/helpers/dsh.mjs')})
      const { Checkpoint, Rewind } = await import(${url('plugin/index.js')})
      const { isReportInstruction } = await import(${url('plugin/fold/summarize.js')})
      const replies = [
        { calls: [{ id: 'k1', name: 'checkpoint', args: { objective: 'read the parser' } }] },
        { calls: [{ id: 'p1', name: 'probe', args: { path: 'parser.js' } }] },
        () => { process.env.DSH_FOLD_TEST_FAULTS = 'panic:rewind'; return { calls: [{ id: 'r1', name: 'rewind', args: {} }] } },
        () => { process.env.DSH_FOLD_TEST_FAULTS = ''; return say('Not folded; here is the answer.') },
        say('turn 2'),
      ]
      const model = new ScriptedModel((o) => (isReportInstruction(o.messages.at(-1)) ? say('## Findings\\n- x') : ((r) => (typeof r === 'function' ? r() : r ?? say('done')))(replies.shift())))
      const root = await bootHost(model)
      await root.plugin(Checkpoint, { store: tempStore() })
      await root.plugin(Rewind, {})
      root.tools.register(probeTool(() => 'x'.repeat(400)))
      const { agent } = await root.agents.create({ sessionId: SessionId('internal'), agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: '/' } })
      await runTurn(agent, 'Look at the parser.')
      await runTurn(agent, 'Anything else?')
      const result = agent.session.events.find((e) => e.type === 'tool/result' && e.data.message.content[0].toolCallId === 'r1').data.message.content[0]
      const warnings = agent.session.events.filter((e) => e.type === 'user/message' && e.data.source?.plugin === 'rewind' && e.data.source.markId === undefined).length
      process.stdout.write(JSON.stringify({ text: result.content.map((b) => b.text).join(''), warnings }))
      process.exit(0)
    `
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: faultsEnv(''), timeout: 120_000 })
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.match(out.text, /^Error: INTERNAL: dsh-fold failed internally, through no fault of your call \(`dsh-fold internal error in rewind \(test fault panic:rewind\)[^`]*`\)\. Checkpoint 1 is still open\. Nothing changed\. Do not retry: continue the task with the investigation unfolded, and tell the user\.$/)
    assert.equal(out.warnings, 0, 'no warning after INTERNAL, in this turn or the next')
  })

  it('a checkpoint the store cannot take says no checkpoint was set, and to tell the user', async () => {
    const store = tempStore()
    mkdirSync(path.dirname(store), { recursive: true })
    writeFileSync(store, '{"unit":')
    const h = await host([calls('k1', 'checkpoint', { objective: 'x' }), say('Continuing without a checkpoint.')], { checkpoint: { store } })
    await runTurn(h.agent, 'Look.')
    assert.match(textOf(resultOf(h.agentRequests()[1], 'k1')), /^Error: STORE_CORRUPT: The checkpoint store cannot be read \(`[^`]+`\); it was left as it was\. No checkpoint was set\. Checkpoints cannot be set or folded until the user repairs or moves the file\. Do not retry: tell the user, and continue the task without checkpoints\.$/)
  })

  it('every fold error says whether the checkpoint is still open and what to do: retry, continue, or tell the user', () => {
    const names = { checkpoint: 'checkpoint', rewind: 'rewind' }
    const mark = { id: 3, objective: 'x' }
    const codes = ['NO_CHECKPOINT', 'EMPTY_REGION', 'UNBALANCED', 'FOLD_IN_PROGRESS', 'CHANGED', 'SHRINK', 'SUMMARIZE_FAILED', 'ABORTED', 'COMPACTION_BUSY', 'HOST_FAILED', 'STORE_CORRUPT', 'STORE_VERSION', 'STORE_IO', 'STORE_LOADING', 'INVALID_ARGUMENT', 'INTERNAL']
    for (const language of /** @type {const} */ (['en', 'zh'])) {
      const state = language === 'en' ? /Checkpoint 3 is still open\.|Checkpoint 3 is already folded|No checkpoint is open\.|cannot be read\./ : /检查点 3 仍未折叠。|检查点 3 已经折叠过|当前没有未折叠的检查点。|无法读取/
      const next = language === 'en' ? /call `rewind` (again|once more)|call again|continue|tell the user|do not call/i : /再次调用|再调用|继续|告诉用户|不要为它再次调用/
      for (const code of codes) {
        const s = code === 'NO_CHECKPOINT' ? 'none' : code.startsWith('STORE') ? 'unknown' : 'open'
        const text = failureText({ code, detail: 'the detail', mark: s === 'none' ? null : mark, state: s }, names, language)
        assert.ok(text.startsWith(`${code}: `), text)
        assert.match(text, state, `${language} ${code}: the checkpoint's state — ${text}`)
        assert.match(text, next, `${language} ${code}: what to do — ${text}`)
        assert.doesNotMatch(text, /surface node|seq \d/, text)
      }
      assert.match(failureText({ code: 'EMPTY_REGION', mark, state: 'folded' }, names, language), language === 'en' ? /was folded already/ : /已经折叠过/)
    }
  })
})

// ---- 4. the report call knows the purpose ------------------------------------------------------

describe('4. the report call knows the purpose', () => {
  it("carries the checkpoint's objective, the user's latest request, the user's words from the span, a length target and the sections", async () => {
    const h = await host([
      calls('k1', 'checkpoint', { objective: 'find why the parser drops tokens' }),
      // The user corrects the course while the investigation runs: the message lands at the next
      // step boundary, inside the span.
      (/** @type {any} */ agent) => {
        agent.inject(createUserMessage({ content: [{ type: 'text', text: 'Only look at files under src/, and keep the fix minimal.' }], source: { kind: 'user' } }))
        return calls('p1', 'probe', { path: 'parser.js' })
      },
      calls('p2', 'probe', { path: 'src/lexer.js' }),
      calls('r1', 'rewind'),
    ])
    await runTurn(h.agent, 'Why does the parser drop the last token?')
    const [report] = h.reportRequests()
    const instruction = textOf(report.messages.at(-1))
    assert.match(instruction, /^Write a report that will replace the exploration above in your context\./)
    assert.match(instruction, /\nIts purpose \(checkpoint 1\): find why the parser drops tokens\n/)
    assert.match(instruction, /\nThe user's latest request, before the exploration:\n> Why does the parser drop the last token\?\n/)
    assert.match(instruction, /The user wrote these during the exploration;[^\n]*in their words:\n> Only look at files under src\/, and keep the fix minimal\./)
    assert.match(instruction, /\nWrite at most about \d+ characters\.\n/)
    assert.match(instruction, /under a section with nothing to say, write "\(none\)"/)
    assert.match(instruction, /## Findings\nWhat the exploration established, as it answers its purpose\./)
    assert.ok(instruction.endsWith('Output only the report: no preamble, no closing remark.'))
    assert.ok(instruction.endsWith(INSTRUCTIONS.en))
  })

  it('a report cut off at maxTokens is retried, asking for a shorter one, and never committed as whole', async () => {
    const cut = { text: '## Findings\n- `skipComment` consumes the E', finish: 'max-tokens' }
    let n = 0
    const h = await host([calls('k1', 'checkpoint', { objective: 'read the parser' }), calls('p1', 'probe', { path: 'parser.js' }), calls('r1', 'rewind'), say('Done.')], {
      report: () => (n++ === 0 ? cut : say(REPORT)),
    })
    await runTurn(h.agent, 'Look at the parser.')
    const [first, second] = h.reportRequests()
    assert.ok(second, 'a second report call')
    assert.doesNotMatch(textOf(first.messages.at(-1)), /cut off/)
    assert.match(textOf(second.messages.at(-1)), /Your previous report was cut off at the length limit: write a shorter one\./)
    const report = h.agent.session.events.findLast((/** @type {any} */ e) => e.type === 'user/message' && isRewindReportSource(e.data.source))
    assert.equal(splitReportFrame(textOf(report.data)).body, REPORT)
  })

  it('cut off every time: SUMMARIZE_FAILED with nothing written, or the extractive report with fallback: extractive', async () => {
    const cut = { text: '## Findings\n- `skipComment` consumes the E', finish: 'max-tokens' }
    const failing = await host([calls('k1', 'checkpoint'), calls('p1', 'probe', { path: 'parser.js' }), calls('r1', 'rewind'), say('Done.')], { report: cut, rewind: { maxSummarizationRetries: 1 } })
    await runTurn(failing.agent, 'Look.')
    assert.match(textOf(resultOf(failing.agentRequests()[3], 'r1')), /^Error: SUMMARIZE_FAILED: The report could not be written \(`rewind summarization was cut off at its output budget \(maxTokens\) after 1 retries/)
    assert.ok(!failing.agent.session.events.some((/** @type {any} */ e) => e.type === 'user/message' && isRewindReportSource(e.data.source) && e.data.source.markId))
    const falling = await host([calls('k1', 'checkpoint'), calls('p1', 'probe', { path: 'parser.js' }), calls('r1', 'rewind'), say('Done.')], { report: cut, rewind: { maxSummarizationRetries: 1, fallback: 'extractive' } })
    await runTurn(falling.agent, 'Look.')
    assert.match(textOf(resultOf(falling.agentRequests()[3], 'r1')), /replaced by a report extracted from them/)
  })
})

// ---- 5. one clear "when" -------------------------------------------------------------------------

describe('5. one clear "when"', () => {
  it('one section says what an investigation is, when not to checkpoint, one at a time, user messages folded; descriptions say what, when, when not, returns', async () => {
    const h = await host([say('Hi.')])
    await runTurn(h.agent, 'Hello.')
    const [request] = h.agentRequests()
    const { sections } = await h.root.systemPrompt.assemble()
    const ours = sections.filter((/** @type {any} */ s) => /^tool:(checkpoint|rewind)$/.test(s.name))
    assert.deepEqual(ours.map((/** @type {any} */ s) => s.name), ['tool:rewind'])
    const text = ours[0].text
    assert.match(text, /An investigation is a self-contained lookup or diagnosis/)
    assert.match(text, /whose raw output you will not need again/)
    assert.match(text, /Do not checkpoint the whole task, or text you will edit next/)
    assert.match(text, /Keep one checkpoint open at a time/)
    assert.match(text, /user messages that arrived meanwhile are folded into it too/)
    assert.doesNotMatch(text, /changes nothing/, 'no contradiction of the guard')
    for (const name of ['checkpoint', 'rewind']) {
      const tool = request.tools.find((/** @type {any} */ t) => t.name === name)
      const sentences = tool.description.split(/(?<=[.;:])\s+(?=[A-Z])/).filter(Boolean)
      assert.ok(sentences.length >= 3 && sentences.length <= 4, `${name}: ${sentences.length} sentences: ${tool.description}`)
      assert.match(tool.description, /Returns/)
      assert.match(tool.description, /Not (for|while)/)
    }
  })

  it('the checkpoint result says "Checkpoint N set; call rewind when done", and a second checkpoint while one is open says so', async () => {
    const h = await host([calls('k1', 'checkpoint', { objective: 'a' }), calls('p1', 'probe', { path: 'parser.js' }), calls('k2', 'checkpoint', { objective: 'b' }), say('Done.')])
    await runTurn(h.agent, 'Look.')
    const requests = h.agentRequests()
    assert.equal(textOf(resultOf(requests[1], 'k1')), 'Checkpoint 1 set; call `rewind` when the investigation is done.')
    assert.equal(
      textOf(resultOf(requests[3], 'k2')),
      'Checkpoint 2 set; call `rewind` when the investigation is done. Checkpoint 1 was still open: this one replaces it, and the steps since checkpoint 1 stay in your context unfolded.',
    )
  })

  it('the checkpoint tool never promises a fold tool that is not mounted', async () => {
    const model = new ScriptedModel(() => say('Hi.'))
    const root = await bootHost(model)
    await root.plugin(Checkpoint, { store: tempStore() })
    const tool = root.tools.schemas().find((/** @type {any} */ t) => t.name === 'checkpoint')
    assert.equal(tool.description, WORDS.en.checkpointTool({ checkpoint: 'checkpoint' }))
    assert.doesNotMatch(tool.description, /`rewind`/)
    const { sections } = await root.systemPrompt.assemble()
    assert.ok(!sections.some((/** @type {any} */ s) => /checkpoint/i.test(s.text ?? '')), 'no section asks for checkpoints')
  })
})
