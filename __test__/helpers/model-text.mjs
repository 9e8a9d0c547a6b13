/**
 * @module __test__/helpers/model-text
 * The checks of issue 32 item 6 on a text the model reads: it names no tool by its default name
 * (where a renamed tool is meant), and — in Chinese — holds no English sentence outside what it
 * quotes as data (code spans, double-quoted strings, tags, a leading error code).
 */
import assert from 'node:assert/strict'

/** The tools' default names: none may appear where a renamed tool is meant. */
export const DEFAULTS = ['checkpoint', 'rewind', 'recall', 'block_run_code', 'block_summary']

/** The code spans of a text. @param {string} text */
const spans = (text) => [...text.matchAll(/`([^`\n]*)`/g)].map((m) => m[1])

/**
 * Where a text names a tool by its default name: in a code span (a name, or `tools.<name>`), as
 * a call (`name(`), or — in Chinese, where the words are not English — as a bare word (a row id
 * like `tool-rewind` is no tool name).
 * @param {string} text @param {'en' | 'zh'} language
 */
export function defaultNames(text, language) {
  const found = []
  // A code span names a tool when it is the name, or calls it (`name(`, `tools.name(`); a longer
  // span is a detail quoted from below (a file's path, an error), where words may be anything.
  for (const span of spans(text)) {
    if (DEFAULTS.includes(span.trim()) || /(?:^|[\s(])(?:await\s+)?(?:tools\.)?(checkpoint|rewind|recall|block_run_code|block_summary)\(/.test(span)) found.push(`\`${span}\``)
  }
  const outside = text.replace(/`[^`\n]*`/g, ' ')
  for (const m of outside.matchAll(/(?<![\w.-])(checkpoint|rewind|recall|block_run_code|block_summary)(?=\s*\()/g)) found.push(`${m[1]}(`)
  if (language === 'zh') for (const m of outside.matchAll(/(?<![\w-])(checkpoint|rewind|recall|block_run_code|block_summary)(?![\w-])/gi)) found.push(m[0])
  return found
}

/**
 * The English sentences of a Chinese text: three English words in a row, outside code spans,
 * double-quoted strings and `<tags>`.
 * @param {string} text
 */
export function englishIn(text) {
  const stripped = text
    .replace(/^(Error: )?[A-Z_]{4,}: /, '')
    .replace(/`[^`\n]*`/g, ' ')
    .replace(/"[^"\n]*"/g, ' ')
    .replace(/<\/?[a-z-]+>/g, ' ')
  return [...stripped.matchAll(/[A-Za-z][A-Za-z']+(?:[ ,;:()]+[A-Za-z][A-Za-z']+){2,}/g)].map((m) => m[0])
}

/**
 * Fails unless `text` speaks `language` (zh: no English sentence) and names no default tool.
 * @param {string} what @param {string} text @param {'en' | 'zh'} [language]
 */
export function assertSpeaks(what, text, language = 'zh') {
  assert.ok(text.trim(), `${what}: empty`)
  assert.deepEqual(defaultNames(text, language), [], `${what} names a tool by its default name:\n${text}`)
  if (language === 'zh') assert.deepEqual(englishIn(text), [], `${what} holds English:\n${text}`)
}

