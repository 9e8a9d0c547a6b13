// @ts-check
/**
 * @module bin/compaction
 * `dsh-fold compaction enable|disable|status [--profile NAME] [--dsh-home DIR] [--json]`: which
 * compaction backend each DSH profile mounts, and the swap of dsh-base's `compaction-basic` for
 * `dsh-fold/compaction` in one profile.
 *
 * Where the swap goes: the profile's own patch layer, `$DSH_HOME/profiles/<profile>/cordis.patch.yml`,
 * never the home-wide `$DSH_HOME/cordis.patch.yml`: every profile reads that one, and a
 * `dsh-fold/compaction` row there stops every profile without dsh-fold at start ("plugin(s)
 * failed to load: dsh-fold/compaction"). `enable` appends one block, between marker comments,
 * to the profile's file (the host's empty `[]` template is replaced by it); the user's rows and
 * comments stay as they are. The block disables `compaction-basic` and inserts `compaction-fold`
 * (`dsh-fold/compaction`), carrying over the basic row's config keys the backend shares
 * (config.js `BASIC_KEYS`). `disable` puts back, byte for byte, what the file held before
 * `enable` when it is unchanged since (the install record `.dsh-fold-compaction.json` beside it
 * keeps those bytes, or that there was no file); when the file was edited since, it removes the
 * block alone.
 *
 * Every write is proven before it lands: the new text parsed in the host's own YAML dialect
 * must be the old list plus (or minus) exactly the block's rows, and the host's own composition
 * (bin/host/boot.mjs `compose`) of the profile with the new file must mount the intended backend.
 * A text that cannot be proven is refused (PATCH_UNEDITABLE) with the rows to edit by hand.
 *
 * Refusals: `enable` in a profile that does not have dsh-fold (or has one without the backend):
 * the row would not load and the profile would not start; in a profile whose agent presets each
 * compose their own backend (the web app: none at the host, so a host row would not reach them); `enable` while the home-wide patch
 * already swaps the backend (the old README's rows: remove them first, the message names their
 * lines); `disable` when the backend is mounted by rows dsh-fold did not write (named, to remove
 * by hand).
 *
 * `status` (and doctor, through `inspectCompaction`) reads every layer the host composes for a
 * profile (its bundles' patches, its own patch, the home-wide patch) and says which backend each
 * profile mounts, from which file and line, its settings, and every swap that cannot load: our
 * row in a profile without dsh-fold, two backends, a config the backend refuses at load. Exit 1
 * when a profile it reports would not start because of one.
 *
 * Crash safety (bin/durable.mjs): the new file is written whole and fsynced beside the old one
 * (`.cordis.patch.yml.dsh-fold-new-<pid>`), checked, then renamed over it; the record is written
 * the same way, before the patch on `enable` and removed after it on `disable`. A crash leaves
 * the old file or the new one; a record that does not match the file is ignored and replaced by
 * the next run, which also deletes the temporary files a dead process left.
 *
 * Errors are `CompactionError {code, exit}`: PROFILE_NOT_FOUND, HOST_NOT_FOUND (66);
 * PATCH_UNREADABLE, PATCH_UNEDITABLE, COMPOSE_FAILED (65); NO_DSH_FOLD, HOME_WIDE_SWAP,
 * PER_PRESET, FOREIGN_ROWS (1, refused); WRITE_FAILED (73). Nothing is written on any error.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs'
import path from 'node:path'

import { discard, fsyncDir, renameDurable, running, writeDurable } from './durable.mjs'
import { fail } from './cli.mjs'
import { hostDialect } from './host/dialect.mjs'
import { dshHomeOf, findInstalledHost, findNode22, HostError, isProfile, packageDir, tilde } from './host/find.mjs'
import { bootScript } from './host/launch.mjs'

/** The command line this module takes (bin/dsh-fold.mjs dispatches; bin/cli.mjs reads the usage). @type {import('./cli.mjs').Command} */
export const command = {
  usage: `Usage: dsh-fold compaction enable [--profile NAME] [--dsh-home DIR] [--json]
       dsh-fold compaction disable [--profile NAME] [--dsh-home DIR] [--json]
       dsh-fold compaction status [--profile NAME] [--dsh-home DIR] [--json]
  enable: compact one profile (default: headless) with dsh-fold/compaction, no model call,
  instead of dsh-base's compaction-basic. Written into that profile's own patch layer
  ($DSH_HOME/profiles/NAME/cordis.patch.yml), keeping your rows and comments there; no other
  profile reads it. Refused in a profile without dsh-fold (the row would not load there).
  disable: compaction-basic again, the file put back byte for byte as it was before enable.
  status: the backend every profile (or NAME) mounts, from which file, its settings, and any
  swap that cannot load (exit 1 when a profile would not start because of one).`,
  run: (opts) => runCompaction(opts, { fail }),
}

const OURS = 'dsh-fold/compaction'
const OUR_ID = 'compaction-fold'
const BASIC = '@deepseek-ai/dsh-compaction-basic'
const BASIC_ID = 'compaction-basic'
const PRESETS = '@deepseek-ai/dsh-agent-presets'
const PATCH_FILE = 'cordis.patch.yml'
const RECORD_FILE = '.dsh-fold-compaction.json'
const BEGIN = '# >>> dsh-fold compaction'
const END = '# <<< dsh-fold compaction'
/** The temporary files of a write in progress, beside the file they replace. */
const TEMP = /^\.(cordis\.patch\.yml|dsh-fold-compaction\.json)\.dsh-fold-new-(\d+)$/

export class CompactionError extends Error {
  /** @param {string} code @param {string} message @param {number} exit */
  constructor(code, message, exit) {
    super(message)
    this.code = code
    this.exit = exit
  }
}

const sha256 = (/** @type {string} */ text) => createHash('sha256').update(text).digest('hex')

/** @param {string} file @returns {string | null} */
function readText(file) {
  try {
    return readFileSync(file, 'utf8')
  } catch (e) {
    if (/** @type {any} */ (e)?.code === 'ENOENT') return null
    throw new CompactionError('PATCH_UNREADABLE', `cannot read ${file}: ${/** @type {Error} */ (e).message}`, 65)
  }
}

// ---- the block ---------------------------------------------------------------------------------

/**
 * The block `enable` writes: its text and the rows it parses to.
 * @param {Record<string, unknown>} config the backend row's config (what basic's carried over)
 */
export function swapBlock(config) {
  const carried = Object.keys(config)
  const rows = [{ id: BASIC_ID, disabled: true }, { insert: [{ id: OUR_ID, name: OURS, config }] }]
  const text = [
    `${BEGIN} (written by \`dsh-fold compaction enable\`; \`dsh-fold compaction disable\` removes it)`,
    '# This profile compacts with dsh-fold/compaction (no model call) instead of dsh-base\'s',
    '# compaction-basic. Its config takes basic\'s keys and its own: dsh-fold docs/compaction.md.',
    `- id: ${BASIC_ID}`,
    '  disabled: true',
    '- insert:',
    `    - id: ${OUR_ID}`,
    `      name: ${OURS}`,
    `      config: ${JSON.stringify(config)}${carried.length ? `   # carried over from compaction-basic's config` : ''}`,
    END,
    '',
  ].join('\n')
  return { text, rows }
}

/**
 * The blocks `enable` wrote in a text: each from its BEGIN line to its END line (0-based, inclusive).
 * @param {string | null} text
 * @returns {{start: number, end: number}[]}
 */
export function findBlocks(text) {
  if (text === null) return []
  const lines = text.split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith(BEGIN)) continue
    const end = lines.findIndex((l, j) => j > i && l.startsWith(END))
    if (end === -1) break
    out.push({ start: i, end })
    i = end
  }
  return out
}

/** Whether a line holds YAML content (not blank, not only a comment). @param {string} line */
const content = (line) => !/^\s*(#.*)?$/.test(line)

/**
 * The text with the block added: appended after the user's rows, or in place of the host's
 * empty `[]` list (the template a new profile gets). Undefined when neither applies.
 * @param {string | null} before @param {string} block
 */
function withBlock(before, block) {
  if (before === null || !before.split('\n').some(content)) return `${before ?? ''}${before && !before.endsWith('\n') ? '\n' : ''}${block}`
  const lines = before.split('\n')
  const data = lines.map((l, i) => ({ l, i })).filter(({ l }) => content(l))
  if (data.length === 1 && /^\s*\[\s*\]\s*(#.*)?$/.test(data[0].l)) {
    const comment = /#.*$/.exec(data[0].l)?.[0]
    lines.splice(data[0].i, 1, ...(comment ? [comment] : []), ...block.replace(/\n$/, '').split('\n'))
    return lines.join('\n')
  }
  if (/^\s*\[/.test(data[0].l)) return undefined // a flow-style list: not edited as text
  return `${before}${before.endsWith('\n') ? '' : '\n'}${block}`
}

/**
 * The text with every block removed; `[]` added when nothing of a list is left (the host
 * refuses a patch file that is not a list).
 * @param {string} text
 */
function withoutBlocks(text) {
  const lines = text.split('\n')
  for (const b of findBlocks(text).reverse()) lines.splice(b.start, b.end - b.start + 1)
  const out = lines.join('\n')
  return out.split('\n').some(content) ? out : `${out}${out && !out.endsWith('\n') ? '\n' : ''}[]\n`
}

// ---- the host's view --------------------------------------------------------------------------

/**
 * The host and a Node to run its composition on.
 * @param {string} dshHome @param {string} [profile]
 */
async function hostFor(dshHome, profile) {
  const host = await findInstalledHost({ dshHome, profile })
  if (!host) throw new CompactionError('HOST_NOT_FOUND', `no DeepSeek Harness host (@deepseek-ai/dsh) found: not on PATH as \`dsh\`, not linked from ${tilde(path.join(dshHome, 'profiles'))}; the backend a profile mounts is what the host composes, so it is read with the host (install it: README "Install into your DSH", or \`dsh-fold doctor\`)`, 66)
  const node = findNode22()
  if (!node) throw new CompactionError('HOST_NOT_FOUND', 'no Node >= 22 (the host\'s runtime) in this process or on PATH; install one (README "Install into your DSH", step 1)', 66)
  return { dir: host.dir, version: host.version, node22: node.node }
}

/**
 * The host's composition (bin/host/boot.mjs `compose`) of some profiles, or of one with a
 * candidate patch file in place of its own.
 * @param {{dir: string, node22: string}} host @param {string} dshHome @param {{profiles?: string[], profile?: string, profilePatch?: string}} what
 */
export function composeProfiles(host, dshHome, what) {
  const r = spawnSync(host.node22, [bootScript, JSON.stringify({ mode: 'compose', dshPackage: host.dir, patchFiles: [], ...what })], {
    encoding: 'utf8',
    env: { ...process.env, DSH_HOME: dshHome },
    maxBuffer: 256 << 20,
    timeout: 120_000,
  })
  if (r.status !== 0) {
    const why = (r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n').find((l) => /^(dsh: |Error|[A-Z][A-Za-z]*Error)/.test(l)) ?? (r.stderr || String(r.error)).trim().split('\n')[0]
    throw new CompactionError('COMPOSE_FAILED', `the host cannot compose ${what.profile ? `profile ${what.profile}` : 'the profiles'}${what.profilePatch ? ` with ${what.profilePatch}` : ''}: ${why}`, 65)
  }
  return JSON.parse(r.stdout)
}

/** Every row of a composed tree, nested groups flattened. @param {any[]} rows @returns {any[]} */
export const flatten = (rows) => rows.flatMap((r) => [r, ...(Array.isArray(r?.config) && r?.group ? flatten(r.config) : [])])

/** Whether a patch list inserts a row named `name` (at any depth). @param {any[]} patches @param {string} name @returns {boolean} */
const inserts = (patches, name) => patches.some((p) => Array.isArray(p?.insert) && (p.insert.some((/** @type {any} */ r) => r?.name === name) || inserts(p.insert, name)))

/** Whether a patch list targets row `id` (a config, a disable, a name check). @param {any[]} patches @param {string} id */
const targets = (patches, id) => patches.some((p) => p?.id === id && !Array.isArray(p?.insert))

/** The profiles of a DSH home, by name. @param {string} dshHome */
export function profilesOf(dshHome) {
  const dir = path.join(dshHome, 'profiles')
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((name) => name !== 'node_modules' && !name.startsWith('.') && isProfile(path.join(dir, name)))
    .sort()
}

/**
 * dsh-fold as the profile's loader resolves `dsh-fold/compaction`: installed (resolvable from
 * the profile's folder) and shipping the backend.
 * @param {string} profileDir
 */
function dshFoldIn(profileDir) {
  const dir = packageDir(profileDir, 'dsh-fold')
  if (!dir) return { installed: false, backend: false }
  let manifest
  try {
    manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))
  } catch {
    manifest = null
  }
  return { installed: true, version: manifest?.version ?? null, dir, backend: Boolean(manifest?.exports?.['./compaction']) }
}

/**
 * Where a layer file swaps the backend, as lines a user can delete: each relevant row's extent
 * (a lone row of an `insert:` takes its `- insert:` with it).
 * @param {string} file
 * @returns {{from: number, to: number, what: string}[]}
 */
export function swapRowsIn(file) {
  const text = readText(file)
  if (text === null) return []
  const lines = text.split('\n')
  const indent = (/** @type {string} */ l) => /^\s*/.exec(l)?.[0].length ?? 0
  /** The sequence item holding line i, as [start, end] (0-based). @param {number} i */
  const item = (i) => {
    let start = i
    while (start >= 0 && !(/^\s*- /.test(lines[start]) && (start === i || indent(lines[start]) < indent(lines[i])))) start--
    if (start < 0) return null
    const dash = indent(lines[start])
    let end = start + 1
    while (end < lines.length && !(content(lines[end]) && indent(lines[end]) <= dash)) end++
    end--
    while (end > start && !content(lines[end])) end--
    return [start, end]
  }
  const out = []
  for (const [i, l] of lines.entries()) {
    const what = /^\s*(- )?name:\s*['"]?dsh-fold\/compaction['"]?\s*(#.*)?$/.test(l) ? `inserts ${OURS}` : /^\s*(- )?id:\s*['"]?compaction-basic['"]?\s*(#.*)?$/.test(l) ? `targets ${BASIC_ID}` : null
    if (!what) continue
    let span = item(i)
    if (!span) continue
    // A row that is the only item of an `insert:` list goes with its `- insert:` entry.
    const parentLine = span[0] - 1
    if (parentLine >= 0 && /^\s*- insert:\s*(#.*)?$/.test(lines[parentLine])) {
      const parent = item(parentLine)
      const siblings = parent ? lines.slice(parentLine + 1, parent[1] + 1).filter((x) => /^\s*- /.test(x) && indent(x) === indent(lines[span[0]])).length : 0
      if (parent && siblings === 1) span = parent
    }
    if (!out.some((o) => o.from === span[0] + 1)) out.push({ from: span[0] + 1, to: span[1] + 1, what })
  }
  // Rows one after another make one span.
  return out.sort((a, b) => a.from - b.from).reduce((/** @type {typeof out} */ spans, s) => {
    const last = spans.at(-1)
    if (last && s.from === last.to + 1) spans[spans.length - 1] = { from: last.from, to: s.to, what: `${last.what}, ${s.what}` }
    else spans.push(s)
    return spans
  }, [])
}

/** `lines 3–9` / `line 4`. @param {{from: number, to: number}[]} spans */
const linesOf = (spans) => spans.map((s) => (s.from === s.to ? `line ${s.from}` : `lines ${s.from}–${s.to}`)).join(', ')

/**
 * @typedef {object} Problem
 * @property {string} code
 * @property {boolean} fatal the profile would not start
 * @property {string} message
 * @property {string} [fix]
 */

/**
 * @typedef {object} Layer one patch file the host composes a profile from
 * @property {'bundle' | 'profile' | 'home' | 'overlay'} kind
 * @property {string} file
 * @property {string} [package] a bundle's package
 */

/** A layer, for a person: a bundle by its package, a file by its path. @param {Layer} l */
export const layerName = (l) => (l.kind === 'bundle' ? `${l.package}'s bundle patch` : tilde(l.file))

/**
 * @typedef {object} ProfileCompaction
 * @property {string} profile
 * @property {string} dir
 * @property {{installed: boolean, version?: string | null, backend: boolean}} dshFold
 * @property {'dsh-fold' | 'compaction-basic' | 'presets' | 'none' | 'several' | 'unknown'} backend
 *   `presets`: none at the host, the profile's agent presets each compose one (the web app)
 * @property {{id: string, name: string, config: any, from: Layer[]}[]} rows the enabled compaction rows, with the layers that insert or patch each
 * @property {string | null} settings the backend's key settings, in one line
 * @property {boolean} enabledByCommand the profile's patch holds `enable`'s block
 * @property {Problem[]} problems
 * @property {boolean} starts no problem stops the profile at start
 */

/**
 * The backend every profile mounts, from which layer, and what stops one from starting.
 * `addDshFold(profile)` is the command a fix names to add dsh-fold to a profile (doctor passes
 * the one that works where dsh-fold comes from: by name, or a checkout's tarballs).
 * @param {{dshHome: string, host: {dir: string, node22: string}, profiles?: string[], composed?: Record<string, any>, addDshFold?: (profile: string) => string}} options
 *   `composed`: the host's composition of those profiles, when the caller has it already
 */
export async function inspectCompaction({ dshHome, host, profiles = profilesOf(dshHome), composed = profiles.length ? composeProfiles(host, dshHome, { profiles }).profiles : {}, addDshFold = (profile) => `dsh plugin --profile ${profile} add dsh-fold` }) {
  const homeFile = path.join(dshHome, PATCH_FILE)
  const homeRows = swapRowsIn(homeFile)
  const config = await configRules()
  const all = profiles.map((name) => describe(name, path.join(dshHome, 'profiles', name), composed[name], config))
  const homeSwap = all.some((p) => p.rows.some((r) => r.name === OURS && r.from.some((l) => l.kind === 'home'))) || homeRows.some((r) => r.what.includes('inserts'))
  const withDshFold = all.filter((p) => p.dshFold.installed && p.dshFold.backend).map((p) => p.profile)
  for (const p of all) {
    const ours = p.rows.find((r) => r.name === OURS)
    const fromHome = ours?.from.some((l) => l.kind === 'home')
    if (ours && !(p.dshFold.installed && p.dshFold.backend)) {
      const why = p.dshFold.installed ? `its dsh-fold ${p.dshFold.version} has no compaction backend` : 'it does not have dsh-fold'
      p.problems.push({
        code: 'SWAP_CANNOT_LOAD',
        fatal: true,
        message: `profile ${p.profile} does not start ("plugin(s) failed to load: ${OURS}"): it reads a ${OURS} row from ${ours.from.map(layerName).join(' and ')}${fromHome ? ` (${linesOf(homeRows)}), which every profile reads,` : ''} and ${why}`,
        fix: fromHome ? moveFix(homeFile, homeRows, withDshFold) : `${undo(p, ours.from)}   (or add ${p.dshFold.installed ? 'a dsh-fold with the backend' : 'dsh-fold'}: ${addDshFold(p.profile)})`,
      })
    } else if (ours && fromHome) {
      p.problems.push({
        code: 'HOME_WIDE_SWAP',
        fatal: false,
        message: `${OURS} is mounted from ${tilde(homeFile)} (${linesOf(homeRows)}), which every profile reads: it works here, but any profile without dsh-fold fails to start`,
        fix: moveFix(homeFile, homeRows, withDshFold),
      })
    }
    p.starts = !p.problems.some((x) => x.fatal)
  }
  return { dshHome, homeFile, homeSwap: homeSwap ? homeRows : null, profiles: all }
}

/**
 * How to take a profile's own swap out: `disable` for the block `enable` wrote, else the lines to
 * delete by hand.
 * @param {ProfileCompaction} p @param {Layer[]} from
 */
function undo(p, from) {
  if (p.enabledByCommand) return `dsh-fold compaction disable --profile ${p.profile}`
  return from.filter((l) => l.kind !== 'bundle').map((l) => `delete ${linesOf(swapRowsIn(l.file))} of ${tilde(l.file)}`).join('; ')
}

/** How to move a home-wide swap into the profiles that have dsh-fold. @param {string} homeFile @param {{from: number, to: number}[]} rows @param {string[]} profiles */
function moveFix(homeFile, rows, profiles) {
  const lines = (readText(homeFile) ?? '').split('\n')
  const rest = lines.filter((_, i) => !rows.some((r) => i + 1 >= r.from && i + 1 <= r.to))
  const drop = rest.some(content)
    ? `delete ${linesOf(rows)} of ${tilde(homeFile)} (the swap written where every profile reads it)`
    : `replace ${linesOf(rows)} of ${tilde(homeFile)} with the line [] (the swap is all it holds, and the host needs a list there)`
  return [
    drop,
    ...(profiles.length ? profiles.map((p) => `dsh-fold compaction enable --profile ${p}`) : ['dsh-fold compaction enable --profile NAME   (for each profile that has dsh-fold)']),
  ].join('\n')
}

/**
 * The backend's config rules (plugin/compaction/config.js), when they load here: they need
 * `@deepseek-ai/schemastery`, which a profile's copy and a checkout resolve.
 */
async function configRules() {
  try {
    return await import('../plugin/compaction/config.js')
  } catch {
    return null
  }
}

/**
 * @param {string} name @param {string} dir @param {any} composed @param {Awaited<ReturnType<typeof configRules>>} rules
 * @returns {ProfileCompaction}
 */
function describe(name, dir, composed, rules) {
  const dshFold = dshFoldIn(dir)
  const enabledByCommand = findBlocks(readText(path.join(dir, PATCH_FILE))).length > 0
  /** @type {ProfileCompaction} */
  const p = { profile: name, dir, dshFold, backend: 'unknown', rows: [], settings: null, enabledByCommand, problems: [], starts: true }
  if (!composed || composed.error) {
    p.problems.push({ code: 'COMPOSE_FAILED', fatal: true, message: `the host cannot compose profile ${name}: ${String(composed?.error ?? 'no answer').split('\n')[0]}` })
    p.starts = false
    return p
  }
  const layers = /** @type {any[]} */ (composed.layers)
  const rows = flatten(composed.rows).filter((r) => !r.disabled && (r.name === OURS || r.name === BASIC || r.id === BASIC_ID))
  p.rows = rows.map((r) => ({
    id: r.id,
    name: r.name,
    config: r.config ?? {},
    from: layers.filter((l) => inserts(l.patches, r.name) || targets(l.patches, r.id)).map(({ kind, file, package: pkg }) => ({ kind, file, ...(pkg ? { package: pkg } : {}) })),
  }))
  // The web app mounts no backend at the host: each agent preset composes its own.
  const presets = flatten(composed.rows).some((r) => !r.disabled && r.name === PRESETS)
  p.backend = rows.length === 0 ? (presets ? 'presets' : 'none') : rows.length > 1 ? 'several' : rows[0].name === OURS ? 'dsh-fold' : rows[0].name === BASIC ? 'compaction-basic' : 'unknown'
  if (rows.length > 1) {
    p.problems.push({ code: 'SEVERAL_BACKENDS', fatal: true, message: `profile ${name} mounts ${rows.length} compaction backends (${rows.map((r) => `${r.id}: ${r.name}`).join(', ')}); one registers ctx.compaction`, fix: `dsh-fold compaction disable --profile ${name}, then dsh-fold compaction enable --profile ${name}   (or remove the extra row by hand)` })
  }
  const row = rows[0]
  if (row && rules && (row.name === OURS || row.name === BASIC)) {
    try {
      const keys = row.name === OURS ? row.config ?? {} : Object.fromEntries(Object.entries(row.config ?? {}).filter(([k]) => rules.BASIC_KEYS.includes(k)))
      // Without its own language the backend speaks the rewind row's (plugin/shared/language.js).
      const rewind = flatten(composed.rows).find((r) => !r.disabled && r.name === 'dsh-fold/rewind')
      p.settings = settingsLine({ language: rewind?.config?.reportLanguage === 'zh' ? 'zh' : 'en', ...rules.resolveConfig(keys) }, row.name === OURS)
    } catch (e) {
      if (row.name === OURS) p.problems.push({ code: 'INVALID_CONFIG', fatal: true, message: `profile ${name}'s ${row.id} row fails at load: ${/** @type {Error} */ (e).message}`, fix: `fix the row's config in ${p.rows[0].from.map(layerName).join(' or ')} (dsh-fold docs/compaction.md, Configuration)` })
    }
  }
  p.starts = !p.problems.some((x) => x.fatal)
  return p
}

/** The key settings in one line. @param {any} c a resolved config @param {boolean} ours */
function settingsLine(c, ours) {
  const tail = c.retainTokens !== undefined ? `a ${c.retainTokens}-token tail` : `a ${c.retainRatio} tail`
  const when = c.auto ? `at ${c.thresholdRatio} of the context window (${tail} kept)` : 'on /compact only'
  if (!ours) return `compacts ${when}; one model call per compaction (maxTokens ${c.maxTokens})`
  const cap = c.maxSummaryTokens !== undefined ? `${c.maxSummaryTokens} tokens` : `${c.summaryRatio} of the window, at least 8192 tokens`
  return `compacts ${when}; summarizer ${c.summarizer}${c.summarizer === 'extractive' ? ' (no model call)' : ' (one model call, extractive fallback)'}; checkpoint cap ${cap}; language ${c.language}`
}

// ---- writing ----------------------------------------------------------------------------------

/** Deletes the temporary files of a dsh-fold that died mid-write. @param {string} profileDir */
function recover(profileDir) {
  const done = []
  for (const name of readdirSync(profileDir)) {
    const m = TEMP.exec(name)
    if (!m || running(Number(m[2]))) continue
    try {
      unlinkSync(path.join(profileDir, name))
      done.push(`deleted ${name}, left by an interrupted run`)
    } catch (e) {
      throw new CompactionError('WRITE_FAILED', `cannot delete ${path.join(profileDir, name)}, left by an interrupted run: ${/** @type {Error} */ (e).message}`, 73)
    }
  }
  if (done.length) fsyncDir(profileDir)
  return done
}

/**
 * The install record, when it is one `enable` wrote and still describes the file.
 * @param {string} profileDir @returns {{before: string | null, written: string} | null}
 */
function readRecord(profileDir) {
  const text = readText(path.join(profileDir, RECORD_FILE))
  if (text === null) return null
  try {
    const r = JSON.parse(text)
    if (r?.by !== 'dsh-fold' || typeof r.written !== 'string' || !(r.before === null || typeof r.before === 'string')) return null
    return { before: r.before, written: r.written }
  } catch {
    return null
  }
}

/** @param {string} what @param {unknown} e @returns {never} */
function writeFailed(what, e) {
  throw new CompactionError('WRITE_FAILED', `${what}: ${/** @type {Error} */ (e).message}`, 73)
}

/** Puts a checked temporary in place of `file`: rename, fsync the folder. @param {string} file @param {string} temp */
function putInPlace(file, temp) {
  try {
    renameDurable(temp, file)
  } catch (e) {
    discard(temp)
    writeFailed(`cannot put the new ${path.basename(file)} in place at ${file} (the old one is untouched)`, e)
  }
}

/** Writes `text` beside `file` as its temporary. @param {string} file @param {string} text @param {number} mode */
function writeTemp(file, text, mode) {
  const base = path.basename(file)
  const temp = path.join(path.dirname(file), `${base.startsWith('.') ? '' : '.'}${base}.dsh-fold-new-${process.pid}`)
  discard(temp)
  try {
    writeDurable(temp, text, mode)
  } catch (e) {
    discard(temp)
    writeFailed(`cannot write ${temp}`, e)
  }
  return temp
}

/** Deletes a file durably (absent is fine). @param {string} file */
function removeDurable(file) {
  try {
    unlinkSync(file)
  } catch (e) {
    if (/** @type {any} */ (e)?.code === 'ENOENT') return
    writeFailed(`cannot delete ${file}`, e)
  }
  fsyncDir(path.dirname(file))
}

/** The mode to keep: the file's own, else what the host writes (0644 less the umask). @param {string} file */
function modeOf(file) {
  try {
    return statSync(file).mode & 0o777
  } catch {
    return 0o644 & ~process.umask()
  }
}

/**
 * The profile a write targets, checked.
 * @param {Record<string, any>} opts
 */
function target(opts) {
  const dshHome = dshHomeOf(opts['dsh-home'])
  const profile = opts.profile ?? 'headless'
  const profileDir = path.join(dshHome, 'profiles', profile)
  if (!isProfile(profileDir)) {
    const known = profilesOf(dshHome)
    throw new CompactionError('PROFILE_NOT_FOUND', `no profile ${profile} in ${tilde(dshHome)}${known.length ? ` (its profiles: ${known.join(', ')})` : ''}; create it with dsh-fold in it: dsh plugin --profile ${profile} add dsh-fold`, 66)
  }
  return { dshHome, profile, profileDir, file: path.join(profileDir, PATCH_FILE) }
}

/**
 * Parses a patch text in the host's dialect, or throws PATCH_UNREADABLE.
 * @param {{load: (text: string) => unknown}} dialect @param {string | null} text @param {string} file @returns {any[]}
 */
function parseList(dialect, text, file) {
  if (text === null) return []
  let rows
  try {
    rows = dialect.load(text)
  } catch (e) {
    throw new CompactionError('PATCH_UNREADABLE', `${file} does not parse (the host would refuse it too): ${/** @type {Error} */ (e).message}`, 65)
  }
  if (!Array.isArray(rows)) throw new CompactionError('PATCH_UNREADABLE', `${file} is not a list of patch entries (the host would refuse it too)`, 65)
  return rows
}

/** @param {string} dir */
async function dialectOf(dir) {
  try {
    return await hostDialect(dir)
  } catch (e) {
    if (e instanceof HostError) throw new CompactionError(e.code, e.message, e.exit)
    throw e
  }
}

/** @param {Record<string, any>} opts */
export async function enable(opts) {
  const { dshHome, profile, profileDir, file } = target(opts)
  const host = await hostFor(dshHome, profile)
  const dialect = await dialectOf(host.dir)
  const recovered = recover(profileDir)
  const state = (await inspectCompaction({ dshHome, host, profiles: [profile] })).profiles[0]
  const composeError = state.problems.find((p) => p.code === 'COMPOSE_FAILED')
  if (composeError) throw new CompactionError('COMPOSE_FAILED', `${composeError.message}; nothing was written`, 65)
  if (!state.dshFold.installed || !state.dshFold.backend) {
    const has = state.dshFold.installed ? `its dsh-fold ${state.dshFold.version} has no compaction backend` : `it does not have dsh-fold (nothing resolves dsh-fold from ${tilde(profileDir)})`
    throw new CompactionError('NO_DSH_FOLD', `profile ${profile}: ${has}, so a ${OURS} row there would not load and the profile would not start; nothing was written. Add dsh-fold to it first: dsh plugin --profile ${profile} add dsh-fold`, 1)
  }
  const home = path.join(dshHome, PATCH_FILE)
  const homeRows = swapRowsIn(home)
  if (homeRows.some((r) => r.what.includes('inserts'))) {
    throw new CompactionError('HOME_WIDE_SWAP', `${tilde(home)} already swaps the backend (${linesOf(homeRows)}: ${homeRows.map((r) => r.what).join(', ')}); every profile reads that file, so each profile without dsh-fold fails to start. Delete those lines, then run this again: it writes the swap into profile ${profile} alone. Nothing was written`, 1)
  }
  if (state.backend === 'presets') {
    throw new CompactionError('PER_PRESET', `profile ${profile} mounts no compaction backend at the host: its agent presets each compose one (the web app's sessions compact with their preset's, compaction-basic in the host's presets), and a host row would not reach them; nothing was written. This command swaps the backend of a profile that mounts it at the host, such as headless`, 1)
  }
  if (state.backend === 'dsh-fold') {
    return { action: 'unchanged', profile, file, by: state.enabledByCommand ? 'enable' : 'rows', rows: state.rows, settings: state.settings, recovered }
  }
  const basic = state.rows.find((r) => r.name === BASIC || r.id === BASIC_ID)
  const rules = await configRules()
  const carried = Object.fromEntries(Object.entries(basic?.config ?? {}).filter(([k]) => (rules?.BASIC_KEYS ?? []).includes(k)))
  const block = swapBlock(carried)
  const before = readText(file)
  const oldRows = parseList(dialect, before, file)
  const text = withBlock(before, block.text)
  const proven = text !== undefined && JSON.stringify(parseList(dialect, text, file)) === JSON.stringify([...oldRows, ...block.rows])
  if (!proven) {
    throw new CompactionError('PATCH_UNEDITABLE', `${file} is not written in a form this command edits as text (a flow-style list?), so it would lose your formatting; nothing was written. Add these rows at its end by hand:\n${block.text}`, 65)
  }
  const temp = writeTemp(file, text, modeOf(file))
  let after
  try {
    after = describe(profile, profileDir, composeProfiles(host, dshHome, { profile, profilePatch: temp }), rules)
  } catch (e) {
    discard(temp)
    throw e
  }
  if (after.backend !== 'dsh-fold' || !after.starts) {
    discard(temp)
    throw new CompactionError('PATCH_UNEDITABLE', `with the swap added, the host composes profile ${profile} to ${after.backend}${after.problems.length ? ` (${after.problems.map((p) => p.message).join('; ')})` : ''}, not ${OURS}; nothing was written`, 65)
  }
  const recordFile = path.join(profileDir, RECORD_FILE)
  const recordTemp = writeTemp(recordFile, `${JSON.stringify({ by: 'dsh-fold', what: 'dsh-fold compaction enable', profile, file, before, written: sha256(text), at: new Date().toISOString() }, null, 2)}\n`, 0o600)
  try {
    renameDurable(recordTemp, recordFile)
  } catch (e) {
    discard(recordTemp)
    discard(temp)
    writeFailed(`cannot write the install record ${recordFile} (nothing was changed)`, e)
  }
  putInPlace(file, temp)
  return { action: 'enabled', profile, file, created: before === null, carried, rows: after.rows, settings: after.settings, recovered }
}

/** @param {Record<string, any>} opts */
export async function disable(opts) {
  const { dshHome, profile, profileDir, file } = target(opts)
  const host = await hostFor(dshHome, profile)
  const dialect = await dialectOf(host.dir)
  const recovered = recover(profileDir)
  const recordFile = path.join(profileDir, RECORD_FILE)
  const current = readText(file)
  const blocks = findBlocks(current)
  if (blocks.length === 0) {
    removeDurable(recordFile) // a record without its block: an interrupted disable's, or stale
    const state = (await inspectCompaction({ dshHome, host, profiles: [profile] })).profiles[0]
    const ours = state.rows.find((r) => r.name === OURS)
    if (ours) {
      const spans = ours.from.map((l) => `${layerName(l)}${l.kind !== 'bundle' && swapRowsIn(l.file).length ? ` (${linesOf(swapRowsIn(l.file))})` : ''}`)
      throw new CompactionError('FOREIGN_ROWS', `profile ${profile} mounts ${OURS} through rows dsh-fold compaction enable did not write: ${spans.join(' and ')}; nothing was changed. Remove those rows by hand${ours.from.some((l) => l.kind === 'home') ? ' (in the home-wide patch they stop every profile without dsh-fold from starting)' : ''}`, 1)
    }
    return { action: 'unchanged', profile, file, backend: state.backend, settings: state.settings, recovered }
  }
  const record = readRecord(profileDir)
  const exact = record !== null && current !== null && sha256(current) === record.written
  /** @type {string | null} */
  let text
  let removed = []
  if (exact) {
    text = /** @type {{before: string | null}} */ (record).before
  } else {
    const lines = /** @type {string} */ (current).split('\n')
    const blockRows = blocks.flatMap((b) => parseList(dialect, lines.slice(b.start, b.end + 1).join('\n'), file))
    removed = blockRows
    text = withoutBlocks(/** @type {string} */ (current))
    const rest = parseList(dialect, text, file)
    const all = parseList(dialect, current, file)
    const json = JSON.stringify(all)
    const proven = blocks.length === 1
      ? Array.from({ length: rest.length + 1 }, (_, i) => JSON.stringify([...rest.slice(0, i), ...blockRows, ...rest.slice(i)])).includes(json)
      : JSON.stringify(all.filter((r) => !blockRows.some((b) => JSON.stringify(b) === JSON.stringify(r)))) === JSON.stringify(rest)
    if (!proven) throw new CompactionError('PATCH_UNEDITABLE', `${file}: removing the lines between "${BEGIN}" and "${END}" would change other rows; nothing was changed. Remove that block by hand`, 65)
  }
  if (text === null) {
    // The file did not exist before enable: it goes, the record after it.
    try {
      unlinkSync(file)
      fsyncDir(profileDir)
    } catch (e) {
      writeFailed(`cannot delete ${file}`, e)
    }
  } else {
    const temp = writeTemp(file, text, modeOf(file))
    if (!exact) {
      let after
      try {
        after = describe(profile, profileDir, composeProfiles(host, dshHome, { profile, profilePatch: temp }), await configRules())
      } catch (e) {
        discard(temp)
        throw e
      }
      if (after.problems.some((p) => p.code === 'COMPOSE_FAILED')) {
        discard(temp)
        throw new CompactionError('PATCH_UNEDITABLE', `without the block, the host cannot compose profile ${profile}: ${after.problems[0].message}; nothing was changed`, 65)
      }
    }
    putInPlace(file, temp)
  }
  removeDurable(recordFile)
  const state = (await inspectCompaction({ dshHome, host, profiles: [profile] })).profiles[0]
  return { action: 'disabled', profile, file, restored: exact ? (text === null ? 'deleted (there was no file before enable)' : 'put back byte for byte as it was before enable') : 'kept with the block removed (it was edited since enable)', removed, backend: state.backend, rows: state.rows, settings: state.settings, recovered }
}

/** @param {Record<string, any>} opts */
export async function status(opts) {
  const dshHome = dshHomeOf(opts['dsh-home'])
  if (opts.profile !== undefined) target(opts)
  const host = await hostFor(dshHome, opts.profile)
  return inspectCompaction({ dshHome, host, profiles: opts.profile !== undefined ? [opts.profile] : profilesOf(dshHome) })
}

/** One profile's backend, in words. @param {ProfileCompaction} p */
export function backendLine(p) {
  const row = p.rows[0]
  const from = row ? ` (row ${row.id}, from ${row.from.map(layerName).join(' + ') || 'the bundles'}${p.enabledByCommand && row.name === OURS ? ', written by dsh-fold compaction enable' : ''})` : ''
  switch (p.backend) {
    case 'dsh-fold':
      return `${OURS}${from}`
    case 'compaction-basic':
      return `compaction-basic${from}${p.dshFold.installed && p.dshFold.backend ? `; dsh-fold compaction enable --profile ${p.profile} swaps in ${OURS}` : ''}`
    case 'presets':
      return 'compaction inside each agent preset: the host mounts no backend, and a session compacts with the one its preset composes (compaction-basic in the host\'s presets); dsh-fold compaction swaps the host\'s row only'
    case 'none':
      return 'no compaction backend (the context is never compacted; /compact has nothing to call)'
    case 'several':
      return `several backends: ${p.rows.map((r) => `${r.id} (${r.name})`).join(', ')}`
    default:
      return row ? `${row.name}${from}` : 'unknown (the profile could not be composed)'
  }
}

/**
 * The command: validation, the operation, its report.
 * @param {Record<string, any>} opts @param {{fail: (message: string, exit: number) => never}} cli
 * @returns {Promise<number>} the exit code
 */
export async function runCompaction(opts, cli) {
  const verb = opts._[1]
  if (!['enable', 'disable', 'status'].includes(verb)) cli.fail(`compaction needs enable, disable or status (got ${verb})`, 64)
  for (const key of ['profile', 'dsh-home']) if (opts[key] === '') cli.fail(`--${key} needs a non-empty value`, 64)
  if (opts.profile !== undefined && /[/\\]|^\.\.?$|^node_modules$/.test(opts.profile)) cli.fail(`--profile ${opts.profile}: a profile name, not a path`, 64)
  let out
  try {
    out = verb === 'enable' ? await enable(opts) : verb === 'disable' ? await disable(opts) : await status(opts)
  } catch (e) {
    if (e instanceof CompactionError) cli.fail(`${e.code}: ${e.message}`, e.exit)
    throw e
  }
  const r = /** @type {any} */ (out)
  const broken = verb === 'status' && r.profiles.some((/** @type {ProfileCompaction} */ p) => !p.starts)
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(verb === 'status' ? { ok: !broken, ...r } : r, null, 2)}\n`)
    return broken ? 1 : 0
  }
  for (const step of r.recovered ?? []) console.log(`finished an interrupted run: ${step}`)
  if (verb === 'status') {
    printStatus(r)
    return broken ? 1 : 0
  }
  const where = tilde(r.file)
  if (verb === 'enable') {
    if (r.action === 'unchanged') console.log(`profile ${r.profile} already compacts with ${OURS}${r.by === 'enable' ? ` (enabled in ${where})` : ` (mounted by rows dsh-fold did not write: ${r.rows[0].from.map(layerName).join(' + ')})`}; nothing written`)
    else {
      console.log(`enabled ${OURS} in profile ${r.profile}: ${where} ${r.created ? 'created with' : 'now ends with'} the swap (compaction-basic disabled, ${OUR_ID} inserted)${r.created ? '' : '; your rows and comments there are kept'}`)
      if (Object.keys(r.carried).length) console.log(`  carried over from compaction-basic's config: ${JSON.stringify(r.carried)}`)
    }
    if (r.settings) console.log(`  ${r.settings}`)
    if (r.action !== 'unchanged') console.log(`  no other profile reads that file; the next \`dsh --profile ${r.profile}\` uses it (\`dsh-fold compaction disable --profile ${r.profile}\` undoes it)`)
    return 0
  }
  if (r.action === 'unchanged') console.log(`profile ${r.profile}: dsh-fold compaction enable wrote nothing in ${where}; it compacts with ${r.backend}; nothing changed`)
  else {
    console.log(`disabled ${OURS} in profile ${r.profile}: ${where} ${r.restored}; it compacts with ${r.backend} again`)
    const edited = r.removed.flatMap((/** @type {any} */ x) => x.insert ?? []).find((/** @type {any} */ x) => x?.config && Object.keys(x.config).length)
    if (edited) console.log(`  removed with the block: ${edited.id}'s config ${JSON.stringify(edited.config)}`)
  }
  if (r.settings) console.log(`  ${r.settings}`)
  return 0
}

/** @param {Awaited<ReturnType<typeof inspectCompaction>>} s */
function printStatus(s) {
  console.log(`compaction backends in ${tilde(s.dshHome)}:`)
  if (s.profiles.length === 0) console.log(`  no profiles in ${tilde(path.join(s.dshHome, 'profiles'))} yet`)
  for (const p of s.profiles) {
    console.log(`${p.starts ? '✓' : '✗'} ${p.profile}: ${backendLine(p)}`)
    if (p.settings) console.log(`    ${p.settings}`)
    for (const problem of p.problems) {
      console.log(`    ${problem.fatal ? 'error' : 'warning'}: ${problem.message}`)
      if (problem.fix) for (const l of problem.fix.split('\n')) console.log(`    fix: ${l}`)
    }
  }
  if (s.homeSwap && !s.profiles.some((p) => p.problems.some((x) => x.code === 'HOME_WIDE_SWAP' || x.code === 'SWAP_CANNOT_LOAD'))) {
    console.log(`warning: ${tilde(s.homeFile)}, read by every profile, swaps the backend (${linesOf(s.homeSwap)}): a profile without dsh-fold would not start`)
  }
}
