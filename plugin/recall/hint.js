/**
 * @module plugin/recall/hint
 * The one line that ends a fold's report and a block summary when the `recall` tool is
 * mounted: the model learns that the folded details are not gone and exactly how to get them
 * back. Producers call `recallHint(ctx, target, language)` when they build the replacement's
 * text and append what it returns (an empty string when no recall service is mounted, so a
 * host without the row never reads a promise it cannot keep).
 *
 * The line is appended by the producer, not written by the report's model: it names the
 * fold's real id and the configured tool name, and no summarizer can forget or garble it.
 *
 * Where the model may call `recall` only from inside a program — block mode, where
 * `block_run_code` is the one tool it may call directly, or a Code Mode program — the producer
 * passes `{program: <the direct tool that runs programs>}`, and the line spells the call as a
 * program writes it (`await tools.recall({...})`, inside a `block_run_code` program), never as a
 * direct call the host would refuse.
 * `splitRecallHint(text)` takes it off again (economics prices the report call's output
 * without it).
 */

/** Where every hint line starts (both languages), so it can be recognised. */
const MARK = '↩ '

/**
 * @typedef {object} HintForm how the model can call recall
 * @property {string} [program] the tool the model calls directly to run a program, when recall is
 *   reachable only from inside one (block mode: `block_run_code`)
 */

/** The query placeholder, per language. */
const QUERY = { en: 'text or /regex/', zh: '文本或 /正则/' }

/** @param {string} call the call as the model writes it @param {string | undefined} program */
const LINES = {
  en: (/** @type {string} */ call, /** @type {string | undefined} */ program) =>
    `${MARK}Details of the folded steps are not lost: ${program ? `inside a \`${program}\` program, ` : ''}\`${call}\` returns their exact lines; without \`query\`, an index.`,
  zh: (/** @type {string} */ call, /** @type {string | undefined} */ program) =>
    `${MARK}被折叠步骤的细节并未丢失：${program ? `在 \`${program}\` 程序中，` : ''}\`${call}\` 返回其原始行；不带 \`query\` 时返回索引。`,
}

/**
 * The hint line for `target`, built from the configured tool name.
 * @param {string} toolName
 * @param {{fold: number} | {block: string}} target
 * @param {'en' | 'zh'} [language]
 * @param {HintForm} [form]
 */
export function hintLine(toolName, target, language = 'en', form = {}) {
  const lang = language === 'zh' ? 'zh' : 'en'
  const arg = Object.hasOwn(target, 'fold') ? `"fold": ${/** @type {{fold: number}} */ (target).fold}` : `"block": ${JSON.stringify(/** @type {{block: string}} */ (target).block)}`
  const args = `{${arg}, "query": ${JSON.stringify(QUERY[lang])}}`
  return LINES[lang](form.program ? `await ${programCallee(toolName)}(${args})` : `${toolName}(${args})`, form.program)
}

/**
 * How a program names a tool: `tools.<name>`, or `tools["<name>"]` for a name that is no
 * JavaScript identifier (`recall` names may hold `-` or start with a digit).
 * @param {string} toolName
 */
export function programCallee(toolName) {
  return /^[A-Za-z_$][\w$]*$/.test(toolName) ? `tools.${toolName}` : `tools[${JSON.stringify(toolName)}]`
}

/**
 * The hint to append to a replacement's text (with its leading blank line), or `''` when no
 * `recall` service is mounted on `ctx`.
 * @param {any} ctx a cordis context (the producer's own)
 * @param {{fold: number} | {block: string}} target
 * @param {'en' | 'zh'} [language]
 * @param {HintForm} [form]
 * @returns {string}
 */
export function recallHint(ctx, target, language = 'en', form = {}) {
  const toolName = recallToolName(ctx)
  return toolName === undefined ? '' : `\n\n${hintLine(toolName, target, language, form)}`
}

/**
 * The model-facing name of the mounted `recall` tool, or `undefined` when none is mounted.
 * @param {any} ctx a cordis context
 * @returns {string | undefined}
 */
export function recallToolName(ctx) {
  /** @type {{toolName?: string} | undefined} */
  const recall = ctx?.get?.('recall')
  return typeof recall?.toolName === 'string' ? recall.toolName : undefined
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
