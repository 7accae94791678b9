/**
 * `stablemem serve` as a real process: prints its URL with the token, serves the page, stops
 * cleanly on Ctrl-C; usage errors, a missing store, a non-loopback `--host` (warned about), and a
 * read-only run that leaves the store files byte-identical whatever route is asked.
 */
import { request } from 'node:http'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { BlockStore } from '../../lib/store/store.ts'
import { runCli } from '../helpers/cli.ts'
import { mutant } from '../helpers/mutant.ts'
import { startServe, type ServeProcess } from '../helpers/serve.ts'
import { tempDir } from '../helpers/temp.ts'

function get(url: string, token?: string): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: token === undefined ? {} : { 'x-stablemem-token': token } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('error', reject)
    req.end()
  })
}

function storeWithNote(): string {
  const db = join(tempDir('stablemem-serve-cli'), 'memory.db')
  const store = new BlockStore(db)
  store.commit({ text: 'billing 服务端口 8499' })
  store.close()
  return db
}

t.test('serves on 127.0.0.1 with a token and stops on Ctrl-C', async (t) => {
  const db = storeWithNote()
  const server = await startServe(db)
  t.match(server.origin, /^http:\/\/127\.0\.0\.1:\d+$/, 'loopback by default')
  t.match(server.token, /^[\w-]{43}$/, '256 random bits')
  t.equal((await get(server.url)).status, 200, 'the printed URL opens the page')
  t.equal((await get(`${server.origin}/`)).status, 401, 'the bare origin does not')
  const notes = JSON.parse((await get(`${server.origin}/api/notes`, server.token)).body) as { notes: Array<{ text: string }> }
  t.equal(notes.notes[0]!.text, 'billing 服务端口 8499')
  t.equal(await server.stop(), 0, 'Ctrl-C ends it with 0')
  t.match(server.output(), 'stablemem serve: stopped')
  const again = await startServe(db)
  t.not(again.token, server.token, 'a new token every run')
  await again.stop()
})

t.test('--read-only leaves the store file byte-identical', async (t) => {
  const db = storeWithNote()
  const before = readFileSync(db)
  const server = await startServe(db, ['--read-only'])
  t.match(server.output(), '(read-only)')
  t.equal((await get(`${server.origin}/api/search?q=billing`, server.token)).status, 200)
  t.equal((await get(`${server.origin}/api/health`, server.token)).status, 200)
  t.equal(await server.stop(), 0)
  t.ok(readFileSync(db).equals(before), 'not one byte changed')
})

/** Every route of the browser, reads and changes, as the page sends them; resolves with each route's status. */
async function everyRoute(server: ServeProcess, db: string): Promise<Record<string, number>> {
  const store = new BlockStore(db, { readOnly: true })
  const id = store.browse.page({}, 1).notes[0]!.id
  store.close()
  const statuses: Record<string, number> = {}
  for (const path of ['/', '/app.js', '/i18n.js', '/app.css', '/api/session', '/api/search?q=billing%20端口&scope=all&k=20', '/api/search?q=账单服务的端口是多少？',
    '/api/notes?state=all&limit=200', '/api/filters', `/api/note?id=${id}`, '/api/health', '/api/facts', '/api/scenes']) {
    statuses[`GET ${path}`] = (await get(`${server.origin}${path}`, server.token)).status
  }
  const csrf = (JSON.parse((await get(`${server.origin}/api/session`, server.token)).body) as { csrf: string }).csrf
  const headers = { 'x-stablemem-token': server.token, 'x-stablemem-csrf': csrf, origin: server.origin, 'content-type': 'application/json' }
  for (const [path, body] of [['/api/edit', { id, text: 'billing 服务端口 9000' }], ['/api/duplicate', { id, of: id }], ['/api/forget', { ids: [id] }]] as const) {
    statuses[`POST ${path}`] = (await post(`${server.origin}${path}`, headers, JSON.stringify(body))).status
  }
  return statuses
}

function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers }, (res) => {
      res.resume()
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** The store file and its WAL and shared-memory files, as bytes (absent ones as empty). */
function filesOf(db: string): Buffer[] {
  return ['', '-wal', '-shm'].map((suffix) => existsSync(db + suffix) ? readFileSync(db + suffix) : Buffer.alloc(0))
}

t.test('--read-only: every route, changes included, leaves the store files byte-identical', async (t) => {
  const db = storeWithNote()
  const before = filesOf(db)
  const server = await startServe(db, ['--read-only'])
  const statuses = await everyRoute(server, db)
  t.equal(await server.stop(), 0)
  for (const [route, status] of Object.entries(statuses)) t.equal(status, route.startsWith('POST') ? 403 : 200, route)
  t.ok(filesOf(db).every((bytes, i) => bytes.equals(before[i]!)), 'not one byte of the file, its WAL or its shared memory changed')
  // Two layers hold it: the server refuses changes, and the store is opened read-only. Without both, the changes land.
  const m = mutant(
    { file: 'serve/server.ts', from: 'if (change && api.readOnly) {', to: 'if (false) {' },
    { file: 'cli/open-store.ts', from: 'readOnly: options.write !== true', to: 'readOnly: false' },
  )
  t.teardown(() => m.remove())
  const open = await startServe(db, ['--read-only'], {}, join(m.dir, 'lib', 'cli', 'main.ts'))
  const changed = await everyRoute(open, db)
  await open.stop()
  t.equal(changed['POST /api/edit'], 200, 'mutation check: without both layers the edit goes through')
  t.notOk(filesOf(db).every((bytes, i) => bytes.equals(before[i]!)), 'and the store changed')
})

t.test('usage errors, a missing store, a non-loopback host', async (t) => {
  const db = storeWithNote()
  t.match(await runCli(['serve', '--db', db, '--port', 'abc']), { code: 2, stderr: /--port must be a whole number/ })
  t.match(await runCli(['serve', '--db', db, 'extra']), { code: 2 })
  t.match(await runCli(['serve', '--db', join(tempDir('stablemem-serve-cli'), 'none.db')]), { code: 1, stderr: /no store at/ })
  // A documentation address no machine has: the warning is printed, then binding fails plainly.
  const remote = await runCli(['serve', '--db', db, '--host', '192.0.2.1'])
  t.equal(remote.code, 1)
  t.match(remote.stderr, /warning: serving on 192\.0\.2\.1, which is not a loopback address/)
  t.match(remote.stderr, /EADDRNOTAVAIL|address not available/i)
  const help = await runCli(['serve', '--help'])
  t.match(help, { code: 0, stdout: /Usage: stablemem serve/ })
  t.match((await runCli(['--help'])).stdout, /serve +the memory browser/)
})
