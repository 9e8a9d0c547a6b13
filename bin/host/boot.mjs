// @ts-nocheck -- runs inside the host's own process, on the host's packages
/**
 * @module bin/host/boot
 * Boots one DeepSeek Harness profile the way the rc.8 `dsh` bin's `runProfile` does, minus
 * the two user-patch watchers: bundle layers in `dsh.profile.bundles` order, the profile's
 * `cordis.patch.yml`, `$DSH_HOME/cordis.patch.yml`, `--patch` overlays, the shipped
 * agent-presets root and the telemetry switch, then `boot()` from `@deepseek-ai/dsh-app-boot`
 * with the launch environment and `provideCmdline`. Run with Node >= 22:
 *
 *   node boot.mjs '{"mode":"boot","dshPackage":DIR,"profile":"headless","patchFiles":[],"args":["task"]}'
 *   node boot.mjs '{"mode":"init","dshPackage":DIR,"profile":"headless"}'   (create the profile, exit)
 *   node boot.mjs '{"mode":"compose","dshPackage":DIR,"profile":"headless","patchFiles":[]}'
 *       (print the composed rows as JSON, boot nothing: `dsh-fold doctor` and `compaction` read
 *       them; unlike `dsh --dump-config`, it heals no links and writes nothing for an existing
 *       profile): `{bundles, rows, layers: [{kind: bundle|profile|home|overlay, file,
 *       patches}], warnings}`. `"profilePatch": FILE` composes FILE in place of the profile's own
 *       `cordis.patch.yml` (a candidate checked before it is put in place); `"profiles":
 *       [NAMES]` composes each, printing `{profiles: {NAME: {...} | {error}}}`.
 *
 * Why without the watchers: on rc.8 `runProfile` creates `@deepseek-ai/cordis-plugin-hmr` after
 * the boot and calls `watchUserPatches` as soon as `loader.create` resolves. With
 * `@deepseek-ai/cordis-plugin-loader` 1.0.5 (what cordis 4.0.4 requires, `~1.0.5`) `create`
 * no longer waits for the plugin to activate (1.0.2 and 1.0.3 awaited `fiber.await()`), so the
 * HMR service is not registered yet and the launcher throws "user patch-layer watching
 * requires the Cordis HMR service" for every profile. And the newest HMR, 1.0.19, no longer
 * has the `registerConfig` the watcher calls (1.0.17 has it). A one-shot run never edits its
 * patch files, so leaving the watchers out loses nothing but live reload of those files.
 *
 * Every host package is resolved from the `@deepseek-ai/dsh` package given (`dshPackage`), as
 * the `dsh` bin resolves them, so an npm or a pnpm install of the host both work and nothing is
 * written into the host's folder.
 */
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

import { HOST_DISPOSE_LIMIT_MS } from './launch.mjs'

const t0 = performance.now()
const spec = JSON.parse(process.argv[2])
const NAME = 'dsh'
const ANCHOR = join(spec.dshPackage, 'package.json')
const PRESETS = join(spec.dshPackage, 'config', 'agent-presets') + '/'
const hostRequire = createRequire(ANCHOR)
const load = (name) => import(pathToFileURL(hostRequire.resolve(name)).href)

const { boot, composeEntries, healProfilesModuleFallback, initProfile, installFailLoud, loadLayeredEnv,
  loadOptionalPatches, loadOverlayPatches, loadProfile, resolveProfileDir, PROFILE_TEMPLATES,
  DEFAULT_PROFILE_BUNDLES } = await load('@deepseek-ai/dsh-app-boot')
const { resolveDshHome } = await load('@deepseek-ai/dsh-home-paths')
const { DSH_LAUNCH_ENVIRONMENT_KEY } = await load('@deepseek-ai/dsh-launch-environment')
const { provideCmdline } = await load('@deepseek-ai/dsh-cmdline')

if (spec.mode === 'init') {
  initProfile(resolveProfileDir(spec.profile), PROFILE_TEMPLATES[spec.profile] ?? DEFAULT_PROFILE_BUNDLES)
  healProfilesModuleFallback(ANCHOR)
  process.exit(0)
}
if (spec.mode === 'compose') {
  const homeFile = join(resolveDshHome(), 'cordis.patch.yml')
  /** One profile's layers in the order the launch applies them, and the rows they compose to. */
  const compose = (name, profilePatch) => {
    const profile = loadProfile(NAME, name, ANCHOR, undefined, { userLayer: profilePatch === undefined })
    const own = profilePatch === undefined
      ? { file: profile.patchPath, patches: profile.patches }
      : { file: resolve(profilePatch), patches: loadOverlayPatches(NAME, resolve(profilePatch)) }
    const layers = [
      ...profile.layers.map((l) => ({ kind: 'bundle', package: l.packageName, file: l.patchPath, patches: l.patches })),
      { kind: 'profile', ...own },
      { kind: 'home', file: homeFile, patches: loadOptionalPatches(NAME, homeFile) ?? [] },
      ...(spec.patchFiles ?? []).map((file) => ({ kind: 'overlay', file: resolve(file), patches: loadOverlayPatches(NAME, resolve(file)) })),
    ]
    const warnings = []
    const rows = composeEntries(layers.map((l) => l.patches), (message) => warnings.push(message))
    return { bundles: profile.layers.map((l) => l.packageName), rows, layers, warnings }
  }
  const out = spec.profiles
    ? {
        profiles: Object.fromEntries(spec.profiles.map((name) => {
          try {
            return [name, compose(name)]
          } catch (e) {
            return [name, { error: String(e?.message ?? e) }]
          }
        })),
      }
    : compose(spec.profile, spec.profilePatch)
  process.stdout.write(JSON.stringify(out))
  process.exit(0)
}
const environment = loadLayeredEnv(NAME)
healProfilesModuleFallback(ANCHOR)
const profile = loadProfile(NAME, spec.profile, ANCHOR)
const rootConfig = join(profile.dir, 'cordis.yml')
writeFileSync(rootConfig, '[]\n')
const homePatches = loadOptionalPatches(NAME, join(resolveDshHome(), 'cordis.patch.yml')) ?? []
const overlays = (spec.patchFiles ?? []).flatMap((file) => loadOverlayPatches(NAME, resolve(file)))
const bundlePatches = profile.layers.flatMap((layer) => layer.patches)
const rows = new Map()
for (const row of composeEntries([bundlePatches, profile.patches, homePatches, overlays])) if (typeof row.id === 'string') rows.set(row.id, row)
if (rows.has('agent-presets')) overlays.push({ id: 'agent-presets', config: { ...rows.get('agent-presets')?.config, roots: [{ path: PRESETS, trust: 'system' }] } })
if ((process.env.DSH_TELEMETRY_DISABLED ?? '') !== '' && rows.has('session-telemetry-otel')) overlays.push({ id: 'session-telemetry-otel', disabled: true })

let app
let pending
const shutdown = (code, force) => {
  if (pending) {
    if (force) process.exit(code)
    return
  }
  // The tree's disposal writes out the session log and closes the checkpoint store; a disposal
  // that hangs must not keep the process (launch.mjs's stopGroup kills it some seconds later).
  const timer = setTimeout(() => process.exit(code), HOST_DISPOSE_LIMIT_MS)
  pending = Promise.resolve().then(() => app?.fiber.dispose()).then(
    () => {
      clearTimeout(timer)
      if (force) process.exit(code)
      else process.exitCode = code
    },
    () => process.exit(code))
}
process.on('SIGTERM', () => shutdown(0, true))
process.on('SIGINT', () => shutdown(130, true))
installFailLoud(NAME, process, async () => { await app?.fiber.dispose() })
app = await boot(NAME, rootConfig, structuredClone([...bundlePatches, ...profile.patches, ...homePatches, ...overlays]), (ctx) => {
  app = ctx
  ctx.provide(DSH_LAUNCH_ENVIRONMENT_KEY, environment)
  provideCmdline(ctx, { args: spec.args ?? [], exit: (code) => shutdown(code, false) })
})
if (process.env.DSH_FOLD_BOOT_TRACE) process.stderr.write(`[dsh-fold boot] tree settled in ${(performance.now() - t0).toFixed(0)} ms\n`)
