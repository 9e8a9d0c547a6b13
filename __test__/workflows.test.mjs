/**
 * @module __test__/workflows.test
 * The release workflow passes actionlint (with shellcheck) and zizmor `--offline` with no finding
 * (scripts/lint-workflows.mjs, which `npm test` also runs as its first step), and the check has
 * teeth: a copy of the workflow given the faults the hardening removed — an action on a movable
 * tag, a checkout keeping its token, a cache in a publishing workflow — and an expression error
 * fails it, each reported by the checker that owns it, at its line.
 * The checkers come from PyPI on first use; under DSH_FOLD_SKIP_E2E (`npm run test:fast`, which
 * downloads nothing) the suite runs only if they are installed already, and says so otherwise.
 */
import assert from 'node:assert/strict'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'

import { WORKFLOWS, formatFinding, lintWorkflows, lintersInstalled } from '../scripts/lint-workflows.mjs'

const SKIP = process.env.DSH_FOLD_SKIP_E2E && !lintersInstalled() ? 'DSH_FOLD_SKIP_E2E is set and actionlint/zizmor are not installed (npm test installs them from PyPI)' : false

describe('the release workflow, read by actionlint and zizmor', { skip: SKIP }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-workflows-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('has no finding', () => {
    const { findings, versions } = lintWorkflows()
    assert.deepEqual(findings.map(formatFinding), [])
    assert.deepEqual(versions, { actionlint: '1.14.0', shellcheck: '0.11.0', zizmor: '1.33.1' })
  })

  it('a copy with an unpinned action, a checkout that keeps its token, a cache and a bad expression fails, each at its line', () => {
    const copy = path.join(dir, 'workflows')
    mkdirSync(copy)
    cpSync(path.join(WORKFLOWS, 'release.yml'), path.join(copy, 'release.yml'))
    const job = `  careless:
    runs-on: ubuntu-latest
    needs: [no-such-job]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/cache@v4
        with:
          path: target/
          key: cargo
      - run: echo \${{ matrix.nothing }}
`
    const base = readFileSync(path.join(copy, 'release.yml'), 'utf8')
    writeFileSync(path.join(copy, 'release.yml'), base.replace(/\n*$/, '\n') + job)
    const first = base.replace(/\n*$/, '\n').split('\n').length // the line `careless:` lands on
    const { findings } = lintWorkflows(copy)
    const got = (/** @type {string} */ tool, /** @type {string} */ rule) => findings.filter((f) => f.tool === tool && f.rule === rule).map((f) => f.line)
    assert.deepEqual(got('zizmor', 'unpinned-uses'), [first + 4, first + 5], findings.map(formatFinding).join('\n'))
    assert.deepEqual(got('zizmor', 'artipacked'), [first + 4])
    assert.ok(got('zizmor', 'cache-poisoning').includes(first + 5), findings.map(formatFinding).join('\n'))
    assert.deepEqual(got('actionlint', 'job-needs'), [first])
    assert.deepEqual(got('actionlint', 'expression'), [first + 9])
    assert.ok(findings.every((f) => f.file === 'release.yml'))
  })
})
