/**
 * @module plugin
 * The dsh-fold DSH plugins and the helpers other plugins may want.
 * Rows: `dsh-fold/checkpoint` (provides `ctx.checkpoint`), `dsh-fold/rewind`
 * (provides `ctx.rewind`) and `dsh-fold/recall` (provides `ctx.recall`); `cordis.patch.yml`
 * inserts all three. `dsh-fold/compaction` (provides `ctx.compaction`, a DSH compaction
 * backend) replaces dsh-base's `compaction-basic` row when a user swaps them
 * (docs/compaction.md); no default patch inserts it.
 */
export { default as Checkpoint, Config as CheckpointConfig, defaultStorePath } from './fold/checkpoint.js'
export { default as Rewind, Config as RewindConfig, REWIND_GUARD_SOURCE, REWIND_REPORT_SOURCE, isRewindReportSource, renderResult, reportFrame } from './fold/rewind.js'
export { RewindError, isRewindError, toToolError } from './shared/errors.js'
export { default as Recall, Config as RecallConfig, RecallError, RECALL_ERROR_CODES } from './recall/recall.js'
export { recallHint, splitRecallHint } from './recall/hint.js'
export { sessionHost, reportMessage } from './fold/host.js'
export { regionMessages, eventLog } from './shared/session.js'
export { mirrorOf, mountMirror, useMeter } from './shared/mirror.js'
export { visibleChars } from './shared/meter.js'
export { llmSummarizer, resolveRoute, INSTRUCTIONS, reportInstruction, isReportInstruction } from './fold/summarize.js'
export { extractiveSummarizer, fallbackSummarizer } from './fold/extractive.js'
export { default as Compaction, Config as CompactionConfig, EXTRACTIVE_ROUTE } from './compaction/compaction.js'
