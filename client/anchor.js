/**
 * @module client/anchor
 * The host-level anchor row of dsh-fold's browser half (`dsh-fold/ui`). DSH's client-module
 * scanner (`@deepseek-ai/dsh-client-modules`) serves a package's `./client` bundle to the web
 * UI only when the package is a host loader entry, and block mode's functional rows live in
 * the `block-ptc` preset (another tree). This row is that entry, and nothing else: it
 * registers no tool, guard, prompt section, listener or service, so it changes nothing for
 * sessions on any other preset (a host-level guard would refuse their direct tool calls).
 * The browser half itself is `client/client.js`.
 *
 * The row's name must be `dsh-fold/ui`: the scanner resolves `<entry name>/package.json`, which
 * the package exports for this subpath, to find `dsh.client` and `exports["./client"]`.
 */

/** Cordis plugin name. */
export const name = 'dsh-fold-ui-anchor'

/** Registers nothing: being a loader entry is the whole job. */
export function apply () {}
