/**
 * @module plugin/shared/addon
 * The native addon, loaded once for every user of it: the plugins, the `dsh-fold` command, the
 * tests and the benchmarks all import it from here. The addon's generated loader (`index.js`,
 * CommonJS) picks the platform binary, so ESM reaches it through `createRequire`. `addonPath`
 * is the loader's file, for code that must `require` it in another thread or process.
 */
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/** The addon's generated loader (`index.js`). */
export const addonPath = require.resolve('../../index.js')

/** @type {typeof import('../../index.js')} */
export const addon = require(addonPath)
