/**
 * @module __test__/e2e/compaction
 *
 * Contract: `dsh-fold/compaction` in a REAL headless DeepSeek Harness host (the pinned install,
 * Node 22), installed from the packed tarballs as a user installs the bundle, with dsh-base's
 * `compaction-basic` row swapped for ours exactly as the docs' patch does (`{id:
 * compaction-basic, disabled: true}` plus a `dsh-fold/compaction` row). The real bash tool
 * prints long outputs, the real token meter crosses the threshold (a small `thresholdRatio` of
 * the provider's 1M-token window), and the compaction lands at a step boundary: the next
 * request carries the `<compacted-summary>` checkpoint with the user's words verbatim, no
 * summary request reaches the model, every request pairs its calls (the scripted server
 * rejects any that does not), and the durable session log holds the 4-event bracket.
 * Set DSH_FOLD_SKIP_E2E=1 to skip.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'

import { pack } from '../../scripts/pack.mjs'
import { ensureHost } from './harness/install.mjs'
import { readSessionLog, runHost, sessionLogs } from './harness/host.mjs'
import { isTitleRequest, sequence, startModelServer } from './harness/model-server.mjs'

const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the end-to-end suite (real DSH host) is skipped' : false
const TASK = 'Check every data file under the work folder for checksum mismatches. Do not modify any file.'
/** A shell command printing ~16k chars naming a path, an error line each. @param {number} k */
const noisy = (k) => `for i in $(seq 1 300); do echo "data/part${k}/file$i.bin: checksum mismatch at block $i"; done`

/** A wire message's text. @param {any} m */
const text = (m) => (typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? m.content.map((p) => p?.text ?? '').join('') : '')

describe('dsh-fold/compaction swapped for compaction-basic in a real headless host', { skip: SKIP }, () => {
  /** @type {{root: string, platform: string}} */
  let tarballs
  /** @type {string} */
  let packDir
  /** @type {Array<() => unknown>} */
  const cleanups = []

  before(() => {
    ensureHost()
    packDir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-pack-'))
    tarballs = pack(packDir)
  }, { timeout: 45 * 60_000 })

  after(async () => {
    for (const clean of cleanups.reverse()) await clean()
    if (packDir) rmSync(packDir, { recursive: true, force: true })
  })

  test('pressure compacts at a step boundary with no model call, and the run completes', { timeout: 240_000 }, async () => {
    const agent = [
      ...[1, 2, 3, 4, 5].map((k) => ({ toolCalls: [{ id: `call_${k}`, name: 'bash', arguments: { command: noisy(k), description: `scan part ${k}` } }] })),
      { content: 'Every part has checksum mismatches; nothing was modified.' },
    ]
    const server = await startModelServer(sequence(agent, { title: 'E2E compaction' }))
    cleanups.push(() => server.close())
    const r = await runHost({
      task: TASK,
      baseUrl: server.url,
      bundles: [tarballs.root, tarballs.platform],
      patchRows: [{ id: 'compaction-basic', disabled: true }, { id: 'compaction-fold', name: 'dsh-fold/compaction', config: { thresholdRatio: 0.02, retainRatio: 0.002 } }],
      timeoutMs: 150_000,
    })
    await server.close()
    cleanups.push(r.cleanup)
    const requests = server.requests.filter((b) => !isTitleRequest(b))
    const context = `exit ${r.code} ${r.signal}\nstdout: ${r.stdout}\nstderr: ${r.stderr.slice(-3000)}\nviolations: ${JSON.stringify(server.violations)}\nrequests: ${requests.map((b) => b.messages.map((m) => m.role).join(' ')).join('\n')}`
    assert.equal(r.code, 0, context)
    assert.deepEqual(server.violations, [], context)
    assert.match(r.stdout, /nothing was modified/, context)
    // No request asked the model for a summary: every non-title request is an agent step.
    assert.equal(requests.length, agent.length, context)
    const compacted = requests.findIndex((b) => b.messages.some((m) => m.role === 'user' && text(m).includes('<compacted-summary>')))
    assert.ok(compacted > 0, `no request carried a checkpoint\n${context}`)
    const checkpoint = requests[compacted].messages.find((m) => text(m).includes('<compacted-summary>'))
    assert.ok(text(checkpoint).includes(TASK), `the user's words are not in the checkpoint:\n${text(checkpoint).slice(0, 3000)}\n${requests[0].messages.map((m) => m.role + ': ' + text(m).slice(0, 200)).join('\n')}`)
    assert.match(text(checkpoint), /checksum mismatch at block/)

    const logs = sessionLogs(r.dshHome)
    assert.equal(logs.length, 1)
    const { events } = readSessionLog(logs[0])
    const replacement = events.find((e) => e.type === 'user/message' && e.data.source?.plugin === 'compact')
    assert.ok(replacement?.data.source.foldCompaction, 'no dsh-fold compaction in the durable log')
    const [startSeq, summarySeq] = replacement.sourceEventSeqs
    assert.equal(events[startSeq].type, 'compaction/start')
    assert.equal(events[summarySeq].type, 'compaction/summary')
    assert.equal(events[summarySeq].data.provider, 'dsh-fold')
    assert.equal(events[replacement.seq + 1].type, 'compaction/end')
    assert.equal(events[replacement.seq + 1].data.error, undefined)
  })
})
