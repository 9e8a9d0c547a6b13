/**
 * @module plugin/shared/language
 * Which language a row speaks to the model in. A row's own `language` wins; a row without one
 * follows the rewind row's `reportLanguage` (the bundle's one language setting, the reference's
 * key); without a rewind row, English. Read at each use: rows mount in any order.
 */

/**
 * @param {any} ctx a cordis context of the row
 * @param {'en' | 'zh' | undefined} own the row's own `language`, when it sets one
 * @returns {'en' | 'zh'}
 */
export function languageOf(ctx, own) {
  if (own === 'en' || own === 'zh') return own
  const rewind = ctx?.get?.('rewind')?.config?.reportLanguage
  return rewind === 'zh' ? 'zh' : 'en'
}
