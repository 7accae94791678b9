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
  items: CoolingItem[]
}

/** The lease name of the cooling job in `kernel_runs`. */
export const COOLING_JOB = 'cooling'
/** How long a tick may hold the lease before another process may take over (a crashed holder). */
const LEASE_MS = 5 * 60_000

/**
 * One cooling tick (L2 → L3) at time `now`: take the lease (two processes never cool at once,
 * and each block is re-checked inside its write besides), select at most `batch` cold blocks the
 * rule picks, distil each, and in one transaction write the facts as stable blocks with
 * `derived_from` edges to the original, which keeps its id and moves to `stable`. Success is the
 * number of rows SQLite wrote, never a counter of our own; a block that yields nothing stays cold
 * with one more attempt. Nothing is deleted.
 */
export async function coolTick(store: BlockStore, now: number, options: CoolingOptions, holder: string): Promise<CoolingReport> {
  const report: CoolingReport = { status: options.dryRun === true ? 'dry-run' : 'ran', at: now, selected: 0, cooled: 0, kept: 0, skipped: 0, fallbacks: 0, items: [] }
  if (options.dryRun !== true && !store.layers.acquire(COOLING_JOB, holder, LEASE_MS)) return { ...report, status: 'busy' }
  try {
    const candidates = store.layers.coldCandidates(now, options.idleMs, options.maxAccess, options.batch)
    report.selected = candidates.length
    const distilled: Array<{ candidate: ColdCandidate, facts: Fact[] }> = []
    for (const candidate of candidates) {
      const { facts, fellBack } = await distil(candidate.text, options.distiller)
      if (fellBack) report.fallbacks++
      distilled.push({ candidate, facts })
    }
    if (options.dryRun === true) {
      for (const { candidate, facts } of distilled) {
        report.items.push({ id: candidate.id, why: why(candidate, now), facts: facts.map(factText), result: facts.length > 0 ? 'would-cool' : 'would-keep', delta: 0 })
      }
      return report
    }
    const outcomes = store.transaction(() => distilled.map(({ candidate, facts }) => ({
      candidate, outcome: store.layers.cool(candidate.id, facts.map((f) => ({ text: factText(f) })), now, options.retryMs),
    })))
    for (const { candidate, outcome } of outcomes) {
      report[outcome.result === 'cooled' ? 'cooled' : outcome.result === 'kept' ? 'kept' : 'skipped']++
      report.items.push({ id: candidate.id, why: why(candidate, now), facts: outcome.facts, result: outcome.result, delta: outcome.delta })
    }
    return report
  } finally {
    if (options.dryRun !== true) store.layers.release(COOLING_JOB, holder, JSON.stringify({ selected: report.selected, cooled: report.cooled, kept: report.kept, skipped: report.skipped }))
  }
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
