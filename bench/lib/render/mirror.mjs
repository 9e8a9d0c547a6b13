/**
 * @module bench/lib/render/mirror
 * Figure 9 (bench/mirror.mjs): the session mirror — its listener's cost per appended event, its
 * effect on DSH's append, its memory. Its rows of the Targets table, and its section's three
 * tables.
 */
import { fmtSpread, fmtUs, fmtX } from '../stats.mjs'
import { missedBy, verdict } from './verdict.mjs'

/**
 * Figure 9's target rows: per-event cost, DSH's append with and without the mirror, memory.
 * @param {any} MI the mirror section's result
 * @returns {string[][]}
 */
export function mirrorTargets(MI) {
  /** @type {string[][]} */
  const rows = []
  for (const p of MI.perEvent) {
    rows.push([
      `9. the session mirror's cost per appended event (its listener), ${p.events} events ${p.label}`,
      '≤ 2 µs p50',
      `p50 ${fmtUs(p.p50)}, p90 ${fmtUs(p.p90)}, p99 ${fmtUs(p.p99)}, mean ${fmtUs(p.mean)}`,
      p.p50 <= 2 ? verdict(true) : missedBy(p.p50 / 2),
    ])
  }
  for (const a of MI.append) {
    rows.push([
      `9. DSH's append with the mirror's listener vs without, ${a.events} events${a.meter ? ' (token meter measuring the session, as in a dsh-base host)' : ' (bare session store)'}`,
      '≤ 1.05×',
      `${fmtX(a.ratio)} (${fmtUs(a.with.median)} vs ${fmtUs(a.without.median)})`,
      a.ratio <= 1.05 ? verdict(true) : missedBy(a.ratio / 1.05),
    ])
  }
  for (const m of MI.memory) {
    rows.push([
      `9. memory of a ${m.events}-event session's mirror (${m.label}, ${m.surfaceNodes} surface nodes)`,
      'reported',
      `${(m.nativeBytes / 1024).toFixed(0)} KiB in the addon + ${(m.jsHeapBytes / 1024).toFixed(0)} KiB of JS heap (call-id map)`,
      verdict(true),
    ])
  }
  return rows
}

/**
 * Figure 9's section.
 * @param {any} MI the mirror section's result
 * @returns {string[]} Markdown lines
 */
export function mirrorSection(MI) {
  return [...mirrorPerEvent(MI), ...mirrorAppend(MI.append), ...mirrorMemory(MI.memory)]
}

/** The section's opening and the listener's cost per appended event. @param {any} MI */
function mirrorPerEvent(MI) {
  const L = []
  L.push('## 9. The session mirror', '')
  L.push(
    'What keeping one mirror per live session costs the host (bench/mirror.mjs). **Per appended event**: the mirror\'s `session/event` listener (describe the event, push its record to the addon), each call timed alone, over every event of the recorded sessions. ' +
      '**DSH\'s append**: the same appends into a session of a host with the mirror mounted and one without (a real SessionStore each), interleaved append by append, each timed alone; once more with DSH\'s token meter mounted in both and measuring the session (it syncs on every append, as in a dsh-base host where compaction-basic measures at every step). ' +
      '**Memory**: the addon\'s heap for a mirror fed from the first event, and the JS heap the plugin keeps beside it (the call-id map), as the heap growth over several sessions\' mirrors after a full GC.',
    '',
  )
  L.push('| session | events | listener p50 | p90 | p99 | mean |', '|---|---|---|---|---|---|')
  for (const p of MI.perEvent) L.push(`| ${p.label} | ${p.events} | ${fmtUs(p.p50)} | ${fmtUs(p.p90)} | ${fmtUs(p.p99)} | ${fmtUs(p.mean)} |`)
  L.push('')
  return L
}

/** DSH's append in a host with the mirror mounted and one without. @param {any[]} append the mirror result's `append` */
function mirrorAppend(append) {
  const L = []
  L.push('| host | DSH append without the mirror | with it | ratio of medians |', '|---|---|---|---|')
  for (const a of append) L.push(`| ${a.meter ? 'token meter measuring the session' : 'bare session store'} | ${fmtSpread(a.without)} | ${fmtSpread(a.with)} | ${fmtX(a.ratio)} |`)
  L.push('')
  return L
}

/** The addon's and the JS heap's bytes per session mirror. @param {any[]} memory the mirror result's `memory` */
function mirrorMemory(memory) {
  const L = []
  L.push('| session | events | surface nodes | addon heap | JS heap | RSS growth |', '|---|---|---|---|---|---|')
  for (const m of memory) L.push(`| ${m.label} | ${m.events} | ${m.surfaceNodes} | ${(m.nativeBytes / 1024).toFixed(0)} KiB | ${(m.jsHeapBytes / 1024).toFixed(0)} KiB | ${(m.rssBytes / 1024).toFixed(0)} KiB |`)
  L.push('')
  return L
}
