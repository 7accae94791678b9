/**
 * The stage host: the handlers registered per stage, and the one way they run. It knows nothing
 * of dsh's hooks (the binding in `bind.ts` calls it); it only orders, scopes, runs and counts.
 */
import type { Agent } from '@deepseek-ai/dsh-agent'
import { STAGES, type AgentScope, type Stage, type StageDecisions, type StageHandler, type StageInputs, type StageOptions, type StageStats } from './types.ts'

/** One registered handler. */
export interface Entry<S extends Stage> {
  stage: S
  handler: StageHandler<S>
  order: number
  serial: number
  agents: AgentScope
  name: string
}

/** Where the host reports handler failures. */
export interface StageLogger {
  warn(format: string, ...args: unknown[]): void
}

/** A handler's decision, once "no opinion" is set aside. */
export type Decision<S extends Stage> = Exclude<StageDecisions[S], void | undefined | null>

/** What a visitor tells `run` after seeing one handler's decision. */
export type Visit = 'next' | 'stop'

/**
 * Runs each stage's handlers **one after another**, in ascending `order` (registration order
 * breaks ties), each on the input as the handlers before it left it. A handler that throws is
 * logged and counted and treated as having returned nothing; the others still run. (HologramAgent
 * ran a stage's handlers concurrently on one shared context, so two handlers writing the
 * response raced; here a handler always sees its predecessors' decisions.)
 */
export class StageHost {
  /**
   * Each stage's handlers in running order. Copy-on-write: a registration or removal replaces the
   * list, so a list once handed out is a snapshot and `applicable` can hand out the list itself.
   */
  private readonly entries = new Map<Stage, readonly Entry<Stage>[]>(STAGES.map((s) => [s, []]))
  /** Per stage, whether some handler is scoped to fewer than all agents (then `applicable` filters). */
  private readonly scoped = new Map<Stage, boolean>(STAGES.map((s) => [s, false]))
  private readonly calls = counters()
  private readonly errors = counters()
  private readonly exits = { maxStepsPerTurn: 0, stopWhenAllDenied: 0 }
  private serial = 0
  private readonly logger: StageLogger
  private readonly watchers: Array<() => void> = []

  constructor(logger: StageLogger) {
    this.logger = logger
  }

  /**
   * Registers a handler; returns the function that removes it. Throws on a stage that does not
   * exist (including `before_output`, which dsh cannot offer: see `STAGES`) or a bad option, so a
   * typo fails at registration rather than silently never running.
   */
  add<S extends Stage>(stage: S, handler: StageHandler<S>, options: StageOptions = {}): () => void {
    if (!this.entries.has(stage)) {
      const hint = (stage as string) === 'before_output'
        ? ': dsh has no gate for the final text (it streams as it is generated); use post_action to transform it or after_output to observe it'
        : `; the stages are ${STAGES.join(', ')}`
      throw new TypeError(`unknown stage ${JSON.stringify(stage)}${hint}`)
    }
    if (typeof handler !== 'function') throw new TypeError(`stage ${stage}: the handler must be a function`)
    const order = options.order ?? 0
    if (typeof order !== 'number' || !Number.isFinite(order)) throw new TypeError(`stage ${stage}: order must be a finite number`)
    const agents = options.agents ?? 'all'
    if (agents !== 'all' && typeof agents !== 'function' && (typeof agents !== 'object' || agents === null || typeof agents.preset !== 'string')) {
      throw new TypeError(`stage ${stage}: agents must be 'all', { preset: id } or a function`)
    }
    const entry: Entry<S> = { stage, handler, order, serial: ++this.serial, agents, name: options.name ?? (handler.name || 'anonymous') }
    this.replace(stage, [...this.entries.get(stage)!, entry as unknown as Entry<Stage>].sort((a, b) => a.order - b.order || a.serial - b.serial))
    return () => {
      const list = this.entries.get(stage)!
      if (!list.includes(entry as unknown as Entry<Stage>)) return
      this.replace(stage, list.filter((e) => e !== (entry as unknown as Entry<Stage>)))
    }
  }

  private replace(stage: Stage, list: readonly Entry<Stage>[]): void {
    this.entries.set(stage, list)
    this.scoped.set(stage, list.some((e) => e.agents !== 'all'))
    this.changed()
  }

  /** How many handlers `stage` has, for any agent. */
  count(stage: Stage): number {
    return this.entries.get(stage)!.length
  }

  /** Calls `fn` after every registration and removal (the binding listens to a dsh hook only while a handler needs it). */
  watch(fn: () => void): void {
    this.watchers.push(fn)
  }

  private changed(): void {
    for (const fn of this.watchers) fn()
  }

  /** True when some handler of `stage` applies to `agent` (the binding's fast path). */
  has(stage: Stage, agent: Agent): boolean {
    const list = this.entries.get(stage)!
    if (!this.scoped.get(stage)) return list.length > 0
    return list.some((e) => applies(e.agents, agent))
  }

  /**
   * Runs the handlers of `stage` that apply to `agent`, sequentially. `input` is asked for each
   * handler's input (so it reflects earlier decisions); `visit` receives each decision and may
   * stop the stage. A throwing handler is counted, logged and skipped. While the handlers answer
   * synchronously the stage runs synchronously and returns `undefined`; from the first handler
   * that returns a promise on, the rest run after it and the promise of that is returned. So a
   * stage of synchronous handlers costs no promise at all, and a caller awaits only what it gets.
   */
  run<S extends Stage>(stage: S, agent: Agent, input: () => StageInputs[S], visit: (decision: Decision<S>, name: string) => Visit): Promise<void> | undefined {
    const entries = this.applicable(stage, agent)
    for (let i = 0; i < entries.length; i++) {
      const called = this.invoke(entries[i]!, input())
      if (isPromise(called)) return this.resume(stage, entries, i, called, input, visit)
      if (this.decide(stage, entries[i]!, called, visit) === 'stop') return undefined
    }
    return undefined
  }

  /** `run` from handler `i`, whose decision is still pending, on: each handler after the one before it. */
  private async resume<S extends Stage>(stage: S, entries: readonly Entry<S>[], i: number, pending: Promise<StageDecisions[S] | undefined>, input: () => StageInputs[S], visit: (decision: Decision<S>, name: string) => Visit): Promise<void> {
    for (let called: StageDecisions[S] | undefined | Promise<StageDecisions[S] | undefined> = pending; ;) {
      const decision = isPromise(called) ? await called : called
      if (this.decide(stage, entries[i]!, decision, visit) === 'stop' || ++i >= entries.length) return
      called = this.invoke(entries[i]!, input())
    }
  }

  /** Hands one decision to `visit`; "no opinion" goes on to the next handler, a non-object is refused. */
  private decide<S extends Stage>(stage: S, entry: Entry<S>, decision: StageDecisions[S] | undefined, visit: (decision: Decision<S>, name: string) => Visit): Visit {
    if (decision === undefined || decision === null) return 'next'
    if (typeof decision !== 'object') {
      this.refused(stage, entry.name, `not a decision: ${String(decision)}`)
      return 'next'
    }
    return visit(decision as Decision<S>, entry.name)
  }

  /**
   * The handlers of `stage` that apply to `agent`, in running order. A snapshot: a handler that
   * registers or removes handlers changes the next run, not this one. Without scoped handlers it
   * is the stage's list itself, so no list is allocated per dispatch.
   */
  applicable<S extends Stage>(stage: S, agent: Agent): readonly Entry<S>[] {
    const list = this.entries.get(stage)! as unknown as readonly Entry<S>[]
    return this.scoped.get(stage) ? list.filter((e) => applies(e.agents, agent)) : list
  }

  /**
   * Calls one handler; a throw or rejection is counted and logged, and reads as "no opinion"
   * (`undefined`). A synchronous handler's decision comes back synchronously, so a stage of
   * synchronous handlers costs no promise per handler.
   */
  invoke<S extends Stage>(entry: Entry<S>, input: StageInputs[S]): StageDecisions[S] | undefined | Promise<StageDecisions[S] | undefined> {
    this.calls[entry.stage]++
    try {
      const decision = entry.handler(input)
      return isPromise(decision) ? decision.then(undefined, (error: unknown) => this.failed(entry, error)) : decision
    } catch (error) {
      return this.failed(entry, error)
    }
  }

  private failed(entry: { stage: Stage, name: string }, error: unknown): undefined {
    this.errors[entry.stage]++
    this.logger.warn('stage %s handler %s failed (the turn goes on without it): %s', entry.stage, entry.name, error instanceof Error ? error.message : String(error))
    return undefined
  }

  /** Counts a handler's decision that the binding refused (e.g. a section with an unknown variable). */
  refused(stage: Stage, name: string, why: string): void {
    this.errors[stage]++
    this.logger.warn('stage %s handler %s: decision ignored: %s', stage, name, why)
  }

  /** Counts one turn ended by a loop exit. */
  exited(kind: keyof StageStats['exits']): void {
    this.exits[kind]++
  }

  /** Registered handlers, calls, errors and loop exits. */
  stats(): StageStats {
    const handlers = counters()
    for (const [stage, list] of this.entries) handlers[stage] = list.length
    return { handlers, calls: { ...this.calls }, errors: { ...this.errors }, exits: { ...this.exits } }
  }
}

/** True for a promise or any other thenable a handler may return. */
export function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function'
}

function applies(scope: AgentScope, agent: Agent): boolean {
  if (scope === 'all') return true
  if (typeof scope === 'function') {
    try {
      return scope(agent) === true
    } catch {
      return false // a predicate that throws applies to nothing rather than breaking the turn
    }
  }
  return agent.session.header.agentPreset === scope.preset
}

function counters(): Record<Stage, number> {
  return Object.fromEntries(STAGES.map((s) => [s, 0])) as Record<Stage, number>
}
