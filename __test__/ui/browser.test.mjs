/**
 * Block mode in a real browser: the REAL DSH 0.1.0-rc.8 web host (`web` profile, bound to
 * 127.0.0.1, dsh-fold installed from its packed tarballs as a bundle, the `block-ptc` preset
 * installed by `dsh-fold preset install`) and headless Chromium (Debian's `chromium`, installed
 * by the harness when missing, driven by `playwright-core`), talking to the scripted model.
 *
 * A person's path, in the page: dismiss the first-load notice, open the mode picker, choose
 * "Block PTC", type the task, send. The model's one program reads a file, runs a shell command
 * that waits on a gate file, and closes its own block. While the shell command waits the test
 * checks the live DOM: the `block_run_code` call renders as dsh-fold's Code row (not the
 * generic tool row) with the summary `[notes] <description>` in phase `dispatched`, and the
 * program's sub-calls (read, settled; bash, running) are nested inside that call's row. After
 * the gate opens: the `block_summary` request nests as dsh-fold's "Block summary" card (queued),
 * the row settles, expands to the program and its output, and the block's
 * summary shows as the host's compaction-checkpoint marker right where the block was — after
 * the block's row, before the final answer — expanding to the summary text.
 *
 * A screenshot goes to the test's temp folder (its path is printed); with
 * DSH_FOLD_UPDATE_SCREENSHOT=1 it also replaces `docs/block-mode-web.png`. The suite skips only
 * when Chromium cannot be installed (the reason is printed) or under DSH_FOLD_SKIP_E2E.
 */
import assert from 'node:assert/strict'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'

import { ensureChromium, launchChromium } from '../e2e/harness/browser.mjs'
import { shape, startBlockWebHost, text } from './block-host.mjs'

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const SUMMARY = 'notes.txt holds the build id ZEBRA-42 (2 lines); the gate opened. Only reporting remains.'
const DESCRIPTION = 'Read the notes, wait for the gate, close the block'
const FINAL = 'The build id is ZEBRA-42.'

let chromium = /** @type {ReturnType<typeof ensureChromium>} */ ({ skip: 'not probed' })
let skip = /** @type {string | false} */ (process.env.DSH_FOLD_SKIP_E2E ? 'DSH_FOLD_SKIP_E2E is set: the browser suite boots the real DSH web host' : false)
const probeStart = performance.now()
if (!skip) {
  chromium = ensureChromium()
  if ('skip' in chromium) skip = chromium.skip
}
const probeMs = Math.round(performance.now() - probeStart)
if (skip) console.log(`[browser] skipped: ${skip}`)

describe('block mode in the web UI, in a real browser', { skip }, () => {
  /** @type {{root: string, platform: string}} */
  let tarballs
  const temps = []
  /** @type {Array<() => Promise<unknown> | unknown>} */
  const cleanups = []
  before(async () => {
    const { ensureHost } = await import('../e2e/harness/install.mjs')
    const { pack } = await import('../../scripts/pack.mjs')
    ensureHost()
    const packDir = mkdtempSync(path.join(tmpdir(), 'dsh-fold-pack-'))
    temps.push(packDir)
    tarballs = pack(packDir)
  }, { timeout: 45 * 60_000 })
  after(async () => {
    for (const clean of cleanups.reverse()) await clean()
    for (const d of temps) rmSync(d, { recursive: true, force: true })
  })

  test('choose Block PTC, run a block: the Code row, nested sub-calls, the summary node where the block was', { timeout: 300_000 }, async (t) => {
    const t0 = performance.now()
    const { isTitleRequest, startModelServer } = await import('../e2e/harness/model-server.mjs')
    // The screenshots and the agent's workspace go with the suite's other temp folders (after());
    // DSH_FOLD_KEEP_SCREENSHOTS=1 keeps them to look at, DSH_FOLD_UPDATE_SCREENSHOT=1 copies the
    // settled one into docs/.
    const shots = mkdtempSync(path.join(tmpdir(), 'dsh-fold-browser-'))
    if (!process.env.DSH_FOLD_KEEP_SCREENSHOTS) temps.push(shots)
    const cwd = path.join(shots, 'work')
    mkdirSync(cwd)
    const notes = path.join(cwd, 'notes.txt')
    writeFileSync(notes, 'alpha: the flux capacitor needs 1.21 GW\nbeta: ZEBRA-42 is the build id\n')
    const gate = path.join(cwd, 'gate')

    /** @type {any[]} */
    const agent = []
    const replies = [
      (/** @type {any} */ body) => {
        assert.deepEqual(body.tools.map((/** @type {any} */ x) => x.function.name), ['block_run_code'])
        return {
          content: 'I will read the notes in one block.',
          toolCalls: [{
            id: 'call_blk1', name: 'block_run_code',
            arguments: {
              ids: ['notes'], description: DESCRIPTION,
              code: [
                `const notes = await tools.read({file_path: ${JSON.stringify(notes)}})`,
                `const gate = await tools.bash({command: 'while [ ! -e gate ]; do sleep 0.1; done; echo gate-open', description: 'Wait for the gate'})`,
                'console.log(\'read and waited\')',
                `return await tools.block_summary({ids: ['notes'], summary: ${JSON.stringify(SUMMARY)}})`,
              ].join('\n'),
            },
          }],
        }
      },
      () => ({ content: FINAL }),
    ]
    const server = await startModelServer((body) => {
      if (isTitleRequest(body)) return { content: 'Block mode in the browser' }
      agent.push(body)
      const reply = replies[agent.length - 1]
      if (!reply) throw new Error(`model asked ${agent.length} times, scripted ${replies.length}`)
      return reply(body)
    })
    cleanups.push(() => server.close())
    const web = await startBlockWebHost({ tarballs, baseUrl: server.url, cwd })
    cleanups.push(() => web.cleanup())
    cleanups.push(() => web.stop())
    const hostMs = Math.round(performance.now() - t0)
    await web.api('workspace.create', { path: cwd })

    const browser = await launchChromium(/** @type {{executablePath: string}} */ (chromium).executablePath)
    cleanups.push(() => browser.close())
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 }, locale: 'en-US' })
    /** @type {string[]} */
    const pageErrors = []
    page.on('pageerror', (e) => pageErrors.push(e.message))
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(`console: ${m.text()}`) })
    const context = () => `model requests: ${agent.map((b) => shape(b.messages)).join(' | ')}\nviolations: ${JSON.stringify(server.violations)}\npage errors: ${pageErrors.join('\n')}\nhost stderr: ${web.stderr().slice(-3000)}`

    await page.goto(web.url)
    await page.getByRole('button', { name: 'Continue' }).click()
    // The boot graph carries the browser half, and the kernel materialized it (its CSS is in).
    const rows = await page.evaluate(() => /** @type {any} */ (window).__DSH_BOOT__.entries.map((/** @type {{id: string}} */ e) => e.id))
    assert.ok(rows.includes('dsh-fold/ui'), rows.join(', '))
    await page.locator('style[data-plugin-css="dsh-fold/ui/block-row.css"]').waitFor({ state: 'attached' })

    // Enable block mode the way a person does: the mode picker on the new-session composer.
    await page.getByRole('button', { name: /Standard mode/ }).click()
    await page.getByRole('menuitem', { name: /Block PTC/ }).click()
    await page.getByRole('button', { name: /Block PTC/ }).waitFor()
    const composer = page.getByPlaceholder('Describe what you want to build')
    await composer.fill('What is the build id in notes.txt?')
    await composer.press('Enter')

    // Live: the program waits on the gate inside its second sub-call.
    const call = page.locator('[data-chat-call-id="call_blk1"]')
    const row = call.locator('[data-dsh-fold="block-run-code"]')
    await row.and(page.locator('[data-phase="dispatched"]')).waitFor({ timeout: 120_000 }).catch((e) => { throw new Error(`${e.message}\n${context()}`) })
    assert.equal(await row.count(), 1)
    assert.equal(await row.getAttribute('data-variant'), 'code')
    assert.equal(await row.getAttribute('data-state'), 'running')
    assert.equal(await row.locator('.dfb-title').textContent(), 'Code')
    assert.equal(await row.locator('.dfb-summary').textContent(), `[notes] ${DESCRIPTION}`)
    // Not the generic row: no "Tool call" card and no other view for this call.
    assert.equal(await call.locator('[data-variant="others"]').count(), 0)
    assert.equal(await page.getByText('block_run_code ·').count(), 0)
    // The sub-calls nest inside the block's call row, in the tool tree's sub-call list.
    const subCalls = call.locator(':scope > [data-subcalls]')
    const read = subCalls.locator(':scope > [data-chat-call-id="call_blk1:code:1"]')
    const bash = subCalls.locator(':scope > [data-chat-call-id="call_blk1:code:2"]')
    await bash.waitFor()
    assert.match(await read.textContent() ?? '', /Read.*notes\.txt/)
    assert.match(await bash.textContent() ?? '', /Bash.*Wait for the gate/)
    assert.ok(await bash.locator('[data-state="running"]').count() > 0, await bash.innerHTML())
    const live = path.join(shots, 'block-running.png')
    await page.screenshot({ path: live })

    writeFileSync(gate, '')
    await page.getByText(FINAL).waitFor({ timeout: 120_000 }).catch((e) => { throw new Error(`${e.message}\n${context()}`) })
    await row.and(page.locator('[data-phase="settled"]')).waitFor()
    // The block_summary call ran inside the program too: a third nested card, dsh-fold's own.
    const summaryCard = subCalls.locator(':scope > [data-chat-call-id="call_blk1:code:3"] [data-dsh-fold="block-summary"]')
    await summaryCard.waitFor()
    assert.equal(await summaryCard.locator('.dfb-title').textContent(), 'Block summary')
    assert.equal(await summaryCard.locator('.dfb-summary').textContent(), "[notes] queued: lands when the block's calls have returned")

    // Expanded, the row shows the program and its output.
    await row.locator('.dfb-row').click()
    assert.match(await row.locator('[data-program] code').textContent() ?? '', /tools\.block_summary\(\{ids: \['notes'\]/)
    const output = await row.locator('[data-output] .dfb-io-text').textContent() ?? ''
    assert.match(output, /read and waited/)
    assert.match(output, /"pending": ?true/)

    // The summary: the host's compaction-checkpoint marker, where the block was.
    const marker = page.locator('button:has([data-compaction-icon="context"])')
    await marker.waitFor()
    assert.equal(await marker.count(), 1)
    assert.match(await marker.textContent() ?? '', /Context compacted/)
    const order = await page.evaluate(([final]) => {
      const block = document.querySelector('[data-chat-call-id="call_blk1"]')
      const mark = document.querySelector('[data-compaction-icon="context"]')
      const answer = [...document.querySelectorAll('p, div')].find((el) => el.textContent === final)
      const after = (/** @type {Node} */ a, /** @type {Node} */ b) => (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0
      return { markerAfterBlock: !!block && !!mark && after(block, mark), answerAfterMarker: !!mark && !!answer && after(mark, answer), markerInsideBlock: !!block?.contains(mark) }
    }, [FINAL])
    assert.deepEqual(order, { markerAfterBlock: true, answerAfterMarker: true, markerInsideBlock: false })
    await marker.click()
    await marker.locator('xpath=..').getByText(SUMMARY).waitFor()

    const shot = path.join(shots, 'block-mode-web.png')
    await page.screenshot({ path: shot })
    console.log(`[browser] screenshots: ${shot} (settled), ${live} (live)${process.env.DSH_FOLD_KEEP_SCREENSHOTS ? '' : '; removed after the suite (DSH_FOLD_KEEP_SCREENSHOTS=1 keeps them)'}`)
    t.diagnostic(`screenshot: ${shot}`)
    if (process.env.DSH_FOLD_UPDATE_SCREENSHOT) copyFileSync(shot, path.join(ROOT, 'docs', 'block-mode-web.png'))

    // What the model saw next: the summary in the block's place.
    assert.equal(agent.length, 2, context())
    assert.equal(shape(agent[1].messages), `${shape(agent[0].messages)} summary`, context())
    assert.ok(text(agent[1].messages.at(-1)).includes(SUMMARY))
    assert.deepEqual(server.violations, [], context())
    assert.deepEqual(pageErrors, [], context())
    const totalMs = Math.round(performance.now() - t0)
    const how = /** @type {{how: string, installedMs?: number}} */ (chromium)
    const timing = `chromium ${how.how}${how.installedMs ? ` in ${(how.installedMs / 1000).toFixed(1)} s` : ''} (probe ${(probeMs / 1000).toFixed(1)} s); host ready in ${(hostMs / 1000).toFixed(1)} s; test ${(totalMs / 1000).toFixed(1)} s`
    console.log(`[browser] ${timing}`)
    t.diagnostic(timing)
  })
})
