/**
 * @module plugin/compaction/config
 * `dsh-fold/compaction`'s configuration: compaction-basic's policy keys with basic's meaning
 * and defaults (`thresholdRatio`, `retainRatio` / `retainTokens`, `summarizationProvider` +
 * `summarizationModel`, `maxTokens`, `compactionRetries`, `maxOverflowRetries`,
 * `modelPolicies`, `auto`), so a row swapped for basic's keeps its config, plus this backend's
 * own (`summarizer`, `maxSummaryTokens`, `pasteChars`, `language`, `summaryTimeoutMs`,
 * `blockToolName`). Misconfiguration fails at load, naming the key; a retention budget that is
 * only checkable against a model's capacity fails when that capacity is first known.
 */
import Schema from '@deepseek-ai/schemastery'

const POLICY_KEYS = ['thresholdRatio', 'retainRatio', 'retainTokens', 'summarizationProvider', 'summarizationModel', 'maxTokens', 'compactionRetries', 'maxOverflowRetries']
/** compaction-basic's own config keys, which keep their meaning here: a swapped row carries them over. */
export const BASIC_KEYS = Object.freeze([...POLICY_KEYS, 'modelPolicies', 'auto'])
const OWN_KEYS = ['summarizer', 'maxSummaryTokens', 'summaryRatio', 'pasteChars', 'language', 'summaryTimeoutMs', 'blockToolName']
const CONFIG_KEYS = new Set([...POLICY_KEYS, 'modelPolicies', 'auto', ...OWN_KEYS])
const MODEL_POLICY_KEYS = new Set(['provider', 'model', ...POLICY_KEYS])

const policyFields = {
  thresholdRatio: Schema.number().description('Compact when the request reaches this fraction of the routed model\'s context window (default 0.8).'),
  retainRatio: Schema.number().description('The recent tail kept verbatim, as a fraction of the context window (default 0.16); exclusive with retainTokens.'),
  retainTokens: Schema.natural().description('The recent tail kept verbatim, in tokens; exclusive with retainRatio.'),
  summarizationProvider: Schema.string().description('With summarizer llm: the summary call\'s provider (set with summarizationModel).'),
  summarizationModel: Schema.string().description('With summarizer llm: the summary call\'s model (set with summarizationProvider).'),
  maxTokens: Schema.natural().min(1).description('With summarizer llm: the summary call\'s output cap (default 8192).'),
  compactionRetries: Schema.natural().description('Extra passes when one leaves the request above the threshold (default 1).'),
  maxOverflowRetries: Schema.natural().description('Retries after a provider context-overflow error (default 1; 0 disables recovery).'),
}

export const Config = Schema.object({
  ...policyFields,
  modelPolicies: Schema.array(
    Schema.object({ provider: Schema.string().required(), model: Schema.string().required(), ...policyFields }),
  ).description('Overrides for exact provider/model routes.'),
  auto: Schema.boolean().description('Compact under step pressure and on context overflow (default true); false: /compact only.'),
  summarizer: Schema.union(['extractive', 'llm']).description('extractive (default): no model call; llm: one call, the extractive summary its fallback.'),
  maxSummaryTokens: Schema.natural().min(256).description('Most tokens a summary may take (default: summaryRatio of the context window, at least 8192).'),
  summaryRatio: Schema.number().description('Without maxSummaryTokens: the summary\'s cap as a fraction of the routed context window (default 0.15; never below 8192 tokens).'),
  pasteChars: Schema.natural().min(200).description('A user message longer than this many chars is cut to its head and tail (default 4000).'),
  language: Schema.union(['en', 'zh']).description("Language of the checkpoint's frame and headings (default: the rewind row's reportLanguage, else en)."),
  summaryTimeoutMs: Schema.natural().min(1).description('With summarizer llm: the call\'s time limit (default 180000).'),
  blockToolName: Schema.string().description('Block mode\'s tool, whose ids mark blocks (default block_run_code).'),
})

/**
 * @typedef {object} Policy
 * @property {number} thresholdRatio
 * @property {number} [retainRatio]
 * @property {number} [retainTokens]
 * @property {string} summarizationProvider
 * @property {string} summarizationModel
 * @property {number} maxTokens
 * @property {number} compactionRetries
 * @property {number} maxOverflowRetries
 */

/**
 * @typedef {Policy & {modelPolicies: (Partial<Policy> & {provider: string, model: string})[], auto: boolean,
 *   summarizer: 'extractive' | 'llm', maxSummaryTokens?: number, summaryRatio: number, pasteChars: number, language?: 'en' | 'zh',
 *   summaryTimeoutMs: number, blockToolName: string}} ResolvedConfig
 */

/** A configuration error (thrown at load). */
export class CompactionConfigError extends Error {
  name = 'CompactionConfigError'
  code = 'INVALID_CONFIG'
}

const fail = (/** @type {string} */ message) => {
  throw new CompactionConfigError(`dsh-fold/compaction: ${message}`)
}

/** @param {string} name @param {unknown} v */
function ratio(name, v) {
  if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= 1)) fail(`${name} (${String(v)}) must be a number in (0, 1]`)
}

/** @param {string} name @param {unknown} v @param {number} min */
function integer(name, v, min) {
  if (v !== undefined && !(typeof v === 'number' && Number.isInteger(v) && v >= min)) fail(`${name} (${String(v)}) must be an integer >= ${min}`)
}

/** @param {Record<string, unknown>} c @param {string} where */
function validatePolicy(c, where) {
  ratio(`${where}thresholdRatio`, c.thresholdRatio)
  ratio(`${where}retainRatio`, c.retainRatio)
  integer(`${where}retainTokens`, c.retainTokens, 0)
  integer(`${where}maxTokens`, c.maxTokens, 1)
  integer(`${where}compactionRetries`, c.compactionRetries, 0)
  integer(`${where}maxOverflowRetries`, c.maxOverflowRetries, 0)
  if (c.retainRatio !== undefined && c.retainTokens !== undefined) fail(`${where}retainRatio and retainTokens are mutually exclusive`)
  const p = c.summarizationProvider
  const m = c.summarizationModel
  if ((p !== undefined && typeof p !== 'string') || (m !== undefined && typeof m !== 'string')) fail(`${where}summarizationProvider and summarizationModel must be strings`)
  if ((p === undefined) !== (m === undefined) || Boolean(p) !== Boolean(m)) fail(`${where}summarizationProvider and summarizationModel must be set together (both empty or both named)`)
}

/**
 * Validates and fills in the configuration.
 * @param {Record<string, any>} [config]
 * @returns {ResolvedConfig}
 */
export function resolveConfig(config = {}) {
  for (const key of Object.keys(config)) if (!CONFIG_KEYS.has(key) && config[key] !== undefined) fail(`unknown key "${key}"`)
  validatePolicy(config, '')
  if (config.auto !== undefined && typeof config.auto !== 'boolean') fail('auto must be a boolean')
  if (config.summarizer !== undefined && !['extractive', 'llm'].includes(config.summarizer)) fail(`summarizer must be 'extractive' or 'llm', got ${JSON.stringify(config.summarizer)}`)
  if (config.language !== undefined && !['en', 'zh'].includes(config.language)) fail(`language must be 'en' or 'zh', got ${JSON.stringify(config.language)}`)
  integer('maxSummaryTokens', config.maxSummaryTokens, 256)
  ratio('summaryRatio', config.summaryRatio)
  integer('pasteChars', config.pasteChars, 200)
  integer('summaryTimeoutMs', config.summaryTimeoutMs, 1)
  if (config.blockToolName !== undefined && (typeof config.blockToolName !== 'string' || !config.blockToolName)) fail('blockToolName must be a non-empty string')
  const thresholdRatio = config.thresholdRatio ?? 0.8
  const retention = config.retainTokens !== undefined ? { retainTokens: config.retainTokens } : { retainRatio: config.retainRatio ?? 0.16 }
  if (retention.retainRatio !== undefined && retention.retainRatio >= thresholdRatio) fail(`retainRatio (${retention.retainRatio}) must be less than thresholdRatio (${thresholdRatio})`)
  const policies = config.modelPolicies ?? []
  if (!Array.isArray(policies)) fail('modelPolicies must be an array')
  const seen = new Set()
  policies.forEach((/** @type {any} */ p, /** @type {number} */ i) => {
    const where = `modelPolicies[${i}].`
    if (typeof p !== 'object' || p === null) fail(`modelPolicies[${i}] must be an object`)
    for (const key of Object.keys(p)) if (!MODEL_POLICY_KEYS.has(key) && p[key] !== undefined) fail(`${where} unknown key "${key}"`)
    if (typeof p.provider !== 'string' || !p.provider || typeof p.model !== 'string' || !p.model) fail(`${where}provider and model must be non-empty strings`)
    validatePolicy(p, where)
    const key = `${p.provider}\u0000${p.model}`
    if (seen.has(key)) fail(`duplicate model policy for ${p.provider}/${p.model}`)
    seen.add(key)
    const t = p.thresholdRatio ?? thresholdRatio
    const r = p.retainTokens !== undefined ? undefined : (p.retainRatio ?? retention.retainRatio)
    if (r !== undefined && r >= t) fail(`${where}retainRatio (${r}) must be less than thresholdRatio (${t})`)
  })
  return Object.freeze({
    thresholdRatio,
    ...retention,
    summarizationProvider: config.summarizationProvider ?? '',
    summarizationModel: config.summarizationModel ?? '',
    maxTokens: config.maxTokens ?? 8192,
    compactionRetries: config.compactionRetries ?? 1,
    maxOverflowRetries: config.maxOverflowRetries ?? 1,
    modelPolicies: policies.map((/** @type {any} */ p) => ({ ...p })),
    auto: config.auto ?? true,
    summarizer: config.summarizer ?? 'extractive',
    ...(config.maxSummaryTokens === undefined ? {} : { maxSummaryTokens: config.maxSummaryTokens }),
    summaryRatio: config.summaryRatio ?? 0.15,
    pasteChars: config.pasteChars ?? 4000,
    ...(config.language === undefined ? {} : { language: config.language }),
    summaryTimeoutMs: config.summaryTimeoutMs ?? 180_000,
    blockToolName: config.blockToolName ?? 'block_run_code',
  })
}

/**
 * The policy for an exact route: the defaults with its `modelPolicies` entry over them.
 * @param {ResolvedConfig} config @param {{provider: string, model: string}} target
 * @returns {Policy}
 */
export function policyFor(config, target) {
  const o = config.modelPolicies.find((p) => p.provider === target.provider && p.model === target.model)
  const retention =
    o?.retainTokens !== undefined ? { retainTokens: o.retainTokens } : o?.retainRatio !== undefined ? { retainRatio: o.retainRatio } : config.retainTokens !== undefined ? { retainTokens: config.retainTokens } : { retainRatio: config.retainRatio }
  return {
    thresholdRatio: o?.thresholdRatio ?? config.thresholdRatio,
    ...retention,
    summarizationProvider: o?.summarizationProvider ?? config.summarizationProvider,
    summarizationModel: o?.summarizationModel ?? config.summarizationModel,
    maxTokens: o?.maxTokens ?? config.maxTokens,
    compactionRetries: o?.compactionRetries ?? config.compactionRetries,
    maxOverflowRetries: o?.maxOverflowRetries ?? config.maxOverflowRetries,
  }
}

/** The smallest default summary cap, in tokens (compaction-basic's default `maxTokens`). */
export const MIN_SUMMARY_TOKENS = 8192

/**
 * The summary's cap: `maxSummaryTokens`, else `summaryRatio` of the context window (when known),
 * never below {@link MIN_SUMMARY_TOKENS}.
 * @param {ResolvedConfig} config @param {number | undefined} contextWindow
 */
export function summaryCap(config, contextWindow) {
  if (config.maxSummaryTokens !== undefined) return config.maxSummaryTokens
  return Math.max(MIN_SUMMARY_TOKENS, Number.isInteger(contextWindow) ? Math.floor(/** @type {number} */ (contextWindow) * config.summaryRatio) : 0)
}

/**
 * The policy's budgets for a context window.
 * @param {Policy} policy @param {number} contextWindow @param {string} targetKey
 * @returns {{thresholdTokens: number, retainTokens: number}}
 */
export function budgets(policy, contextWindow, targetKey) {
  if (!Number.isInteger(contextWindow) || contextWindow <= 0) throw new CompactionConfigError(`dsh-fold/compaction: ${targetKey} has no usable context window (${contextWindow})`)
  const thresholdTokens = Math.floor(contextWindow * policy.thresholdRatio)
  const retainTokens = policy.retainTokens ?? Math.floor(contextWindow * /** @type {number} */ (policy.retainRatio))
  if (retainTokens >= thresholdTokens) throw new CompactionConfigError(`dsh-fold/compaction: ${targetKey} retainTokens (${retainTokens}) must be less than the threshold (${thresholdTokens} tokens)`)
  return { thresholdTokens, retainTokens }
}
