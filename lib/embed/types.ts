/** Options for one `embed` call. */
export interface EmbedOptions {
  /** Aborts the call (and every retry); the embedder rejects with an `EmbedError` of kind `timeout` or `aborted`. */
  signal?: AbortSignal
}

/**
 * A text embedding model as recall sees it. The HTTP adapter in this folder is the only
 * implementation shipped; tests and other plugins may provide their own.
 */
export interface Embedder {
  /** Model name; stored with every vector so two models' vectors are never compared. */
  readonly model: string
  /** Vector length; every returned vector has exactly this many finite components. */
  readonly dims: number
  /** Languages the model is good at (`en`, `zh`, …); vectors take part in recall only for these. */
  readonly languages: readonly string[]
  /** One unit-length vector per text, in order. Rejects with `EmbedError`, never returns bad vectors. */
  embed(texts: readonly string[], options?: EmbedOptions): Promise<Float32Array[]>
}

/** What went wrong in an embed call; recall maps it to a `degraded` reason. */
export type EmbedErrorKind =
  | 'timeout'        // the per-request timeout or the caller's budget ran out
  | 'aborted'        // the caller aborted for another reason
  | 'circuit_open'   // the breaker is open after repeated failures; nothing was sent
  | 'http'           // the endpoint answered with a non-2xx status
  | 'network'        // connection refused, reset, DNS …
  | 'malformed'      // the body is not the expected JSON shape
  | 'bad_vector'     // wrong dimension, NaN/Infinity, or zero length

/** A failed embed call with a machine-readable `kind`; `retryable` says whether trying again may help. */
export class EmbedError extends Error {
  readonly kind: EmbedErrorKind
  readonly status: number | undefined
  constructor(kind: EmbedErrorKind, message: string, options: { cause?: unknown, status?: number } = {}) {
    super(message, { cause: options.cause })
    this.name = 'EmbedError'
    this.kind = kind
    this.status = options.status
  }

  /** Network errors, timeouts of a single attempt, 408, 429 and 5xx may succeed on a retry; the rest will not. */
  get retryable(): boolean {
    if (this.kind === 'network' || this.kind === 'timeout') return true
    if (this.kind === 'http' && this.status !== undefined) return this.status === 408 || this.status === 429 || this.status >= 500
    return false
  }
}

/**
 * Longest accepted vector, configured (`embed.dims`) or learned from the endpoint's first answer:
 * 65,536 float32 values are 256 KiB per note, far above any embedding model; a hostile endpoint
 * must not make every note cost megabytes.
 */
export const MAX_VECTOR_DIMS = 65_536
