/**
 * @module docs-generators
 * What the docs' generated blocks (`<!-- test: output-of NAME ARGS -->`) must hold, produced
 * now from the real code: the demo's saved log (`dsh-fold demo --save`, read back with the CLI's
 * log reader and replayed into a real `@deepseek-ai/dsh-session` Session), recall's own function
 * and its hint line.
 *
 * - `demo-request-after-fold`: the model-visible messages of the first request after the demo's
 *   fold, one per line (role, then the text or the call, cut to one line);
 * - `recall-demo ARGS`: `recall(...)` with ARGS (JSON) on the demo session after its fold;
 * - `recall-hint`: the hint line that ends a fold's report (`recall`, fold 2, English);
 * - `model-text KEY LANG`: a text the fold rows write for the model (`plugin/fold/words.js`);
 * - `answer-kept`: the request after a fold the turn guard asked for, the answer kept (issue 32);
 * - `standing-cost`: the fold rows' standing cost per configuration (`./standing-cost.mjs`).
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { decodeStorageRecord, Session, SessionId, SESSION_FORMAT_VERSION } from '@deepseek-ai/dsh-session'

import { readSessionLog } from '../../bin/session-log.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The demo's saved log, replayed: `{events, session}`. */
function demoSession() {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-gen-'))
  try {
    const file = path.join(dir, 'demo.jsonl')
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'dsh-fold.mjs'), 'demo', '--save', file], { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`dsh-fold demo --save failed: ${r.stderr}`)
    const { header, events } = readSessionLog(file, { decodeStorageRecord, formatVersion: SESSION_FORMAT_VERSION })
    const { type: _t, ...meta } = header
    return { header, events, session: (/** @type {any[]} */ upTo) => Session.create(SessionId(header.id), upTo, meta) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** One line of a message's content. @param {any} m */
function describe(m) {
  const parts = []
  for (const b of m.content ?? []) {
    if (b.type === 'text') {
      const lines = b.text.split('\n').filter((l) => l.trim())
      const one = b.text.replace(/\s+/g, ' ').trim()
      const headings = lines.filter((l) => l.startsWith('## '))
      // A report: its frame's opening (cut), then its section headings.
      const frame = lines[0].startsWith('[') ? `${lines[0].slice(0, 48)}… ` : ''
      parts.push(headings.length > 1 ? `${frame}${headings.join(' / ')} (${b.text.length} chars)` : one.length > 70 ? `${one.slice(0, 69)}…` : one)
    }
    if (b.type === 'tool-call') parts.push(`→ ${b.name}(${typeof b.arguments === 'string' ? b.arguments : JSON.stringify(b.arguments)})`)
    if (b.type === 'tool-result') parts.push((b.content ?? []).map((/** @type {any} */ c) => c.text ?? '').join('').replace(/\s+/g, ' ').trim())
  }
  const text = parts.join(' ')
  return text.length > 150 ? `${text.slice(0, 149)}…` : text
}

/**
 * What the fold rows write for the model, from `plugin/fold/words.js` and the rows themselves:
 * `section`, `descriptions`, `marked`, `marked-again`, `frame`, `folded`, `guard`, `failure-shrink`,
 * `failure-route`, `instruction` (the report call's, for the demo's fold), each `en` or `zh`.
 * @param {string} args `KEY LANG`
 */
async function modelText(args) {
  const [key, language = 'en'] = args.split(/\s+/)
  const lang = /** @type {'en' | 'zh'} */ (language)
  const { WORDS, failureText } = await import('../../plugin/fold/words.js')
  const w = WORDS[lang]
  const n = { checkpoint: 'checkpoint', rewind: 'rewind' }
  const mark = { id: 1, objective: 'find why cargo test -p parser fails' }
  const texts = {
    section: () => w.section(n),
    descriptions: () => `checkpoint: ${w.checkpointTool(n)}\n  objective: ${w.objective}\nrewind: ${w.rewindTool(n)}`,
    marked: () => w.marked(1, undefined, n),
    'marked-again': () => w.marked(2, 1, n),
    frame: () => `${w.frame(mark, false)}\n\n## ${lang === 'zh' ? '发现' : 'Findings'}\n…`,
    folded: () => w.folded({ markId: 1, foldedNodes: 7, foldedChars: 5119, reportChars: 1122 }),
    guard: () => w.guard(mark, n),
    'failure-shrink': () => failureText({ code: 'SHRINK', mark, state: 'open' }, n, lang),
    'failure-route': () =>
      failureText({ code: 'SUMMARIZE_FAILED', detail: 'no provider/model available for rewind summarization: set both summarizationProvider and summarizationModel, route one request, or give the agent both a provider and a model', misconfigured: 'route', mark, state: 'open' }, n, lang),
    instruction: async () => {
      const { reportInstruction } = await import('../../plugin/fold/summarize.js')
      return reportInstruction({ markId: 1, objective: mark.objective, request: '`cargo test -p parser` fails since the unicode tests landed. Find out why and fix it.', during: [], targetChars: 1700 }, lang)
    },
  }
  const make = texts[/** @type {keyof typeof texts} */ (key)]
  if (!make) throw new Error(`no model-text ${key}`)
  return make()
}

/**
 * The item-2 probe on a real agent loop: the model answers with its checkpoint open, the guard
 * asks for the rewind, the model folds; the request it is sent next, one line per message.
 */
async function answerKept() {
  const { bootHost, ScriptedModel, say, tempStore, probeTool, runTurn, SessionId } = await import('./dsh.mjs')
  const { Checkpoint, Rewind } = await import('../../plugin/index.js')
  const { isReportInstruction } = await import('../../plugin/fold/summarize.js')
  const replies = [
    { calls: [{ id: 'k1', name: 'checkpoint', args: { objective: 'find why the parser drops tokens' } }] },
    { calls: [{ id: 'p1', name: 'probe', args: { path: 'parser.js' } }] },
    say('The parser drops the last token when the input ends in a comment: `skipComment` consumes the EOF token.'),
    { calls: [{ id: 'r1', name: 'rewind', args: {} }] },
    say('(folded)'),
  ]
  const report = '## Findings\n- `skipComment` in parser.js consumes the EOF token.\n## Recommended Next Step\n- Remove the extra `next()`.'
  const model = new ScriptedModel((o) => (isReportInstruction(o.messages.at(-1)) ? say(report) : (replies.shift() ?? say('Done.'))))
  const root = await bootHost(model)
  await root.plugin(Checkpoint, { store: tempStore() })
  await root.plugin(Rewind, {})
  root.tools.register(probeTool(() => 'parser.js: function skipComment() { while (!eof()) next(); next() } // the extra next() consumes EOF'))
  const { agent } = await root.agents.create({ sessionId: SessionId('answer-kept'), agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } })
  await runTurn(agent, 'Why does the parser drop the last token?')
  const after = model.requests.filter((r) => !isReportInstruction(r.messages.at(-1))).at(-1)
  return after.messages.map((/** @type {any} */ m) => `${(m.source?.kind === 'tool' ? 'tool' : m.role).padEnd(10)} ${describe(m)}`).join('\n')
}

/** @param {string} name @param {string} args @returns {Promise<string>} */
export async function generate(name, args) {
  if (name === 'model-text') return modelText(args)
  if (name === 'answer-kept') return answerKept()
  if (name === 'standing-cost') {
    const { standingCost, table } = await import('./standing-cost.mjs')
    return table(await standingCost())
  }
  if (name === 'recall-hint') {
    const { hintLine } = await import('../../plugin/recall/hint.js')
    return hintLine('recall', { fold: 2 }, 'en')
  }
  const demo = demoSession()
  const report = demo.events.find((e) => e.type === 'user/message' && e.data?.source?.plugin === 'rewind' && e.surfaceOp?.op === 'replace')
  const rewindResult = report && demo.events.find((e) => e.seq > report.seq && e.type === 'tool/result')
  if (!rewindResult) throw new Error('the demo log has no rewind result')
  if (name === 'demo-request-after-fold') {
    const next = demo.events.find((e) => e.seq > rewindResult.seq && e.type === 'assistant/message')
    const session = demo.session(demo.events.slice(0, next.seq))
    // rc.8 derives tool results to role `user` (source kind `tool`); the wire sends them as `tool`.
    return session.deriveMessages().map((/** @type {any} */ m) => `${(m.source?.kind === 'tool' ? 'tool' : m.role).padEnd(10)} ${describe(m)}`).join('\n')
  }
  if (name === 'recall-demo') {
    const { recall } = await import('../../plugin/recall/recall.js')
    const parsed = JSON.parse(args)
    const answer = await recall(demo.session(demo.events), parsed, { maxChars: 8000 })
    return `recall(${JSON.stringify(parsed).replace(/,/g, ', ').replace(/:/g, ': ')})\n→ ${answer.text.split('\n').join('\n  ')}`
  }
  throw new Error(`no docs generator ${name}`)
}
