/**
 * @module __test__/helpers/model-text
 * The checks of issue 32 item 6 on a text the model reads: it names no tool by its default name
 * (where a renamed tool is meant), and — in Chinese — holds no English sentence outside what it
 * quotes as data (code spans, double-quoted strings, tags, a leading error code). And the
 * scripted agent loop the tests drive (`scriptedHost`).
 */
import assert from 'node:assert/strict'
import { tmpdir } from 'node:os'

/** The tools' default names: none may appear where a renamed tool is meant. */
export const DEFAULTS = ['checkpoint', 'rewind', 'recall', 'block_run_code', 'block_summary']

/** The code spans of a text. @param {string} text */
const spans = (text) => [...text.matchAll(/`([^`\n]*)`/g)].map((m) => m[1])

/**
 * Where a text names a tool by its default name: in a code span (a name, or `tools.<name>`), as
 * a call (`name(`), or — in Chinese, where the words are not English — as a bare word (a row id
 * like `tool-rewind` is no tool name).
 * @param {string} text @param {'en' | 'zh'} language
 */
export function defaultNames(text, language) {
  const found = []
  // A code span names a tool when it is the name, or calls it (`name(`, `tools.name(`); a longer
  // span is a detail quoted from below (a file's path, an error), where words may be anything.
  for (const span of spans(text)) {
    if (DEFAULTS.includes(span.trim()) || /(?:^|[\s(])(?:await\s+)?(?:tools\.)?(checkpoint|rewind|recall|block_run_code|block_summary)\(/.test(span)) found.push(`\`${span}\``)
  }
  const outside = text.replace(/`[^`\n]*`/g, ' ')
  for (const m of outside.matchAll(/(?<![\w.-])(checkpoint|rewind|recall|block_run_code|block_summary)(?=\s*\()/g)) found.push(`${m[1]}(`)
  if (language === 'zh') for (const m of outside.matchAll(/(?<![\w-])(checkpoint|rewind|recall|block_run_code|block_summary)(?![\w-])/gi)) found.push(m[0])
  return found
}

/**
 * The English sentences of a Chinese text: three English words in a row, outside code spans,
 * double-quoted strings and `<tags>`.
 * @param {string} text
 */
export function englishIn(text) {
  const stripped = text
    .replace(/^(Error: )?[A-Z_]{4,}: /, '')
    .replace(/`[^`\n]*`/g, ' ')
    .replace(/"[^"\n]*"/g, ' ')
    .replace(/<\/?[a-z-]+>/g, ' ')
  return [...stripped.matchAll(/[A-Za-z][A-Za-z']+(?:[ ,;:()]+[A-Za-z][A-Za-z']+){2,}/g)].map((m) => m[0])
}

/**
 * Fails unless `text` speaks `language` (zh: no English sentence) and names no default tool.
 * @param {string} what @param {string} text @param {'en' | 'zh'} [language]
 */
export function assertSpeaks(what, text, language = 'zh') {
  assert.ok(text.trim(), `${what}: empty`)
  assert.deepEqual(defaultNames(text, language), [], `${what} names a tool by its default name:\n${text}`)
  if (language === 'zh') assert.deepEqual(englishIn(text), [], `${what} holds English:\n${text}`)
}


// ---- a real agent loop with the fold rows and a scripted model -------------------------------

/** A reply calling one tool. @param {string} id @param {string} name @param {object} [args] */
export const calls = (id, name, args = {}) => ({ calls: [{ id, name, args }] })

/** The text of a message's text blocks (and of a tool result's). @param {any} m */
export const textOf = (m) =>
  (m?.content ?? []).map((/** @type {any} */ b) => (b.type === 'text' ? b.text : b.type === 'tool-result' ? textOf(b) : '')).join('')

/** The tool result of call `id` in a request. @param {any} request @param {string} id */
export const resultOf = (request, id) =>
  request.messages.flatMap((/** @type {any} */ m) => m.content ?? []).find((/** @type {any} */ b) => b.type === 'tool-result' && b.toolCallId === id)

/**
 * A real DSH host (dsh.mjs's real LlmRuntime, AgentLoop, ...) whose model is scripted: agent
 * requests take the next of `replies` (a reply, or a function of the agent: it may inject a user
 * message), then `done`; report calls answer `report` (a reply, or a function). `rows(root)`
 * mounts the rows; a `probe` tool answers `file`.
 * @param {{replies: any[], report: any, done: any, file: string, rows: (root: any) => Promise<void>}} o
 */
export async function scriptedHost({ replies, report, done, file, rows }) {
  const { ScriptedModel, SessionId, bootHost, probeTool } = await import('./dsh.mjs')
  const { isReportInstruction } = await import('../../plugin/fold/summarize.js')
  const queue = [...replies]
  /** @type {any} */
  let agent
  const model = new ScriptedModel((/** @type {any} */ options, /** @type {number} */ n) => {
    if (isReportInstruction(options.messages.at(-1))) return typeof report === 'function' ? report(options, n) : report
    const next = queue.shift() ?? done
    return typeof next === 'function' ? next(agent) : next
  })
  const root = await bootHost(model)
  await rows(root)
  root.tools.register(probeTool(() => file))
  ;({ agent } = await root.agents.create({ sessionId: SessionId(`model-text-${Math.random().toString(36).slice(2)}`), agentOptions: { provider: 'scripted', model: 'm1' }, meta: { cwd: tmpdir() } }))
  const agentRequests = () => model.requests.filter((r) => !isReportInstruction(r.messages.at(-1)))
  const reportRequests = () => model.requests.filter((r) => isReportInstruction(r.messages.at(-1)))
  return { root, model, agent, agentRequests, reportRequests }
}
