// @ts-check
/**
 * @module bin/host/dialect
 * The installed host's own YAML dialect for compositions and patches: its `js-yaml` with the
 * loader's `!!js` type (`entryListSchema` of `@deepseek-ai/cordis-plugin-include`), both resolved
 * from the host's folder, so a text dsh-fold writes (block-ptc's composition, a profile's patch)
 * is parsed exactly as that host will parse it. Used by `preset` and `compaction`. A host whose
 * dialect cannot be loaded is `HostError` HOST_UNREADABLE (65).
 */
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

import { HostError } from './find.mjs'

/**
 * The host's dialect: `load` a text, `dump` rows.
 * @param {string} hostDir the `@deepseek-ai/dsh` package folder
 */
export async function hostDialect(hostDir) {
  const require = createRequire(path.join(hostDir, 'package.json'))
  try {
    const yaml = await import(pathToFileURL(require.resolve('js-yaml')).href)
    const { entryListSchema } = await import(pathToFileURL(require.resolve('@deepseek-ai/cordis-plugin-include')).href)
    if (!entryListSchema || typeof yaml.load !== 'function') throw new Error('no entryListSchema / js-yaml load')
    return {
      /** @param {string} text */
      load: (text) => yaml.load(text, { schema: entryListSchema }),
      /** @param {unknown} rows */
      dump: (rows) => yaml.dump(rows, { schema: entryListSchema, lineWidth: -1, noRefs: true }),
    }
  } catch (e) {
    throw new HostError('HOST_UNREADABLE', `cannot load the host's YAML dialect (js-yaml and @deepseek-ai/cordis-plugin-include, resolved from ${hostDir}): ${/** @type {Error} */ (e).message}`, 65)
  }
}
