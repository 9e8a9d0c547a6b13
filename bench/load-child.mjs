/**
 * @module bench/load-child
 * One fresh host-like process for figure 5 (bench/load.mjs runs it many times): the DSH
 * libraries a host has loaded anyway are imported first; then, by mode:
 * - `addon`: the addon through the package's one loader (plugin/shared/addon.js: `require` of the
 *   generated `index.js`, which picks and dlopens the platform binary), its first sync call, its
 *   first async call (starts the addon's async runtime: a mark to a tmpfs store);
 * - `plugin`: the import of the whole plugin bundle instead;
 * - `cycles-stamp` / `cycles-fold`: 1,000 cycles of a durable mark and its fold's store side (a
 *   stamp, `completeFold`), or of a mark and a whole `rewind` through the addon (a JS host over
 *   a small encoded surface, an instant summarizer), on a tmpfs store, four sessions in turn;
 *   RSS after 100 cycles (warm) and after all of them.
 * Prints one JSON line.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import path from 'node:path'

const mode = process.argv[2] ?? 'addon'
const CYCLES = Number(process.argv[3] ?? 1000)
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

if (mode === 'cycles-stamp' || mode === 'cycles-fold') {
  const { explorationSurface, jsHost } = await import('../__test__/reliability/helpers.mjs')
  const { addon } = await import('../plugin/shared/addon.js')
  const dir = mkdtempSync(path.join(process.platform === 'linux' ? '/dev/shm' : '/tmp', 'dsh-fold-cycles-'))
  const store = path.join(dir, 'checkpoint.json')
  const snapshot = explorationSurface(3, { steps: 2 })
  const sessions = ['cyc-a', 'cyc-b', 'cyc-c', 'cyc-d']
  const t0 = clock()
  try {
    for (let i = 0; i < CYCLES; i++) {
      if (i === 100) {
        globalThis.gc?.()
        out.rssWarm = rss()
      }
      const session = sessions[i % sessions.length]
      const { id } = await addon.mark(store, session, 3, `cycle ${i}`)
      if (mode === 'cycles-stamp') {
        if (!(await addon.completeFold(store, session, id))) throw new Error(`stamp ${id} refused`)
      } else {
        const folded = await addon.rewind(store, session, jsHost(snapshot, {}, `report ${i}`))
        if (folded.markId !== id) throw new Error(`folded ${folded.markId}, expected ${id}`)
      }
    }
    out.cyclesMs = ms(t0, clock())
    globalThis.gc?.()
    out.rssEnd = rss()
    out.cycles = CYCLES
    out.marksKept = (await addon.listMarks(store)).length
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
} else if (mode === 'plugin') {
  const t0 = clock()
  await import('../plugin/index.js')
  out.importMs = ms(t0, clock())
  out.rssAfterImport = rss()
} else {
  let t0 = clock()
  const { addon } = await import('../plugin/shared/addon.js')
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
