/**
 * In-process memory-browser servers for the HTTP tests: raw requests with full control of Host,
 * Origin and body, a store file with one note and a server on it (from `lib/` or from a mutant's
 * copy), and the headers of a well-formed change from the page.
 */
import { request } from 'node:http'
import { join } from 'node:path'
import type { Test } from 'tap'
import { resolveConfig } from '../../lib/config.ts'
import { serve, type RunningServer, type ServeOptions } from '../../lib/serve/server.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant, type Edit } from './mutant.ts'
import { tempDir } from './temp.ts'

type Serve = typeof serve
type Store = typeof BlockStore

/** One HTTP answer. */
export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One raw HTTP request, with full control of Host and Origin; a Buffer body is sent as bytes. */
export function call(port: number, path: string, options: { method?: string, headers?: Record<string, string>, body?: string | Buffer } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: { host: `127.0.0.1:${port}`, ...options.headers } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

/** A server on a store file holding one note, its id, and the page's CSRF token. */
export interface Started {
  server: RunningServer
  store: BlockStore
  id: string
  csrf: string
}

/** A store with one note, and a server on it (from `lib/`, or from a mutant's copy); closed at the test's end. */
export async function start(t: Test, options: Partial<ServeOptions> = {}, from: { serve: Serve, BlockStore: Store } = { serve, BlockStore }): Promise<Started> {
  const store = new from.BlockStore(join(tempDir('stablemem-serve'), 'memory.db'))
  const { id } = store.commit({ text: 'the billing port is 8499' })
  const server = await from.serve({ store, config: resolveConfig(), ...options })
  t.teardown(async () => { await server.close(); store.close() })
  const session = await call(server.port, `/api/session?t=${server.token}`)
  const csrf = session.status === 200 ? (JSON.parse(session.body) as { csrf: string }).csrf : ''
  return { server, store, id, csrf }
}

/** The headers of a well-formed change from the page. */
export function changeHeaders(server: RunningServer, csrf: string): Record<string, string> {
  return { 'x-stablemem-token': server.token, 'x-stablemem-csrf': csrf, origin: server.origin, 'content-type': 'application/json' }
}

/** Runs `check` against a server built from a copy of lib/ with `edits` applied. */
export async function withMutant(t: Test, edits: Edit[], options: Partial<ServeOptions>, check: (s: Started) => Promise<void>): Promise<void> {
  const m = mutant(...edits)
  t.teardown(() => m.remove())
  const from = { serve: (await m.load<{ serve: Serve }>('serve/server.ts')).serve, BlockStore: (await m.load<{ BlockStore: Store }>('store/store.ts')).BlockStore }
  await check(await start(t, options, from))
}
