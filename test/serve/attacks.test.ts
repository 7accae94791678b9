/**
 * The memory browser attacked from outside (issue 31): forged Origins on reads, errors that would
 * echo markup, path traversal, bodies that are huge, not UTF-8 or deeply nested, malformed request
 * lines, and connections held open. Real HTTP on 127.0.0.1 against a real store file; each guard
 * with a mutation check (a copy of lib/ without it lets the attack through).
 */
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { call, changeHeaders, start, withMutant } from '../helpers/serve-http.ts'

/** Sends raw bytes on a fresh connection; resolves with everything the server wrote until it closed. */
function raw(port: number, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let out = ''
    socket.on('data', (c: Buffer) => { out += c.toString('utf8') })
    socket.on('close', () => resolve(out))
    socket.on('error', reject)
    socket.end(bytes)
  })
}

/** Opens a change whose body never completes; `answer` resolves with what the server wrote when it gave up (the connection closed). */
function heldOpen(port: number, headers: Record<string, string>): { socket: Socket, answer: Promise<string> } {
  const socket = connect(port, '127.0.0.1')
  const lines = [`POST /api/edit HTTP/1.1`, `host: 127.0.0.1:${port}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), 'content-length: 100', '', '{"id":']
  socket.write(lines.join('\r\n'))
  let out = ''
  socket.on('data', (c: Buffer) => { out += c.toString('utf8') })
  socket.on('error', () => undefined)
  return { socket, answer: new Promise((resolve) => socket.on('close', () => resolve(out))) }
}

t.test('a read that names another site as its Origin is refused, the session route included', async (t) => {
  const { server } = await start(t)
  for (const path of ['/api/session', '/api/notes', '/']) {
    const answer = await call(server.port, `${path}?t=${server.token}`, { headers: { origin: 'http://evil.example' } })
    t.equal(answer.status, 403, `${path}: forged Origin`)
    t.notMatch(answer.body, /csrf/, 'the CSRF token is not handed out')
  }
  t.equal((await call(server.port, `/api/session?t=${server.token}`, { headers: { origin: server.origin } })).status, 200, 'the page\'s own Origin reads')
  t.equal((await call(server.port, `/api/session?t=${server.token}`)).status, 200, 'and so does a read without one (a browser sends none on its own GETs)')
  await withMutant(t, [{ file: 'serve/security.ts', from: "return origin === undefined || this.origins.has(origin.toLowerCase()) ? undefined : { status: 403, reason: 'cross-origin request refused' }", to: 'return undefined' }], {}, async ({ server }) => {
    const answer = await call(server.port, `/api/session?t=${server.token}`, { headers: { origin: 'http://evil.example' } })
    t.equal(answer.status, 200, 'mutation check: without the guard a forged Origin gets the CSRF token')
  })
})

t.test('error answers never carry markup, whatever the input', async (t) => {
  const { server } = await start(t)
  const id = '<script>alert(1)</script>&<img src=x onerror=alert(2)>'
  const answer = await call(server.port, `/api/note?t=${server.token}&id=${encodeURIComponent(id)}`)
  t.equal(answer.status, 404)
  t.match(answer.headers['content-type'], /^application\/json/)
  t.notMatch(answer.body, /[<>&]/, 'no raw <, > or & in the body')
  t.equal((JSON.parse(answer.body) as { error: string }).error, `no note ${id}`, 'the same message once parsed')
  await withMutant(t, [{ file: 'serve/server.ts', from: '.replace(MARKUP, ', to: '.replace(/(?!)/g, ' }], {}, async ({ server }) => {
    const echoed = await call(server.port, `/api/note?t=${server.token}&id=${encodeURIComponent(id)}`)
    t.match(echoed.body, '<script>', 'mutation check: without the escape the error echoes the markup')
  })
})

t.test('static routes serve their fixed list and nothing else', async (t) => {
  const { server } = await start(t)
  for (const path of ['/../../../../etc/passwd', '/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2fpackage.json', '//etc/passwd', '/static/app.js', '/APP.JS', '/app.js%00.html', '/.%2e/lib/config.ts']) {
    const answer = await call(server.port, `${path}?t=${server.token}`)
    t.ok(answer.status === 404 || answer.status === 400, `${path}: ${answer.status}`)
    t.notMatch(answer.body, /root:|"name": "dsh-stablemem"|export function/, 'no file content')
  }
  const asRaw = await raw(server.port, `GET /../../etc/passwd?t=${server.token} HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\nconnection: close\r\n\r\n`)
  t.match(asRaw, /^HTTP\/1\.1 404/, 'an unnormalised path on the wire: not found')
})

t.test('a request line the URL parser refuses gets 400, not a crash', async (t) => {
  const { server } = await start(t)
  const answer = await raw(server.port, `GET //[bad HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\nx-stablemem-token: ${server.token}\r\nconnection: close\r\n\r\n`)
  t.match(answer, /^HTTP\/1\.1 400/)
  t.match(answer, /malformed request URL/)
  t.equal((await call(server.port, `/api/notes?t=${server.token}`)).status, 200, 'the server still answers')
  await withMutant(t, [{ file: 'serve/server.ts', from: "return send(res, 400, { error: 'malformed request URL' })", to: 'throw new Error(\'boom\')' }], {}, async ({ server }) => {
    const mutated = await raw(server.port, `GET //[bad HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\nconnection: close\r\n\r\n`)
    t.match(mutated, /^HTTP\/1\.1 500/, 'mutation check: without the guard it is an internal error')
  })
})

t.test('a body over 1 MiB is refused with 413 and changes nothing, declared or streamed', async (t) => {
  const { server, store, id, csrf } = await start(t)
  const headers = changeHeaders(server, csrf)
  const huge = JSON.stringify({ id, text: `the billing port is ${'9'.repeat(2 << 20)}` })
  const declared = await call(server.port, '/api/edit', { method: 'POST', headers, body: huge })
  t.equal(declared.status, 413, 'with a content-length')
  t.match(JSON.parse(declared.body), { error: /larger than 1 MiB/ })
  const streamed = await call(server.port, '/api/edit', { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' }, body: huge }).catch((error: unknown) => ({ status: -1, body: String(error) }))
  t.ok(streamed.status === 413 || streamed.status === -1, `chunked, no length: refused (${streamed.status})`)
  t.equal(store.count(), 1, 'no new note')
  t.equal(store.get(id)?.supersededBy, null, 'the note is not superseded')
  t.equal((await call(server.port, `/api/notes?t=${server.token}`)).status, 200, 'the server still answers')
  await withMutant(t, [{ file: 'serve/server.ts', from: 'const MAX_BODY = 1 << 20', to: 'const MAX_BODY = 1 << 30' }], {}, async ({ server, store, id, csrf }) => {
    const body = JSON.stringify({ id, text: 'the billing port is 9000', padding: 'x'.repeat(2 << 20) })
    t.equal((await call(server.port, '/api/edit', { method: 'POST', headers: changeHeaders(server, csrf), body })).status, 200, 'mutation check: without the bound a 2 MiB edit is stored')
    t.equal(store.count(), 2)
  })
})

t.test('a body that is not UTF-8 is refused, not stored with replacement characters', async (t) => {
  const { server, store, id, csrf } = await start(t)
  const bytes = Buffer.concat([Buffer.from(`{"id":"${id}","text":"the billing port is `), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' 9000"}')])
  const answer = await call(server.port, '/api/edit', { method: 'POST', headers: changeHeaders(server, csrf), body: bytes })
  t.equal(answer.status, 400)
  t.match(JSON.parse(answer.body), { error: /not UTF-8/ })
  t.equal(store.count(), 1, 'nothing stored')
  const fine = await call(server.port, '/api/edit', { method: 'POST', headers: changeHeaders(server, csrf), body: Buffer.from(JSON.stringify({ id, text: '账单服务端口改为 9000' })) })
  t.equal(fine.status, 200, 'real UTF-8 (Chinese) goes through')
  await withMutant(t, [{ file: 'serve/server.ts', from: "new TextDecoder('utf-8', { fatal: true })", to: "new TextDecoder('utf-8')" }], {}, async ({ server, store, id, csrf }) => {
    const body = Buffer.concat([Buffer.from(`{"id":"${id}","text":"the billing port is `), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' 9000"}')])
    t.equal((await call(server.port, '/api/edit', { method: 'POST', headers: changeHeaders(server, csrf), body })).status, 200, 'mutation check: without strict decoding the edit is stored')
    t.match(store.browse.page({}, 10).notes.map((n) => n.text).join('\n'), '\uFFFD', 'with replacement characters')
  })
})

t.test('a deeply nested body gets a clear 400 and the server keeps answering', async (t) => {
  const { server, store, id, csrf } = await start(t)
  const depth = 200_000
  const nested = `{"id":"${id}","text":${'['.repeat(depth)}${']'.repeat(depth)}}`
  const answer = await call(server.port, '/api/edit', { method: 'POST', headers: changeHeaders(server, csrf), body: nested })
  t.equal(answer.status, 400)
  t.match(JSON.parse(answer.body), { error: /text must be a non-empty string/ })
  const ids = `{"ids":[${'['.repeat(depth)}${']'.repeat(depth)}]}`
  const forget = await call(server.port, '/api/forget', { method: 'POST', headers: changeHeaders(server, csrf), body: ids })
  t.equal(forget.status, 400)
  t.match(JSON.parse(forget.body), { error: /ids\[0\] must be a non-empty string/ })
  t.equal(store.count(), 1, 'nothing changed')
  t.equal((await call(server.port, `/api/notes?t=${server.token}`)).status, 200, 'the server still answers')
  await withMutant(t, [{ file: 'serve/api.ts', from: "if (typeof value !== 'string' || value === '')", to: "if (value === '')" }], {}, async ({ server, csrf, id }) => {
    const mutated = await call(server.port, '/api/edit', { method: 'POST', headers: changeHeaders(server, csrf), body: `{"id":"${id}","text":[[["x"]]]}` })
    t.not(mutated.status, 400, `mutation check: without the type check a nested value reaches the store (${mutated.status})`)
  })
})

t.test('a connection held open mid-body stalls nobody, and is closed with 408', async (t) => {
  const { server, csrf } = await start(t, { requestTimeoutMs: 1000 })
  const slow = heldOpen(server.port, changeHeaders(server, csrf))
  let slowDone = false
  void slow.answer.then(() => { slowDone = true })
  // Give the slow request time to reach the server before the reads.
  await new Promise((resolve) => setTimeout(resolve, 100))
  for (let i = 0; i < 3; i++) {
    t.equal((await call(server.port, `/api/notes?t=${server.token}`)).status, 200, `read ${i + 1} is answered`)
    t.notOk(slowDone, 'while the slow request is still open')
  }
  t.match(await slow.answer, /^HTTP\/1\.1 408/, 'the slow request gets 408 when its time is up')
  await withMutant(t, [{ file: 'serve/server.ts', from: 'const text = await readBody(req)', to: 'const text = await turn(() => readBody(req))' }], { requestTimeoutMs: 1000 }, async ({ server, csrf }) => {
    const held = heldOpen(server.port, changeHeaders(server, csrf))
    await new Promise((resolve) => setTimeout(resolve, 100))
    // The timeout is 1 s and Node checks it every second: half a second is well before the slow client is closed.
    const outcome = await Promise.race([call(server.port, `/api/notes?t=${server.token}`).then(() => 'answered'), new Promise((resolve) => setTimeout(resolve, 500, 'waiting'))])
    t.equal(outcome, 'waiting', 'mutation check: with bodies read in the store\'s turn, the read waits behind the slow client')
    await held.answer
  })
  await withMutant(t, [{ file: 'serve/server.ts', from: 'requestTimeout: timeout, headersTimeout: timeout,', to: 'requestTimeout: 0, headersTimeout: 0,' }], { requestTimeoutMs: 1000 }, async ({ server, csrf }) => {
    const held = heldOpen(server.port, changeHeaders(server, csrf))
    const outcome = await Promise.race([held.answer.then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 4000, 'still open'))])
    t.equal(outcome, 'still open', 'mutation check: without the timeout the connection is still open at 4× the limit')
    held.socket.destroy()
  })
})
