/**
 * @module __test__/helpers/stamp
 * Waiting for a lost stamp to be final. A fold's stamp is written off its path and retried;
 * while a try is in flight the mark reads folded in memory, and a store healed before the last
 * try lets that try land. A test that breaks the store to lose a stamp waits for the rewind
 * plugin's warning that the stamp's last try failed before it reads the mark or heals the store.
 */

/** How long to wait for the warning before failing the test. */
const STAMP_WAIT_MS = 20_000

/**
 * Starts listening, through the host's own logger, for the rewind plugin's warning that mark
 * `markId` could not be stamped folded. Call it before the fold; await `failed` after it.
 * @param {any} root the host's root context
 * @param {number} markId
 * @returns {{failed: Promise<void>, stop: () => void}} `failed` rejects after `STAMP_WAIT_MS`
 *   without the warning; `stop` ends the listening (also done when `failed` settles)
 */
export function stampFailure(root, markId) {
  const pattern = new RegExp(`mark ${markId} could not be stamped folded`)
  /** @type {() => void} */
  let stop = () => {}
  /** @type {Promise<void>} */
  const failed = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop()
      reject(new Error(`no warning that mark ${markId}'s stamp failed within ${STAMP_WAIT_MS} ms`))
    }, STAMP_WAIT_MS)
    const dispose = root.logger.exporter({
      colors: 0,
      // Warnings are level 2; an exporter takes only levels 0-1 (errors, info) unless told.
      levels: { default: 2 },
      export: (/** @type {any} */ message) => {
        if (message.type !== 'warn' || !message.args.some((/** @type {unknown} */ a) => pattern.test(String(a)))) return
        stop()
        resolve()
      },
    })
    stop = () => {
      clearTimeout(timer)
      dispose()
    }
  })
  // A test that fails before awaiting `failed` must not also see an unhandled rejection.
  failed.catch(() => {})
  return { failed, stop: () => stop() }
}
