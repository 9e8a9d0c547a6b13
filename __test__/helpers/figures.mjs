/**
 * @module __test__/helpers/figures
 * The docs test's check that a figure the docs quote from a generated table is still what its
 * source says. A page marks a table or a paragraph with the comment line before it:
 *
 * - `<!-- test: rows-from FILE -->` — the table right below it is copied: each of its data rows
 *   is a line of FILE, byte for byte (the header may differ);
 * - `<!-- test: figures-from SOURCE[ SOURCE…][ in column N[, N…]] -->` — every figure of the table
 *   right below it (only in the columns named, 1-based, when some are), or, when prose follows it,
 *   of everything up to the next heading (a number with its unit: `5.7–6.5×`, `1.18 µs`,
 *   `2,040,184 bytes`, `99.9%`) is one the sources
 *   hold, at the page's precision: the same unit family (times convert between s, ms and µs;
 *   sizes between bytes, KiB and MiB), rounded to the page's decimals (a range's two ends each).
 *   A SOURCE is a file of the repository, or `addon-binary`: the x64 Linux addon `npm install`
 *   built, by its size. A number without its unit (`53–78 / 81–86 MB/s`: the 53–78) is not read.
 */

/** Units a figure may carry, by family, with their factor to the family's base. */
const UNITS = /** @type {Record<string, [string, number]>} */ ({
  '×': ['ratio', 1],
  x: ['ratio', 1],
  '%': ['percent', 1],
  s: ['time', 1],
  ms: ['time', 1e-3],
  µs: ['time', 1e-6],
  ns: ['time', 1e-9],
  B: ['size', 1],
  bytes: ['size', 1],
  KiB: ['size', 1024],
  MiB: ['size', 1024 ** 2],
  GiB: ['size', 1024 ** 3],
  KB: ['size', 1e3],
  MB: ['size', 1e6],
  GB: ['size', 1e9],
  'MB/s': ['rate', 1e6],
  'marks/s': ['marks', 1],
})

const NUMBER = String.raw`\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?`
const UNIT = Object.keys(UNITS)
  .sort((a, b) => b.length - a.length)
  .map((u) => u.replace(/[/$]/g, '\\$&'))
  .join('|')
/** A figure: a number, or a range `a–b`, then its unit (a space between, or none). */
const FIGURE = new RegExp(String.raw`(?<![\w.,])(${NUMBER})(?:\s*[–-]\s*(${NUMBER}))?\s?(${UNIT})(?![\w/])`, 'g')

/**
 * @typedef {object} Figure
 * @property {string} text as written
 * @property {string} family `time`, `size`, `ratio`...
 * @property {number} base the value in the family's base unit
 * @property {number} step half a unit of the last written digit, in the base unit (the rounding it allows)
 */

/** Every figure in a text (a range gives one per end). @param {string} text @returns {Figure[]} */
export function figuresIn(text) {
  /** @type {Figure[]} */
  const out = []
  for (const m of text.matchAll(FIGURE)) {
    const [family, factor] = UNITS[m[3]]
    for (const written of [m[1], m[2]]) {
      if (written === undefined) continue
      const decimals = (written.split('.')[1] ?? '').length
      out.push({ text: `${written} ${m[3]}`, family, base: Number(written.replace(/,/g, '')) * factor, step: (0.5 * 10 ** -decimals) * factor })
    }
  }
  return out
}

/** Whether `source` holds a figure that `quoted` is, at the quote's precision. @param {Figure} quoted @param {Figure[]} source */
export const quotes = (quoted, source) =>
  source.some((f) => f.family === quoted.family && Math.abs(f.base - quoted.base) <= quoted.step * (1 + 1e-9))

/**
 * The marked parts of a page: `{line, kind, sources, columns, lines}`; `lines` is the table right
 * after the marker, or (prose after a `figures-from` marker) what runs to the next heading.
 * @param {string} text
 */
export function markedBlocks(text) {
  const lines = text.split('\n')
  const out = []
  let fence = false
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*```/.test(lines[i])) fence = !fence
    const m = !fence && /^<!-- test: (rows-from|figures-from) (.+?) -->$/.exec(lines[i].trim())
    if (!m) continue
    const [what, columns] = m[2].split(/ in column /)
    let j = i + 1
    while (j < lines.length && lines[j].trim() === '') j++
    const table = m[1] === 'rows-from' || lines[j]?.trim().startsWith('|')
    if (table) while (j < lines.length && !lines[j].trim().startsWith('|')) j++
    const start = j
    const end = (/** @type {number} */ k) => (table ? !lines[k].trim().startsWith('|') : /^#{1,6} /.test(lines[k]) && !inFence(lines, k))
    while (j < lines.length && !end(j)) j++
    out.push({ line: i + 1, kind: m[1], sources: what.split(/\s+/), columns: columns ? columns.split(/\s*,\s*/).map(Number) : null, lines: lines.slice(start, j) })
  }
  return out
}

/** Whether line `k` is inside a fenced block. @param {string[]} lines @param {number} k */
function inFence(lines, k) {
  let fence = false
  for (let i = 0; i < k; i++) if (/^\s*```/.test(lines[i])) fence = !fence
  return fence
}

/** The text to check of a marked part: a table row's named columns, every other line whole. @param {{lines: string[], columns: number[] | null}} block */
export function checkedText(block) {
  return block.lines
    .filter((l) => !/^\|[\s:|-]+\|$/.test(l.trim()))
    .map((l) => (block.columns && l.trim().startsWith('|') ? tableRows([l])[0].filter((_c, i) => block.columns?.includes(i + 1)).join(' | ') : l))
    .join('\n')
}

/** A table's cells, per row (the separator row left out). @param {string[]} lines */
export function tableRows(lines) {
  return lines
    .filter((l) => l.trim().startsWith('|') && !/^\|[\s:|-]+\|$/.test(l.trim()))
    .map((l) => l.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim()))
}
