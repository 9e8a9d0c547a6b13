/**
 * @module bench/lib/store-files
 * Builds large checkpoint stores directly on disk, in the store's documented layout (building
 * 30,000 marks through `mark` would be 30,000 durable writes): the store file
 * (`{"unit":{"name":"checkpoint","version":2},...}`) and, optionally, its journal
 * (`<file>.journal`: a header line, then one `<crc32> <json>\n` line per change, as sequential
 * writers leave it).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'

// The journal's line format (`<crc32> <json>\n`) is the reliability suite's, which checks it
// against the store's own reader.
import { journalLine } from '../../__test__/reliability/helpers.mjs'

/**
 * @typedef {{id: number, sessionId: string, logLength: number, objective?: string, createdAt: number, foldedAt: number | null}} Mark
 */

/**
 * Writes `file` holding `marks`, and, when given, a journal holding `journal` (marks appended
 * one per line, then folds), each change one line as sequential writers append them.
 * @param {string} file
 * @param {Mark[]} marks
 * @param {{marks: Mark[], folds: {id: number, foldedAt: number}[]}} [journal]
 * @returns {{fileBytes: number, journalBytes: number}}
 */
export function writeStore(file, marks, journal) {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 })
  /** @type {Record<string, Mark>} */
  const rows = {}
  let nextId = 1
  for (const m of marks) {
    rows[m.id] = m
    nextId = Math.max(nextId, m.id + 1)
  }
  const base = Buffer.from(JSON.stringify({ unit: { name: 'checkpoint', version: 2 }, global: { nextId }, tables: { marks: rows } }))
  writeFileSync(file, base, { mode: 0o600 })
  let journalBytes = 0
  if (journal) {
    const lines = [journalLine({ journal: 'checkpoint', version: 1, id: '00000000000000b1' })]
    for (const mark of journal.marks) lines.push(journalLine({ changes: [{ op: 'mark', mark }] }))
    for (const fold of journal.folds) lines.push(journalLine({ changes: [{ op: 'fold', ...fold }] }))
    const bytes = Buffer.concat(lines)
    writeFileSync(`${file}.journal`, bytes, { mode: 0o600 })
    journalBytes = bytes.length
  }
  return { fileBytes: base.length, journalBytes }
}

/**
 * `count` marks of `perSession` per session, ids from `firstId`, the newest of every other
 * session folded (the rest of each session folded too, as a used store has them).
 * @param {number} count @param {{perSession?: number, firstId?: number, sessionPrefix?: string, createdAt?: number}} [options]
 * @returns {Mark[]}
 */
export function makeMarks(count, { perSession = 4, firstId = 1, sessionPrefix = 'sess-', createdAt = Date.now() - 60_000 } = {}) {
  /** @type {Mark[]} */
  const marks = []
  for (let i = 0; i < count; i++) {
    const id = firstId + i
    const s = Math.floor(i / perSession)
    const newest = i % perSession === perSession - 1 || i === count - 1
    marks.push({
      id,
      sessionId: `${sessionPrefix}${s}`,
      logLength: 100 * (i % perSession),
      objective: 'look into it',
      createdAt: createdAt + i,
      foldedAt: newest && s % 2 === 0 ? null : createdAt + i + 1,
    })
  }
  return marks
}
