/**
 * @module __test__/ui/block-host
 * What the preset and browser suites share: dsh-fold packed as a user installs it, a REAL web
 * host (`web` profile of DSH 0.1.0-rc.8) with the packed bundle in its profile and the
 * `block-ptc` preset written by the real `dsh-fold preset install` process before the host
 * starts (the host is found the way a user's is: through the links the profile init wrote
 * into `$DSH_HOME/profiles/node_modules`), and the scripted model replies of a block session.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { startWebHost } from '../e2e/harness/web.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
export const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')

/** A wire message's text. @param {any} m */
export const text = (m) => (typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? m.content.map((p) => p?.text ?? '').join('') : '')
/** A compact picture of a wire message list. @param {any[]} messages */
export const shape = (messages) =>
  messages.map((m) => (m.tool_calls ? `assistant(${m.tool_calls.map((c) => c.function.name).join(',')})` : m.role === 'user' && text(m).startsWith('<block-summary>') ? 'summary' : m.role)).join(' ')

/** Run `dsh-fold preset install` for `dshHome` as a user would (DSH_HOME set, host discovered). */
export function installPreset (/** @type {string} */ dshHome) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(DSH_|NODE_TEST_CONTEXT$)/.test(k)))
  const r = spawnSync(process.execPath, [BIN, 'preset', 'install'], { encoding: 'utf8', env: { ...env, DSH_HOME: dshHome, HOME: path.dirname(dshHome) } })
  assert.equal(r.status, 0, `dsh-fold preset install failed: ${r.stderr}`)
  assert.match(r.stdout, /^installed block-ptc at /)
  return r.stdout
}

/**
 * A web host with dsh-fold installed as a bundle and the block-ptc preset installed.
 * @param {{tarballs: {root: string, platform: string}, baseUrl: string, cwd?: string}} options
 */
export async function startBlockWebHost ({ tarballs, baseUrl, cwd }) {
  /** @type {string} */
  let presetOutput = ''
  const web = await startWebHost({
    baseUrl,
    cwd,
    bundles: [tarballs.root, tarballs.platform],
    beforeBoot: ({ dshHome }) => { presetOutput = installPreset(dshHome) },
  })
  return Object.assign(web, { presetOutput })
}

/** Poll `check` until it returns a truthy value or `ms` pass; returns the value (or undefined). */
export async function until (/** @type {() => any} */ check, ms = 120_000) {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 150))
  }
}
