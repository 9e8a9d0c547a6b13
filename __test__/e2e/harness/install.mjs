/**
 * @module install
 *
 * Contract: `ensureHost()` makes sure a Node 22 binary and the pinned DeepSeek Harness host
 * are installed under `<repo>/.e2e-cache/` (or `$DSH_E2E_CACHE`) and returns `{node22,
 * hostDir}` (memoized per process). The installer is the shipped one, `bin/host/install.mjs`
 * (what `dsh-fold try` installs into its own cache): the tests boot exactly the host a user
 * gets from `try`. Progress and the cold install time go to stderr.
 */
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

import { ensureHost as install, HOST_PIN, NODE_PIN } from '../../../bin/host/install.mjs'

export { HOST_PIN, NODE_PIN }

const HERE = dirname(fileURLToPath(import.meta.url))
export const CACHE = resolve(process.env.DSH_E2E_CACHE ?? join(HERE, '../../../.e2e-cache'))

let ready
/** @returns {{node22: string, hostDir: string}} (memoized per process) */
export function ensureHost () {
  ready ??= install({ cache: CACHE, log: (msg) => process.stderr.write(`[e2e install] ${msg}\n`) })
  return ready
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(ensureHost()))
