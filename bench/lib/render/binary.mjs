/**
 * @module bench/lib/render/binary
 * Figure 10: the addon binary's size (x64 Linux, glibc, release build) against its budget
 * (scripts/targets.mjs), as the run found it on disk. A row of the Targets table; no section.
 */
import { X64_BINARY_BUDGET } from '../../../scripts/targets.mjs'
import { missedBy, verdict } from './verdict.mjs'

/**
 * Figure 10's target row (none when the run found no binary).
 * @param {any} meta the run's `meta`, with `binaryBytes`
 * @returns {string[][]}
 */
export function binaryTargets(meta) {
  if (!Number.isFinite(meta.binaryBytes)) return []
  const mib = meta.binaryBytes / 2 ** 20
  const budget = X64_BINARY_BUDGET.bytes
  return [
    [
      '10. the addon binary, x64 Linux (glibc), release build',
      `≤ ${budget / 2 ** 20} MiB`,
      `${mib.toFixed(2)} MiB (${meta.binaryBytes.toLocaleString('en')} bytes)`,
      meta.binaryBytes <= budget ? verdict(true) : missedBy(meta.binaryBytes / budget),
    ],
  ]
}
