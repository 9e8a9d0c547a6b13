// `dsh-fold economics FILE --html OUT` in a real headless Chromium: Debian's `chromium`
// (installed here with apt-get when missing) driven by `playwright-core` from npm, no browser
// download. The page must render from the file alone (no request leaves it), draw the chart
// with both series, one step per request and one marker per fold, and show the totals.
// Skipped, with the reason printed, only when Chromium cannot be installed on the machine.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin', 'dsh-fold.mjs')
const CHROMIUM = '/usr/bin/chromium'
/** Flags for root in a container: no sandbox, no GPU, no /dev/shm, nothing phoning home. */
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run']

/** Whether `bin` runs as a Chromium. */
const works = (/** @type {string} */ bin) => existsSync(bin) && /chrom/i.test(spawnSync(bin, ['--version', '--no-sandbox'], { encoding: 'utf8', timeout: 30_000 }).stdout ?? '')

/** Finds or installs Debian's chromium; returns the reason it cannot, or undefined. */
function ensureChromium() {
  if (works(CHROMIUM)) return undefined
  if (process.platform !== 'linux') return `no ${CHROMIUM}, and apt-get is Linux-only (platform ${process.platform})`
  if (spawnSync('apt-get', ['--version']).status !== 0) return 'apt-get is not available to install chromium'
  if (process.getuid?.() !== 0) return 'chromium is missing and apt-get needs root'
  process.stderr.write('[economics-html] installing chromium with apt-get\n')
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  for (const args of [['update', '-q'], ['install', '-y', '-q', '--no-install-recommends', 'chromium']]) {
    const r = spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=600', ...args], { encoding: 'utf8', env, maxBuffer: 64 << 20 })
    if (r.status !== 0) return `apt-get ${args[0]} failed (${r.status}): ${(r.stderr || r.stdout || '').trim().split('\n').slice(-3).join(' | ')}`
  }
  return works(CHROMIUM) ? undefined : `apt-get installed chromium but ${CHROMIUM} does not run`
}

const skip = ensureChromium()
if (skip) process.stderr.write(`[economics-html] skipped: ${skip}\n`)

/** @param {string[]} args */
function cli(args) {
  return /** @type {Promise<{code: number | null, stdout: string, stderr: string}>} */ (
    new Promise((resolve) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d))
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
      child.on('close', (code) => resolve({ code, stdout, stderr }))
    })
  )
}

describe('the economics page in headless Chromium', { skip }, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-economics-html-'))
  /** @type {import('playwright-core').Browser} */
  let browser
  before(async () => {
    const { chromium } = await import('playwright-core')
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS })
  })
  after(async () => {
    await browser?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('renders the chart (both series, a step per request, the fold marker) and the tables from the file alone', async () => {
    const log = path.join(dir, 'demo.jsonl')
    const page = path.join(dir, 'economics.html')
    const svg = path.join(dir, 'chart.svg')
    assert.equal((await cli(['demo', '--save', log])).code, 0)
    const r = await cli(['economics', log, '--html', page, '--svg', svg, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const a = JSON.parse(r.stdout)
    const html = readFileSync(page, 'utf8')
    assert.doesNotMatch(html, /<script|<link|src=|@import|url\(/i, 'self-contained: no script, no external resource')
    assert.ok(readFileSync(svg, 'utf8').startsWith('<svg id="context-chart"'))

    const tab = await browser.newPage({ viewport: { width: 1000, height: 900 } })
    /** @type {string[]} */
    const requests = []
    /** @type {string[]} */
    const problems = []
    tab.on('request', (q) => requests.push(q.url()))
    tab.on('console', (m) => m.type() === 'error' && problems.push(m.text()))
    tab.on('pageerror', (e) => problems.push(String(e)))
    await tab.goto(pathToFileURL(page).href)
    assert.deepEqual(requests, [pathToFileURL(page).href], 'the page fetched nothing but itself')
    assert.deepEqual(problems, [])

    const chart = await tab.evaluate(() => {
      const svg = /** @type {SVGSVGElement} */ (document.querySelector('#context-chart'))
      const box = svg.getBoundingClientRect()
      const d = (/** @type {string} */ sel) => /** @type {SVGPathElement} */ (svg.querySelector(sel)).getAttribute('d') ?? ''
      const len = (/** @type {string} */ sel) => /** @type {SVGPathElement} */ (svg.querySelector(sel)).getTotalLength()
      return {
        width: box.width,
        height: box.height,
        title: svg.querySelector('title')?.textContent,
        withD: d('path.series-with'),
        withoutD: d('path.series-without'),
        withLength: len('path.series-with'),
        markers: [...svg.querySelectorAll('.fold-marker text')].map((t) => t.textContent),
        ticks: [...svg.querySelectorAll('.axis text')].map((t) => t.textContent),
        totals: [...document.querySelectorAll('#totals tbody tr')].map((tr) => [...tr.children].map((c) => c.textContent)),
        folds: document.querySelectorAll('#folds tbody tr').length,
      }
    })
    assert.ok(chart.width > 600 && chart.height > 250, `${chart.width}×${chart.height}`)
    assert.match(chart.title ?? '', /Input tokens per agent request, with and without the folds \(session demo-session\)/)
    assert.ok(chart.withLength > 100, 'the series is drawn')
    // curveStepAfter: M, then per request one line across its slot and one to the next size.
    const lines = (/** @type {string} */ d) => (d.match(/L/g) ?? []).length
    assert.equal(lines(chart.withD), 2 * a.requests.length)
    assert.equal(lines(chart.withoutD), 2 * a.requests.length)
    assert.notEqual(chart.withD, chart.withoutD)
    assert.deepEqual(chart.markers, ['fold 1'])
    assert.ok(chart.ticks.includes('agent request') && chart.ticks.includes('input tokens (context)'))
    const money = (/** @type {number} */ x) => `$${x.toFixed(6)}`
    assert.deepEqual(chart.totals, [
      ['with folds', String(a.totals.with.requests), a.totals.with.input.toLocaleString('en-US'), a.totals.with.hit.toLocaleString('en-US'), a.totals.with.miss.toLocaleString('en-US'), a.totals.with.output.toLocaleString('en-US'), money(a.totals.with.cost)],
      ['without folds', String(a.totals.without.requests), a.totals.without.input.toLocaleString('en-US'), a.totals.without.hit.toLocaleString('en-US'), a.totals.without.miss.toLocaleString('en-US'), a.totals.without.output.toLocaleString('en-US'), money(a.totals.without.cost)],
    ])
    assert.equal(chart.folds, 1)
    const shot = path.join(dir, 'page.png')
    await tab.screenshot({ path: shot, fullPage: true })
    assert.ok(statSync(shot).size > 10_000, 'a non-trivial screenshot')
    await tab.close()
  })
})
