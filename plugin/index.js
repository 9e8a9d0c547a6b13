/**
 * @module plugin
 * The dsh-fold DSH plugins and the helpers other plugins may want.
 * Rows: `dsh-fold/checkpoint` (provides `ctx.checkpoint`) and `dsh-fold/rewind`
 * (provides `ctx.rewind`); `cordis.patch.yml` inserts both.
 */
export { default as Checkpoint, Config as CheckpointConfig, defaultStorePath } from './checkpoint.js'
export { default as Rewind, Config as RewindConfig, REWIND_GUARD_SOURCE, REWIND_REPORT_SOURCE, isRewindReportSource, renderResult } from './rewind.js'
export { RewindError, isRewindError, toToolError } from './errors.js'
export { sessionHost, reportMessage } from './host.js'
export { describeSession, surfaceSnapshot, regionMessages, eventLog } from './surface.js'
export { visibleChars, nodesTokens } from './meter.js'
export { llmSummarizer, resolveRoute, INSTRUCTIONS } from './summarize.js'
export { extractiveSummarizer, fallbackSummarizer } from './extractive.js'
