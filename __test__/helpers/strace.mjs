/**
 * @module helpers/strace
 * Stopping the real CLI at one system call, for the crash-safety suites of the commands that
 * write (`preset`, `compaction`): strace's syscall tampering kills (or fails) the unmodified
 * process at the entry of the n-th call of a kind, so no test hook ships in the published code.
 *
 * - `TRACED`, `KILL_AT`: the file-system calls traced, and those a kill is injected at;
 * - `straceUnavailable(suite)`: why strace cannot stop a process here (installing it with
 *   apt-get as root when it is missing), or undefined when it can;
 * - `syscalls(log)`: the calls of a log strace wrote with `-f -y`, each with its thread, its kind
 *   and which call of that kind it was for that thread (strace's `when=N` counts per thread);
 * - `killedCall(log)`: the line of the call a SIGKILL stopped.
 */
import { spawnSync } from 'node:child_process'

/** The file-system calls traced (`?`: absent on some architectures), and those a kill is injected at. */
export const TRACED = '?mkdir,mkdirat,?rename,renameat,renameat2,?unlink,unlinkat,?rmdir,fsync,fdatasync,write,pwrite64,?chmod,fchmod,fchmodat,openat'
// Not `write`: libuv's loop writes to its eventfd a varying number of times, so the n-th
// `write` is not the same call from run to run; bin/durable.mjs writes files with pwrite64.
export const KILL_AT = new Set(['mkdir', 'mkdirat', 'rename', 'renameat', 'renameat2', 'unlink', 'unlinkat', 'rmdir', 'fsync', 'fdatasync', 'pwrite64', 'chmod', 'fchmod', 'fchmodat'])

/**
 * Why strace cannot stop the CLI here, or undefined when it can (installing it as root when missing).
 * @param {string} suite names the asker in the install note
 */
export function straceUnavailable(suite) {
  const probe = () => spawnSync('strace', ['-f', '-qq', '-e', 'trace=none', process.execPath, '-e', '0'], { encoding: 'utf8' })
  let r = probe()
  if (r.error && /** @type {any} */ (r.error).code === 'ENOENT') {
    if (process.getuid?.() !== 0) return 'strace is not installed (as root: apt-get install -y strace)'
    console.log(`# ${suite}: installing strace with apt-get (it stops the real CLI at each file-system call)`)
    const apt = spawnSync('apt-get', ['install', '-y', 'strace'], { encoding: 'utf8', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } })
    if (apt.status !== 0) return `apt-get install -y strace failed: ${apt.stderr.trim().split('\n').at(-1)}`
    r = probe()
  }
  if (r.status !== 0) return `strace cannot trace here (ptrace not permitted?): ${(r.stderr || String(r.error)).trim().split('\n').at(-1)}`
  return undefined
}

/**
 * One traced syscall entry of the log strace writes with `-f -y`: who made it, which call it was
 * of its kind for that thread (strace counts `when=N` per thread and syscall), and its line.
 * @param {string} text
 */
export function syscalls(text) {
  /** @type {Map<string, number>} */
  const counts = new Map()
  const out = []
  for (const line of text.split('\n')) {
    const m = /^(\d+) +([a-z0-9_]+)\(/.exec(line)
    if (!m) continue // `<... resumed>`, exits, signals
    const key = `${m[1]} ${m[2]}`
    const n = (counts.get(key) ?? 0) + 1
    counts.set(key, n)
    out.push({ pid: m[1], name: m[2], n, line })
  }
  return out
}

/** The syscall a SIGKILL stopped, as strace logged it: `= ?`, or `<unfinished ...>` then `resumed> = ?`. @param {string} text */
export function killedCall(text) {
  const lines = text.split('\n')
  const whole = lines.find((l) => /^\d+ +[a-z0-9_]+\(.*\) = \?$/.test(l))
  if (whole) return whole
  const resumed = lines.findIndex((l) => /^\d+ +<\.\.\. [a-z0-9_]+ resumed>.*= \?$/.test(l))
  if (resumed < 0) return undefined
  const [pid, name] = /^(\d+) +<\.\.\. ([a-z0-9_]+) resumed>/.exec(lines[resumed])?.slice(1) ?? []
  return lines.slice(0, resumed).findLast((l) => new RegExp(`^${pid} +${name}\\(`).test(l) && l.endsWith('<unfinished ...>'))
}
