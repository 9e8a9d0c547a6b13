// @ts-check
/**
 * @module scripts/pack
 * The user's package: what `npm install dsh-fold` gets, made from this checkout the one way the
 * release, the rehearsal (scripts/rehearse.mjs) and `npm run pack` all make it.
 *
 * The checkout is not the user's package. Its package.json is `private` (a plain `npm publish`
 * in the checkout is refused) and keeps the checkout's build route: its `install` script builds
 * the addon from source when no binary loads (scripts/install.js). `stageRoot(dir)` writes the
 * user's package into `dir`: exactly the files `npm pack` of the checkout lists (its `files`
 * field), and a package.json made by `userManifest` — no `scripts` at all (pnpm, which
 * `dsh plugin` drives, warns about a dependency's install scripts and npm 11 lists even a
 * `prepare`), no `devDependencies`, not `private`, and `optionalDependencies` naming one
 * `dsh-fold-<platform>` package per `napi.targets` entry at the root's version, as
 * `napi prepublish` writes them. `stagePlatform(dir, platform, binary)` writes one platform
 * package: `npm/<platform>/`'s manifest and README with the binary, at the root's version.
 *
 * Checks, before anything is packed (so a broken `files`/`exports` field fails here, not on a
 * user's machine), `rootProblems(files, manifest)`:
 * - the root lists every file `exports`, `main`, `types`, `bin` and `dsh.bundle.patch` name,
 *   `plugin/` and `types/`; nothing under `__test__`, `bench`, `crates`, `src`, `target*`,
 *   `npm`, fixtures or corpora, no `.node` binary, no Rust sources or Cargo files;
 * - its manifest has no lifecycle script and no devDependencies;
 * - the tarball stays within `ROOT_TARBALL_BUDGET` bytes (checked on the packed file);
 * - a platform package is named `dsh-fold-<platform>` (what the generated `index.js` loader
 *   `require`s), at the root's version, and holds its one binary as `main`.
 *
 * `pack(outDir, {platform, binary})` packs the root and one platform package into `outDir`;
 * `verifyInstall(tarballs)` installs both into an empty temp project the way npm users do
 * (lifecycle scripts ON) with a PATH of `node`, `npm` and `sh` only — no cargo, no rustc — and
 * loads `dsh-fold` there: every module the load pulls in, the `.node` binary included, must come
 * from that project's node_modules.
 *
 *   npm run pack [-- outDir] [--platform linux-x64-gnu] [--verify]
 *   (node scripts/pack.mjs ...)
 * writes the two tarballs to `outDir` (default `target/pack/`, emptied of older dsh-fold
 * tarballs first, so `./target/pack/*.tgz` names exactly these two), prints
 * `{"root": "<tgz>", "platform": "<tgz>"}` (absolute paths) on stdout and, on stderr, their sizes
 * and the command that installs them into a DSH profile. The platform defaults to the binary
 * built at the repository root for this machine (`dsh-fold.<platform>.node`). Staging folders
 * go to a temp folder removed before it returns.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { findTarget } from './targets.mjs'

export const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

/**
 * The root tarball's size budget, in bytes: 300 KiB, against 285,763 bytes when it was set
 * (round 4); 340 KiB since every text the model reads got its Chinese twin and its own module
 * (issue 32: about 28,000 bytes more, 334,000 in all) and `try --compaction` its run logs and the
 * transcript's compaction lines (issue 30: about 4,000 bytes); 384 KiB since the release page
 * (docs/releasing.md, en and zh: every docs/*.md ships) and doctor's registry check, with the
 * rest of round 4's docs and plugin (issue 28's hardening among them: closeStore, try's Ctrl-C, the messages and their docs), made 358,629 bytes (issue 29). A file that should not ship
 * (a fixture, a corpus, a build output) shows up here before a user downloads it; growth that is
 * meant raises it, in the same commit.
 */
export const ROOT_TARBALL_BUDGET = 384 * 1024

/** What no file of the root package may be: tests, benches, sources, build outputs, data. */
const NOT_FOR_USERS = /(^|\/)(__test__|bench|crates|src|target[^/]*|npm|fixtures?|corpora|corpus|node_modules|\.e2e-cache)\/|\.node$|\.rs$|(^|\/)Cargo\.(toml|lock)$/
/** npm's lifecycle scripts: none may be in the user's manifest (pnpm and npm flag them). */
const LIFECYCLE = ['preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'prepare', 'postprepare', 'prepack', 'postpack']

/** @returns {any} the checkout's package.json */
export const checkoutManifest = () => JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

/**
 * The `optionalDependencies` the release's root declares: one platform package per
 * `napi.targets` entry, at the root's version (what `napi prepublish` writes).
 * @param {any} pkg a manifest with `name`, `version`, `napi.targets`
 * @param {string[]} [triples] default: every `napi.targets` entry
 */
export function platformDependencies(pkg, triples = pkg.napi.targets) {
  return Object.fromEntries(triples.map((t) => [`${pkg.name}-${findTarget(t).platform}`, pkg.version]))
}

/** The user's manifest made from the checkout's. @param {any} pkg */
export function userManifest(pkg) {
  const { scripts, devDependencies, private: isPrivate, ...rest } = pkg
  void scripts, devDependencies, isPrivate
  return { ...rest, optionalDependencies: { ...rest.optionalDependencies, ...platformDependencies(pkg) } }
}

/** The files `npm pack` would put in the checkout's root tarball (its `files` field). */
export function rootFiles() {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  return /** @type {{path: string, size: number}[]} */ (JSON.parse(out)[0].files)
}

/** @param {string} p a manifest path like `./plugin/x.js` */
const rel = (p) => path.posix.normalize(p).replace(/^\.\//, '')

/** Every file the root manifest promises to users. @param {any} pkg */
function promisedFiles(pkg) {
  /** @type {Set<string>} */
  const files = new Set(['package.json', 'index.js', 'index.d.ts', 'cordis.patch.yml'])
  /** @param {unknown} target */
  const walk = (target) => {
    if (typeof target === 'string') files.add(rel(target))
    else if (target && typeof target === 'object') Object.values(target).forEach(walk)
  }
  walk(pkg.exports)
  if (pkg.main) files.add(rel(pkg.main))
  if (pkg.types) files.add(rel(pkg.types))
  if (pkg.dsh?.bundle?.patch) files.add(rel(pkg.dsh.bundle.patch))
  walk(pkg.bin)
  return files
}

/**
 * What is wrong with a root package made of `files` and `manifest` (empty: nothing).
 * @param {string[]} files @param {any} manifest
 */
export function rootProblems(files, manifest) {
  const problems = []
  const have = new Set(files)
  for (const f of promisedFiles(manifest)) if (!have.has(f)) problems.push(`the root lacks ${f}`)
  for (const dir of ['plugin/', 'types/']) if (!files.some((f) => f.startsWith(dir))) problems.push(`the root lacks ${dir}`)
  for (const f of files) if (NOT_FOR_USERS.test(f)) problems.push(`the root must not ship ${f}`)
  const scripts = Object.keys(manifest.scripts ?? {}).filter((s) => LIFECYCLE.includes(s))
  if (scripts.length > 0) problems.push(`the root's manifest has lifecycle scripts (${scripts.join(', ')}): pnpm skips and warns about them, npm lists them`)
  if (manifest.devDependencies) problems.push("the root's manifest has devDependencies")
  if (manifest.private) problems.push("the root's manifest is private")
  return problems
}

/**
 * Writes the user's root package into `dir` (created; must be empty or missing).
 * @param {string} dir @returns {{dir: string, files: string[], manifest: any}}
 */
export function stageRoot(dir) {
  const manifest = userManifest(checkoutManifest())
  const files = rootFiles().map((f) => f.path)
  const problems = rootProblems(files, manifest)
  if (problems.length > 0) throw new Error(`pack: the root package is not what a user needs:\n- ${problems.join('\n- ')}`)
  mkdirSync(dir, { recursive: true })
  for (const f of files) {
    if (f === 'package.json') continue
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true })
    copyFileSync(path.join(ROOT, f), path.join(dir, f))
  }
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  return { dir, files, manifest }
}

/**
 * Writes platform package `platform` (e.g. `linux-x64-gnu`) into `dir` with `binary` as its
 * file, at the root's version; an empty `binary` leaves it out (napi artifacts puts it).
 * `fields` are added to its manifest (the release's `repository`).
 * @param {string} dir @param {string} platform @param {string | null} binary @param {object} [fields]
 */
export function stagePlatform(dir, platform, binary, fields = {}) {
  const pkg = checkoutManifest()
  const from = path.join(ROOT, 'npm', platform)
  if (!existsSync(path.join(from, 'package.json'))) throw new Error(`pack: no platform package npm/${platform}/`)
  const manifest = JSON.parse(readFileSync(path.join(from, 'package.json'), 'utf8'))
  const name = `${pkg.napi?.binaryName ?? pkg.name}.${platform}.node`
  const problems = []
  if (manifest.name !== `${pkg.name}-${platform}`) problems.push(`npm/${platform} is named ${manifest.name}; the loader requires ${pkg.name}-${platform}`)
  if (rel(manifest.main ?? '') !== name) problems.push(`npm/${platform}'s main is ${manifest.main}, not ${name}`)
  if (JSON.stringify(manifest.files) !== JSON.stringify([name])) problems.push(`npm/${platform}'s files are ${JSON.stringify(manifest.files)}, not just ${name}`)
  if (problems.length > 0) throw new Error(`pack: ${problems.join('; ')}`)
  mkdirSync(dir, { recursive: true })
  for (const f of readdirSync(from)) if (!f.endsWith('.node') && f !== 'package.json') cpSync(path.join(from, f), path.join(dir, f))
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({ ...manifest, ...fields, version: pkg.version }, null, 2)}\n`)
  if (binary) copyFileSync(binary, path.join(dir, name))
  return dir
}

/**
 * `npm pack` one package directory into `outDir`.
 * @param {string} dir @param {string} outDir
 * @returns {{tarball: string, files: string[], name: string, version: string, size: number}}
 */
export function npmPack(dir, outDir) {
  // --ignore-scripts: packing must not run a lifecycle script that could build or fetch.
  const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', outDir], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const [info] = JSON.parse(out)
  return {
    tarball: path.join(outDir, info.filename),
    files: info.files.map((/** @type {{path: string}} */ f) => f.path),
    name: info.name,
    version: info.version,
    size: info.size,
  }
}

/**
 * @param {string} outDir where the tarballs go (created if missing)
 * @param {{platform?: string, binary?: string}} [options] the npm platform folder, e.g.
 *   `linux-x64-gnu`, and the binary to ship in it (default: the build at the repo root)
 * @returns {{root: string, platform: string}} absolute tarball paths
 */
export function pack(outDir, { platform = builtPlatform() ?? 'linux-x64-gnu', binary: from } = {}) {
  outDir = path.resolve(outDir)
  mkdirSync(outDir, { recursive: true })
  const pkg = checkoutManifest()
  const binary = `${pkg.napi?.binaryName ?? pkg.name}.${platform}.node`
  const built = path.resolve(from ?? path.join(ROOT, binary))
  if (!existsSync(built)) throw new Error(`pack: ${built} is missing; run \`napi build --platform --release\` first (pack builds nothing)`)
  const newest = ['src', 'crates/fold-core/src']
    .flatMap((d) => execFileSync('find', [path.join(ROOT, d), '-name', '*.rs', '-newer', built], { encoding: 'utf8' }).split('\n'))
    .filter(Boolean)
  if (newest.length > 0) process.stderr.write(`[pack] warning: ${binary} is older than ${newest.length} Rust source file(s), e.g. ${newest[0]}\n`)

  const stage = mkdtempSync(path.join(tmpdir(), 'dsh-fold-pack-'))
  try {
    const root = npmPack(stageRoot(path.join(stage, 'root')).dir, outDir)
    const plat = npmPack(stagePlatform(path.join(stage, platform), platform, built), outDir)
    const problems = []
    if (root.size > ROOT_TARBALL_BUDGET) problems.push(`the root tarball is ${root.size.toLocaleString('en')} bytes, over its budget of ${ROOT_TARBALL_BUDGET.toLocaleString('en')} (scripts/pack.mjs ROOT_TARBALL_BUDGET)`)
    if (!plat.files.includes(binary)) problems.push(`the platform tarball lacks ${binary}`)
    const loader = readFileSync(path.join(ROOT, 'index.js'), 'utf8')
    if (!loader.includes(`require('${plat.name}')`)) problems.push(`index.js never requires ${plat.name}`)
    if (problems.length > 0) throw new Error(`pack: the tarballs are not what a user needs:\n- ${problems.join('\n- ')}`)
    process.stderr.write(`[pack] ${path.basename(root.tarball)} (${root.files.length} files, ${root.size.toLocaleString('en')} bytes), ${path.basename(plat.tarball)} (${plat.size.toLocaleString('en')} bytes)\n`)
    return { root: root.tarball, platform: plat.tarball }
  } finally {
    rmSync(stage, { recursive: true, force: true })
  }
}

/**
 * Installs `tarballs` into a fresh temp project without any Rust toolchain on PATH and loads
 * `dsh-fold` from it. Throws with the install's output when it fails or loads anything from
 * outside the project.
 * @param {{root: string, platform: string}} tarballs
 * @returns {{dir: string, binary: string, ms: number}} the project and the binary that loaded
 */
export function verifyInstall(tarballs) {
  const t0 = performance.now()
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'dsh-fold-install-')))
  try {
    // A PATH with sh, node and npm only: the install cannot reach cargo/rustc even if it tried.
    const bin = path.join(dir, '.bin')
    mkdirSync(bin)
    const npmCli = realpathSync(execFileSync(process.platform === 'win32' ? 'where' : 'which', ['npm'], { encoding: 'utf8' }).split('\n')[0].trim())
    symlinkSync(process.execPath, path.join(bin, 'node'))
    symlinkSync(npmCli, path.join(bin, 'npm'))
    symlinkSync('/bin/sh', path.join(bin, 'sh')) // npm runs lifecycle scripts with `sh -c`
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(PATH|NODE_PATH|CARGO.*|RUSTUP.*|npm_.*|NODE_TEST_CONTEXT)$/i.test(k)))
    env.PATH = bin
    const project = path.join(dir, 'project')
    mkdirSync(project)
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'dsh-fold-install-check', private: true }))
    const probe = spawnSync('sh', ['-c', 'command -v cargo || command -v rustc'], { env, encoding: 'utf8' })
    if (probe.status === 0) throw new Error(`verifyInstall: a Rust toolchain is still on the stripped PATH: ${probe.stdout.trim()}`)
    const install = spawnSync(path.join(bin, 'npm'), ['install', '--legacy-peer-deps', '--no-audit', '--no-fund', '--foreground-scripts', tarballs.platform, tarballs.root], {
      cwd: project,
      env,
      encoding: 'utf8',
    })
    if (install.status !== 0) throw new Error(`verifyInstall: npm install of the tarballs failed (exit ${install.status}):\n${install.stdout}\n${install.stderr}`)
    const load = spawnSync(
      process.execPath,
      ['-e', "const m = require('dsh-fold'); process.stdout.write(JSON.stringify({ target: m.__napiBindingTarget, codes: m.foldErrorCodes(), files: Object.keys(require.cache) }))"],
      { cwd: project, env, encoding: 'utf8' },
    )
    if (load.status !== 0) throw new Error(`verifyInstall: require('dsh-fold') failed in the installed project:\n${load.stderr}`)
    const { target, codes, files } = JSON.parse(load.stdout)
    const modules = path.join(project, 'node_modules') + path.sep
    const outside = files.filter((/** @type {string} */ f) => !f.startsWith(modules))
    const binary = files.find((/** @type {string} */ f) => f.endsWith('.node'))
    const problems = [
      ...(outside.length > 0 ? [`loaded from outside the install: ${outside.join(', ')}`] : []),
      ...(target !== 'native' ? [`binding target is ${target}, not native`] : []),
      ...(!binary?.includes(`${path.sep}dsh-fold-`) ? [`the binary did not come from a platform package: ${binary}`] : []),
      ...(!codes.includes('NO_CHECKPOINT') ? ['foldErrorCodes() lacks NO_CHECKPOINT'] : []),
    ]
    if (problems.length > 0) throw new Error(`verifyInstall:\n- ${problems.join('\n- ')}`)
    const ms = Math.round(performance.now() - t0)
    process.stderr.write(`[pack] installed without a Rust toolchain and loaded ${path.relative(project, binary)} in ${ms} ms\n`)
    return { dir, binary, ms }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The platform folder of the binary built at the repository root for this machine, e.g.
 * `linux-x64-gnu` for `dsh-fold.linux-x64-gnu.node`.
 * @returns {string | undefined}
 */
export function builtPlatform() {
  const pkg = checkoutManifest()
  const prefix = `${pkg.napi?.binaryName ?? pkg.name}.`
  const built = readdirSync(ROOT).filter((f) => f.startsWith(prefix) && f.endsWith('.node')).map((f) => f.slice(prefix.length, -'.node'.length))
  return built.find((p) => p.startsWith(`${process.platform}-${process.arch}`)) ?? built[0]
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2)
  const at = args.indexOf('--platform')
  const platform = at >= 0 ? args.splice(at, 2)[1] : builtPlatform()
  const verify = args.includes('--verify')
  try {
    const given = args.filter((a) => a !== '--verify')[0]
    const outDir = path.resolve(given ?? path.join(ROOT, 'target', 'pack'))
    // Older dsh-fold tarballs would match the install command's glob too.
    if (existsSync(outDir)) for (const f of readdirSync(outDir)) if (/^dsh-fold-.*\.tgz$/.test(f)) rmSync(path.join(outDir, f))
    const tarballs = pack(outDir, { platform })
    if (verify) verifyInstall(tarballs)
    console.log(JSON.stringify(tarballs))
    const rel = path.relative(process.cwd(), outDir) || '.'
    process.stderr.write(`[pack] install them into a DSH profile: dsh plugin --profile headless add ${rel.startsWith('.') || path.isAbsolute(rel) ? rel : `./${rel}`}/*.tgz\n`)
  } catch (e) {
    console.error(/** @type {Error} */ (e).message)
    process.exit(1)
  }
}
