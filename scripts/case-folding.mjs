// @ts-check
/**
 * @module scripts/case-folding
 * Writes `crates/fold-core/src/recall/case_folding.rs`: Unicode's simple case folding as recall
 * matches it, every pair `(c, d)` of distinct chars in one folding orbit, as plain `u32` pairs.
 *
 * The source is the `regex-syntax` crate's own table (`unicode_tables/case_folding_simple.rs`,
 * made by `ucd-generate case-folding-simple --chars --all-pairs`), read from cargo's registry
 * checkout of the version in Cargo.lock: recall folds exactly as `regex` did with its
 * `unicode-case` feature, which the addon no longer compiles in (its table is `&[(char, &[char])]`,
 * a pointer per entry: ~150 KB of the binary with its relocations; the pairs are ~26 KB).
 *
 * Usage: `node scripts/case-folding.mjs` (rewrites the file), `--check` (exits 1 if it differs).
 */
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const out = path.join(root, 'crates', 'fold-core', 'src', 'recall', 'case_folding.rs')

const metadata = JSON.parse(execFileSync('cargo', ['metadata', '--format-version', '1', '--locked'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 }))
const pkg = metadata.packages.find((/** @type {any} */ p) => p.name === 'regex-syntax')
if (!pkg) throw new Error('regex-syntax is not in the dependency graph')
const table = path.join(path.dirname(pkg.manifest_path), 'src', 'unicode_tables', 'case_folding_simple.rs')
const source = readFileSync(table, 'utf8')
const unicode = /Unicode version: (\d+(?:\.\d+)*)/.exec(source)?.[1] ?? 'unknown'

/** A Rust char literal's code point. @param {string} lit */
function codePoint(lit) {
  const escaped = /^\\u\{([0-9A-Fa-f]+)\}$/.exec(lit)
  if (escaped) return parseInt(escaped[1], 16)
  const simple = { '\\\\': 0x5c, "\\'": 0x27, '\\n': 10, '\\t': 9, '\\r': 13, '\\0': 0 }[lit]
  if (simple !== undefined) return simple
  const cp = lit.codePointAt(0)
  if (cp === undefined || String.fromCodePoint(cp) !== lit) throw new Error(`unreadable char literal ${lit}`)
  return cp
}

const CHAR = /'((?:\\u\{[0-9A-Fa-f]+\}|\\.|[^'\\])+)'/g
/** @type {[number, number][]} */
const pairs = []
for (const line of source.split('\n')) {
  const m = /^\s*\((.*)\),\s*$/.exec(line)
  if (!m) continue
  const chars = [...m[1].matchAll(CHAR)].map((x) => codePoint(x[1]))
  const [c, ...others] = chars
  for (const d of others) pairs.push([c, d])
}
pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1])
if (pairs.length < 2000) throw new Error(`only ${pairs.length} pairs read from ${table}`)

const hex = (/** @type {number} */ n) => `0x${n.toString(16).toUpperCase().padStart(4, '0')}`
const rows = []
for (let i = 0; i < pairs.length; i += 6) {
  rows.push('    ' + pairs.slice(i, i + 6).map(([c, d]) => `(${hex(c)}, ${hex(d)})`).join(', ') + ',')
}
const text = `// DO NOT EDIT: written by \`node scripts/case-folding.mjs\` from regex-syntax ${pkg.version}'s
// unicode_tables/case_folding_simple.rs (Unicode ${unicode}; \`ucd-generate case-folding-simple
// --chars --all-pairs\`).

/// Unicode ${unicode}'s simple case folding: every pair \`(c, d)\` of distinct chars that fold
/// together, sorted by \`c\` then \`d\` (so each char's others are one run).
#[rustfmt::skip]
pub static PAIRS: [(u32, u32); ${pairs.length}] = [
${rows.join('\n')}
];
`
if (process.argv.includes('--check')) {
  const current = readFileSync(out, 'utf8')
  if (current !== text) {
    console.error(`${path.relative(root, out)} differs from regex-syntax ${pkg.version}'s table: run node scripts/case-folding.mjs`)
    process.exit(1)
  }
  console.log(`${path.relative(root, out)}: ${pairs.length} pairs, as regex-syntax ${pkg.version}'s`)
} else {
  writeFileSync(out, text)
  console.log(`wrote ${path.relative(root, out)}: ${pairs.length} pairs (Unicode ${unicode})`)
}
