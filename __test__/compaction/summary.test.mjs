/**
 * What a later compaction carries of an earlier checkpoint of ours (`carriedText`): its user
 * messages and model-written parts as written, each condensed tool-work part as its heading and
 * one note that it was condensed earlier — the same text however many times it is carried again, so a
 * long session's checkpoints do not grow with every pass.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { CLOSE_TAG, OPEN_TAG, carriedCore, carriedText, trimmedCarried } from '../../plugin/compaction/summary.js'

/** A checkpoint's text around `body`, as composeSummary frames it. @param {string} body */
const checkpoint = (body) => `This is a checkpoint of the earlier conversation.\n\n${OPEN_TAG}\n${body}\n${CLOSE_TAG}`

const BODY = [
  '### User message (seq 4)\nFix the checksum in src/p.rs.',
  '### Tool work (seq 5–61), condensed\n## Findings\n- $ cargo test → exit 1\n  - error: checksum mismatch',
  '### Your rewind report 2 (seq 88)\n## Findings\n- the report as written',
  '### Tool work (seq 89–120), condensed\n## Findings\n- $ cargo build → ok',
].join('\n\n')

describe('carriedText', () => {
  it('is the same text however many times a checkpoint is carried again', () => {
    for (const language of /** @type {const} */ (['en', 'zh'])) {
      const once = carriedText(checkpoint(BODY), language)
      const twice = carriedText(checkpoint(once), language)
      const thrice = carriedText(checkpoint(twice), language)
      assert.equal(twice, once, language)
      assert.equal(thrice, once, language)
    }
    // A checkpoint written in one language and carried in the other keeps one note.
    const zhThenEn = carriedText(checkpoint(carriedText(checkpoint(BODY), 'zh')), 'en')
    assert.equal(zhThenEn, carriedText(checkpoint(BODY), 'en'))
  })

  it('keeps the user\'s words and the reports, and reduces condensed work to its heading and a note', () => {
    const once = carriedText(checkpoint(BODY))
    assert.match(once, /### User message \(seq 4\)\nFix the checksum in src\/p\.rs\./)
    assert.match(once, /### Your rewind report 2 \(seq 88\)\n## Findings\n- the report as written/)
    assert.match(once, /^### Tool work \(seq 5–61\), condensed \(condensed earlier\)$/m)
    assert.doesNotMatch(once, /cargo test/)
  })
})

describe('trimmedCarried (the policy\'s `trim`)', () => {
  const REPORT = (/** @type {number} */ n) => `### Your rewind report ${n} (seq ${n * 100})\n## Findings\n${'- a finding of report ' + n + '\n'}`.repeat(1) + '- detail\n'.repeat(60)
  const LONG = checkpoint(['### User message (seq 4)\nFix the checksum.', REPORT(1), '### Tool work (seq 5–61), condensed\n## Findings\n- x', REPORT(2), '### User message (seq 300)\nNow the docs.', REPORT(3)].join('\n\n'))

  it('turns the oldest carried reports into pointers, only as many as the room requires', () => {
    const whole = carriedText(LONG)
    assert.equal(trimmedCarried(LONG, 'en', whole.length), whole)
    const oneLess = trimmedCarried(LONG, 'en', whole.length - 1)
    assert.ok(oneLess.length <= whole.length - 1)
    assert.match(oneLess, /^Your rewind report 1 \(seq 100\): \d+ chars, carried by an earlier checkpoint and left out here for space\.$/m)
    assert.match(oneLess, /### Your rewind report 2 \(seq 200\)\n## Findings/, 'a newer report was trimmed before the oldest')
    assert.match(oneLess, /### Your rewind report 3 \(seq 300\)\n## Findings/)
  })

  it('keeps the user\'s words at its core, every carried report a pointer', () => {
    const core = carriedCore(LONG)
    assert.match(core, /### User message \(seq 4\)\nFix the checksum\./)
    assert.match(core, /### User message \(seq 300\)\nNow the docs\./)
    assert.doesNotMatch(core, /## Findings\n- a finding/)
    assert.equal(core.match(/left out here for space/g)?.length, 3)
    // No budget below the core: what is left is the user's words and the headings.
    assert.equal(trimmedCarried(LONG, 'en', 10), core)
    assert.match(carriedCore(LONG, 'zh'), /由更早的检查点带入，因篇幅在此省略/)
  })
})
