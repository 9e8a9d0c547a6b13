/**
 * @module browser
 *
 * Contract: `ensureChromium()` finds or installs a headless-capable Chromium and returns
 * `{executablePath, installedMs?, how}` or `{skip: reason}` — it never throws for a
 * machine that cannot have a browser; the caller skips with that reason, printed. Order:
 * `DSH_E2E_CHROMIUM` (an explicit binary), Debian's `/usr/bin/chromium`, then
 * `apt-get install chromium fonts-noto-cjk` (only when running as root, never through sudo, and
 * saying so first; `apt-get update` first; waits up to 10 min for the dpkg lock another process
 * holds; as any other user the skip reason is the command that enables the suite), and only when apt
 * cannot install it, another Chromium-family binary already on the machine (an Ubuntu CI
 * runner ships Google Chrome; Ubuntu's `chromium` package is a snap stub that cannot install
 * in a container). Progress and the cold install time go to stderr.
 *
 * `launchChromium(executablePath)` starts it headless through `playwright-core` (from npm,
 * no downloaded browser) with the flags a sandboxed CI machine needs, and returns the
 * Playwright `Browser`.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'

/** Flags for a root user in a container: no sandbox, no GPU, no /dev/shm, nothing phoning home. */
export const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run',
]
const DEBIAN_CHROMIUM = '/usr/bin/chromium'
const OTHER_CHROMIUMS = ['/usr/bin/chromium-browser', '/usr/bin/google-chrome-stable', '/usr/bin/google-chrome']

const log = (/** @type {string} */ msg) => process.stderr.write(`[browser] ${msg}\n`)

/** A binary that runs (`--version` answers); snap stubs and broken installs do not count. */
function works (/** @type {string} */ bin) {
  if (!existsSync(bin)) return false
  const r = spawnSync(bin, ['--version', ...CHROMIUM_ARGS.slice(0, 1)], { encoding: 'utf8', timeout: 30_000 })
  return r.status === 0 && /chrom/i.test(r.stdout)
}

const INSTALL = 'sudo apt-get install -y --no-install-recommends chromium fonts-noto-cjk'

/** Run apt-get, as root only; returns the failure text or undefined. */
function aptGet (/** @type {string[]} */ args) {
  if (process.getuid?.() !== 0) return `Chromium is not installed and only root may install it; to enable the browser suite: ${INSTALL}`
  const cmd = 'apt-get'
  const argv = ['-o', 'DPkg::Lock::Timeout=600', ...args]
  const r = spawnSync(cmd, argv, {
    encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20,
  })
  if (r.error) return `${cmd}: ${r.error.message}`
  if (r.status !== 0) return `apt-get ${args.join(' ')} exited ${r.status}: ${(r.stderr || r.stdout).trim().split('\n').slice(-5).join(' | ')}`
}

/** @returns {{executablePath: string, how: string, installedMs?: number} | {skip: string}} */
export function ensureChromium () {
  const explicit = process.env.DSH_E2E_CHROMIUM
  if (explicit) return works(explicit) ? { executablePath: explicit, how: 'DSH_E2E_CHROMIUM' } : { skip: `DSH_E2E_CHROMIUM=${explicit} does not run` }
  if (works(DEBIAN_CHROMIUM)) return { executablePath: DEBIAN_CHROMIUM, how: 'already installed' }
  if (process.platform !== 'linux') return { skip: `no ${DEBIAN_CHROMIUM} and apt-get is Linux-only (platform ${process.platform})` }
  let why
  if (spawnSync('apt-get', ['--version']).status !== 0) why = 'apt-get is not available'
  if (!why) {
    log(process.getuid?.() === 0 ? 'running as root: installing chromium and fonts-noto-cjk with apt-get (after apt-get update; once per machine)' : 'chromium is missing and this user is not root')
    const t0 = performance.now()
    why = aptGet(['update', '-q']) ?? aptGet(['install', '-y', '-q', '--no-install-recommends', 'chromium', 'fonts-noto-cjk'])
    const installedMs = Math.round(performance.now() - t0)
    if (!why && works(DEBIAN_CHROMIUM)) {
      log(`chromium installed in ${(installedMs / 1000).toFixed(1)} s`)
      return { executablePath: DEBIAN_CHROMIUM, how: 'installed with apt-get', installedMs }
    }
    why ??= `apt-get reported success but ${DEBIAN_CHROMIUM} does not run`
  }
  const other = OTHER_CHROMIUMS.find(works)
  if (other) {
    log(`Debian chromium unavailable (${why}); using ${other}`)
    return { executablePath: other, how: `fallback: ${other} (${why})` }
  }
  return { skip: `Chromium cannot be installed on this machine: ${why}` }
}

/** @param {string} executablePath @returns {Promise<import('playwright-core').Browser>} */
export async function launchChromium (executablePath) {
  const { chromium } = await import('playwright-core')
  return chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS })
}

/** The installed browser's version line (for the test log). @param {string} executablePath */
export const chromiumVersion = (executablePath) => execFileSync(executablePath, ['--version', '--no-sandbox'], { encoding: 'utf8' }).trim()
