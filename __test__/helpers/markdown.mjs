/**
 * @module markdown
 * The little Markdown reading the docs tests need: fenced blocks with the `<!-- test: … -->`
 * marker before each, GitHub's heading anchors, and excerpt matching for quoted output.
 */

/**
 * @typedef {object} Block
 * @property {string} file
 * @property {number} line 1-based line of the fence
 * @property {string} lang
 * @property {string} body
 * @property {string} marker the `<!-- test: … -->` text before it, or ''
 */

/** Every fenced block of a Markdown text, with the test marker before it. @param {string} file @param {string} text @returns {Block[]} */
export function blocksOf(file, text) {
  const lines = text.split('\n')
  /** @type {Block[]} */
  const out = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i])
    if (!open) continue
    const indent = open[1].length
    let j = i + 1
    while (j < lines.length && !new RegExp(`^\\s{0,${indent}}\`\`\`\\s*$`).test(lines[j])) j++
    const body = lines.slice(i + 1, j).map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length))).join('\n')
    const prev = lines[i - 1]?.trim() ?? ''
    const marker = /^<!-- test: (.*) -->$/.exec(prev)?.[1] ?? ''
    out.push({ file, line: i + 1, lang: open[2], body, marker })
    i = j
  }
  return out
}

/** A Markdown heading's GitHub anchor. @param {string} heading */
export const slug = (heading) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')

/** The anchors of a Markdown text. @param {string} text */
export function anchorsOf(text) {
  /** @type {Map<string, number>} */
  const seen = new Map()
  const out = new Set()
  let fence = false
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) fence = !fence
    const h = !fence && /^#{1,6} (.*)$/.exec(line)
    if (!h) continue
    const base = slug(h[1])
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** Whether a text matches an excerpt (`…` lines skip, `…` in a line is a wildcard). @param {string} actual @param {string} excerpt */
export function matchesExcerpt(actual, excerpt) {
  const esc = (/** @type {string} */ s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const parts = excerpt.replace(/\n+$/, '').split('\n').map((l) => (l.trim() === '…' ? '(?:[^\\n]*\\n)*?' : `${l.split('…').map(esc).join('[^\\n]*?')}\\n`))
  return new RegExp(`^${parts.join('')}$`).test(actual.endsWith('\n') ? actual : `${actual}\n`)
}

