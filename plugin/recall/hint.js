/**
 * @module plugin/recall/hint
 * The one line that ends a fold's report, a block summary and a compaction summary when the `recall` tool is
 * mounted: the model learns that the folded details are not gone and exactly how to get them
 * back. Producers call `recallHint(ctx, target, language)` when they build the replacement's
 * text and append what it returns (an empty string when no recall service is mounted, so a
 * host without the row never reads a promise it cannot keep).
 *
 * The line is appended by the producer, not written by the report's model: it names the
 * fold's real id and the configured tool name, and no summarizer can forget or garble it.
 * `splitRecallHint(text)` takes it off again (economics prices the report call's output
 * without it).
 */

/** Where every hint line starts (both languages), so it can be recognised. */
const MARK = '↩ '

/** @param {string} tool @param {string} target JSON of the target argument */
const LINES = {
  en: (/** @type {string} */ tool, /** @type {string} */ target) =>
    `${MARK}Details of the folded steps are not lost: \`${tool}({${target}, "query": "text or /regex/"})\` returns their exact lines; without \`query\`, an index.`,
  zh: (/** @type {string} */ tool, /** @type {string} */ target) =>
    `${MARK}被折叠步骤的细节并未丢失：\`${tool}({${target}, "query": "文本或 /正则/"})\` 返回其原始行；不带 \`query\` 时返回索引。`,
}

/**
 * The hint line for `target`, built from the configured tool name.
 * @param {string} toolName
 * @param {{fold: number} | {block: string} | {compaction: string}} target
 * @param {'en' | 'zh'} [language]
 */
export function hintLine(toolName, target, language = 'en') {
  const arg = 'fold' in target ? `"fold": ${target.fold}` : 'block' in target ? `"block": ${JSON.stringify(target.block)}` : `"compaction": ${JSON.stringify(target.compaction)}`
  return (LINES[language] ?? LINES.en)(toolName, arg)
}

/**
 * The hint to append to a replacement's text (with its leading blank line), or `''` when no
 * `recall` service is mounted on `ctx`.
 * @param {any} ctx a cordis context (the producer's own)
 * @param {{fold: number} | {block: string} | {compaction: string}} target
 * @param {'en' | 'zh'} [language]
 * @returns {string}
 */
export function recallHint(ctx, target, language = 'en') {
  /** @type {{toolName?: string} | undefined} */
  const recall = ctx?.get?.('recall')
  const toolName = recall?.toolName
  return typeof toolName === 'string' ? `\n\n${hintLine(toolName, target, language)}` : ''
}

/**
 * `text` without a trailing hint line: `{body, hint}` (`hint` is `''` when there is none).
 * @param {string} text
 */
export function splitRecallHint(text) {
  const at = text.lastIndexOf(`\n\n${MARK}`)
  if (at < 0 || text.indexOf('\n', at + 2) >= 0) return { body: text, hint: '' }
  return { body: text.slice(0, at), hint: text.slice(at) }
}
