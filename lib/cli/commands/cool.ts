/**
 * `stablemem cool`: the cooling tick the plugin's heartbeat runs (L2 → L3), on demand: lists the
 * cold blocks the rule selects and why, and the facts each yields, then writes them (unless
 * `--dry-run`). `--now` moves the clock, to see what would cool later.
 */
import { randomUUID } from 'node:crypto'
import { resolveConfig } from '../../config.ts'
import { coolingOptions, coolTick, type CoolingReport } from '../../kernel/layers/cooling.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'

/** Most ticks one invocation runs (each is bounded by the batch size). */
const MAX_TICKS = 1_000

/** The cool command. */
export const command: Command = {
  usage: [
    'Usage: stablemem cool [--dry-run] [--now <time>] [--db <path>] [--json]',
    '',
    'Distils cold blocks (turns kept at compaction) that were recalled at most twice and idle',
    'for more than 72 hours into stable facts (subject|dimension=value), linked to the original',
    'by derived_from edges; the original keeps its id and moves to the stable layer. A block',
    'that yields no fact stays cold and is tried again after 24 hours. Nothing is deleted.',
    '',
    '  --dry-run     list what would cool and why; write nothing',
    '  --now <time>  the time to apply the rule at: an ISO date/time, or +<n>h from now (e.g. +73h)',
    '  --json        the reports as JSON, one line',
  ].join('\n'),
  options: { 'dry-run': { type: 'boolean' }, now: { type: 'string' }, json: { type: 'boolean' } },
  positionals: { min: 0, max: 0 },
  async run({ db, dbGiven, values, io }) {
    const now = parseNow(values.now, Date.now())
    const dryRun = values['dry-run'] === true
    const options = { ...coolingOptions(resolveConfig().layers), dryRun }
    const holder = `cli:${process.pid}:${randomUUID().slice(0, 8)}`
    const reports = await withStore(openExisting(db, dbGiven, { write: true }), async (store) => {
      const out: CoolingReport[] = []
      for (let i = 0; i < MAX_TICKS; i++) {
        const report = await coolTick(store, now, options, holder)
        out.push(report)
        // A dry run sees the same blocks every time; a real tick stops when a batch is not full.
        if (dryRun || report.status === 'busy' || report.selected < options.batch) break
      }
      return out
    })
    if (values.json === true) {
      println(io.stdout, JSON.stringify(reports.length === 1 ? reports[0] : reports))
      return reports.some((r) => r.status === 'busy') ? 1 : 0
    }
    if (reports.some((r) => r.status === 'busy')) {
      println(io.stderr, 'stablemem cool: another process is cooling this store right now; try again in a moment')
      return 1
    }
    const items = reports.flatMap((r) => r.items)
    if (items.length === 0) {
      println(io.stdout, `nothing to cool at ${new Date(now).toISOString()}`)
      return 0
    }
    for (const item of items) {
      println(io.stdout, `${item.id}  ${item.result}  (${item.why})`)
      for (const fact of item.facts) println(io.stdout, `   → ${fact}`)
    }
    const count = (result: string) => items.filter((i) => i.result === result).length
    println(io.stdout, dryRun
      ? `${count('would-cool')} would cool, ${count('would-keep')} would be kept for a later try (dry run: nothing written)`
      : `${count('cooled')} cooled, ${count('kept')} kept for a later try, ${count('skipped')} already cooled elsewhere`)
    return 0
  },
}

/** `--now`: an ISO date/time or `+<n>h`; absent: `fallback`. */
export function parseNow(value: string | boolean | undefined, fallback: number): number {
  if (value === undefined || value === false) return fallback
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError('--now needs a time')
  const relative = /^\+(\d+(?:\.\d+)?)h$/.exec(value.trim())
  if (relative) return fallback + Number(relative[1]) * 3_600_000
  const parsed = Date.parse(value)
  if (Number.isNaN(parsed)) throw new UsageError(`--now: cannot read "${value}" as a time (use an ISO date/time or +<n>h)`)
  return parsed
}
