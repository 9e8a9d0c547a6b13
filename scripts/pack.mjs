// @ts-check
/**
 * @module scripts/pack
 * Packs what a user installs: the `dsh-fold` root package and one napi platform package, as
 * `npm pack` tarballs. It builds nothing: the platform binary must already exist at the repo
 * root (`napi build --platform --release` writes `dsh-fold.<platform>.node` there); it is
 * copied into `npm/<platform>/` (ignored by git, as `napi artifacts` does in CI) and both
 * packages are packed into `outDir`.
 *
 * Before returning it checks each tarball's file list, so a broken `files`/`exports` field
 * fails here and not on a user's machine:
 * - root: `package.json`, `index.js`, `index.d.ts`, `cordis.patch.yml`, `types/`, `plugin/`,
 *   every file `exports`, `main`, `types`, `bin` and `dsh.bundle.patch` name, and the file the
 *   `install` script runs; no `.node` binary, no Rust sources or build outputs;
 * - platform: `package.json` named `dsh-fold-<platform>` (what the generated `index.js`
 *   loader `require`s) at the root's version, and its `main` binary.
 *
 * `verifyInstall(tarballs)` then installs both tarballs into an empty temp project the way
 * npm users do (lifecycle scripts ON, so the package's `install` script runs) with a PATH that
 * holds only `node` and `npm` — no cargo, no rustc — and loads `dsh-fold` there: every module
 * the load pulls in, the `.node` binary included, must come from that project's node_modules.
 * Peers (the DSH packages the plugin imports) are the host's; `--legacy-peer-deps` leaves them out.
 *
 *   npm run pack [-- outDir] [--platform linux-x64-gnu] [--verify]
 *   (node scripts/pack.mjs ...)
 * writes the two tarballs to `outDir` (default `target/pack/`, emptied of older dsh-fold
 * tarballs first, so `./target/pack/*.tgz` names exactly these two), prints
 * `{"root": "<tgz>", "platform": "<tgz>"}` (absolute paths) on stdout and, on stderr, the
 * command that installs them into a DSH profile. The platform defaults to the binary built at
 * the repository root for this machine (`dsh-fold.<platform>.node`).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..')

/**
 * `npm pack` one package directory into `outDir`.
 * @param {string} dir @param {string} outDir
 * @returns {{tarball: string, files: string[], name: string, version: string}}
 */
function npmPack(dir, outDir) {
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
  }
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
  const install = /^node\s+(\S+\.c?js)\b/.exec(pkg.scripts?.install ?? '')
  if (install) files.add(rel(install[1]))
  return files
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
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
  const binaryName = pkg.napi?.binaryName ?? pkg.name
  const binary = `${binaryName}.${platform}.node`
  const built = path.resolve(from ?? path.join(ROOT, binary))
  if (!existsSync(built)) throw new Error(`pack: ${built} is missing; run \`napi build --platform --release\` first (pack builds nothing)`)
  const platformDir = path.join(ROOT, 'npm', platform)
  const platformPkg = JSON.parse(readFileSync(path.join(platformDir, 'package.json'), 'utf8'))
  const newest = ['src', 'crates/fold-core/src']
    .flatMap((d) => execFileSync('find', [path.join(ROOT, d), '-name', '*.rs', '-newer', built], { encoding: 'utf8' }).split('\n'))
    .filter(Boolean)
  if (newest.length > 0) process.stderr.write(`[pack] warning: ${binary} is older than ${newest.length} Rust source file(s), e.g. ${newest[0]}\n`)
  if (built !== path.join(platformDir, binary)) copyFileSync(built, path.join(platformDir, binary))

  const problems = []
  const root = npmPack(ROOT, outDir)
  const rootFiles = new Set(root.files)
  for (const f of promisedFiles(pkg)) if (!rootFiles.has(f)) problems.push(`root tarball lacks ${f}`)
  for (const dir of ['plugin/', 'types/']) if (!root.files.some((f) => f.startsWith(dir))) problems.push(`root tarball lacks ${dir}`)
  for (const f of root.files) {
    if (/\.node$|\.rs$|^Cargo\.(toml|lock)$|^(src|crates|target[^/]*|npm|__test__|bench|\.e2e-cache)\//.test(f)) problems.push(`root tarball must not ship ${f}`)
  }

  const plat = npmPack(platformDir, outDir)
  const expected = `${pkg.name}-${platform}`
  if (plat.name !== expected) problems.push(`platform package is named ${plat.name}; the loader requires ${expected}`)
  if (plat.version !== pkg.version) problems.push(`platform package is ${plat.version}, the root ${pkg.version}`)
  if (rel(platformPkg.main ?? '') !== binary) problems.push(`platform package main is ${platformPkg.main}, not ${binary}`)
  if (!plat.files.includes(binary)) problems.push(`platform tarball lacks ${binary}`)
  const loader = readFileSync(path.join(ROOT, 'index.js'), 'utf8')
  if (!loader.includes(`require('${expected}')`)) problems.push(`index.js never requires ${expected}`)

  if (problems.length > 0) throw new Error(`pack: the tarballs are not what a user needs:\n- ${problems.join('\n- ')}`)
  process.stderr.write(`[pack] ${path.basename(root.tarball)} (${root.files.length} files), ${path.basename(plat.tarball)} (${(statSync(plat.tarball).size / 1024).toFixed(0)} KiB)\n`)
  return { root: root.tarball, platform: plat.tarball }
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
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
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
