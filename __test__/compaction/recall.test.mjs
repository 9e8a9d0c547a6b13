/**
 * Recall over compacted ranges: what a compaction hid — ours and compaction-basic's — is read
 * back exactly from the calling session's log, and our summary's last line says how.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import Recall from '../../plugin/recall/recall.js'
import { agentOn, bootHost, compactionsOf, PressureModel, probe, prompt, textOf } from './harness.mjs'

const steps = (/** @type {number} */ k) => (/** @type {any} */ _o, /** @type {number} */ n) =>
  n % (k + 1) === k ? { text: 'Done: src/r.rs needs the fix.' } : { calls: [probe(`r${n}`, `src/r/${n}.rs`)] }

for (const backend of /** @type {const} */ (['fold', 'basic'])) {
  describe(`recall after a ${backend === 'fold' ? 'dsh-fold' : 'compaction-basic'} compaction`, () => {
    it('returns the compacted lines exactly, by compaction id and among everything folded', async () => {
      const model = new PressureModel({ contextWindow: 6000, script: steps(8) })
      const root = await bootHost({ model, backend, before: (r) => r.plugin(Recall, {}) })
      const agent = await agentOn(root, `recall-${backend}`)
      await prompt(agent, 'Audit src/r: the ZEBRA-42 build must pass. Report every checksum mismatch.')
      const [first] = compactionsOf(agent.session)
      assert.ok(first, 'no compaction')
      const id = first.start.data.compactionId
      const byId = await root.recall.recall(agent.session, { compaction: id, query: 'checksum mismatch' })
      assert.ok(byId.matches >= 2, byId.text)
      assert.match(byId.text, /error: src\/r\/0\.rs: checksum mismatch at line 7/)
      const user = await root.recall.recall(agent.session, { compaction: 'latest', query: 'ZEBRA-42 build must pass' })
      assert.ok(user.matches >= 1, user.text)
      assert.match(user.text, /user message/)
      const all = await root.recall.recall(agent.session, { query: '/src\\/r\\/0\\.rs: checksum/' })
      // Each compacted line once, though a later compaction took the first one in.
      assert.equal(all.matches, 1, all.text)
      if (backend === 'fold') assert.match(textOf(first.replacement.data), new RegExp(`recall\\(\\{"compaction": "${id}"`))
      await assert.rejects(root.recall.recall(agent.session, { compaction: 'no-such-id' }), (e) => e.code === 'UNKNOWN_COMPACTION')
      await assert.rejects(root.recall.recall(agent.session, { compaction: id, fold: 1 }), (e) => e.code === 'INVALID_ARGUMENT')
    })
  })
}
