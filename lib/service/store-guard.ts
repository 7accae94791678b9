/**
 * The store's availability as the service sees it: open, off for the rest of the fiber (the open
 * failed, or damage was found later), or on with a passing failure (full disk, I/O error, lock)
 * that the next successful write clears. Every service call reaches the store through `use`, so a
 * broken file is reported (`stats()`, the context line) and never takes the agent down.
 */
import type { Context } from '@deepseek-ai/cordis'
import { StableMemError } from '../errors.ts'
import { failureKind, transientReason } from '../store/failure.ts'
import type { BlockStore } from '../store/store.ts'

/** The logger the guard reports through (`ctx.logger('stablemem')`). */
type Logger = ReturnType<Context['logger']>

/**
 * Holds the service's store and sorts its errors (`lib/store/failure.ts`). Fields are plain
 * (never `#private`): the service that owns it is called through a cordis proxy.
 */
export class StoreGuard {
  /** The store, once opened; closed by damage or at dispose. */
  store: BlockStore | undefined
  /** Why memory is off: the open failed, or damage was found after a clean open. */
  failure: string | undefined
  private transient: string | undefined
  private transientCount = 0
  private readonly path: string
  private readonly logger: Logger

  constructor(path: string, logger: Logger) {
    this.path = path
    this.logger = logger
  }

  /** Records that the store could not be opened (logged; memory stays off). */
  openFailed(error: unknown): void {
    this.failure = error instanceof Error ? error.message : String(error)
    this.logger.error('memory disabled: %s', this.failure)
  }

  /** The open store, or an `unavailable` refusal saying why there is none. */
  open(): BlockStore {
    if (this.store && !this.store.isClosed) return this.store
    throw new StableMemError('unavailable', `long-term memory is unavailable: ${this.failure ?? 'store is closed'}`)
  }

  /** Runs `fn` on the open store; its store error comes back sorted (`failed`). */
  use<T>(fn: (store: BlockStore) => T): T {
    const store = this.open()
    try {
      return fn(store)
    } catch (error) {
      throw this.failed(store, error)
    }
  }

  /**
   * Sorts a store error (`lib/store/failure.ts`). Damage to the file (found after a clean open)
   * disables memory for the rest of the fiber, logged once and reported by `stats()`, instead of
   * failing every later turn. A failure that passes (a full disk, an I/O error, a lock) leaves
   * memory on: the call is refused with a plain message, `stats()` and the context line say so
   * until a later write succeeds. Refusals of the caller's input pass through unchanged.
   */
  failed(store: BlockStore, error: unknown): unknown {
    if (error instanceof StableMemError) return error
    const kind = failureKind(error)
    if (kind === 'transient') {
      const reason = transientReason(error)
      if (this.transient === undefined) this.logger.warn('memory could not use %s (%s); it retries on the next call', this.path, reason)
      this.transient = reason
      this.transientCount++
      return new StableMemError('unavailable', `long-term memory could not write just now (${reason}); nothing stored was lost, and the next call tries again`, { cause: error })
    }
    if (kind !== 'damage') return error
    this.failure = `store ${this.path} is damaged or unusable: ${(error as Error).message}`
    this.logger.error('memory disabled: %s', this.failure)
    store.close()
    return new StableMemError('unavailable', `long-term memory is unavailable: ${this.failure}`, { cause: error })
  }

  /**
   * Runs `fn` on the store for a caller that must not throw (the context line): undefined while
   * unavailable or when the call was refused; anything but a sorted refusal still throws.
   */
  quietly<T>(fn: (store: BlockStore) => T): T | undefined {
    const store = this.store
    if (!store || store.isClosed) return undefined
    try {
      return fn(store)
    } catch (error) {
      const refusal = this.failed(store, error)
      if (refusal instanceof StableMemError) return undefined
      throw refusal
    }
  }

  /** A write succeeded: a passing failure is over. */
  recovered(): void {
    if (this.transient === undefined) return
    this.logger.info('memory writes to %s again', this.path)
    this.transient = undefined
  }

  /** Why the store is unavailable, if it is. */
  unavailableReason(): string | undefined {
    return this.store && !this.store.isClosed ? undefined : (this.failure ?? 'store is closed')
  }

  /** Why the last store call failed, while the failure is a passing one; memory stays on. */
  transientTrouble(): string | undefined {
    return this.transient
  }

  /** The passing failures for `stats()`: how many, and the current one if any. */
  health(): { transientFailures: number, transientError?: string } {
    return { transientFailures: this.transientCount, ...(this.transient === undefined ? {} : { transientError: this.transient }) }
  }
}
