#!/usr/bin/env node
/**
 * @module bin/dsh-fold
 * The `dsh-fold` command: see a fold with no model and no key (`demo`), run one task in a real
 * DSH host (`try`), check an installation (`doctor`), list the marks of a store (`marks`),
 * dry-run a fold over a persisted DSH session log (`fold`), price a session's folds
 * (`economics`), install, remove or check block mode's `block-ptc` agent preset (`preset`), and
 * choose each profile's compaction backend (`compaction`).
 *
 * This file only dispatches. Each subcommand is one module under `bin/` (demo, try, doctor,
 * marks, fold, economics, preset, compaction `.mjs`) exporting `command`: its usage text, which
 * is also its declaration of the options and arguments it takes (bin/cli.mjs reads it), and its
 * `run`, which checks the rest and does the work. The overview (`--help`) is generated from
 * those usage texts in the order below; `dsh-fold VERB --help` prints VERB's.
 *
 * Conventions: `dsh-fold VERB --help` prints that subcommand's usage only; `--version`; an
 * option a subcommand does not take, a stray positional or two exclusive options are usage
 * errors (64); every file written is confirmed (on stderr under `--json`, which keeps stdout
 * for the JSON); subcommands that need the DeepSeek Harness packages say so in one line (69)
 * where they are not installed. Writes only: `demo --save FILE`, `economics --html/--svg`,
 * `preset install|remove` (`$DSH_HOME/.agent-presets/block-ptc` and its backups folder),
 * `compaction enable|disable` (one profile's `cordis.patch.yml` and its record) and `try` (a
 * temporary DSH home unless `--dsh-home`/`--profile` name one).
 *
 * Exit codes: 0 ok; 1 the operation failed or was refused (NO_CHECKPOINT, EMPTY_REGION,
 * PRESET_MODIFIED, a doctor check, a try run that did not finish); 64 bad usage; 65 a log,
 * store or host file that cannot be read (corrupt, newer format, unexpected shape); 66 a file,
 * host or preset that does not exist; 69 the DeepSeek Harness packages are not installed here;
 * 73 a file that cannot be written; 70 an internal error (a bug: the stack is printed).
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

import { CliError, program } from './cli.mjs'
import { command as compaction } from './compaction.mjs'
import { command as demo } from './demo.mjs'
import { command as doctor } from './doctor.mjs'
import { command as economics } from './economics.mjs'
import { command as fold } from './fold.mjs'
import { command as marks } from './marks.mjs'
import { command as preset } from './preset.mjs'
import { command as tryTask } from './try.mjs'

const VERSION = JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')).version

/** The subcommands, in the overview's order. */
const cli = program([demo, tryTask, doctor, marks, fold, economics, preset, compaction])

async function main() {
  const opts = cli.parse(process.argv.slice(2))
  if (opts.version) return console.log(`dsh-fold ${VERSION}`)
  if (opts.help) return console.log(cli.help(opts.verb))
  const exit = await cli.commandOf(/** @type {string} */ (opts.verb)).run(opts)
  if (typeof exit === 'number') process.exitCode = exit
}

main().catch((e) => {
  if (e instanceof CliError) {
    console.error(`dsh-fold: ${e.message}`)
    process.exit(e.exit)
  }
  console.error(e)
  process.exit(70)
})
