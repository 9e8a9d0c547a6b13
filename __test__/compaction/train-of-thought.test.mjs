/**
 * The agent keeps its own train of thought across compactions (issue 30 item 3), measured on the
 * recorded trajectory corpus with the model's recorded next steps as the oracle
 * (`__test__/oracles/train-of-thought.mjs`, independent of the checkpoint's code): the whole
 * corpus, one turn per segment, replayed as one session through the real agent loop with
 * `dsh-fold/compaction` at a 32k-token window (`replay.mjs`). Deterministic: these are quality
 * figures, not timings.
 *
 * - the model's latest text before the cut is carried in >= 95% of the compactions;
 * - of the names it wrote in the range and writes again within its next 6 messages, >= 90% are in
 *   the context after the compaction, and >= 85% of those the kept tail does not hold are in the
 *   checkpoint;
 * - the checkpoint's own part is <= 15% of the range's new part (median over ranges of work);
 * - the retention figures hold: every named path, command and error line of the ranges kept,
 *   every user message and model-written summary carried word for word, recall finds what it is
 *   asked of each range.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { loadSegments } from '../../bin/report-facts.mjs'
import { gradeCompaction, trainFigures } from '../oracles/train-of-thought.mjs'
import { compactionsOf, gradeRetention, replay, script } from './replay.mjs'
import { FoldCompaction } from './harness.mjs'

const WINDOW = 32_000
const segments = loadSegments()

/** @type {any} */
let run
/** @type {ReturnType<typeof trainFigures>} */
let figures
/** @type {ReturnType<typeof gradeCompaction>[]} */
let graded
/** @type {Awaited<ReturnType<typeof gradeRetention>>[]} */
let retention

before(async () => {
  // One round of the corpus: every segment once.
  const tokens = segments.reduce((n, s) => n + Math.ceil(JSON.stringify(s.messages).length / 4), 0)
  run = await replay({ backend: FoldCompaction, turns: script(tokens, segments), window: WINDOW, sessionId: 'train-of-thought' })
  const compactions = compactionsOf(run.session)
  graded = compactions.map((c) => gradeCompaction(c, (m) => run.root.tokenMeter.estimateMessage(m)))
  figures = trainFigures(graded)
  retention = []
  // Recall is probed with each range's first user message or summary and first facts (each recall
  // reads the range again; bench/compaction.mjs probes every one).
  for (const c of compactions) retention.push(await gradeRetention(run.root, run.session, c.summary, { probes: 3 }))
})

after(async () => {
  await run?.dispose()
})

/** @param {{carried?: number, present?: number, total: number}} f */
const share = (f) => (f.carried ?? f.present ?? 0) / f.total

describe('the train of thought across compactions, on the recorded trajectories', () => {
  it('compacts the corpus often enough to measure', () => {
    assert.ok(figures.compactions >= 30, `${figures.compactions} compactions`)
    assert.ok(figures.intent.total >= 25, `${figures.intent.total} with a latest text`)
    assert.ok(figures.names.total >= 100, `${figures.names.total} names needed`)
  })

  it('carries the model\'s latest text before the cut in >= 95% of compactions', () => {
    const missed = graded.filter((g) => g.intent && !g.intent.carried).map((g) => g.intent?.text.slice(0, 120))
    assert.ok(share(figures.intent) >= 0.95, `${figures.intent.carried}/${figures.intent.total}; missed: ${JSON.stringify(missed)}`)
  })

  it('keeps >= 90% of the names the model uses again in its next 6 messages, >= 85% of those beyond the tail', () => {
    const missing = graded.flatMap((g) => g.names.beyondTailMissing)
    assert.ok(share(figures.names) >= 0.9, `${figures.names.present}/${figures.names.total}`)
    assert.ok(figures.beyondTail.total >= 10, `${figures.beyondTail.total} names beyond the tail`)
    assert.ok(share(figures.beyondTail) >= 0.85, `${figures.beyondTail.present}/${figures.beyondTail.total}; missing: ${missing.join(' ')}`)
  })

  it('keeps the checkpoint\'s own part <= 15% of the range\'s new part (median over ranges of work)', () => {
    assert.ok(figures.ownRatio <= 0.15, `median ${figures.ownRatio.toFixed(3)}`)
  })

  it('names in play are found again by recall: each of the first three listed in every checkpoint', async () => {
    let tried = 0
    const lost = []
    for (const c of compactionsOf(run.session)) {
      const text = c.replacement.data.content.map((/** @type {any} */ b) => b.text ?? '').join('')
      const line = text.split('\n').find((l) => l.startsWith('Names in play: '))
      if (!line) continue
      // The names, before the closing note that names the recall tool.
      const listed = line.slice(0, line.lastIndexOf(' (`'))
      for (const [, name] of [...listed.matchAll(/`([^`]+)`/g)].slice(0, 3)) {
        tried++
        const r = await run.root.recall.recall(run.session, { compaction: c.summary.data.compactionId, query: name })
        if (!(r.matches > 0)) lost.push(name)
      }
    }
    assert.ok(tried >= 30, `${tried} names tried`)
    assert.deepEqual(lost, [])
  })

  it('keeps every path, command and error line of the ranges, every user message, and recall finds every probe', () => {
    const sum = (/** @type {(r: any) => number} */ f) => retention.reduce((n, r) => n + f(r), 0)
    for (const kind of /** @type {const} */ (['paths', 'commands', 'errors'])) {
      const kept = sum((r) => r.kept[kind].kept)
      const total = sum((r) => r.kept[kind].total)
      assert.ok(kept >= total * 0.995, `${kind}: ${kept}/${total}`)
    }
    assert.equal(sum((r) => r.verbatim.kept), sum((r) => r.verbatim.total))
    assert.equal(sum((r) => r.recall.found), sum((r) => r.recall.tried))
  })
})
