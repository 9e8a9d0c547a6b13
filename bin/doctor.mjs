// @ts-check
/**
 * @module bin/doctor
 * `dsh-fold doctor [--profile NAME] [--dsh-home DIR] [--json]`: is dsh-fold ready to run in
 * this machine's DSH? One line per check, ✓ or ✗, and under each ✗ the command that fixes it.
 * Exit 0 only when every check passes. Read-only: it never creates a profile or heals links
 * (the profile's rows are composed by bin/host/boot.mjs in `compose` mode, not by `dsh
 * --dump-config`, which would create the profile), and the store is only listed.
 *
 * The checks, in order (a check whose premise failed says so and fails too):
 * 1. node     — the `node` on PATH (what `dsh` runs on) is >= 22: the host and block mode's
 *               worker-thread code runtime need it;
 * 2. host     — `@deepseek-ai/dsh` is installed (bin/host/find.mjs) at 0.1.0-rc.8, the version
 *               dsh-fold is built and tested against;
 * 3. launcher — rc.8's `dsh` can start: the HMR it resolves still has `registerConfig` (1.0.17;
 *               1.0.19 dropped it) and the composition mounts an HMR row at boot (the launcher's
 *               own late one loses a race; bin/host/boot.mjs has the details);
 * 4. profile  — `$DSH_HOME/profiles/<profile>/` exists;
 * 5. bundle   — dsh-fold is installed in it and listed in `dsh.profile.bundles`;
 * 6. rows     — the composed profile mounts dsh-fold's rows, enabled: tool-checkpoint,
 *               tool-rewind, tool-recall, block-ui (and block mode's when present);
 * 7. compaction — the backend the profile mounts (bin/compaction.mjs reads every layer the host
 *               composes), from which file, and its key settings; ✗ when it cannot load: our row
 *               where dsh-fold is missing, two backends, a config the backend refuses;
 * 8. profiles — every other profile of the DSH home still starts as far as compaction goes: a
 *               `dsh-fold/compaction` row in a layer a profile without dsh-fold reads (the
 *               home-wide patch) stops it, so "all checks pass" is never said over a broken one;
 * 9. block    — block mode, when its row is enabled: Code Mode's runtime row and the host's
 *               tools presented as `both` (DSH_TOOLS_MODE=both for headless); off is fine;
 * 10. preset  — the `block-ptc` preset (bin/preset.mjs status): absent is fine; installed must
 *               be unmodified and match the host's current `code` preset;
 * 11. store   — the checkpoint store the profile uses is readable (marks, journal size), or
 *               not created yet;
 * 12. addon   — the profile's dsh-fold loads its binary for this platform (in a child process).
 * 13. registry — the npm registry the profile's pnpm reads (bin/host/registry.mjs): whether it
 *               has dsh-fold, asked once with a 3 s budget. It decides every install fix above:
 *               `dsh plugin --profile NAME add dsh-fold` only when the registry has dsh-fold,
 *               else a checkout's `npm run pack` tarballs (dsh-fold's route until it is
 *               published). Not having dsh-fold and not answering (offline) are ✓: they say how
 *               to install, nothing is broken; only an answer `dsh plugin add` cannot install
 *               from (401/403 without a login, 5xx, not a package document) is a ✗.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { addon } from '../plugin/shared/addon.js'
import { fail } from './cli.mjs'
import { backendLine, inspectCompaction } from './compaction.mjs'
import { dshHomeOf, findInstalledHost, nodeMajor, onPath, packageDir, tilde } from './host/find.mjs'
import { defaultCache, DSH_VERSION } from './host/install.mjs'
import { runBoot } from './host/launch.mjs'
import { dshFoldOnRegistry } from './host/registry.mjs'

/** @type {import('./cli.mjs').Command} */
export const command = {
  usage: `Usage: dsh-fold doctor [--profile NAME] [--dsh-home DIR] [--json]
  Check an installation, one line per check (✓ or ✗ with the command that fixes it): Node
  (>= 22 for the host and block mode), the host and its version, the launcher on rc.8, the
  dsh-fold bundle in the profile (default: headless) and each of its rows, the compaction
  backend it mounts (and every other profile's, when a swap stops one from starting), what
  block mode needs, the block-ptc preset, the checkpoint store, and the addon binary for this
  platform. Exit 0 only when every check passes.`,
  run: (opts) => runDoctor(opts, { fail }),
}

const HMR = '@deepseek-ai/cordis-plugin-hmr'
/** dsh-fold's rows from its bundle patch, and what each is. */
const ROWS = [
  ['tool-checkpoint', 'dsh-fold/checkpoint'],
  ['tool-rewind', 'dsh-fold/rewind'],
  ['tool-recall', 'dsh-fold/recall'],
  ['block-ui', 'dsh-fold/ui'],
]

/**
 * @typedef {object} Check
 * @property {string} id
 * @property {boolean} ok
 * @property {string} label what was found, in one line
 * @property {string} [fix] the command(s) that fix a ✗
 */

/** @param {string} file @returns {any} */
function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return null
  }
}

/** The project folder a host package was installed into (npm or pnpm layout), for fix commands. @param {string} dshPackage */
function hostProject(dshPackage) {
  const pnpm = dshPackage.lastIndexOf(`${path.sep}node_modules${path.sep}.pnpm${path.sep}`)
  if (pnpm >= 0) return { dir: dshPackage.slice(0, pnpm), pnpm: true }
  const npm = dshPackage.lastIndexOf(`${path.sep}node_modules${path.sep}@deepseek-ai${path.sep}dsh`)
  return { dir: npm >= 0 ? dshPackage.slice(0, npm) : path.dirname(dshPackage), pnpm: false }
}

/** Every row of a composed tree, nested groups flattened. @param {any[]} rows @returns {any[]} */
const flatten = (rows) => rows.flatMap((r) => [r, ...(Array.isArray(r?.config) && r?.group ? flatten(r.config) : [])])

/**
 * The README's host install, as fix commands.
 */
const INSTALL_NODE = 'npm install --prefix ~/.dsh-host --no-fund --no-audit node@22 pnpm@10 && export PATH="$HOME/.dsh-host/node_modules/.bin:$PATH"'
const INSTALL_HOST = [
  'mkdir -p ~/.dsh-host/dsh && cd ~/.dsh-host/dsh',
  `echo '{"private":true,"pnpm":{"overrides":{"${HMR}":"1.0.17"}}}' > package.json`,
  `pnpm add @deepseek-ai/dsh@${DSH_VERSION}`,
  'export PATH="$HOME/.dsh-host/dsh/node_modules/.bin:$PATH"',
].join(' && ')
/** @param {string} dshHome */
const HMR_ROW = (dshHome) => `printf '%s\\n' '- insert:' '    - id: launcher-hmr' "      name: '${HMR}'" '      config: { root: [] }' >> ${dshHome === path.join(homedir(), '.dsh') ? '~/.dsh' : dshHome}/cordis.patch.yml`

/**
 * Every profile's compaction backend (bin/compaction.mjs), or null when the host cannot compose them.
 * @param {string} dshHome @param {{dir: string, node22: string}} host @param {(profile: string) => string} addDshFold
 */
async function compactionOfProfiles(dshHome, host, addDshFold) {
  try {
    return await inspectCompaction({ dshHome, host, addDshFold })
  } catch {
    return null
  }
}

/**
 * @param {Record<string, any>} opts the parsed command line
 * @param {{fail: (message: string, exit: number) => never}} cli
 * @returns {Promise<number>} the exit code
 */
export async function runDoctor(opts, cli) {
  for (const key of ['profile', 'dsh-home']) if (opts[key] === '') cli.fail(`--${key} needs a non-empty value`, 64)
  const dshHome = dshHomeOf(opts['dsh-home'])
  const profile = opts.profile ?? 'headless'
  const profileDir = path.join(dshHome, 'profiles', profile)
  // Where dsh-fold can come from decides every install fix: asked first, before the checks that
  // block this process (a synchronous child would stall the request and eat its 3 s).
  const registry = await dshFoldOnRegistry(profileDir)
  const addDshFold = (/** @type {string} */ name) => registry.state === 'published' ? `dsh plugin --profile ${name} add dsh-fold` : `npm run pack && dsh plugin --profile ${name} add ./target/pack/*.tgz`
  const add = registry.state === 'published'
    ? addDshFold(profile)
    : `${addDshFold(profile)}   (in a dsh-fold checkout: ${registry.state === 'absent' ? `${registry.registry} has no dsh-fold yet` : 'by name needs a registry that has dsh-fold'})`
  /** @type {Check[]} */
  const checks = []
  const check = (/** @type {Check} */ c) => checks.push(c)

  // 1. Node on PATH.
  const node = onPath('node')[0]
  const major = node ? nodeMajor(node) : 0
  const nodeVersion = node ? spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim() : ''
  check(major >= 22
    ? { id: 'node', ok: true, label: `Node ${nodeVersion} (${tilde(node)}, what \`dsh\` runs on)` }
    : { id: 'node', ok: false, label: node ? `Node ${nodeVersion} at ${tilde(node)}: the host and block mode need Node >= 22` : 'no `node` on PATH: the host needs Node >= 22', fix: INSTALL_NODE })

  // 2. The host.
  const host = await findInstalledHost({ dshHome, profile })
  if (!host) {
    check({ id: 'host', ok: false, label: `no DSH host (@deepseek-ai/dsh) found: not on PATH as \`dsh\`, not linked from ${tilde(path.join(dshHome, 'profiles'))}`, fix: INSTALL_HOST })
  } else {
    check(host.version === DSH_VERSION
      ? { id: 'host', ok: true, label: `host @deepseek-ai/dsh ${host.version} at ${tilde(host.dir)} (${host.how})` }
      : { id: 'host', ok: false, label: `host @deepseek-ai/dsh ${host.version} at ${tilde(host.dir)}: dsh-fold is built and tested against ${DSH_VERSION}`, fix: INSTALL_HOST })
  }

  // 4-6 need the profile composed; compose first (Node 22 and the host needed).
  const hasProfile = existsSync(path.join(profileDir, 'package.json'))
  const manifest = hasProfile ? readJson(path.join(profileDir, 'package.json')) : null
  const node22 = major >= 22 ? node : [process.execPath, ...onPath('node')].find((n) => nodeMajor(n) >= 22)
  /** @type {{rows: any[], bundles: string[]} | null} */
  let composed = null
  let composeError = ''
  if (hasProfile && host && node22) {
    // Run as every host process is (launch.mjs: its own group, stopped gracefully on a timeout).
    const env = /** @type {Record<string, string>} */ ({ ...process.env, DSH_HOME: dshHome })
    const r = await runBoot({ node22, dshPackage: host.dir, spec: { mode: 'compose', profile, patchFiles: [] }, env, cwd: process.cwd(), timeoutMs: 60_000 })
    if (r.code === 0) composed = JSON.parse(r.stdout)
    else composeError = (r.stderr || `exit ${r.code ?? r.signal}${r.timedOut ? ' (timed out after 60 s)' : ''}`).trim().split('\n').find((l) => /error|Error/.test(l)) ?? r.stderr.trim().split('\n')[0]
  }
  const rows = composed ? flatten(composed.rows) : []
  const enabled = (/** @type {(r: any) => boolean} */ test) => rows.filter((r) => test(r) && !r.disabled)

  // 3. The launcher.
  if (!host) {
    check({ id: 'launcher', ok: false, label: 'launcher: no host to check' })
  } else {
    const hmrDir = packageDir(host.dir, HMR)
    const hmrVersion = hmrDir ? readJson(path.join(hmrDir, 'package.json'))?.version : null
    const hasRegister = hmrDir ? /registerConfig/.test(readFileSync(path.join(hmrDir, readJson(path.join(hmrDir, 'package.json'))?.main ?? 'lib/index.js'), 'utf8')) : false
    const hmrRows = enabled((r) => r.name === HMR)
    const problems = []
    const project = hostProject(host.dir)
    const fixes = []
    if (!hasRegister) {
      problems.push(`${HMR} ${hmrVersion ?? '(missing)'} has no registerConfig (1.0.17 has it)`)
      fixes.push(project.pnpm
        ? `cd ${tilde(project.dir)} && npm pkg set 'pnpm.overrides.${HMR}=1.0.17' && pnpm install`
        : `cd ${tilde(project.dir)} && npm install --legacy-peer-deps --ignore-scripts ${HMR}@1.0.17`)
    }
    if (composed && hmrRows.length === 0) {
      problems.push('no HMR row is mounted at boot')
      fixes.push(HMR_ROW(dshHome))
    }
    if (!composed) problems.push(hasProfile ? `the profile's rows could not be read (${node22 ? composeError : 'no Node >= 22'})` : `profile ${profile} does not exist`)
    check(problems.length === 0
      ? { id: 'launcher', ok: true, label: `launcher: \`dsh --profile ${profile}\` can start (${HMR} ${hmrVersion} with registerConfig; HMR row ${hmrRows[0].id} mounted at boot)` }
      : { id: 'launcher', ok: false, label: `launcher: rc.8's \`dsh --profile ${profile}\` stops at start ("user patch-layer watching requires the Cordis HMR service"): ${problems.join('; ')}`, ...(fixes.length ? { fix: fixes.join('\n') } : {}) })
  }

  // 4. The profile.
  check(hasProfile
    ? { id: 'profile', ok: true, label: `profile ${profile} at ${tilde(profileDir)}` }
    : { id: 'profile', ok: false, label: `no profile ${profile} in ${tilde(dshHome)}`, fix: `${add}${registry.state === 'published' ? '   (creates the profile)' : ''}` })

  // 5. The bundle.
  const installed = hasProfile ? readJson(path.join(profileDir, 'node_modules', 'dsh-fold', 'package.json')) : null
  const listed = (manifest?.dsh?.profile?.bundles ?? []).includes('dsh-fold')
  if (!hasProfile) check({ id: 'bundle', ok: false, label: 'bundle: no profile' })
  else if (!installed) check({ id: 'bundle', ok: false, label: `dsh-fold is not installed in profile ${profile}`, fix: add })
  else if (!listed) check({ id: 'bundle', ok: false, label: `dsh-fold ${installed.version} is installed in profile ${profile} but not listed in its dsh.profile.bundles`, fix: add })
  else check({ id: 'bundle', ok: true, label: `bundle dsh-fold ${installed.version} in profile ${profile}` })

  // 6. The rows.
  if (!composed) {
    check({ id: 'rows', ok: false, label: `rows: ${hasProfile ? `the profile's rows could not be read (${node22 ? composeError : 'no Node >= 22 to compose them'})` : 'no profile'}` })
  } else {
    const missing = ROWS.filter(([, name]) => enabled((r) => r.name === name).length === 0)
    const disabled = missing.filter(([, name]) => rows.some((r) => r.name === name && r.disabled))
    const block = enabled((r) => r.name === 'dsh-fold/block')
    check(missing.length === 0
      ? { id: 'rows', ok: true, label: `rows: ${ROWS.map(([id, name]) => enabled((r) => r.name === name)[0]?.id ?? id).join(', ')}${block.length ? `, ${block[0].id} (block mode)` : ''}` }
      : {
        id: 'rows',
        ok: false,
        label: `rows missing from profile ${profile}: ${missing.map(([id, name]) => `${id} (${name})${disabled.some(([d]) => d === id) ? ' disabled' : ''}`).join(', ')}`,
        fix: disabled.length ? `remove the \`disabled: true\` of ${disabled.map(([id]) => id).join(', ')} from ${tilde(path.join(profileDir, 'cordis.patch.yml'))} or ${tilde(path.join(dshHome, 'cordis.patch.yml'))}` : `${add}${registry.state === 'published' ? '   (reinstalls the bundle and its patch)' : ''}`,
      })
  }

  // 7-8. The compaction backend, in this profile and in every other one.
  const compaction = host && node22 && hasProfile ? await compactionOfProfiles(dshHome, { dir: host.dir, node22 }, addDshFold) : null
  const mine = compaction?.profiles.find((p) => p.profile === profile)
  if (!compaction || !mine) {
    check({ id: 'compaction', ok: false, label: `compaction: ${!hasProfile ? 'no profile' : !host ? 'no host to compose the profile with' : 'no Node >= 22 to compose the profile with'}` })
  } else {
    const fatal = mine.problems.filter((p) => p.fatal)
    const notes = mine.problems.filter((p) => !p.fatal)
    check(fatal.length === 0
      ? { id: 'compaction', ok: true, label: `compaction: ${backendLine(mine)}${mine.settings ? `; ${mine.settings}` : ''}${notes.map((p) => `; note: ${p.message} (dsh-fold compaction status says how to move it)`).join('')}` }
      : { id: 'compaction', ok: false, label: `compaction: ${fatal.map((p) => p.message).join('; ')}`, ...(fatal.some((p) => p.fix) ? { fix: fatal.map((p) => p.fix).filter(Boolean).join('\n') } : {}) })
  }
  const others = compaction?.profiles.filter((p) => p.profile !== profile) ?? []
  if (!compaction) {
    check({ id: 'profiles', ok: false, label: 'other profiles: not read (no profile, host or Node >= 22 to compose them with)' })
  } else {
    const broken = others.filter((p) => !p.starts)
    const fixes = [...new Set(broken.flatMap((p) => p.problems.filter((x) => x.fatal && x.fix).flatMap((x) => /** @type {string} */ (x.fix).split('\n'))))]
    check(broken.length === 0
      ? { id: 'profiles', ok: true, label: `other profiles: ${others.length ? others.map((p) => `${p.profile} (${p.backend})`).join(', ') : `none in ${tilde(path.join(dshHome, 'profiles'))}`}${compaction.homeSwap ? `; ${tilde(compaction.homeFile)} swaps the backend for every profile (${compaction.homeSwap.map((r) => `lines ${r.from}–${r.to}`).join(', ')}): a new profile without dsh-fold would not start` : ''}` }
      : { id: 'profiles', ok: false, label: `other profiles: ${broken.map((p) => p.problems.filter((x) => x.fatal).map((x) => x.message).join('; ')).join('; ')}`, ...(fixes.length ? { fix: fixes.join('\n') } : {}) })
  }

  // 9. Block mode.
  const blockRows = enabled((r) => r.name === 'dsh-fold/block')
  if (blockRows.length === 0) {
    check({ id: 'block', ok: true, label: 'block mode: off in this profile (optional: the block-ptc preset in the web UI, or block mode\'s row with DSH_TOOLS_MODE=both headless)' })
  } else {
    const runtime = enabled((r) => r.id === 'code-runtime' || /code-runtime/.test(String(r.name ?? '')))
    const presentation = rows.find((r) => r.id === 'tools' && !r.disabled)?.config?.mode
    const viaEnv = presentation && typeof presentation === 'object'
    const mode = viaEnv ? process.env.DSH_TOOLS_MODE : presentation
    const problems = []
    if (runtime.length === 0) problems.push('no Code Mode runtime row (code-runtime) in the profile')
    if (mode !== 'both') problems.push(viaEnv ? `DSH_TOOLS_MODE is ${process.env.DSH_TOOLS_MODE ? `"${process.env.DSH_TOOLS_MODE}"` : 'not set'}` : `the tools row presents tools as "${mode ?? 'native'}"`)
    check(problems.length === 0
      ? { id: 'block', ok: true, label: `block mode: row ${blockRows[0].id}, Code Mode runtime ${runtime[0].id}, tools presented as both${viaEnv ? ' (DSH_TOOLS_MODE=both)' : ''}` }
      : { id: 'block', ok: false, label: `block mode's row ${blockRows[0].id} is on but the host will not run it: ${problems.join('; ')}`, fix: viaEnv ? 'export DSH_TOOLS_MODE=both   (before dsh --profile ...)' : 'use the block-ptc preset (dsh-fold preset install) or set the tools row\'s mode to both' })
  }

  // 10. The preset.
  const presets = await import('./preset.mjs')
  const preset = await presets.status({ 'dsh-home': dshHome, profile, ...(host ? { host: host.dir } : {}) })
  const presetDir = tilde(preset.dir)
  if (preset.state === 'absent') check({ id: 'preset', ok: true, label: `preset block-ptc: not installed (optional, for block mode in the web UI: dsh-fold preset install)` })
  else if (preset.state === 'installed' && preset.matchesHost !== false) check({ id: 'preset', ok: true, label: `preset block-ptc at ${presetDir}: installed by dsh-fold ${preset.installedBy?.version}, matches the host's code preset` })
  else if (preset.state === 'installed') check({ id: 'preset', ok: false, label: `preset block-ptc at ${presetDir} no longer matches the host's code preset (host upgraded)`, fix: 'dsh-fold preset install' })
  else check({ id: 'preset', ok: false, label: `preset block-ptc at ${presetDir} is ${preset.state === 'modified' ? `edited since dsh-fold wrote it (${preset.changed?.join(', ')})` : `not dsh-fold's (${preset.why})`}`, fix: 'dsh-fold preset install --force   (moves your folder to .agent-presets/.dsh-fold-backups/ first)' })

  // 11. The store.
  const storeRow = enabled((r) => r.name === 'dsh-fold/checkpoint')[0]
  const store = typeof storeRow?.config?.store === 'string' ? path.resolve(storeRow.config.store) : path.join(dshHome, 'storages', 'checkpoint.json')
  if (!existsSync(store)) {
    check({ id: 'store', ok: true, label: `store ${tilde(store)}: not created yet (the first checkpoint creates it)` })
  } else {
    try {
      const marks = await addon.listMarks(store, null)
      const journal = statSync(`${store}.journal`, { throwIfNoEntry: false })?.size ?? 0
      const active = marks.filter((m) => m.foldedAt === null).length
      check({ id: 'store', ok: true, label: `store ${tilde(store)}: ${marks.length} mark${marks.length === 1 ? '' : 's'} (${active} active), journal ${journal.toLocaleString('en-US')} bytes` })
    } catch (e) {
      const err = /** @type {any} */ (e)
      check({ id: 'store', ok: false, label: `store ${tilde(store)} cannot be read: ${err.code ?? 'ERROR'}: ${err.message}`, fix: `mv ${tilde(store)} ${tilde(store)}.bad   (and its .journal; the next checkpoint starts a new store)` })
    }
  }

  // 12. The addon binary of the profile's dsh-fold (else this copy's).
  const copy = installed ? path.join(profileDir, 'node_modules', 'dsh-fold') : fileURLToPath(new URL('..', import.meta.url))
  const probe = spawnSync(node22 ?? process.execPath, ['-e', "const m = require(process.argv[1]); const f = Object.keys(require.cache).find((k) => k.endsWith('.node')); process.stdout.write(JSON.stringify({ file: f, codes: m.foldErrorCodes().length }))", copy], { encoding: 'utf8', timeout: 30_000 })
  const platform = `${process.platform}-${process.arch}`
  if (probe.status === 0) {
    const { file } = JSON.parse(probe.stdout)
    check({ id: 'addon', ok: true, label: `addon: ${tilde(file)} loads (${platform}${installed ? ', the profile\'s copy' : ', this copy'})` })
  } else {
    const why = probe.stderr.trim().split('\n').find((l) => /Error|Cannot|no prebuilt/.test(l)) ?? probe.stderr.trim().split('\n')[0]
    check({ id: 'addon', ok: false, label: `addon: ${installed ? 'the profile\'s' : 'this'} dsh-fold has no binary that loads on ${platform}: ${why}`, fix: installed ? `${add}${registry.state === 'published' ? `   (installs the dsh-fold-${platform}* platform package)` : ''}` : 'npm rebuild dsh-fold' })
  }

  // 13. The registry.
  const byName = `\`dsh plugin --profile ${profile} add dsh-fold\``
  if (registry.state === 'published') check({ id: 'registry', ok: true, label: `registry ${registry.registry}: dsh-fold ${registry.version}, what ${byName} installs` })
  else if (registry.state === 'absent') check({ id: 'registry', ok: true, label: `registry ${registry.registry}: no dsh-fold there yet (404), so not ${byName}; a dsh-fold checkout's \`npm run pack\` tarballs install it` })
  else if (registry.state === 'offline') check({ id: 'registry', ok: true, label: `registry ${registry.registry}: no answer (${registry.why}): offline? Whether it has dsh-fold is unknown, so any install fix here uses a dsh-fold checkout's tarballs` })
  else if (registry.state === 'unknown') check({ id: 'registry', ok: true, label: `registry: unknown (${registry.why}), so any install fix here uses a dsh-fold checkout's tarballs` })
  else check({ id: 'registry', ok: false, label: `registry ${registry.registry} answered ${registry.why}: \`dsh plugin add\` cannot install from it`, fix: `cd ${tilde(existsSync(profileDir) ? profileDir : homedir())} && npm view dsh-fold version   (npm's own account of it; \`npm config get registry\` there is what pnpm reads, ~/.npmrc holds the URL and its login)` })

  const passed = checks.filter((c) => c.ok).length
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ ok: passed === checks.length, dshHome, profile, cache: defaultCache(), checks }, null, 2)}\n`)
  } else {
    console.log(`dsh-fold doctor: profile ${profile} in ${tilde(dshHome)}`)
    for (const c of checks) {
      console.log(`${c.ok ? '✓' : '✗'} ${c.label}`)
      if (!c.ok && c.fix) for (const l of c.fix.split('\n')) console.log(`    fix: ${l}`)
    }
    console.log(`${passed} of ${checks.length} checks pass`)
  }
  return passed === checks.length ? 0 : 1
}
