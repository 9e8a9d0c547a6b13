/**
 * `npm run clean` (scripts/clean.mjs), run on a copy of it in a checkout of its own (a temp
 * folder with the layout a build and a test run leave), so the real checkout's builds stay.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { tempDir } from './helpers/tmp.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

/** A checkout as building and testing leave it. */
function checkout() {
  const dir = tempDir('dsh-fold-clean-')
  mkdirSync(path.join(dir, 'scripts'))
  copyFileSync(path.join(ROOT, 'scripts', 'clean.mjs'), path.join(dir, 'scripts', 'clean.mjs'))
  const files = [
    'target/release/libdsh_fold.so', 'target-core/debug/fold_core', 'target-faults/addon/dsh-fold.node', 'target-lint/debug/x.rmeta',
    'target-cross/aarch64-unknown-linux-gnu/release/x', 'target-cross/targets.json', 'target-cross/tools/zig/zig',
    'npm/linux-arm64-gnu/dsh-fold.linux-arm64-gnu.node', 'npm/linux-arm64-gnu/package.json', 'bench/tmp/mark-1/x',
    '.fuzz-cache/target/x', '.fuzz-cache/tools/bin/cargo-fuzz', '.fuzz-cache/corpus/store/seed',
    '.e2e-cache/host-1/.ready', 'node_modules/x/package.json', 'dsh-fold.linux-x64-gnu.node', 'src/lib.rs',
  ]
  for (const f of files) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true })
    writeFileSync(path.join(dir, f), 'x'.repeat(1024))
  }
  return dir
}

/** @param {string} dir @param {string[]} args @param {Record<string, string>} [env] */
const clean = (dir, args, env = {}) => {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(DSH_E2E_CACHE|DSH_FOLD_TARGETS_CACHE|DSH_FOLD_FUZZ_CACHE)$/.test(k)))
  return spawnSync(process.execPath, [path.join(dir, 'scripts', 'clean.mjs'), ...args], { encoding: 'utf8', env: { ...base, ...env } })
}

describe('npm run clean', () => {
  test('removes the build output, keeps the downloads, node_modules, the root addon and the fuzz corpora, and says how much', () => {
    const dir = checkout()
    const r = clean(dir, [])
    assert.equal(r.status, 0, r.stderr)
    for (const gone of ['target', 'target-core', 'target-faults', 'target-lint', 'target-cross/aarch64-unknown-linux-gnu', 'target-cross/targets.json', 'npm/linux-arm64-gnu/dsh-fold.linux-arm64-gnu.node', 'bench/tmp', '.fuzz-cache/target']) {
      assert.ok(!existsSync(path.join(dir, gone)), `${gone} is left`)
    }
    for (const stays of ['target-cross/tools/zig/zig', '.fuzz-cache/tools/bin/cargo-fuzz', '.fuzz-cache/corpus/store/seed', '.e2e-cache/host-1/.ready', 'node_modules/x/package.json', 'dsh-fold.linux-x64-gnu.node', 'npm/linux-arm64-gnu/package.json', 'src/lib.rs']) {
      assert.ok(existsSync(path.join(dir, stays)), `${stays} was removed`)
    }
    assert.match(r.stdout, /^removing target \(0 MiB\): the release build/m)
    assert.match(r.stdout, /^keeping \.e2e-cache \(0 MiB\): .*removed with --downloads$/m)
    assert.match(r.stdout, /^clean: freed \d+ MiB$/m)
  })

  test('--downloads also removes the downloads inside the checkout, never a cache the environment points elsewhere', () => {
    const dir = checkout()
    const shared = tempDir('dsh-fold-clean-shared-')
    writeFileSync(path.join(shared, 'host'), 'x')
    const r = clean(dir, ['--downloads'], { DSH_E2E_CACHE: shared })
    assert.equal(r.status, 0, r.stderr)
    for (const gone of ['.e2e-cache', 'target-cross/tools', '.fuzz-cache/tools', 'target']) assert.ok(!existsSync(path.join(dir, gone)), `${gone} is left`)
    assert.ok(existsSync(path.join(shared, 'host')), 'the shared cache was removed')
    assert.match(r.stdout, new RegExp(`^keeping ${shared.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(0 MiB\\): .*shared, never removed by clean$`, 'm'))
    for (const stays of ['node_modules/x/package.json', 'dsh-fold.linux-x64-gnu.node', '.fuzz-cache/corpus/store/seed']) assert.ok(existsSync(path.join(dir, stays)), `${stays} was removed`)
  })

  test('--dry-run removes nothing; --help says what goes; an unknown option is a usage error (64)', () => {
    const dir = checkout()
    const r = clean(dir, ['--dry-run', '--downloads'])
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /^would remove target \(/m)
    assert.ok(existsSync(path.join(dir, 'target')) && existsSync(path.join(dir, '.e2e-cache')))
    const help = clean(dir, ['--help'])
    assert.equal(help.status, 0)
    assert.match(help.stdout, /^Usage: npm run clean/)
    const bad = clean(dir, ['--all'])
    assert.equal(bad.status, 64)
    assert.match(bad.stderr, /unknown option --all/)
  })
})
