/**
 * The HTTP server of `stablemem serve`: Node's `http`, bound to loopback unless told otherwise,
 * every request through the guard (`security.ts`) before any route runs, static files from a
 * fixed list (`assets.ts`), JSON routes (`api.ts`). Requests are handled one at a time against
 * the synchronous store, so a page of notes and a forget never interleave.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Config } from '../config.ts'
import { StableMemError } from '../errors.ts'
import type { BlockStore } from '../store/store.ts'
import { jsonForDisplay } from '../text/terminal.ts'
import { CHANGES, READS, type ApiContext } from './api.ts'
import { loadAssets } from './assets.ts'
import { Guard, isLoopback, SECURITY_HEADERS } from './security.ts'

/** Options of one server. */
export interface ServeOptions {
  store: BlockStore
  config: Config
  /** Address to bind (default 127.0.0.1). Anything not loopback must be asked for with `allowRemote`. */
  host?: string
  /** Port (default 0: any free port). */
  port?: number
  /** Refuse every change. */
  readOnly?: boolean
  /** Bind a non-loopback `host` (the CLI's explicit `--host`). */
  allowRemote?: boolean
}

/** A running server. */
export interface RunningServer {
  /** The page's URL with the token. */
  url: string
  /** Origin (`http://host:port`), without the token. */
  origin: string
  token: string
  port: number
  close(): Promise<void>
}

/** Largest accepted request body. */
const MAX_BODY = 1 << 20

/** Starts the server; resolves once it listens. */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1'
  if (!isLoopback(host) && options.allowRemote !== true) {
    throw new StableMemError('invalid_input', `refusing to serve on ${host}: only loopback addresses are allowed without an explicit --host`)
  }
  const assets = loadAssets()
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => { server.off('error', reject); resolve() })
  })
  const { port } = server.address() as AddressInfo
  const guard = new Guard(host, port)
  const api: ApiContext = { store: options.store, readOnly: options.readOnly === true, config: options.config, csrf: guard.csrf }
  let queue = Promise.resolve()
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    queue = queue.then(() => handle(req, res)).catch(() => { if (!res.headersSent) send(res, 500, { error: 'internal error' }) })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x')
    const change = req.method !== 'GET' && req.method !== 'HEAD'
    const refusal = guard.check(req, url, change)
    if (refusal !== undefined) {
      req.resume()
      return send(res, refusal.status, { error: refusal.reason })
    }
    const asset = assets.get(url.pathname)
    if (asset !== undefined && !change) {
      // The page's own asset URLs carry the token, so the browser's requests for them pass the guard.
      const body = url.pathname === '/' ? Buffer.from(asset.body.toString('utf8').replaceAll('%TOKEN%', guard.token)) : asset.body
      res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': asset.type, 'content-length': body.length })
      res.end(req.method === 'HEAD' ? undefined : body)
      return
    }
    const route = change ? CHANGES[url.pathname] : READS[url.pathname]
    if (route === undefined || (change && req.method !== 'POST')) {
      req.resume()
      return send(res, 404, { error: 'not found' })
    }
    if (change && api.readOnly) {
      req.resume()
      return send(res, 403, { error: 'this server is read-only (--read-only): nothing can be changed' })
    }
    let body: unknown
    if (change) {
      if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return send(res, 415, { error: 'changes are JSON (application/json)' })
      try {
        body = JSON.parse(await readBody(req))
      } catch (error) {
        return send(res, 400, { error: error instanceof StableMemError ? error.message : 'the request body is not JSON' })
      }
    }
    try {
      send(res, 200, await route(api, { query: url.searchParams, body }))
    } catch (error) {
      if (error instanceof StableMemError) return send(res, error.code === 'not_found' ? 404 : 400, { error: error.message, code: error.code })
      send(res, 500, { error: error instanceof Error ? error.message : String(error) })
    }
  }

  const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  return {
    url: `${origin}/?t=${guard.token}`, origin, token: guard.token, port,
    close: () => closeServer(server),
  }
}

function send(res: ServerResponse, status: number, value: unknown): void {
  // Escaped like every JSON output of this package: the same value, safe to print on a terminal (curl).
  const body = Buffer.from(jsonForDisplay(value))
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': body.length })
  res.end(body)
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY) {
        reject(new StableMemError('invalid_input', 'the request body is larger than 1 MiB'))
        req.destroy()
        return
      }
      chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
}
