/**
 * The shape of the shipped JavaScript's import graph: no module under `bin/` or `plugin/` reaches
 * itself through its own imports, static or dynamic (`import('./x.mjs')` inside a function is an
 * edge too: a cycle through it still means two modules that can only be read together). Type-only
 * references in JSDoc comments are not edges. Only relative specifiers are followed; packages are
 * the outside world.
 */
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

/** Every .js/.mjs file under `dir` (repository-relative, `/`-separated). @param {string} dir @returns {string[]} */
function sources(dir) {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`
    if (name === 'node_modules') return []
    if (statSync(path.join(ROOT, rel)).isDirectory()) return sources(rel)
    return /\.m?js$/.test(name) ? [rel] : []
  })
}

/**
 * The specifiers a module imports, static (`import … from`, `export … from`, `import '…'`) and
 * dynamic with a literal (`import('…')`), read from its text with comments and template literals
 * removed (quoted strings kept whole: a `//` inside one is not a comment, and they hold the specifiers).
 * @param {string} text @returns {string[]}
 */
export function importsOf(text) {
  const code = text.replace(/(\/\*[\s\S]*?\*\/)|(\/\/[^\n]*)|('(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`)/g, (all, block, line) => (block || line ? ' ' : all.startsWith('`') ? '``' : all))
  const out = []
  for (const m of code.matchAll(/\bimport\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g)) out.push(m[2])
  for (const m of code.matchAll(/^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*(['"])([^'"\n]+)\1/gm)) out.push(m[2])
  for (const m of code.matchAll(/^\s*import\s*(['"])([^'"\n]+)\1/gm)) out.push(m[2])
  return out
}

/** Module → the repository's modules it imports. @param {string[]} roots @returns {Map<string, string[]>} */
function graphOf(roots) {
  /** @type {Map<string, string[]>} */
  const graph = new Map()
  for (const file of roots.flatMap(sources)) {
    const deps = importsOf(readFileSync(path.join(ROOT, file), 'utf8'))
      .filter((s) => s.startsWith('./') || s.startsWith('../'))
      .map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)))
    graph.set(file, [...new Set(deps)])
  }
  return graph
}

/**
 * The cycles of a graph, one per strongly connected component that has one (Tarjan), each as
 * the path around it (`a → b → a`).
 * @param {Map<string, string[]>} graph @returns {string[]}
 */
export function cyclesOf(graph) {
  let next = 0
  /** @type {Map<string, {index: number, low: number, on: boolean}>} */
  const state = new Map()
  /** @type {string[]} */
  const stack = []
  /** @type {string[]} */
  const cycles = []
  /** @param {string} v */
  const visit = (v) => {
    const s = { index: next, low: next, on: true }
    next++
    state.set(v, s)
    stack.push(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      const t = state.get(w)
      if (!t) {
        visit(w)
        s.low = Math.min(s.low, /** @type {any} */ (state.get(w)).low)
      } else if (t.on) s.low = Math.min(s.low, t.index)
    }
    if (s.low !== s.index) return
    /** @type {string[]} */
    const component = []
    for (;;) {
      const u = /** @type {string} */ (stack.pop())
      const t = /** @type {{on: boolean}} */ (state.get(u))
      t.on = false
      component.push(u)
      if (u === v) break
    }
    const self = (graph.get(v) ?? []).includes(v)
    if (component.length > 1 || self) cycles.push(loopThrough(graph, new Set(component), v))
  }
  for (const v of [...graph.keys()].sort()) if (!state.has(v)) visit(v)
  return cycles
}

/** A path from `start` back to itself inside `component` (breadth first: the shortest). @param {Map<string, string[]>} graph @param {Set<string>} component @param {string} start */
function loopThrough(graph, component, start) {
  /** @type {Map<string, string>} */
  const from = new Map()
  const queue = [start]
  while (queue.length) {
    const v = /** @type {string} */ (queue.shift())
    for (const w of graph.get(v) ?? []) {
      if (!component.has(w)) continue
      if (w === start) {
        /** @type {string[]} */
        const between = []
        for (let at = v; at !== start; at = /** @type {string} */ (from.get(at))) between.unshift(at)
        return [start, ...between, start].join(' → ')
      }
      if (!from.has(w)) {
        from.set(w, v)
        queue.push(w)
      }
    }
  }
  return start
}

describe('the import graph of bin/ and plugin/', () => {
  test('the reader and the cycle finder see what they should (so the next test can fail)', () => {
    const text = [
      "import { a } from './a.mjs'",
      "export { b } from '../b.js'",
      "import './side.js'",
      "const x = await import('./lazy.mjs')",
      "/** @param {typeof import('./type-only.mjs').T} t */",
      "// import('./commented.mjs')",
      "const url = 'http://x//y'; const y = await import('./after-url.mjs')",
      "const s = `import('./in-a-template.mjs')`",
    ].join('\n')
    assert.deepEqual(importsOf(text).sort(), ['../b.js', './a.mjs', './after-url.mjs', './lazy.mjs', './side.js'])
    assert.deepEqual(cyclesOf(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]])), ['a → b → c → a'])
    assert.deepEqual(cyclesOf(new Map([['a', ['a']]])), ['a → a'])
    assert.deepEqual(cyclesOf(new Map([['a', ['b']], ['b', []]])), [])
  })

  test('no module reaches itself through its imports', () => {
    const graph = graphOf(['bin', 'plugin'])
    assert.ok(graph.size > 40, `only ${graph.size} modules found`)
    const edges = [...graph.values()].reduce((n, deps) => n + deps.length, 0)
    assert.ok(edges > 60, `only ${edges} imports found: the reader is broken?`)
    for (const [file, deps] of graph) for (const dep of deps) assert.ok(existsSync(path.join(ROOT, dep)), `${file} imports ${dep}, which does not exist`)
    assert.deepEqual(cyclesOf(graph), [], 'import cycles')
  })
})
