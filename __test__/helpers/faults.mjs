/**
 * @module __test__/helpers/faults
 * The test build of the addon: the same sources built with the `test-faults` cargo feature, the
 * only build that honours `DSH_FOLD_TEST_FAULTS` (the store's faults, and `panic:<place>` at a
 * named place of the binding, src/guard.rs). The published binary is built without the feature
 * and ignores the variable (__test__/faults.test.mjs proves it).
 *
 * `npm test` (scripts/test.mjs) builds it before the suites run, into `target-faults/addon/`
 * (ignored by git: `/target-*`); a suite run on its own builds it on first use, so in a checkout
 * a fault test never skips. `npm run test:targets` runs some suites from an installed copy of the
 * package, which has no sources to build it from: there `FAULTS_UNAVAILABLE` says why they skip
 * (they test the faults build, and the binary under test there is a release one). Tests load it in a child process or worker through the generated loader's
 * documented override, `NAPI_RS_NATIVE_LIBRARY_PATH`: the code under test is the package's own
 * `index.js` and plugin, only the binary differs.
 */
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const require = createRequire(import.meta.url)

/** Where the faults build goes (cargo's target dir, and the `.node` file's folder). */
export const FAULTS_TARGET_DIR = path.join(root, 'target-faults')
const OUTPUT_DIR = path.join(FAULTS_TARGET_DIR, 'addon')

/** The napi-rs CLI's arguments that build the faults addon (shared with scripts/test.mjs). */
export const FAULTS_BUILD_ARGS = ['build', '--platform', '--features', 'test-faults', '--target-dir', FAULTS_TARGET_DIR, '--output-dir', OUTPUT_DIR, '--no-js', '--dts', 'index.d.ts']

/** The napi-rs CLI's entry (it exports no path to its bin). */
export const napiCli = () => path.join(path.dirname(require.resolve('@napi-rs/cli/package.json')), 'dist', 'cli.js')

/**
 * Why the faults addon cannot be built here (a skip reason), or false in a checkout: an installed
 * copy of the package (what test:targets runs) has no Cargo sources.
 * @type {string | false}
 */
export const FAULTS_UNAVAILABLE = existsSync(path.join(root, 'Cargo.toml'))
  ? false
  : 'an installed copy of the package has no sources to build the faults addon from; the checkout\'s npm test runs this test'

let built = false

/**
 * The faults addon's `.node` file, built (incrementally, debug profile) on the first call of
 * this process unless `npm test` already built it in this run (`DSH_FOLD_FAULTS_BUILT=1`).
 * @returns {string}
 */
export function faultsAddon() {
  const file = findNode()
  if (built || (file && process.env.DSH_FOLD_FAULTS_BUILT === '1')) return /** @type {string} */ (file)
  const r = spawnSync(process.execPath, [napiCli(), ...FAULTS_BUILD_ARGS], { cwd: root, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`building the faults addon failed (exit ${r.status}):\n${r.stderr.slice(-4000)}`)
  built = true
  const out = findNode()
  if (!out) throw new Error(`the faults build left no .node file in ${OUTPUT_DIR}`)
  return out
}

function findNode() {
  if (!existsSync(OUTPUT_DIR)) return undefined
  const name = `dsh-fold.${process.platform}-${process.arch}`
  const candidates = [`${name}-gnu.node`, `${name}-musl.node`, `${name}.node`, `${name}-msvc.node`].map((f) => path.join(OUTPUT_DIR, f))
  return candidates.find((f) => existsSync(f))
}

/**
 * The environment of a child process that runs the package on the faults addon with `faults`.
 * @param {string} faults comma-separated fault names (`sync-dir`, `panic:selectRegion`, ...)
 */
export function faultsEnv(faults) {
  return { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: faultsAddon(), DSH_FOLD_TEST_FAULTS: faults }
}
