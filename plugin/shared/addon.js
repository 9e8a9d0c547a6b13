/**
 * @module plugin/shared/addon
 * The native addon, loaded once for every user of it: the plugins, the `dsh-fold` command, the
 * tests and the benchmarks all import it from here. The addon's generated loader (`index.js`,
 * CommonJS) picks the platform binary, so ESM reaches it through `createRequire`. `addonPath`
 * is the loader's file, for code that must `require` it in another thread or process. When no
 * binary loads, the error says why and what to install (plugin/shared/binary.js).
 */
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

import { explainMissingBinary } from './binary.js'

const require = createRequire(import.meta.url)

/** The addon's generated loader (`index.js`). */
export const addonPath = require.resolve('../../index.js')

/** @type {typeof import('../../index.js')} */
let loaded
try {
  loaded = require(addonPath)
} catch (e) {
  // The loader's own error lists every candidate it tried; say the one thing to do instead.
  throw new Error(explainMissingBinary(fileURLToPath(new URL('../..', import.meta.url)), e), { cause: e })
}
export const addon = loaded
