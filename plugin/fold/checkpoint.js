/**
 * @module plugin/fold/checkpoint
 * `ctx.checkpoint` and the model-facing `checkpoint` tool: a drop-in for
 * `@dpskh/tool-checkpoint` (same service name, tool name, config keys and result shape).
 *
 * A mark is `{id, logLength}`: `logLength` is the session's event count when the mark is
 * taken, the anchor the fold starts after. Marks live in the addon's durable store
 * (`$DSH_HOME/storages/checkpoint.json` by default), never in the session log, so the
 * request prefix is untouched (KV-cache neutral) and the log stays core vocabulary.
 * Every promise resolves only after the mark is on disk; the plugin's disposal resolves only after
 * every write of the store this process started (a fold's stamp included) is on disk.
 *
 * What the model reads (`./words.js`): the tool's description (what, when, when not, returns —
 * naming the rewind row's tool, or saying a mark changes nothing when no rewind row is mounted)
 * and its result, `Checkpoint N set; call <rewind> when the investigation is done.`, which also
 * says when the new mark replaced one still open. The value keeps the reference's `{id, logLength}`.
 */
import os from 'node:os'
import path from 'node:path'

import { Service } from '@deepseek-ai/cordis'
import { defineTool } from '@deepseek-ai/dsh-tools'
import Schema from '@deepseek-ai/schemastery'

import { addon } from '../shared/addon.js'
import { toToolError } from '../shared/errors.js'
import { languageOf } from '../shared/language.js'
import { mirrorOf } from '../shared/mirror.js'
import { failureText, wordsOf } from './words.js'

/**
 * @typedef {object} CheckpointConfig
 * @property {string} toolName model-facing tool name
 * @property {string} [store] store file; default `$DSH_HOME/storages/checkpoint.json`
 * @property {number} maxMarksPerSession newest marks kept per session
 * @property {number} maxAgeDays marks older than this are pruned
 * @property {'en' | 'zh'} [language] of the tool's texts; unset: the rewind row's `reportLanguage`
 */
export const Config = Schema.object({
  toolName: Schema.string().min(1).default('checkpoint').description("Model-facing tool name (any name DSH's tool registry takes)."),
  store: Schema.string().description('Checkpoint store file. Default: $DSH_HOME/storages/checkpoint.json (DSH_HOME defaults to ~/.dsh).'),
  maxMarksPerSession: Schema.natural().min(1).max(100000).default(64).description('Newest marks kept per session; older ones are pruned.'),
  maxAgeDays: Schema.number().min(0.001).max(36500).default(30).description('Marks older than this many days are pruned.'),
  language: Schema.union(['en', 'zh']).description("Language of the tool's description and results (default: the rewind row's reportLanguage, else en)."),
})

/** The default store file, following DSH's storage layout. */
export function defaultStorePath(env = process.env) {
  const home = env.DSH_HOME || path.join(os.homedir(), '.dsh')
  return path.join(home, 'storages', 'checkpoint.json')
}

/**
 * The `tool-checkpoint` plugin: provides `ctx.checkpoint` and the tool (the prompt section that
 * says when to checkpoint is the rewind row's).
 */
export default class CheckpointService extends Service {
  static inject = ['tools']
  static Config = Config

  /** @param {any} ctx @param {CheckpointConfig} config */
  constructor(ctx, config) {
    super(ctx, 'checkpoint')
    this.ctx = ctx
    this.config = config
    /** The addon's store reference: the file and its pruning limits. */
    this.store = { path: config.store ?? defaultStorePath(), maxMarksPerSession: config.maxMarksPerSession, maxAgeDays: config.maxAgeDays }
    // Load the store off the JS thread now, so the first turn's reads answer from memory.
    addon.openStore(this.store).catch((/** @type {any} */ e) => ctx.logger?.warn?.(`checkpoint store not loaded at mount: ${e?.message ?? e}`))
    // At disposal (the host's shutdown, a reload), close it: the disposal waits for the store's
    // writes still in flight — a fold's stamp is written after the fold resolved — so none
    // lands after the host has gone.
    ctx.effect(() => () => addon.closeStore(this.store).catch((/** @type {any} */ e) => ctx.logger?.warn?.(`checkpoint store not closed: ${e?.message ?? e}`)), 'dsh-fold/checkpoint: the store, closed at disposal')
    /** The model-facing tool name (the rewind row's texts name it). */
    this.toolName = config.toolName
    // The prompt section that says when to checkpoint is the rewind row's: it names both tools,
    // and without a rewind row a checkpoint changes nothing (the tool's description says so).
    ctx.tools.register(this.#tool(config.toolName))
  }

  /**
   * Records a durable mark at the session's current log length.
   * @param {any} session a DSH Session
   * @param {string} [objective]
   * @returns {Promise<{id: number, logLength: number}>}
   */
  mark(session, objective) {
    const marked = addon.mark(this.store, session?.id, session?.seq ?? session?.events?.length, objective ?? null)
    // While the durable write runs off-thread, describe the session for the coming fold.
    if (session?.surface) mirrorOf(session)
    return marked
  }

  /**
   * The session's newest mark (folded or not), or `undefined` when it has none — the
   * reference's contract, which its rewind checks with `=== undefined`.
   * @param {string} sessionId
   */
  latestMark(sessionId) {
    return addon.latestMark(this.store, sessionId).then((mark) => mark ?? undefined)
  }

  /** @param {string} sessionId @returns {Promise<boolean>} */
  hasActive(sessionId) {
    return addon.hasActive(this.store, sessionId)
  }

  /** Synchronous `hasActive`, for hot paths. @param {string} sessionId */
  hasActiveSync(sessionId) {
    return addon.hasActiveSync(this.store, sessionId)
  }

  /** @param {string} sessionId @param {number} markId @returns {Promise<boolean>} */
  completeFold(sessionId, markId) {
    return addon.completeFold(this.store, sessionId, markId)
  }

  /**
   * The tool names the texts use: this row's, and the mounted rewind row's (none: undefined).
   * @returns {import('./words.js').Names}
   */
  names() {
    const rewind = this.ctx.get('rewind')?.config?.toolName
    return { checkpoint: this.config.toolName, rewind: typeof rewind === 'string' ? rewind : undefined }
  }

  /** The language of this row's texts: its `language`, else the rewind row's `reportLanguage`. */
  get language() {
    return languageOf(this.ctx, this.config.language)
  }

  get words() {
    return wordsOf(this.language)
  }

  /** @param {string} name */
  #tool(name) {
    const tool = defineTool({
      name,
      description: '',
      parameters: {
        objective: { type: 'string', description: '' },
      },
      output: {
        schema: {
          type: 'object',
          properties: { id: { type: 'integer', required: true }, logLength: { type: 'integer', required: true } },
          additionalProperties: false,
        },
        render: (/** @type {any} */ _args, /** @type {{id: number, logLength: number}} */ value) => {
          const previous = this.replaced.get(value.id)
          this.replaced.delete(value.id)
          return [{ type: 'text', text: this.words.marked(value.id, previous, this.names()) }]
        },
      },
      presentCall: (/** @type {any} */ args) => ({ card: 'generic', title: 'Checkpoint', ...(args?.objective ? { subtitle: args.objective } : {}) }),
      execute: async (/** @type {any} */ args, /** @type {any} */ exec) => {
        const session = exec.agent?.session
        if (!session) throw new Error('checkpoint needs an owning agent session')
        try {
          // A mark still open is replaced by this one: the result says so.
          const previous = await this.latestMark(session.id).catch(() => undefined)
          const mark = await this.mark(session, args?.objective)
          if (previous && previous.foldedAt === null && previous.id !== mark.id) this.remember(mark.id, previous.id)
          return mark
        } catch (e) {
          throw toToolError(e, (err) => failureText({ code: err.code, detail: err.message, state: 'unset' }, this.names(), this.language))
        }
      },
    })
    // Read at each request: the rewind row (its name, its language) may mount after this one.
    Object.defineProperty(tool, 'description', { enumerable: true, get: () => this.words.checkpointTool(this.names()) })
    Object.defineProperty(tool.parameters.properties.objective, 'description', { enumerable: true, get: () => this.words.objective })
    return tool
  }

  /**
   * Marks whose result must say they replaced an open one: new mark id → the replaced mark's
   * id, read once by the result's rendering (kept to the last few, in case one is never read).
   * Not `#private`: cordis calls service methods with `this` bound to its tracing proxy.
   * @type {Map<number, number>}
   */
  replaced = new Map()

  /** @param {number} id @param {number} previous */
  remember(id, previous) {
    this.replaced.set(id, previous)
    if (this.replaced.size > 64) this.replaced.delete(this.replaced.keys().next().value)
  }
}
