import { Worker } from 'node:worker_threads'
import type pg from 'pg'
import { TeamRecallLate, type TeamResult } from './search.ts'

/** A message to the recall thread. */
export type RecallRequest =
  | { type: 'recall', id: number, namespace: string, query: string, topK: number, deadline: number }
  | { type: 'local', id: number, ids: readonly string[] }
  | { type: 'close' }

/** A message from the recall thread. */
export type RecallReply =
  | { type: 'ready' }
  | { type: 'result', id: number, result: TeamResult }
  | { type: 'error', id: number, message: string, code?: string, late: boolean }

/** The worker's module, beside this one (`.ts` from source, `.js` once built). */
const WORKER = new URL(import.meta.url.endsWith('.ts') ? './recall-worker.ts' : './recall-worker.js', import.meta.url)

interface Pending {
  resolve(result: TeamResult): void
  reject(error: Error): void
}

/**
 * Runs the team layer's recalls on a thread of their own (`recall-worker.ts`), so that parsing
 * the team's rows and ranking them again — milliseconds of CPU per turn — runs on another core
 * while the turn's local recall runs on this one, and the team's first statement is on the wire
 * before the local recall starts. The thread keeps its own connection pool with the layer's
 * settings. A thread that died (it should not) fails its pending recalls, and the next recall
 * starts another.
 */
export class TeamRecallThread {
  private readonly settings: pg.PoolConfig
  private readonly script: URL
  private worker: Worker | undefined
  private booted: Promise<void> | undefined
  private next = 0
  private readonly pending = new Map<number, Pending>()

  /** `script`: the worker's module (tests give one that dies). */
  constructor(settings: pg.PoolConfig, script: URL = WORKER) {
    this.settings = settings
    this.script = script
  }

  /** Starts the thread if it is not running; resolves once it can take recalls. */
  ready(): Promise<void> {
    if (this.worker === undefined) this.spawn()
    return this.booted!
  }

  private spawn(): void {
    const worker = new Worker(this.script, { workerData: this.settings })
    worker.unref() // a process with nothing else to do exits; the layer's close() ends the thread
    this.worker = worker
    this.booted = new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve()) // the first message is 'ready'
      worker.once('error', reject)
      worker.once('exit', () => reject(new Error('the team recall thread exited before it was ready')))
    })
    this.booted.catch(() => {}) // seen by ready()'s callers; a recall meanwhile fails on its own
    worker.on('message', (reply: RecallReply) => {
      if (reply.type === 'ready') return
      const waiting = this.pending.get(reply.id)
      if (waiting === undefined) return
      this.pending.delete(reply.id)
      if (reply.type === 'result') waiting.resolve(reply.result)
      else waiting.reject(reply.late ? new TeamRecallLate(reply.message) : Object.assign(new Error(reply.message), reply.code === undefined ? {} : { code: reply.code }))
    })
    const died = (error: Error) => {
      if (this.worker !== worker) return
      this.worker = undefined
      for (const waiting of this.pending.values()) waiting.reject(error)
      this.pending.clear()
    }
    worker.on('error', died)
    worker.on('exit', (code) => died(new Error(`the team recall thread exited (code ${code})`)))
  }

  /**
   * One team recall on the thread: sent at once (before this returns), the local recall's ids
   * sent when `localIds` resolves. `deadline` is a `performance.now()` time of this thread.
   */
  recall(namespace: string, query: string, topK: number, localIds: PromiseLike<readonly string[]>, deadline: number): Promise<TeamResult> {
    try {
      if (this.worker === undefined) this.spawn()
    } catch (error) {
      return Promise.reject(error) // the layer's recall never throws: it counts this as an error
    }
    const worker = this.worker!
    const id = this.next++
    const answer = new Promise<TeamResult>((resolve, reject) => this.pending.set(id, { resolve, reject }))
    worker.postMessage({ type: 'recall', id, namespace, query, topK, deadline: performance.timeOrigin + deadline } satisfies RecallRequest)
    localIds.then((ids) => {
      if (this.pending.has(id)) worker.postMessage({ type: 'local', id, ids: [...ids] } satisfies RecallRequest)
    }, () => {})
    return answer
  }

  /** Ends the thread (its pool closed first). */
  async close(): Promise<void> {
    const worker = this.worker
    this.worker = undefined
    if (worker === undefined) return
    await new Promise<void>((resolve) => {
      // A thread that does not end by itself within a second (or had already died) is terminated.
      const timer = setTimeout(() => void worker.terminate().finally(resolve), 1_000)
      worker.once('exit', () => {
        clearTimeout(timer)
        resolve()
      })
      worker.postMessage({ type: 'close' } satisfies RecallRequest)
    })
  }
}
