/**
 * @module smoke
 *
 * Contract: a script (not a test) proving the harness end to end. It
 * installs the host (`ensureHost`), packs the throwaway bundle in
 * `/work/scratch/e2e-plugin` (override with `E2E_PROBE_PLUGIN`; it lives
 * outside the repo on purpose) with `npm pack`, installs the tarball into the
 * headless profile as a user would, and runs one task against a scripted
 * model that calls `echo_probe` once and then answers "done". It asserts the
 * host exited 0 and printed "done", the tool body ran (its marker file), the
 * model saw the tool result paired with its call and no request broke the
 * pairing rule; it also proves the server's validator rejects a broken
 * history with HTTP 400. It prints the requests, the session log's path and
 * events, and the timings. Exit code 0 = green.
 *   node __test__/e2e/harness/smoke.mjs
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureHost } from './install.mjs'
import { startModelServer, sequence, isTitleRequest } from './model-server.mjs'
import { runHost, sessionLogs, readSessionLog } from './host.mjs'

const PLUGIN = process.env.E2E_PROBE_PLUGIN ?? '/work/scratch/e2e-plugin'
const say = (...a) => console.log('[smoke]', ...a)

let t = performance.now()
ensureHost()
say(`ensureHost: ${((performance.now() - t) / 1000).toFixed(1)} s`)

const packDir = mkdtempSync(join(tmpdir(), 'dsh-e2e-pack-'))
const tarball = join(packDir, execFileSync('npm', ['pack', '--silent', '--pack-destination', packDir], { cwd: PLUGIN, encoding: 'utf8' }).trim().split('\n').pop())
say('packed', tarball)

const server = await startModelServer(sequence([
  { reasoning: 'I should probe.', content: 'Probing.', toolCalls: [{ id: 'call_probe_1', name: 'echo_probe', arguments: { text: 'ping' } }] },
  (body) => {
    const last = body.messages.at(-1)
    assert.equal(last.role, 'tool')
    assert.equal(last.tool_call_id, 'call_probe_1')
    assert.match(last.content, /echo: ping/)
    return { content: 'done' }
  },
], { title: 'Echo probe' }))

// The validator answers a broken history like the real API (400 + recorded violation).
const bad = await fetch(`${server.url}/chat/completions`, {
  method: 'POST',
  body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, { role: 'user', content: 'y' }] }),
})
assert.equal(bad.status, 400)
say('validator:', (await bad.json()).error.message)
assert.equal(server.violations.length, 1)
server.violations.length = 0
server.requests.length = 0
server.headers.length = 0

const marker = join(packDir, 'echo-probe.marker')
t = performance.now()
const run = await runHost({ task: 'Call echo_probe with text "ping", then say done.', baseUrl: server.url, bundles: [tarball], env: { ECHO_PROBE_MARKER: marker }, timeoutMs: 90_000 })
const runMs = performance.now() - t
await server.close()

say(`host exit ${run.code} (signal ${run.signal}, timedOut ${run.timedOut}); host process ${run.ms} ms; runHost total ${runMs.toFixed(0)} ms (incl. profile init + npm install of the bundle)`)
say('stdout:', JSON.stringify(run.stdout))
say('stderr:', run.stderr.trim())
say(`model saw ${server.requests.length} requests:`)
for (const [i, body] of server.requests.entries()) {
  const msgs = body.messages.map((m) => m.role + (m.tool_calls ? `(calls:${m.tool_calls.map((c) => c.function.name).join(',')})` : '') + (m.tool_call_id ? `(${m.tool_call_id})` : ''))
  say(`  #${i} ${isTitleRequest(body) ? 'TITLE' : 'AGENT'} model=${body.model} max_tokens=${body.max_tokens} tools=${body.tools?.length ?? 0} messages=[${msgs.join(', ')}]`)
}
const logs = sessionLogs(run.dshHome)
say('session logs:', logs)

assert.equal(run.code, 0, `host failed:\n${run.stderr}`)
assert.equal(run.stdout.trim(), 'done')
assert.deepEqual(server.violations, [])
assert.ok(existsSync(marker), 'echo_probe body did not run')
assert.deepEqual(readFileSync(marker, 'utf8').trim().split('\n').map((l) => JSON.parse(l).text), ['ping'])
const agentCalls = server.requests.filter((b) => !isTitleRequest(b))
assert.equal(agentCalls.length, 2)
assert.ok(agentCalls[0].tools.some((tool) => tool.function.name === 'echo_probe'), 'echo_probe not offered to the model')
assert.equal(logs.length, 1)

const { header, events } = readSessionLog(logs[0])
say('session header:', JSON.stringify(header))
say(`session events (${events.length}):`, events.map((e) => e.type).join(' '))
const result = events.find((e) => e.type === 'tool/result')
assert.ok(result, 'no tool/result in the session log')
say('tool/result event:', JSON.stringify(result.data.message).slice(0, 300))
assert.ok(events.every((e, i) => e.seq === i))

run.cleanup()
rmSync(packDir, { recursive: true, force: true })
say('GREEN')
