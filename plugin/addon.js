/**
 * @module plugin/addon
 * The native addon, loaded once for every plugin file. The addon's generated loader is
 * CommonJS (it picks the platform binary), so ESM reaches it through `createRequire`.
 */
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/** @type {typeof import('../index.js')} */
export const addon = require('../index.js')
