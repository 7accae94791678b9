/**
 * The memory browser's guards over real HTTP (node:http on 127.0.0.1, a real store file), each
 * with a mutation check: a copy of lib/ with the guard removed lets the refused request through.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import { resolveConfig } from '../../lib/config.ts'
import { serve } from '../../lib/serve/server.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'
import { call, changeHeaders, start, withMutant } from '../helpers/serve-http.ts'

type Serve = typeof serve

t.test('every request needs the token', async (t) => {
  const { server } = await start(t)
  t.equal((await call(server.port, '/')).status, 401, 'the page without the token')
  t.equal((await call(server.port, '/app.js?t=wrong')).status, 401, 'an asset with a wrong token')
  t.equal((await call(server.port, '/api/notes')).status, 401, 'an API read without the token')
  t.equal((await call(server.port, `/api/notes?t=${server.token}`)).status, 200, 'with the token in the URL')
  t.equal((await call(server.port, '/api/notes', { headers: { 'x-stablemem-token': server.token } })).status, 200, 'with the token in the header')
  const page = await call(server.port, `/?t=${server.token}`)
  t.match(page.body, `/app.js?t=${server.token}`, 'the page\'s own asset URLs carry the token')
  await withMutant(t, [{ file: 'serve/security.ts', from: 'if (!same(token, this.token))', to: 'if (false)' }], {}, async ({ server }) => {
    t.equal((await call(server.port, '/api/notes')).status, 200, 'mutation check: without the guard a read without the token is served')
  })
})

t.test('a foreign Host header is refused (DNS rebinding)', async (t) => {
  const { server } = await start(t)
  const foreign = await call(server.port, `/api/notes?t=${server.token}`, { headers: { host: `rebind.example:${server.port}` } })
  t.equal(foreign.status, 421)
  for (const alias of ['localhost', '[::1]']) {
    t.equal((await call(server.port, `/api/notes?t=${server.token}`, { headers: { host: `${alias}:${server.port}` } })).status, 200, `${alias} names the same loopback server`)
  }
  t.equal((await call(server.port, `/api/notes?t=${server.token}`, { headers: { host: '127.0.0.1:1' } })).status, 421, 'another port is another origin')
  await withMutant(t, [{ file: 'serve/security.ts', from: 'if (!this.hosts.has(host))', to: 'if (false)' }], {}, async ({ server }) => {
    const answer = await call(server.port, `/api/notes?t=${server.token}`, { headers: { host: `rebind.example:${server.port}` } })
    t.equal(answer.status, 200, 'mutation check: without the guard a rebound name is served')
  })
})

t.test('changes need the page\'s Origin and the CSRF token', async (t) => {
  const { server, store, id, csrf } = await start(t)
  const body = JSON.stringify({ ids: [id] })
  const headers = changeHeaders(server, csrf)
  const noOrigin = { ...headers }
  delete (noOrigin as Record<string, string | undefined>).origin
  t.equal((await call(server.port, '/api/forget', { method: 'POST', headers: noOrigin, body })).status, 403, 'no Origin')
  t.equal((await call(server.port, '/api/forget', { method: 'POST', headers: { ...headers, origin: 'http://evil.example' }, body })).status, 403, 'another Origin')
  t.equal((await call(server.port, '/api/forget', { method: 'POST', headers: { ...headers, 'x-stablemem-csrf': 'nope' }, body })).status, 403, 'a wrong CSRF token')
  t.ok(store.get(id), 'nothing was forgotten by the refused requests')
  t.equal((await call(server.port, '/api/forget', { method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body })).status, 415, 'a form-encodable content type is refused')
  const ok = await call(server.port, '/api/forget', { method: 'POST', headers, body })
  t.equal(ok.status, 200, 'the page\'s own change goes through')
  t.equal(store.get(id), undefined, 'and forgets the note')
  await withMutant(t, [{ file: 'serve/security.ts', from: "if (origin === undefined || !this.origins.has(origin.toLowerCase()))", to: 'if (false)' }], {}, async ({ server, store, id, csrf }) => {
    const answer = await call(server.port, '/api/forget', { method: 'POST', headers: { ...changeHeaders(server, csrf), origin: 'http://evil.example' }, body: JSON.stringify({ ids: [id] }) })
    t.equal(answer.status, 200, 'mutation check: without the Origin guard a cross-origin change goes through')
    t.equal(store.get(id), undefined)
  })
  await withMutant(t, [{ file: 'serve/security.ts', from: "if (!same(headerValue(req, CSRF_HEADER) ?? '', this.csrf))", to: 'if (false)' }], {}, async ({ server, id }) => {
    const answer = await call(server.port, '/api/forget', { method: 'POST', headers: { ...changeHeaders(server, 'nope') }, body: JSON.stringify({ ids: [id] }) })
    t.equal(answer.status, 200, 'mutation check: without the CSRF guard a change without the token goes through')
  })
})

t.test('--read-only refuses every write', async (t) => {
  const { server, store, id, csrf } = await start(t, { readOnly: true })
  for (const [path, body] of [['/api/forget', { ids: [id] }], ['/api/edit', { id, text: 'the billing port is 9000' }], ['/api/duplicate', { id, of: id }]] as const) {
    const answer = await call(server.port, path, { method: 'POST', headers: changeHeaders(server, csrf), body: JSON.stringify(body) })
    t.equal(answer.status, 403, `${path} is refused`)
  }
  t.equal(store.count(), 1, 'nothing changed')
  t.equal((JSON.parse((await call(server.port, `/api/session?t=${server.token}`)).body) as { readOnly: boolean }).readOnly, true, 'the page is told')
  await withMutant(t, [{ file: 'serve/server.ts', from: 'if (change && api.readOnly) {', to: 'if (false) {' }], { readOnly: true }, async ({ server, store, id, csrf }) => {
    const answer = await call(server.port, '/api/forget', { method: 'POST', headers: changeHeaders(server, csrf), body: JSON.stringify({ ids: [id] }) })
    t.equal(answer.status, 200, 'mutation check: without the guard a read-only server forgets')
    t.equal(store.get(id), undefined)
  })
})

t.test('only loopback addresses unless asked for explicitly', async (t) => {
  const store = new BlockStore(':memory:')
  t.teardown(() => store.close())
  // 192.0.2.1 is a documentation address no machine has: nothing is ever bound or reached.
  await t.rejects(serve({ store, config: resolveConfig(), host: '192.0.2.1' }), /only loopback addresses/)
  await t.rejects(serve({ store, config: resolveConfig(), host: '192.0.2.1', allowRemote: true }), /EADDRNOTAVAIL|address not available/i, 'with allowRemote it tries to bind (and this machine has no such address)')
  const m = mutant({ file: 'serve/server.ts', from: 'if (!isLoopback(host) && options.allowRemote !== true) {', to: 'if (false) {' })
  t.teardown(() => m.remove())
  const mutated = (await m.load<{ serve: Serve }>('serve/server.ts')).serve
  await t.rejects(mutated({ store, config: resolveConfig(), host: '192.0.2.1' }), /EADDRNOTAVAIL|address not available/i, 'mutation check: without the guard it tries to bind the address')
})

t.test('a strict Content-Security-Policy on every response; no inline code in the page', async (t) => {
  const { server } = await start(t)
  for (const path of [`/?t=${server.token}`, `/app.js?t=${server.token}`, `/api/notes?t=${server.token}`, '/api/notes']) {
    const answer = await call(server.port, path)
    t.match(answer.headers['content-security-policy'], /script-src 'self'; style-src 'self'/, `${path.replace(server.token, '…')}: CSP`)
    t.notMatch(answer.headers['content-security-policy'], /unsafe/, 'no unsafe-inline or unsafe-eval')
    t.equal(answer.headers['x-content-type-options'], 'nosniff')
    t.equal(answer.headers['referrer-policy'], 'no-referrer', 'the token in the URL never leaves as a referrer')
  }
  const html = readFileSync(new URL('../../lib/serve/static/index.html', import.meta.url), 'utf8')
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'every script is a file')
  t.notMatch(html, /\bstyle=|<style/, 'no inline style')
  const app = readFileSync(new URL('../../lib/serve/static/app.js', import.meta.url), 'utf8')
  t.notMatch(app, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/, 'the page never turns text into markup or code')
  await withMutant(t, [{ file: 'serve/security.ts', from: "  'content-security-policy': CONTENT_SECURITY_POLICY,\n", to: '' }], {}, async ({ server }) => {
    t.equal((await call(server.port, `/?t=${server.token}`)).headers['content-security-policy'], undefined, 'mutation check: the header comes from the guard table')
  })
})

t.test('requests are bounded and malformed ones get a clear error', async (t) => {
  const { server, csrf } = await start(t)
  const headers = changeHeaders(server, csrf)
  const bad = await call(server.port, '/api/forget', { method: 'POST', headers, body: '{not json' })
  t.equal(bad.status, 400)
  t.match(JSON.parse(bad.body), { error: /not JSON/ })
  const big = await call(server.port, '/api/edit', { method: 'POST', headers, body: JSON.stringify({ id: 'x', text: 'x'.repeat(2 << 20) }) }).catch(() => ({ status: 413 }))
  t.ok(big.status === 400 || big.status === 413, 'a body over 1 MiB is refused')
  t.equal((await call(server.port, `/api/nope?t=${server.token}`)).status, 404)
  t.equal((await call(server.port, `/api/notes?t=${server.token}&limit=0`)).status, 400, 'a bad page size')
  t.equal((await call(server.port, `/api/note?t=${server.token}&id=blk_000000000000000000000000`)).status, 404)
})
