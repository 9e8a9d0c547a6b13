/**
 * @module __test__/objfile.test
 * scripts/objfile.mjs reads ELF, Mach-O and PE headers for `npm run test:targets`; this suite
 * holds it to the tools that know these formats: binutils' `readelf` for every ELF binary built
 * here (the dev build, and any cross build `build:targets` left in target-cross/napi-out/),
 * LLVM's `llvm-objdump` for Mach-O and binutils' `objdump` for PE — on the binaries there are.
 * Three small committed fixtures (fixtures/objfile/: a Mach-O dylib per arch and a PE DLL built
 * from mini.c by its build.sh) are checked on every machine, against what they were built to be
 * and, where the tool is installed, against it too. A cross build or tool that is not on this
 * machine skips its case with the reason. The error cases need nothing: a file that is no object,
 * or a truncated one, throws a message saying so.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { describe, it } from 'node:test'
import { readObject, readObjectFile } from '../scripts/objfile.mjs'

const ROOT = path.resolve(import.meta.dirname, '..')
const NAPI_OUT = path.join(ROOT, 'target-cross', 'napi-out')
const FIXTURES = path.join(import.meta.dirname, 'fixtures', 'objfile')

/** Binaries on this machine, by platform: the dev build at the root and the cross builds. */
function binaries() {
  /** @type {Record<string, string>} */
  const found = {}
  const dev = path.join(ROOT, 'dsh-fold.linux-x64-gnu.node')
  if (existsSync(dev)) found['linux-x64-gnu (dev build)'] = dev
  for (const platform of ['darwin-arm64', 'darwin-x64', 'win32-x64']) {
    const file = path.join(FIXTURES, `mini.${platform}.${platform.startsWith('win32') ? 'dll' : 'dylib'}`)
    found[`${platform} (fixture)`] = file
  }
  if (existsSync(NAPI_OUT)) {
    for (const platform of readdirSync(NAPI_OUT)) {
      const file = path.join(NAPI_OUT, platform, `dsh-fold.${platform}.node`)
      if (existsSync(file)) found[platform] = file
    }
  }
  return found
}
const BINARIES = binaries()

/** @param {string} cmd @param {string[]} args @returns {string | null} stdout, or null if the tool is missing */
function tool(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (r.error) return null
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}

const byFormat = (/** @type {string} */ prefix) => Object.entries(BINARIES).filter(([p]) => p.startsWith(prefix))

describe('ELF, against readelf', () => {
  const elves = [...byFormat('linux-')]
  if (elves.length === 0) it('no ELF binary on this machine', { skip: 'no dsh-fold.linux-x64-gnu.node at the root (npm run build) and no cross build in target-cross/napi-out' }, () => {})
  for (const [platform, file] of elves) {
    it(`${platform}: NEEDED, interpreter, exports, version needs`, (t) => {
      const dynamic = tool('readelf', ['-d', '-W', file])
      if (dynamic === null) return t.skip('readelf (binutils) is not installed')
      const info = readObjectFile(file)
      assert.ok('libraries' in info)
      assert.deepEqual(info.libraries, [...dynamic.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]))
      const interp = /Requesting program interpreter: ([^\]]+)\]/.exec(tool('readelf', ['-l', '-W', file]) ?? '')
      assert.equal(info.interpreter, interp ? interp[1] : null)
      const syms = /** @type {string} */ (tool('readelf', ['--dyn-syms', '-W', file]))
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((f) => f.length >= 8 && /^\d+:$/.test(f[0]))
      const name = (/** @type {string[]} */ f) => f[7].replace(/@.*$/, '')
      const exported = syms.filter((f) => f[6] !== 'UND' && /^(GLOBAL|WEAK)$/.test(f[4]) && /^(DEFAULT|PROTECTED)$/.test(f[5])).map(name)
      const undefinedSyms = syms.filter((f) => f[6] === 'UND' && f[7]).map(name)
      assert.deepEqual([...info.exports].sort(), exported.sort())
      assert.deepEqual([...info.imports].sort(), undefinedSyms.sort())
      assert.ok(info.exports.includes('napi_register_module_v1'))
      const versions = /** @type {string} */ (tool('readelf', ['-V', '-W', file]))
      /** @type {Record<string, string[]>} */
      const needs = {}
      let current = ''
      for (const line of versions.slice(versions.indexOf('Version needs')).split('\n')) {
        const fileLine = /File: (\S+)/.exec(line)
        const nameLine = /Name: (\S+)/.exec(line)
        if (fileLine) current = fileLine[1]
        else if (nameLine && current) (needs[current] ??= []).push(nameLine[1])
      }
      assert.deepEqual(info.versionNeeds, versions.includes('Version needs') ? needs : {})
    })
  }
})

describe('Mach-O, against llvm-objdump', () => {
  const machos = byFormat('darwin-')
  if (machos.length === 0) it('no Mach-O binary on this machine', { skip: 'no darwin build in target-cross/napi-out (npm run build:targets builds them)' }, () => {})
  for (const [platform, file] of machos) {
    it(`${platform}: dylibs, exports, arch`, (t) => {
      const objdump = ['llvm-objdump', 'llvm-objdump-14'].find((c) => spawnSync(c, ['--version']).status === 0)
      if (!objdump) return t.skip('llvm-objdump (Debian package llvm) is not installed')
      const info = readObjectFile(file)
      assert.ok('libraries' in info)
      // --dylibs-used lists the file's own LC_ID_DYLIB too; the reader gives the dependencies only.
      const id = /** @type {string} */ (tool(objdump, ['--macho', '--dylib-id', file])).split('\n')[1]?.trim()
      const dylibs = /** @type {string} */ (tool(objdump, ['--macho', '--dylibs-used', file]))
        .split('\n')
        .slice(1)
        .map((l) => l.trim().replace(/ \(compatibility version.*$/, ''))
        .filter((l) => l && l !== id)
      assert.deepEqual(info.libraries, dylibs)
      const trie = /** @type {string} */ (tool(objdump, ['--macho', '--exports-trie', file]))
        .split('\n')
        .map((l) => /^0x[0-9A-Fa-f]+\s+_?(\S+)/.exec(l.trim())?.[1])
        .filter(Boolean)
      assert.deepEqual([...info.exports].sort(), /** @type {string[]} */ (trie).sort())
      const header = /** @type {string} */ (tool(objdump, ['--macho', '--private-header', file]))
      assert.match(header, info.arch === 'arm64' ? /ARM64/ : /X86_64/)
      const commands = /** @type {string} */ (tool(objdump, ['--macho', '--private-headers', file]))
      assert.equal(info.codeSigned, /cmd LC_CODE_SIGNATURE/.test(commands))
      const minos = /cmd LC_BUILD_VERSION[\s\S]*?minos (\S+)/.exec(commands) ?? /cmd LC_VERSION_MIN_MACOSX[\s\S]*?version (\S+)/.exec(commands)
      assert.equal(info.minOS, minos?.[1] ?? null)
    })
  }
})

describe('PE, against objdump', () => {
  const pes = byFormat('win32-')
  if (pes.length === 0) it('no PE binary on this machine', { skip: 'no Windows build in target-cross/napi-out (npm run build:targets builds win32-x64-gnu)' }, () => {})
  for (const [platform, file] of pes) {
    it(`${platform}: DLL imports and exports`, (t) => {
      const dump = tool('objdump', ['-p', file])
      if (dump === null) return t.skip('objdump (binutils) is not installed')
      const info = readObjectFile(file)
      assert.ok('libraries' in info)
      assert.deepEqual(info.libraries, [...dump.matchAll(/^\s*DLL Name: (\S+)/gm)].map((m) => m[1]))
      const table = dump.slice(dump.indexOf('[Ordinal/Name Pointer] Table'))
      assert.deepEqual([...info.exports].sort(), [...table.matchAll(/^\s*\[\s*\d+\] (\S+)$/gm)].map((m) => m[1]).sort())
      assert.equal(info.arch, /file format pei-x86-64/.test(dump) ? 'x64' : 'unknown')
    })
  }
})

describe('the committed fixtures, as they were built (no tool needed)', () => {
  const fixture = (/** @type {string} */ name) => readObjectFile(path.join(FIXTURES, name))
  it('Mach-O dylibs: arch, libSystem only, the addon entry exported, the Node-API call left to the loader', () => {
    for (const [name, arch, signed] of [['mini.darwin-arm64.dylib', 'arm64', true], ['mini.darwin-x64.dylib', 'x64', false]]) {
      const info = fixture(/** @type {string} */ (name))
      assert.equal(info.format, 'macho', name)
      assert.ok('libraries' in info)
      assert.equal(info.arch, arch, name)
      assert.equal(info.kind, 'dylib', name)
      assert.deepEqual(info.libraries, ['/usr/lib/libSystem.B.dylib'], name)
      assert.ok(info.exports.includes('napi_register_module_v1'), name)
      assert.ok(info.imports.includes('napi_create_object'), name)
      assert.equal(info.minOS, '13.0', name)
      // zig signs arm64 output ad hoc (Apple silicon refuses unsigned code), not x86_64.
      assert.equal(info.codeSigned, signed, name)
    }
  })
  it('PE DLL: x64, the system DLLs only, the addon entry the one export', () => {
    const info = fixture('mini.win32-x64.dll')
    assert.equal(info.format, 'pe')
    assert.ok('libraries' in info)
    assert.equal(info.arch, 'x64')
    assert.equal(info.kind, 'dll')
    assert.deepEqual(info.libraries, ['KERNEL32.dll', 'msvcrt.dll'])
    assert.deepEqual(info.exports, ['napi_register_module_v1'])
  })
})

describe('what is not a readable object file', () => {
  it('too short, unknown magic, 32-bit and big-endian ELF, a string off the end: each throws a message', () => {
    assert.throws(() => readObject(Buffer.alloc(10)), /objfile: 10 bytes is too short/)
    assert.throws(() => readObject(Buffer.alloc(128, 0x41)), /objfile: unknown object format \(magic 41414141\)/)
    const elf32 = Buffer.alloc(128)
    elf32.writeUInt32BE(0x7f454c46, 0)
    elf32[4] = 1
    assert.throws(() => readObject(elf32), /objfile: ELF class 1 is not 64-bit/)
    const elfBE = Buffer.from(elf32)
    elfBE[4] = 2
    elfBE[5] = 2
    assert.throws(() => readObject(elfBE), /objfile: big-endian ELF is not read/)
    const macho32 = Buffer.alloc(128)
    macho32.writeUInt32LE(0xfeedface, 0)
    assert.throws(() => readObject(macho32), /objfile: 32-bit Mach-O is not read/)
    const pe = Buffer.alloc(256)
    pe.write('MZ', 0, 'latin1')
    pe.writeUInt32LE(0x80, 0x3c)
    assert.throws(() => readObject(pe), /objfile: MZ file without a PE signature/)
  })

  it('a library named like an Object.prototype member is read as data: __proto__ is an own key, the prototype untouched', (t) => {
    const dev = BINARIES['linux-x64-gnu (dev build)']
    if (!dev) return t.skip('no dsh-fold.linux-x64-gnu.node at the root (npm run build)')
    const bytes = Buffer.from(readFileSync(dev))
    const want = readObject(bytes).versionNeeds?.['libc.so.6']
    assert.ok(want?.length, 'the dev build needs versions of libc.so.6')
    // The same binary with its libc renamed in the string table (same length, so nothing moves).
    for (let at = bytes.indexOf('libc.so.6\0'); at >= 0; at = bytes.indexOf('libc.so.6\0', at + 1)) bytes.write('__proto__', at, 'latin1')
    const info = readObject(bytes)
    assert.equal(Object.getPrototypeOf(info.versionNeeds), Object.prototype)
    assert.ok(Object.hasOwn(info.versionNeeds ?? {}, '__proto__'), JSON.stringify(info.versionNeeds))
    assert.deepEqual(Object.getOwnPropertyDescriptor(info.versionNeeds, '__proto__')?.value, want)
    // What test:targets reads of it: the glibc versions are all still there.
    assert.ok(Object.values(info.versionNeeds ?? {}).flat().filter((v) => v.startsWith('GLIBC_')).length >= want.length)
  })

  it('a real binary cut short throws instead of inventing symbols', (t) => {
    const [first] = Object.values(BINARIES)
    if (!first) return t.skip('no built binary on this machine to cut')
    const bytes = readFileSync(first)
    assert.throws(() => readObject(bytes.subarray(0, 4096)), /^Error: objfile: (a header points past the end of the 4096-byte file|string at \d+ runs off the file)/)
  })
})
