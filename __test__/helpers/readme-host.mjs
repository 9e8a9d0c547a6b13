/**
 * @module readme-host
 * The DSH host as the README installs it — pnpm, `@deepseek-ai/dsh@0.1.0-rc.8`, with
 * `@deepseek-ai/cordis-plugin-hmr` overridden to 1.0.17 so rc.8's own `dsh` launcher can start —
 * cached in the test cache (`$DSH_E2E_CACHE`, default `.e2e-cache/`) by bin/host/install.mjs's
 * one cache mechanism, for the suites that run the real `dsh` bin (doctor, the docs test's
 * fixtures). The docs test also runs the README's own lines in a sandbox; this copy only saves
 * the suites that need a ready host the minute of installing one each.
 *
 * `ensureReadmeHost()` → `{node22, pnpm, hostBin, dshPackage, storeDir}`: the cached Node 22,
 * pnpm (from the npm registry), the host's `node_modules/.bin` (holds `dsh`), its
 * `@deepseek-ai/dsh` folder, and the pnpm store the installs share (`npm_config_store_dir`).
 */
import { execFileSync } from 'node:child_process'
import { realpathSync, writeFileSync } from 'node:fs'
import path from 'node:path'

import { ensureCached } from '../../bin/host/install.mjs'
import { CACHE, ensureHost } from '../e2e/harness/install.mjs'

export const PNPM_PIN = 'pnpm@10.34.9'
export const HMR_OVERRIDE = { '@deepseek-ai/cordis-plugin-hmr': '1.0.17' }
const log = (/** @type {string} */ msg) => process.stderr.write(`[readme host] ${msg}\n`)

let ready
export function ensureReadmeHost () {
  if (ready) return ready
  const { node22 } = ensureHost()
  const storeDir = path.join(CACHE, 'pnpm-store')
  const tools = ensureCached({
    cache: CACHE,
    kind: 'readme-tools',
    pins: [PNPM_PIN],
    log,
    fill: (dir) => {
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'readme-tools', private: true }))
      execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', PNPM_PIN], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] })
    },
  })
  const pnpm = path.join(tools, 'node_modules', '.bin', 'pnpm')
  const env = { ...process.env, PATH: `${path.dirname(node22)}${path.delimiter}${process.env.PATH}`, npm_config_store_dir: storeDir }
  const host = ensureCached({
    cache: CACHE,
    kind: 'readme-host',
    pins: ['@deepseek-ai/dsh@0.1.0-rc.8', JSON.stringify(HMR_OVERRIDE), PNPM_PIN],
    log,
    fill: (dir) => {
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ private: true, pnpm: { overrides: HMR_OVERRIDE } }))
      execFileSync(pnpm, ['add', '--reporter=silent', '@deepseek-ai/dsh@0.1.0-rc.8'], { cwd: dir, env, stdio: ['ignore', 'ignore', 'inherit'] })
    },
  })
  ready = {
    node22,
    pnpm,
    hostBin: path.join(host, 'node_modules', '.bin'),
    dshPackage: realpathSync(path.join(host, 'node_modules', '@deepseek-ai', 'dsh')),
    storeDir,
  }
  return ready
}
