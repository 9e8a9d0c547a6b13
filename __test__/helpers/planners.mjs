// @ts-check
/**
 * @module __test__/helpers/planners
 * Block mode's planner asked the way block mode asks it, for suites that plan a block summary
 * outside a host with block mode mounted: on the session's mirror (`plugin/shared/mirror.js`, in
 * step, its log index known) while the block tool's calls carry ids (`trackBlockTool`, as block
 * mode's and the compaction backend's mounts do).
 */
import { addon } from '../../plugin/shared/addon.js'
import { callBlockIds } from '../../plugin/block/args.js'
import { trackBlockTool, withLog } from '../../plugin/shared/mirror.js'

/**
 * `planBlockSummary` of `targets` requested at `requestSeq`, on `session`'s mirror.
 * @param {any} session @param {string[]} targets @param {number} requestSeq
 * @param {string} [blockToolName] the tool whose calls carry block ids
 */
export function planBlocks(session, targets, requestSeq, blockToolName = 'block_run_code') {
  const untrack = trackBlockTool(blockToolName, callBlockIds)
  try {
    return addon.planBlockSummary(session.id, withLog(session).native, targets, requestSeq)
  } finally {
    untrack()
  }
}
