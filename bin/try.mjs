// @ts-check
/**
 * @module bin/try
 * `dsh-fold try [--profile NAME] [--dsh-home DIR] [--patch FILE] [--cwd DIR] [--compaction] [--keep] [--json] ["TASK"]`:
 * one task in a real DeepSeek Harness host, headless, with dsh-fold's rows, printing what the
 * model did and each fold as the session's own log records them.
 *
 * The host: the one the user installed (bin/host/find.mjs), else the pinned
 * `@deepseek-ai/dsh@0.1.0-rc.8` with a Node 22, installed into dsh-fold's cache on first use
 * (bin/host/install.mjs). It is launched composed as the `dsh` bin composes a profile, minus
 * the user-patch watchers that stop every rc.8 launch (bin/host/boot.mjs says why).
 *
 * Where it runs: without `--profile`/`--dsh-home`, a temporary DSH home (its `headless` profile
 * created by the host, dsh-fold installed into it from this copy's own packed tarballs, as
 * `dsh plugin add` would), removed at the end unless `--keep`; nothing under `~/.dsh` or the
 * user's `$DSH_HOME` is read or written. With them, that DSH home and profile (default
 * `headless`), which must already have the dsh-fold bundle: `try` installs nothing there.
 *
 * The model: with `DEEPSEEK_API_KEY` set, DeepSeek's (the user's key and `DEEPSEEK_BASE_URL`),
 * on TASK in `--cwd` (default: the current directory), with the user's permission mode. Without
 * one, the scripted model of bin/try-agent.mjs on 127.0.0.1, in a small workspace it writes
 * (checkpoint → explore → rewind → recall; block mode's programs when the wire offers only
 * `block_run_code`), with the rewind's report written by dsh-fold's extractive generator.
 *
 * `--compaction`: dsh-fold/compaction for this run (a patch overlay: `compaction-basic` disabled,
 * the backend's row inserted, unless the profile already mounts it; no profile file is written)
 * and the DeepSeek adapter's context window set to `COMPACTION_WINDOW` (bin/try-agent.mjs), so
 * the context fills within a short task; the scripted model surveys the workspace's run logs
 * first, which compacts, and recalls a line from that compaction before it answers. The
 * transcript prints each compaction as it prints each fold (which backend, why, the range, the
 * chars it replaced and the checkpoint's, model calls, time: bin/transcript.mjs).
 *
 * Ctrl-C (SIGINT, or SIGTERM): the host runs in its own process group, so the terminal's signal
 * reaches `try` only; `try` passes it on as SIGINT to the host's group and waits, at most
 * `HOST_SHUTDOWN_GRACE_MS`, for the host's own shutdown (which writes out the session log: with
 * `--profile`/`--dsh-home` that is the user's), then kills what is left; the temporary folders
 * are removed only after the host has exited. A second Ctrl-C kills the host at once. Exit 130.
 *
 * Exit: 0 when the host's turn completed (and, scripted, the model was never sent an invalid
 * history, and with `--compaction` at least one compaction landed); 1 otherwise; usage errors
 * 64; a named profile without dsh-fold 1; interrupted 130.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

import { dshHomeOf, findInstalledHost, findNode22 } from './host/find.mjs'
import { defaultCache, ensureHost, ensureNode22 } from './host/install.mjs'
import { HOST_SHUTDOWN_GRACE_MS, dshPackageOf, hostEnv, initProfile, installBundles, killGroup, runBoot, sessionLogs, writePatchFile } from './host/launch.mjs'
import { fail } from './cli.mjs'
import { Transcript } from './transcript.mjs'

/** @type {import('./cli.mjs').Command} */
export const command = {
  usage: `Usage: dsh-fold try [--profile NAME] [--dsh-home DIR] [--patch FILE] [--cwd DIR] [--compaction] [--keep] [--json] ["TASK"]
  Boot a real DSH host headless with dsh-fold's rows and run one task, printing what the
  model did and each fold. The host is the one you installed (found from \`dsh\` on PATH or
  $DSH_HOME/profiles), else the pinned @deepseek-ai/dsh 0.1.0-rc.8, installed with Node 22
  into dsh-fold's cache on first use (about a minute; $DSH_FOLD_CACHE moves it).
  With DEEPSEEK_API_KEY set the model is DeepSeek's and the task runs in --cwd (default: here);
  without one a scripted model shows checkpoint -> explore -> rewind -> recall on a small
  workspace it writes (TASK is then optional). Without --profile/--dsh-home nothing outside a
  temporary DSH home is touched; with them, that profile (dsh-fold installed in it) is used.
  --patch adds a patch overlay (e.g. block mode's row, with DSH_TOOLS_MODE=both);
  --compaction swaps in dsh-fold/compaction for the run, at a small context window, and the
  scripted model first surveys run logs long enough to compact (each compaction is printed
  like a fold); --keep leaves the temporary DSH home and workspace in place; --json prints the
  run as JSON.`,
  run: (opts) => runTry(opts, { fail }),
}

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const OWN = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))

/**
 * Packs this copy of dsh-fold (root + platform package) into `dir`: a checkout through
 * scripts/pack.mjs (it ships the binary built at the root), an installed copy with `npm pack`
 * of a plain copy of its folder and of the platform package it loaded.
 * @param {string} dir
 * @returns {Promise<{root: string, platform: string, how: string}>}
 */
async function packSelf(dir) {
  mkdirSync(dir, { recursive: true })
  if (existsSync(path.join(ROOT, 'scripts', 'pack.mjs')) && existsSync(path.join(ROOT, 'Cargo.toml'))) {
    const { pack } = await import(pathToFileURL(path.join(ROOT, 'scripts', 'pack.mjs')).href)
    const t = pack(dir)
    return { ...t, how: `this checkout (${ROOT}), packed` }
  }
  const require = createRequire(import.meta.url)
  const binary = Object.keys(require.cache).find((f) => /[/\\]dsh-fold-[^/\\]+[/\\][^/\\]+\.node$/.test(f))
  if (!binary) throw new Error(`cannot tell which dsh-fold platform package this copy loaded (${ROOT})`)
  // Packed from a plain copy: pnpm installs identical files as hard links to one store file
  // (plugin/package.json and client/package.json are both `{"type": "module"}`), npm pack writes
  // the second as a tar hard-link entry, and npm's installer skips those entries, so the
  // installed copy would lack plugin/package.json and its ES modules would not load.
  const packOne = (/** @type {string} */ from) => {
    const stage = path.join(dir, `stage-${path.basename(from)}`)
    cpSync(from, stage, { recursive: true, dereference: true, filter: (src) => !path.relative(from, src).split(path.sep).includes('node_modules') })
    return path.join(dir, execFileSync('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', dir, stage], { encoding: 'utf8' }).trim().split('\n').pop() ?? '')
  }
  return { root: packOne(ROOT), platform: packOne(path.dirname(binary)), how: `this installed copy (${ROOT}), packed` }
}

/**
 * DSH's session decoder, from the host the run uses (this process may not have DSH's packages).
 * @param {string} dshPackage
 */
async function hostSessionCodec(dshPackage) {
  const require = createRequire(path.join(dshPackage, 'package.json'))
  let entry
  try {
    entry = require.resolve('@deepseek-ai/dsh-session')
  } catch {
    entry = createRequire(path.join(ROOT, 'package.json')).resolve('@deepseek-ai/dsh-session')
  }
  const mod = await import(pathToFileURL(entry).href)
  return { decodeStorageRecord: mod.decodeStorageRecord, formatVersion: typeof mod.SESSION_FORMAT_VERSION === 'number' ? mod.SESSION_FORMAT_VERSION : 0 }
}

/** Whether a profile has the dsh-fold bundle (installed and listed). @param {string} profileDir */
function profileHasDshFold(profileDir) {
  try {
    const manifest = JSON.parse(readFileSync(path.join(profileDir, 'package.json'), 'utf8'))
    return existsSync(path.join(profileDir, 'node_modules', 'dsh-fold', 'package.json')) && (manifest?.dsh?.profile?.bundles ?? []).includes('dsh-fold')
  } catch {
    return false
  }
}

/**
 * The overlay rows of `--compaction`: dsh-fold/compaction in basic's place (unless the profile
 * mounts it already) and the DeepSeek adapter's window (its default and every catalog model's)
 * set to `window`, over the config the profile gives that row. Read from the host's own
 * composition of the profile (bin/compaction.mjs).
 * @param {{host: {dir: string, node22: string}, dshHome: string, profile: string, window: number, fail: (message: string, exit: number) => never}} options
 */
async function compactionRows({ host, dshHome, profile, window, fail }) {
  const { backendLine, composeProfiles, flatten, inspectCompaction } = await import('./compaction.mjs')
  const composed = composeProfiles(host, dshHome, { profiles: [profile] }).profiles
  const state = (await inspectCompaction({ dshHome, host, profiles: [profile], composed })).profiles[0]
  if (state.backend === 'presets') fail(`--compaction: profile ${profile}: ${backendLine(state)}; run it with a headless-style profile`, 1)
  if (!state.starts) fail(`--compaction: profile ${profile} would not start: ${state.problems.filter((p) => p.fatal).map((p) => p.message).join('; ')}`, 1)
  /** @type {any[]} */
  const rows = state.backend === 'dsh-fold' ? [] : [{ id: 'compaction-basic', disabled: true }, { id: 'compaction-fold', name: 'dsh-fold/compaction' }]
  const llm = flatten(composed[profile].rows).find((/** @type {any} */ r) => r.name === '@deepseek-ai/dsh-llm-deepseek' && !r.disabled)
  if (llm) rows.push({ id: llm.id, config: { ...(llm.config ?? {}), defaultContextWindow: window, models: (llm.config?.models ?? []).map((/** @type {any} */ m) => ({ ...m, contextWindow: window })) } })
  return { rows, mounted: state.backend === 'dsh-fold', windowSet: Boolean(llm) }
}

/**
 * @param {Record<string, any>} opts the parsed command line
 * @param {{fail: (message: string, exit: number) => never}} cli
 * @returns {Promise<number>} the exit code
 */
export async function runTry(opts, cli) {
  const t0 = performance.now()
  const real = Boolean(process.env.DEEPSEEK_API_KEY)
  const json = Boolean(opts.json)
  const say = (/** @type {string} */ s) => (json ? process.stderr : process.stdout).write(`${s}\n`)
  for (const key of ['profile', 'dsh-home', 'patch', 'cwd']) if (opts[key] === '') cli.fail(`--${key} needs a non-empty value`, 64)
  if (opts.cwd !== undefined && !real) cli.fail('--cwd applies to a run with a real model (DEEPSEEK_API_KEY set); the scripted model works in the workspace it writes', 64)
  if (opts.patch !== undefined && !existsSync(opts.patch)) cli.fail(`no patch file at ${opts.patch}`, 66)
  const { COMPACTION_WINDOW, DEFAULT_TASK, scriptedAgent, writeWorkspace } = await import('./try-agent.mjs')
  const compaction = Boolean(opts.compaction)
  const task = opts._[1] ?? (real ? cli.fail('try needs a TASK when DEEPSEEK_API_KEY is set (the real model works on your task)', 64) : DEFAULT_TASK)
  if (!String(task).trim()) cli.fail('the TASK is empty', 64)

  const named = opts['dsh-home'] !== undefined || opts.profile !== undefined
  const profile = opts.profile ?? 'headless'
  const root = mkdtempSync(path.join(tmpdir(), 'dsh-fold-try-'))
  const dshHome = named ? dshHomeOf(opts['dsh-home']) : path.join(root, 'dsh-home')
  const profileDir = path.join(dshHome, 'profiles', profile)
  const keep = Boolean(opts.keep)
  let cleaned = false
  const cleanup = () => {
    if (cleaned || keep) return
    cleaned = true
    rmSync(root, { recursive: true, force: true })
  }
  // Ctrl-C: stop the host gracefully and let the run unwind (cleanup after the host's exit);
  // with no host running there is nothing to wait for. A second Ctrl-C kills the host now.
  const interrupt = new AbortController()
  /** The host's process group while one runs. @type {number | null} */
  let hostGroup = null
  const onSignal = () => {
    if (interrupt.signal.aborted) {
      if (hostGroup !== null) {
        say('dsh-fold try: interrupted again: killing the host now')
        killGroup(hostGroup, 'SIGKILL')
      }
      return
    }
    interrupt.abort()
    if (hostGroup === null) {
      cleanup()
      process.exit(130)
    }
    say(`\ndsh-fold try: interrupted; the host is shutting down (it writes out its session log), at most ${HOST_SHUTDOWN_GRACE_MS / 1000} s; Ctrl-C again kills it now`)
  }
  /** Runs the host (`runBoot`'s options), interruptible; null when interrupted. @param {Parameters<typeof runBoot>[0]} options */
  const runHost = async (options) => {
    const result = await runBoot({ ...options, interrupt: interrupt.signal, onStart: (pid) => (hostGroup = pid) })
    hostGroup = null
    return result.interrupted ? null : result
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  /** @type {Awaited<ReturnType<typeof import('./host/model-server.mjs').startModelServer>> | null} */
  let server = null
  try {
    say(real
      ? `dsh-fold try: DEEPSEEK_API_KEY is set, so DeepSeek's model works on your task${process.env.DEEPSEEK_BASE_URL ? ` (at ${process.env.DEEPSEEK_BASE_URL})` : ''}.`
      : 'dsh-fold try: no DEEPSEEK_API_KEY, so a scripted model plays the agent on a small workspace (checkpoint → explore → rewind → recall; in block mode, programs closed by the block\'s own summary); its tool calls, the folds and the recall are real, and a rewind\'s report is dsh-fold\'s extractive one. Set DEEPSEEK_API_KEY to run your own task with DeepSeek\'s model.')
    if (named && !existsSync(profileDir)) cli.fail(`no profile ${profile} in ${dshHome} (${profileDir}); create it and add dsh-fold: dsh plugin --profile ${profile} add dsh-fold`, 66)
    if (named && !profileHasDshFold(profileDir)) {
      cli.fail(`profile ${profile} in ${dshHome} has no dsh-fold bundle; add it (dsh plugin --profile ${profile} add dsh-fold), or run dsh-fold try without --profile/--dsh-home to use a temporary DSH home`, 1)
    }

    // The host and a Node 22.
    const log = (/** @type {string} */ m) => say(`  ${m}`)
    const installed = await findInstalledHost({ dshHome: named ? dshHome : dshHomeOf(), profile })
    /** @type {{dshPackage: string, version: string, how: string, node22: string}} */
    let host
    if (installed) {
      const node = findNode22() ?? (() => {
        say(`Node ${process.version} is too old for the host (it needs >= 22); using the Node 22 in dsh-fold's cache (${defaultCache()}), installed on first use:`)
        const n = ensureNode22({ cache: defaultCache(), log })
        return { node: n.node22, version: n.version }
      })()
      host = { dshPackage: installed.dir, version: installed.version, how: installed.how, node22: node.node }
    } else {
      say(`No DSH host installed here; using the pinned @deepseek-ai/dsh 0.1.0-rc.8 and Node 22 in dsh-fold's cache (${defaultCache()}), installed on first use (about a minute):`)
      const pinned = ensureHost({ cache: defaultCache(), log })
      host = { dshPackage: dshPackageOf(pinned.hostDir), version: '0.1.0-rc.8', how: `pinned, in ${pinned.hostDir}`, node22: pinned.node22 }
    }
    const nodeVersion = execFileSync(host.node22, ['--version'], { encoding: 'utf8' }).trim()

    // The workspace, the model and the environment.
    const cwd = real ? path.resolve(opts.cwd ?? process.cwd()) : path.join(root, 'work')
    if (real && !statSync(cwd, { throwIfNoEntry: false })?.isDirectory()) cli.fail(`--cwd ${cwd} is not a folder`, 66)
    if (!real) writeWorkspace(cwd, { logs: compaction })
    if (!real) {
      const { startModelServer } = await import('./host/model-server.mjs')
      server = await startModelServer(scriptedAgent({ compaction }))
    }
    const env = hostEnv({
      dshHome,
      hermetic: !real,
      env: real
        ? { DSH_TELEMETRY_DISABLED: named ? process.env.DSH_TELEMETRY_DISABLED : '1' }
        : { DEEPSEEK_BASE_URL: server?.url, DEEPSEEK_API_KEY: 'sk-dsh-fold-try-scripted', DSH_TOOLS_MODE: process.env.DSH_TOOLS_MODE },
    })
    mkdirSync(dshHome, { recursive: true })
    // The host's own temp files (spilled outputs, subprocess folders) go with the run's folder.
    const hostTmp = path.join(root, 'tmp')
    mkdirSync(hostTmp)
    env.TMPDIR = hostTmp

    // The profile: a new one gets dsh-fold from this copy's packed tarballs.
    let installedFrom = 'already in the profile'
    if (!named) {
      if (!(await initProfile({ node22: host.node22, dshPackage: host.dshPackage, profile, env, cwd, interrupt: interrupt.signal, onStart: (pid) => (hostGroup = pid) }))) return 130
      hostGroup = null
      const tarballs = await packSelf(path.join(root, 'pack'))
      installBundles(profileDir, [tarballs.platform, tarballs.root], { log: () => {} })
      installedFrom = `installed from ${tarballs.how}`
    }
    const patchFiles = []
    if (!real) {
      patchFiles.push(writePatchFile(path.join(root, 'try.patch.yml'), [{ id: 'tool-rewind', config: { toolName: 'rewind', reportLanguage: 'en', summarizer: 'extractive' } }]))
    }
    if (opts.patch !== undefined) patchFiles.push(path.resolve(opts.patch))
    /** @type {Awaited<ReturnType<typeof compactionRows>> | null} */
    let swap = null
    if (compaction) {
      swap = await compactionRows({ host: { dir: host.dshPackage, node22: host.node22 }, dshHome, profile, window: COMPACTION_WINDOW, fail: cli.fail })
      if (swap.rows.length) patchFiles.push(writePatchFile(path.join(root, 'compaction.patch.yml'), swap.rows))
    }

    say(`host:    @deepseek-ai/dsh ${host.version} (${host.how}), Node ${nodeVersion}`)
    say(named ? `home:    ${dshHome}, profile ${profile} (dsh-fold ${installedFrom})` : `home:    a temporary DSH home ${dshHome} (${keep ? 'kept: --keep' : 'removed at the end; --keep keeps it'}), profile ${profile}, dsh-fold ${OWN.version} ${installedFrom}`)
    say(`cwd:     ${cwd}${real ? '' : ' (the scripted model\'s workspace)'}`)
    if (opts.patch !== undefined) say(`patch:   ${path.resolve(opts.patch)}${process.env.DSH_TOOLS_MODE ? ` (DSH_TOOLS_MODE=${process.env.DSH_TOOLS_MODE})` : ''}`)
    if (swap) say(`compaction: dsh-fold/compaction${swap.mounted ? ' (the profile mounts it)' : ' for this run only (an overlay; no profile file is written)'}${swap.windowSet ? `, the model's context window set to ${COMPACTION_WINDOW.toLocaleString('en-US')} tokens so it compacts within a short task` : '; this profile has no DeepSeek adapter row, so its window is the model\'s own'}`)
    say(`task:    ${task}\n`)

    // Run, following the session's log as it grows.
    const { readSessionLog } = await import('./session-log.mjs')
    const codec = await hostSessionCodec(host.dshPackage)
    const before = new Set(sessionLogs(dshHome))
    const transcript = new Transcript()
    /** @type {string | null} */
    let logFile = null
    const follow = () => {
      logFile ??= sessionLogs(dshHome).find((f) => !before.has(f)) ?? null
      if (!logFile) return
      try {
        for (const l of transcript.add(readSessionLog(logFile, codec).events)) say(l)
      } catch {
        // mid-write: the next read (or the last one) gets it
      }
    }
    const timer = setInterval(follow, 400)
    const run = await runHost({
      node22: host.node22,
      dshPackage: host.dshPackage,
      env,
      cwd,
      spec: { mode: 'boot', profile, patchFiles, args: [String(task)] },
      timeoutMs: real ? 60 * 60_000 : 5 * 60_000,
    })
    clearInterval(timer)
    follow()
    if (run === null) {
      say(`dsh-fold try: interrupted; the host has shut down${logFile ? `; its session log: ${logFile}${keep || named ? '' : ' (removed with the temporary home)'}` : ''}`)
      return 130
    }
    const violations = server?.violations ?? []
    const compacted = transcript.compactions.some((c) => !c.error)
    const completed = run.code === 0 && transcript.turnEnd === 'completed' && violations.length === 0 && (!compaction || real || compacted)
    const seconds = ((performance.now() - t0) / 1000).toFixed(1)
    const s = transcript.summary()
    if (!transcript.answer && run.stdout.trim()) say(`answer: ${run.stdout.trim()}`)
    if (!completed) {
      say(`\nthe host exited ${run.code ?? run.signal}${run.timedOut ? ' (timed out)' : ''}${transcript.turnEnd ? `, turn ${transcript.turnEnd}` : ''}`)
      const tail = run.stderr.trim().split('\n').slice(-12).join('\n')
      if (tail) say(tail)
      for (const v of violations) say(`the model was sent an invalid history (request ${v.index}): ${v.message}`)
      if (compaction && !real && !compacted && run.code === 0) say('--compaction: the run ended without a compaction, so there is none to show')
    }
    const folds = s.folds.map((f) => (f.kind === 'fold' ? `fold of mark ${f.markId}: ${f.replaced} surface nodes → a ${f.reportChars}-char report` : `block summary [${f.ids?.join(', ')}]: ${f.replaced} messages → ${f.reportChars} chars`))
    const compactions = s.compactions.map((c) => `compaction by ${c.backend}${c.error ? ` failed (${c.error})` : ` (${c.replaced} messages, ${c.charsBefore.toLocaleString('en-US')} → ${c.charsAfter.toLocaleString('en-US')} chars, ${c.modelCalls} model call${c.modelCalls === 1 ? '' : 's'}${c.ms === null ? '' : `, ${c.ms} ms`})`}`)
    say(`\n${completed ? 'done' : 'not completed'} in ${seconds} s: ${s.toolCalls} tool calls (${s.failedCalls} failed), ${folds.length ? folds.join('; ') : 'no fold'}${compactions.length ? `; ${compactions.join('; ')}` : ''}`)
    if (logFile) say(`session log: ${logFile}${keep || named ? '' : ' (removed with the temporary home)'}`)
    if (json) {
      process.stdout.write(`${JSON.stringify({
        model: real ? 'deepseek' : 'scripted',
        host: { version: host.version, package: host.dshPackage, how: host.how, node: nodeVersion },
        dshHome,
        temporary: !named,
        kept: keep,
        profile,
        cwd,
        task,
        exitCode: run.code,
        completed,
        seconds: Number(seconds),
        sessionLog: logFile,
        ...s,
      }, null, 2)}\n`)
    }
    return completed ? 0 : 1
  } finally {
    await server?.close()
    // Removed while the signal handlers are still ours: an interrupt now waits for the removal
    // instead of killing the process halfway through it.
    cleanup()
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}
