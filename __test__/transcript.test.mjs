/**
 * `dsh-fold try`'s transcript (bin/transcript.mjs) read over a real host's session log: the one
 * recorded by the e2e suite's recall run (its fold's report ends with recall's hint line).
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { decodeStorageRecord, SESSION_FORMAT_VERSION } from '@deepseek-ai/dsh-session'

import { readSessionLog } from '../bin/session-log.mjs'
import { Transcript } from '../bin/transcript.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const LOG = path.join(ROOT, '__test__', 'fixtures', 'economics', 'e2e-recall.session.jsonl.zstd')

describe('try\'s transcript', () => {
  test('a fold is given one report size, the one the rewind result gives; the recall hint line is named as what the rest is', () => {
    const { events } = readSessionLog(LOG, { decodeStorageRecord, formatVersion: SESSION_FORMAT_VERSION })
    const transcript = new Transcript()
    const lines = transcript.add(events)
    const foldLine = lines.find((l) => l.startsWith('  ⤷ fold of mark 1:'))
    const result = lines.find((l) => l.startsWith('  ← rewind: Folded'))
    assert.ok(foldLine && result, lines.join('\n'))
    const reported = Number(/into an? [^(]*\((\d+) chars\)/.exec(result)?.[1])
    const replacement = events.find((e) => e.type === 'user/message' && e.data?.source?.plugin === 'rewind' && e.surfaceOp?.op === 'replace')
    const messageChars = replacement.data.content[0].text.length
    assert.ok(messageChars > reported, 'the fixture\'s report message carries the hint line after the report')
    assert.equal(foldLine, `  ⤷ fold of mark 1: 4 surface nodes (seq 34..47) replaced by a ${reported}-char report (and recall's hint line: ${messageChars} chars in all); the model reads from now on:`)
    assert.equal(transcript.summary().folds[0].reportChars, reported, '--json gives the same figure')
  })
})
