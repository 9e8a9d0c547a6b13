/**
 * @module resume
 *
 * Contract: `resumeRows(sessionId)` returns the patch rows that make a headless host RESUME a
 * persisted session instead of starting a new one (the rc.8 headless runner always creates a
 * fresh session): the `headless-runner` row disabled, and a runner row that loads
 * `sessionId` through `ctx.agents.resume` (DSH's own resume path: the persistence backend
 * reads `session.jsonl.zstd`, repairs an interrupted turn with its closers, and publishes the
 * restored session), waits for it to settle, sends the task (from the same `headlessStartup`
 * service the headless runner reads) as the next user message, runs the turn, flushes, prints
 * the last assistant text and exits 0 when the turn completed — what the headless runner does
 * for a new session. The runner's source is written into the host folder (as `host.mjs` does
 * with its boot script) so its bare imports resolve to the host's own packages.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

import { ensureHost } from './install.mjs'

const RUNNER_SOURCE = String.raw`// Written by __test__/e2e/harness/resume.mjs: the headless runner, resuming a persisted session.
import { installModelSelection } from '@deepseek-ai/dsh-agent'
import { createUserMessage } from '@deepseek-ai/dsh-llm'

export const name = 'e2e-resume-runner'
export const inject = ['agentDefaultModel', 'agents', 'sessions', 'headlessStartup']

async function run (ctx, config, exit) {
  await ctx.get('loader')?.await()
  const selection = ctx.agentDefaultModel.currentSelection()
  const { agent } = await ctx.agents.resume({
    resumeSessionId: config.sessionId,
    agentOptions: { provider: selection.provider, model: selection.model },
    setup: (agentCtx) => { installModelSelection(agentCtx, { current: selection, assembled: undefined }) },
  })
  await agent.whenIdle()
  const firstSeq = agent.session.seq
  agent.followup(createUserMessage({ content: [{ type: 'text', text: ctx.headlessStartup.task }], source: { kind: 'user' } }))
  await agent.whenIdle()
  await ctx.sessions.flush(agent.session)
  let text = ''
  let reason
  for (const event of agent.session.events.slice(firstSeq)) {
    if (event.type === 'assistant/message') {
      const joined = event.data.message.content.filter((b) => b.type === 'text').map((b) => b.text).join('')
      if (joined !== '') text = joined
    }
    if (event.type === 'turn/end') reason = event.data.reason
  }
  process.stdout.write(text + '\n')
  if (reason?.kind === 'error') process.stderr.write('dsh: ' + reason.error.code + ': ' + reason.error.message + '\n')
  exit(reason?.kind === 'completed' ? 0 : 1)
}

export function apply (ctx, config) {
  const exit = ctx.get('appExit')
  run(ctx, config, exit).catch((error) => { process.stderr.write('dsh: ' + (error?.stack ?? error) + '\n'); exit(1) })
}
`

/** The runner file inside the host folder. */
function runnerFile () {
  const file = join(ensureHost().hostDir, 'dsh-e2e-resume-runner.mjs')
  if (!existsSync(file) || readFileSync(file, 'utf8') !== RUNNER_SOURCE) writeFileSync(file, RUNNER_SOURCE)
  return file
}

/** Patch rows resuming `sessionId` in place of a new headless session. @param {string} sessionId */
export function resumeRows (sessionId) {
  return [
    { id: 'headless-runner', disabled: true },
    { id: 'e2e-resume-runner', name: runnerFile(), config: { sessionId } },
  ]
}
