/**
 * @module __test__/compaction/replay
 * Recorded agent trajectories replayed as long sessions through the real agent loop, for the
 * compaction backend's measurements (`bench/compaction.mjs`, figure 11) and for the train-of-
 * thought test (`train-of-thought.test.mjs`).
 *
 * A session is made from the trajectory corpus (`__test__/fixtures/trajectories/`, taken in name
 * order and again from the start when a session needs more): one user turn per segment, the
 * segment's recorded assistant messages as the scripted model's replies and its recorded tool
 * outputs as the tools' results (a failed output is thrown, so the host records it as failed).
 * Subtasks are placed as an agent places them: every fourth segment is plain work; one opens with
 * `checkpoint` and stays an active exploration until the next one; one opens with `checkpoint`
 * and ends with `rewind` (a finished exploration, folded by the extractive report); one runs in
 * block mode (each call goes through `block_run_code` tagged with the segment's block id — a
 * stand-in that returns the recorded output: the host here has no Code Mode). Everything runs
 * through a real `AgentLoop` + `TokenMeter` + `SessionStore` + the real checkpoint, rewind and
 * recall plugins; the model's adapter reports a small context window, so pressure triggers.
 * compaction-basic's summarizer is answered by the same adapter with a scripted summary of
 * basic's usual size (its eight sections, ~6,000 chars).
 *
 * Whatever the model sees is what DSH derives: `compactionsOf` reads each compaction back from
 * the session's log — the range it replaced, the surface right after it (the checkpoint and the
 * kept tail, replayed from the log's surface operations) and the model's next messages;
 * `gradeRetention` what a compaction kept of its range and what recall finds again.
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'
import { SessionId } from '@deepseek-ai/dsh-session'
import { defineTool } from '@deepseek-ai/dsh-tools'

import { keptCounts, loadSegments, missing, regionFacts } from '../../bin/report-facts.mjs'
import Checkpoint from '../../plugin/fold/checkpoint.js'
import Rewind from '../../plugin/fold/rewind.js'
import Recall from '../../plugin/recall/recall.js'
import { eventLog } from '../../plugin/shared/session.js'
import { bootHost, PressureModel, prompt, textOf } from './harness.mjs'

export const BASIC_SUMMARY = ['## Primary Request and Intent', '## Key Technical Concepts', '## Files and Code', '## Errors and Fixes', '## Pending Jobs', '## Current Work', '## Next Step', '## Critical Context']
  .map((h) => `${h}\n${'- a terse bullet of the kind a summarizer writes, naming a path like src/app/module.py and a command\n'.repeat(6)}`)
  .join('\n')

/** @param {string} s */
export function safeJson(s) {
  try {
    return JSON.parse(s)
  } catch {
    return { raw: s }
  }
}

/** Tool names the replay host registers (checkpoint and rewind are ours). @param {string} name */
const toolName = (name) => (name === 'checkpoint' || name === 'rewind' ? `${name}_recorded` : name)

/**
 * @typedef {{prompt: string, replies: any[], results: Map<string, {text: string, isError: boolean}>, mode: string, block: string}} Turn
 */

/**
 * One session's script of at least `tokens` tokens of recorded messages: per turn, its prompt and
 * its replies.
 * @param {number} tokens @param {ReturnType<typeof loadSegments>} [segments]
 * @returns {Turn[]}
 */
export function script(tokens, segments = loadSegments()) {
  const turns = []
  let total = 0
  for (let k = 0; total < tokens; k++) {
    const seg = segments[k % segments.length]
    const round = Math.floor(k / segments.length)
    const mode = ['plain', 'mark', 'mark-fold', 'block'][k % 4]
    const block = `seg${k}`
    /** @type {any[]} */
    const replies = []
    /** @type {Map<string, {text: string, isError: boolean}>} */
    const results = new Map()
    if (mode.startsWith('mark')) replies.push({ calls: [{ id: `k${k}-cp`, name: 'checkpoint', args: { objective: `${seg.name}` } }] })
    let pendingText = ''
    for (const m of seg.messages) {
      if (m.role === 'assistant' || m.source?.kind === 'model') {
        const text = m.content.filter((/** @type {any} */ b) => b.type === 'text').map((/** @type {any} */ b) => b.text).join('\n')
        const calls = m.content
          .filter((/** @type {any} */ b) => b.type === 'tool-call')
          .map((/** @type {any} */ b) => {
            const id = `k${k}-${b.id}`
            const args = typeof b.arguments === 'string' ? safeJson(b.arguments) : b.arguments ?? {}
            return mode === 'block' ? { id, name: 'block_run_code', args: { ids: [block], description: b.name, code: `await tools.${b.name}(${JSON.stringify(args)})` } } : { id, name: toolName(b.name), args }
          })
        if (!calls.length) {
          pendingText += (pendingText ? '\n' : '') + text
          continue
        }
        replies.push({ text: [pendingText, text].filter(Boolean).join('\n'), calls })
        pendingText = ''
      } else {
        for (const b of m.content) {
          if (b.type !== 'tool-result') continue
          const text = (b.content ?? []).map((/** @type {any} */ c) => c.text ?? '').join('\n')
          results.set(`k${k}-${b.toolCallId}`, { text, isError: Boolean(b.isError) })
        }
      }
    }
    if (mode === 'mark-fold') replies.push({ calls: [{ id: `k${k}-rw`, name: 'rewind', args: {} }] })
    replies.push({ text: [pendingText, `Finished ${seg.name}${round ? ` (round ${round + 1})` : ''}.`].filter(Boolean).join('\n') })
    const segTokens = Math.ceil(JSON.stringify(seg.messages).length / 4)
    total += segTokens
    turns.push({ prompt: `Task ${k + 1} (${mode}): work through ${seg.name}. Keep every change minimal; report the files you touched.`, replies, results, mode, block })
  }
  return turns
}

/**
 * Runs one scripted session through a real agent loop with one compaction backend.
 * @param {{backend: any, turns: Turn[], window: number, config?: object, sessionId?: string}} options
 *   `backend`: the backend's plugin class (`FoldCompaction`, DSH's `BasicCompactionEngine`, or a
 *   subclass of either)
 * @returns {Promise<{root: any, session: any, model: PressureModel, dispose: () => Promise<void>}>}
 */
export async function replay({ backend, turns, window, config = {}, sessionId = `replay-${window}` }) {
  let turn = 0
  let reply = 0
  const model = new PressureModel({
    contextWindow: window,
    script: () => {
      const t = turns[turn]
      return t.replies[Math.min(reply++, t.replies.length - 1)]
    },
    summarize: () => ({ text: BASIC_SUMMARY }),
  })
  const results = new Map()
  for (const t of turns) for (const [id, r] of t.results) results.set(id, r)
  const names = new Set(turns.flatMap((t) => t.replies.flatMap((r) => (r.calls ?? []).map((/** @type {any} */ c) => c.name))))
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-replay-'))
  const root = await bootHost({
    model,
    backend: 'none',
    before: async (r) => {
      await r.plugin(Checkpoint, { store: path.join(dir, 'checkpoint.json') })
      await r.plugin(Rewind, { summarizer: 'extractive' })
      await r.plugin(Recall, {})
      for (const name of names) {
        if (name === 'checkpoint' || name === 'rewind') continue
        r.tools.register(
          defineTool({
            name,
            description: `Recorded tool ${name}.`,
            parameters: {},
            output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
            execute: async (_args, exec) => {
              const recorded = results.get(exec.callId)
              if (recorded?.isError) throw new Error(recorded.text)
              return recorded?.text ?? ''
            },
          }),
        )
      }
    },
  })
  await root.plugin(backend, config)
  const { agent } = await root.agents.create({ sessionId: SessionId(sessionId), agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
  for (turn = 0; turn < turns.length; turn++) {
    reply = 0
    await prompt(agent, turns[turn].prompt)
  }
  const dispose = async () => {
    await root.dispose?.()
    rmSync(dir, { recursive: true, force: true })
  }
  return { root, session: agent.session, model, dispose }
}

/**
 * The surface (node seqs in model order) after the log's events, replayed from their surface
 * operations: `at(seq)` is the surface right after event `seq`, asked in increasing `seq`.
 * @param {readonly any[]} log
 */
function surfaces(log) {
  /** @type {number[]} */
  const nodes = []
  let next = 0
  return {
    /** @param {number} seq */
    at(seq) {
      for (; next <= seq; next++) {
        const op = log[next].surfaceOp
        if (op === 'append') nodes.push(next)
        else if (op?.op === 'replace') {
          const i = nodes.indexOf(op.start)
          const j = nodes.indexOf(op.end)
          nodes.splice(i, j - i + 1, next)
        }
      }
      return nodes.slice()
    },
  }
}

/**
 * Each compaction of the session, read back from its log: the `compaction/summary` event, the
 * replacement, the messages of the range's own events (replacements in it — earlier checkpoints,
 * reports — are what they carry, not new work), the earlier checkpoints in it (any backend's),
 * the range's price, the messages the model saw right after it (the checkpoint first), and the
 * model's next assistant messages in the same turn (the next prompt is another task).
 * @param {any} session
 */
export function compactionsOf(session) {
  const log = eventLog(session)
  const surface = surfaces(log)
  const out = []
  for (const e of log) {
    if (e.type !== 'compaction/summary') continue
    const replacement = log[e.seq + 1]
    const range = []
    const carried = []
    for (const s of e.data.shadowedSeqs) {
      const ev = log[s]
      const m = session.deriveEventMessage(ev)
      if (!m) continue
      if (ev.surfaceOp?.op !== 'replace') range.push(m)
      else if (isCompactCheckpointSource(m.source)) carried.push(m)
    }
    const context = surface
      .at(replacement.seq)
      .map((s) => session.deriveEventMessage(log[s]))
      .filter(Boolean)
    const next = []
    // The same turn's next steps: the next prompt starts another task.
    for (let s = replacement.seq + 1; s < log.length && next.length < 12; s++) {
      const ev = log[s]
      if (ev.type === 'user/message' && ev.data.source?.kind === 'user') break
      if (ev.type === 'assistant/message' && ev.data.message.content.length) next.push(ev.data.message)
    }
    out.push({ summary: e, replacement, range, carried, context, next, rangeTokens: e.data.shadowedTokenCount })
  }
  return out
}

/** @param {string} s */
const escapeRe = (s) => `/${s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}/`

/**
 * What one compaction kept of its range's own messages (bin/report-facts.mjs's definitions): the
 * named paths, commands and error lines whose first 200 chars the checkpoint holds, the user
 * messages and model-written summaries it carries word for word, and whether `recall` by the
 * compaction's id finds each verbatim item and up to 20 of the facts again (the first `probes` of
 * those only, when given: each recall reads the range again).
 * @param {any} root @param {any} session @param {any} summary the `compaction/summary` event
 * @param {{probes?: number}} [options]
 */
export async function gradeRetention(root, session, summary, { probes: most = Infinity } = {}) {
  const log = eventLog(session)
  const replacement = log[summary.seq + 1]
  const text = textOf(replacement.data)
  const messages = []
  const verbatim = []
  for (const s of summary.data.shadowedSeqs) {
    const ev = log[s]
    const m = session.deriveEventMessage(ev)
    if (!m) continue
    const source = ev.data?.source
    const replaced = ev.surfaceOp?.op === 'replace'
    if (ev.type === 'user/message' && (source?.kind === 'user' || (replaced && source?.plugin !== 'compact') || source?.blockPtc)) verbatim.push({ seq: s, text: textOf(ev.data) })
    if (!replaced) messages.push(m)
  }
  const facts = regionFacts(messages.map((m) => ({ ...m, role: m.role ?? 'user' })))
  const kept = keptCounts(text, facts)
  if (process.env.BENCH_MISSING) {
    const gone = missing(text, facts)
    // BENCH_MISSING=<file>: every compaction's whole record (its text, what it missed) as a JSON line.
    if (process.env.BENCH_MISSING !== '1') appendFileSync(process.env.BENCH_MISSING, `${JSON.stringify({ seq: summary.seq, text, gone, totals: { paths: facts.paths.length, commands: facts.commands.length, errors: facts.errors.length }, range: summary.data.shadowedTokenCount, fold: replacement.data.source.foldCompaction })}\n`)
    else if (gone.paths.length + gone.commands.length) console.error('MISSING', summary.seq, JSON.stringify({ ...gone, errors: gone.errors.slice(0, 3) }).slice(0, 600), 'items', JSON.stringify(replacement.data.source.foldCompaction?.items), 'degraded', replacement.data.source.foldCompaction?.degraded)
  }
  const verbatimKept = verbatim.filter((v) => text.includes(v.text.slice(0, Math.min(v.text.length, 2000)))).length
  // Recall: every verbatim item and a sample of facts, by this compaction's id.
  const id = summary.data.compactionId
  let tried = 0
  let found = 0
  const probes = [...verbatim.map((v) => v.text.split('\n').find((l) => l.trim().length > 8)?.trim().slice(0, 80)), ...facts.errors.slice(0, 10), ...facts.paths.slice(0, 5), ...facts.commands.slice(0, 5)].filter(Boolean).slice(0, most)
  for (const q of probes) {
    tried++
    // A call's arguments are recalled as the model wrote them (JSON): a command with quotes is
    // found in its JSON-escaped form.
    const probe = /** @type {string} */ (q).slice(0, 120)
    let hit = false
    for (const query of new Set([probe, JSON.stringify(probe).slice(1, -1)])) {
      const r = await root.recall.recall(session, { compaction: id, query: escapeRe(query) }).catch(() => ({ matches: 0 }))
      if (r.matches > 0) hit = true
    }
    if (hit) found++
  }
  return { kept, verbatim: { total: verbatim.length, kept: verbatimKept }, recall: { tried, found } }
}
