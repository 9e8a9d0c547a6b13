/**
 * @module plugin
 * The dsh-fold DSH plugins and the helpers other plugins may want.
 * Rows: `dsh-fold/checkpoint` (provides `ctx.checkpoint`), `dsh-fold/rewind`
 * (provides `ctx.rewind`) and `dsh-fold/recall` (provides `ctx.recall`); `cordis.patch.yml`
 * inserts all three.
 */
export { default as Checkpoint, Config as CheckpointConfig, defaultStorePath } from './checkpoint.js'
export { default as Rewind, Config as RewindConfig, REWIND_GUARD_SOURCE, REWIND_REPORT_SOURCE, isRewindReportSource, renderResult } from './rewind.js'
export { RewindError, isRewindError, toToolError } from './errors.js'
export { default as Recall, Config as RecallConfig, RecallError, RECALL_ERROR_CODES } from './recall.js'
export { recallHint, splitRecallHint } from './recall-hint.js'
export { sessionHost, reportMessage } from './host.js'
export { describeSession, surfaceSnapshot, regionMessages, eventLog } from './surface.js'
export { visibleChars, nodesTokens } from './meter.js'
export { llmSummarizer, resolveRoute, INSTRUCTIONS } from './summarize.js'
export { extractiveSummarizer, fallbackSummarizer } from './extractive.js'
