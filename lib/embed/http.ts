import { request, type Dispatcher } from 'undici'
import { CircuitBreaker } from './breaker.ts'
import { EmbedError, MAX_VECTOR_DIMS, type EmbedOptions, type Embedder } from './types.ts'
import { acceptVector } from './vector.ts'

/** Settings of the HTTP embedder; `fromConfig` fills them from the plugin config. */
export interface HttpEmbedderOptions {
  /** Base URL of an OpenAI-compatible API; `/embeddings` is appended. */
  baseUrl: string
  model: string
  /** Sent as a bearer token when non-empty. */
  apiKey?: string
  /** Expected vector length; when omitted the first answer fixes it and later answers must match. */
  dims?: number
  languages?: readonly string[]
  /** Per-request timeout in ms (each attempt). */
  timeoutMs?: number
  /** Texts per request. */
  batchSize?: number
  /** Extra attempts after a retryable failure. */
  maxRetries?: number
  /** Base of the exponential backoff with full jitter, in ms. */
  retryBaseMs?: number
  /** Consecutive failed requests that open the circuit, and how long it stays open. */
  breaker?: { failureThreshold: number, cooldownMs: number }
  /** Largest accepted response body in bytes (a hostile server cannot exhaust memory). */
  maxResponseBytes?: number
  /** undici dispatcher; defaults to the global one. */
  dispatcher?: Dispatcher
  /** Clock for the breaker, injectable for tests. */
  now?: () => number
}

const DEFAULTS = { timeoutMs: 10_000, batchSize: 32, maxRetries: 2, retryBaseMs: 200, failureThreshold: 3, cooldownMs: 30_000, maxResponseBytes: 64 * 1024 * 1024 }

/**
 * An `Embedder` over the OpenAI-compatible `POST {baseUrl}/embeddings` (OpenAI, Ollama, vLLM,
 * TEI, SiliconFlow …), using undici. Every vector is checked (length, finiteness, non-zero) and
 * normalised before it leaves this class; any fault becomes an `EmbedError`. Only retryable
 * faults are retried, with jittered backoff, and a circuit breaker stops calling a failing
 * endpoint for a while.
 */
export class HttpEmbedder implements Embedder {
  readonly model: string
  readonly languages: readonly string[]
  /** The breaker, exposed so callers can report its state. */
  readonly breaker: CircuitBreaker
  private readonly url: string
  private readonly apiKey: string
  private readonly timeoutMs: number
  private readonly batchSize: number
  private readonly maxRetries: number
  private readonly retryBaseMs: number
  private readonly maxResponseBytes: number
  private readonly dispatcher: Dispatcher | undefined
  private knownDims: number

  constructor(options: HttpEmbedderOptions) {
    let base: URL
    try {
      base = new URL(options.baseUrl)
    } catch {
      throw new Error(`embed.baseUrl is not a URL: ${JSON.stringify(options.baseUrl)}`)
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error(`embed.baseUrl must use http or https, not ${base.protocol}`)
    if (typeof options.model !== 'string' || options.model.trim() === '') throw new Error('embed.model is empty')
    this.url = options.baseUrl.replace(/\/+$/, '') + '/embeddings'
    this.model = options.model
    this.apiKey = options.apiKey ?? ''
    this.knownDims = options.dims ?? 0
    this.languages = Object.freeze([...(options.languages ?? ['en'])])
    this.timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs
    this.batchSize = Math.max(1, options.batchSize ?? DEFAULTS.batchSize)
    this.maxRetries = Math.max(0, options.maxRetries ?? DEFAULTS.maxRetries)
    this.retryBaseMs = options.retryBaseMs ?? DEFAULTS.retryBaseMs
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULTS.maxResponseBytes
    this.dispatcher = options.dispatcher
    this.breaker = new CircuitBreaker({
      failureThreshold: options.breaker?.failureThreshold ?? DEFAULTS.failureThreshold,
      cooldownMs: options.breaker?.cooldownMs ?? DEFAULTS.cooldownMs,
      now: options.now,
    })
  }

  /** The vector length; 0 until the first answer when it was not configured. */
  get dims(): number {
    return this.knownDims
  }

  /** Embeds in batches of `batchSize`, in order; rejects with `EmbedError` on the first batch that fails. */
  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    const out: Float32Array[] = []
    for (let i = 0; i < texts.length; i += this.batchSize) {
      out.push(...await this.embedBatch(texts.slice(i, i + this.batchSize), options.signal))
    }
    return out
  }

  private async embedBatch(texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    for (let attempt = 0; ; attempt++) {
      throwIfAborted(signal)
      if (!this.breaker.tryAcquire()) throw new EmbedError('circuit_open', `embedding endpoint ${this.url} is failing; circuit open`)
      try {
        const vectors = await this.post(texts, signal)
        this.breaker.success()
        return vectors
      } catch (raw) {
        const error = raw instanceof EmbedError ? raw : new EmbedError('network', String(raw), { cause: raw })
        if (error.kind === 'aborted') this.breaker.release()
        else this.breaker.failure()
        if (!error.retryable || attempt >= this.maxRetries || signal?.aborted) throw error
        await sleep(Math.random() * this.retryBaseMs * 2 ** attempt, signal)
      }
    }
  }

  private async post(texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    const perRequest = AbortSignal.timeout(this.timeoutMs)
    const combined = signal ? AbortSignal.any([signal, perRequest]) : perRequest
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' }
    if (this.apiKey !== '') headers.Authorization = `Bearer ${this.apiKey}`
    let body: unknown
    try {
      const response = await request(this.url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.model, input: texts, encoding_format: 'float' }),
        signal: combined,
        ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}),
      })
      if (response.statusCode < 200 || response.statusCode >= 300) {
        await response.body.dump()
        throw new EmbedError('http', `embedding endpoint answered ${response.statusCode}`, { status: response.statusCode })
      }
      const declared = Number(response.headers['content-length'])
      if (Number.isFinite(declared) && declared > this.maxResponseBytes) {
        await response.body.dump()
        throw new EmbedError('malformed', `embedding response of ${declared} bytes exceeds ${this.maxResponseBytes}`)
      }
      const text = await readLimited(response.body, this.maxResponseBytes)
      try {
        body = JSON.parse(text)
      } catch (error) {
        throw new EmbedError('malformed', 'embedding response is not JSON', { cause: error })
      }
    } catch (error) {
      if (error instanceof EmbedError) throw error
      if (signal?.aborted) throw abortError(signal)
      if (perRequest.aborted) throw new EmbedError('timeout', `embedding request timed out after ${this.timeoutMs} ms`, { cause: error })
      throw new EmbedError('network', `embedding request failed: ${(error as Error).message ?? String(error)}`, { cause: error })
    }
    return this.parse(body, texts.length)
  }

  private parse(body: unknown, count: number): Float32Array[] {
    const data = (body as { data?: unknown } | null)?.data
    if (!Array.isArray(data) || data.length !== count) {
      throw new EmbedError('malformed', `embedding response must have data[] with ${count} entries`)
    }
    const ordered = data.every((d) => typeof (d as { index?: unknown })?.index === 'number')
      ? [...data].sort((a, b) => (a as { index: number }).index - (b as { index: number }).index)
      : data
    const dims = this.knownDims > 0 ? this.knownDims : (ordered[0] as { embedding?: unknown[] })?.embedding?.length ?? 0
    if (dims <= 0) throw new EmbedError('malformed', 'embedding response has no embedding')
    if (dims > MAX_VECTOR_DIMS) throw new EmbedError('bad_vector', `embedding has ${dims} dimensions; at most ${MAX_VECTOR_DIMS} are accepted (embed.dims)`)
    const vectors = ordered.map((entry, i) => {
      try {
        return acceptVector((entry as { embedding?: unknown })?.embedding, dims)
      } catch (error) {
        throw new EmbedError('bad_vector', `data[${i}]: ${(error as Error).message}`)
      }
    })
    this.knownDims = dims
    return vectors
  }
}

async function readLimited(body: AsyncIterable<Uint8Array>, limit: number): Promise<string> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.byteLength
    if (size > limit) throw new EmbedError('malformed', `embedding response exceeds ${limit} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortError(signal)
}

function abortError(signal: AbortSignal): EmbedError {
  const reason = signal.reason as { name?: string } | undefined
  return reason?.name === 'TimeoutError'
    ? new EmbedError('timeout', 'embedding time budget ran out', { cause: reason })
    : new EmbedError('aborted', 'embedding was aborted', { cause: reason })
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal))
    const timer = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve() }, ms)
    const onAbort = () => { clearTimeout(timer); reject(abortError(signal!)) }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
