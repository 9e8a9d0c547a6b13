/**
 * @module bench/load-child
 * One fresh host-like process for figure 5 (bench/load.mjs runs it many times): the DSH
 * libraries a host has loaded anyway are imported first; then the addon through the package's
 * one loader (plugin/addon.js: `require` of the generated `index.js`, which picks and dlopens the
 * platform binary), its
 * first sync call, its first async call (starts the addon's async runtime: a mark to a tmpfs
 * store), and, in `plugin` mode, the import of the whole plugin bundle instead.
 * Prints one JSON line.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import path from 'node:path'

const mode = process.argv[2] ?? 'addon'
await import('@deepseek-ai/cordis')
await import('@deepseek-ai/dsh-session')
await import('@deepseek-ai/dsh-llm')
await import('@deepseek-ai/dsh-tools')
await import('@deepseek-ai/dsh-compaction')
await import('@deepseek-ai/schemastery')
globalThis.gc?.()
await new Promise((r) => setTimeout(r, 50))

const rss = () => process.memoryUsage().rss
const clock = () => process.hrtime.bigint()
const ms = (/** @type {bigint} */ a, /** @type {bigint} */ b) => Number(b - a) / 1e6
const out = /** @type {Record<string, number>} */ ({ rss0: rss() })

if (mode === 'plugin') {
  const t0 = clock()
  await import('../plugin/index.js')
  out.importMs = ms(t0, clock())
  out.rssAfterImport = rss()
} else {
  let t0 = clock()
  const { addon } = await import('../plugin/addon.js')
  out.requireMs = ms(t0, clock())
  out.rssAfterRequire = rss()
  t0 = clock()
  addon.foldErrorCodes()
  out.firstSyncMs = ms(t0, clock())
  const dir = mkdtempSync(path.join(process.platform === 'linux' ? '/dev/shm' : '/tmp', 'dsh-fold-load-'))
  try {
    t0 = clock()
    await addon.mark(path.join(dir, 'checkpoint.json'), 'load', 1)
    out.firstAsyncMs = ms(t0, clock())
    out.rssAfterAsync = rss()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
console.log(JSON.stringify(out))
