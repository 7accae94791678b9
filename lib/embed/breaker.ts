/** Options of the circuit breaker. */
export interface BreakerOptions {
  /** Consecutive failed calls that open the circuit. */
  failureThreshold: number
  /** How long the circuit stays open before one trial call is let through, in ms. */
  cooldownMs: number
  /** Clock, injectable for tests. */
  now?: () => number
}

/**
 * Stops calling an endpoint that keeps failing: after `failureThreshold` consecutive failures the
 * circuit opens and calls are refused without touching the network for `cooldownMs`; then one
 * trial call is allowed (half-open) and its outcome closes or re-opens the circuit. This keeps a
 * dead embedder from adding its timeout to every turn.
 */
export class CircuitBreaker {
  private readonly threshold: number
  private readonly cooldownMs: number
  private readonly now: () => number
  private failures = 0
  private openedAt: number | undefined
  private trialInFlight = false

  constructor(options: BreakerOptions) {
    this.threshold = Math.max(1, options.failureThreshold)
    this.cooldownMs = Math.max(0, options.cooldownMs)
    this.now = options.now ?? Date.now
  }

  /** `closed`, `open` (refusing) or `half_open` (one trial allowed). */
  get state(): 'closed' | 'open' | 'half_open' {
    if (this.openedAt === undefined) return 'closed'
    return this.now() - this.openedAt >= this.cooldownMs ? 'half_open' : 'open'
  }

  /** True if a call may go out now; in half-open state only the first caller gets true. */
  tryAcquire(): boolean {
    const state = this.state
    if (state === 'closed') return true
    if (state === 'open' || this.trialInFlight) return false
    this.trialInFlight = true
    return true
  }

  /** Records a successful call: the circuit closes. */
  success(): void {
    this.failures = 0
    this.openedAt = undefined
    this.trialInFlight = false
  }

  /** Ends a call that said nothing about the endpoint (the caller aborted): frees the trial slot. */
  release(): void {
    this.trialInFlight = false
  }

  /** Records a failed call: a failed trial re-opens at once, otherwise the threshold decides. */
  failure(): void {
    this.failures++
    if (this.trialInFlight || this.failures >= this.threshold) this.openedAt = this.now()
    this.trialInFlight = false
  }
}
