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
 * - `recall-hint`: the hint line that ends a fold's report (`recall`, fold 2, English).
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
      parts.push(lines.length > 1 && lines[0].startsWith('## ') ? `${lines.filter((l) => l.startsWith('## ')).join(' / ')} (${b.text.length} chars)` : one.length > 70 ? `${one.slice(0, 69)}…` : one)
    }
    if (b.type === 'tool-call') parts.push(`→ ${b.name}(${typeof b.arguments === 'string' ? b.arguments : JSON.stringify(b.arguments)})`)
    if (b.type === 'tool-result') parts.push((b.content ?? []).map((/** @type {any} */ c) => c.text ?? '').join('').replace(/\s+/g, ' ').trim())
  }
  const text = parts.join(' ')
  return text.length > 150 ? `${text.slice(0, 149)}…` : text
}

/** @param {string} name @param {string} args @returns {Promise<string>} */
export async function generate(name, args) {
  if (name === 'recall-hint') {
    const { hintLine } = await import('../../plugin/recall/hint.js')
    return hintLine('recall', { fold: 2 }, 'en')
  }
  const demo = demoSession()
  const rewindResult = demo.events.find((e) => e.type === 'tool/result' && /^Folded \d+ surface nodes/.test(e.data?.message?.content?.[0]?.content?.[0]?.text ?? ''))
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
