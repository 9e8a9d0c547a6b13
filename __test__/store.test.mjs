// The checkpoint store through the addon's public API: every verb, every error code,
// unchanged bytes on bad files, marks seen by a new process, two processes at once.
import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'

import { addon as fold, addonPath } from '../plugin/shared/addon.js'
import { FAULTS_UNAVAILABLE, faultsEnv } from './helpers/faults.mjs'
import { tempStore as freshStore } from './helpers/tmp.mjs'


const tempStore = () => freshStore('dsh-fold-store-')
const rejectsWith = (promise, code) => assert.rejects(promise, (e) => { assert.equal(e.code, code, e.message); assert.ok(fold.isFoldError(e)); return true })

describe('mark / latestMark / hasActive / completeFold / listMarks', () => {
  it('records marks with monotonic ids and reports them', async () => {
    const store = tempStore()
    assert.deepEqual(await fold.mark(store, 's1', 3, 'read the parser'), { id: 1, logLength: 3 })
    assert.deepEqual(await fold.mark(store, 's2', 7), { id: 2, logLength: 7 })
    const latest = await fold.latestMark(store, 's1')
    assert.equal(latest.id, 1)
    assert.equal(latest.sessionId, 's1')
    assert.equal(latest.objective, 'read the parser')
    assert.equal(latest.foldedAt, null)
    assert.ok(Math.abs(latest.createdAt - Date.now()) < 60_000)
    assert.equal(await fold.latestMark(store, 'nobody'), null)
    assert.equal(await fold.hasActive(store, 's1'), true)
    assert.equal(fold.hasActiveSync(store, 's1'), true)
    assert.equal(await fold.hasActive(store, 'nobody'), false)
    assert.deepEqual((await fold.listMarks(store)).map((m) => m.id), [2, 1])
    assert.deepEqual((await fold.listMarks(store, 's2')).map((m) => m.id), [2])
  })

  it('completeFold stamps only the latest active mark', async () => {
    const store = tempStore()
    const first = await fold.mark(store, 's', 1)
    const second = await fold.mark(store, 's', 2)
    assert.equal(await fold.completeFold(store, 's', first.id), false)
    assert.equal(await fold.completeFold(store, 's', 99), false)
    assert.equal(await fold.completeFold(store, 'other', second.id), false)
    assert.equal(await fold.completeFold(store, 's', second.id), true)
    assert.equal(await fold.completeFold(store, 's', second.id), false)
    assert.equal(await fold.hasActive(store, 's'), false)
    assert.equal(typeof (await fold.latestMark(store, 's')).foldedAt, 'number')
  })

  it('writes the DSH storage-json layout, private, durable for a new process', async () => {
    const store = tempStore()
    await fold.mark(store, 's', 5, 'x')
    const doc = JSON.parse(readFileSync(store, 'utf8'))
    assert.deepEqual(doc.unit, { name: 'checkpoint', version: 2 })
    assert.equal(doc.global.nextId, 2)
    assert.equal(doc.tables.marks['1'].logLength, 5)
    for (const file of [store, `${store}.journal`, `${store}.lock`]) assert.equal(statSync(file).mode & 0o777, 0o600, file)
    assert.equal(statSync(path.dirname(store)).mode & 0o777, 0o700)
    // Later changes are journal appends; compactStore folds them into the file DSH tools read.
    await fold.mark(store, 't', 6)
    assert.equal(await fold.completeFold(store, 's', 1), true)
    assert.equal(JSON.parse(readFileSync(store, 'utf8')).tables.marks['2'], undefined)
    await fold.compactStore(store)
    const compacted = JSON.parse(readFileSync(store, 'utf8'))
    assert.equal(compacted.tables.marks['2'].sessionId, 't')
    assert.equal(typeof compacted.tables.marks['1'].foldedAt, 'number')
    const seen = execFileSync(process.execPath, ['-e', `require(${JSON.stringify(addonPath)}).latestMark(${JSON.stringify(store)}, 's').then(m => process.stdout.write(JSON.stringify(m)))`])
    assert.equal(JSON.parse(String(seen)).logLength, 5)
  })

  it('prunes with the limits given in a StoreOptions', async () => {
    const store = { path: tempStore(), maxMarksPerSession: 2 }
    for (let n = 0; n < 5; n++) await fold.mark(store, 's', n)
    assert.deepEqual((await fold.listMarks(store.path, 's')).map((m) => m.id), [5, 4])
    assert.equal((await fold.mark(store, 's', 9)).id, 6)
    await rejectsWith(fold.mark({ path: store.path, maxMarksPerSession: 0 }, 's', 1), 'INVALID_ARGUMENT')
    await rejectsWith(fold.mark({ path: store.path, maxAgeDays: -1 }, 's', 1), 'INVALID_ARGUMENT')
  })

  it('two plugins naming one path with different limits: the loosest applies, whoever calls', async () => {
    // Two checkpoint services (say, two profiles of one host) share a file: one keeps 2 marks
    // per session, the other 5. Pruning must not depend on which of them wrote last.
    for (const order of [['tight', 'loose'], ['loose', 'tight']]) {
      const file = tempStore()
      const refs = { tight: { path: file, maxMarksPerSession: 2 }, loose: { path: file, maxMarksPerSession: 5 } }
      for (const name of order) await fold.hasActive(refs[name], 'nobody') // each plugin's first call
      for (let n = 0; n < 8; n++) await fold.mark(refs.tight, 's', n)
      assert.deepEqual((await fold.listMarks(refs.tight, 's')).map((m) => m.id), [8, 7, 6, 5, 4], order.join(' then '))
      await fold.mark(refs.loose, 's', 9)
      assert.equal((await fold.listMarks(refs.loose, 's')).length, 5, order.join(' then '))
    }
  })
})

describe('findMark: one mark by id (recall\'s owner lookup)', () => {
  it('answers any session\'s mark from memory, null for none, and sees a mark another process took', async () => {
    const store = tempStore()
    assert.equal(await fold.findMark(store, 1), null)
    const a = await fold.mark(store, 'owner-a', 3)
    const b = await fold.mark(store, 'owner-b', 5, 'why')
    await fold.completeFold(store, 'owner-a', a.id)
    const found = await fold.findMark(store, b.id)
    assert.deepEqual({ ...found, createdAt: 0 }, { id: b.id, sessionId: 'owner-b', logLength: 5, objective: 'why', createdAt: 0, foldedAt: null })
    assert.notEqual((await fold.findMark(store, a.id)).foldedAt, null)
    // Another process's mark is not in this process's memory yet: findMark reads it anyway.
    execFileSync(process.execPath, ['-e', `require(${JSON.stringify(addonPath)}).mark(${JSON.stringify(store)}, 'owner-c', 7)`])
    assert.equal((await fold.findMark(store, b.id + 1))?.sessionId, 'owner-c')
    assert.equal(await fold.findMark(store, 999), null)
  })

  it('a bad store or mark id is INVALID_ARGUMENT, rejected', async () => {
    for (const [store, id, message] of [
      [tempStore(), -1, /markId must be an integer/],
      [tempStore(), 1.5, /markId must be an integer/],
      [tempStore(), '1', /markId must be a number/],
      [42, 1, /store must be/],
    ]) {
      await assert.rejects(fold.findMark(/** @type {any} */ (store), /** @type {any} */ (id)), (e) => e.code === 'INVALID_ARGUMENT' && message.test(e.message))
    }
  })
})

describe('a store written by a newer minor version', () => {
  it('reads marks with unknown fields and keeps the fields through its own writes', async () => {
    const store = tempStore()
    mkdirSync(path.dirname(store), { recursive: true })
    const now = Date.now()
    writeFileSync(
      store,
      JSON.stringify({
        unit: { name: 'checkpoint', version: 1 },
        global: { nextId: 2 },
        tables: { marks: { 1: { id: 1, sessionId: 's', logLength: 4, createdAt: now, foldedAt: null, priority: 'high', links: [{ to: 7 }] } } },
        extension: { by: 'newer' },
      }),
    )
    assert.equal((await fold.latestMark(store, 's')).logLength, 4)
    assert.equal(await fold.completeFold(store, 's', 1), true)
    assert.equal((await fold.mark(store, 't', 9)).id, 2)
    const marks = (await fold.listMarks(store)).map((m) => m.id)
    assert.deepEqual(marks, [2, 1])
    const onDisk = JSON.parse(readFileSync(store, 'utf8'))
    assert.equal(onDisk.tables.marks['1'].priority, 'high')
    assert.deepEqual(onDisk.tables.marks['1'].links, [{ to: 7 }])
    assert.equal(typeof onDisk.tables.marks['1'].foldedAt, 'number')
    assert.deepEqual(onDisk.extension, { by: 'newer' })
  })
})

describe('bad input', () => {
  const store = tempStore()
  const cases = [
    ['non-integer logLength', () => fold.mark(store, 's', 1.5)],
    ['negative logLength', () => fold.mark(store, 's', -1)],
    ['NaN logLength', () => fold.mark(store, 's', NaN)],
    ['string logLength', () => fold.mark(store, 's', '3')],
    ['empty session id', () => fold.mark(store, '', 1)],
    ['non-string session id', () => fold.mark(store, 42, 1)],
    ['objective over 4 KiB', () => fold.mark(store, 's', 1, 'x'.repeat(4097))],
    ['1 MB objective', () => fold.mark(store, 's', 1, 'x'.repeat(1 << 20))],
    ['non-string objective', () => fold.mark(store, 's', 1, {})],
    ['store of the wrong type', () => fold.mark(12, 's', 1)],
    ['empty store path', () => fold.mark('', 's', 1)],
    ['bad markId', () => fold.completeFold(store, 's', -3)],
    ['bad session of latestMark', () => fold.latestMark(store, null)],
    ['bad session of listMarks', () => fold.listMarks(store, 7)],
  ]
  for (const [name, call] of cases) {
    it(`${name} → INVALID_ARGUMENT, nothing written`, async () => {
      await rejectsWith(call(), 'INVALID_ARGUMENT')
      assert.throws(() => statSync(store), { code: 'ENOENT' })
    })
  }
  it('hasActiveSync throws the same coded error', () => {
    assert.throws(() => fold.hasActiveSync(store, ''), (e) => e.code === 'INVALID_ARGUMENT')
  })
})

describe('bad files are named, classified and left byte-for-byte unchanged', () => {
  const files = [
    ['truncated JSON', '{"unit":{"name":"checkpoint"', 'STORE_CORRUPT'],
    ['empty file', '', 'STORE_CORRUPT'],
    ['not JSON', 'hello', 'STORE_CORRUPT'],
    ['wrong unit', '{"unit":{"name":"sessions","version":1},"global":{},"tables":{}}', 'STORE_CORRUPT'],
    ['newer version', '{"unit":{"name":"checkpoint","version":9},"global":{},"tables":{}}', 'STORE_VERSION'],
    ['bad mark row', '{"unit":{"name":"checkpoint","version":1},"global":{},"tables":{"marks":{"1":{"id":"x"}}}}', 'STORE_CORRUPT'],
  ]
  for (const [name, bytes, code] of files) {
    it(`${name} → ${code}`, async () => {
      const store = tempStore()
      mkdirSync(path.dirname(store), { recursive: true })
      writeFileSync(store, bytes)
      for (const call of [() => fold.mark(store, 's', 1), () => fold.latestMark(store, 's'), () => fold.listMarks(store)]) {
        await assert.rejects(call(), (e) => e.code === code && e.message.includes(store))
      }
      assert.equal(readFileSync(store, 'utf8'), bytes)
      // Once the cause is removed, the next good operation works.
      writeFileSync(store, '{"unit":{"name":"checkpoint","version":1},"global":{"nextId":4},"tables":{}}')
      assert.equal((await fold.mark(store, 's', 1)).id, 4)
    })
  }
  it('a directory at the path → STORE_IO', async () => {
    const store = tempStore()
    mkdirSync(store, { recursive: true })
    await assert.rejects(fold.mark(store, 's', 1), (e) => e.code === 'STORE_IO' && e.message.includes(store))
    assert.ok(statSync(store).isDirectory())
  })
  it('an unreadable file → STORE_IO (as root, checked in a child process running as nobody)', async (t) => {
    const store = tempStore()
    mkdirSync(path.dirname(store), { recursive: true })
    writeFileSync(store, '{}')
    chmodSync(store, 0)
    if (process.getuid?.() !== 0) {
      await assert.rejects(fold.mark(store, 's', 1), (e) => e.code === 'STORE_IO' && e.message.includes(store))
      return
    }
    // root reads every file: drop to nobody (uid/gid 65534) in a child, with the directories
    // on the way traversable for it. The checkout may sit under a private directory (mktemp -d
    // makes them 0700), so nobody loads a copy of the loader and the binaries beside it from a
    // directory it can read (an installed package's binary is in another package: then the
    // original path is tried).
    const readable = mkdtempSync(path.join(tmpdir(), 'dsh-fold-nobody-'))
    chmodSync(readable, 0o755)
    t.after(() => rmSync(readable, { recursive: true, force: true }))
    const root = path.dirname(addonPath)
    for (const f of readdirSync(root).filter((f) => f === 'index.js' || /^dsh-fold\..*\.node$/.test(f))) copyFileSync(path.join(root, f), path.join(readable, f))
    const loads = (/** @type {string} */ from) => spawnSync(process.execPath, ['-e', `require(${JSON.stringify(from)})`], { uid: 65534, gid: 65534, encoding: 'utf8' })
    const loader = [path.join(readable, 'index.js'), addonPath].find((from) => loads(from).status === 0)
    if (!loader) {
      const probe = loads(addonPath)
      return t.skip(`running as root, and user nobody cannot load the addon from ${addonPath} to check as non-root: ${(probe.stderr || String(probe.error)).trim().split('\n')[0]}`)
    }
    chmodSync(path.dirname(store), 0o755)
    chmodSync(path.dirname(path.dirname(store)), 0o755)
    const script = `require(${JSON.stringify(loader)}).mark(${JSON.stringify(store)}, 's', 1).then(
      () => process.stdout.write('resolved'), (e) => process.stdout.write(JSON.stringify({ code: e.code, message: e.message })))`
    const out = execFileSync(process.execPath, ['-e', script], { uid: 65534, gid: 65534, encoding: 'utf8' })
    const e = JSON.parse(out)
    assert.equal(e.code, 'STORE_IO', out)
    assert.ok(e.message.includes(store), out)
    assert.match(e.message, /[Pp]ermission denied|os error 13/)
  })
})

describe('a write that landed but whose directory fsync failed', () => {
  it('resolves (the mark is there for every reader) and emits a process warning saying so', { skip: FAULTS_UNAVAILABLE }, () => {
    // DSH_FOLD_TEST_FAULTS=sync-dir makes every directory fsync fail with EIO (in the test build
    // only: __test__/helpers/faults.mjs; the release binary ignores it, __test__/faults.test.mjs).
    const store = tempStore()
    const script = `
      const f = require(${JSON.stringify(addonPath)})
      const warnings = []
      process.on('warning', (w) => warnings.push({ name: w.name, code: w.code, message: w.message }))
      ;(async () => {
        const m = await f.mark(${JSON.stringify(store)}, 's', 4, 'look')
        const stamped = await f.completeFold(${JSON.stringify(store)}, 's', m.id)
        await new Promise((r) => setImmediate(r))
        process.stdout.write(JSON.stringify({ m, stamped, warnings }))
      })()`
    const out = execFileSync(process.execPath, ['-e', script], { env: faultsEnv('sync-dir') })
    const { m, stamped, warnings } = JSON.parse(String(out))
    assert.deepEqual(m, { id: 1, logLength: 4 })
    assert.equal(stamped, true)
    assert.ok(warnings.length >= 1, 'no warning was emitted')
    for (const w of warnings) {
      assert.equal(w.name, 'DshFoldWarning')
      assert.equal(w.code, 'DSH_FOLD_STORE_DURABILITY')
      assert.ok(w.message.includes(store), w.message)
      assert.match(w.message, /fsync/)
    }
    // Every reader of the store sees what was acknowledged.
    const seen = execFileSync(process.execPath, ['-e', `require(${JSON.stringify(addonPath)}).latestMark(${JSON.stringify(store)}, 's').then(m => process.stdout.write(JSON.stringify(m)))`])
    assert.equal(typeof JSON.parse(String(seen)).foldedAt, 'number')
  })
})

describe('two processes', () => {
  it('marking one store at once lose nothing', async () => {
    const store = tempStore()
    const child = (tag) => new Promise((resolve, reject) => {
      const script = `const f=require(${JSON.stringify(addonPath)});(async()=>{const ids=[];for(let i=0;i<100;i++)ids.push((await f.mark(${JSON.stringify(store)},'${tag}',i)).id);console.log(JSON.stringify(ids))})()`
      const p = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      p.stdout.on('data', (d) => { out += d })
      p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exit ${code}`))))
    })
    const [a, b] = await Promise.all([child('a'), child('b')])
    const ids = [...a, ...b].sort((x, y) => x - y)
    assert.deepEqual(ids, Array.from({ length: 200 }, (_, i) => i + 1))
    assert.equal((await fold.listMarks(store)).length, 128) // 64 kept per session by default
  })
})

describe('a store used and closed leaves nothing behind it (closeStore)', () => {
  // docs/store.md: the store file, its journal and its lock file; nothing else, ever.
  const DOCUMENTED = ['checkpoint.json', 'checkpoint.json.journal', 'checkpoint.json.lock']
  const BIN = path.join(import.meta.dirname, '..', 'bin', 'dsh-fold.mjs')
  /** Each public path: what a process does with a store in a fresh folder before it closes it. */
  const PATHS = {
    'mark, every read, completeFold': `
      await fold.mark(store, 's', 1, 'look'); await fold.mark(store, 't', 2)
      await fold.latestMark(store, 's'); await fold.hasActive(store, 's'); fold.hasActiveSync(store, 's')
      await fold.listMarks(store); await fold.listMarks(store, 's'); await fold.findMark(store, 2)
      await fold.completeFold(store, 's', 1)`,
    'hasActiveSync before the load (the load runs in the background)': `
      mkdirSync(path.dirname(store), { recursive: true })
      writeFileSync(store, '{"unit":{"name":"checkpoint","version":2},"global":{"nextId":2},"tables":{"marks":{}}}')
      try { fold.hasActiveSync(store, 's') } catch (e) { if (e.code !== 'STORE_LOADING') throw e }`,
    'openStore, compactStore': `
      await fold.mark(store, 's', 1); await fold.openStore({ path: store, maxMarksPerSession: 8 }); await fold.compactStore(store)`,
    'calls not awaited before closeStore': `
      fold.mark(store, 's', 1); fold.mark(store, 't', 2); fold.listMarks(store); fold.compactStore(store)`,
    'a rewind and its stamp (the demo session, folded with the extractive report)': `
      const { buildDemoSession } = await import(${JSON.stringify(path.join(import.meta.dirname, '..', 'bin', 'demo-session.mjs'))})
      const { sessionHost } = await import(${JSON.stringify(path.join(import.meta.dirname, '..', 'plugin', 'fold', 'host.js'))})
      const { extractiveSummarizer } = await import(${JSON.stringify(path.join(import.meta.dirname, '..', 'plugin', 'fold', 'extractive.js'))})
      const { session, rewindCallId } = await buildDemoSession((s) => fold.mark(store, s.id, s.seq, 'find it'))
      const result = await fold.rewind(store, session.id, sessionHost(session, extractiveSummarizer({ session, language: 'en' }), { callId: rewindCallId }))
      if (result.markId !== 1) throw new Error('no fold')`,
  }

  for (const [name, body] of Object.entries(PATHS)) {
    it(`${name}: only the documented files until closeStore resolves, then nothing once the folder is removed`, () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-close-'))
      const script = `
        import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
        import path from 'node:path'
        import { addon as fold } from ${JSON.stringify(path.join(import.meta.dirname, '..', 'plugin', 'shared', 'addon.js'))}
        const dir = process.argv[1]
        const store = path.join(dir, 'storages', 'checkpoint.json')
        ${body}
        await fold.closeStore(store)
        process.stdout.write(JSON.stringify(readdirSync(path.join(dir, 'storages')).sort()))
        rmSync(dir, { recursive: true, force: true })`
      // The process ends on its own: whatever it still had to write would land before its exit.
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, dir], { encoding: 'utf8' })
      const after = existsSync(dir) ? readdirSync(dir, { recursive: true }) : null
      rmSync(dir, { recursive: true, force: true })
      assert.equal(r.status, 0, r.stderr)
      const atClose = JSON.parse(r.stdout)
      assert.ok(atClose.every((f) => DOCUMENTED.includes(f)), `undocumented files at close: ${atClose}`)
      assert.equal(after, null, `written after closeStore resolved and the folder was removed: ${after}`)
    })
  }

  it('dsh-fold demo leaves nothing in its temp folder (its fold\'s stamp lands before it removes its store)', () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'dsh-fold-demo-tmp-'))
    try {
      for (const args of [['demo'], ['demo', '--json']]) {
        const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, TMPDIR: tmp } })
        assert.equal(r.status, 0, r.stderr)
        assert.deepEqual(readdirSync(tmp, { recursive: true }), [], `dsh-fold ${args.join(' ')} left files behind`)
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true })
    }
  })

  it('closeStore takes a StoreRef like every call, and rejects a bad one with INVALID_ARGUMENT', async () => {
    const store = tempStore()
    await fold.mark(store, 's', 1)
    await fold.closeStore({ path: store })
    assert.equal((await fold.latestMark(store, 's')).id, 1, 'a closed store stays usable')
    await rejectsWith(fold.closeStore(''), 'INVALID_ARGUMENT')
    await rejectsWith(fold.closeStore(42), 'INVALID_ARGUMENT')
    rmSync(path.dirname(path.dirname(store)), { recursive: true, force: true })
  })
})
