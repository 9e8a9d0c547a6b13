/**
 * @module plugin/shared/meter
 * What a region weighs, in the plugin's two units, in one place: model-visible chars (the
 * reference's yardstick, always) and tokens as DSH's own `ctx.tokenMeter` prices them (when a
 * meter is mounted: the shrink check and `tokensFreed` then use tokens, and the fold logs DSH's
 * shadow price so the meter's projection follows it). The core's counterpart of the chars meter
 * is `crates/fold-core/src/meter.rs`.
 */

/**
 * Model-visible text of a message or block, in UTF-16 units: text, reasoning, tool-call
 * arguments and tool outputs, recursively. Images and other non-text blocks count 0.
 * @param {any} value
 * @returns {number}
 */
export function visibleChars(value) {
  if (value == null) return 0
  if (typeof value === 'string') return value.length
  if (Array.isArray(value)) {
    let n = 0
    for (const v of value) n += visibleChars(v)
    return n
  }
  if (typeof value !== 'object') return 0
  if (value.type === 'tool-call') {
    const args = value.arguments
    return typeof args === 'string' ? args.length : args == null ? 0 : JSON.stringify(args).length
  }
  let n = typeof value.text === 'string' ? value.text.length : 0
  if (value.content !== undefined) n += visibleChars(value.content)
  if (value.output !== undefined) n += visibleChars(value.output)
  return n
}

/**
 * @typedef {{estimateMessage(message: any): number}} TokenMeter DSH's `ctx.tokenMeter` (the part used here)
 */

/**
 * The token price of surface nodes as the meter's own fold prices them: each node's derived
 * message (none: 0), summed. This is the shadow price a replacement of these nodes must log.
 * @param {TokenMeter} meter @param {any} session @param {readonly any[]} log @param {ArrayLike<number>} seqs
 */
export function nodesTokens(meter, session, log, seqs) {
  let tokens = 0
  for (let i = 0; i < seqs.length; i++) {
    const message = session.deriveEventMessage(log[seqs[i]])
    if (message) tokens += meter.estimateMessage(message)
  }
  return tokens
}
