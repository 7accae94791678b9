/**
 * `npm run bench:grow -- --from FILE --out FILE --to N [--seed S] [--batch 1000] [--budget-min M] [--json]`
 * `npm run bench:grow -- --from FILE --out FILE --spread W [--json]`
 *
 * Builds the large stores the scale benchmarks read, through the store's own write path, from a
 * smaller one (docs/benchmarks.md, "Scale: three million notes"). `--from` is a store that holds
 * the first k blocks of `bench:perf`'s corpus (a `bench:perf --cache` build, or an earlier output
 * of this script); it is copied to `--out` and never written.
 *
 * - `--to N` commits blocks k … N−1 of the same corpus (same seed) through `commitMany` in batches
 *   of `--batch`, as bench:perf's build does after its first single commits: the same store code,
 *   schema, durability and FTS5 merging, so the index ends in the state commits leave it in. It
 *   stops after `--budget-min` minutes of wall time (the store then holds what was committed, a
 *   prefix of the corpus, and the JSON says how far it got). Progress is logged per 100,000
 *   notes with wall and CPU rates and the load.
 * - `--spread W` moves block i into workspace i mod W (`benchWorkspace`, the scopes of bench:perf's
 *   step 5) with `ScopeTable.set`, the code `scope set` runs: the many-workspace store that the
 *   default save scope makes, derived from a single-scope one in minutes instead of a rebuild.
 *
 * The prefix is checked first: the store's count, its largest rowid, and the text of sampled rows
 * against the corpus (a store of another seed or corpus is refused). Prints the FTS5 merge state
 * (lib/store/fts-structure.ts) and the file size at the end; with `--json` the last line is one JSON object.
 */
import { copyFileSync, existsSync, statSync } from 'node:fs'
import { loadavg } from 'node:os'
import { DatabaseSync } from 'node:sqlite'
import { parseArgs } from 'node:util'
import { BlockStore } from '../lib/store/store.ts'
import { jsonWanted, progressLog, wholeFlag } from './args.ts'
import { corpus, type Corpus } from './corpus.ts'
import { checkPrefix } from './corpus-prefix.ts'
import { describeFtsStructure, ftsStructure } from '../lib/store/fts-structure.ts'
import { cpuMs, nowMs, round } from './stats.ts'
import { benchWorkspace } from './workspaces.ts'

const { values: args } = parseArgs({
  options: {
    from: { type: 'string', default: '' },
    out: { type: 'string', default: '' },
    to: { type: 'string', default: '0' },
    spread: { type: 'string', default: '0' },
    seed: { type: 'string', default: '20261130' },
    batch: { type: 'string', default: '1000' },
    'budget-min': { type: 'string', default: '45' },
    json: { type: 'boolean', default: false },
  },
})
const asJson = jsonWanted(args.json)
const log = progressLog(asJson)

await main()

async function main(): Promise<void> {
  if (args.from === '' || args.out === '') throw new Error('--from FILE and --out FILE are required')
  if (args.from === args.out) throw new Error('--out must differ from --from (the source is only read)')
  if (existsSync(args.out)) throw new Error(`${args.out} exists; this script writes a fresh copy`)
  const target = wholeFlag('to', args.to, 0)
  const spread = wholeFlag('spread', args.spread, 0)
  if ((target > 0) === (spread > 0)) throw new Error('give exactly one of --to N or --spread W')
  const batch = wholeFlag('batch', args.batch)
  const budgetMs = wholeFlag('budget-min', args['budget-min']) * 60_000
  const gen = corpus(wholeFlag('seed', args.seed))

  // The source is only read; its WAL (if it has one) is copied beside the file, and the store's open folds it in.
  const started = nowMs()
  const source = new DatabaseSync(args.from, { readOnly: true })
  const from = checkPrefix(source, gen)
  source.close()
  if (target > 0 && target <= from) throw new Error(`--to ${target}: the store already holds ${from} notes`)
  copyFileSync(args.from, args.out)
  if (existsSync(`${args.from}-wal`) && statSync(`${args.from}-wal`).size > 0) copyFileSync(`${args.from}-wal`, `${args.out}-wal`)
  log(`copied ${args.from} (${from.toLocaleString('en')} notes, a prefix of the corpus) to ${args.out} in ${((nowMs() - started) / 1000).toFixed(1)} s`)

  const openMs0 = nowMs()
  const store = new BlockStore(args.out) // upgrades an older schema once
  const openMs = nowMs() - openMs0
  const result: Record<string, unknown> = { from_notes: from, open_ms: Math.round(openMs) }
  if (target > 0) Object.assign(result, grow(store, gen, from, target, batch, budgetMs))
  else Object.assign(result, spreadScopes(store, from, spread, batch))
  const notes = store.count()
  store.close()
  const db = new DatabaseSync(args.out, { readOnly: true })
  const structure = ftsStructure(db, 'blocks_fts')
  db.close()
  const fileMb = statSync(args.out).size / 2 ** 20
  log(`${notes.toLocaleString('en')} notes, ${fileMb.toFixed(0)} MB; FTS5: ${describeFtsStructure(structure)}`)
  Object.assign(result, { notes, file_mb: Math.round(fileMb), bytes_per_note: Math.round((fileMb * 2 ** 20) / notes), fts: structure, load_avg: loadavg().map((l) => round(l, 1)) })
  if (asJson) console.log(JSON.stringify(result))
}

/** Commits blocks from … target−1 in batches until done or out of budget; the rates measured on the way. */
function grow(store: BlockStore, gen: Corpus, from: number, target: number, batch: number, budgetMs: number): Record<string, unknown> {
  const t0 = nowMs()
  let commitMs = 0
  let commitCpuMs = 0
  let chunkAt = nowMs()
  let chunkCpu = process.cpuUsage()
  let chunkFrom = from
  const chunks: Array<{ to: number, per_s: number, cpu_per_s: number, load: number }> = []
  let next = from
  while (next < target && nowMs() - t0 < budgetMs) {
    const inputs = []
    for (let i = next; i < Math.min(target, next + batch); i++) inputs.push({ text: gen.block(i).text, source: 'bench' })
    const start = nowMs()
    const cpu = process.cpuUsage()
    store.commitMany(inputs)
    commitCpuMs += cpuMs(cpu)
    commitMs += nowMs() - start
    next += inputs.length
    if (next % 100_000 === 0 || next === target) {
      const wall = (nowMs() - chunkAt) / 1000
      const chunk = { to: next, per_s: Math.round((next - chunkFrom) / wall), cpu_per_s: Math.round((next - chunkFrom) / (cpuMs(chunkCpu) / 1000)), load: round(loadavg()[0]!, 1) }
      chunks.push(chunk)
      log(`${next.toLocaleString('en')} notes: ${chunk.per_s}/s wall, ${chunk.cpu_per_s}/s CPU (generation included), load ${chunk.load}`)
      chunkAt = nowMs(); chunkCpu = process.cpuUsage(); chunkFrom = next
    }
  }
  const committed = next - from
  if (next < target) log(`budget spent: stopped at ${next.toLocaleString('en')} of ${target.toLocaleString('en')} notes`)
  return {
    target, reached: next, complete: next === target, batch,
    wall_s: Math.round((nowMs() - t0) / 1000),
    commit_per_s: Math.round(committed / (commitMs / 1000)),
    commit_cpu_per_s: Math.round(committed / (commitCpuMs / 1000)),
    chunks,
  }
}

/** Moves block i (rowid i+1) into workspace i mod W, `batch` notes per `ScopeTable.set` call. */
function spreadScopes(store: BlockStore, notes: number, workspaces: number, batch: number): Record<string, unknown> {
  const t0 = nowMs()
  const cpu = process.cpuUsage()
  const ids = idsInRowidOrder(store, notes)
  for (let w = 0; w < workspaces; w++) {
    const mine: string[] = []
    for (let i = w; i < notes; i += workspaces) mine.push(ids[i]!)
    for (let k = 0; k < mine.length; k += batch) store.scopes.set(mine.slice(k, k + batch), benchWorkspace(w, workspaces))
    log(`workspace ${w + 1} of ${workspaces}: ${mine.length.toLocaleString('en')} notes moved`)
  }
  const counts = store.scopes.counts()
  return { workspaces, wall_s: Math.round((nowMs() - t0) / 1000), cpu_s: Math.round(cpuMs(cpu) / 1000), scope_counts: counts }
}

/** Every block id, index i holding rowid i+1's (read once, through a plain connection beside the store's). */
function idsInRowidOrder(store: BlockStore, notes: number): string[] {
  const db = new DatabaseSync(store.path, { readOnly: true })
  const ids = (db.prepare('SELECT id FROM blocks ORDER BY rowid').all() as Array<{ id: string }>).map((r) => r.id)
  db.close()
  if (ids.length !== notes) throw new Error(`expected ${notes} ids, read ${ids.length}`)
  return ids
}
