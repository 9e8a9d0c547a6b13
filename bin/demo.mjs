// @ts-check
/**
 * @module bin/demo
 * `dsh-fold demo [--lang en|zh] [--json] [--save FILE]`: a fold with no model and no key. A
 * realistic DSH session (bin/demo-session.mjs, on the real `@deepseek-ai/dsh-session`) is
 * marked, folded with the extractive report in the frame the rewind row commits it in, and
 * shown before and after: the surface's nodes and model-visible chars (as the session's mirror
 * meters them), the fold's figures and the report the model now reads. The store is a temporary
 * folder, removed at the end (after the fold's stamp has landed). `--save FILE` plays the task to
 * its end on the folded context and writes the session log (the jsonl persistence backend's
 * layout) for `dsh-fold economics`; it is the only file written (exit 73 when it cannot be).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

import { addon } from '../plugin/shared/addon.js'
import { dsh, fail, needDsh, print, wrote } from './cli.mjs'

/** @type {import('./cli.mjs').Command} */
export const command = {
  usage: `Usage: dsh-fold demo [--lang en|zh] [--json] [--save FILE]
  Build a realistic DSH session (real @deepseek-ai/dsh-session), mark, fold it with the
  extractive report (no model, no network) and show before/after. --save FILE plays the task
  to its end on the folded context and writes the session log (session.jsonl format) for
  the economics subcommand.`,
  run: demo,
}

/** The model-visible size of a session's surface, as its mirror meters it. @param {any} session @param {(session: any) => any} mirrorOf */
const visible = (session, mirrorOf) => mirrorOf(session).native.surfacePrice().chars

/** @param {import('./cli.mjs').Opts} opts */
async function demo(opts) {
  const { buildDemoSession } = await needDsh('demo', () => import('./demo-session.mjs'))
  const { mirrorOf, sessionHost } = await dsh('demo')
  if (opts.save !== undefined && !String(opts.save).trim()) fail('--save needs a file path', 64)
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-demo-'))
  const store = path.join(dir, 'storages', 'checkpoint.json')
  try {
    const objective = 'find why cargo test -p parser fails'
    const language = /** @type {'en'|'zh'} */ (opts.lang ?? 'en')
    const { session, rewindCallId, step } = await buildDemoSession((s) => addon.mark(store, s.id, s.seq, objective))
    const before = { nodes: session.surface.nodes.length, chars: visible(session, mirrorOf) }
    const { extractiveSummarizer } = await import('../plugin/fold/extractive.js')
    const { reportFrame } = await import('../plugin/fold/rewind.js')
    // The report in the frame the rewind row commits it in (what the model reads).
    const frame = (/** @type {number} */ id) => reportFrame({ id, objective }, true, language)
    const started = process.hrtime.bigint()
    const result = await addon.rewind(store, session.id, sessionHost(session, extractiveSummarizer({ session, language }), { callId: rewindCallId, frame }))
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    const after = { nodes: session.surface.nodes.length, chars: visible(session, mirrorOf) }
    const report = session.deriveEventMessage(session.events[session.surface.nodes.find((/** @type {number} */ s) => session.events[s].data?.source?.plugin === 'rewind')]).content[0].text
    if (opts.save !== undefined) await saveDemo(session, String(opts.save), result, step, language)
    if (opts.json) {
      print({ before, after, result, foldMs: ms, report, ...(opts.save !== undefined ? { saved: opts.save } : {}) }, true)
      if (opts.save !== undefined) wrote(String(opts.save), true, 'the demo session log')
      return
    }
    console.log(`A DSH session: a user request, a checkpoint, reads, greps, a failing test run, parallel calls.\n`)
    console.log(`before the fold: ${before.nodes} surface nodes, ${before.chars} model-visible chars`)
    console.log(`after the fold:  ${after.nodes} surface nodes, ${after.chars} model-visible chars (${Math.round((100 * (before.chars - after.chars)) / before.chars)}% less)`)
    console.log(`folded ${result.foldedNodes} nodes (seq ${result.start}..${result.end}, ${result.foldedChars} chars) into a ${result.reportChars}-char extractive report in ${ms.toFixed(2)} ms; mark ${result.markId} folded\n`)
    console.log('--- the report the model now sees instead of the exploration ---\n')
    console.log(report)
    if (opts.save !== undefined) {
      console.log(`\n--- the task went on to its end on the folded context ---`)
      wrote(String(opts.save), false, `the session log; price it: dsh-fold economics ${opts.save}`)
    }
  } finally {
    // The fold's stamp is written after the fold resolved: the store is closed (the stamp has
    // landed) before its folder goes, or the stamp would bring the folder back.
    await addon.closeStore(store)
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Plays the demo task to its end after the fold and writes the session's log as the jsonl
 * persistence backend lays it out: a `session` header line, then one event per line.
 * @param {any} session @param {string} file @param {any} result the fold's result @param {() => number} step
 * @param {'en' | 'zh'} lang the demo's language
 */
async function saveDemo(session, file, result, step, lang) {
  const { continueAfterFold } = await import('./demo-session.mjs')
  const { renderResult } = await import('../plugin/fold/rewind.js')
  continueAfterFold(session, renderResult({ ...result, report: 'extractive' }, lang), step())
  const { SESSION_FORMAT_VERSION } = await dsh('demo')
  const header = { type: 'session', version: SESSION_FORMAT_VERSION, id: session.id, createdAt: session.events[0]?.time ?? 0, cwd: '/work/app' }
  try {
    writeFileSync(file, `${[header, ...session.events].map((e) => JSON.stringify(e)).join('\n')}\n`)
  } catch (e) {
    fail(`cannot write ${file}: ${/** @type {Error} */ (e).message}`, 73)
  }
}

