/**
 * The memory browser in a real browser: Debian's Chromium driven by playwright-core against the
 * real `stablemem serve` process on a temp store. Every wait is on a condition of the page (an
 * element, a text), with generous limits, never on a timer, so a loaded machine only makes it
 * slower. Screenshots of the main views (laptop and phone widths, English and Chinese) go to
 * `.cache/screenshots/`; the current ones are committed in `docs/screenshots/`.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { boot, reply, injected, textOf } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { startServe, type ServeProcess } from '../helpers/serve.ts'
import { tempDir } from '../helpers/temp.ts'
import { BlockStore } from '../../lib/store/store.ts'

const CHROMIUM = '/usr/bin/chromium'
const SHOTS = join(import.meta.dirname, '..', '..', '.cache', 'screenshots')
/** Generous: the machine may be shared by several test runs. */
const WAIT = 60_000

const NOTES = {
  billing: 'billing 服务端口 8499，部署在 10.3.7.9',
  nginx: 'nginx config lives at /etc/nginx/nginx.conf on the web hosts',
  postgres: 'The staging Postgres is version v16.4 and listens on port 5433',
  hostile: 'HOSTILE <script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> **bold** \u001b[2J\u001b]0;title\u0007 ab\u200bcd \u202Eevil',
  forget: 'FORGET-ME-7731 the old VPN gateway was vpn-old.internal',
  edit: 'The release train leaves every Tuesday',
}

async function run(): Promise<void> {
  const dir = tempDir('stablemem-browser')
  const db = join(dir, 'memory.db')
  mkdirSync(SHOTS, { recursive: true })

  // The plugin writes the notes and runs a real turn: its injected message is what the page must show.
  const question = 'billing 服务的端口是多少？'
  const h = await boot({ path: db }, [reply('ok')])
  for (const [key, text] of Object.entries(NOTES)) await h.ctx.stablemem.commit({ text, source: key === 'billing' ? 'ops' : 'user', scene: key === 'billing' ? 'billing' : '' })
  // One L3 fact distilled from the billing note, as cooling writes it (a `fact` block with a derived_from edge).
  const billing = await h.ctx.stablemem.commit({ text: NOTES.billing })
  const fact = await h.ctx.stablemem.commit({ text: 'billing service|port=8499', source: 'distill', semanticType: 'fact' })
  await h.ctx.stablemem.link({ sourceKind: 'block', sourceId: fact.id, targetKind: 'block', targetId: billing.id, type: 'derived_from' })
  await h.turn(question)
  const preStep = injected(h.adapter.requests[0]!).map(textOf)
  await h.dispose()
  t.equal(preStep.length, 1, 'the pre-step injected one message')

  const server = await startServe(db)
  t.teardown(async () => { await server.stop() })
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  t.teardown(() => browser.close())

  async function open(locale: string, width = 1280, height = 800): Promise<{ context: BrowserContext, page: Page, dialogs: string[], errors: string[] }> {
    const context = await browser.newContext({ locale, viewport: { width, height }, deviceScaleFactor: 1 })
    context.setDefaultTimeout(WAIT)
    const page = await context.newPage()
    const dialogs: string[] = []
    const errors: string[] = []
    page.on('dialog', (d) => { dialogs.push(d.message()); void d.dismiss() })
    page.on('pageerror', (e) => { errors.push(e.message) })
    return { context, page, dialogs, errors }
  }

  /** Waits until the page has rendered its current location (a hash change alone does not reload the page). */
  async function rendered(page: Page): Promise<void> {
    await page.waitForFunction(() => {
      const { document, location } = globalThis as unknown as { document: { body: { dataset: Record<string, string | undefined> } }, location: { hash: string } }
      return document.body.dataset.rendered === location.hash
    })
  }

  async function searchFor(page: Page, q: string, model = false): Promise<void> {
    await page.goto(`${server.url}#search?${new URLSearchParams({ q, model: model ? '1' : '0' })}`)
    await rendered(page)
  }

  await t.test('search in Chinese and English finds the right note and says why', async (t) => {
    const { page, context, errors } = await open('zh-CN')
    await searchFor(page, question)
    const first = page.locator('.hit').first()
    t.match(await first.locator('.text').textContent(), NOTES.billing)
    t.match(await first.locator('.why').textContent(), /原因: .*billing/, 'why is shown, in Chinese UI text')
    t.equal(await page.locator('#tabs .tab.active').textContent(), '搜索', 'the UI follows the browser language')
    await page.screenshot({ path: join(SHOTS, 'search-zh-laptop.png'), fullPage: true })
    await searchFor(page, 'where is the nginx config')
    t.match(await page.locator('.hit').first().locator('.text').textContent(), NOTES.nginx)
    await searchFor(page, 'staging postgres v16.4')
    const pinned = page.locator('.hit').first()
    t.match(await pinned.locator('.text').textContent(), NOTES.postgres)
    t.ok(await pinned.locator('.badge.exact').count() === 1, 'an exact-symbol hit carries the exact pin')
    t.same(errors, [])
    await context.close()
  })

  await t.test('"as the model sees it" is the pre-step message byte for byte', async (t) => {
    const { page, context } = await open('en-US')
    await searchFor(page, question, true)
    const shown = await page.locator('#model-message').textContent()
    t.equal(shown, preStep[0], 'the page shows exactly what the pre-step injected')
    await page.screenshot({ path: join(SHOTS, 'model-view-en-laptop.png'), fullPage: true })
    await context.close()
  })

  await t.test('a hostile note renders as inert text', async (t) => {
    const { page, context, dialogs, errors } = await open('en-US')
    await searchFor(page, 'HOSTILE bold')
    const text = await page.locator('.hit').first().locator('.text').textContent()
    t.match(text, '<script>window.__pwned = 1</script>', 'markup is shown as text')
    t.match(text, '\\u{1B}[2J', 'terminal escapes are shown as visible escapes')
    t.match(text, '\\u{200B}', 'invisible characters are made visible')
    t.match(text, '\\u{202E}', 'bidi controls are made visible')
    t.equal(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned), undefined, 'no stored script ran')
    t.equal(await page.locator('#results img, #results script').count(), 0, 'no element came from the note')
    t.same(dialogs, [])
    t.same(errors, [])
    await context.close()
  })

  await t.test('mutation checks: text nodes keep markup inert, and the CSP stops what gets through', async (t) => {
    // The page's element helper with strings parsed as HTML instead of made text nodes.
    const asHtml = { file: 'serve/static/app.js', from: "el.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child)", to: "if (typeof child === 'string') el.insertAdjacentHTML('beforeend', child); else el.append(typeof child === 'number' ? String(child) : child)" }
    const noCsp = { file: 'serve/security.ts', from: "  'content-security-policy': CONTENT_SECURITY_POLICY,\n", to: '' }
    for (const [edits, label] of [[[asHtml], 'markup'], [[asHtml, noCsp], 'markup without CSP']] as const) {
      const m = mutant(...edits)
      t.teardown(() => m.remove())
      const bad = await startServe(db, ['--read-only'], {}, join(m.dir, 'lib', 'cli', 'main.ts'))
      t.teardown(async () => { await bad.stop() })
      const { page, context } = await open('en-US')
      await page.goto(`${bad.url}#search?${new URLSearchParams({ q: 'HOSTILE bold' })}`)
      await page.locator('#results .hit').first().waitFor()
      t.ok(await page.locator('#results img').count() > 0, `${label}: the note's markup became elements`)
      if (edits.length === 1) {
        await page.waitForFunction(() => Array.from((globalThis as unknown as { document: { images: ArrayLike<{ complete: boolean }> } }).document.images).every((i) => i.complete))
        t.equal(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned), undefined, 'the CSP still blocked the inline handler')
      } else {
        await page.waitForFunction(() => (globalThis as unknown as { __pwned?: number }).__pwned === 2)
        t.pass('without the CSP the stored onerror handler ran')
      }
      await context.close()
    }
  })

  await t.test('edit saves a new note that supersedes the old one', async (t) => {
    const { page, context } = await open('en-US')
    const before = new BlockStore(db, { readOnly: true })
    const old = before.browse.page({}, 50).notes.find((n) => n.text === NOTES.edit)
    before.close()
    t.ok(old, 'the note to edit exists')
    await page.goto(`${server.url}#note/${old!.id}`)
    await page.locator('#edit').click()
    await page.locator('#edit-text').fill('The release train leaves every Wednesday')
    await page.locator('#edit-save').click()
    await page.locator('#note-id', { hasNotText: old!.id }).waitFor()
    const newId = await page.locator('#note-id').textContent()
    t.match(await page.locator('#note-body').textContent(), 'Wednesday')
    t.match(await page.locator('section.part').first().textContent(), old!.id, 'the new note names the one it replaced')
    const store = new BlockStore(db, { readOnly: true })
    t.equal(store.get(old!.id)!.supersededBy, newId, 'the old note is superseded by the new one, and kept')
    store.close()
    await page.screenshot({ path: join(SHOTS, 'note-edited-en-laptop.png'), fullPage: true })
    await context.close()
  })

  await t.test('forget removes the note and leaves no byte of it in the file', async (t) => {
    const { page, context } = await open('en-US')
    await page.goto(`${server.url}#browse`)
    const row = page.locator('.note-row', { hasText: 'FORGET-ME-7731' })
    await row.locator('input.pick').check()
    await page.locator('#forget-selected').click()
    await page.locator('#confirm[open]').waitFor()
    await page.screenshot({ path: join(SHOTS, 'forget-confirm-en-laptop.png') })
    await page.locator('#confirm-ok').click()
    await page.locator('#forget-done').waitFor()
    t.equal(await page.locator('.note-row', { hasText: 'FORGET-ME-7731' }).count(), 0, 'the list no longer shows it')
    const store = new BlockStore(db, { readOnly: true })
    t.equal(store.browse.page({}, 200).notes.filter((n) => n.text.includes('FORGET-ME-7731')).length, 0, 'the note is gone from the store')
    store.close()
    for (const file of [db, `${db}-wal`]) {
      if (!existsSync(file)) continue
      t.notOk(readFileSync(file).includes('FORGET-ME-7731'), `no byte of the note is left in ${file.endsWith('-wal') ? 'the WAL' : 'the store file'}`)
    }
    await context.close()
  })

  await t.test('requests without the token, from another origin or for a foreign Host are refused', async (t) => {
    const { page, context } = await open('en-US')
    const bare = await page.goto(`${server.origin}/`)
    t.equal(bare!.status(), 401, 'the page without the token is refused')
    await page.goto(server.url)
    await page.locator('#view[data-ready]').waitFor()
    const answers = await page.evaluate(async ({ token }) => {
      const headers = { 'x-stablemem-token': token, 'content-type': 'application/json' }
      const noCsrf = await fetch('/api/forget', { method: 'POST', headers, body: JSON.stringify({ ids: ['blk_000000000000000000000000'] }) })
      const noToken = await fetch('/api/notes')
      return { noCsrf: noCsrf.status, noToken: noToken.status }
    }, { token: server.token })
    t.equal(answers.noCsrf, 403, 'a change without the CSRF token is refused')
    t.equal(answers.noToken, 401, 'an API read without the token is refused')
    const foreign = await context.request.get(server.url, { headers: { host: `evil.example:${server.port}` } })
    t.equal(foreign.status(), 421, 'a foreign Host is refused')
    const crossOrigin = await context.request.post(`${server.origin}/api/forget`, {
      headers: { 'x-stablemem-token': server.token, origin: 'http://evil.example', 'content-type': 'application/json' }, data: { ids: ['x'] },
    })
    t.equal(crossOrigin.status(), 403, 'a change from another Origin is refused')
    await context.close()
  })

  await t.test('--read-only refuses writes', async (t) => {
    const ro: ServeProcess = await startServe(db, ['--read-only'])
    t.teardown(async () => { await ro.stop() })
    const { page, context } = await open('en-US')
    await page.goto(`${ro.url}#browse`)
    await page.locator('.note-row').first().waitFor()
    t.notOk(await page.locator('#banner').isHidden(), 'the page says it is read-only')
    t.ok(await page.locator('#forget-selected').isHidden(), 'no forget button')
    const status = await page.evaluate(async ({ token }) => {
      const session = await (await fetch('/api/session', { headers: { 'x-stablemem-token': token } })).json() as { csrf: string }
      const res = await fetch('/api/forget', { method: 'POST', headers: { 'x-stablemem-token': token, 'x-stablemem-csrf': session.csrf, 'content-type': 'application/json' }, body: JSON.stringify({ ids: ['blk_000000000000000000000000'] }) })
      return res.status
    }, { token: ro.token })
    t.equal(status, 403, 'a well-formed change is refused')
    await context.close()
  })

  await t.test('screenshots: every view at laptop and phone width, English and Chinese', async (t) => {
    for (const [locale, tag] of [['en-US', 'en'], ['zh-CN', 'zh']] as const) {
      for (const [width, height, size] of [[1280, 800, 'laptop'], [390, 844, 'phone']] as const) {
        const { page, context, errors } = await open(locale, width, height)
        for (const view of ['search', 'browse', 'note', 'facts', 'scenes', 'health']) {
          const hash = view === 'search' ? `search?${new URLSearchParams({ q: locale === 'zh-CN' ? question : 'nginx config', model: '1' })}`
            : view === 'note' ? `note/${billing.id}` : view
          await page.goto(`${server.url}#${hash}`)
          await rendered(page)
          await page.screenshot({ path: join(SHOTS, `${view}-${tag}-${size}.png`), fullPage: true })
        }
        t.same(errors, [], `${tag} ${size}: no script errors`)
        await context.close()
      }
    }
    const { page, context } = await open('en-US')
    await page.goto(`${server.url}#scenes`)
    await rendered(page)
    t.match(await page.locator('.notes .card strong').first().textContent(), 'billing', 'the scenes view lists the scene the billing note was saved in')
    await page.goto(`${server.url}#facts`)
    await rendered(page)
    t.match(await page.locator('.subject').first().textContent(), 'port=8499', 'the facts view shows the distilled fact')
    await context.close()
  })
}

if (!existsSync(CHROMIUM)) {
  // CI installs Chromium (.ci/run); a developer machine without it says so instead of passing silently.
  if (process.env.CI !== undefined) t.fail(`${CHROMIUM} is missing (.ci/run installs it)`)
  else t.test('memory browser in Chromium', { skip: `${CHROMIUM} is missing: apt-get install chromium fonts-wqy-zenhei` }, () => {})
} else {
  await run()
}
