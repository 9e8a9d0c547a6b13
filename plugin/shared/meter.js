/**
 * @module plugin/shared/meter
 * The chars meter: a message's model-visible text, the reference's yardstick. The session mirror
 * (`./mirror.js`) meters each node with it as the node is appended, beside its token price from
 * DSH's own `ctx.tokenMeter` when one is mounted; every feature reads both prices off the mirror.
 * The core's counterpart is `crates/fold-core/src/meter.rs`.
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
