/**
 * docs/building.md's layout map (the text block under "Development") stays true: under each of
 * the roots it maps module by module — `src/`, `crates/fold-core/src/`, `plugin/` and `bin/` —
 * every file on disk is listed with a one-line role, and every file listed is on disk. The map
 * is a tree: a name ending in `/` is a folder, the lines indented two spaces more under it are
 * its entries, and a role is the text after two or more spaces on the same line (never wrapped:
 * a wrapped line would read as a listed file that is gone). docs/building.zh.md carries the same
 * block byte for byte (__test__/docs-pairs.test.mjs).
 */
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const ROOTS = ['src/', 'crates/fold-core/src/', 'plugin/', 'bin/']

/** Every file under `dir` (repository-relative, `/`-separated). @param {string} dir @returns {string[]} */
function filesUnder(dir) {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}${name}`
    return statSync(path.join(ROOT, rel)).isDirectory() ? filesUnder(`${rel}/`) : [rel]
  })
}

/**
 * The map's entries under the checked roots: each file's path and role, in the map's order.
 * @param {string} markdown @returns {{file: string, role: string, line: number}[]}
 */
export function mapOf(markdown) {
  const lines = markdown.split('\n')
  const at = lines.findIndex((l) => l === '## Development')
  const open = lines.findIndex((l, i) => i > at && l === '```text')
  const close = lines.findIndex((l, i) => i > open && l === '```')
  assert.ok(at >= 0 && open > at && close > open, 'no ```text block under "## Development"')
  /** @type {{file: string, role: string, line: number}[]} */
  const out = []
  /** The folders open at each depth. @type {string[]} */
  let folders = []
  let checked = false
  for (let i = open + 1; i < close; i++) {
    const m = /^( *)(\S.*?)(?: {2,}(.*))?$/.exec(lines[i])
    if (!m) continue
    const depth = m[1].length / 2
    const [, , name, role = ''] = m
    if (depth === 0) {
      checked = ROOTS.includes(name)
      folders = [name]
      continue
    }
    if (!checked) continue
    assert.ok(Number.isInteger(depth) && depth <= folders.length && !name.includes(' '), `docs/building.md:${i + 1}: "${lines[i]}" is not one entry indented under a folder (two spaces a level, the role after two spaces)`)
    folders = folders.slice(0, depth)
    if (name.endsWith('/')) folders.push(name)
    else out.push({ file: folders.join('') + name, role: role.trim(), line: i + 1 })
  }
  return out
}

describe("docs/building.md's layout map", () => {
  test('the reader sees files, folders and roles (so the next test can fail)', () => {
    const md = ['## Development', '', '```text', 'Cargo.toml, build.rs      the crate', 'bin/                      the command', '  a.mjs                   one', '  host/                   hosts', '    b.mjs                 two', '  c.mjs', 'docs/                     pages', '  x.md                    not checked', '```'].join('\n')
    assert.deepEqual(mapOf(md), [
      { file: 'bin/a.mjs', role: 'one', line: 6 },
      { file: 'bin/host/b.mjs', role: 'two', line: 8 },
      { file: 'bin/c.mjs', role: '', line: 9 },
    ])
  })

  test('lists every module under src/, crates/fold-core/src/, plugin/ and bin/ with its role, and nothing that is gone', () => {
    const map = mapOf(readFileSync(path.join(ROOT, 'docs', 'building.md'), 'utf8'))
    const listed = map.map((e) => e.file)
    const onDisk = ROOTS.flatMap(filesUnder)
    assert.deepEqual(onDisk.filter((f) => !listed.includes(f)), [], 'files missing from the map in docs/building.md')
    assert.deepEqual(listed.filter((f) => !onDisk.includes(f)), [], 'files the map in docs/building.md lists that are gone')
    assert.deepEqual(listed.filter((f, i) => listed.indexOf(f) !== i), [], 'files listed twice')
    assert.deepEqual(map.filter((e) => e.role === '').map((e) => `${e.file} (line ${e.line})`), [], 'files listed without a role')
  })
})
