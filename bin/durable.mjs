// @ts-check
/**
 * @module bin/durable
 * The file steps dsh-fold's writing commands share (`preset install|remove`, `compaction
 * enable|disable`): each step is atomic and durable before the next begins, so a crash at any
 * instant leaves either the old content or the new, never a torn file.
 *
 * - `writeDurable(file, body, mode)` writes a NEW file (it must not exist) with positional writes
 *   (a short write resumes where it stopped), sets its mode exactly (whatever the umask) and
 *   fsyncs it;
 * - `fsyncDir(dir)` makes the names in a folder durable (renames into or out of it); a no-op on
 *   Windows, where a folder cannot be opened to flush it (NTFS journals its renames);
 * - `renameDurable(from, to)` renames (atomically replacing `to` on POSIX) and flushes both
 *   folders;
 * - `running(pid)` tells whether another process with that id runs (its leftovers are then not
 *   a crash's, and are left alone);
 * - `discard(path)` removes a temporary file or folder on an error path without hiding the error.
 *
 * A step's temporary name carries the writing process's id (`…-<pid>`), so a later run tells a
 * crashed run's leftover (its process is gone) from a concurrent run's.
 */
import { closeSync, fchmodSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs'
import path from 'node:path'

/**
 * Makes what is in `dir` (a folder) durable: its entries' names, renames into or out of it.
 * @param {string} dir
 */
export function fsyncDir(dir) {
  if (process.platform === 'win32') return
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Writes a new file and makes its bytes durable. Positional writes (each chunk at its offset),
 * so a short write is resumed where it stopped.
 * @param {string} file @param {string} body @param {number} [mode] default 0600
 */
export function writeDurable(file, body, mode = 0o600) {
  const bytes = Buffer.from(body, 'utf8')
  const fd = openSync(file, 'wx', mode)
  try {
    if (process.platform !== 'win32') fchmodSync(fd, mode) // exactly, whatever the umask
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at, at)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Renames `from` to `to` (replacing it atomically) and makes the rename durable.
 * @param {string} from @param {string} to
 */
export function renameDurable(from, to) {
  renameSync(from, to)
  fsyncDir(path.dirname(to))
  if (path.dirname(from) !== path.dirname(to)) fsyncDir(path.dirname(from))
}

/** Whether a process with this id runs (another dsh-fold may be mid-write). @param {number} pid */
export function running(pid) {
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return /** @type {any} */ (e)?.code === 'EPERM'
  }
}

/** Removes a temporary file or folder on an error path; a failure to clean must not hide the error itself. @param {string} target */
export function discard(target) {
  try {
    rmSync(target, { recursive: true, force: true })
  } catch {
    // e.g. ENOTDIR: it was never created
  }
}
