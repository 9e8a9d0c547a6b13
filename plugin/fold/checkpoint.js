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
 */
import os from 'node:os'
import path from 'node:path'

import { Service } from '@deepseek-ai/cordis'
import { defineTool } from '@deepseek-ai/dsh-tools'
import Schema from '@deepseek-ai/schemastery'

import { addon } from '../shared/addon.js'
import { toToolError } from '../shared/errors.js'
import { mirrorOf } from '../shared/mirror.js'

/**
 * @typedef {object} CheckpointConfig
 * @property {string} toolName model-facing tool name
 * @property {string} [store] store file; default `$DSH_HOME/storages/checkpoint.json`
 * @property {number} maxMarksPerSession newest marks kept per session
 * @property {number} maxAgeDays marks older than this are pruned
 */
export const Config = Schema.object({
  toolName: Schema.string().min(1).default('checkpoint').description("Model-facing tool name (any name DSH's tool registry takes)."),
  store: Schema.string().description('Checkpoint store file. Default: $DSH_HOME/storages/checkpoint.json (DSH_HOME defaults to ~/.dsh).'),
  maxMarksPerSession: Schema.natural().min(1).max(100000).default(64).description('Newest marks kept per session; older ones are pruned.'),
  maxAgeDays: Schema.number().min(0.001).max(36500).default(30).description('Marks older than this many days are pruned.'),
})

/** The default store file, following DSH's storage layout. */
export function defaultStorePath(env = process.env) {
  const home = env.DSH_HOME || path.join(os.homedir(), '.dsh')
  return path.join(home, 'storages', 'checkpoint.json')
}

const PROMPT = (/** @type {string} */ tool) => `## Checkpoints

Before any investigation that needs more than one tool call (reading several files, searching, running experiments), call \`${tool}\` first, with a short \`objective\`. When the investigation is done, call \`rewind\` before any unrelated work: it replaces everything since the checkpoint with a report of what was found, so later steps carry the findings without the intermediate noise. A checkpoint that is never rewound changes nothing.`

/** The `tool-checkpoint` plugin: provides `ctx.checkpoint`, the tool and its prompt section. */
export default class CheckpointService extends Service {
  static inject = ['tools', 'systemPrompt']
  static Config = Config

  /** @param {any} ctx @param {CheckpointConfig} config */
  constructor(ctx, config) {
    super(ctx, 'checkpoint')
    this.config = config
    /** The addon's store reference: the file and its pruning limits. */
    this.store = { path: config.store ?? defaultStorePath(), maxMarksPerSession: config.maxMarksPerSession, maxAgeDays: config.maxAgeDays }
    // Load the store off the JS thread now, so the first turn's reads answer from memory.
    addon.openStore(this.store).catch((/** @type {any} */ e) => ctx.logger?.warn?.(`checkpoint store not loaded at mount: ${e?.message ?? e}`))
    // At disposal (the host's shutdown, a reload), close it: the disposal waits for the store's
    // writes still in flight — a fold's stamp is written after the fold resolved — so none
    // lands after the host has gone.
    ctx.effect(() => () => addon.closeStore(this.store).catch((/** @type {any} */ e) => ctx.logger?.warn?.(`checkpoint store not closed: ${e?.message ?? e}`)), 'dsh-fold/checkpoint: the store, closed at disposal')
    ctx.systemPrompt.section({ name: 'tool:checkpoint', order: 150, text: PROMPT(config.toolName) })
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

  /** @param {string} name */
  #tool(name) {
    return defineTool({
      name,
      description:
        'Mark the start of an investigation. Call before any work that needs more than one tool call; call `rewind` when it is done to fold it into a report.',
      parameters: {
        objective: { type: 'string', description: 'What the investigation should find out (optional, at most 4 KiB).' },
      },
      output: {
        schema: {
          type: 'object',
          properties: { id: { type: 'integer', required: true }, logLength: { type: 'integer', required: true } },
          additionalProperties: false,
        },
        render: (/** @type {any} */ _args, /** @type {any} */ value) => [{ type: 'text', text: JSON.stringify(value) }],
      },
      presentCall: (/** @type {any} */ args) => ({ card: 'generic', title: 'Checkpoint', ...(args?.objective ? { subtitle: args.objective } : {}) }),
      execute: async (/** @type {any} */ args, /** @type {any} */ exec) => {
        const session = exec.agent?.session
        if (!session) throw new Error('checkpoint needs an owning agent session')
        try {
          return await this.mark(session, args?.objective)
        } catch (e) {
          throw toToolError(e)
        }
      },
    })
  }
}
