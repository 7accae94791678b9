import type { LayersConfig } from '../../config.ts'
import type { ColdCandidate, CoolOutcome } from '../../store/layers.ts'
import type { BlockStore } from '../../store/store.ts'
import { distillDeterministic, factText, gateFacts, type Distiller, type Fact } from './distill.ts'

/** The cooling rule and the bounds of one tick (config `layers.*`). */
export interface CoolingOptions {
  /** A cold block cools once idle longer than this (ms). */
  idleMs: number
  /** … and accessed at most this many times. */
  maxAccess: number
  /** A block that yielded nothing is selected again after this long (ms). */
  retryMs: number
  /** Most blocks per tick. */
  batch: number
  /** The distiller (default: the deterministic one). Its facts pass `gateFacts` whatever it is. */
  distiller?: Distiller
  /** Select and distil, but write nothing. */
  dryRun?: boolean
}

const HOUR = 3_600_000

/** The cooling options a `layers:` configuration implies. */
export function coolingOptions(config: LayersConfig): CoolingOptions {
  return { idleMs: config.coolAfterHours * HOUR, maxAccess: config.coolMaxAccess, retryMs: config.coolRetryHours * HOUR, batch: config.coolBatch }
}

/** One block of a tick's report. */
export interface CoolingItem {
  id: string
  /** Why it was selected: access count and idle time. */
  why: string
  facts: string[]
  result: CoolOutcome['result'] | 'would-cool' | 'would-keep'
  /** Rows written (new blocks + new edges). */
  delta: number
}

/** What one tick did. */
export interface CoolingReport {
  /** `busy`: another process holds the cooling lease; nothing was done. */
  status: 'ran' | 'busy' | 'dry-run'
  at: number
  selected: number
  cooled: number
  kept: number
  skipped: number
  /** LLM distillations that failed and fell back to the deterministic distiller. */
  fallbacks: number
  /** Cold blocks whose access count this tick halved (a step of the cooling period's pass). */
  halved: number
  items: CoolingItem[]
}

/** The lease name of the cooling job in `kernel_runs`. */
export const COOLING_JOB = 'cooling'
/** How long a tick may hold the lease before another process may take over (a crashed holder). */
const LEASE_MS = 5 * 60_000

/** Recalled cold blocks whose access count one tick halves at most (one step of a period's pass). */
const HALVING_STEP = 2_000

/**
 * One cooling tick (L2 → L3) at time `now`: take the lease (two processes never cool at once,
 * and each block is re-checked inside its write besides), select at most `batch` cold blocks the
 * rule picks, distil each, and in one transaction write the facts as stable blocks with
 * `derived_from` edges to the original, which keeps its id and moves to `stable`. Success is the
 * number of rows SQLite wrote, never a counter of our own; a block that yields nothing stays cold
 * with one more attempt. Nothing is deleted. The same write takes one bounded step of halving
 * the access counts of cold blocks once per cooling period (`idleMs`).
 *
 * With the deterministic distiller the whole tick is that one write transaction: the write lock
 * already keeps other writers out, distilling 100 blocks takes about a millisecond, and each
 * commit of a transaction is an fsync, so lease, selection, writes and release share one. An
 * optional (asynchronous, model-backed) distiller must not run under the write lock: then the
 * lease is taken first in its own short transaction and released in the write.
 */
export async function coolTick(store: BlockStore, now: number, options: CoolingOptions, holder: string): Promise<CoolingReport> {
  const report: CoolingReport = { status: options.dryRun === true ? 'dry-run' : 'ran', at: now, selected: 0, cooled: 0, kept: 0, skipped: 0, fallbacks: 0, halved: 0, items: [] }
  const select = () => {
    const candidates = store.layers.coldCandidates(now, options.idleMs, options.maxAccess, options.batch)
    report.selected = candidates.length
    return candidates
  }
  if (options.dryRun === true) {
    for (const candidate of select()) {
      const { facts, fellBack } = await distil(candidate.text, options.distiller)
      if (fellBack) report.fallbacks++
      report.items.push({ id: candidate.id, why: why(candidate, now), facts: facts.map(factText), result: facts.length > 0 ? 'would-cool' : 'would-keep', delta: 0 })
    }
    return report
  }
  if (options.distiller === undefined) {
    return store.transaction(() => {
      if (!store.layers.acquire(COOLING_JOB, holder, LEASE_MS)) return { ...report, status: 'busy' as const }
      const distilled = select().map((candidate) => ({ candidate, facts: distillDeterministic(candidate.text) }))
      write(store, now, options, holder, distilled, report)
      return report
    })
  }
  if (!store.layers.acquire(COOLING_JOB, holder, LEASE_MS)) return { ...report, status: 'busy' }
  let written = false
  try {
    const distilled: Distilled[] = []
    for (const candidate of select()) {
      const { facts, fellBack } = await distil(candidate.text, options.distiller)
      if (fellBack) report.fallbacks++
      distilled.push({ candidate, facts })
    }
    store.transaction(() => write(store, now, options, holder, distilled, report))
    written = true
    return report
  } finally {
    if (!written) store.layers.release(COOLING_JOB, holder, JSON.stringify({ failed: true }))
  }
}

interface Distilled {
  candidate: ColdCandidate
  facts: Fact[]
}

/** The write of a tick (inside its transaction): the facts, the layer moves, one halving step, the lease released with the result. */
function write(store: BlockStore, now: number, options: CoolingOptions, holder: string, distilled: readonly Distilled[], report: CoolingReport): void {
  const outcomes = store.layers.coolMany(distilled.map(({ candidate, facts }) => ({ id: candidate.id, facts: facts.map((f) => ({ text: factText(f) })) })), now, options.retryMs)
  for (const [k, outcome] of outcomes.entries()) {
    report[outcome.result === 'cooled' ? 'cooled' : outcome.result === 'kept' ? 'kept' : 'skipped']++
    report.items.push({ id: outcome.id, why: why(distilled[k]!.candidate, now), facts: outcome.facts, result: outcome.result, delta: outcome.delta })
  }
  report.halved = store.layers.halvingStep(now, options.idleMs, HALVING_STEP)
  store.layers.release(COOLING_JOB, holder, JSON.stringify({ selected: report.selected, cooled: report.cooled, kept: report.kept, skipped: report.skipped, halved: report.halved }))
}

/** Distils with the configured distiller; any failure, or output that fails the gates entirely, falls back to the deterministic one. */
async function distil(text: string, distiller: Distiller | undefined): Promise<{ facts: Fact[], fellBack: boolean }> {
  if (distiller === undefined) return { facts: distillDeterministic(text), fellBack: false }
  try {
    const facts = gateFacts(text, await distiller(text))
    if (facts.length > 0) return { facts, fellBack: false }
  } catch {
    // Any failure of an optional distiller (network, JSON, schema) is a fallback, never an error.
  }
  return { facts: distillDeterministic(text), fellBack: true }
}

function why(candidate: ColdCandidate, now: number): string {
  const hours = Math.floor((now - candidate.idleSince) / 3_600_000)
  return `accessed ${candidate.accessCount}×, idle ${hours} h${candidate.attempts > 0 ? `, attempt ${candidate.attempts + 1}` : ''}`
}
