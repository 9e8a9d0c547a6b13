// @ts-check
/**
 * @module scripts/objfile
 * Reads the headers of a built addon — ELF (Linux), Mach-O (macOS, thin or fat) or PE (Windows) —
 * with no tool but this file, so `npm run test:targets` can check a binary for a machine it
 * cannot run on. `readObject(bytes)` returns what a loader would look at:
 *
 * - `format` (`elf` | `macho` | `pe`), `arch` (`x64` | `arm64`, Node's names), `kind`
 *   (`shared-object`, `bundle`, `dylib`, `dll`, or what else the header says);
 * - `libraries`: the shared libraries it asks the loader for (ELF `DT_NEEDED`, Mach-O
 *   `LC_LOAD_DYLIB`, PE import descriptors), in file order;
 * - `exports`: the symbols it defines for others (ELF global/weak defined `.dynsym` entries of
 *   default or protected visibility, the Mach-O export trie, the PE export directory);
 * - `imports`: the symbols left for the host process to provide (ELF undefined `.dynsym`
 *   entries, Mach-O undefined external `nlist` entries without their leading `_`);
 * - ELF only: `interpreter` (`PT_INTERP`, `null` for a plain shared object) and
 *   `versionNeeds` (`{library: [version names]}` from `.gnu.version_r`, e.g. `GLIBC_2.17`);
 * - Mach-O only: `minOS` (from `LC_BUILD_VERSION` or `LC_VERSION_MIN_MACOSX`), `codeSigned`
 *   (an `LC_CODE_SIGNATURE` is present: Apple silicon refuses unsigned arm64 code);
 *   a fat file gives `{format: 'macho-fat', slices: [...]}` with one such object per slice.
 *
 * Only the layouts release binaries use are read: 64-bit little-endian ELF and Mach-O, PE32+.
 * Anything else throws an `Error` naming what it found, never a guess.
 *
 *   node scripts/objfile.mjs FILE   prints the JSON of `readObject` (exports and imports counted)
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * @typedef {object} ObjectInfo
 * @property {'elf' | 'macho' | 'pe'} format
 * @property {string} arch
 * @property {string} kind
 * @property {string[]} libraries
 * @property {string[]} exports
 * @property {string[]} imports
 * @property {string | null} [interpreter]
 * @property {Record<string, string[]>} [versionNeeds]
 * @property {string | null} [minOS]
 * @property {boolean} [codeSigned]
 */

/** @param {Buffer} b @param {number} at */
function cstring(b, at) {
  const end = b.indexOf(0, at)
  if (at < 0 || at >= b.length || end < 0) throw new Error(`objfile: string at ${at} runs off the file`)
  return b.toString('latin1', at, end)
}

/** @param {number} v */
const hex = (v) => `0x${v.toString(16)}`

// ---------------------------------------------------------------- ELF

const ELF_MACHINE = /** @type {Record<number, string>} */ ({ 0x3e: 'x64', 0xb7: 'arm64', 0x03: 'ia32', 0x28: 'arm' })
const ELF_TYPE = /** @type {Record<number, string>} */ ({ 1: 'relocatable', 2: 'executable', 3: 'shared-object', 4: 'core' })
const SHT_DYNAMIC = 6
const SHT_DYNSYM = 11
const SHT_GNU_VERNEED = 0x6ffffffe
const PT_INTERP = 3
const DT_NEEDED = 1

/** @param {Buffer} b @returns {ObjectInfo} */
function readElf(b) {
  if (b[4] !== 2) throw new Error(`objfile: ELF class ${b[4]} is not 64-bit`)
  if (b[5] !== 1) throw new Error('objfile: big-endian ELF is not read')
  const type = b.readUInt16LE(16)
  const machine = b.readUInt16LE(18)
  const phoff = Number(b.readBigUInt64LE(32))
  const shoff = Number(b.readBigUInt64LE(40))
  const phentsize = b.readUInt16LE(54)
  const phnum = b.readUInt16LE(56)
  const shentsize = b.readUInt16LE(58)
  const shnum = b.readUInt16LE(60)

  let interpreter = null
  for (let i = 0; i < phnum; i++) {
    const ph = phoff + i * phentsize
    if (b.readUInt32LE(ph) !== PT_INTERP) continue
    const offset = Number(b.readBigUInt64LE(ph + 8))
    interpreter = cstring(b, offset)
  }

  const sections = []
  for (let i = 0; i < shnum; i++) {
    const sh = shoff + i * shentsize
    sections.push({
      type: b.readUInt32LE(sh + 4),
      offset: Number(b.readBigUInt64LE(sh + 24)),
      size: Number(b.readBigUInt64LE(sh + 32)),
      link: b.readUInt32LE(sh + 40),
      info: b.readUInt32LE(sh + 44),
      entsize: Number(b.readBigUInt64LE(sh + 56)),
    })
  }
  /** @param {number} type */
  const section = (type) => sections.find((s) => s.type === type)

  const libraries = []
  const dynamic = section(SHT_DYNAMIC)
  if (dynamic) {
    const strtab = sections[dynamic.link]
    for (let at = dynamic.offset; at + 16 <= dynamic.offset + dynamic.size; at += 16) {
      const tag = Number(b.readBigInt64LE(at))
      if (tag === 0) break
      if (tag === DT_NEEDED) libraries.push(cstring(b, strtab.offset + Number(b.readBigUInt64LE(at + 8))))
    }
  }

  const exports = []
  const imports = []
  const dynsym = section(SHT_DYNSYM)
  if (dynsym) {
    const strtab = sections[dynsym.link]
    const entsize = dynsym.entsize || 24
    for (let at = dynsym.offset + entsize; at + entsize <= dynsym.offset + dynsym.size; at += entsize) {
      const name = cstring(b, strtab.offset + b.readUInt32LE(at))
      const bind = b[at + 4] >> 4
      const visibility = b[at + 5] & 3
      const shndx = b.readUInt16LE(at + 6)
      if (!name) continue
      if (shndx === 0) imports.push(name)
      else if ((bind === 1 || bind === 2) && (visibility === 0 || visibility === 3)) exports.push(name)
    }
  }

  /** @type {Record<string, string[]>} */
  const versionNeeds = {}
  const verneed = section(SHT_GNU_VERNEED)
  if (verneed) {
    const strtab = sections[verneed.link]
    let at = verneed.offset
    for (let n = 0; n < verneed.info; n++) {
      const count = b.readUInt16LE(at + 2)
      const file = cstring(b, strtab.offset + b.readUInt32LE(at + 4))
      let aux = at + b.readUInt32LE(at + 8)
      const names = []
      for (let k = 0; k < count; k++) {
        names.push(cstring(b, strtab.offset + b.readUInt32LE(aux + 8)))
        aux += b.readUInt32LE(aux + 12)
      }
      // The library name comes from the file: an own property whatever it is (a plain
      // assignment of `__proto__` would replace the object's prototype instead).
      Object.defineProperty(versionNeeds, file, { value: names, enumerable: true, writable: true, configurable: true })
      const next = b.readUInt32LE(at + 12)
      if (next === 0) break
      at += next
    }
  }

  return {
    format: 'elf',
    arch: ELF_MACHINE[machine] ?? `elf-machine-${hex(machine)}`,
    kind: ELF_TYPE[type] ?? `elf-type-${type}`,
    interpreter,
    libraries,
    exports,
    imports,
    versionNeeds,
  }
}

// ---------------------------------------------------------------- Mach-O

const MH_CPU = /** @type {Record<number, string>} */ ({ 0x01000007: 'x64', 0x0100000c: 'arm64' })
const MH_TYPE = /** @type {Record<number, string>} */ ({ 1: 'object', 2: 'executable', 6: 'dylib', 8: 'bundle' })
const LC_SYMTAB = 0x2
const LC_LOAD_DYLIB = 0xc
const LC_LOAD_WEAK_DYLIB = 0x80000018
const LC_REEXPORT_DYLIB = 0x8000001f
const LC_CODE_SIGNATURE = 0x1d
const LC_VERSION_MIN_MACOSX = 0x24
const LC_BUILD_VERSION = 0x32
const LC_DYLD_INFO_ONLY = 0x80000022
const LC_DYLD_EXPORTS_TRIE = 0x80000033

/** @param {number} v an `xxxx.yy.zz` nibble-packed version */
const machoVersion = (v) => `${v >>> 16}.${(v >> 8) & 0xff}${v & 0xff ? `.${v & 0xff}` : ''}`

/** @param {Buffer} b @param {number} at @returns {[number, number]} value, next offset */
function uleb(b, at) {
  let value = 0
  let shift = 0
  for (;;) {
    if (at >= b.length) throw new Error('objfile: ULEB128 runs off the file')
    const byte = b[at++]
    value += (byte & 0x7f) * 2 ** shift
    shift += 7
    if ((byte & 0x80) === 0) return [value, at]
  }
}

/** Every name in a Mach-O export trie (its root at `start`, `size` bytes). @param {Buffer} b @param {number} start @param {number} size */
function exportTrie(b, start, size) {
  /** @type {string[]} */
  const names = []
  /** @type {Array<[number, string]>} */
  const pending = [[0, '']]
  const seen = new Set()
  while (pending.length > 0) {
    const [offset, prefix] = /** @type {[number, string]} */ (pending.pop())
    if (offset >= size || seen.has(offset)) throw new Error(`objfile: export trie node at ${offset} is out of range or loops`)
    seen.add(offset)
    let at = start + offset
    const [terminal, afterTerminal] = uleb(b, at)
    if (terminal > 0) names.push(prefix)
    at = afterTerminal + terminal
    const children = b[at++]
    for (let i = 0; i < children; i++) {
      const label = cstring(b, at)
      at += Buffer.byteLength(label, 'latin1') + 1
      const [child, next] = uleb(b, at)
      at = next
      pending.push([child, prefix + label])
    }
  }
  return names.sort()
}

/** @param {Buffer} b @returns {ObjectInfo} */
function readMachO(b) {
  const cpu = b.readUInt32LE(4)
  const filetype = b.readUInt32LE(12)
  const ncmds = b.readUInt32LE(16)
  const libraries = []
  /** @type {string[]} */
  let exports = []
  /** @type {string[]} */
  const imports = []
  /** @type {string[]} */
  const symtabExports = []
  let minOS = null
  let codeSigned = false
  let trie = null
  let at = 32
  for (let i = 0; i < ncmds; i++) {
    const cmd = b.readUInt32LE(at)
    const size = b.readUInt32LE(at + 4)
    if (size < 8) throw new Error(`objfile: Mach-O load command ${i} has size ${size}`)
    if (cmd === LC_LOAD_DYLIB || cmd === LC_LOAD_WEAK_DYLIB || cmd === LC_REEXPORT_DYLIB) libraries.push(cstring(b, at + b.readUInt32LE(at + 8)))
    else if (cmd === LC_CODE_SIGNATURE) codeSigned = true
    else if (cmd === LC_BUILD_VERSION) minOS = machoVersion(b.readUInt32LE(at + 12))
    else if (cmd === LC_VERSION_MIN_MACOSX) minOS ??= machoVersion(b.readUInt32LE(at + 8))
    else if (cmd === LC_DYLD_INFO_ONLY) trie = { offset: b.readUInt32LE(at + 40), size: b.readUInt32LE(at + 44) }
    else if (cmd === LC_DYLD_EXPORTS_TRIE) trie = { offset: b.readUInt32LE(at + 8), size: b.readUInt32LE(at + 12) }
    else if (cmd === LC_SYMTAB) {
      const symoff = b.readUInt32LE(at + 8)
      const nsyms = b.readUInt32LE(at + 12)
      const stroff = b.readUInt32LE(at + 16)
      for (let s = 0; s < nsyms; s++) {
        const nl = symoff + s * 16
        const type = b[nl + 4]
        if (type & 0xe0 || !(type & 0x01)) continue // a debugging entry, or not external
        const name = cstring(b, stroff + b.readUInt32LE(nl))
        if ((type & 0x0e) === 0) imports.push(name)
        else if ((type & 0x0e) === 0x0e) symtabExports.push(name)
      }
    }
    at += size
  }
  if (trie && trie.size > 0) exports = exportTrie(b, trie.offset, trie.size)
  else exports = symtabExports.sort()
  /** @param {string} n */
  const plain = (n) => (n.startsWith('_') ? n.slice(1) : n)
  return {
    format: 'macho',
    arch: MH_CPU[cpu] ?? `macho-cpu-${hex(cpu)}`,
    kind: MH_TYPE[filetype] ?? `macho-type-${filetype}`,
    libraries,
    exports: exports.map(plain),
    imports: imports.map(plain),
    minOS,
    codeSigned,
  }
}

/** @param {Buffer} b */
function readFat(b) {
  const count = b.readUInt32BE(4)
  const slices = []
  for (let i = 0; i < count; i++) {
    const at = 8 + i * 20
    const offset = b.readUInt32BE(at + 8)
    const size = b.readUInt32BE(at + 12)
    slices.push(readObject(b.subarray(offset, offset + size)))
  }
  return { format: /** @type {const} */ ('macho-fat'), slices }
}

// ---------------------------------------------------------------- PE

const PE_MACHINE = /** @type {Record<number, string>} */ ({ 0x8664: 'x64', 0xaa64: 'arm64', 0x14c: 'ia32' })

/** @param {Buffer} b @returns {ObjectInfo} */
function readPe(b) {
  const pe = b.readUInt32LE(0x3c)
  if (b.toString('latin1', pe, pe + 4) !== 'PE\0\0') throw new Error('objfile: MZ file without a PE signature')
  const machine = b.readUInt16LE(pe + 4)
  const nsections = b.readUInt16LE(pe + 6)
  const optSize = b.readUInt16LE(pe + 20)
  const characteristics = b.readUInt16LE(pe + 22)
  const opt = pe + 24
  if (b.readUInt16LE(opt) !== 0x20b) throw new Error(`objfile: PE optional header magic ${hex(b.readUInt16LE(opt))} is not PE32+`)
  /** @param {number} index */
  const directory = (index) => ({ rva: b.readUInt32LE(opt + 112 + index * 8), size: b.readUInt32LE(opt + 112 + index * 8 + 4) })
  const sections = []
  for (let i = 0; i < nsections; i++) {
    const sh = opt + optSize + i * 40
    sections.push({ vsize: b.readUInt32LE(sh + 8), rva: b.readUInt32LE(sh + 12), rawSize: b.readUInt32LE(sh + 16), raw: b.readUInt32LE(sh + 20) })
  }
  /** @param {number} rva */
  const offset = (rva) => {
    const s = sections.find((x) => rva >= x.rva && rva < x.rva + Math.max(x.vsize, x.rawSize))
    if (!s) throw new Error(`objfile: PE address ${hex(rva)} lies in no section`)
    return rva - s.rva + s.raw
  }

  const exports = []
  const exp = directory(0)
  if (exp.size > 0) {
    const at = offset(exp.rva)
    const names = b.readUInt32LE(at + 24)
    const table = offset(b.readUInt32LE(at + 32))
    for (let i = 0; i < names; i++) exports.push(cstring(b, offset(b.readUInt32LE(table + i * 4))))
  }

  const libraries = []
  const imports = []
  const imp = directory(1)
  if (imp.size > 0) {
    for (let at = offset(imp.rva); ; at += 20) {
      const lookup = b.readUInt32LE(at) || b.readUInt32LE(at + 16)
      const name = b.readUInt32LE(at + 12)
      if (lookup === 0 && name === 0) break
      const dll = cstring(b, offset(name))
      libraries.push(dll)
      for (let t = offset(lookup); ; t += 8) {
        const entry = b.readBigUInt64LE(t)
        if (entry === 0n) break
        if (entry >> 63n) imports.push(`${dll}#${entry & 0xffffn}`)
        else imports.push(cstring(b, offset(Number(entry & 0x7fffffffn)) + 2))
      }
    }
  }
  return {
    format: 'pe',
    arch: PE_MACHINE[machine] ?? `pe-machine-${hex(machine)}`,
    kind: characteristics & 0x2000 ? 'dll' : 'executable',
    libraries,
    exports,
    imports,
  }
}

// ---------------------------------------------------------------- entry

/**
 * @param {Buffer} bytes the whole file
 * @returns {ObjectInfo | {format: 'macho-fat', slices: ObjectInfo[]}}
 */
export function readObject(bytes) {
  try {
    return readAny(bytes)
  } catch (e) {
    // A header pointing past the end: the file is cut short or not what its magic says.
    if (/** @type {NodeJS.ErrnoException} */ (e).code === 'ERR_OUT_OF_RANGE' || /** @type {NodeJS.ErrnoException} */ (e).code === 'ERR_BUFFER_OUT_OF_BOUNDS') {
      throw new Error(`objfile: a header points past the end of the ${bytes.length}-byte file (truncated?): ${/** @type {Error} */ (e).message}`)
    }
    throw e
  }
}

/** @param {Buffer} bytes */
function readAny(bytes) {
  if (bytes.length < 64) throw new Error(`objfile: ${bytes.length} bytes is too short for any object file`)
  if (bytes.readUInt32BE(0) === 0x7f454c46) return readElf(bytes)
  if (bytes.readUInt32LE(0) === 0xfeedfacf) return readMachO(bytes)
  if (bytes.readUInt32LE(0) === 0xfeedface) throw new Error('objfile: 32-bit Mach-O is not read')
  if (bytes.readUInt32BE(0) === 0xcafebabe) return readFat(bytes)
  if (bytes.toString('latin1', 0, 2) === 'MZ') return readPe(bytes)
  throw new Error(`objfile: unknown object format (magic ${bytes.subarray(0, 4).toString('hex')})`)
}

/** @param {string} file */
export const readObjectFile = (file) => readObject(readFileSync(file))

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const info = readObjectFile(process.argv[2])
  /** @param {any} o */
  const brief = (o) => ({ ...o, exports: o.exports.length > 20 ? `${o.exports.length} symbols` : o.exports, imports: `${o.imports.length} symbols` })
  console.log(JSON.stringify('slices' in info ? { ...info, slices: info.slices.map(brief) } : brief(info), null, 2))
}
