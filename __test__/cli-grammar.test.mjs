/**
 * The command line's grammar is read from each command's usage text (bin/cli.mjs): what every
 * subcommand takes, as that reading finds it, is pinned here, so a usage text edited into a
 * different grammar (an option lost, a value turned into a flag, an exclusion dropped) fails
 * here first; and the reader refuses usage texts it cannot read. The same texts are held to
 * docs/cli.md by __test__/docs.test.mjs, and the parser's behaviour by the cli suites.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { grammarOf, program } from '../bin/cli.mjs'

const MODULES = ['demo', 'try', 'doctor', 'marks', 'fold', 'economics', 'preset', 'compaction']

/** @param {string} name */
const commandOf = async (name) => (await import(`../bin/${name}.mjs`)).command

describe('the grammar each usage text declares', () => {
  test('every subcommand takes what its usage says', async () => {
    /** @type {Record<string, unknown>} */
    const seen = {}
    for (const name of MODULES) {
      const g = grammarOf((await commandOf(name)).usage)
      assert.equal(g.name, name)
      seen[name] = { options: Object.fromEntries(g.options), exclusive: g.exclusive, args: g.args, actions: g.actions, quoted: g.quoted }
    }
    const none = { exclusive: [], actions: false, quoted: false }
    assert.deepEqual(seen, {
      demo: { ...none, options: { '--lang': 'en|zh', '--json': null, '--save': 'FILE' }, args: [0, 0, ''] },
      try: { ...none, options: { '--profile': 'NAME', '--dsh-home': 'DIR', '--patch': 'FILE', '--cwd': 'DIR', '--compaction': null, '--keep': null, '--json': null }, args: [0, 1, 'TASK'], quoted: true },
      doctor: { ...none, options: { '--profile': 'NAME', '--dsh-home': 'DIR', '--json': null }, args: [0, 0, ''] },
      marks: { ...none, options: { '--store': 'PATH', '--session': 'ID', '--json': null }, args: [0, 0, ''] },
      fold: { ...none, options: { '--anchor': 'N', '--store': 'PATH', '--lang': 'en|zh', '--json': null }, exclusive: [['--anchor', '--store']], args: [1, 1, 'FILE'] },
      economics: { ...none, options: { '--json': null, '--html': 'OUT', '--svg': 'OUT', '--hit-price': 'N', '--miss-price': 'N', '--output-price': 'N', '--currency': 'C' }, args: [1, 1, 'FILE'] },
      preset: { ...none, options: { '--dsh-home': 'DIR', '--host': 'DIR', '--profile': 'NAME', '--force': null, '--json': null }, args: [1, 1, 'install|remove|status'], actions: true },
      compaction: { ...none, options: { '--profile': 'NAME', '--dsh-home': 'DIR', '--json': null }, args: [1, 1, 'enable|disable|status'], actions: true },
    })
  })

  test('the overview lists every synopsis line, in the order given', async () => {
    const commands = await Promise.all(MODULES.map(commandOf))
    const overview = program(commands).help()
    const lines = overview.split('\n').filter((l) => l.startsWith('  dsh-fold '))
    assert.deepEqual(lines.map((l) => l.split(' ')[3]), [...MODULES.flatMap((m) => (m === 'preset' || m === 'compaction' ? [m, m, m] : [m])), '--help'])
    assert.match(overview, / {20,}\[--hit-price N --miss-price N --output-price N \[--currency C\]\]/)
    assert.equal(program(commands).help('fold').split('\n')[0], 'Usage: dsh-fold fold FILE [--anchor N | --store PATH] [--lang en|zh] [--json]')
  })

  test('a usage text the reader cannot read is refused when the program is built', () => {
    const run = async () => {}
    assert.throws(() => grammarOf('dsh-fold x [--json]'), /must open with "Usage: dsh-fold VERB"/)
    assert.throws(() => grammarOf('Usage: dsh-fold x [--a N]\n       dsh-fold x [--a]'), /--a is both a flag and valued/)
    assert.throws(() => program([{ usage: 'Usage: dsh-fold x [--a N]', run }, { usage: 'Usage: dsh-fold y [--a]', run }]), /--a takes a value in one command's usage and not in another's/)
  })

  test('the parser holds a made-up command to its usage alone', () => {
    const cli = program([{ usage: 'Usage: dsh-fold pick ["ITEM"] [--from N | --to M] [--mode a|b|c] [--dry]', run: async () => {} }])
    assert.deepEqual(cli.parse(['pick', 'x', '--from', '1', '--mode', 'b', '--dry']), { _: ['pick', 'x'], given: ['--from', '--mode', '--dry'], from: '1', mode: 'b', dry: true, verb: 'pick' })
    /** @param {string[]} argv */
    const error = (argv) => {
      try {
        cli.parse(argv)
      } catch (e) {
        return `${/** @type {any} */ (e).exit} ${/** @type {Error} */ (e).message}`
      }
      return 'parsed'
    }
    assert.equal(error(['pick', '--from', '1', '--to', '2']), '64 --from and --to exclude each other')
    assert.equal(error(['pick', 'a', 'b']), '64 pick takes one ITEM (got also b); quote the item')
    assert.equal(error(['pick', '--mode', 'd']), '64 --mode must be a, b or c')
    assert.equal(error(['pick', '--mode']), '64 --mode needs a value')
    assert.equal(error(['pick', '--json']), '64 unknown option --json')
    assert.equal(error(['pick']), 'parsed')
    // Names an object has by inheritance are not commands (they crashed the parser with a
    // TypeError, exit 70, when the commands were a plain object).
    for (const name of ['toString', '__proto__', 'constructor', 'hasOwnProperty']) assert.equal(error([name]).split('\n')[0], `64 unknown command ${name}`)
    assert.equal(cli.help('toString'), cli.help())
  })
})
