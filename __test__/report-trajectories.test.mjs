/**
 * @module __test__/report-trajectories.test
 * The extractive report on recorded, public agent trajectories (fixtures/trajectories; where
 * each comes from: its SOURCES.md), graded by bin/report-facts.mjs, an extraction of the facts
 * that does not use the report's code. With the default budget (no `maxChars`: what the plugin
 * and `dsh-fold fold` use), over the segments:
 * - the mean retention of the paths the agent named, the commands it ran (first line) and the
 *   error lines of the outputs is at least 95% each, in English and in Chinese, and the Chinese
 *   report keeps exactly the facts the English one keeps;
 * - the mean report is at most 25% of the region's model-visible chars, each at most the default
 *   budget (1000 + a quarter of the region) and shorter than the region;
 * - the same bytes for the same input (also in another process);
 * - what is summarized is not copied: no line of a multi-line command body past the first, no
 *   entry of a directory listing, no Findings bullet that is one of the agent's own sentences.
 * No timing here: throughput is measured by `npm run bench`.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'

import { addon as fold, addonPath } from '../plugin/shared/addon.js'
import { callsOf, loadSegments, mean, missing, regionFacts, retention, TRAJECTORY_DIR, visibleChars } from '../bin/report-facts.mjs'


const TARGET = 0.95
const MAX_RATIO = 0.25
const LANGUAGES = /** @type {const} */ (['en', 'zh'])
const FINDINGS = { en: ['## Findings', '## Files and Artifacts'], zh: ['## 发现', '## 文件与产物'] }

const segments = loadSegments().map((s) => {
  const json = JSON.stringify(s.messages)
  const facts = regionFacts(s.messages)
  const reports = Object.fromEntries(LANGUAGES.map((language) => [language, fold.extractiveReport(json, { language })]))
  return { ...s, json, facts, reports: /** @type {Record<'en' | 'zh', string>} */ (reports) }
})

/** The section of a report between two headings. @param {string} report @param {string[]} headings */
const between = (report, [from, to]) => report.slice(report.indexOf(`${from}\n`), report.indexOf(`${to}\n`))

/** The agent's own sentences (its text, split at sentence ends), 40 chars or longer. @param {any[]} messages */
function agentSentences(messages) {
  const out = new Set()
  for (const m of messages) {
    if (m.role !== 'assistant') continue
    for (const b of m.content) {
      if (b.type !== 'text') continue
      for (const s of b.text.split(/(?<=[.!?。！？])\s+|\n+/)) if (s.trim().length >= 40) out.add(s.trim())
    }
  }
  return out
}

const SHELL = /bash|shell|exec|terminal|command/i
const LISTING = /(^|[;&|]\s*|\bcd\s+\S+\s*&&\s*)(ls|find|tree)\s/

describe('the extractive report on recorded agent trajectories', () => {
  it('the corpus: at least 30 segments of 4 or more agents and 5 or more models, with paths, commands and error lines', () => {
    assert.ok(segments.length >= 30, `${segments.length} segments`)
    const agents = new Set(segments.map((s) => s.agent))
    assert.ok(agents.size >= 4, [...agents].join(', '))
    const models = new Set(segments.flatMap((s) => s.messages.filter((m) => m.role === 'assistant').map((m) => m.source?.model)))
    assert.ok(models.size >= 5, [...models].join(', '))
    // Every segment file is one the manifest lists: nothing in the directory escapes the check below.
    const files = readdirSync(TRAJECTORY_DIR).filter((f) => f.endsWith('.json') && f !== 'sources.json')
    assert.deepEqual(files.map((f) => f.replace(/\.json$/, '')).sort(), segments.map((s) => s.name).sort())
    for (const kind of /** @type {const} */ (['paths', 'commands', 'errors'])) {
      assert.ok(segments.reduce((n, s) => n + s.facts[kind].length, 0) >= 50, kind)
    }
  })

  for (const language of LANGUAGES) {
    it(`${language}: keeps >= 95% of paths, commands and error lines on average`, () => {
      const rows = segments.map((s) => ({ name: s.name, ...retention(s.reports[language], s.facts) }))
      for (const kind of /** @type {const} */ (['paths', 'commands', 'errors'])) {
        const m = mean(rows.map((r) => r[kind]))
        const worst = rows.filter((r) => r[kind] !== null && r[kind] < 1).map((r) => `${r.name} ${r[kind]?.toFixed(2)}`)
        assert.ok(m >= TARGET, `${kind}: mean ${m.toFixed(3)} < ${TARGET} (${worst.join(', ')})`)
      }
    })

    it(`${language}: the default budget makes reports <= 25% of the region on average, each within 1000 + visible/4`, () => {
      const ratios = segments.map((s) => {
        const report = s.reports[language]
        const visible = visibleChars(s.messages)
        assert.equal(visible, s.facts.visible)
        assert.ok(report.length <= Math.min(1000 + Math.floor(visible / 4), visible - 1), `${s.name}: ${report.length} of ${visible}`)
        return report.length / visible
      })
      const m = mean(ratios)
      assert.ok(m <= MAX_RATIO, `mean ratio ${m.toFixed(3)} > ${MAX_RATIO}`)
    })
  }

  // The committed segments are what their public sources give: extract.mjs re-reads every source
  // file at its recorded commit from a mirror of the repositories and compares. CI has no mirror.
  const mirror = process.env.DSH_FOLD_TRAJECTORY_MIRROR
  it('the committed segments are exactly what extract.mjs cuts from the sources', { skip: mirror ? false : 'set DSH_FOLD_TRAJECTORY_MIRROR to a directory of <owner>+<name>/repo git mirrors of the sources (SOURCES.md) to run it' }, () => {
    const out = execFileSync(process.execPath, [path.join(TRAJECTORY_DIR, 'extract.mjs'), mirror ?? '', '--check'], { encoding: 'utf8' })
    assert.match(out, /: 0 differ/)
  })

  it('zh keeps exactly the facts en keeps', () => {
    for (const s of segments) assert.deepEqual(missing(s.reports.zh, s.facts), missing(s.reports.en, s.facts), s.name)
  })

  it('is deterministic, also in another process', () => {
    for (const s of segments) for (const language of LANGUAGES) assert.equal(fold.extractiveReport(s.json, { language }), s.reports[language], s.name)
    const s = segments.reduce((a, b) => (a.json.length > b.json.length ? a : b))
    const other = execFileSync(process.execPath, ['-e', `process.stdout.write(require(${JSON.stringify(addonPath)}).extractiveReport(require('fs').readFileSync(0, 'utf8'), { language: 'zh' }))`], { input: s.json, encoding: 'utf8' })
    assert.equal(other, s.reports.zh)
  })

  it('does not keep a multi-line command body whole: no body line past the first', () => {
    let bodies = 0
    for (const s of segments) {
      // A body line that is also part of a fact (another command's first line) may be kept, and
      // so may one that a tool printed too (a diff of the file the body wrote, a test's output):
      // the report may quote the output.
      const facts = [...s.facts.errors, ...s.facts.paths, ...s.facts.commands].join('\n')
      const printed = new Set(callsOf(s.messages).flatMap((c) => c.outputs.flatMap((o) => o.text.split('\n').map((l) => l.trim()))))
      for (const c of callsOf(s.messages)) {
        if (!SHELL.test(c.name) || typeof c.args.command !== 'string') continue
        const body = c.args.command
          .split('\n')
          .slice(1)
          .map((l) => l.trim())
          .filter((l) => l.length >= 30 && !facts.includes(l) && !printed.has(l))
        if (!body.length) continue
        bodies += 1
        for (const line of body) assert.ok(!s.reports.en.includes(line), `${s.name}: body line ${JSON.stringify(line)}`)
      }
    }
    assert.ok(bodies >= 5, `${bodies} multi-line commands in the corpus`)
  })

  it('summarizes a directory listing instead of copying its entries', () => {
    let listings = 0
    for (const s of segments) {
      // An output line that is part of a fact (an error line, a path, inside a command line the
      // report keeps) is not a listing entry copied.
      const facts = [...s.facts.errors, ...s.facts.paths, ...s.facts.commands].join('\n')
      for (const c of callsOf(s.messages)) {
        const first = typeof c.args.command === 'string' ? c.args.command.split('\n')[0] : ''
        if (!SHELL.test(c.name) || !LISTING.test(first)) continue
        const entries = c.outputs.flatMap((o) => o.text.split('\n')).map((l) => l.trim()).filter((l) => l.length >= 8 && !facts.includes(l) && !/^\[exit code/.test(l))
        if (entries.length < 3) continue
        listings += 1
        const copied = entries.filter((e) => s.reports.en.includes(e))
        assert.ok(copied.length <= 1, `${s.name}: ${first} copied ${JSON.stringify(copied.slice(0, 3))}`)
      }
    }
    assert.ok(listings >= 2, `${listings} listings in the corpus`)
  })

  it('Findings do not copy the agent\'s prose one sentence per bullet', () => {
    for (const s of segments) {
      for (const language of LANGUAGES) {
        const findings = between(s.reports[language], FINDINGS[language])
        const sentences = agentSentences(s.messages)
        const copied = findings.split('\n').filter((l) => l.startsWith('- ') && sentences.has(l.slice(2).trim()))
        assert.deepEqual(copied, [], `${s.name} ${language}`)
        assert.ok(findings.split('\n').filter((l) => /^- (Conclusion|结论)/.test(l)).length <= 1)
      }
    }
  })
})
