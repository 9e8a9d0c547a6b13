// @ts-check
/**
 * @module scripts/rehearse
 * `npm run release:rehearse`: the release workflow's publish path run for real against a local
 * registry, then dsh-fold installed from it by name, as users will, in clean environments.
 *
 * 1. Binaries: built here with `npm run build:targets`' commands (scripts/build-targets.mjs: the
 *    Linux gnu and musl targets, x64 and arm64, and the two Apple targets, with zig), or taken as
 *    they are (`--built`: the root's `npm run build` binary for this machine, build:targets'
 *    outputs for the rest; `--artifacts DIR`: the workflow's downloaded artifacts). MSVC cannot
 *    be built here (scripts/targets.mjs says why): the run says so, and its package is missing
 *    from the registry, which is itself a check.
 * 2. A verdaccio (scripts/registry.mjs) on 127.0.0.1 with its config in
 *    `target/rehearsal/config.yaml` and its storage in `target/rehearsal/storage/`, started empty
 *    (a rehearsal publishes one release) and kept after the run: `npx verdaccio@6.8.0 --config
 *    target/rehearsal/config.yaml` serves it again.
 * 3. scripts/release.mjs `publishRelease`, the workflow's own publish path (`napi artifacts`,
 *    `napi prepublish -t npm`, `npm publish`, the version rules), with a throwaway token.
 * 4. scripts/release-checks.mjs: into a DSH profile by name + doctor + try, `npm install
 *    dsh-fold` on Node 20 and 22, each other platform's resolution (and arm64 under qemu, musl's
 *    loader), each missing platform's.
 * It prints a table, writes the transcript of every command (time, output) to
 * `target/rehearsal/transcript.md` and the figures to `target/rehearsal/report.json`, and exits
 * 1 when a step or check failed. Nothing else stays: the registry is stopped gracefully
 * (SIGTERM, then SIGKILL after a grace period), the temp folders removed, on success, failure,
 * Ctrl-C and SIGTERM.
 *
 *   npm run release:rehearse -- [--targets P,...] [--built | --artifacts DIR] [--serve] [--port N] [--no-checks]
 * --targets picks platforms by their `npm/<platform>/` names (default: every release target this
 * machine builds); --serve keeps the registry up after the checks and prints its URL until
 * Ctrl-C; --port fixes its port (default: a free one); --no-checks publishes only.
 */
import { spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

import { CROSS_DIR, readManifest } from './build-targets.mjs'
import { ROOT, checkoutManifest } from './pack.mjs'
import { startRegistry, pruneStorage, writeConfig, VERDACCIO_PIN } from './registry.mjs'
import { npmCheck, platformCheck, profileCheck, readPublished } from './release-checks.mjs'
import { ReleaseError, findArtifacts, publishRelease } from './release.mjs'
import { TARGETS, binaryName } from './targets.mjs'

/** The registry's folder (config, storage, log, transcript); DSH_FOLD_REHEARSAL_DIR moves it (tests). */
export const REHEARSAL_DIR = path.resolve(process.env.DSH_FOLD_REHEARSAL_DIR || path.join(ROOT, 'target', 'rehearsal'))

export const USAGE = `Usage: npm run release:rehearse -- [--targets P,...] [--built | --artifacts DIR] [--serve] [--port N] [--no-checks]
  Publish a release to a local verdaccio (${VERDACCIO_PIN}; target/rehearsal/config.yaml, storage
  target/rehearsal/storage/) with the release workflow's steps, then install dsh-fold by name from it
  in clean environments (a DSH profile + doctor + try; npm on Node 20 and 22; each platform).
  --targets P,...   platforms as in npm/<platform>/ (default: every release target this machine builds)
  --built           take the binaries already built (npm run build at the root, npm run build:targets)
  --artifacts DIR   take the binaries in DIR (the workflow's downloaded artifacts)
  --serve           keep the registry running after the checks; print its URL; stop with Ctrl-C
  --port N          the registry's port (default: a free one)
  --no-checks       publish only`

/** A usage error: exit 64. */
class UsageError extends Error {}

/** @param {string[]} argv */
export function parseOptions(argv) {
  let values
  try {
    ;({ values } = parseArgs({
      args: argv,
      options: {
        targets: { type: 'string' },
        built: { type: 'boolean' },
        artifacts: { type: 'string' },
        serve: { type: 'boolean' },
        port: { type: 'string' },
        'no-checks': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }))
  } catch (e) {
    throw new UsageError(/** @type {Error} */ (e).message)
  }
  const released = TARGETS.filter((t) => t.runner !== null)
  const targets = values.targets === undefined ? released : values.targets.split(',').filter(Boolean).map((name) => {
    const t = released.find((x) => x.platform === name)
    if (!t) throw new UsageError(`--targets: unknown platform ${name}; release platforms: ${released.map((x) => x.platform).join(', ')}`)
    return t
  })
  if (targets.length === 0) throw new UsageError('--targets names no platform')
  if (values.built && values.artifacts !== undefined) throw new UsageError('--built and --artifacts exclude each other')
  if (values.artifacts !== undefined && !(existsSync(values.artifacts) && statSync(values.artifacts).isDirectory())) throw new UsageError(`--artifacts: ${values.artifacts} is not a folder`)
  const port = values.port === undefined ? 0 : Number(values.port)
  if (!Number.isInteger(port) || port < 1 || port > 65535) { if (values.port !== undefined) throw new UsageError(`--port: ${values.port} is not a port number`) }
  return { help: Boolean(values.help), targets, source: values.artifacts !== undefined ? { artifacts: values.artifacts } : values.built ? 'built' : 'build', serve: Boolean(values.serve), port, checks: !values['no-checks'] }
}

/**
 * Runs `node scripts/build-targets.mjs PLATFORMS` as a child (so Ctrl-C reaches it and this
 * process stays responsive); resolves its exit code.
 * @param {string[]} platforms @param {AbortSignal} signal
 */
function buildTargetsChild(platforms, signal) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'build-targets.mjs'), ...platforms], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] })
    const stop = () => child.kill('SIGTERM')
    signal.addEventListener('abort', stop, { once: true })
    child.once('exit', (code) => {
      signal.removeEventListener('abort', stop)
      resolve(code ?? 1)
    })
  })
}

/**
 * Lays out one binary per platform as the workflow's download-artifact does:
 * `dir/bindings-<triple>/dsh-fold.<platform>.node`. Returns what it could not place and why.
 * @param {ReturnType<typeof parseOptions>} o @param {string} dir @param {AbortSignal} signal
 * @returns {Promise<Record<string, string>>} platform → why there is no binary
 */
async function gatherBinaries(o, dir, signal) {
  /** @type {Record<string, string>} */
  const absent = {}
  const place = (/** @type {import('./targets.mjs').Target} */ t, /** @type {string} */ file) => {
    mkdirSync(path.join(dir, `bindings-${t.triple}`), { recursive: true })
    copyFileSync(file, path.join(dir, `bindings-${t.triple}`, binaryName(t)))
  }
  if (typeof o.source === 'object') {
    const found = findArtifacts(o.source.artifacts)
    for (const t of o.targets) {
      const file = found.get(t.platform)
      if (file) place(t, file)
      else absent[t.platform] = `no ${binaryName(t)} under ${o.source.artifacts}`
    }
    return absent
  }
  const buildable = o.targets.filter((t) => !t.unbuildable)
  for (const t of o.targets) if (t.unbuildable) absent[t.platform] = `not buildable here: ${t.unbuildable}`
  if (o.source === 'build' && buildable.length > 0) {
    console.error(`[rehearse] building ${buildable.map((t) => t.platform).join(', ')} with npm run build:targets' commands`)
    await buildTargetsChild(buildable.map((t) => t.platform), signal)
    if (signal.aborted) throw new ReleaseError('interrupted')
  }
  const manifest = readManifest()
  for (const t of buildable) {
    const dev = path.join(ROOT, binaryName(t))
    const cross = path.join(CROSS_DIR, 'napi-out', t.platform, binaryName(t))
    const record = manifest[t.platform]
    if (o.source === 'built' && existsSync(dev)) place(t, dev)
    else if (record?.status === 'built' && existsSync(cross)) place(t, cross)
    else absent[t.platform] = record?.status === 'failed' ? `its build failed: ${record.reason}` : `not built (npm run build:targets ${t.platform})`
  }
  return absent
}

/** @param {import('./release-checks.mjs').Check[]} checks @param {object} head */
function transcript(checks, head) {
  const lines = ['# Release rehearsal: by-name installs from the rehearsal registry', '', '```json', JSON.stringify(head, null, 2), '```', '']
  for (const c of checks) {
    lines.push(`## ${c.name}: ${c.ok ? 'pass' : 'FAIL'}`, '', c.summary, '')
    for (const n of c.notes ?? []) lines.push(`- ${n}`)
    lines.push('')
    for (const cmd of c.commands) lines.push('```text', `$ ${cmd.cmd}    # ${cmd.seconds.toFixed(1)} s, exit ${cmd.code}`, cmd.output, '```', '')
  }
  return lines.join('\n')
}

/**
 * The whole rehearsal. @param {ReturnType<typeof parseOptions>} o @param {AbortSignal} signal
 * @returns {Promise<number>} the exit code
 */
export async function rehearse(o, signal) {
  const t0 = performance.now()
  const pkg = checkoutManifest()
  mkdirSync(REHEARSAL_DIR, { recursive: true })
  rmSync(path.join(REHEARSAL_DIR, 'storage'), { recursive: true, force: true })
  for (const f of ['verdaccio.log', 'transcript.md', 'report.json', 'htpasswd']) rmSync(path.join(REHEARSAL_DIR, f), { force: true })
  writeConfig(REHEARSAL_DIR)
  const scratch = mkdtempSync(path.join(tmpdir(), 'dsh-fold-rehearse-'))
  /** @type {import('./registry.mjs').Registry | null} */
  let registry = null
  try {
    const artifacts = path.join(scratch, 'artifacts')
    mkdirSync(artifacts)
    const absent = await gatherBinaries(o, artifacts, signal)
    for (const [p, why] of Object.entries(absent)) console.error(`[rehearse] ${p}: no binary — ${why}`)
    if (Object.keys(absent).length === o.targets.length) throw new ReleaseError('no binary to publish')
    registry = await startRegistry(REHEARSAL_DIR, { port: o.port })
    console.error(`[rehearse] verdaccio ${VERDACCIO_PIN} on ${registry.url} (config ${path.relative(ROOT, path.join(REHEARSAL_DIR, 'config.yaml'))})`)
    const published = await publishRelease({ artifacts, registry: registry.url, token: 'rehearsal', signal })
    const releasePlatforms = TARGETS.filter((t) => pkg.napi.targets.includes(t.triple)).map((t) => t.platform)
    const fetched = await readPublished(registry.url, releasePlatforms, mkdtempSync(path.join(scratch, 'published-')))
    if (fetched.rootHasLifecycleScripts) throw new ReleaseError('the published root has a lifecycle script')
    if (fetched.repository !== (published.repository?.url ?? null)) throw new ReleaseError(`the published root's repository.url is ${fetched.repository ?? 'none'}, the release staged ${published.repository?.url ?? 'none'}`)
    if (fetched.repositoryMismatch.length > 0) throw new ReleaseError(`platform packages whose repository.url is not the root's (${fetched.repository ?? 'none'}; npm refuses their provenance): ${fetched.repositoryMismatch.join(', ')}`)
    console.error(`[rehearse] published dsh-fold@${published.version} (${published.distTag}): ${Object.entries(fetched.sizes).map(([n, b]) => `${n} ${b.toLocaleString('en')} bytes`).join(', ')}`)
    /** @type {import('./release-checks.mjs').Check[]} */
    const checks = []
    if (o.checks) {
      const { ensureReadmeHost } = await import('../__test__/helpers/readme-host.mjs')
      const host = ensureReadmeHost()
      const run = async (/** @type {Promise<import('./release-checks.mjs').Check>} */ p) => {
        if (signal.aborted) throw new ReleaseError('interrupted')
        const c = await p
        console.error(`[rehearse] ${c.ok ? 'pass' : 'FAIL'} ${c.name}: ${c.summary}`)
        checks.push(c)
      }
      if (fetched.binaries['linux-x64-gnu'] && process.platform === 'linux' && process.arch === 'x64') {
        await run(profileCheck(fetched, host, signal))
        const node20 = Number(process.versions.node.split('.')[0]) === 20 ? process.execPath : null
        if (node20) await run(npmCheck(fetched, 'npm-node20', node20, signal))
        await run(npmCheck(fetched, 'npm-node22', host.node22, signal))
      }
      for (const p of releasePlatforms.filter((x) => x !== 'linux-x64-gnu')) await run(platformCheck(fetched, p, signal))
    }
    const head = {
      version: published.version,
      distTag: published.distTag,
      registry: registry.url,
      published: Object.fromEntries(Object.entries(fetched.sizes).map(([n, b]) => [n, b])),
      missing: Object.fromEntries(published.missing.map((p) => [p, absent[p] ?? 'not picked (--targets)'])),
      steps: published.steps.map((s) => `${s.command} (${s.seconds.toFixed(1)} s)`),
      seconds: Math.round((performance.now() - t0) / 1000),
    }
    writeFileSync(path.join(REHEARSAL_DIR, 'transcript.md'), transcript(checks, head))
    writeFileSync(path.join(REHEARSAL_DIR, 'report.json'), `${JSON.stringify({ ...head, checks: checks.map((c) => ({ name: c.name, ok: c.ok, summary: c.summary, notes: c.notes, commands: c.commands.map((x) => ({ cmd: x.cmd, seconds: Number(x.seconds.toFixed(2)), code: x.code })) })) }, null, 2)}\n`)
    console.log(`\nrelease rehearsal of dsh-fold@${published.version} on ${registry.url}`)
    console.log('| package | tarball bytes |\n| --- | --- |')
    for (const [n, b] of Object.entries(fetched.sizes)) console.log(`| ${n} | ${b.toLocaleString('en')} |`)
    for (const [p, why] of Object.entries(head.missing)) console.log(`| dsh-fold-${p} | not published: ${why} |`)
    if (checks.length > 0) {
      console.log('\n| check | result |\n| --- | --- |')
      for (const c of checks) console.log(`| ${c.name} | ${c.ok ? 'pass' : 'FAIL'}: ${c.summary.split('\n')[0]} |`)
    }
    console.log(`\ntranscript: ${path.relative(process.cwd(), path.join(REHEARSAL_DIR, 'transcript.md'))}; ${head.seconds} s in all`)
    const failed = checks.filter((c) => !c.ok)
    for (const c of failed) console.error(`\n${c.name} FAILED:\n${c.summary}`)
    if (o.serve && failed.length === 0) {
      console.log(`\nserving the rehearsal registry on ${registry.url} until Ctrl-C; install from it with\n  npm_config_registry=${registry.url} dsh plugin --profile headless add dsh-fold`)
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
      return 0
    }
    return failed.length > 0 ? 1 : 0
  } finally {
    const stopped = await registry?.stop()
    if (stopped) console.error(`[rehearse] verdaccio stopped: ${stopped.text}`)
    pruneStorage(REHEARSAL_DIR)
    rmSync(scratch, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  /** @type {ReturnType<typeof parseOptions>} */
  let o
  try {
    o = parseOptions(process.argv.slice(2))
  } catch (e) {
    console.error(`release:rehearse: ${/** @type {Error} */ (e).message}\n${USAGE}`)
    process.exit(64)
  }
  if (o.help) {
    console.log(USAGE)
    process.exit(0)
  }
  const controller = new AbortController()
  let signalled = ''
  for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
    process.on(sig, () => {
      if (signalled && !o.serve) return
      signalled = sig
      if (!o.serve) console.error(`\n[rehearse] ${sig}: stopping the registry and removing temp folders`)
      controller.abort()
    })
  }
  rehearse(o, controller.signal).then(
    (code) => process.exit(signalled && !o.serve ? 130 : code),
    (e) => {
      console.error(signalled ? '[rehearse] interrupted' : e instanceof ReleaseError ? `release:rehearse: ${e.message}` : /** @type {Error} */ (e).stack)
      process.exit(signalled ? 130 : e instanceof ReleaseError ? 1 : 70)
    },
  )
}
