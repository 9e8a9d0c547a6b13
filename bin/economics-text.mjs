// @ts-check
/**
 * @module bin/economics-text
 * The text report of `dsh-fold economics FILE` (bin/economics.mjs): per fold, block commit and
 * compaction, what it freed, what the requests after it did not send, the cached prefix it
 * invalidated, its report or summary call and its net effect; the compactions per backend; the
 * bill with and without the folds as a table; one verdict sentence. Money is printed to a
 * millionth in the prices' currency (`money`); the page (bin/economics-html.mjs) uses the same
 * words. Pure: an analysis in, a string out.
 */

/** @typedef {import('./economics-price.mjs').Prices} Prices */

const n = (/** @type {number} */ x) => (Math.round(x) || 0).toLocaleString('en-US')
/** @param {number} x @param {Prices} p */
export const money = (x, p) => `${x < 0 ? '-' : ''}${p.currency === 'USD' ? '$' : ''}${Math.abs(x).toFixed(6)}${p.currency === 'USD' ? '' : ` ${p.currency}`}`
const signed = (/** @type {number} */ x) => (x > 0 ? `+${n(x)}` : n(x))

/** One sentence on the total. @param {{cost: number, percent: number}} s @param {Prices} p */
export function verdict(s, p) {
  return s.cost >= 0
    ? `saved ${money(s.cost, p)} (${s.percent.toFixed(1)}% of the bill without folds)`
    : `the folds cost ${money(-s.cost, p)} more (${(-s.percent).toFixed(1)}% over the bill without folds)`
}

/**
 * The text report.
 * @param {ReturnType<typeof import('./economics-price.mjs').analyze>} a @param {{sessionId: string, events: number}} about
 */
export function renderText(a, about) {
  const p = a.prices
  const out = []
  const blocks = a.folds.filter((f) => f.kind === 'block').length
  const compactions = a.folds.filter((f) => f.kind === 'compaction').length
  const folds = a.folds.length - blocks - compactions
  out.push(
    `session ${about.sessionId}: ${about.events} events, ${a.requests.length} agent requests, ${folds} fold${folds === 1 ? '' : 's'}, ${blocks} block commit${blocks === 1 ? '' : 's'}${compactions ? `, ${compactions} compaction${compactions === 1 ? '' : 's'}` : ''}`,
  )
  out.push(`prices per 1M tokens: cache hit ${p.hit}, cache miss ${p.miss}, output ${p.output} ${p.currency}${p.source ? ` (${p.source})` : ''}`)
  out.push('tokens: DSH token meter estimates; cache: prefix cache at message granularity (see docs/economics.md)')
  for (const f of a.folds) {
    out.push('')
    const what = f.kind === 'fold' ? 'report' : 'summary'
    out.push(`${f.name} at seq ${f.seq}: ${f.foldedNodes} message${f.foldedNodes === 1 ? '' : 's'}, ${n(f.foldedTokens)} tokens → ${what} of ${n(f.replacementTokens)} tokens: ${n(f.tokensFreed)} tokens freed`)
    out.push(`  ${f.requestsAfter} request${f.requestsAfter === 1 ? '' : 's'} followed; they did not send ${n(f.inputTokensNotSent)} input tokens`)
    out.push(`  cached prefix invalidated: ${n(f.invalidatedTokens)} tokens re-read once at the miss price (${money(f.invalidatedCost, p)} extra)`)
    const call = f.kind === 'compaction' ? 'summary call' : 'report call'
    if (f.reportCall) out.push(`  ${call}: ${n(f.reportCall.input)} input (${n(f.reportCall.hit)} hit, ${n(f.reportCall.miss)} miss) + ${n(f.reportCall.output)} output = ${money(f.reportCall.cost, p)}`)
    else out.push(`  ${call}: none (${f.report === 'extractive' ? `extractive ${what}, no model call` : 'the agent wrote the summary in its own request'})`)
    out.push(`  net effect of this ${f.kind === 'block' ? 'commit' : f.kind} alone: ${f.saved >= 0 ? 'saved' : 'cost'} ${money(Math.abs(f.saved), p)}; ${f.breakEvenRequests === null ? 'it freed nothing, so it never pays back' : `it pays back after ${f.breakEvenRequests} later request${f.breakEvenRequests === 1 ? '' : 's'}`}`)
  }
  if (a.compactions.length) {
    out.push('')
    out.push('compactions by backend:')
    for (const b of a.compactions) {
      const name = b.backend === 'dsh-fold' ? 'dsh-fold/compaction' : b.backend
      const calls = b.modelCalls ? `${b.modelCalls} summary call${b.modelCalls === 1 ? '' : 's'} (${n(b.callInput)} input + ${n(b.callOutput)} output tokens, ${money(b.callCost, p)})` : 'no model call'
      out.push(`  ${name}: ${b.compactions} compaction${b.compactions === 1 ? '' : 's'}, ${calls}, ${n(b.tokensFreed)} tokens freed`)
    }
  }
  const { with: w, without: wo, saved: s } = a.totals
  out.push('')
  const rows = [
    ['', 'requests', 'input', 'cache hit', 'cache miss', 'output', 'cost'],
    ['with folds', String(w.requests), n(w.input), n(w.hit), n(w.miss), n(w.output), money(w.cost, p)],
    ['without folds', String(wo.requests), n(wo.input), n(wo.hit), n(wo.miss), n(wo.output), money(wo.cost, p)],
    ['difference', signed(w.requests - wo.requests), signed(-s.input), signed(-s.hit), signed(-s.miss), signed(-s.output), money(-s.cost, p)],
  ]
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)))
  for (const r of rows) out.push(r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '))
  out.push(verdict(s, p))
  if (a.recordedUsage) {
    const u = a.recordedUsage
    out.push(`provider-reported usage in the log (${u.replies} replies, as run): ${n(u.inputTokens)} input, ${n(u.cacheReadTokens)} cache read, ${n(u.outputTokens)} output`)
  }
  return out.join('\n')
}
