/**
 * @module __test__/compaction/lost-stamp
 * The lost-stamp scenario (issue 28, item 1) on real DSH parts, as phases a test runs in one
 * process or split across two with a restart between them (`lost-stamp-child.mjs`):
 *
 * 1. `fold`: the user asks for an investigation; the model checkpoints, probes twice, rewinds
 *    (the report lands, but the store's folder is swapped for a file right then, so the durable
 *    stamp fails: the mark still reads active, as after a crash between commit and stamp), then
 *    goes on with two more probes and answers. The phase ends once the rewind plugin has logged
 *    that the stamp's last try failed (until then the mark reads folded in memory). The store
 *    stays unwritable until `heal`, so nothing before it can finish the stamp;
 * 2. `compact`: `/compact` with the profile's backend (dsh-fold's or compaction-basic) replaces
 *    the history, the rewind report with it;
 * 3. `heal`: the store's folder is back (the stamp can be written from now on);
 * 4. `rewind`: a rewind, as a model obeying an old warning would call it;
 * 5. `later`: the user's next request, which the model answers; at its turn's end the turn
 *    guard decides whether to ask for a rewind (and the scripted model obeys it if it does).
 *
 * `facts` is what the test judges: the rewind reports of mark 1 in the log, whether the later
 * request is still in the model's context, the guard's warnings, and the mark's state.
 */
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { tmpdir } from 'node:os'

import { SessionId, adoptSessionEvent, interruptedTurnClosers } from '@deepseek-ai/dsh-session'

import Checkpoint from '../../plugin/fold/checkpoint.js'
import Rewind from '../../plugin/fold/rewind.js'
import { isRewindReportSource } from '../../plugin/shared/session.js'
import { stampFailure } from '../helpers/stamp.mjs'
import { PressureModel, agentOn, bootHost, probe, prompt, textOf } from './harness.mjs'

export const REQUEST = 'Find why the parser drops the last token.'
export const LATER = 'Now rename the --quick flag to --fast in src/cli.rs and keep --quick as an alias.'
export const SESSION = 'lost-stamp'

/** Whether a message is the turn guard's warning (the rewind plugin's, naming no mark). @param {any} m */
const isWarning = (m) => m?.role === 'user' && isRewindReportSource(m.source) && m.source.markId === undefined

/** The call id a tool-result message answers. @param {any} m */
const answered = (m) => m?.content?.find((/** @type {any} */ b) => b.type === 'tool-result')?.toolCallId

/**
 * The model: decides from the last message only, so it picks up where it left off after a restart.
 * @param {any} options @param {number} n
 */
function script(options, n) {
  const last = options.messages.at(-1)
  if (isWarning(last)) return { calls: [{ id: `rw-guard-${n}`, name: 'rewind', args: {} }] }
  const text = last?.role === 'user' ? textOf(last) : ''
  if (text === REQUEST) return { calls: [{ id: 'cp', name: 'checkpoint', args: { objective: 'find why the parser drops the last token' } }] }
  if (text === LATER) return { text: 'Renamed --quick to --fast in src/cli.rs; --quick stays as an alias.' }
  const id = String(answered(last) ?? '')
  if (id === 'cp') return { calls: [probe('p1', 'src/parser.rs')] }
  if (id === 'p1') return { calls: [probe('p2', 'src/lexer.rs')] }
  if (id === 'p2') return { calls: [{ id: 'rw', name: 'rewind', args: {} }] }
  // Work after the fold, so a compaction's kept tail is this and not the report.
  if (id === 'rw') return { calls: [probe('p3', 'src/cli.rs')] }
  if (id === 'p3') return { calls: [probe('p4', 'src/main.rs')] }
  if (id === 'p4') return { text: 'The lexer drops the token after a trailing comment: fix it in src/lexer.rs.' }
  return { text: 'Done.' }
}

/**
 * A real host with checkpoint, rewind (extractive reports) and one compaction backend that
 * compacts only on `/compact`, on the checkpoint store `store`.
 * @param {'fold' | 'basic'} backend @param {string} store
 */
export async function boot(backend, store) {
  const model = new PressureModel({ contextWindow: 6000, script })
  const root = await bootHost({
    model,
    backend,
    config: { auto: false },
    before: async (/** @type {any} */ r) => {
      await r.plugin(Checkpoint, { store })
      await r.plugin(Rewind, { summarizer: 'extractive' })
    },
  })
  return { root, model }
}

/**
 * The agent: on a fresh session, or on the session restored from `events` (a restart: DSH's
 * own closers for an interrupted turn, as its persistence does).
 * @param {any} root @param {any[]} [events]
 */
export async function agentFor(root, events) {
  if (!events) return agentOn(root, SESSION)
  const seed = [...events, ...interruptedTurnClosers(events).map(adoptSessionEvent)]
  const { agent } = await root.agents.create({ sessionId: SessionId(SESSION), seed, agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
  return agent
}

/**
 * Runs one phase.
 * @param {'fold' | 'compact' | 'heal' | 'rewind' | 'later'} name
 * @param {{root: any, agent: any, store: string}} host
 * @returns {Promise<any>} the phase's own answer (the rewind's result or error, the compaction's outcome)
 */
export async function phase(name, { root, agent, store }) {
  const session = agent.session
  const dir = path.dirname(store)
  if (name === 'fold') {
    // Once the report lands, the store's folder becomes a file: every stamp write fails.
    const off = root.on('session/event', (/** @type {any} */ _s, /** @type {any} */ event) => {
      if (event.type === 'user/message' && isRewindReportSource(event.data.source) && event.data.source.markId !== undefined && !existsSync(`${dir}.away`)) {
        renameSync(dir, `${dir}.away`)
        writeFileSync(dir, 'not a folder')
      }
    })
    // The stamp is written off the fold's path and retried; until its last try fails the mark
    // reads folded in memory. The phase ends when the rewind plugin logs that failure, so what
    // comes next (a restart's facts, the compaction) meets a stamp that is lost, not in flight.
    const lost = stampFailure(root, 1)
    try {
      await prompt(agent, REQUEST)
      await lost.failed
    } finally {
      off()
      lost.stop()
    }
    return undefined
  }
  if (name === 'heal') {
    if (existsSync(`${dir}.away`)) {
      rmSync(dir)
      renameSync(`${dir}.away`, dir)
    }
    return undefined
  }
  if (name === 'compact') {
    const execution = await root.commands.execute(agent, '/compact', [], AbortSignal.timeout(20_000))
    return execution.result
  }
  if (name === 'rewind') return root.rewind.rewind(agent).catch((/** @type {any} */ e) => ({ code: e.code, message: e.message }))
  await prompt(agent, LATER)
  return undefined
}

/**
 * What the test judges, after the phases.
 * @param {any} root @param {any} session
 */
export async function facts(root, session) {
  const events = session.events
  const reports = events.filter((/** @type {any} */ e) => e.type === 'user/message' && isRewindReportSource(e.data.source) && e.data.source.markId !== undefined)
  const messages = session.deriveMessages()
  const laterAt = events.findIndex((/** @type {any} */ e) => e.type === 'user/message' && textOf(e.data) === LATER)
  return {
    reports: reports.map((/** @type {any} */ e) => ({ seq: e.seq, markId: e.data.source.markId, onSurface: session.surface.nodes.includes(e.seq) })),
    /** The later request, as the model reads it from now on (null before it was asked). */
    laterInContext: laterAt < 0 ? null : messages.some((/** @type {any} */ m) => m.role === 'user' && textOf(m) === LATER),
    /** Guard warnings injected after the later request. */
    warningsAfterLater: laterAt < 0 ? 0 : events.slice(laterAt).filter((/** @type {any} */ e) => e.type === 'user/message' && isWarning(e.data)).length,
    active: await root.checkpoint.hasActive(session.id),
    surface: session.surface.nodes.length,
    events: events.length,
  }
}
