/**
 * The browser half's `block_run_code` row and `block_summary` card (`client/client.js`), rendered
 * by React 18.3.1 (the host web UI's version) into happy-dom, in every lifecycle state a DSH
 * 0.1.0-rc.8 tool tree hands a keyed `tool.call.toolview` view: preparing (no arguments yet), running, dispatched
 * (sub-calls under way), settled, failed, aborted (the tree's projection of an interrupted call),
 * and bad input (arguments that are not JSON, lack ids, carry the legacy `id`, have wrong types;
 * a call whose head fell outside the window; a slot value that is not a call at all; a block
 * whose getters throw); for the summary card also its answers (queued, replaced N, refused, an
 * output that is not the plugin's JSON). Each state must render without throwing and without a React warning,
 * the same markup every time, and the markup recorded in `fixtures/block-row.markup.json`
 * (collapsed and expanded); run with `UPDATE_MARKUP=1` to re-record after a deliberate change.
 * The shapes are rc.8's `RunningToolCall` / `ToolResultNode` (`@deepseek-ai/dsh-client-runtime`
 * types) as `@deepseek-ai/dsh-client-ui-conversation` builds them.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { React, click, loadClient, press, reactErrors, render, window } from './dom.mjs'

const MARKUP_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'block-row.markup.json')
const h = React.createElement
const ARGS = { ids: ['parser', 'lexer'], description: 'Read the tokenizer and count its states', code: "const src = await tools.read({file_path: 'src/tokenizer.rs'})\nconsole.log(src.length)\nreturn 'ok'" }
const args = (value) => JSON.stringify(value)
const running = (argsRaw, subCalls = []) => ({ callId: 'call_1', name: 'block_run_code', argsRaw, turn: 1, step: 1, time: 1_700_000_000_000, callView: null, subCalls })
const settled = (argsRaw, rest = {}) => ({
  kind: 'tool-result', seq: 9, time: 1_700_000_001_000, callId: 'call_1', call: { name: 'block_run_code', argsRaw }, callTime: 1_700_000_000_000,
  content: [{ type: 'text', text: '12873\n"ok"' }], isError: false, callView: null, resultView: null, subCalls: [], ...rest,
})
const child = { callId: 'call_1:code:1', name: 'read', argsRaw: args({ file_path: 'src/tokenizer.rs' }), turn: 1, step: 1, time: 1_700_000_000_500, callView: null, subCalls: [] }
const childDone = { ...settled(args({ file_path: 'src/tokenizer.rs' })), callId: 'call_1:code:1', call: { name: 'read', argsRaw: args({ file_path: 'src/tokenizer.rs' }) } }

/** Every state: the props the tool tree passes, and what the row must say. */
const STATES = {
  preparing: { block: running(''), state: 'running', phase: 'preparing', summary: 'call_1', expandable: false },
  running: { block: running(args(ARGS)), state: 'running', phase: 'running', summary: '[parser, lexer] Read the tokenizer and count its states', expandable: true },
  dispatched: { block: running(args(ARGS), [child]), state: 'running', phase: 'dispatched', summary: '[parser, lexer] Read the tokenizer and count its states', expandable: true },
  settled: { block: settled(args(ARGS), { subCalls: [childDone] }), state: 'ok', phase: 'settled', summary: '[parser, lexer] Read the tokenizer and count its states', expandable: true, output: '12873\n"ok"' },
  failed: {
    block: settled(args(ARGS), { isError: true, content: [{ type: 'text', text: 'TypeError: tools.reed is not a function\n    at program:1:20' }], error: { name: 'ToolError', code: 'program-error' } }),
    state: 'error', phase: 'failed', summary: 'TypeError: tools.reed is not a function', expandable: true,
  },
  failedWithoutText: { block: settled(args(ARGS), { isError: true, content: [], error: { name: 'ToolError', code: 'timeout' } }), state: 'error', phase: 'failed', summary: 'ToolError: timeout', expandable: true },
  aborted: { block: settled(args(ARGS), { isError: true, content: [], error: { name: 'Interrupted', code: 'interrupted' } }), state: 'stopped', phase: 'aborted', summary: '[parser, lexer] Read the tokenizer and count its states', expandable: true },
  argsNotJson: { block: running('{"ids": ["parser"], "description": "Read'), state: 'running', phase: 'running', summary: '{"ids": ["parser"], "description": "Read', expandable: true, rawArgs: true },
  settledArgsNotJson: { block: settled('not json at all\nsecond line', { content: [] }), state: 'ok', phase: 'settled', summary: 'not json at all', expandable: true, rawArgs: true },
  argsNotObject: { block: running('[1, 2, 3]'), state: 'running', phase: 'running', summary: '[1, 2, 3]', expandable: true, rawArgs: true },
  noIds: { block: settled(args({ description: 'No ids here', code: 'return 1' })), state: 'ok', phase: 'settled', summary: 'No ids here', expandable: true },
  legacyId: { block: settled(args({ id: 'parser', description: 'Legacy id', code: 'return 1' })), state: 'ok', phase: 'settled', summary: '[parser] Legacy id', expandable: true },
  wrongTypes: { block: settled(args({ ids: 'parser', description: { text: 'x' }, code: 42 })), state: 'ok', phase: 'settled', summary: 'call_1', expandable: true },
  mixedIds: { block: running(args({ ids: ['a', 7, '', null, 'b'], description: 'Mixed', code: 'return 1' })), state: 'running', phase: 'running', summary: '[a, b] Mixed', expandable: true },
  noDescription: { block: running(args({ ids: ['a'], code: '// find the lexer\nreturn 1' })), state: 'running', phase: 'running', summary: '[a] // find the lexer', expandable: true },
  headOutsideWindow: { block: settled('', { call: null }), state: 'ok', phase: 'settled', summary: 'call_1', expandable: true },
  nonTextResult: { block: settled(args(ARGS), { content: [{ type: 'image', mimeType: 'image/png', data: 'AAAA' }] }), state: 'ok', phase: 'settled', summary: '[parser, lexer] Read the tokenizer and count its states', expandable: true },
  nullBlock: { block: null, state: 'running', phase: 'preparing', summary: 'call_1', expandable: false },
  numberBlock: { block: 42, state: 'running', phase: 'preparing', summary: 'call_1', expandable: false },
}

/** The nested `block_summary` card (a sub-call: `<root>:code:<n>`, as the tree hands it over). */
const SUMMARY_ARGS = { ids: ['notes'], summary: 'notes.txt holds ZEBRA-42.\nOnly reporting remains.' }
const sub = (block) => (block && typeof block === 'object' ? { ...block, callId: 'call_1:code:3', ...(block.call ? { call: { ...block.call, name: 'block_summary' } } : { name: 'block_summary' }) } : block)
const answered = (value) => settled(args(SUMMARY_ARGS), { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }] })
const SUMMARY_STATES = {
  summaryRunning: { block: sub(running(args(SUMMARY_ARGS))), state: 'running', phase: 'running', summary: '[notes] notes.txt holds ZEBRA-42.', expandable: true, input: SUMMARY_ARGS.summary },
  summaryQueued: {
    block: sub(answered({ replaced: 0, tokensFreed: 0, pending: true, requestSeq: 31, note: 'Queued: waiting for 1 tool call(s) in the range to return' })),
    state: 'ok', phase: 'settled', summary: "[notes] queued: lands when the block's calls have returned", expandable: true, input: SUMMARY_ARGS.summary,
  },
  summaryReplaced: { block: sub(answered({ replaced: 3, tokensFreed: 346, ids: ['lexer'] })), state: 'ok', phase: 'settled', summary: '[notes] replaced 3 messages, ~346 tokens freed', expandable: true },
  summaryReplacedOne: { block: sub(answered({ replaced: 1, tokensFreed: 12 })), state: 'ok', phase: 'settled', summary: '[notes] replaced 1 message, ~12 tokens freed', expandable: true },
  summaryRefused: {
    block: sub(settled(args({ ids: ['nope'], summary: 'x' }), { isError: true, content: [{ type: 'text', text: 'UNKNOWN_BLOCK: no open block nope; nothing was changed. Name ids your `block_run_code` calls carried.' }] })),
    state: 'error', phase: 'failed', summary: 'UNKNOWN_BLOCK: no open block nope; nothing was changed. Name ids your `block_run_code` calls carried.', expandable: true,
  },
  summaryAborted: { block: sub(settled(args(SUMMARY_ARGS), { isError: true, content: [], error: { name: 'Interrupted', code: 'interrupted' } })), state: 'stopped', phase: 'aborted', summary: '[notes] notes.txt holds ZEBRA-42.', expandable: true },
  summaryOddOutput: { block: sub(settled(args(SUMMARY_ARGS), { content: [{ type: 'text', text: 'not the plugin answer' }] })), state: 'ok', phase: 'settled', summary: '[notes] notes.txt holds ZEBRA-42.', expandable: true, output: 'not the plugin answer' },
  summaryLegacyId: { block: sub(running(args({ id: 'notes', summary: 'Legacy' }))), state: 'running', phase: 'running', summary: '[notes] Legacy', expandable: true },
  summaryNotJson: { block: sub(running('{"ids": ["notes"], "summary": "cut')), state: 'running', phase: 'running', summary: '{"ids": ["notes"], "summary": "cut', expandable: true, rawArgs: true },
  summaryNoSummary: { block: sub(running(args({ ids: ['notes'] }))), state: 'running', phase: 'running', summary: '[notes] call_1', expandable: false },
  summaryNullBlock: { block: null, state: 'running', phase: 'preparing', summary: 'call_1', expandable: false },
}

const { module: client, registrations, requested } = loadClient({ src: 'http://127.0.0.1/plugins/dsh-fold/ui/client.js?rev=abc123' })
const View = client.BlockRunCodeView
const KINDS = {
  run: { View, tool: 'block_run_code', marker: 'block-run-code', variant: 'code', title: 'Code' },
  summary: { View: client.BlockSummaryView, tool: 'block_summary', marker: 'block-summary', variant: 'others', title: 'Block summary' },
}
const props = (block, toolName = 'block_run_code') => ({ callId: 'call_1', toolName, block, openFile: () => {}, inspect: () => {} })

/** Render one state collapsed, then expanded (when it can be), and return both markups. */
function markupOf (block, kind = KINDS.run) {
  const { container, unmount } = render(h(kind.View, props(block, kind.tool)))
  const collapsed = container.innerHTML
  const row = container.querySelector('.dfb-row')
  if (row?.getAttribute('role') === 'button') click(row)
  const expanded = container.innerHTML
  unmount()
  return { collapsed, expanded }
}

describe('client module: what the web UI loads', () => {
  test('the bundle registers one factory under its graph row id and requires only react', () => {
    assert.equal(registrations.length, 1)
    assert.equal(registrations[0].id, 'dsh-fold/ui')
    assert.deepEqual(requested, ['react'])
    assert.deepEqual([client.TOOL_NAME, client.SUMMARY_TOOL_NAME], ['block_run_code', 'block_summary'])
    assert.deepEqual(client.inject, ['slots'])
    assert.equal(typeof client.apply, 'function')
  })

  test('the id comes from the script URL the loader used, with a fallback for a bare run', () => {
    assert.equal(loadClient({ src: 'http://127.0.0.1/plugins/%40scope%2Fpkg/ui/client.js?rev=1' }).registrations[0].id, '@scope/pkg/ui')
    assert.equal(loadClient().registrations[0].id, 'dsh-fold/ui')
  })

  test('materializing injects the row CSS once, tagged for the loader, themed by the host variables only', () => {
    const tags = [...document.querySelectorAll('style[data-plugin-css="dsh-fold/ui/block-row.css"]')]
    assert.equal(tags.length, 1)
    assert.equal(tags[0].getAttribute('data-plugin'), 'dsh-fold/ui')
    const colours = tags[0].textContent.match(/(?:color|background|border)[^;{}]*:[^;{}]*/g)
    for (const decl of colours) {
      // Every colour goes through a host theme variable; a literal appears only as its fallback.
      if (/#|rgb/.test(decl)) assert.match(decl, /var\(--dsw-[a-z0-9-]+,[^)]*(#|rgb)/, decl)
    }
  })

  test('apply registers exactly two keyed tool views, for block_run_code and block_summary', () => {
    const calls = []
    const ctx = { slots: { inject: (name, make) => { calls.push(['inject', name]); make() }, register: (spec, component) => { calls.push(['register', spec, component]); return () => {} } } }
    client.apply(ctx)
    assert.deepEqual(calls, [
      ['inject', 'tool.call.toolview'], ['register', { name: 'tool.call.toolview', key: 'block_run_code' }, View],
      ['inject', 'tool.call.toolview'], ['register', { name: 'tool.call.toolview', key: 'block_summary' }, client.BlockSummaryView],
    ])
  })
})

describe('the block_run_code row and the block_summary card in every lifecycle state', () => {
  const recorded = existsSync(MARKUP_FILE) ? JSON.parse(readFileSync(MARKUP_FILE, 'utf8')) : {}
  const fresh = {}
  const ALL = { ...STATES, ...SUMMARY_STATES }

  for (const [name, want] of Object.entries(ALL)) {
    const kind = name in SUMMARY_STATES ? KINDS.summary : KINDS.run
    test(name, () => {
      reactErrors.length = 0
      const { container, unmount } = render(h(kind.View, props(want.block, kind.tool)))
      const root = container.querySelector(`[data-dsh-fold="${kind.marker}"]`)
      assert.ok(root, container.innerHTML)
      assert.equal(root.getAttribute('data-variant'), kind.variant)
      assert.equal(root.getAttribute('data-tool'), kind.tool)
      assert.equal(root.getAttribute('data-state'), want.state)
      assert.equal(root.getAttribute('data-phase'), want.phase)
      assert.equal(root.querySelector('.dfb-title').textContent, kind.title)
      assert.equal(root.querySelector('.dfb-summary').textContent, want.summary)
      const row = root.querySelector('.dfb-row')
      assert.equal(row.getAttribute('role') === 'button', want.expandable)
      // The view never draws the sub-calls: the tool tree nests them under the row.
      assert.equal(root.querySelector('[data-subcalls], [data-chat-call-id]'), null)
      if (want.expandable) {
        assert.equal(root.querySelector('.dfb-body'), null, 'collapsed by default')
        click(row)
        assert.equal(row.getAttribute('aria-expanded'), 'true')
        const body = root.querySelector('.dfb-body')
        assert.ok(body)
        const block = want.block
        const parsed = (() => { try { return JSON.parse(block.argsRaw ?? block.call?.argsRaw) } catch { return undefined } })()
        if (kind === KINDS.run && typeof parsed?.code === 'string') assert.equal(body.querySelector('[data-program] code').textContent, parsed.code)
        if (kind === KINDS.summary) assert.equal(body.querySelector('[data-program]'), null)
        if (want.input) assert.equal(body.querySelector('[data-input] .dfb-io-text').textContent, want.input)
        if (want.output) assert.equal(body.querySelector('[data-output] .dfb-io-text').textContent, want.output)
        if (want.rawArgs) assert.match(body.querySelector('[data-raw-args]').textContent, /Arguments are not valid JSON/)
        assert.equal(body.querySelector('.dfb-inspect').textContent, 'Inspect')
        press(row, 'Enter')
        assert.equal(root.querySelector('.dfb-body'), null, 'Enter collapses it again')
      }
      unmount()
      assert.deepEqual(reactErrors, [])

      const first = markupOf(want.block, kind)
      assert.deepEqual(markupOf(want.block, kind), first, 'the same props render the same markup')
      fresh[name] = first
      if (!process.env.UPDATE_MARKUP) assert.deepEqual(first, recorded[name], `markup of ${name} changed; UPDATE_MARKUP=1 re-records it`)
    })
  }

  test('a block whose getters throw degrades to a plain row, never an empty slot', () => {
    for (const kind of Object.values(KINDS)) {
      reactErrors.length = 0
      const hostile = new Proxy({}, { get () { throw new Error('boom') }, has () { throw new Error('boom') } })
      const { container, unmount } = render(h(kind.View, props(hostile, kind.tool)))
      const root = container.querySelector(`[data-dsh-fold="${kind.marker}"]`)
      assert.equal(root.getAttribute('data-phase'), 'unrenderable')
      assert.equal(root.querySelector('.dfb-title').textContent, kind.title)
      assert.equal(root.querySelector('.dfb-summary').textContent, 'call_1')
      unmount()
      assert.deepEqual(reactErrors, [])
    }
  })

  test('a render failure inside the row is caught by its boundary', () => {
    reactErrors.length = 0
    function Exploding () { throw new Error('late boom') }
    const { container, unmount } = render(h(client.RowBoundary, { callId: 'call_1' }, h(Exploding)))
    const root = container.querySelector('[data-dsh-fold="block-run-code"]')
    assert.equal(root.getAttribute('data-phase'), 'unrenderable')
    assert.equal(root.querySelector('.dfb-summary').textContent, 'call_1')
    unmount()
    // React's development build reports an error its boundary caught; that report is the only noise.
    assert.ok(reactErrors.length > 0 && reactErrors.every((e) => /late boom|above error occurred/i.test(e)), reactErrors.join('\n'))
  })

  test('no props at all still renders a row', () => {
    for (const kind of Object.values(KINDS)) {
      const { container, unmount } = render(h(kind.View, null))
      assert.equal(container.querySelector('.dfb-title').textContent, kind.title)
      unmount()
    }
  })

  test('recorded markup covers exactly the states above', (t) => {
    if (process.env.UPDATE_MARKUP) {
      writeFileSync(MARKUP_FILE, JSON.stringify(fresh, null, 2) + '\n')
      t.diagnostic(`re-recorded ${MARKUP_FILE}`)
    }
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(MARKUP_FILE, 'utf8'))).sort(), Object.keys(ALL).sort())
  })
})

export { window }
