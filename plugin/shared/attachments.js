/**
 * @module plugin/shared/attachments
 * How a message's blocks other than text are named in text, wherever the plugin writes a
 * message's content as text: a compaction's checkpoint (beside the block itself) and recall's
 * lines. An image (DSH's `ImageBlock`, `{type: 'image', attachment: ImageAttachmentRef}`) by its
 * display name, media type, size in pixels and bytes and its attachment id; any other block by
 * its type. One line each, the same words in a checkpoint and in recall, so a query for the name
 * or the id finds it.
 */

const WORDS = {
  en: { image: 'image', attachment: 'attachment', block: 'block' },
  zh: { image: '图片', attachment: '附件', block: '块' },
}

/** Bytes as a reader says them. @param {number} n */
function size(n) {
  if (!Number.isFinite(n) || n < 0) return undefined
  if (n < 1024) return `${n} B`
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10 * 1024 ? 1 : 0)} KB`
  return `${(n / 1024 / 1024).toFixed(1)} MB`
}

/**
 * Whether `block` is one the text of a message does not carry (not text, reasoning, a tool
 * call or a tool result).
 * @param {any} block
 */
export function isAttachment(block) {
  return typeof block?.type === 'string' && !['text', 'reasoning', 'tool-call', 'tool-result'].includes(block.type)
}

/**
 * The line naming an attachment block: `[image screenshot.png · image/png · 1280×720 · 47 KB ·
 * attachment 3f2a…]`, or `[file block]` for a block of another type.
 * @param {any} block @param {'en' | 'zh'} [language]
 */
export function attachmentLine(block, language = 'en') {
  const w = WORDS[language] ?? WORDS.en
  if (block?.type !== 'image') return `[${String(block?.type)} ${w.block}]`
  const a = block.attachment ?? {}
  const name = typeof a.name === 'string' && a.name ? ` ${a.name}` : ''
  const facts = [
    typeof a.mediaType === 'string' ? a.mediaType : undefined,
    Number.isInteger(a.width) && Number.isInteger(a.height) ? `${a.width}×${a.height}` : undefined,
    size(a.bytes),
    typeof a.attachmentId === 'string' ? `${w.attachment} ${a.attachmentId}` : undefined,
  ].filter(Boolean)
  return `[${w.image}${name}${facts.length ? ` · ${facts.join(' · ')}` : ''}]`
}
