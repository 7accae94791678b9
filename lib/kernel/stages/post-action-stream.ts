/**
 * post_action over a model's stream (docs/stages.md): every chunk through the handlers, in order,
 * a chunk kept, replaced by several or dropped. Used by the stage binding's `llm/stream`
 * listener (`bind.ts`).
 */
import type { StreamChunk } from '@deepseek-ai/dsh-llm'
import { isPromise, type Entry, type StageHost } from './host.ts'
import type { PostActionDecision, PostActionInput } from './types.ts'

/**
 * The model's stream with every chunk passed through the post_action handlers, in order. While
 * the handlers answer synchronously a chunk costs one `then` on the source and nothing else: the
 * handlers share one argument object for the whole stream (its `chunk` is set before each call,
 * so a handler must read it during its call and not keep it: docs/stages.md), the source's
 * callback is made once, and a chunk every handler keeps allocates no list. An asynchronous
 * handler is awaited before the next handler, or the next chunk, sees the argument.
 */
export class PostActionStream implements AsyncIterator<StreamChunk> {
  private readonly host: StageHost
  private readonly source: AsyncIterator<StreamChunk>
  private readonly entries: readonly Entry<'post_action'>[]
  private readonly input: PostActionInput
  /** The chunks one was replaced by, not yet handed on, from `at`. */
  private queued: readonly StreamChunk[] = []
  private at = 0

  constructor(host: StageHost, source: AsyncIterator<StreamChunk>, entries: readonly Entry<'post_action'>[], input: PostActionInput) {
    this.host = host
    this.source = source
    this.entries = entries
    this.input = input
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    return this.at < this.queued.length ? Promise.resolve({ done: false, value: this.queued[this.at++]! }) : this.pull()
  }

  return(value?: unknown): Promise<IteratorResult<StreamChunk>> {
    return this.source.return?.(value) ?? Promise.resolve({ done: true, value })
  }

  private pull(): Promise<IteratorResult<StreamChunk>> {
    return this.source.next().then(this.received)
  }

  /** The source's next result through the handlers (one function for the stream, not one per chunk). */
  private readonly received = (r: IteratorResult<StreamChunk>): IteratorResult<StreamChunk> | Promise<IteratorResult<StreamChunk>> => {
    if (r.done === true) return r
    const out = this.pass(r.value)
    return isPromise(out) ? out.then(this.deliver) : this.deliver(out)
  }

  private readonly deliver = (out: Passed): IteratorResult<StreamChunk> | Promise<IteratorResult<StreamChunk>> => {
    if (!Array.isArray(out)) return { done: false, value: out as StreamChunk }
    if (out.length === 0) return this.pull() // dropped: on to the next chunk
    this.queued = out
    this.at = 1
    return { done: false, value: out[0]! }
  }

  /** Every handler on one chunk; synchronous while the handlers are. */
  private pass(chunk: StreamChunk): Passed | Promise<Passed> {
    let current: Passed = chunk
    for (let e = 0; e < this.entries.length; e++) {
      const r = this.through(this.entries[e]!, current)
      if (isPromise(r)) return this.rest(r, e + 1)
      current = r
    }
    return current
  }

  /** Every handler from `from` on, after the pending result of the one before. */
  private async rest(pending: Promise<Passed>, from: number): Promise<Passed> {
    let current = await pending
    for (let e = from; e < this.entries.length; e++) current = await this.through(this.entries[e]!, current)
    return current
  }

  private through(entry: Entry<'post_action'>, current: Passed): Passed | Promise<Passed> {
    return Array.isArray(current) ? this.each(entry, current) : this.one(entry, current as StreamChunk)
  }

  /** One handler on one chunk: the chunk itself when kept, else what replaces it (`[]`: dropped). */
  private one(entry: Entry<'post_action'>, chunk: StreamChunk): Passed | Promise<Passed> {
    this.input.chunk = chunk
    const called = this.host.invoke(entry, this.input)
    return isPromise(called) ? called.then((d) => replacement(chunk, d)) : replacement(chunk, called)
  }

  /** One handler on the chunks an earlier handler made of one (rare: asynchronous throughout). */
  private async each(entry: Entry<'post_action'>, chunks: readonly StreamChunk[]): Promise<Passed> {
    const out: StreamChunk[] = []
    for (const c of chunks) {
      const d = await this.one(entry, c)
      if (Array.isArray(d)) out.push(...d)
      else out.push(d as StreamChunk)
    }
    return out
  }
}

/** A chunk after post_action handlers: the one chunk, or the list it became (empty: dropped). */
type Passed = StreamChunk | readonly StreamChunk[]

/** What a post_action decision makes of `chunk`. */
function replacement(chunk: StreamChunk, d: PostActionDecision | void | undefined): Passed {
  if (d === undefined) return chunk
  return d === null ? [] : d as PostActionDecision & Passed
}
