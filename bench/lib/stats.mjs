/**
 * @module bench/lib/stats
 * Timing and summary statistics: medians and percentiles over repeated runs, ratios.
 */

/** Nanoseconds now. */
export const now = () => process.hrtime.bigint()

/** Microseconds between two `now()` readings. @param {bigint} a @param {bigint} b */
export const us = (a, b) => Number(b - a) / 1e3

/** Runs a full GC when the process was started with --expose-gc (outside timed regions). */
export function gc() {
  if (typeof globalThis.gc === 'function') globalThis.gc()
}

/**
 * A full GC, then a pause so V8's background threads (concurrent sweeping after the GC,
 * optimizing compiles) are done before a timed region starts: without the pause they run
 * during the measurement and, on 2 cores, take the CPU from it (measured: a 50k-event fold's
 * process CPU time went from ~2 ms to ~20 ms).
 * @param {number} [ms]
 */
export async function quiesce(ms = 50) {
  gc()
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/** @param {number[]} sorted @param {number} p in [0,1] */
function quantile(sorted, p) {
  if (sorted.length === 0) return NaN
  const i = (sorted.length - 1) * p
  const lo = Math.floor(i)
  const hi = Math.ceil(i)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo)
}

/**
 * Median and spread of samples.
 * @param {number[]} samples
 * @returns {{n: number, median: number, p10: number, p90: number, q1: number, q3: number, min: number, max: number}}
 */
export function summarize(samples) {
  const s = [...samples].sort((a, b) => a - b)
  return {
    n: s.length,
    median: quantile(s, 0.5),
    p10: quantile(s, 0.1),
    p90: quantile(s, 0.9),
    q1: quantile(s, 0.25),
    q3: quantile(s, 0.75),
    min: s[0],
    max: s[s.length - 1],
  }
}

/**
 * Ratio statistics of paired samples a[i] / b[i] (interleaved runs pair naturally).
 * @param {number[]} a @param {number[]} b
 */
export function pairedRatio(a, b) {
  const n = Math.min(a.length, b.length)
  const r = []
  for (let i = 0; i < n; i++) r.push(a[i] / b[i])
  return summarize(r)
}

/**
 * Least-squares slope and intercept of y over x, with the slope's spread from
 * leave-one-x-out fits (robust enough for a handful of x values).
 * @param {number[]} xs @param {number[]} ys
 */
export function linearFit(xs, ys) {
  const n = xs.length
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  let sxy = 0
  let sxx = 0
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my)
    sxx += (xs[i] - mx) ** 2
  }
  const slope = sxy / sxx
  return { slope, intercept: my - slope * mx }
}

/** Formats microseconds with a sensible unit. @param {number} v */
export function fmtUs(v) {
  if (!Number.isFinite(v)) return 'n/a'
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)} s`
  if (v >= 1e4) return `${(v / 1e3).toFixed(1)} ms`
  if (v >= 1e3) return `${(v / 1e3).toFixed(2)} ms`
  if (v >= 100) return `${v.toFixed(0)} µs`
  if (v >= 10) return `${v.toFixed(1)} µs`
  return `${v.toFixed(2)} µs`
}

/** "median [p10–p90]" in µs/ms. @param {{median: number, p10: number, p90: number}} s */
export const fmtSpread = (s) => `${fmtUs(s.median)} [${fmtUs(s.p10)}–${fmtUs(s.p90)}]`

/** A ratio like "7.3×". @param {number} r */
export const fmtX = (r) => (Number.isFinite(r) ? `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×` : 'n/a')
