/**
 * The browser half's host-level anchor row (`dsh-fold/ui`, in the default bundle's
 * `cordis.patch.yml`) registers nothing on the host.
 *
 * 1. The module: its `apply` touches nothing on the context it is given (every property read
 *    or write of the context is recorded: none), and it exports only a name and `apply`.
 * 2. The package: `dsh-fold/ui/package.json` resolves (the client-module scanner resolves
 *    `<entry name>/package.json`) to the manifest declaring `dsh.client {platform: 'web'}`
 *    and an `exports['./client']` file that exists.
 * 3. The real web host (DSH 0.1.0-rc.8, `web` profile, dsh-fold installed from its packed
 *    tarballs as a bundle): with the row the boot graph serves `dsh-fold/ui` (so the entry
 *    imported and applied), without it (the row disabled by a patch) it does not; a session on
 *    the shipped `standard` preset then calls `bash` directly and gets its output in both
 *    hosts, and the first model request — the tool list and every message — is the same in
 *    both except the web UI's own URL. Skipped under DSH_FOLD_SKIP_E2E (needs the host).
 */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import * as anchor from '../../client/anchor.js'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const SKIP = process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the host half of this suite boots the real DSH web host' : false

describe('the anchor module', () => {
  test('apply touches nothing on its context', () => {
    const touched = []
    const ctx = new Proxy({}, {
      get: (_, key) => { touched.push(`get ${String(key)}`); return undefined },
      set: (_, key) => { touched.push(`set ${String(key)}`); return true },
      has: (_, key) => { touched.push(`has ${String(key)}`); return false },
      defineProperty: (_, key) => { touched.push(`define ${String(key)}`); return true },
    })
    const config = new Proxy({}, { get: (_, key) => { touched.push(`config ${String(key)}`) } })
    assert.equal(anchor.apply(ctx, config), undefined)
    assert.deepEqual(touched, [])
  })

  test('it exports a plugin name and apply, nothing a loader would read as inject, Config or a service', () => {
    assert.deepEqual(Object.keys(anchor).sort(), ['apply', 'name'])
  })

  test('dsh-fold/ui/package.json is the manifest the client-module scanner needs', () => {
    const require = createRequire(path.join(ROOT, 'index.js'))
    const manifestPath = require.resolve('dsh-fold/ui/package.json')
    assert.equal(manifestPath, path.join(ROOT, 'package.json'))
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
    assert.deepEqual(manifest.dsh.client, { platform: 'web' })
    assert.equal(manifest.exports['./client'], './client/client.js')
    assert.ok(existsSync(path.join(ROOT, manifest.exports['./client'])))
    assert.equal(require.resolve('dsh-fold/ui'), path.join(ROOT, 'client', 'anchor.js'))
    const patch = readFileSync(path.join(ROOT, 'cordis.patch.yml'), 'utf8')
    assert.match(patch, /- id: block-ui\n\s+name: dsh-fold\/ui\n/)
  })
})

describe('the anchor in the real web host', { skip: SKIP }, () => {
  /** @type {{root: string, platform: string}} */
  let tarballs
  const temps = []
  before(async () => {
    const { ensureHost } = await import('../e2e/harness/install.mjs')
    const { pack } = await import('../../scripts/pack.mjs')
    ensureHost()
    const packDir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-pack-'))
    temps.push(packDir)
    tarballs = pack(packDir)
  }, { timeout: 45 * 60_000 })
  after(() => { for (const d of temps) rmSync(d, { recursive: true, force: true }) })

  test('with and without the row: same tools, same messages, a direct bash call works', { timeout: 300_000 }, async () => {
    const { startWebHost } = await import('../e2e/harness/web.mjs')
    const { isTitleRequest, sequence, startModelServer } = await import('../e2e/harness/model-server.mjs')
    const cwd = mkdtempSync(path.join(tmpdir(), 'dsh-fold-anchor-cwd-'))
    temps.push(cwd)
    /** @type {Record<string, any[]>} */
    const seen = {}
    for (const variant of ['with', 'without']) {
      const server = await startModelServer(sequence([
        { toolCalls: [{ id: 'call_bash', name: 'bash', arguments: { command: 'echo anchor-inert', description: 'Echo a marker' } }] },
        { content: 'done' },
      ]))
      const web = await startWebHost({ baseUrl: server.url, cwd, bundles: [tarballs.root, tarballs.platform], patchRows: variant === 'without' ? [{ id: 'block-ui', disabled: true }] : [] })
      try {
        const html = await (await fetch(web.url)).text()
        const boot = JSON.parse(/window\.__DSH_BOOT__ = (.*?)<\/script>/.exec(html)?.[1] ?? 'null')
        const rows = boot.entries.map((/** @type {{id: string}} */ e) => e.id).filter((/** @type {string} */ id) => id.startsWith('dsh-fold'))
        assert.deepEqual(rows, variant === 'with' ? ['dsh-fold/ui'] : [], `${variant}: boot graph rows ${JSON.stringify(rows)}`)
        const { workspace } = await web.api('workspace.create', { path: cwd })
        const { sessionId, agentPreset } = await web.api('session.create', { workspaceId: workspace.workspaceId })
        assert.equal(agentPreset, 'standard')
        await web.api('session.prompt', { sessionId, mode: 'queue', content: [{ type: 'text', text: 'Echo the marker.' }] })
        const deadline = Date.now() + 120_000
        while (server.requests.filter((b) => !isTitleRequest(b)).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
        const agent = server.requests.filter((b) => !isTitleRequest(b))
        assert.equal(agent.length, 2, `${variant}: ${web.stderr().slice(-3000)}`)
        assert.deepEqual(server.violations, [])
        const answer = agent[1].messages.at(-1)
        assert.equal(answer.role, 'tool')
        assert.equal(answer.content, 'anchor-inert\n', `${variant}: the direct bash call did not run: ${JSON.stringify(answer)}`)
        seen[variant] = agent
      } finally {
        await web.stop()
        await server.close()
        web.cleanup()
      }
    }
    const normalize = (/** @type {any} */ body) => JSON.parse(JSON.stringify(body).replace(/http:\/\/127\.0\.0\.1:\d+/g, 'http://127.0.0.1:PORT'))
    const [a, b] = [normalize(seen.with[0]), normalize(seen.without[0])]
    assert.ok(a.tools.length > 0)
    assert.deepEqual(a.tools, b.tools)
    assert.ok(!a.tools.some((/** @type {any} */ t) => /block/.test(t.function.name)))
    assert.deepEqual(a.messages, b.messages)
    assert.deepEqual(a, b)
  })
})
