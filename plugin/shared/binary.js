/**
 * @module plugin/shared/binary
 * Why the addon's binary does not load, in one message a user can act on. The published package
 * runs nothing at install (no install script: pnpm skips and warns about them), so this is where
 * a missing or broken binary is explained: when `plugin/shared/addon.js` cannot load the
 * generated loader (`index.js`), and in `dsh-fold doctor`'s addon check. It names this platform
 * the way the loader and the `dsh-fold-<platform>` packages do (e.g. `linux-arm64-musl`) and says
 * what to install:
 * - the platform package is installed but its binary does not load: the loader's reason;
 * - a published package whose platform package is missing: reinstall with optional dependencies
 *   if the release has one for this platform, else the platforms it has and the source route;
 * - a source checkout (Cargo.toml beside index.js) with no binary built: `npm install` there.
 */
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'

/** Whether this Linux runs on musl: glibc reports its version in the process report. */
function isMusl() {
  const report = /** @type {any} */ (process.report?.getReport?.())
  return !report?.header?.glibcVersionRuntime
}

/** This machine's napi platform name, as in `dsh-fold.<platform>.node` and `dsh-fold-<platform>`. */
export function platformName() {
  const { platform, arch } = process
  if (platform === 'linux') return arch === 'arm' ? `linux-arm-${isMusl() ? 'musleabihf' : 'gnueabihf'}` : `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'android' && arch === 'arm') return 'android-arm-eabi'
  return `${platform}-${arch}`
}

/** The first `…Error: …` line of a loader error and its causes. @param {unknown} error */
function firstReason(error) {
  /** @type {unknown[]} */
  const queue = [error]
  while (queue.length > 0) {
    const e = /** @type {any} */ (queue.shift())
    if (!e) continue
    const message = String(e.message ?? e)
    if (!/^Cannot find native binding/.test(message)) return message.split('\n')[0]
    queue.push(...(Array.isArray(e.cause) ? e.cause : [e.cause]))
  }
  return null
}

/**
 * The message for a loader error of the package at `root` (the folder of its package.json).
 * @param {string} root @param {unknown} error what requiring its `index.js` threw
 * @returns {string}
 */
export function explainMissingBinary(root, error) {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const platform = platformName()
  const platformPackage = `${pkg.name}-${platform}`
  const binary = `${pkg.napi?.binaryName ?? pkg.name}.${platform}.node`
  let installed = null
  try {
    installed = path.dirname(createRequire(path.join(root, 'package.json')).resolve(`${platformPackage}/package.json`))
  } catch {
    // not installed: below
  }
  if (installed) {
    let reason = null
    try {
      createRequire(path.join(root, 'package.json'))(installed)
    } catch (e) {
      reason = String(/** @type {Error} */ (e).message).split('\n')[0]
    }
    return `dsh-fold: the prebuilt binary for ${platform} (${platformPackage}, ${installed}) is installed but does not load: ${reason ?? firstReason(error) ?? 'unknown reason'}. Reinstall it (npm install ${platformPackage}@${pkg.version}); if it still fails, this system is older or different than the binary needs (Linux gnu binaries need glibc 2.17 or newer) — report it with the message above.`
  }
  if (existsSync(path.join(root, 'Cargo.toml'))) {
    return `dsh-fold: no binary built for ${platform} in this checkout (no ${binary} in ${root}): run npm install there (it builds one with the Rust toolchain) or npm run build.`
  }
  const published = Object.keys(pkg.optionalDependencies ?? {}).filter((n) => n.startsWith(`${pkg.name}-`)).map((n) => n.slice(pkg.name.length + 1))
  if (published.includes(platform)) {
    return `dsh-fold: no prebuilt binary for ${platform}: its package ${platformPackage} is not installed. It is an optional dependency, which npm and pnpm leave out when optional dependencies are omitted (--omit=optional, --no-optional), when a lock file made on another platform is reused, or when the registry does not have it: reinstall dsh-fold with optional dependencies (npm: delete node_modules and package-lock.json, then npm install).`
  }
  const list = published.length > 0 ? published.join(', ') : 'none in this package'
  return `dsh-fold: no prebuilt binary for ${platform} (npm package ${platformPackage}); prebuilt platforms: ${list}. Build it from source instead: clone the repository and run npm install there, which needs the Rust toolchain (https://rustup.rs).`
}
