/**
 * @module __test__/helpers/standing-cost
 * The standing cost of dsh-fold's rows: the prose they put in front of the model on every request,
 * before it calls anything — the text of their prompt sections, plus their tools' descriptions and
 * parameter descriptions as the request carries them (in the wire tool list, and again in Code
 * Mode's SDK section when one is assembled). Chars are UTF-16 units (JS `length`); JSON and SDK
 * syntax around the text is not counted.
 *
 * `measure(root, names)` reads one assembled request of a real host (`root.systemPrompt.assemble()`:
 * DSH's own sections and wire tools). `standingCost()` measures the configurations the docs report,
 * on real DSH packages: checkpoint + rewind; with recall; with `reportLanguage: zh` (and the rows'
 * `language: zh`). Block mode needs Node 22 (DSH's worker-thread code runtime): `blockCost()`
 * (imported by the block suite) measures block mode alone and with the fold rows.
 *
 * `node __test__/helpers/standing-cost.mjs` prints the table (the block rows only on Node 22).
 */
import { pathToFileURL } from 'node:url'

/** The prompt sections dsh-fold's rows add (block mode's is named after its tool). */
const OUR_SECTIONS = /^(tool:(checkpoint|rewind|recall)|dsh-fold:.*|tool:block_run_code)$/

/**
 * The description text of one tool schema: its description and every parameter's.
 * @param {{description?: string, parameters?: {properties?: Record<string, {description?: string}>}}} schema
 */
export function describedChars(schema) {
  let chars = (schema.description ?? '').length
  for (const p of Object.values(schema.parameters?.properties ?? {})) chars += (p?.description ?? '').length
  return chars
}

/**
 * The standing cost of the named tools and our sections on one assembled request of `root`.
 * @param {any} root a booted host
 * @param {string[]} names our tools' model-facing names
 * @returns {Promise<{sections: number, tools: number, sdk: number, total: number}>}
 */
export async function measure(root, names) {
  const assembly = await root.systemPrompt.assemble()
  const sections = assembly.sections.filter((/** @type {any} */ s) => OUR_SECTIONS.test(s.name)).reduce((n, /** @type {any} */ s) => n + s.text.length, 0)
  const tools = assembly.tools.filter((/** @type {any} */ t) => names.includes(t.name)).reduce((n, /** @type {any} */ t) => n + describedChars(t), 0)
  // Code Mode's SDK section declares every visible tool again, with its descriptions.
  const sdkSection = assembly.sections.some((/** @type {any} */ s) => s.name === 'tools:sdk')
  const sdk = sdkSection ? root.tools.sdkSchemas().filter((/** @type {any} */ t) => names.includes(t.name)).reduce((n, /** @type {any} */ t) => n + describedChars(t), 0) : 0
  return { sections, tools, sdk, total: sections + tools + sdk }
}

/**
 * The fold rows' standing cost on real DSH packages (Node 20 is enough).
 * @returns {Promise<{config: string, sections: number, tools: number, sdk: number, total: number}[]>}
 */
export async function standingCost() {
  const { bootHost, ScriptedModel, say, tempStore } = await import('./dsh.mjs')
  const { Checkpoint, Rewind, Recall } = await import('../../plugin/index.js')
  /** @param {{zh?: boolean, recall?: boolean}} o */
  const one = async ({ zh = false, recall = false }) => {
    const root = await bootHost(new ScriptedModel(() => say('x')))
    await root.plugin(Checkpoint, { store: tempStore(), ...(zh ? { language: 'zh' } : {}) })
    await root.plugin(Rewind, zh ? { reportLanguage: 'zh' } : {})
    if (recall) await root.plugin(Recall, zh ? { language: 'zh' } : {})
    try {
      return await measure(root, ['checkpoint', 'rewind', 'recall'])
    } finally {
      await root.dispose?.()
    }
  }
  return [
    { config: 'checkpoint + rewind', ...(await one({})) },
    { config: 'checkpoint + rewind + recall', ...(await one({ recall: true })) },
    { config: 'checkpoint + rewind + recall, zh', ...(await one({ recall: true, zh: true })) },
  ]
}

/**
 * Block mode's standing cost (Node 22: DSH's worker-thread code runtime).
 * @returns {Promise<{config: string, sections: number, tools: number, sdk: number, total: number}[]>}
 */
export async function blockCost() {
  const { bootBlockHost } = await import('../block/harness.mjs')
  const { tempStore } = await import('./dsh.mjs')
  const { Checkpoint, Rewind, Recall } = await import('../../plugin/index.js')
  const names = ['block_run_code', 'block_summary', 'checkpoint', 'rewind', 'recall']
  /** @param {boolean} fold */
  const one = async (fold) => {
    const { root } = await bootBlockHost({})
    if (fold) {
      await root.plugin(Checkpoint, { store: tempStore() })
      await root.plugin(Rewind, {})
      await root.plugin(Recall, {})
    }
    try {
      return await measure(root, names)
    } finally {
      await root.dispose?.()
    }
  }
  return [
    { config: 'block mode', ...(await one(false)) },
    { config: 'block mode + checkpoint + rewind + recall', ...(await one(true)) },
  ]
}

/** The table, as the docs show it. @param {{config: string, sections: number, tools: number, sdk: number, total: number}[]} rows */
export function table(rows) {
  const lines = ['| Configuration | Prompt sections | Tool descriptions | SDK declarations | Total |', '| --- | ---: | ---: | ---: | ---: |']
  const n = (/** @type {number} */ x) => x.toLocaleString('en-US')
  for (const r of rows) lines.push(`| ${r.config} | ${n(r.sections)} | ${n(r.tools)} | ${n(r.sdk)} | ${n(r.total)} |`)
  return lines.join('\n')
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await standingCost()
  if (Number(process.versions.node.split('.')[0]) >= 22) rows.push(...(await blockCost()))
  console.log(table(rows))
  process.exit(0)
}
