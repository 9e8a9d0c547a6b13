/**
 * The `block-ptc` preset in the real host: `dsh-fold preset install` (a real process) writes it
 * into a fresh `$DSH_HOME`, deriving it from the installed DSH 0.1.0-rc.8 host; that host then
 * boots with dsh-fold installed from its packed tarballs as a bundle, and a session created with
 * `agentPreset: 'block-ptc'` runs one block turn against the scripted, protocol-validating model
 * on 127.0.0.1: one program reads a file and closes its own block from inside itself; the
 * summary lands after the program's result and the next request carries it in the block's place.
 *
 * The profile is `web` (the web-app bundle) driven over its HTTP API, with no browser: on rc.8
 * only that host composes agents from presets (`@deepseek-ai/dsh-host-apiproxy` calls
 * `agentPresets.mount` when a session is created); the `headless` profile's one-shot runner
 * creates its agent without a preset roster, so a headless host can run block mode only the
 * row way (`DSH_TOOLS_MODE=both` + the row, `__test__/e2e/block.test.mjs`), never a preset.
 *
 * The same host also runs a session on the shipped `standard` preset: it still calls `bash`
 * directly, its wire tools hold no block tool and its prompt no block section — block mode
 * lives in the preset's scope only. Skipped under DSH_FOLD_SKIP_E2E (needs the host).
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'

import { shape, startBlockWebHost, text, until } from './block-host.mjs'

const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: this suite boots the real DSH web host' : false
const SUMMARY = 'notes.txt: the build id is ZEBRA-42 (2 lines). Only reporting remains.'

describe('the block-ptc preset in a real DSH host', { skip: SKIP }, () => {
  /** @type {{root: string, platform: string}} */
  let tarballs
  const temps = []
  /** @type {Array<() => Promise<unknown> | unknown>} */
  const cleanups = []
  before(async () => {
    const { ensureHost } = await import('../e2e/harness/install.mjs')
    const { pack } = await import('../../scripts/pack.mjs')
    ensureHost()
    const packDir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-pack-'))
    temps.push(packDir)
    tarballs = pack(packDir)
  }, { timeout: 45 * 60_000 })
  after(async () => {
    for (const clean of cleanups.reverse()) await clean()
    for (const d of temps) rmSync(d, { recursive: true, force: true })
  })

  test('install the preset, then one block turn in a block-ptc session; a standard session beside it is untouched', { timeout: 300_000 }, async () => {
    const { isTitleRequest, startModelServer } = await import('../e2e/harness/model-server.mjs')
    const { readSessionLog, sessionLogs } = await import('../e2e/harness/host.mjs')
    const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-fold-preset-cwd-'))
    temps.push(cwd)
    const notes = path.join(cwd, 'notes.txt')
    writeFileSync(notes, 'alpha: the flux capacitor needs 1.21 GW\nbeta: ZEBRA-42 is the build id\n')

    // One scripted model for both sessions: each request is answered by its session's script.
    /** @type {Record<string, Array<(body: any) => object>>} */
    const scripts = {
      block: [
        (body) => {
          assert.deepEqual(body.tools.map((/** @type {any} */ t) => t.function.name), ['block_run_code'])
          assert.match(text(body.messages[0]), /## Block mode/)
          return {
            content: 'Reading the notes in a block.',
            toolCalls: [{
              id: 'call_blk1', name: 'block_run_code',
              arguments: {
                ids: ['notes'], description: 'Read the notes and close the block',
                code: `const notes = await tools.read({file_path: ${JSON.stringify(notes)}})\nconst closed = await tools.block_summary({ids: ['notes'], summary: ${JSON.stringify(SUMMARY)}})\nreturn {closed}`,
              },
            }],
          }
        },
        (body) => ({ content: `The build id is ZEBRA-42. (${shape(body.messages)})` }),
      ],
      standard: [
        (body) => {
          const names = body.tools.map((/** @type {any} */ t) => t.function.name)
          assert.ok(names.includes('bash') && !names.some((/** @type {string} */ n) => /block/.test(n)), names.join(','))
          assert.doesNotMatch(text(body.messages[0]), /## Block mode/)
          return { toolCalls: [{ id: 'call_std1', name: 'bash', arguments: { command: 'echo standard-direct', description: 'Echo a marker' } }] }
        },
        () => ({ content: 'standard done' }),
      ],
    }
    /** @type {Record<string, any[]>} */
    const requests = { block: [], standard: [] }
    const server = await startModelServer((body) => {
      if (isTitleRequest(body)) return { content: 'Block preset session' }
      const which = JSON.stringify(body.messages).includes('Use the standard preset.') ? 'standard' : 'block'
      requests[which].push(body)
      const step = scripts[which][requests[which].length - 1]
      if (!step) throw new Error(`${which}: model asked more than scripted`)
      return step(body)
    })
    cleanups.push(() => server.close())

    const web = await startBlockWebHost({ tarballs, baseUrl: server.url, cwd })
    cleanups.push(() => web.cleanup())
    cleanups.push(() => web.stop())
    assert.match(web.presetOutput, /host found resolved from .*profiles/)

    const { presets } = await web.api('agentPreset.list', {})
    const listed = presets.find((/** @type {any} */ p) => p.id === 'block-ptc')
    assert.ok(listed, JSON.stringify(presets))
    assert.deepEqual({ name: listed.name, trust: listed.trust, broken: listed.broken }, { name: 'Block PTC', trust: 'user', broken: undefined })

    const { workspace } = await web.api('workspace.create', { path: cwd })
    const created = await web.api('session.create', { workspaceId: workspace.workspaceId, agentPreset: 'block-ptc' })
    assert.equal(created.agentPreset, 'block-ptc')
    await web.api('session.prompt', { sessionId: created.sessionId, mode: 'queue', content: [{ type: 'text', text: 'What is the build id in notes.txt?' }] })

    const log = await until(() => {
      const file = sessionLogs(web.dshHome).find((f) => f.includes(created.sessionId))
      if (!file) return undefined
      const read = readSessionLog(file)
      return read.events.some((e) => e.type === 'turn/end') ? read : undefined
    })
    const context = `requests: ${requests.block.map((b) => shape(b.messages)).join(' | ')}\nviolations: ${JSON.stringify(server.violations)}\nstderr: ${web.stderr().slice(-4000)}`
    assert.ok(log, `the block turn did not end\n${context}`)
    assert.deepEqual(server.violations, [], context)
    assert.equal(requests.block.length, 2, context)

    // The next request: the block (its assistant message and program result) became the summary.
    const [first, second] = requests.block
    assert.equal(shape(second.messages), `${shape(first.messages)} summary`, context)
    const summary = text(second.messages.at(-1))
    assert.ok(summary.startsWith('<block-summary>') && summary.includes(SUMMARY), summary)
    assert.ok(!second.messages.some((/** @type {any} */ m) => /ZEBRA-42 is the build id/.test(text(m))), 'the program output is still visible')

    // The log: the program ran (its read sub-call), then one bracket closing `notes`.
    const { events, header } = log
    assert.equal(header.agentPreset ?? events.find((e) => e.type === 'agent-preset/selected')?.data.agentPreset, 'block-ptc')
    const read = events.find((e) => e.type === 'tool/code-dispatch' && e.data.name === 'read' && e.data.rootCallId === 'call_blk1')
    assert.match(JSON.stringify(read.data.content), /ZEBRA-42 is the build id/)
    const replacement = events.find((e) => e.type === 'user/message' && e.data.source?.blockPtc)
    assert.ok(replacement, 'no block summary in the log')
    assert.deepEqual(replacement.data.source.blockPtc.closed, ['notes'])
    assert.equal(replacement.data.source.plugin, 'compact')
    assert.deepEqual(events.slice(replacement.seq - 2, replacement.seq + 2).map((e) => e.type), ['compaction/start', 'compaction/summary', 'user/message', 'compaction/end'])
    const result = events.find((e) => e.type === 'tool/result' && e.data.message.source?.callId === 'call_blk1')
    assert.equal(replacement.seq - 2, result.seq + 1, 'the summary requested inside its block lands right after the program result')

    // A standard session in the same host: direct tool calls, no block mode.
    const std = await web.api('session.create', { workspaceId: workspace.workspaceId, agentPreset: 'standard' })
    await web.api('session.prompt', { sessionId: std.sessionId, mode: 'queue', content: [{ type: 'text', text: 'Use the standard preset.' }] })
    assert.ok(await until(() => requests.standard.length === 2), `the standard session stalled: ${web.stderr().slice(-3000)}`)
    const answer = requests.standard[1].messages.at(-1)
    assert.deepEqual({ role: answer.role, content: answer.content }, { role: 'tool', content: 'standard-direct\n' })
    assert.deepEqual(server.violations, [])
  })
})
