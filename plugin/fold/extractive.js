/**
 * @module plugin/fold/extractive
 * Reports without a model: the addon's deterministic extractive generator over the region's
 * messages, and the fallback that uses it when the LLM report fails or stays empty.
 */
import { addon } from '../shared/addon.js'
import { regionMessages } from '../shared/session.js'
import { TRUNCATED, isMisconfiguration } from './summarize.js'

/**
 * A `summarize` callback writing the extractive report with the addon's default budget, a
 * function of the region's size (1000 + a quarter of its visible chars, and always shorter
 * than the region) — the budget `dsh-fold fold` uses too.
 * @param {{session: any, language: 'en' | 'zh'}} options
 */
export function extractiveSummarizer({ session, language }) {
  return async (/** @type {{seqs: Uint32Array, foldedChars: number}} */ region) => {
    const messages = regionMessages(session, region.seqs)
    return { text: addon.extractiveReport(JSON.stringify(messages), { language }), finish: 'extractive' }
  }
}

/**
 * `primary`, but a failed attempt (an error, a timeout) or a last empty or cut-off one is answered by
 * `fallback` (and `onFallback` is told). A misconfiguration of the primary (no route, an unknown
 * provider, refused credentials: `isMisconfiguration`) is not a failed completion: it fails the
 * fold, so the user hears about it instead of every fold silently going extractive.
 * @param {(region: any, attempt: number) => Promise<any>} primary
 * @param {(region: any, attempt: number) => Promise<any>} fallback
 * @param {number} maxRetries
 * @param {() => void} onFallback
 */
export function fallbackSummarizer(primary, fallback, maxRetries, onFallback) {
  return async (/** @type {any} */ region, /** @type {number} */ attempt) => {
    let reply
    try {
      reply = await primary(region, attempt)
    } catch (e) {
      if (isMisconfiguration(e)) throw e
      onFallback()
      return fallback(region, attempt)
    }
    const text = typeof reply === 'string' ? reply : reply?.text
    // The last attempt empty, or cut off at the length limit (never committed as whole).
    const cut = typeof reply === 'object' && reply !== null && TRUNCATED.has(reply.finish)
    if (attempt >= maxRetries && (cut || !(typeof text === 'string' && text.trim()))) {
      onFallback()
      return fallback(region, attempt)
    }
    return reply
  }
}
