// @ts-check
/**
 * @module bin/try-agent
 * The scripted model of `dsh-fold try` (no DEEPSEEK_API_KEY) and the small workspace it works
 * in. The model is a script, but everything it touches is real: the host runs its tool calls on
 * the files `writeWorkspace` wrote, the checkpoint store marks, the fold folds, recall reads the
 * session's own log. It plays one investigation the way dsh-fold is meant to be used:
 *
 * - checkpoint → explore (a listing; a read and a grep issued in one message; running the
 *   program; reading the file the grep pointed at) → rewind → recall (the exact line the report
 *   left out) → the answer, built from what the tools returned;
 * - in block mode (the wire offers only `block_run_code`): the same exploration as programs of
 *   block `explore`, closed from inside its last program with `tools.block_summary`, then
 *   `tools.recall({block: 'explore', ...})` inside a program of block `answer`, then the answer.
 *
 * - with `compaction` (`dsh-fold try --compaction`): first a survey of the project's run logs
 *   (three months of greeter runs, ~11k chars each, June's first: the misspelling was deployed
 *   mid-June), which at
 *   `COMPACTION_WINDOW` fills the context past the backend's threshold, so dsh-fold/compaction
 *   compacts it; then the same investigation, and before the answer `recall({compaction:
 *   'latest'})` of the deploy line the compaction took out of the context.
 *
 * Each step reads the request it answers (the tools offered, the last tool results), so a
 * tool that failed or a profile without dsh-fold's tools ends the run with a sentence saying
 * so instead of a wrong script. Title requests are answered with a title; a report request (a
 * profile whose rewind asks the model for its report) is answered with a short report.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'

import { isTitleRequest } from './host/model-server.mjs'

export const DEFAULT_TASK = 'node src/main.js greets the wrong person. Find out why and tell me the fix; do not edit anything.'

/** The workspace: a small Node program with a misspelled default name two files away from the symptom. */
const FILES = {
  'package.json': `${JSON.stringify({ name: 'greeter', version: '1.0.0', private: true, type: 'module', scripts: { start: 'node src/main.js', test: 'node test/greet.test.js' } }, null, 2)}\n`,
  'README.md': '# greeter\n\nPrints a greeting for the configured user: `node src/main.js`.\nThe name comes from `GREETER_NAME`, else from the defaults in `src/config.js`.\n',
  'src/main.js': "import { greet } from './greet.js'\nimport { loadConfig } from './config.js'\n\nconsole.log(greet(loadConfig()))\n",
  'src/greet.js': "/** Builds the greeting line for a config. */\nexport function greet(config) {\n  const name = config.user.displayName ?? config.user.name\n  return `${config.salutation}, ${name}!`\n}\n",
  'src/config.js': "/** The greeter's settings: defaults, then the environment. */\nconst DEFAULTS = {\n  salutation: 'Hello',\n  user: { name: 'Ada', displayName: 'Adda' },\n}\n\nexport function loadConfig(env = process.env) {\n  const user = env.GREETER_NAME ? { name: env.GREETER_NAME } : DEFAULTS.user\n  return { ...DEFAULTS, user }\n}\n",
  'test/greet.test.js': "import assert from 'node:assert/strict'\nimport { greet } from '../src/greet.js'\n\nassert.equal(greet({ salutation: 'Hi', user: { name: 'Bo' } }), 'Hi, Bo!')\nconsole.log('ok')\n",
}

/**
 * The context window `try --compaction` gives the model (tokens): the survey's three logs plus
 * the headless profile's system prompt and tool schemas (~8.6k tokens) cross its 0.8 threshold,
 * so a compaction comes within this short task.
 */
export const COMPACTION_WINDOW = 20_000

/** One month of greeter runs, four a day: the greeting each printed, and the deploy that changed it. @param {string} month `2025-04` @param {number} days */
function runLog(month, days) {
  const lines = []
  let run = { '2025-04': 1201, '2025-05': 1321, '2025-06': 1445 }[month] ?? 1
  for (let day = 1; day <= days; day++) {
    const date = `${month}-${String(day).padStart(2, '0')}`
    if (date === '2025-06-14') lines.push(`${date}T09:12:44Z deploy 3f2c1e9 (release 1.4.0): src/config.js DEFAULTS.user gains displayName: 'Adda'`)
    for (const hour of ['08', '12', '16', '20']) {
      const name = date >= '2025-06-14' && !(date === '2025-06-14' && hour === '08') ? 'Adda' : 'Ada'
      lines.push(`${date}T${hour}:00:0${run % 10}Z run ${run++} host=build-0${(run % 3) + 1} GREETER_NAME=(unset) exit=0 stdout="Hello, ${name}!"`)
    }
  }
  return `${lines.join('\n')}\n`
}

/** The run logs the compaction survey reads. */
const LOGS = { 'logs/runs-2025-04.log': () => runLog('2025-04', 30), 'logs/runs-2025-05.log': () => runLog('2025-05', 31), 'logs/runs-2025-06.log': () => runLog('2025-06', 30) }

/**
 * Writes the workspace into `dir` (created); with `logs`, the run logs the compaction survey reads.
 * @param {string} dir @param {{logs?: boolean}} [options]
 */
export function writeWorkspace(dir, { logs = false } = {}) {
  if (logs) {
    for (const [rel, text] of Object.entries(LOGS)) {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
      writeFileSync(path.join(dir, rel), text())
    }
  }
  for (const [rel, text] of Object.entries(FILES)) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
    writeFileSync(path.join(dir, rel), text)
  }
}

/** The text of a chat message's content. @param {any} m */
const textOf = (m) => (typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? m.content.map((/** @type {any} */ p) => p?.text ?? '').join('') : '')

/** The tool messages answering the last assistant message of a request. @param {any} body */
function lastResults(body) {
  const out = []
  for (const m of [...(body.messages ?? [])].reverse()) {
    if (m.role !== 'tool') break
    out.unshift(textOf(m))
  }
  return out
}

/** The first words of dsh-fold's report instruction (plugin/fold/summarize.js, en and zh). */
const REPORT_INSTRUCTION = /^(Write a report that will replace the exploration above|请撰写一份报告，用来在你的上下文中替换上面的探索过程)/

/** @param {any} body */
const isReportRequest = (body) => body?.messages?.at(-1)?.role === 'user' && REPORT_INSTRUCTION.test(textOf(body.messages.at(-1)))

const call = (/** @type {string} */ name, /** @type {object} */ args) => ({ name, arguments: args })
const bash = (/** @type {string} */ command, /** @type {string} */ description) => call('bash', { command, description })

/** The normal mode's steps, in order; each may read the request it answers. */
const FOLD_STEPS = [
  () => ({ content: 'Before I touch anything I will mark where this investigation starts, so I can fold it away when I have the answer.', toolCalls: [call('checkpoint', { objective: 'find why node src/main.js greets the wrong person' })] }),
  () => ({ content: 'First, what is in the project.', toolCalls: [bash('ls -R', 'List the project files')] }),
  () => ({ content: 'The entry point, and where the name is read.', toolCalls: [call('read', { file_path: 'src/main.js' }), call('grep', { pattern: 'name', path: 'src' })] }),
  () => ({ content: 'Reproduce the symptom.', toolCalls: [bash('node src/main.js', 'Run the greeter')] }),
  () => ({ content: 'greet.js prefers displayName over name; the defaults are in src/config.js.', toolCalls: [call('read', { file_path: 'src/config.js' })] }),
  () => ({ content: 'Found it: the default displayName is misspelled and greet() prefers it. The exploration is done; folding it.', toolCalls: [call('rewind', {})] }),
  () => ({ content: 'Let me check the exact default line the report kept only in summary.', toolCalls: [call('recall', { fold: 'latest', query: 'displayName', around: 0 })] }),
  (/** @type {any} */ body) => ({ content: answer(lastResults(body).join('\n')) }),
]

/**
 * The answer, from what the tools returned (recall's answers among them).
 * @param {string} recalled the tool results of the request it answers
 * @param {{survey?: boolean, compacted?: string | null}} [options] whether the run logs were
 *   surveyed, and what recall returned from their compaction (null: nothing was compacted)
 */
function answer(recalled, { survey = false, compacted = null } = {}) {
  const line = /user: \{ name: 'Ada', displayName: 'Adda' \},?/.exec(recalled)?.[0]
  const deploy = compacted ? /2025-06-14T[\d:]+Z deploy 3f2c1e9[^\n]*/.exec(compacted)?.[0] : undefined
  return [
    'node src/main.js prints "Hello, Adda!" instead of "Hello, Ada!".',
    '',
    'Cause: src/greet.js builds the name as `config.user.displayName ?? config.user.name`, and the defaults in src/config.js set `displayName: \'Adda\'` (a typo), so the misspelled display name wins whenever GREETER_NAME is not set.',
    line ? `The defaults line, as recall returned it from the folded exploration: \`${line}\`` : 'recall did not return the defaults line; the cause stands from the read of src/config.js.',
    ...(survey ? [deploy ? `It started with this deploy, as recall returned it from the compacted run logs: \`${deploy}\`` : compacted !== null ? 'recall did not return the deploy line from the compacted run logs.' : 'The run logs were not compacted, so nothing was recalled from them; they show the greeting changing on 2025-06-14.'] : []),
    '',
    "Fix: in src/config.js change `displayName: 'Adda'` to `displayName: 'Ada'` (or drop displayName from the defaults).",
  ].join('\n')
}

/** Every tool result of a request, joined. @param {any} body */
const allResults = (body) => (body.messages ?? []).filter((/** @type {any} */ m) => m.role === 'tool').map(textOf).join('\n')

/** The survey of the run logs `try --compaction` reads first: large outputs that fill a small window. */
const SURVEY_STEPS = [
  () => ({ content: 'Before the bug itself, its history: the project keeps its run logs.', toolCalls: [bash('ls -l logs', 'List the run logs')] }),
  () => ({ content: 'June first, when the wrong greeting was reported.', toolCalls: [call('read', { file_path: 'logs/runs-2025-06.log' })] }),
  () => ({ content: 'Then May, to see what it printed before.', toolCalls: [call('read', { file_path: 'logs/runs-2025-05.log' })] }),
  () => ({ content: 'And April.', toolCalls: [call('read', { file_path: 'logs/runs-2025-04.log' })] }),
]

/** After the investigation, with the survey: the deploy line, from the compaction that took the logs out of the context. */
const RECALL_COMPACTED = (/** @type {any} */ body) =>
  (body.messages ?? []).some((/** @type {any} */ m) => m.role === 'user' && textOf(m).includes('<compacted-summary>'))
    ? { content: 'The run logs were compacted out of my context; the deploy that changed the greeting, from the compacted range.', toolCalls: [call('recall', { compaction: 'latest', query: 'deploy', around: 0 })] }
    : { content: answer(allResults(body), { survey: true, compacted: null }) }

/** The compaction run: the survey, the investigation, the compacted deploy line, the answer. */
const COMPACTION_STEPS = [...SURVEY_STEPS, ...FOLD_STEPS.slice(0, -1), RECALL_COMPACTED, (/** @type {any} */ body) => ({ content: answer(allResults(body), { survey: true, compacted: lastResults(body).join('\n') }) })]

const program = (/** @type {string[]} */ ids, /** @type {string} */ description, /** @type {string} */ code) => call('block_run_code', { ids, description, code })

/** Block mode's steps: the same investigation as programs. */
const BLOCK_STEPS = [
  () => ({
    content: 'I will work in block `explore` until I know the cause.',
    toolCalls: [program(['explore'], 'List the project and read the entry point', "const files = await tools.bash({ command: 'ls -R', description: 'List the project files' })\nconst main = await tools.read({ file_path: 'src/main.js' })\nreturn { files, main }")],
  }),
  () => ({
    content: 'Run it, read the config, and close the block with what I found.',
    toolCalls: [
      program(['explore'], 'Reproduce, read the defaults, close the block', [
        "const run = await tools.bash({ command: 'node src/main.js', description: 'Run the greeter' })",
        "const config = await tools.read({ file_path: 'src/config.js' })",
        "const greet = await tools.grep({ pattern: 'displayName', path: 'src' })",
        "const closed = await tools.block_summary({ ids: ['explore'], summary: 'node src/main.js prints \"Hello, Adda!\". src/greet.js uses config.user.displayName ?? config.user.name; the defaults in src/config.js set displayName to the misspelling Adda. Nothing edited.' })",
        'return { run, config, greet, closed }',
      ].join('\n')),
    ],
  }),
  () => ({
    content: 'Before answering, the exact defaults line from the closed block.',
    toolCalls: [program(['answer'], 'Recall the defaults line from block explore', "return await tools.recall({ block: 'explore', query: 'displayName', around: 0 })")],
  }),
  (/** @type {any} */ body) => ({ content: answer(lastResults(body).join('\n')) }),
]

/**
 * A model script for `startModelServer`: picks the mode from the tools the first request
 * offers and walks its steps; `compaction` puts the run-log survey first (native mode).
 * @param {{compaction?: boolean}} [options]
 * @returns {(body: any) => object}
 */
export function scriptedAgent({ compaction = false } = {}) {
  /** @type {Array<(body: any) => object> | null} */
  let steps = null
  let n = 0
  return (body) => {
    if (isTitleRequest(body)) return { content: 'Why the greeter greets the wrong person' }
    if (isReportRequest(body)) {
      return { content: '## Findings\n- src/greet.js prefers config.user.displayName over config.user.name.\n- src/config.js defaults displayName to the misspelling Adda.\n\n## Recommended Next Step\nFix the default displayName in src/config.js.' }
    }
    const tools = (body.tools ?? []).map((/** @type {any} */ t) => t?.function?.name)
    if (!steps) {
      if (tools.length === 1 && tools[0] === 'block_run_code') steps = BLOCK_STEPS
      else if (['checkpoint', 'rewind', 'recall'].every((t) => tools.includes(t))) steps = compaction ? COMPACTION_STEPS : FOLD_STEPS
      else return { content: `The scripted model stops here: this profile offers no dsh-fold tools (checkpoint, rewind and recall, or block mode's block_run_code); it offers ${tools.join(', ') || 'no tools'}.` }
    }
    const failed = lastResults(body).find((r) => /^(Error|[A-Z_]{4,}:)/.test(r))
    if (failed && n > 0 && n < steps.length - 1) return { content: `The scripted model stops here: the last tool call failed (${failed.split('\n')[0].slice(0, 300)}).` }
    const step = steps[Math.min(n, steps.length - 1)]
    n++
    return step(body)
  }
}
