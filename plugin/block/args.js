/**
 * @module plugin/block/args
 * The argument rules both block-mode tools share, in one place: `ids` (or the legacy `id`,
 * which means `ids: [id]`) and the summary text. A violation is an `INVALID_ARGUMENT` error
 * (the addon's code, so `isFoldError` and the model-facing renderer treat it like the
 * planner's own) raised before anything is planned or written.
 *
 * The same normalizer decides whether a logged `block_run_code` call tags anything
 * (`callBlockIds`, what the session mirror and the compaction backend read off each logged call),
 * so the validation a call meets and the attribution its log entry gets can never disagree.
 *
 * Everything here is the model's to inflate, so every check is linear and capped: at most
 * `MAX_BLOCK_IDS` ids (the addon's `MAX_BLOCK_TARGETS`, refused by the list's length before an
 * id is read), each at most `MAX_BLOCK_ID_CHARS` long, a description of at most
 * `MAX_DESCRIPTION_CHARS`; and an error message quotes at most a short prefix of what it names.
 */
import { addon } from '../shared/addon.js'
import { brief } from '../shared/errors.js'

/** Most block ids one call may name (the core's limit, read from the addon). */
export const MAX_BLOCK_IDS = addon.MAX_BLOCK_TARGETS
/** Longest block id, in UTF-16 units (a string's `length`). */
export const MAX_BLOCK_ID_CHARS = addon.MAX_BLOCK_ID_LENGTH
/** Longest `description` of a `block_run_code` call (shown in the UI: "5-10 words"). */
export const MAX_DESCRIPTION_CHARS = 1000


/**
 * An `Error` carrying one of dsh-fold's stable codes.
 * @param {string} code @param {string} message
 * @returns {Error & {code: string}}
 */
export function codedError(code, message) {
  return Object.assign(new Error(message), { code })
}

/**
 * The block ids of a tool call's arguments: `ids`, or the legacy `id` as `[id]`.
 * @param {unknown} args the call's arguments (an object; anything else is invalid)
 * @returns {string[]} non-empty, each a non-empty string, no duplicates, in the caller's order
 * @throws {Error & {code: 'INVALID_ARGUMENT'}} both `id` and `ids`, neither, an empty list,
 *   a non-string or empty id, or a duplicate
 */
export function normalizeBlockIds(args) {
  const a = /** @type {{ids?: unknown, id?: unknown}} */ (typeof args === 'object' && args !== null ? args : {})
  const hasIds = a.ids !== undefined
  const hasId = a.id !== undefined
  if (hasIds && hasId) throw codedError('INVALID_ARGUMENT', 'pass either `ids` or the legacy `id`, not both')
  if (!hasIds && !hasId) throw codedError('INVALID_ARGUMENT', 'name the blocks: `ids` is a non-empty array of block ids')
  const ids = hasIds ? a.ids : [a.id]
  if (!Array.isArray(ids)) throw codedError('INVALID_ARGUMENT', '`ids` must be an array of block ids')
  if (ids.length === 0) throw codedError('INVALID_ARGUMENT', '`ids` is empty: name at least one block')
  if (ids.length > MAX_BLOCK_IDS) throw codedError('INVALID_ARGUMENT', `\`ids\` names ${ids.length} blocks; one call names at most ${MAX_BLOCK_IDS}`)
  const seen = new Set()
  for (const id of ids) {
    if (typeof id !== 'string') throw codedError('INVALID_ARGUMENT', `block ids are strings; got ${brief(id)}`)
    if (id.trim() === '') throw codedError('INVALID_ARGUMENT', 'a block id must not be empty')
    if (id.length > MAX_BLOCK_ID_CHARS) throw codedError('INVALID_ARGUMENT', `block id ${brief(id)} is ${id.length} characters long; a block id has at most ${MAX_BLOCK_ID_CHARS}`)
    if (seen.has(id)) throw codedError('INVALID_ARGUMENT', `block id ${brief(id)} is listed twice`)
    seen.add(id)
  }
  return /** @type {string[]} */ (ids)
}

/**
 * The ids a logged call tags, or none when its arguments are invalid (such a call was refused
 * before it ran, so it opened no block).
 * @param {unknown} args parsed arguments
 * @returns {string[]}
 */
export function blockIdsOrNone(args) {
  try {
    return normalizeBlockIds(args)
  } catch {
    // Invalid arguments: the call was refused, and a refused call tags nothing.
    return []
  }
}

/**
 * The block ids a logged `block_run_code` call tags: its arguments' ids, or none when they are
 * invalid (the plugin refused that call before its program ran: `blockIdsOrNone`, the very rule
 * its validation applies).
 * @param {unknown} raw the call's `arguments` (a JSON string in rc.8, or an object)
 * @returns {string[]}
 */
export function callBlockIds(raw) {
  if (typeof raw !== 'string') return blockIdsOrNone(raw)
  try {
    return blockIdsOrNone(JSON.parse(raw))
  } catch {
    // Not JSON: DSH logged arguments the model garbled; such a call was refused and tags nothing.
    return []
  }
}

/**
 * The summary text of a `block_summary` call.
 * @param {unknown} summary
 * @returns {string}
 * @throws {Error & {code: 'INVALID_ARGUMENT'}} not a string, or only whitespace
 */
export function normalizeSummary(summary) {
  if (typeof summary !== 'string') throw codedError('INVALID_ARGUMENT', '`summary` must be a string: your own summary of the blocks')
  if (summary.trim() === '') throw codedError('INVALID_ARGUMENT', '`summary` is empty: write what the blocks established before closing them')
  return summary
}

/**
 * The `description` of a `block_run_code` call: what the UI shows for the program.
 * @param {unknown} description
 * @returns {string}
 * @throws {Error & {code: 'INVALID_ARGUMENT'}} not a string, or longer than `MAX_DESCRIPTION_CHARS`
 */
export function normalizeDescription(description) {
  if (typeof description !== 'string') throw codedError('INVALID_ARGUMENT', '`description` must be a string: what this program does, in 5-10 words')
  if (description.length > MAX_DESCRIPTION_CHARS) throw codedError('INVALID_ARGUMENT', `\`description\` is ${description.length} characters long; keep it to 5-10 words (at most ${MAX_DESCRIPTION_CHARS} characters)`)
  return description
}

/**
 * The per-call budget of a `block_run_code` program.
 * @param {unknown} timeoutMs
 * @param {number} max the configured ceiling
 * @returns {number | undefined}
 */
export function normalizeTimeout(timeoutMs, max) {
  if (timeoutMs === undefined) return undefined
  if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > max) {
    throw codedError('INVALID_ARGUMENT', `\`timeoutMs\` must be a whole number of milliseconds from 1 to ${max}`)
  }
  return timeoutMs
}
