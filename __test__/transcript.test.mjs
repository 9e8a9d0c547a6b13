/**
 * `dsh-fold try`'s transcript (bin/transcript.mjs) read over a real host's session log: the one
 * recorded by the e2e suite's recall run (its fold's report ends with recall's hint line).
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { decodeStorageRecord, SESSION_FORMAT_VERSION } from '@deepseek-ai/dsh-session'

import { WORDS } from '../plugin/fold/words.js'
import { hintLine } from '../plugin/recall/hint.js'
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
    assert.equal(foldLine, `  ⤷ fold of mark 1: 4 surface nodes (seq 34..47) replaced by a ${reported}-char report (with recall's hint line: ${messageChars} chars in all); the model reads from now on:`)
    assert.equal(transcript.summary().folds[0].reportChars, reported, '--json gives the same figure')
  })

  test('a framed report (round 4: the plugin writes a frame above the report) is given the report\'s own size; the frame and the hint line are named as what the rest is', () => {
    const report = '## Findings\n- `greet.js` prefers displayName.\n\n## Recommended Next Step\n- Fix the default.'
    const frame = WORDS.en.frame({ id: 1, objective: 'find why main.js greets the wrong person' }, true)
    const cases = [
      { text: `${frame}\n\n${report}\n\n${hintLine('recall', { fold: 1 })}`, rest: "with its frame and recall's hint line" },
      { text: `${frame}\n\n${report}`, rest: 'with its frame' },
    ]
    for (const { text, rest } of cases) {
      const transcript = new Transcript()
      const lines = transcript.add([
        { seq: 9, type: 'user/message', data: { role: 'user', content: [{ type: 'text', text }], source: { kind: 'plugin', plugin: 'rewind', markId: 1 } }, surfaceOp: { op: 'replace', start: 3, end: 7 }, sourceEventSeqs: [3, 4, 5, 6, 7] },
      ])
      assert.equal(lines[0], `  ⤷ fold of mark 1: 5 surface nodes (seq 3..7) replaced by a ${report.length}-char report (${rest}: ${text.length} chars in all); the model reads from now on:`)
      assert.equal(transcript.summary().folds[0].reportChars, report.length)
    }
  })
})
