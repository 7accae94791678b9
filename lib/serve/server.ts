/**
 * The HTTP server of `stablemem serve`: Node's `http`, bound to loopback unless told otherwise,
 * every request through the guard (`security.ts`) before any route runs, static files from a
 * fixed list (`assets.ts`), JSON routes (`api.ts`). A request's headers and body are read as they
 * come, each on its own connection, bounded in size and time; only the routes' turns on the
 * synchronous store run one at a time, so a page of notes and a forget never interleave, and a
 * client that holds its connection open or sends its body slowly stalls nobody else.
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
  /** Milliseconds a client has to send a whole request, headers and body (default 10 s); then 408. */
  requestTimeoutMs?: number
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

/** Largest accepted request body (413 above it). */
const MAX_BODY = 1 << 20
/** Default time a client has to send a whole request. */
const REQUEST_TIMEOUT_MS = 10_000

/** A refusal decided while reading the request (status and one-line reason). */
class Refused extends Error {
  readonly status: number
  constructor(status: number, reason: string) {
    super(reason)
    this.status = status
  }
}

/** Starts the server; resolves once it listens. */
export async function serve(options: ServeOptions): Promise<RunningServer> {
  const host = options.host ?? '127.0.0.1'
  if (!isLoopback(host) && options.allowRemote !== true) {
    throw new StableMemError('invalid_input', `refusing to serve on ${host}: only loopback addresses are allowed without an explicit --host`)
  }
  const assets = loadAssets()
  const timeout = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS
  // Node answers 408 and closes a connection whose request is not complete in time; the check
  // runs every `connectionsCheckingInterval`, so a held-open connection costs at most that long.
  const server = createServer({ requestTimeout: timeout, headersTimeout: timeout, connectionsCheckingInterval: Math.min(1000, timeout) })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => { server.off('error', reject); resolve() })
  })
  const { port } = server.address() as AddressInfo
  const guard = new Guard(host, port)
  const api: ApiContext = { store: options.store, readOnly: options.readOnly === true, config: options.config, csrf: guard.csrf }
  // The store's turns, one at a time (a route may await an embedder).
  let queue: Promise<unknown> = Promise.resolve()
  const turn = <T>(work: () => T | Promise<T>): Promise<T> => {
    const result = queue.then(work)
    queue = result.catch(() => undefined)
    return result
  }
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy()
      if (error instanceof Refused) {
        // The rest of an over-long or malformed body is not read: close the connection after the answer.
        res.shouldKeepAlive = false
        return send(res, error.status, { error: error.message })
      }
      send(res, 500, { error: 'internal error' })
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL
    try {
      url = new URL(req.url ?? '/', 'http://x')
    } catch {
      req.resume()
      return send(res, 400, { error: 'malformed request URL' })
    }
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
      if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
        req.resume()
        return send(res, 415, { error: 'changes are JSON (application/json)' })
      }
      const text = await readBody(req)
      try {
        body = JSON.parse(text)
      } catch {
        return send(res, 400, { error: 'the request body is not JSON' })
      }
    }
    try {
      send(res, 200, await turn(() => route(api, { query: url.searchParams, body })))
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

/** `<`, `>` and `&` in a JSON answer: written as escapes, so no error that quotes its input reads as markup anywhere. */
const MARKUP = /[<>&]/g

function send(res: ServerResponse, status: number, value: unknown): void {
  // Escaped like every JSON output of this package (the same value, safe to print on a terminal), and markup-free.
  const body = Buffer.from(jsonForDisplay(value).replace(MARKUP, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': body.length })
  res.end(body)
}

/** The request body as strict UTF-8, at most `MAX_BODY` bytes; `Refused` (413, 400) otherwise. */
function readBody(req: IncomingMessage): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > MAX_BODY) return Promise.reject(new Refused(413, 'the request body is larger than 1 MiB'))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY) {
        req.removeAllListeners('data')
        req.pause()
        reject(new Refused(413, 'the request body is larger than 1 MiB'))
        return
      }
      chunks.push(chunk)
    })
    req.on('end', () => {
      try {
        resolve(STRICT_UTF8.decode(Buffer.concat(chunks)))
      } catch {
        reject(new Refused(400, 'the request body is not UTF-8'))
      }
    })
    req.on('error', reject)
    // A connection closed before the end (a client gone, or Node's request timeout): settled, never left hanging.
    req.on('close', () => reject(new Refused(408, 'the request body did not arrive in time')))
  })
}

/** Refuses malformed UTF-8 instead of turning it into U+FFFD: a note is never stored with bytes the client did not mean. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true })

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })
}
