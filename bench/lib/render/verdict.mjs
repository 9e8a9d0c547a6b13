/**
 * @module bench/lib/render/verdict
 * The last column of RESULTS.md's Targets table: whether a figure met its target, and when it
 * missed, by how much. Every figure's target rows say it in these words.
 */
import { fmtX } from '../stats.mjs'

/** @param {boolean} ok */
export const verdict = (ok) => (ok ? '**met**' : '**missed**')

/**
 * A miss and how far over the target it is: a factor, or a percentage when it is too close for
 * "by 1.00×".
 * @param {number} factor measured over target (or target over measured), > 1
 */
export const missedBy = (factor) => `${verdict(false)} by ${factor < 1.1 ? `${((factor - 1) * 100).toFixed(1)}%` : fmtX(factor)}`
