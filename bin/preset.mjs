/**
 * @module bin/preset
 * `dsh-fold preset install | remove | status`: the `block-ptc` agent preset in the user's
 * DSH home, `$DSH_HOME/.agent-presets/block-ptc/` (the roster's writable root, which every
 * preset-composing host scans: DSH 0.1.0-rc.8 lets no bundle add a preset root).
 *
 * What it writes is derived from the INSTALLED host at install time, never copied into this
 * repository: the host's shipped `code` preset (`<@deepseek-ai/dsh>/config/agent-presets/code/
 * agent.cordis.yml`, Code Mode), its `tool-presentation` row switched from `code` to `both`
 * (under `code` the host's `run_code` is the only tool a model can call, so a plugin tool could
 * never be reached; `both` keeps the native schemas and the generated SDK), and block mode's
 * rows appended. The host's text is edited in place so its comments survive; the edit is
 * checked by parsing the result with the host's own YAML dialect (`js-yaml` + the loader's
 * `!!js` type from the host's `@deepseek-ai/cordis-plugin-include`) and comparing it to the
 * parsed original plus exactly the intended changes; if the text edit cannot be proven, the
 * rows are re-serialized in that dialect instead (comments lost, and the record says so).
 *
 * The host is found by bin/host/find.mjs `findHost`: `--host DIR`; else the package Node resolves
 * from `$DSH_HOME/profiles/<--profile>/` (or `$DSH_HOME/profiles/`) — every `dsh` launch links its
 * own packages into `$DSH_HOME/profiles/node_modules`; else the one it resolves from where this
 * dsh-fold is installed (a bundle inside a profile). The command adds one step for `install` and
 * `status` without `--host`: a profile made by `dsh plugin add` links no host packages until
 * `dsh` first runs it, so when none of those finds one, the host `dsh` on PATH runs is taken as
 * if given by `--host`.
 *
 * Files: `agent.cordis.yml`, `preset.yml` (display name and description) and `.dsh-fold.json`
 * (the install record: dsh-fold version, host version and folder, the source file and its
 * sha256, each written file's sha256). Files 0600, folder 0700. The shipped presets are only
 * read.
 *
 * Safety: a preset folder whose files differ from the record (the user edited it, or added any
 * file — whatever its name: the record is read with own-property checks), or that dsh-fold did
 * not write (no record, or a record that names anything but plain files of the folder), is
 * never replaced or removed without `--force`, and with `--force` it is moved whole to
 * `$DSH_HOME/.agent-presets/.dsh-fold-backups/block-ptc-<time>/` (a dot-folder the roster never
 * lists), never deleted.
 *
 * Crash safety: the replace is a sequence of atomic steps (bin/durable.mjs), each durable before the next —
 * (1) the new preset is written into `.block-ptc.new-<pid>/` (each file and the folder fsynced);
 * (2) the old folder is renamed aside to `.block-ptc.old-<pid>`; (3) the new one is renamed in;
 * (4) the parent is fsynced; (5) the old one is renamed to `.block-ptc.trash-<pid>` and deleted
 * (an unmodified dsh-fold preset) or renamed into the backups (anything else). `remove` renames
 * the folder to the trash (or the backups) before deleting anything. A crash at any instant
 * leaves the old preset or the new one: in place, or — between (2) and (3) — whole beside it.
 * Every `install` and `remove` first finishes what an interrupted run left (`recover`): the
 * old folder set aside with nothing in place is put back; one set aside behind a new preset is
 * deleted if it is an unmodified dsh-fold preset, else moved to the backups; half-written new
 * folders and the trash are deleted. Leftovers of a dsh-fold process still running are left
 * alone. `status` reports leftovers without touching them.
 *
 * Errors are `PresetError {code, exit}`: CODE_PRESET_NOT_FOUND (66); CODE_PRESET_UNREADABLE,
 * CODE_PRESET_UNEXPECTED (65); PRESET_MODIFIED, PRESET_FOREIGN (1, refused: use --force);
 * WRITE_FAILED (73); and the host's (bin/host/find.mjs `HostError`): HOST_NOT_FOUND (66),
 * HOST_UNREADABLE (65). Nothing is written on any error. The command (`command`, at the end)
 * reports each as `CODE: message` with its exit.
 */
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { fail, print } from './cli.mjs'
import { discard, fsyncDir, running, writeDurable } from './durable.mjs'
import { hostDialect } from './host/dialect.mjs'
import { dshHomeOf, findHost, HostError, hostOnPath } from './host/find.mjs'

/** @type {import('./cli.mjs').Command} */
export const command = {
  usage: `Usage: dsh-fold preset install [--dsh-home DIR] [--host DIR] [--profile NAME] [--force] [--json]
       dsh-fold preset remove [--dsh-home DIR] [--force] [--json]
       dsh-fold preset status [--dsh-home DIR] [--host DIR] [--profile NAME] [--json]
  install: write block mode's agent preset to $DSH_HOME/.agent-presets/block-ptc/: the
  installed host's \`code\` preset (found through $DSH_HOME/profiles, or --host DIR) with tool
  presentation \`both\` and the block rows. Refuses to replace a preset you edited (or did not
  get from dsh-fold) unless --force, which first moves it to .dsh-fold-backups/.
  remove: remove that preset (same refusal and backup rules).
  status: what is installed, and whether it still matches the host's current \`code\` preset.`,
  run: runPreset,
}

export const PRESET_ID = 'block-ptc'
const HOST_PACKAGE = '@deepseek-ai/dsh'
const RECORD_FILE = '.dsh-fold.json'
const COMPOSITION_FILE = 'agent.cordis.yml'
const METADATA_FILE = 'preset.yml'
const BACKUPS_DIR = '.dsh-fold-backups'
const PRESENTATION_ROW = 'tool-presentation'
const PRESENTATION_PLUGIN = '@deepseek-ai/dsh-agent-tool-presentation'

/**
 * Block mode's rows, appended to the host's `code` composition. Text (with its comment) and
 * the parsed value the result must contain; both spell the same rows.
 */
export const BLOCK_ROWS_TEXT = `
# ── block mode (dsh-fold) ───────────────────────────────────────────────────

# Written by \`dsh-fold preset install\`. \`block_run_code\` is the only tool the model
# calls directly; it runs the program through this preset's own \`run_code\` (same call id),
# and \`tools.block_summary\` inside a program replaces a finished block with the model's
# summary. The row registers into this preset's scope only.
- id: block
  name: dsh-fold/block
`
export const BLOCK_ROWS = [{ id: 'block', name: 'dsh-fold/block' }]

const HERE = path.dirname(fileURLToPath(import.meta.url))
const OWN_VERSION = JSON.parse(readFileSync(path.join(HERE, '..', 'package.json'), 'utf8')).version

export class PresetError extends Error {
  /** @param {string} code @param {string} message @param {number} exit */
  constructor(code, message, exit) {
    super(message)
    this.code = code
    this.exit = exit
  }
}

const sha256 = (/** @type {string | Buffer} */ data) => createHash('sha256').update(data).digest('hex')

/** @param {string} file @returns {any} */
function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
}

/** The shipped `code` preset's files. @param {string} hostDir */
function codePresetFiles(hostDir) {
  const dir = path.join(hostDir, 'config', 'agent-presets', 'code')
  const composition = path.join(dir, COMPOSITION_FILE)
  if (!existsSync(composition)) {
    throw new PresetError('CODE_PRESET_NOT_FOUND', `the host at ${hostDir} ships no \`code\` preset (${composition} is missing); block-ptc is the code preset plus block mode, so it needs a host with Code Mode (DSH >= 0.1.0-rc.8)`, 66)
  }
  return { dir, composition, metadata: path.join(dir, METADATA_FILE) }
}

/**
 * Turn the host's `code` composition into block-ptc's.
 * @param {string} source the host's text @param {Awaited<ReturnType<typeof hostDialect>>} dialect @param {string} file
 * @returns {{text: string, commentsKept: boolean}}
 */
export function derivePreset(source, dialect, file) {
  /** @type {any} */
  let rows
  try {
    rows = dialect.load(source)
  } catch (e) {
    throw new PresetError('CODE_PRESET_UNREADABLE', `${file} does not parse in the host's dialect: ${/** @type {Error} */ (e).message}`, 65)
  }
  if (!Array.isArray(rows) || rows.some((r) => r === null || typeof r !== 'object' || typeof r.name !== 'string')) {
    throw new PresetError('CODE_PRESET_UNREADABLE', `${file} is not a list of plugin rows`, 65)
  }
  const at = rows.findIndex((r) => r.id === PRESENTATION_ROW)
  const row = rows[at]
  if (at === -1 || row.name !== PRESENTATION_PLUGIN || row.disabled === true) {
    throw new PresetError('CODE_PRESET_UNEXPECTED', `${file} has no enabled \`${PRESENTATION_ROW}\` row (${PRESENTATION_PLUGIN}); this dsh-fold knows the rc.8 shape of the code preset and will not guess how Code Mode is switched on in this host`, 65)
  }
  if (rows.some((r) => BLOCK_ROWS.some((b) => b.id === r.id))) {
    throw new PresetError('CODE_PRESET_UNEXPECTED', `${file} already has a row with id ${BLOCK_ROWS.map((b) => b.id).join('/')}`, 65)
  }
  const wanted = structuredClone(rows)
  wanted[at] = { ...row, config: { ...(row.config ?? {}), mode: 'both' } }
  wanted.push(...BLOCK_ROWS)
  const same = (/** @type {string} */ text) => {
    try {
      return JSON.stringify(dialect.load(text)) === JSON.stringify(wanted)
    } catch {
      return false
    }
  }
  const edited = editPresentationMode(source)
  if (edited !== undefined) {
    const text = `${edited.replace(/\n*$/, '\n')}${BLOCK_ROWS_TEXT}`
    if (same(text)) return { text, commentsKept: true }
  }
  const text = `# The host's comments could not be kept: its tool-presentation row had a shape\n# dsh-fold does not edit in place, so the rows were re-serialized.\n${dialect.dump(wanted.slice(0, -BLOCK_ROWS.length))}${BLOCK_ROWS_TEXT}`
  if (!same(text)) throw new PresetError('CODE_PRESET_UNEXPECTED', `${file}: the derived composition does not round-trip`, 65)
  return { text, commentsKept: false }
}

/**
 * Set `mode: both` in the top-level `tool-presentation` row's block, as text; undefined when
 * the row is not written in the plain block style this edit understands.
 * @param {string} source
 */
function editPresentationMode(source) {
  const lines = source.split('\n')
  const start = lines.findIndex((l) => /^- id:\s*['"]?tool-presentation['"]?\s*(#.*)?$/.test(l))
  if (start === -1) return undefined
  let end = start + 1
  while (end < lines.length && !/^\S/.test(lines[end])) end++ // the row's block: indented, blank or comment lines
  const modes = []
  for (let i = start + 1; i < end; i++) if (/^\s+mode:\s*['"]?code['"]?\s*(#.*)?$/.test(lines[i])) modes.push(i)
  if (modes.length !== 1) return undefined
  lines[modes[0]] = lines[modes[0]].replace(/mode:\s*['"]?code['"]?/, 'mode: both')
  return lines.join('\n')
}

/** The display metadata: the shipped code preset's description, our name. @param {string} metadataFile */
function metadataText(metadataFile) {
  return [
    '# Written by `dsh-fold preset install` (display text only; the composition is agent.cordis.yml).',
    'name: Block PTC',
    'description: >-',
    '  Code Mode (this host\'s `code` preset) with block mode: the model tags its programs with',
    '  block ids and replaces each finished block with its own summary (dsh-fold).',
    `# From the shipped code preset (${metadataFile}).`,
    '',
  ].join('\n')
}

/** A name the install record may list: a plain file name of the preset folder, not the record. @param {string} name */
const isRecordedName = (name) => name !== '' && name !== '.' && name !== '..' && name !== RECORD_FILE && !/[/\\\0]/.test(name)

/**
 * The install record's `files` (name → sha256) when it is one dsh-fold wrote, else undefined.
 * Read as data: own properties only, every value a sha256 hex string, every name a plain file name
 * of the folder (never a path out of it).
 * @param {unknown} record
 * @returns {Map<string, string> | undefined}
 */
function recordedFiles(record) {
  const r = /** @type {any} */ (record)
  if (r === null || typeof r !== 'object' || !Object.hasOwn(r, 'by') || r.by !== 'dsh-fold' || !Object.hasOwn(r, 'files')) return undefined
  const files = r.files
  if (files === null || typeof files !== 'object' || Array.isArray(files)) return undefined
  const out = new Map()
  for (const [name, hash] of Object.entries(files)) {
    if (!isRecordedName(name) || typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) return undefined
    out.set(name, hash)
  }
  return out
}

/** What is in the preset folder now. @param {string} dir */
export function inspectPreset(dir) {
  let stat
  try {
    stat = lstatSync(dir)
  } catch {
    return { state: /** @type {const} */ ('absent'), dir }
  }
  if (!stat.isDirectory()) return { state: /** @type {const} */ ('foreign'), dir, why: stat.isSymbolicLink() ? 'a symbolic link, not a folder dsh-fold wrote' : 'not a folder' }
  const record = readJson(path.join(dir, RECORD_FILE))
  const files = recordedFiles(record)
  if (files === undefined) {
    return { state: /** @type {const} */ ('foreign'), dir, why: `no ${RECORD_FILE} install record (or one naming more than the folder's own files and their sha256): dsh-fold did not write it` }
  }
  const changed = []
  for (const [name, hash] of files) {
    const file = path.join(dir, name)
    let kind
    try {
      kind = lstatSync(file)
    } catch {
      changed.push(`${name} (deleted)`)
      continue
    }
    if (!kind.isFile() || sha256(readFileSync(file)) !== hash) changed.push(`${name} (edited)`)
  }
  for (const name of readdirSync(dir)) if (name !== RECORD_FILE && !files.has(name)) changed.push(`${name} (added)`)
  return changed.length > 0
    ? { state: /** @type {const} */ ('modified'), dir, record, changed }
    : { state: /** @type {const} */ ('installed'), dir, record }
}

/** Names of the steps' folders beside the preset (dot-folders: the roster never lists them). */
const STEP = /^\.block-ptc\.(new|old|trash|tmp)-(\d+)$/
/** @param {'new' | 'old' | 'trash'} kind @param {number} [pid] */
const stepName = (kind, pid = process.pid) => `.${PRESET_ID}.${kind}-${pid}`

/**
 * Moves `from` whole into the backups folder; returns where it went. Durable when it returns.
 * @param {string} presets the `.agent-presets` folder @param {string} from
 */
function backUp(presets, from) {
  const backups = path.join(presets, BACKUPS_DIR)
  mkdirSync(backups, { recursive: true, mode: 0o700 })
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  let target = path.join(backups, `${PRESET_ID}-${stamp}`)
  for (let n = 1; existsSync(target); n++) target = path.join(backups, `${PRESET_ID}-${stamp}-${n}`)
  renameSync(from, target)
  fsyncDir(backups)
  fsyncDir(presets)
  return target
}

/**
 * Deletes a folder of ours: renamed to the trash first (one atomic step), so a crash in the
 * middle of the deletion leaves only trash, which `recover` deletes whatever state it is in.
 * @param {string} presets @param {string} from
 */
function deleteOurs(presets, from) {
  const trash = path.join(presets, stepName('trash'))
  rmSync(trash, { recursive: true, force: true })
  renameSync(from, trash)
  fsyncDir(presets)
  rmSync(trash, { recursive: true, force: true })
}

/**
 * The folders an interrupted install or remove left beside the preset, of processes no longer
 * running.
 * @param {string} presets
 * @returns {{name: string, kind: string, pid: number}[]}
 */
export function leftovers(presets) {
  let names
  try {
    names = readdirSync(presets)
  } catch {
    return []
  }
  return names.flatMap((name) => {
    const m = STEP.exec(name)
    return m && !running(Number(m[2])) ? [{ name, kind: m[1], pid: Number(m[2]) }] : []
  })
}

/**
 * Finishes what an interrupted install or remove left (see the module docs): after it, the
 * preset folder holds the old preset or the new one, and no leftover remains. Returns what was
 * done, for the user.
 * @param {string} presets
 * @returns {string[]}
 */
export function recover(presets) {
  const found = leftovers(presets)
  if (found.length === 0) return []
  const dir = path.join(presets, PRESET_ID)
  const done = []
  // A preset set aside, with nothing in its place: the run died before the new one went in.
  // Put the newest back (there is one, unless runs overlapped); the others go to the backups.
  const old = found.filter((f) => f.kind === 'old').sort((a, b) => statSync(path.join(presets, b.name)).mtimeMs - statSync(path.join(presets, a.name)).mtimeMs)
  for (const f of old) {
    const from = path.join(presets, f.name)
    if (inspectPreset(dir).state === 'absent') {
      renameSync(from, dir)
      fsyncDir(presets)
      done.push(`put back the preset an interrupted run had set aside (${f.name})`)
    } else if (inspectPreset(from).state === 'installed') {
      deleteOurs(presets, from)
      done.push(`deleted the replaced preset an interrupted run left (${f.name})`)
    } else {
      done.push(`moved the replaced preset an interrupted run left (${f.name}) to ${backUp(presets, from)}`)
    }
  }
  for (const f of found) {
    if (f.kind === 'old') continue
    rmSync(path.join(presets, f.name), { recursive: true, force: true })
    done.push(`deleted ${f.kind === 'trash' ? 'the rest of a preset being deleted' : 'a half-written preset'} (${f.name})`)
  }
  fsyncDir(presets)
  return done
}

/** @param {string} what @param {unknown} e @returns {never} */
function writeFailed(what, e) {
  throw new PresetError('WRITE_FAILED', `${what}: ${/** @type {Error} */ (e).message}`, 73)
}

/** Finishes an interrupted run's work before this one starts. @param {string} presets */
function recoverOrFail(presets) {
  try {
    return recover(presets)
  } catch (e) {
    writeFailed(`cannot finish the interrupted install or remove under ${presets} (nothing of it was deleted)`, e)
  }
}

/**
 * @param {{'dsh-home'?: string, host?: string, profile?: string, force?: boolean}} opts
 */
export async function install(opts) {
  const dshHome = dshHomeOf(opts['dsh-home'])
  const host = findHost(opts, dshHome)
  const files = codePresetFiles(host.dir)
  const source = readFileSync(files.composition, 'utf8')
  const dialect = await hostDialect(host.dir)
  const { text, commentsKept } = derivePreset(source, dialect, files.composition)
  const header = `# block-ptc: the \`code\` preset of ${HOST_PACKAGE} ${host.version} (${files.composition})\n# with tool presentation \`both\` and block mode's rows, written by dsh-fold ${OWN_VERSION}.\n# \`dsh-fold preset status\` tells whether the host's code preset changed since.\n\n`
  const content = { [COMPOSITION_FILE]: header + text, [METADATA_FILE]: metadataText(files.metadata) }
  const record = {
    by: 'dsh-fold',
    version: OWN_VERSION,
    preset: PRESET_ID,
    host: { package: HOST_PACKAGE, version: host.version, dir: host.dir },
    source: { file: files.composition, sha256: sha256(source) },
    commentsKept,
    files: Object.fromEntries(Object.entries(content).map(([name, body]) => [name, sha256(body)])),
  }

  const presets = path.join(dshHome, '.agent-presets')
  const dir = path.join(presets, PRESET_ID)
  const recovered = recoverOrFail(presets)
  const now = inspectPreset(dir)
  if ((now.state === 'modified' || now.state === 'foreign') && !opts.force) {
    const what = now.state === 'modified' ? `has local changes: ${now.changed.join(', ')}` : `exists and ${now.why}`
    throw new PresetError(now.state === 'modified' ? 'PRESET_MODIFIED' : 'PRESET_FOREIGN', `${dir} ${what}; nothing was written. Re-run with --force to install anyway (the current folder is moved to ${path.join(presets, BACKUPS_DIR)}/ first)`, 1)
  }
  if (now.state === 'installed' && JSON.stringify(now.record.files) === JSON.stringify(record.files) && now.record.source?.sha256 === record.source.sha256) {
    return { action: 'unchanged', dir, record: now.record, host, backup: null, recovered }
  }

  // 1. The new preset, whole and durable, beside the old one.
  const fresh = path.join(presets, stepName('new'))
  try {
    mkdirSync(presets, { recursive: true, mode: 0o700 })
    discard(fresh)
    mkdirSync(fresh, { mode: 0o700 })
    chmodSync(fresh, 0o700) // exactly, whatever the umask
    for (const [name, body] of Object.entries(content)) writeDurable(path.join(fresh, name), body)
    writeDurable(path.join(fresh, RECORD_FILE), JSON.stringify({ ...record, installedAt: new Date().toISOString() }, null, 2) + '\n')
    fsyncDir(fresh)
  } catch (e) {
    discard(fresh)
    writeFailed(`cannot write the preset under ${presets}`, e)
  }
  // 2-4. The old one aside, the new one in, both renames durable.
  const aside = path.join(presets, stepName('old'))
  const replacing = now.state !== 'absent'
  try {
    if (replacing) renameSync(dir, aside)
    try {
      renameSync(fresh, dir)
    } catch (e) {
      if (replacing) renameSync(aside, dir)
      throw e
    }
  } catch (e) {
    discard(fresh)
    writeFailed(`cannot put the preset in place at ${dir}${replacing && existsSync(aside) ? ` (the previous folder is safe at ${aside}; the next install or remove puts it back)` : ''}`, e)
  }
  try {
    fsyncDir(presets)
  } catch (e) {
    writeFailed(`the preset is in place at ${dir}, but its folder could not be flushed to disk, so a power loss could undo it; run the install again`, e)
  }
  // 5. The old one: deleted when it was dsh-fold's own, unmodified; else kept in the backups.
  let backup = null
  if (replacing) {
    try {
      if (now.state === 'installed') deleteOurs(presets, aside)
      else backup = backUp(presets, aside)
    } catch (e) {
      writeFailed(`installed ${dir}, but cannot ${now.state === 'installed' ? 'delete' : 'back up'} the previous folder, left at ${aside} (the next install or remove finishes it)`, e)
    }
  }
  return { action: replacing ? 'replaced' : 'installed', dir, record, host, backup, recovered }
}

/** @param {{'dsh-home'?: string, force?: boolean}} opts */
export function remove(opts) {
  const dshHome = dshHomeOf(opts['dsh-home'])
  const presets = path.join(dshHome, '.agent-presets')
  const dir = path.join(presets, PRESET_ID)
  const recovered = recoverOrFail(presets)
  const now = inspectPreset(dir)
  if (now.state === 'absent') return { action: 'absent', dir, backup: null, recovered }
  if ((now.state === 'modified' || now.state === 'foreign') && !opts.force) {
    const what = now.state === 'modified' ? `has local changes: ${now.changed.join(', ')}` : `exists and ${now.why}`
    throw new PresetError(now.state === 'modified' ? 'PRESET_MODIFIED' : 'PRESET_FOREIGN', `${dir} ${what}; nothing was removed. Re-run with --force to remove it (it is moved to ${path.join(presets, BACKUPS_DIR)}/, not deleted)`, 1)
  }
  try {
    if (now.state === 'installed') {
      deleteOurs(presets, dir)
      return { action: 'removed', dir, backup: null, recovered }
    }
    return { action: 'removed', dir, backup: backUp(presets, dir), recovered }
  } catch (e) {
    writeFailed(`cannot remove ${dir}`, e)
  }
}

/** @param {{'dsh-home'?: string, host?: string, profile?: string}} opts */
export async function status(opts) {
  const dshHome = dshHomeOf(opts['dsh-home'])
  const dir = path.join(dshHome, '.agent-presets', PRESET_ID)
  const now = inspectPreset(dir)
  /** @type {{dir: string, version: string, how: string} | null} */
  let host = null
  let hostError = null
  try {
    host = findHost(opts, dshHome)
  } catch (e) {
    if (!(e instanceof HostError)) throw e
    hostError = `${e.code}: ${e.message}`
  }
  let codePreset = null
  if (host) {
    const file = path.join(host.dir, 'config', 'agent-presets', 'code', COMPOSITION_FILE)
    codePreset = existsSync(file) ? { file, sha256: sha256(readFileSync(file)) } : { file, sha256: null }
  }
  const record = Object.hasOwn(now, 'record') ? /** @type {any} */ (now).record : null
  const matchesHost = record && codePreset?.sha256 ? record.source?.sha256 === codePreset.sha256 : null
  const shadowed = host ? existsSync(path.join(host.dir, 'config', 'agent-presets', PRESET_ID)) : null
  const bundled = profilesWithDshFold(dshHome)
  return {
    preset: PRESET_ID,
    dir,
    state: now.state,
    ...(Object.hasOwn(now, 'changed') ? { changed: /** @type {any} */ (now).changed } : {}),
    ...(Object.hasOwn(now, 'why') ? { why: /** @type {any} */ (now).why } : {}),
    leftovers: leftovers(path.dirname(dir)).map((f) => f.name),
    installedBy: record ? { version: record.version, hostVersion: record.host?.version, source: record.source?.file } : null,
    host: host ? { dir: host.dir, version: host.version, how: host.how } : null,
    hostError,
    codePreset,
    matchesHost,
    shadowedByShippedPreset: shadowed,
    profilesWithDshFold: bundled,
  }
}

/** Profiles under `$DSH_HOME/profiles` whose node_modules holds dsh-fold (the bundle rows resolve there). @param {string} dshHome */
function profilesWithDshFold(dshHome) {
  const profiles = path.join(dshHome, 'profiles')
  if (!existsSync(profiles)) return []
  return readdirSync(profiles).filter((name) => {
    if (name === 'node_modules') return false
    try {
      return statSync(path.join(profiles, name)).isDirectory() && existsSync(path.join(profiles, name, 'node_modules', 'dsh-fold', 'package.json'))
    } catch {
      return false
    }
  })
}

// ---- the command ------------------------------------------------------------------------------

/** @param {import('./cli.mjs').Opts} opts */
async function runPreset(opts) {
  const verb = opts._[1]
  if (!['install', 'remove', 'status'].includes(verb)) fail(`preset needs install, remove or status (got ${verb})`, 64)
  for (const key of ['dsh-home', 'host', 'profile']) if (opts[key] === '') fail(`--${key} needs a non-empty value`, 64)
  if (verb === 'status' && opts.force) fail('preset status does not take --force (dsh-fold preset --help)', 64)
  if (verb === 'remove' && (opts.host !== undefined || opts.profile !== undefined)) fail('preset remove takes no --host/--profile: it only touches $DSH_HOME', 64)
  if (verb !== 'remove' && opts.host === undefined) {
    // A profile made by `dsh plugin add` links no host packages until `dsh` first runs it: then
    // the host is the one `dsh` on PATH runs.
    try {
      findHost(opts, dshHomeOf(opts['dsh-home']))
    } catch (e) {
      const onPath = e instanceof HostError && e.code === 'HOST_NOT_FOUND' ? hostOnPath() : null
      if (onPath) opts = { ...opts, host: onPath.dir }
    }
  }
  let out
  try {
    out = verb === 'install' ? await install(opts) : verb === 'remove' ? remove(opts) : await status(opts)
  } catch (e) {
    if (e instanceof PresetError || e instanceof HostError) fail(`${e.code}: ${e.message}`, e.exit)
    throw e
  }
  if (opts.json) return print(out, true)
  if (verb === 'status') return printStatus(/** @type {any} */ (out))
  const r = /** @type {any} */ (out)
  for (const step of r.recovered ?? []) console.log(`finished an interrupted run: ${step}`)
  if (r.action === 'absent') return console.log(`${PRESET_ID} is not installed at ${r.dir}; nothing removed`)
  if (r.action === 'removed') return console.log(`removed ${r.dir}${r.backup ? ` (moved to ${r.backup})` : ''}`)
  const from = `${r.record.host.package} ${r.record.host.version}'s code preset (${r.record.source.file})`
  if (r.action === 'unchanged') return console.log(`${PRESET_ID} at ${r.dir} is already up to date with ${from}`)
  console.log(`${r.action} ${PRESET_ID} at ${r.dir}\n  from ${from}, host found ${r.host.how}${r.record.commentsKept ? '' : '\n  note: the host file\'s comments could not be kept'}${r.backup ? `\n  your previous folder was moved to ${r.backup}` : ''}`)
  console.log('  choose "Block PTC" when creating a session (restart a running dsh to load the bundle\'s browser half)')
}

/** @param {any} s */
function printStatus(s) {
  const state = { absent: 'not installed', installed: 'installed by dsh-fold, unmodified', modified: `installed by dsh-fold, edited since (${s.changed?.join(', ')})`, foreign: `present but not written by dsh-fold (${s.why})` }[/** @type {string} */ (s.state)]
  console.log(`${s.preset}: ${state}\n  folder: ${s.dir}`)
  if (s.installedBy) console.log(`  written by dsh-fold ${s.installedBy.version} from ${s.installedBy.source} (host ${s.installedBy.hostVersion})`)
  console.log(s.host ? `  host: @deepseek-ai/dsh ${s.host.version} at ${s.host.dir} (${s.host.how})` : `  host: not found (${s.hostError})`)
  if (s.matchesHost !== null) console.log(`  matches the host's current code preset: ${s.matchesHost ? 'yes' : 'no — run `dsh-fold preset install` to refresh it'}`)
  if (s.leftovers?.length) console.log(`  an interrupted install or remove left ${s.leftovers.join(', ')}; the next \`dsh-fold preset install\` or \`remove\` finishes it`)
  if (s.shadowedByShippedPreset) console.log(`  warning: the host ships its own ${s.preset} preset, which shadows this one`)
  console.log(`  profiles with the dsh-fold bundle: ${s.profilesWithDshFold.length ? s.profilesWithDshFold.join(', ') : 'none (add it with `dsh plugin --profile NAME add dsh-fold`; the preset\'s rows and the browser half need it)'}`)
}
