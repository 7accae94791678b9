/**
 * The memory browser's guards (docs/browser.md, "Security"). The page shows and changes what the
 * agent remembers, so every request must prove it comes from the page this run printed: a random
 * per-run token on every request, the `Host` header naming this server (a DNS-rebinding page on
 * another name is refused), and for every change a second token the page only learns through an
 * authenticated read plus the page's own `Origin` (a cross-site form or fetch is refused; a read
 * that names another site as its Origin is refused too). The
 * response headers forbid inline script and style, framing and referrers.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'

/** The header a page sends the run token in (the page URL carries it as `?t=`). */
export const TOKEN_HEADER = 'x-stablemem-token'
/** The header a page sends the CSRF token in, on every state-changing request. */
export const CSRF_HEADER = 'x-stablemem-csrf'

/**
 * The Content-Security-Policy of every response: scripts and styles only from this server's own
 * files (no inline code, no eval), requests only back to it, no plugins, frames, forms or base URL.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self'", "connect-src 'self'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'",
].join('; ')

/** Headers every response carries. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // The token is in the page URL: never send it on to another site.
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
}

/** True for an address or name that stays on this machine: 127.0.0.0/8, ::1, `localhost`. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  if (bare === 'localhost') return true
  if (isIP(bare) === 4) return bare.startsWith('127.')
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1'
  return false
}

/** Why a request was refused: the HTTP status and a one-line reason. */
export interface Refusal {
  status: number
  reason: string
}

/** The checks of one running server. */
export class Guard {
  /** The per-run token (URL-safe base64, 256 bits). */
  readonly token: string
  /** The CSRF token, handed to the page by an authenticated read. */
  readonly csrf: string
  private readonly hosts: ReadonlySet<string>
  private readonly origins: ReadonlySet<string>

  /** `host` is the bound address, `port` the bound port. */
  constructor(host: string, port: number) {
    this.token = randomBytes(32).toString('base64url')
    this.csrf = randomBytes(32).toString('base64url')
    const name = isIP(host) === 6 ? `[${host}]` : host
    const names = new Set([`${name}:${port}`])
    // A loopback server is reached by any of its loopback names; a chosen --host only by that one.
    if (isLoopback(host)) for (const alias of ['127.0.0.1', 'localhost', '[::1]']) names.add(`${alias}:${port}`)
    this.hosts = names
    this.origins = new Set([...names].map((n) => `http://${n}`))
  }

  /** The refusal for this request, or undefined when it may go on. `change` marks a state-changing request. */
  check(req: IncomingMessage, url: URL, change: boolean): Refusal | undefined {
    const host = (req.headers.host ?? '').toLowerCase()
    if (!this.hosts.has(host)) return { status: 421, reason: 'this server does not answer for that Host' }
    const token = headerValue(req, TOKEN_HEADER) ?? url.searchParams.get('t') ?? ''
    if (!same(token, this.token)) return { status: 401, reason: 'missing or wrong token: open the URL stablemem serve printed' }
    const origin = headerValue(req, 'origin')
    // A read needs no Origin (a browser sends none on its own page's GETs), but one from another site is refused.
    if (!change) return origin === undefined || this.origins.has(origin.toLowerCase()) ? undefined : { status: 403, reason: 'cross-origin request refused' }
    if (origin === undefined || !this.origins.has(origin.toLowerCase())) return { status: 403, reason: 'cross-origin request refused' }
    if (!same(headerValue(req, CSRF_HEADER) ?? '', this.csrf)) return { status: 403, reason: 'missing or wrong CSRF token' }
    return undefined
  }
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** Constant-time comparison of two tokens. */
function same(given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}
