/**
 * @module client/client
 * dsh-fold's browser half: the web UI row for block mode's `block_run_code` calls.
 *
 * Contract. This file is the package's `./client` export, served by DSH's client-module
 * scanner as `/plugins/<row id>/client.js` because the host-level anchor row
 * (`dsh-fold/ui`, see `client/anchor.js`) makes the package a loader entry. It is one
 * classic script, run as is (no build step): executing it only registers a factory with
 * `window.__ModuleLoader__.load({id, factory})`; the factory runs when the web kernel
 * materializes the module and returns a browser cordis plugin `{name, inject: ['slots'],
 * apply}` that registers two keyed views in `tool.call.toolview`: `block_run_code` (the block's
 * program row) and `block_summary` (the card of a summary request inside a program).
 *
 * The host's client-plugin rules hold: nothing of the host's client packages is imported;
 * `react` comes through the module loader's `require`; every colour and font is one of the
 * host's theme variables (`--dsw-alias-*`, `--dsw-font-*`), with a fallback for a page
 * that does not define it; the CSS is injected at materialization, tagged for the loader's
 * style bookkeeping.
 *
 * What the row shows: the Code Mode row's anatomy — a code icon, the title `Code`, the
 * summary `[<block ids>] <description>`; expanded, the program and its output — with the
 * lifecycle in `data-state` (the host's `running | ok | error | stopped`) and the finer
 * `data-phase` (`preparing | running | dispatched | settled | failed | aborted`). The sub-call
 * cards the program dispatched are NOT drawn here: in DSH 0.1.0-rc.8 the tool tree
 * (`@deepseek-ai/dsh-client-ui-tool`'s ToolCallTree) owns nesting and renders every
 * `tool/code-dispatch` child of this call (same call id: `block_run_code` delegates to
 * `run_code` with it) in its own `[data-subcalls]` list under this row; drawing them again
 * would show each twice.
 *
 * The `block_summary` card (dispatched inside a program, so the tree nests it under its
 * `block_run_code` row) is titled `Block summary` and says `[<ids>]` and what became of the
 * request — `queued: …` (pending until the block's calls return) or `replaced N messages, ~T
 * tokens freed` — with the summary text as its input and the plugin's answer as its output.
 *
 * The views never throw: the model is derived defensively (arguments that are not JSON,
 * lack ids, or have the wrong types still give a readable row), and an error boundary
 * around it renders a plain row if rendering itself fails, because a keyed view that throws
 * empties its slot.
 */
(function registerDshFoldClient (root) {
  'use strict'

  const TOOL_NAME = 'block_run_code'
  const SUMMARY_TOOL_NAME = 'block_summary'
  const FALLBACK_ID = 'dsh-fold/ui'
  const STYLE_ID = 'dsh-fold/ui/block-row.css'

  /** The module id is the graph row id, which is the anchor row's name; read it from our own URL. */
  function moduleId () {
    const src = root.document && root.document.currentScript && root.document.currentScript.src
    const match = typeof src === 'string' ? /\/plugins\/(.+)\/client\.js(?:[?#]|$)/.exec(new URL(src, 'http://x/').pathname) : null
    return match ? decodeURIComponent(match[1]) : FALLBACK_ID
  }

  const CSS = `
.dfb-root{display:flex;flex-direction:column;min-width:0}
.dfb-row{position:relative;display:flex;align-items:center;min-width:0;height:24px;overflow:hidden;cursor:default;border-radius:6px;outline:none}
.dfb-row[data-expandable]{cursor:pointer}
.dfb-row:focus-visible{box-shadow:0 0 0 2px var(--dsw-alias-border-l2,rgba(0,0,0,.1))}
.dfb-root[data-state=running] .dfb-row:after{content:"";position:absolute;top:0;bottom:0;left:-240px;width:240px;pointer-events:none;background:linear-gradient(90deg,transparent 0%,color-mix(in srgb,var(--dsw-alias-bg-base,#fff) 65%,transparent) 50%,transparent 100%);animation:dfb-sweep 2.4s ease-out infinite}
@keyframes dfb-sweep{0%{left:-240px}90%,100%{left:100%}}
@media (prefers-reduced-motion:reduce){.dfb-root[data-state=running] .dfb-row:after{display:none;animation:none}}
.dfb-leading{position:relative;display:inline-flex;flex:none;align-items:center;justify-content:center;width:16px;height:16px;margin-right:6px;color:var(--dsw-alias-label-secondary,#61666b)}
.dfb-icon,.dfb-chevron{display:inline-flex}
.dfb-chevron{position:absolute;inset:0;align-items:center;justify-content:center;opacity:0;transition:opacity .1s}
.dfb-row[data-expandable]:hover .dfb-icon,.dfb-root[data-open] .dfb-icon{opacity:0}
.dfb-row[data-expandable]:hover .dfb-chevron,.dfb-root[data-open] .dfb-chevron{opacity:1}
.dfb-dot{width:8px;height:8px;border-radius:50%;background:var(--dsw-alias-state-error-primary,#e5484d)}
.dfb-dot[data-tone=warning]{background:var(--dsw-alias-state-warning-primary,#f5a524)}
.dfb-title{flex:none;font-size:14px;line-height:24px;color:var(--dsw-alias-label-secondary,#61666b)}
.dfb-sep{flex:none;width:2px;height:2px;margin:0 8px;border-radius:1px;background:var(--dsw-alias-label-caption,#adb2b8)}
.dfb-summary{flex:auto;min-width:0;overflow:hidden;white-space:nowrap;text-overflow:ellipsis;font-size:14px;line-height:24px;color:var(--dsw-alias-label-tertiary,#81858c)}
.dfb-summary[data-error]{color:var(--dsw-alias-state-error-primary,#e5484d)}
.dfb-ids{color:var(--dsw-alias-label-secondary,#61666b)}
.dfb-body{display:flex;flex-direction:column}
.dfb-code{margin:4px 0 4px 4px;border-radius:12px;background:var(--dsw-alias-markdown-code-block,#f9fafb);overflow:hidden}
.dfb-banner{padding:9px 14px;font:var(--dsw-font-markdown-code-block-small,12px/18px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace);color:var(--dsw-alias-label-secondary,#61666b);background:var(--dsw-alias-markdown-code-block-banner,var(--dsw-alias-markdown-code-block,#f9fafb))}
.dfb-program{margin:0;padding:4px 16px 16px;max-height:260px;overflow:auto;white-space:pre;font:var(--dsw-font-markdown-code-block-small,12px/18px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace);color:var(--dsw-alias-label-primary,#0f1115)}
.dfb-io{display:flex;flex-direction:column;margin:4px 0 4px 4px;border:1px solid var(--dsw-alias-border-l1,rgba(0,0,0,.04));border-radius:12px;background:var(--dsw-alias-markdown-code-block,#f9fafb);font:var(--dsw-font-markdown-code-block-small,12px/18px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace)}
.dfb-io-section{display:grid;grid-template-columns:max-content 1fr;column-gap:14px;align-items:baseline;max-height:150px;overflow-y:auto;padding:12px 16px}
.dfb-io-divider{flex:none;height:1px;background:var(--dsw-alias-border-l2,rgba(0,0,0,.1))}
.dfb-io-label{position:sticky;top:0;align-self:start;color:var(--dsw-alias-label-caption,#adb2b8)}
.dfb-io-text{min-width:0;white-space:pre-wrap;word-break:break-word;color:var(--dsw-alias-label-secondary,#61666b)}
.dfb-io-text[data-error]{color:var(--dsw-alias-state-error-primary,#e5484d)}
.dfb-inspect{align-self:flex-start;display:inline-flex;align-items:center;gap:4px;margin:4px 0 2px 4px;padding:2px 8px;border:1px solid var(--dsw-alias-border-l2,rgba(0,0,0,.1));border-radius:999px;background:var(--dsw-alias-bg-base,#fff);color:var(--dsw-alias-label-secondary,#61666b);font-size:11px;line-height:16px;cursor:pointer;opacity:0;transition:opacity .1s}
.dfb-root:hover .dfb-inspect,.dfb-inspect:focus-visible{opacity:1}
.dfb-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
`

  /** Inject the row's CSS once per page (a re-materialization after HMR finds it present). */
  function injectCss (id) {
    const doc = root.document
    if (!doc || !doc.head || doc.querySelector(`style[data-plugin-css="${STYLE_ID}"]`)) return
    const tag = doc.createElement('style')
    tag.setAttribute('data-plugin', id)
    tag.setAttribute('data-plugin-css', STYLE_ID)
    tag.textContent = CSS
    doc.head.appendChild(tag)
  }

  // ---- the row model: a pure function of the frozen call slice -----------------------------

  const firstLine = (text) => {
    const at = text.indexOf('\n')
    return at === -1 ? text : text.slice(0, at)
  }

  /** A value as display text: strings verbatim, anything else as JSON (never throws). */
  function asText (value) {
    if (typeof value === 'string') return value
    try {
      const json = JSON.stringify(value, null, 2)
      return json === undefined ? String(value) : json
    } catch {
      return String(value)
    }
  }

  /** A settled result's content as text: text blocks verbatim, other blocks as JSON. */
  function resultText (block) {
    const content = Array.isArray(block.content) ? block.content : []
    const parts = content.map((item) => (item && item.type === 'text' && typeof item.text === 'string' ? item.text : asText(item)))
    const error = block.error
    if (parts.length === 0 && error && typeof error === 'object') parts.push(`${asText(error.name ?? 'Error')}: ${asText(error.code ?? '')}`)
    return parts.join('\n')
  }

  const ABORT_CODES = new Set(['interrupted', 'aborted', 'cancelled', 'canceled'])

  /**
   * What every row derives the same way from the frozen call slice: arguments (parsed, or why
   * not), block ids, lifecycle, output. Never throws for a slice of any shape.
   * @param {any} block a RunningToolCall or ToolResultNode (or anything) @param {any} callId
   */
  function callFacts (block, callId) {
    const slice = block !== null && typeof block === 'object' ? block : {}
    const settled = 'kind' in slice
    const raw = settled ? (slice.call ? slice.call.argsRaw : undefined) : slice.argsRaw
    const argsRaw = raw === undefined || raw === null ? '' : typeof raw === 'string' ? raw : asText(raw)
    let args
    let argsValid = argsRaw !== ''
    if (argsValid) {
      try {
        args = JSON.parse(argsRaw)
      } catch {
        argsValid = false
      }
      if (args === null || typeof args !== 'object' || Array.isArray(args)) argsValid = false
    }
    const fields = argsValid ? args : {}
    const idList = Array.isArray(fields.ids) ? fields.ids : typeof fields.id === 'string' ? [fields.id] : []
    const subCalls = Array.isArray(slice.subCalls) ? slice.subCalls.length : 0
    const error = slice.error && typeof slice.error === 'object' ? slice.error : undefined
    const aborted = settled && error !== undefined && ABORT_CODES.has(error.code)
    const failed = settled && !aborted && slice.isError === true
    const state = !settled ? 'running' : aborted ? 'stopped' : failed ? 'error' : 'ok'
    const output = settled ? resultText(slice) || null : null
    return {
      fields,
      argsRaw,
      ids: idList.filter((id) => typeof id === 'string' && id !== ''),
      rawArgs: argsRaw !== '' && !argsValid ? argsRaw : null,
      argsValid: argsRaw === '' ? null : argsValid,
      state,
      phase: !settled ? (argsRaw === '' ? 'preparing' : subCalls > 0 ? 'dispatched' : 'running') : aborted ? 'aborted' : failed ? 'failed' : 'settled',
      output,
      errorLine: state === 'error' && output !== null ? firstLine(output) : null,
      subCalls,
      callId: typeof callId === 'string' && callId !== '' ? callId : typeof slice.callId === 'string' ? slice.callId : '',
    }
  }

  /** The one-line text after the ids when nothing better exists: raw arguments, else the call id. */
  const fallbackText = (facts) => (facts.rawArgs !== null ? firstLine(facts.rawArgs).slice(0, 200) : facts.callId)

  /**
   * The `block_run_code` row: `[ids] description`, the program, its output.
   * @param {any} block @param {any} callId
   */
  function blockRowModel (block, callId) {
    const facts = callFacts(block, callId)
    const description = typeof facts.fields.description === 'string' ? firstLine(facts.fields.description).trim() : ''
    const code = typeof facts.fields.code === 'string' && facts.fields.code !== '' ? facts.fields.code : null
    return { ...facts, summary: description !== '' ? description : code !== null ? firstLine(code).trim() : fallbackText(facts), program: code, input: null }
  }

  /**
   * The nested `block_summary` card: `[ids]` and what became of the request (queued, or how
   * many messages it replaced), the summary text as its input.
   * @param {any} block @param {any} callId
   */
  function summaryRowModel (block, callId) {
    const facts = callFacts(block, callId)
    const text = typeof facts.fields.summary === 'string' && facts.fields.summary.trim() !== '' ? facts.fields.summary : null
    let outcome = null
    if (facts.state === 'ok' && facts.output !== null) {
      try {
        const result = JSON.parse(facts.output)
        if (result && result.pending === true) outcome = 'queued: lands when the block\'s calls have returned'
        else if (result && Number.isInteger(result.replaced)) {
          const tokens = Number.isFinite(result.tokensFreed) ? `, ~${result.tokensFreed} tokens freed` : ''
          outcome = `replaced ${result.replaced} message${result.replaced === 1 ? '' : 's'}${tokens}`
        }
      } catch {
        // not the plugin's JSON answer: the output section still shows it
      }
    }
    return { ...facts, summary: outcome ?? (text !== null ? firstLine(text).trim() : fallbackText(facts)), program: null, input: text }
  }

  const STATUS = { running: 'Running', error: 'Failed', stopped: 'Stopped' }

  // ---- the views -----------------------------------------------------------------------------

  function createView (React) {
    const h = React.createElement

    const svg = (children) => h('svg', { width: 14, height: 14, viewBox: '0 0 14 14', fill: 'none', 'aria-hidden': true, focusable: 'false' }, children)
    const stroke = { stroke: 'currentColor', strokeWidth: 1.2, strokeLinecap: 'round', strokeLinejoin: 'round' }
    /** Two angle brackets and a slash: the program glyph (drawn for this row). */
    const codeIcon = () => svg([
      h('path', { key: 'l', d: 'M4.5 3.5L1.5 7l3 3.5', ...stroke }),
      h('path', { key: 'r', d: 'M9.5 3.5l3 3.5-3 3.5', ...stroke }),
      h('path', { key: 's', d: 'M8 2.5L6 11.5', ...stroke }),
    ])
    /** Three lines folding into one: the summary glyph. */
    const foldIcon = () => svg([
      h('path', { key: 'a', d: 'M2.5 3h9', ...stroke }),
      h('path', { key: 'b', d: 'M4.5 5.5L7 8l2.5-2.5', ...stroke }),
      h('path', { key: 'c', d: 'M2.5 11h9', ...stroke }),
    ])
    const chevron = (open) => svg(h('path', { d: open ? 'M3 5.25l4 4 4-4' : 'M5.25 3l4 4-4 4', ...stroke }))

    /** The two rows dsh-fold owns: how each is titled, marked and modelled. */
    const KINDS = {
      run: { tool: TOOL_NAME, marker: 'block-run-code', variant: 'code', title: 'Code', icon: codeIcon, model: blockRowModel },
      summary: { tool: SUMMARY_TOOL_NAME, marker: 'block-summary', variant: 'others', title: 'Block summary', icon: foldIcon, model: summaryRowModel },
    }

    function leading (kind, state, open) {
      const icon = state === 'error' ? h('span', { className: 'dfb-dot', 'data-tone': 'error' })
        : state === 'stopped' ? h('span', { className: 'dfb-dot', 'data-tone': 'warning' })
          : kind.icon()
      return h('span', { className: 'dfb-leading', 'aria-hidden': true },
        h('span', { className: 'dfb-icon' }, icon),
        h('span', { className: 'dfb-chevron' }, chevron(open)))
    }

    const ioSection = (label, marker, text, error) => h('div', { className: 'dfb-io-section', [marker]: true },
      h('span', { className: 'dfb-io-label' }, label),
      h('span', { className: 'dfb-io-text', 'data-error': error || undefined }, text))

    function Row ({ kind, model, inspect }) {
      const [expanded, setExpanded] = React.useState(false)
      const expandable = model.program !== null || model.input !== null || model.rawArgs !== null || model.output !== null
      const open = expanded && expandable
      const toggle = () => { if (expandable) setExpanded((value) => !value) }
      const onKeyDown = (event) => {
        if (!expandable || (event.key !== 'Enter' && event.key !== ' ')) return
        event.preventDefault()
        toggle()
      }
      const status = STATUS[model.state]
      const summaryChildren = model.errorLine !== null
        ? [model.errorLine]
        : [model.ids.length > 0 ? h('span', { key: 'ids', className: 'dfb-ids', 'data-block-ids': model.ids.join(' ') }, `[${model.ids.join(', ')}]`) : null,
            model.ids.length > 0 && model.summary !== '' ? ' ' : null, model.summary]
      const io = [
        model.rawArgs !== null ? ioSection('IN', 'data-raw-args', `Arguments are not valid JSON:\n${model.rawArgs}`, false) : null,
        model.input !== null ? ioSection('IN', 'data-input', model.input, false) : null,
        model.output !== null ? ioSection('OUT', 'data-output', model.output, model.state === 'error') : null,
      ].filter(Boolean)
      const ioChildren = io.flatMap((section, i) => (i === 0 ? [section] : [h('span', { key: `d${i}`, className: 'dfb-io-divider', 'aria-hidden': true }), section]))
      return h('div', {
        className: 'dfb-root',
        'data-dsh-fold': kind.marker,
        'data-variant': kind.variant,
        'data-tool': kind.tool,
        'data-state': model.state,
        'data-phase': model.phase,
        'data-args': model.argsValid === false ? 'invalid' : model.argsValid === null ? 'empty' : 'json',
        'data-open': open || undefined,
      },
      status ? h('span', { className: 'dfb-hidden' }, status) : null,
      h('div', {
        className: 'dfb-row',
        'data-expandable': expandable || undefined,
        ...(expandable ? { role: 'button', tabIndex: 0, 'aria-expanded': open, onClick: toggle, onKeyDown } : {}),
      },
      leading(kind, model.state, open),
      h('span', { className: 'dfb-title' }, kind.title),
      h('span', { className: 'dfb-sep', 'aria-hidden': true }),
      h('span', { className: 'dfb-summary', 'data-error': model.errorLine !== null || undefined }, ...summaryChildren)),
      open ? h('div', { className: 'dfb-body' },
        model.program !== null ? h('div', { className: 'dfb-code', 'data-program': true },
          h('div', { className: 'dfb-banner' }, 'typescript'),
          h('pre', { className: 'dfb-program' }, h('code', null, model.program))) : null,
        ioChildren.length > 0 ? h('div', { className: 'dfb-io' }, ...ioChildren) : null,
        typeof inspect === 'function' ? h('button', { type: 'button', className: 'dfb-inspect', onClick: inspect }, 'Inspect') : null) : null)
    }

    /** The row a failure degrades to: the tool and the call, nothing derived. */
    function PlainRow ({ kind, callId }) {
      return h('div', { className: 'dfb-root', 'data-dsh-fold': kind.marker, 'data-variant': kind.variant, 'data-tool': kind.tool, 'data-phase': 'unrenderable' },
        h('div', { className: 'dfb-row' },
          h('span', { className: 'dfb-leading', 'aria-hidden': true }, kind.icon()),
          h('span', { className: 'dfb-title' }, kind.title),
          h('span', { className: 'dfb-sep', 'aria-hidden': true }),
          h('span', { className: 'dfb-summary' }, typeof callId === 'string' ? callId : kind.tool)))
    }

    class Boundary extends React.Component {
      constructor (props) {
        super(props)
        this.state = { failed: false }
      }

      static getDerivedStateFromError () {
        return { failed: true }
      }

      componentDidCatch (error) {
        if (root.console) root.console.warn(`[dsh-fold] ${this.props.kind.tool} row failed to render; showing a plain row`, error)
      }

      render () {
        return this.state.failed ? h(PlainRow, { kind: this.props.kind, callId: this.props.callId }) : this.props.children
      }
    }

    /** The call id, read so that even hostile props cannot make this throw. */
    function safeCallId (props) {
      try {
        return props && typeof props.callId === 'string' ? props.callId : undefined
      } catch {
        return undefined
      }
    }

    /** One keyed `tool.call.toolview` view (props: DSH's ToolCallOwnerProps) for `kind`. */
    function viewFor (kind) {
      /** Props to row: everything that reads the props runs inside the boundary. */
      function Inner (props) {
        const callId = safeCallId(props)
        let model
        try {
          model = kind.model(props ? props.block : undefined, callId)
        } catch {
          return h(PlainRow, { kind, callId })
        }
        return h(Row, { kind, model, inspect: props.inspect })
      }
      function View (props) {
        return h(Boundary, { kind, callId: safeCallId(props) }, h(Inner, props))
      }
      return View
    }

    const BlockRunCodeView = viewFor(KINDS.run)
    const BlockSummaryView = viewFor(KINDS.summary)
    /** The boundary alone, around any child: a plain `block_run_code` row if the child throws. */
    function RowBoundary ({ callId, children }) {
      return h(Boundary, { kind: KINDS.run, callId }, children)
    }
    return { BlockRunCodeView, BlockSummaryView, RowBoundary }
  }

  // ---- the module ----------------------------------------------------------------------------

  const id = moduleId()
  root.__ModuleLoader__.load({
    id,
    factory: (require) => {
      const React = require('react')
      injectCss(id)
      const { BlockRunCodeView, BlockSummaryView, RowBoundary } = createView(React)
      return {
        name: 'dsh-fold-ui',
        inject: ['slots'],
        apply (ctx) {
          ctx.slots.inject('tool.call.toolview', () => ctx.slots.register({ name: 'tool.call.toolview', key: TOOL_NAME }, BlockRunCodeView))
          ctx.slots.inject('tool.call.toolview', () => ctx.slots.register({ name: 'tool.call.toolview', key: SUMMARY_TOOL_NAME }, BlockSummaryView))
        },
        TOOL_NAME,
        SUMMARY_TOOL_NAME,
        BlockRunCodeView,
        BlockSummaryView,
        RowBoundary,
        blockRowModel,
        summaryRowModel,
      }
    },
  })
})(typeof window !== 'undefined' ? window : globalThis)
