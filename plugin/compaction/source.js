/**
 * @module plugin/compaction/source
 * How this backend's checkpoints are told apart from another backend's: DSH's compaction
 * checkpoint source (`compactCheckpointSource(compactionId)`) plus our own marker, which holds
 * what the compaction did (trigger, summarizer, splits, degraded items, item counts).
 */
import { isCompactCheckpointSource } from '@deepseek-ai/dsh-compaction'

/** The marker our replacements carry in their source (beside DSH's checkpoint fields). */
export const OWN_MARKER = 'foldCompaction'

/** Whether a message source is a checkpoint this backend wrote. @param {any} source */
export const isOwnCheckpointSource = (source) => isCompactCheckpointSource(source ?? {}) && typeof source?.[OWN_MARKER] === 'object' && source[OWN_MARKER] !== null
