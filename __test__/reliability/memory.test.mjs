// Memory: 10,000 mark + fold cycles in one process do not grow RSS beyond a small bound. Each
// cycle marks, then runs a real `rewind` with an instant JS summarizer over a small encoded
// surface; some cycles pass an AbortSignal, some go through a failed attempt first (a throwing
// summarizer, then the retry), so the error paths' objects are exercised too. The store lives on
// tmpfs (/dev/shm) when there is one so the run measures the addon, not the disk.
//
// The bound is on memory outside V8's heap (RSS minus the heap V8 has committed): V8 sizes its
// young generation to the allocation rate, and over these cycles it commits ~30 MiB more heap
// (heapTotal 6 → 36.5 MiB) while the live JS heap stays flat. A CI run once failed a plain RSS
// bound at 34.4 MiB for that reason alone. The JS heap's live size has its own bound below, so a
// leak on either side of the boundary still fails.
import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { collectGarbage, explorationSurface, fold, jsHost, memoryBackedBase, memoryMiB, tempStore } from './helpers.mjs'

const CYCLES = 10_000
const WARM_UP = 1_000
const BOUND_MIB = 16
const SESSIONS = ['mem-a', 'mem-b', 'mem-c', 'mem-d']

describe('memory', () => {
  it(`${CYCLES} mark+fold cycles grow memory outside the JS heap by less than ${BOUND_MIB} MiB after a ${WARM_UP}-cycle warm-up`, { timeout: 300_000 }, async (t) => {
    const base = memoryBackedBase()
    const file = tempStore(base)
    const snapshot = explorationSurface(3, { steps: 2 })
    const failing = jsHost(snapshot, {
      summarize: () => {
        throw new Error('transient summarizer failure')
      },
    })
    let atWarmUp = memoryMiB()
    // Every AbortSignal handed to rewind must become collectable once the fold settled: each
    // carries 4 KB, so 5,000 kept alive would show as ~20 MB of JS heap.
    let signals = 0
    const started = performance.now()
    for (let i = 0; i < CYCLES; i++) {
      if (i === WARM_UP) {
        await collectGarbage()
        atWarmUp = memoryMiB()
      }
      const session = SESSIONS[i % SESSIONS.length]
      const { id } = await fold.mark(file, session, 3, `cycle ${i}`)
      if (i % 10 === 0) {
        const e = await fold.rewind(file, session, failing).catch((err) => err)
        assert.equal(e.code, 'SUMMARIZE_FAILED')
      }
      let options
      if (i % 2) {
        const { signal } = new AbortController()
        Object.assign(signal, { ballast: new Array(512).fill(i) })
        signals++
        options = { signal, maxSummarizationRetries: 1 }
      }
      const folded = await fold.rewind(file, session, jsHost(snapshot, {}, `report ${i}`), options)
      assert.equal(folded.markId, id)
      if (i % 100 === 0) assert.equal(fold.hasActiveSync(file, session), false)
    }
    await collectGarbage()
    const atEnd = memoryMiB()
    const heapGrowth = atEnd.live - atWarmUp.live
    const committedGrowth = atEnd.committed - atWarmUp.committed
    const growth = atEnd.native - atWarmUp.native
    const seconds = (performance.now() - started) / 1000
    const figures =
      `[memory] ${CYCLES} mark+rewind cycles (+${CYCLES / 10} failed attempts) on ${base}: RSS ${atWarmUp.rss.toFixed(1)} MiB ` +
      `after ${WARM_UP} warm-up cycles → ${atEnd.rss.toFixed(1)} MiB at the end; outside the JS heap growth ` +
      `${growth.toFixed(1)} MiB (bound ${BOUND_MIB} MiB); V8 heap committed +${committedGrowth.toFixed(1)} MiB, ` +
      `live JS heap growth ${heapGrowth.toFixed(1)} MiB; ` +
      `${signals} AbortSignals (4 KB each) passed; ${seconds.toFixed(1)} s`
    t.diagnostic(figures)
    console.log(figures)
    // The store stays bounded too (64 marks per session by default).
    assert.ok((await fold.listMarks(file)).length <= 64 * SESSIONS.length)
    assert.ok(growth < BOUND_MIB, figures)
    assert.ok(heapGrowth < 8, `the JS heap grew (are AbortSignals passed to rewind kept alive?): ${figures}`)
    rmSync(path.dirname(path.dirname(file)), { recursive: true, force: true })
  })
})
