// @ts-check
/**
 * @module bin/marks
 * `dsh-fold marks [--store PATH] [--session ID] [--json]`: the checkpoint marks of a store
 * (default `$DSH_HOME/storages/checkpoint.json`), one line each: id, active or folded, session,
 * log length, age, objective. Needs only the addon (no DSH package). Read-only. A missing store
 * is exit 66; a store that cannot be read, 65 (its STORE_* code).
 */
import { existsSync } from 'node:fs'

import { addon } from '../plugin/shared/addon.js'
import { defaultStore, fail, print, storeError } from './cli.mjs'

/** @type {import('./cli.mjs').Command} */
export const command = {
  usage: `Usage: dsh-fold marks [--store PATH] [--session ID] [--json]
  List the checkpoint marks of a store (default $DSH_HOME/storages/checkpoint.json).`,
  run: marks,
}

/** @param {import('./cli.mjs').Opts} opts */
async function marks(opts) {
  const store = /** @type {string} */ (opts.store ?? defaultStore())
  if (!existsSync(store)) fail(`no checkpoint store at ${store}`, 66)
  if (opts.session === '') fail('--session needs a non-empty session id', 64)
  const list = await addon.listMarks(store, /** @type {string | undefined} */ (opts.session) ?? null).catch(storeError)
  if (opts.json) return print(list, true)
  if (!list.length) return console.log(`no marks${opts.session ? ` for session ${opts.session}` : ''} in ${store}`)
  const now = Date.now()
  for (const m of list) {
    const state = m.foldedAt === null ? 'active' : 'folded'
    console.log(`#${m.id}\t${state}\t${m.sessionId}\tlogLength ${m.logLength}\t${age(now - m.createdAt)} ago${m.objective ? `\t${m.objective}` : ''}`)
  }
}

/** @param {number} ms */
function age(ms) {
  const s = Math.max(0, Math.round(ms / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.round(s / 60)}m`
  if (s < 86400) return `${Math.round(s / 3600)}h`
  return `${Math.round(s / 86400)}d`
}
