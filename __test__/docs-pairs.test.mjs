/**
 * The English and Chinese docs are kept in step: README.md / README.zh.md and every
 * docs/x.md / docs/x.zh.md. This replaces README.i18n.yaml, which recorded the pair's blob
 * hashes as of the last confirmed-consistent state: a hash record cannot say what is out of
 * step, goes stale on every edit (even one made on both sides), passes whenever someone
 * re-records it without bringing the other side along, and does not scale to thirteen pairs.
 * What can be checked mechanically is checked here on every run, for every pair:
 *
 * - both sides exist, and each links to the other in its first lines;
 * - the same headings, level by level (the words are translated, the outline is not);
 * - the same fenced blocks, byte for byte, with the same test markers: commands, outputs and
 *   config are the same in both languages, and the docs test runs the English side's;
 * - the same tables with the same number of rows;
 * - the same link targets (`x.zh.md` read as `x.md`, anchors aside) and the same images.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { blocksOf } from './helpers/markdown.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

/** The pairs: [english, chinese], relative to the repository. */
const PAIRS = [
  ['README.md', 'README.zh.md'],
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md') && !f.endsWith('.zh.md'))
    .map((f) => [`docs/${f}`, `docs/${f.replace(/\.md$/, '.zh.md')}`]),
]

/** The outline and the mechanical content of one page. @param {string} file */
function shape(file) {
  const text = readFileSync(path.join(ROOT, file), 'utf8')
  const prose = text.replace(/^\s*```[\s\S]*?^\s*```\s*$/gm, '')
  const headings = [...prose.matchAll(/^(#{1,6}) /gm)].map((m) => m[1].length)
  /** @type {number[]} */
  const tables = []
  let rows = 0
  for (const line of prose.split('\n')) {
    if (/^\s*\|/.test(line)) rows++
    else if (rows > 0) {
      tables.push(rows)
      rows = 0
    }
  }
  if (rows > 0) tables.push(rows)
  const links = [...prose.matchAll(/(!?)\[[^\]]*\]\(([^)\s]+)\)/g)]
    .map((m) => `${m[1]}${m[2].split('#')[0].replace(/\.zh\.md$/, '.md')}`)
    .filter((l) => l !== '' && l !== '!')
  const blocks = blocksOf(file, text).map((b) => ({ lang: b.lang, marker: b.marker, body: b.body }))
  return { text, headings, tables, links: [...new Set(links)].sort(), blocks }
}

describe('English and Chinese docs in step', () => {
  test('every page has its twin', () => {
    const docs = readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md'))
    for (const f of docs) {
      const twin = f.endsWith('.zh.md') ? f.replace(/\.zh\.md$/, '.md') : f.replace(/\.md$/, '.zh.md')
      assert.ok(docs.includes(twin), `docs/${f} has no twin docs/${twin}`)
    }
    assert.ok(!existsSync(path.join(ROOT, 'README.i18n.yaml')), 'README.i18n.yaml is replaced by this test')
  })

  for (const [en, zh] of PAIRS) {
    test(`${en} and ${zh}`, () => {
      const a = shape(en)
      const b = shape(zh)
      assert.ok(a.text.split('\n').slice(0, 4).join('\n').includes(`](${path.basename(zh)})`), `${en} links to ${zh} in its first lines`)
      assert.ok(b.text.split('\n').slice(0, 4).join('\n').includes(`](${path.basename(en)})`), `${zh} links to ${en} in its first lines`)
      assert.deepEqual(b.headings, a.headings, 'the same headings, level by level')
      assert.equal(b.blocks.length, a.blocks.length, 'the same number of code blocks')
      for (const [i, block] of a.blocks.entries()) assert.deepEqual(b.blocks[i], block, `code block ${i + 1} differs`)
      assert.deepEqual(b.tables, a.tables, 'the same tables, row for row')
      assert.deepEqual(b.links, a.links, 'the same link targets and images')
    })
  }
})
