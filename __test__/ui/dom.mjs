/**
 * @module __test__/ui/dom
 * Load dsh-fold's browser half the way the web UI does, in a DOM from npm (happy-dom), with
 * React from npm at the host's version (18.3.1: what `@deepseek-ai/dsh-web-frontend` 0.1.0-rc.8
 * bundles). `loadClient()` runs the shipped `client/client.js` unchanged against a registration
 * facade with the host loader's contract — executing the script registers `{id, factory}`,
 * materializing calls `factory(require)` — and returns the plugin module the factory built.
 * `render(element)` mounts into a fresh container inside React's `act`, and returns it with an
 * `unmount()`; React's own warnings and errors are collected in `reactErrors`.
 */
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Window } from 'happy-dom'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
export const CLIENT_FILE = path.join(ROOT, 'client', 'client.js')
const require = createRequire(import.meta.url)

const window = new Window({ url: 'http://127.0.0.1/' })
for (const key of ['window', 'document', 'navigator', 'HTMLElement', 'Node', 'Element', 'Text', 'Event', 'KeyboardEvent', 'MouseEvent', 'getComputedStyle']) {
  Object.defineProperty(globalThis, key, { value: key === 'window' ? window : typeof window[key] === 'function' && key === 'getComputedStyle' ? window[key].bind(window) : window[key], configurable: true, writable: true })
}
globalThis.IS_REACT_ACT_ENVIRONMENT = true

export const React = require('react')
const { createRoot } = require('react-dom/client')
const { act } = require('react')
export { act }

/** Console errors/warnings raised while rendering (React reports prop-type and key problems there). */
export const reactErrors = []
for (const level of /** @type {const} */ (['error', 'warn'])) {
  const original = console[level]
  console[level] = (...args) => {
    const text = args.map(String).join(' ')
    if (!text.includes('[dsh-fold]')) reactErrors.push(`${level}: ${text}`)
    else original(...args)
  }
}

/**
 * Run the shipped bundle and materialize its factory with `react` from npm.
 * @param {{src?: string}} [script] the `<script src>` the loader would have used
 */
export function loadClient ({ src } = {}) {
  const registrations = []
  window.__ModuleLoader__ = { load: (registration) => registrations.push(registration) }
  const script = document.createElement('script')
  if (src) script.setAttribute('src', src)
  Object.defineProperty(document, 'currentScript', { value: src ? script : null, configurable: true })
  new Function(readFileSync(CLIENT_FILE, 'utf8'))() // a classic script: `window` is the global
  const requested = []
  const exports = registrations.length === 1
    ? registrations[0].factory((spec) => {
      requested.push(spec)
      if (spec === 'react') return React
      throw new Error(`the client bundle required ${spec}, which the host's seed table does not give it`)
    })
    : undefined
  return { registrations, requested, module: exports }
}

/** Mount `element` into a fresh container; `unmount()` tears it down. */
export function render (element) {
  const container = document.createElement('div')
  document.body.appendChild(container)
  const root = createRoot(container)
  act(() => root.render(element))
  return { container, unmount: () => { act(() => root.unmount()); container.remove() } }
}

/** Click an element inside `act`. @param {Element} el */
export function click (el) {
  act(() => { el.dispatchEvent(new window.MouseEvent('click', { bubbles: true })) })
}

/** Press a key on an element inside `act`. @param {Element} el @param {string} key */
export function press (el, key) {
  act(() => { el.dispatchEvent(new window.KeyboardEvent('keydown', { key, bubbles: true })) })
}

export { window }
