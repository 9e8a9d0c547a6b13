// @ts-check
/**
 * @module bin/economics
 * `dsh-fold economics FILE [--json] [--html OUT] [--svg OUT] [--hit-price N --miss-price N
 * --output-price N [--currency C]]`: the command. It reads and replays the log (bin/cli.mjs),
 * prices it (bin/economics-price.mjs: the contract of the figures lives there), and prints the
 * text report (bin/economics-text.mjs), the JSON (money to a millionth, percentages to a
 * hundredth), or writes the page and the chart (bin/economics-html.mjs; each file written is
 * confirmed, on stderr under `--json`). Prices given replace DeepSeek's list whole; `--currency`
 * only names the currency of prices given, all three. Refusals: NO_FOLDS (1, nothing to
 * compare); a bad price or currency (64); no token meter (65); a file that cannot be written (73).
 */
import { writeFileSync } from 'node:fs'

import { fail, needDsh, readLog, replay, wrote } from './cli.mjs'

/** @typedef {import('./economics-price.mjs').Prices} Prices */

/** @type {import('./cli.mjs').Command} */
export const command = {
  usage: `Usage: dsh-fold economics FILE [--json] [--html OUT] [--svg OUT]
                          [--hit-price N --miss-price N --output-price N [--currency C]]
  Replay a persisted session log and price every model request with and without its folds
  and block commits (DSH's token meter, a prefix-cache model, DeepSeek's USD price list per 1M
  tokens unless prices are given; --currency names their currency): tokens freed, input not
  sent, cached prefix invalidated, report calls, and the total bill both ways. --html writes a
  self-contained page with a chart, --svg the chart alone.`,
  argHint: 'session.jsonl.zstd, session.jsonl, or their folder',
  run: economics,
}

/**
 * @param {import('./cli.mjs').Opts} opts
 */
async function economics(opts) {
  const { DEFAULT_PRICES, analyze, findFolds } = await needDsh('economics', () => import('./economics-price.mjs'))
  const file = opts._[1]
  /** @type {Prices} */
  const prices = { ...DEFAULT_PRICES }
  for (const [flag, key] of /** @type {const} */ ([['hit-price', 'hit'], ['miss-price', 'miss'], ['output-price', 'output']])) {
    if (opts[flag] === undefined) continue
    const v = /^\d+(\.\d+)?$/.test(String(opts[flag])) ? Number(opts[flag]) : NaN
    if (!(v >= 0 && v <= 1e6)) fail(`--${flag} must be a price per 1M tokens (a number from 0 to 1000000), got ${JSON.stringify(opts[flag])}`, 64)
    prices[key] = v
    delete prices.source
  }
  if (opts.currency !== undefined) {
    // A currency labels the prices given; it never turns DeepSeek's USD list into another currency.
    const given = ['hit-price', 'miss-price', 'output-price'].filter((f) => opts[f] !== undefined)
    if (given.length < 3) fail(`--currency names the currency of --hit-price, --miss-price and --output-price; give all three (got ${given.length ? given.map((f) => `--${f}`).join(', ') : 'none'}: the defaults are DeepSeek's USD list)`, 64)
    if (!/^[A-Za-z]{1,8}$/.test(String(opts.currency))) fail('--currency must be a short currency code such as USD or CNY', 64)
    prices.currency = String(opts.currency).toUpperCase()
    delete prices.source
  }
  for (const flag of ['html', 'svg']) if (opts[flag] !== undefined && !String(opts[flag]).trim()) fail(`--${flag} needs a file path`, 64)
  const { header, events } = await readLog(file, 'economics')
  const session = await replay(header, events, file, 'economics')
  let deps
  try {
    const [{ Context }, { TokenMeter }, { Session, SessionId }, { createUserMessage }, { INSTRUCTIONS, reportInstruction, latestRequest, targetChars }, { INSTRUCTIONS: COMPACTION }] = await Promise.all([
      import('@deepseek-ai/cordis'),
      import('@deepseek-ai/dsh-token-meter'),
      import('@deepseek-ai/dsh-session'),
      import('@deepseek-ai/dsh-llm'),
      import('../plugin/fold/summarize.js'),
      import('../plugin/compaction/summary.js'),
    ])
    const ctx = new Context()
    await ctx.plugin(TokenMeter)
    deps = { meter: ctx.get('tokenMeter'), emptySession: Session.create(SessionId('dsh-fold-economics-envelope')), createUserMessage, INSTRUCTIONS, COMPACTION, report: { instruction: reportInstruction, latestRequest, targetChars } }
  } catch (e) {
    fail(`economics needs DSH's token meter (@deepseek-ai/dsh-token-meter, a DSH install provides it): ${/** @type {Error} */ (e).message}`, 65)
  }
  const folds = findFolds(events)
  if (!folds.length) fail(`NO_FOLDS: session ${header.id} has no fold (rewind report), no block commit and no compaction; there is nothing to compare`, 1)
  const a = analyze({ events, session, emptySession: deps.emptySession, meter: deps.meter, prices, instructions: { ...deps.INSTRUCTIONS, compaction: deps.COMPACTION.en }, createUserMessage: deps.createUserMessage, report: deps.report })
  const about = { sessionId: header.id, events: events.length }
  const { renderText } = await import('./economics-text.mjs')
  const text = renderText(a, about)
  if (opts.html !== undefined || opts.svg !== undefined) {
    const { renderHtml, renderSvg } = await import('./economics-html.mjs')
    /** @type {Array<[string, string, string]>} */
    const files = []
    if (opts.html !== undefined) files.push([String(opts.html), renderHtml(a, { ...about, text }), 'the page'])
    if (opts.svg !== undefined) files.push([String(opts.svg), `${renderSvg(a, `Input tokens per agent request, with and without the folds (session ${header.id})`)}\n`, 'the chart'])
    for (const [file, content] of files) {
      try {
        writeFileSync(file, content)
      } catch (e) {
        fail(`cannot write ${file}: ${/** @type {Error} */ (e).message}`, 73)
      }
    }
    if (!opts.json) console.log(text)
    for (const [file, , what] of files) wrote(file, Boolean(opts.json), what)
    if (!opts.json) return
  }
  if (opts.json) {
    console.log(JSON.stringify({ sessionId: header.id, events: events.length, ...a }, roundMoney, 2))
    return
  }
  console.log(text)
}

/**
 * JSON replacer: money (and every other fraction) to a millionth, percentages to a hundredth,
 * so scripts read the figures the text shows instead of float noise (0.00011368000000000012).
 * @param {string} key @param {unknown} value
 */
function roundMoney(key, value) {
  if (typeof value !== 'number' || Number.isInteger(value)) return value
  const places = key === 'percent' ? 100 : 1e6
  return Math.round(value * places) / places
}
