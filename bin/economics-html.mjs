/**
 * @module bin/economics-html
 * The page `dsh-fold economics FILE --html OUT` writes: one self-contained HTML file (inline
 * CSS, an inline SVG chart, no script, nothing fetched) with the context size of every agent
 * request with and without the folds, the folds marked, and the tables of the text report.
 *
 * The chart's geometry comes from d3 (`d3-scale` for the axes and their ticks, `d3-shape` for
 * the step lines and the areas): both compute path strings in Node without a DOM, so the SVG
 * is drawn here, once, and the page needs no script. Every element a reader (or a test) looks
 * for has a stable `id` or class: `#context-chart`, `.series-with`, `.series-without`,
 * `.fold-marker`, `#totals`, `#folds`.
 */
import { scaleLinear } from 'd3-scale'
import { area, curveStepAfter, line } from 'd3-shape'

import { money, verdict } from './economics-text.mjs'

const W = 860
const H = 360
const M = { top: 28, right: 24, bottom: 44, left: 70 }

/** @param {string} s */
const esc = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
const n = (/** @type {number} */ x) => (Math.round(x) || 0).toLocaleString('en-US')

/**
 * The chart alone, as an SVG element (also what `--svg` writes).
 * @param {ReturnType<typeof import('./economics-price.mjs').analyze>} a @param {string} title
 */
export function renderSvg(a, title) {
  const reqs = a.requests
  const count = Math.max(reqs.length, 1)
  // Request i occupies [i, i+1) on the x axis: a step line holds each request's size across its slot.
  const x = scaleLinear().domain([1, count + 1]).range([M.left, W - M.right])
  const top = Math.max(1, ...reqs.map((r) => Math.max(r.with.input, r.without.input)))
  const y = scaleLinear().domain([0, top * 1.1]).nice().range([H - M.bottom, M.top])
  /** @param {'with' | 'without'} key */
  const points = (key) => [...reqs.map((r, i) => /** @type {[number, number]} */ ([i + 1, r[key].input])), [count + 1, reqs.at(-1)?.[key].input ?? 0]]
  const stepLine = line().x((d) => x(d[0])).y((d) => y(d[1])).curve(curveStepAfter)
  const hitArea = area()
    .x((d) => x(d[0]))
    .y0(y(0))
    .y1((d) => y(d[1]))
    .curve(curveStepAfter)
  const hits = [...reqs.map((r, i) => /** @type {[number, number]} */ ([i + 1, r.with.hit])), [count + 1, reqs.at(-1)?.with.hit ?? 0]]
  const yTicks = y.ticks(6)
  const xTicks = x.ticks(Math.min(count, 12)).filter((t) => Number.isInteger(t) && t <= count)
  const markers = reqs.flatMap((r, i) => (r.after.length ? [{ at: i + 1, label: r.after.join(' + ') }] : []))
  const parts = []
  parts.push(`<svg id="context-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-labelledby="chart-title">`)
  parts.push(`<title id="chart-title">${esc(title)}</title>`)
  parts.push(`<style>text{font:12px system-ui,-apple-system,"Segoe UI",sans-serif;fill:#333}.axis line,.axis path{stroke:#999}.grid line{stroke:#eee}.series-with{fill:none;stroke:#1f77b4;stroke-width:2.5}.series-without{fill:none;stroke:#d62728;stroke-width:2;stroke-dasharray:6 4}.hits{fill:#1f77b4;opacity:.15}.fold-marker line{stroke:#2ca02c;stroke-width:1.5;stroke-dasharray:3 3}.fold-marker text{fill:#2ca02c;font-weight:600}</style>`)
  parts.push('<g class="grid">')
  for (const t of yTicks) parts.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${y(t)}" y2="${y(t)}"/>`)
  parts.push('</g>')
  parts.push(`<path class="hits" d="${hitArea(hits)}"><title>cache hits with folds</title></path>`)
  parts.push(`<path class="series-without" d="${stepLine(points('without'))}"><title>input tokens per request without folds</title></path>`)
  parts.push(`<path class="series-with" d="${stepLine(points('with'))}"><title>input tokens per request with folds</title></path>`)
  for (const m of markers) {
    parts.push(`<g class="fold-marker"><line x1="${x(m.at)}" x2="${x(m.at)}" y1="${M.top - 6}" y2="${H - M.bottom}"/><text x="${x(m.at) + 4}" y="${M.top + 6}">${esc(m.label)}</text></g>`)
  }
  parts.push(`<g class="axis"><line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}"/><line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}"/>`)
  for (const t of yTicks) parts.push(`<text x="${M.left - 8}" y="${y(t) + 4}" text-anchor="end">${n(t)}</text>`)
  for (const t of xTicks) parts.push(`<text x="${(x(t) + x(t + 1)) / 2}" y="${H - M.bottom + 16}" text-anchor="middle">${t}</text>`)
  parts.push(`<text x="${(M.left + W - M.right) / 2}" y="${H - 8}" text-anchor="middle">agent request</text>`)
  parts.push(`<text transform="translate(16 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">input tokens (context)</text>`)
  parts.push('</g>')
  const lx = M.left + 12
  parts.push(`<g class="legend" transform="translate(${lx} ${M.top - 4})"><rect width="246" height="62" fill="#fff" stroke="#ddd"/>`)
  parts.push('<line class="series-with" x1="10" x2="40" y1="14" y2="14"/><text x="48" y="18">with folds</text>')
  parts.push('<line class="series-without" x1="10" x2="40" y1="32" y2="32"/><text x="48" y="36">without folds (same requests)</text>')
  parts.push('<rect class="hits" x="10" y="44" width="30" height="10"/><text x="48" y="54">cache hits, with folds</text></g>')
  parts.push('</svg>')
  return parts.join('\n')
}

/**
 * The whole page.
 * @param {ReturnType<typeof import('./economics-price.mjs').analyze>} a
 * @param {{sessionId: string, events: number, text: string}} about the text report goes in a <pre>
 */
export function renderHtml(a, about) {
  const p = a.prices
  const title = `dsh-fold economics: session ${about.sessionId}`
  const { with: w, without: wo, saved: s } = a.totals
  const row = (/** @type {string} */ name, /** @type {any} */ b) =>
    `<tr><th>${esc(name)}</th><td>${b.requests}</td><td>${n(b.input)}</td><td>${n(b.hit)}</td><td>${n(b.miss)}</td><td>${n(b.output)}</td><td>${esc(money(b.cost, p))}</td></tr>`
  const folds = a.folds
    .map(
      (f) =>
        `<tr><th>${esc(f.name)}</th><td>${f.seq}</td><td>${f.foldedNodes}</td><td>${n(f.foldedTokens)}</td><td>${n(f.replacementTokens)}</td><td>${n(f.tokensFreed)}</td><td>${f.requestsAfter}</td><td>${n(f.inputTokensNotSent)}</td><td>${n(f.invalidatedTokens)}</td><td>${f.reportCall ? esc(`${n(f.reportCall.input)} in + ${n(f.reportCall.output)} out = ${money(f.reportCall.cost, p)}`) : esc(f.report === 'extractive' ? 'none (extractive)' : 'none (agent-written)')}</td><td>${f.breakEvenRequests === null ? '—' : `${f.breakEvenRequests} requests`}</td><td>${esc(money(f.saved, p))}</td></tr>`,
    )
    .join('\n')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:20px;margin:0 0 4px}p.meta{color:#666;margin:0 0 16px}
table{border-collapse:collapse;margin:12px 0 20px}th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f6f6f6}
thead th{text-align:center}tbody th{text-align:left}
.saved{font-weight:600}pre{background:#f8f8f8;padding:12px;overflow:auto;font-size:12px}
</style>
</head>
<body>
<h1>${esc(title)}</h1>
<p class="meta">${about.events} events · ${a.requests.length} agent requests · ${a.folds.length} fold(s) and block commit(s) · prices per 1M tokens: hit ${p.hit}, miss ${p.miss}, output ${p.output} ${esc(p.currency)}${p.source ? ` (${esc(p.source)})` : ''}</p>
${renderSvg(a, `Input tokens per agent request, with and without the folds (session ${about.sessionId})`)}
<table id="totals">
<thead><tr><th></th><th>requests</th><th>input tokens</th><th>cache hit</th><th>cache miss</th><th>output</th><th>cost</th></tr></thead>
<tbody>
${row('with folds', w)}
${row('without folds', wo)}
</tbody>
</table>
<p class="saved">${esc(verdict(s, p))}; input tokens not sent: ${n(s.input)}.</p>
<table id="folds">
<thead><tr><th>fold</th><th>seq</th><th>messages</th><th>folded tokens</th><th>replacement</th><th>freed</th><th>requests after</th><th>input not sent</th><th>prefix invalidated</th><th>report call</th><th>break-even</th><th>net saved</th></tr></thead>
<tbody>
${folds}
</tbody>
</table>
<pre>${esc(about.text)}</pre>
</body>
</html>
`
}
