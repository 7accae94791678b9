/**
 * `npm run bench:perf -- --blocks <N> [--json] [--seed S] [--queries Q] [--turns T] [--cache DIR] [--kinds k1,k2] [--bulk B] [--bulk-only [--rounds R]]`
 *
 * Performance of the store, recall and the per-turn plugin hook at N blocks, against the floor of
 * raw FTS5 over an equivalent bare table measured in the same run. See docs/benchmarks.md.
 *
 * 1. Generates a seeded corpus (bench/corpus.ts) and commits it through `BlockStore` into a fresh
 *    file: the first blocks one commit each, the rest with `commitMany` in batches.
 * 1c. The bulk path: an export of that store restored by `stablemem import`'s path into a new file
 *    (`import_per_s`, `import_vs_floor`, and per CPU second).
 * 1d. The bulk commit path: the same N notes through `commitMany` in batches of `--bulk` (default
 *    100,000; at least `BULK_NOTES`, so the bulk index options apply) into a new file
 *    (`bulk_commit_per_s`, `bulk_vs_floor`, and per CPU second).
 * 2. Builds the floor: a plain `(rowid, text)` table plus an FTS5 table with the same columns,
 *    tokenizer and indexed text, the same connection settings (WAL, synchronous FULL, 64 MiB page
 *    cache), filled with raw prepared statements in one transaction.
 * 3. For each query kind, runs our `recallBlocks` and the raw FTS5 query (the same MATCH
 *    expression, top 10 by bm25, texts joined) alternately, query by query.
 * 3b. Index upkeep: merges the store's full-text index slice by slice as the host does when idle,
 *    timing each slice, then recalls each kind on a copy as built and on the merged store,
 *    alternating query by query; then the merged store against a copy with single commits added
 *    until its index is one segment short of the host's threshold (the most a query seeks between
 *    two idle merges), and what the host's upkeep costs once one more commit makes it due. Steps 4
 *    and 5 read the merged store (`--cache`: use a copy).
 * 4. Runs real agent-loop turns with the plugin mounted on the store and times its pre-step listener.
 * 5. Scopes (`--workspaces W`, default 20; 0 skips): the same N blocks committed into a second file,
 *    block i into workspace i mod W, and each query recalled in the workspace of the block it was
 *    cut from (plus global), alternating with the unscoped recall of the single-scope file of step 1.
 * 6. Scenes (`--scene-count`, default 1000, 0 skips; `--scene-refs`, default 100000): the per-turn
 *    scene resolution and card, wall and CPU time, against the lexical recall of that store.
 * With `--json` the last line is one JSON object with the keys the issue names. Every latency is
 * reported at p50, p99 and p99.9, wall time and this process's CPU time side by side (on a loaded
 * machine CPU time is close to what a quiet one gives).
 *
 * `--bulk-only [--rounds R]` runs the floor's insert (step 2) and step 1d alone, into new files, R
 * times alternating, and prints each round's ratios, each batch's notes per CPU second (what grows
 * with the store) and their median; nothing else is built or measured (docs/decisions.md, D27).
 *
 * `--cache DIR` keeps the files of steps 1, 2 and 5 (and the commit rates measured while building
 * them) in a folder under DIR named for the corpus, batch sizes and schema version, and reuses
 * them on the next run with the same parameters: a million-note store takes minutes to build on a
 * busy two-core machine. The commit rates of a reused build are those measured when it was built
 * (`cached_build: true` in the JSON); a file of an older schema is upgraded when opened, and
 * `--rebuild` builds (and measures) afresh.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { parseArgs } from 'node:util'
import { matchAny } from '../lib/recall/fts-query.ts'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, gateHits } from '../lib/recall/gate.ts'
import type { Hit } from '../lib/recall/types.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import { queryContent, relevance } from '../lib/recall/relevance.ts'
import { analyzeQuery } from '../lib/recall/symbols.ts'
import { GLOBAL_SCOPE } from '../lib/store/scope-key.ts'
import { SCHEMA_VERSION } from '../lib/store/schema.ts'
import { nextMergeScope, UPKEEP_DUE_SEGMENTS } from '../lib/store/fts-upkeep.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../lib/store/transfer.ts'
import { scrubQuery } from '../lib/text/normalize.ts'
import { exitOnHelp, jsonWanted, kindsFlag, progressLog, wholeFlag } from './args.ts'
import { bulkCommit, floorInsert } from './bulk-writes.ts'
import { SCALE_QUERY_KINDS, corpus } from './corpus.ts'
import { measurePreStep } from './prestep.ts'
import { measureSceneCost } from './scene-cost.ts'
import { cpuMs, nowMs, percentile, round, summary, tail } from './stats.ts'
import { benchWorkspace } from './workspaces.ts'

const USAGE = 'npm run bench:perf -- --blocks <N> [--json] [--seed S] [--queries Q] [--turns T] [--single N] [--batch N] [--cache DIR [--rebuild]] [--kinds k1,k2] [--workspaces W] [--scene-count S] [--keep] [--bulk N] [--bulk-only [--rounds R]]\n\nThe store, recall per query kind, the per-turn plugin overhead and writes at N notes, against raw FTS5 in the same run (docs/benchmarks.md).\n--bulk-only: only the floor and the bulk commit path (step 1d), into new files, R rounds alternating.'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '10000' },
    seed: { type: 'string', default: '20261130' },
    queries: { type: 'string', default: '300' },
    turns: { type: 'string', default: '200' },
    single: { type: 'string', default: '1000' },
    batch: { type: 'string', default: '1000' },
    bulk: { type: 'string', default: '100000' },
    workspaces: { type: 'string', default: '20' },
    'scene-count': { type: 'string', default: '1000' },
    'scene-refs': { type: 'string', default: '100000' },
    json: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    cache: { type: 'string', default: '' },
    rebuild: { type: 'boolean', default: false },
    'bulk-only': { type: 'boolean', default: false },
    rounds: { type: 'string', default: '1' },
    kinds: { type: 'string', default: SCALE_QUERY_KINDS.join(',') },
  },
})
const JSON_OUT = jsonWanted(args.json)
const N = wholeFlag('blocks', args.blocks)
const SEED = wholeFlag('seed', args.seed)
const QUERIES = wholeFlag('queries', args.queries)
const TURNS = wholeFlag('turns', args.turns)
const SINGLE = Math.min(N, wholeFlag('single', args.single))
const BATCH = wholeFlag('batch', args.batch)
const BULK = wholeFlag('bulk', args.bulk)
const WORKSPACES = wholeFlag('workspaces', args.workspaces, 0)
const SCENE_COUNT = wholeFlag('scene-count', args['scene-count'], 0)
const SCENE_REFS = wholeFlag('scene-refs', args['scene-refs'], 0)
const WARMUP = 20
const KINDS = kindsFlag(args.kinds)
const ROUNDS = wholeFlag('rounds', args.rounds)
const log = progressLog(JSON_OUT)
const gen = corpus(SEED)

/** The corpus texts of blocks `from` to `to` (exclusive). */
function corpusTexts(from: number, to: number): string[] {
  return Array.from({ length: to - from }, (_, i) => gen.block(from + i).text)
}

if (args['bulk-only']) {
  bulkOnly()
  process.exit(0)
}

/**
 * `--bulk-only`: the floor and step 1d alone, into new files, `--rounds` times alternating (the
 * write rates of a million notes without the rest of the run), each round's ratios and their median.
 */
function bulkOnly(): void {
  const work = mkdtempSync(join(tmpdir(), 'stablemem-bulk-'))
  const rounds: Array<Record<string, number | number[]> & { bulk_vs_floor: number, bulk_vs_floor_cpu: number }> = []
  for (let r = 0; r < ROUNDS; r++) {
    const floorRate = floorInsert(join(work, 'floor.db'), corpusTexts(0, N))
    for (const suffix of ['', '-wal', '-shm']) rmSync(join(work, 'floor.db') + suffix, { force: true })
    const bulk = bulkCommit(join(work, 'bulk.db'), N, BULK, corpusTexts)
    const wall = bulk.perS / floorRate.perS
    const cpu = bulk.cpuPerS / floorRate.cpuPerS
    log(`round ${r + 1}: floor ${Math.round(floorRate.perS)}/s (${Math.round(floorRate.cpuPerS)} per CPU s); bulk (batches of ${BULK}) ${Math.round(bulk.perS)}/s ` +
      `(${Math.round(bulk.cpuPerS)} per CPU s) = ${wall.toFixed(2)}× the floor, ${cpu.toFixed(2)}× per CPU second; ` +
      `batches per CPU s ${bulk.batches.map((b) => Math.round(b.cpuPerS)).join(' ')}; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
    rounds.push({
      floor_commit_per_s: Math.round(floorRate.perS), floor_commit_cpu_per_s: Math.round(floorRate.cpuPerS),
      bulk_commit_per_s: Math.round(bulk.perS), bulk_commit_cpu_per_s: Math.round(bulk.cpuPerS),
      bulk_vs_floor: round(wall, 2), bulk_vs_floor_cpu: round(cpu, 2),
      bulk_batches_cpu_per_s: bulk.batches.map((b) => Math.round(b.cpuPerS)),
      load_avg: loadavg().map((l) => round(l, 1)),
    })
  }
  rmSync(work, { recursive: true, force: true })
  const median = (key: 'bulk_vs_floor' | 'bulk_vs_floor_cpu') => {
    const sorted = rounds.map((r) => r[key]).sort((a, b) => a - b)
    return round((sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2, 2)
  }
  if (JSON_OUT) console.log(JSON.stringify({ blocks: N, bulk_batch: BULK, rounds, bulk_vs_floor: median('bulk_vs_floor'), bulk_vs_floor_cpu: median('bulk_vs_floor_cpu') }))
}

const started = nowMs()
const startedCpu = process.cpuUsage()
const cacheKey = `perf-${N}-seed${SEED}-single${SINGLE}-batch${BATCH}-bulk${BULK}-w${WORKSPACES}-floor2`
const dir = args.cache !== '' ? join(args.cache, cacheKey) : mkdtempSync(join(tmpdir(), 'stablemem-bench-'))
const storePath = join(dir, 'memory.db')
const floorPath = join(dir, 'floor.db')
const scopedPath = join(dir, 'scoped.db')
const metaPath = join(dir, 'build.json')

/** What building the files measured, kept beside them when they are cached. */
interface Build {
  commitPerS: number, batchCommitPerS: number, floorInsertPerS: number, stored: number, schema: number
  /** The same rates per second of this process's CPU time (absent in builds cached before they were measured). */
  batchCommitCpuPerS?: number, floorInsertCpuPerS?: number
  /** Step 1c: `stablemem import`'s path restoring an export of the store into a new file, wall and CPU (absent in older caches). */
  importPerS?: number, importCpuPerS?: number
  /** Step 1d: `commitMany` in batches of `--bulk` into a new file, wall and CPU (absent in older caches). */
  bulkCommitPerS?: number, bulkCommitCpuPerS?: number
  /** Step 1d batch by batch, notes per CPU second: what grows with the store (absent in older caches). */
  bulkBatchesCpuPerS?: number[]
}
const cached = args.cache !== '' && !args.rebuild && existsSync(metaPath)
let build: Build
if (cached) {
  build = JSON.parse(readFileSync(metaPath, 'utf8')) as Build
  log(`corpus: ${N} blocks, seed ${SEED}; reusing the files built in ${dir} at schema version ${build.schema} (opening upgrades them)`)
} else {
  if (args.cache !== '') { rmSync(dir, { recursive: true, force: true }); mkdirSync(dir, { recursive: true }) }
  build = await buildFiles()
  if (args.cache !== '') writeFileSync(metaPath, JSON.stringify(build))
}
const { commitPerS, batchCommitPerS, floorInsertPerS, stored, batchCommitCpuPerS, floorInsertCpuPerS, importPerS, importCpuPerS, bulkCommitPerS, bulkCommitCpuPerS } = build
const dbBytes = statSync(storePath).size
log(`commit: ${SINGLE} single at ${Math.round(commitPerS)}/s; ${N - SINGLE} batched (${BATCH}) at ${Math.round(batchCommitPerS)}/s; ${stored} distinct blocks; file ${(dbBytes / 2 ** 20).toFixed(1)} MB`)
log(`floor: raw insert into bare table + FTS5 at ${Math.round(floorInsertPerS)}/s (our batched commit is ${(batchCommitPerS / floorInsertPerS).toFixed(2)}× of it` +
  (batchCommitCpuPerS !== undefined && floorInsertCpuPerS !== undefined ? `; per CPU second ${(batchCommitCpuPerS / floorInsertCpuPerS).toFixed(2)}×)` : ')'))
if (importPerS !== undefined && importCpuPerS !== undefined && floorInsertCpuPerS !== undefined) {
  log(`import of the export into a new file at ${Math.round(importPerS)}/s (${(importPerS / floorInsertPerS).toFixed(2)}× the floor; per CPU second ${(importCpuPerS / floorInsertCpuPerS).toFixed(2)}×)`)
}
if (bulkCommitPerS !== undefined && bulkCommitCpuPerS !== undefined && floorInsertCpuPerS !== undefined) {
  log(`bulk commit (batches of ${BULK}) into a new file at ${Math.round(bulkCommitPerS)}/s (${(bulkCommitPerS / floorInsertPerS).toFixed(2)}× the floor; per CPU second ${(bulkCommitCpuPerS / floorInsertCpuPerS).toFixed(2)}×)`)
}

/** Steps 1, 2 and the scoped file of step 5: every file the run reads, with the write rates measured on the way. */
async function buildFiles(): Promise<Build> {
  // 1. Commit through the package's own path.
  log(`corpus: ${N} blocks, seed ${SEED}; files in ${dir}`)
  const store = new BlockStore(storePath)
  let t0 = nowMs()
  for (let i = 0; i < SINGLE; i++) store.commit({ text: gen.block(i).text, source: 'bench' })
  const singleMs = nowMs() - t0
  let batchMs = 0
  let batchCpuMs = 0
  for (let from = SINGLE; from < N; from += BATCH) {
    const inputs = []
    for (let i = from; i < Math.min(N, from + BATCH); i++) inputs.push({ text: gen.block(i).text, source: 'bench' })
    t0 = nowMs()
    const cpu0 = process.cpuUsage()
    store.commitMany(inputs)
    batchCpuMs += cpuMs(cpu0)
    batchMs += nowMs() - t0
  }
  const stored = store.count()
  store.close()

  // 2. The floor: the same indexed text in a bare table, raw statements, one transaction
  // (bench/bulk-writes.ts). The corpus is generated before the timing, as it is for every commit
  // path measured here (the floor timed the generator until issue 30's bulk path: about a sixth of
  // its CPU time at 100k).
  const { perS: floorInsertPerS, cpuPerS: floorInsertCpuPerS } = floorInsert(floorPath, Array.from({ length: N }, (_, i) => gen.block(i).text))

  // 1c. The bulk path: an export of the store restored by the import path into a new file (every
  // guarantee: ids checked, near-duplicate keys, secrets, memberships, counts), timed without the
  // reading of the export and without the closing index merge `stablemem import` adds.
  const source = new BlockStore(storePath, { readOnly: true })
  const exported = [...exportJsonl(source)]
  source.close()
  const importPath = join(dir, 'imported.db')
  const importer = new BlockStore(importPath)
  t0 = nowMs()
  const importCpu0 = process.cpuUsage()
  const imported = await importJsonl(importer, exported, { secrets: 'allow' })
  const importMs = nowMs() - t0
  const importCpuMs = cpuMs(importCpu0)
  importer.close()
  for (const suffix of ['', '-wal', '-shm']) rmSync(importPath + suffix, { force: true })
  if (imported.failure !== undefined) throw new Error(`import failed at line ${imported.failure.line}: ${imported.failure.message}`)

  // 1d. The bulk commit path: the same notes through `commitMany` in batches of `--bulk`, into a new file.
  const bulk = bulkCommit(join(dir, 'bulk.db'), N, BULK, corpusTexts)
  if (bulk.stored !== stored) throw new Error(`the bulk path stored ${bulk.stored} notes, the batched path ${stored}`)

  // 5's file: the same N blocks, block i in workspace i mod W.
  if (WORKSPACES > 0) {
    const writer = new BlockStore(scopedPath)
    for (let from = 0; from < N; from += BATCH) {
      const inputs = []
      for (let i = from; i < Math.min(N, from + BATCH); i++) inputs.push({ text: gen.block(i).text, source: 'bench', scope: workspaceOf(i) })
      writer.commitMany(inputs)
    }
    writer.close()
  }
  return {
    commitPerS: SINGLE / (singleMs / 1000),
    batchCommitPerS: N > SINGLE ? (N - SINGLE) / (batchMs / 1000) : Number.NaN,
    floorInsertPerS,
    batchCommitCpuPerS: N > SINGLE ? (N - SINGLE) / (batchCpuMs / 1000) : Number.NaN,
    floorInsertCpuPerS,
    importPerS: imported.blocksCreated / (importMs / 1000),
    importCpuPerS: imported.blocksCreated / (importCpuMs / 1000),
    bulkCommitPerS: bulk.perS,
    bulkCommitCpuPerS: bulk.cpuPerS,
    bulkBatchesCpuPerS: bulk.batches.map((b) => Math.round(b.cpuPerS)),
    stored,
    schema: SCHEMA_VERSION,
  }
}

/** The workspace block i is committed into in the scoped file (bench/workspaces.ts). */
function workspaceOf(i: number): string {
  return benchWorkspace(i, WORKSPACES)
}

const floor = new DatabaseSync(floorPath)
floor.exec('PRAGMA cache_size = -65536')
let t0 = nowMs()
const floorQuery = floor.prepare(`SELECT b.rowid, b.text FROM (SELECT rowid, bm25(f) AS s FROM f WHERE f MATCH ? ORDER BY s LIMIT 10) AS m
  JOIN b ON b.rowid = m.rowid ORDER BY m.s`)

// 3. Recall vs the floor, per query kind, alternating.
const reader = new BlockStore(storePath)
// The context line asks for the note count on every step: the first call counts, later ones hit the cache.
t0 = nowMs()
reader.count()
const countMs = nowMs() - t0
t0 = nowMs()
reader.count()
log(`note count for the context line: ${countMs.toFixed(3)} ms counted, ${(nowMs() - t0).toFixed(3)} ms cached`)
/** Wall-time quantiles plus the same quantiles of CPU time. */
type Timing = ReturnType<typeof tail> & { cpu_p50_ms: number, cpu_p99_ms: number, cpu_p999_ms: number }
const timing = (wall: readonly number[], cpu: readonly number[]): Timing => {
  const c = tail(cpu)
  return { ...tail(wall), cpu_p50_ms: c.p50_ms, cpu_p99_ms: c.p99_ms, cpu_p999_ms: c.p999_ms }
}
const recall: Record<string, Timing> = {}
const baseline: Record<string, Timing> = {}
const withoutGate: Record<string, { p50_ms: number, p99_ms: number }> = {}
const gateOverhead: Record<string, number> = {}
const gateWork: Record<string, number> = {}
// CPU time (process.cpuUsage, µs resolution) beside wall time: under load it stays close to a quiet machine's.
const gateCpu: Record<string, { recall_p50_ms: number, without_gate_p50_ms: number, overhead_p50_ms: number, overhead_balanced_p50_ms: number, work_p50_ms: number }> = {}
const ratios: number[] = []
const gate = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
const floorRatiosP99: Record<string, number> = {}
for (const kind of KINDS) {
  const ours: number[] = []
  const oursCpu: number[] = []
  const ungated: number[] = []
  const work: number[] = []
  const ungatedCpu: number[] = []
  const workCpu: number[] = []
  const raw: number[] = []
  const rawCpu: number[] = []
  let empty = 0
  let hitSum = 0
  for (let q = 0; q < WARMUP + QUERIES; q++) {
    const query = gen.query(kind, Math.floor((q * 7_654_321) % N))
    const match = matchAny(analyzeQuery(scrubQuery(query)))
    // Ours is the injection path: recall with each hit's relevance, then the gate.
    const runOurs = () => {
      const cpu = process.cpuUsage()
      const start = nowMs()
      const hits = recallBlocks(reader, query, { topK: 5 })
      gateHits(hits, gate)
      const ms = nowMs() - start
      if (q >= WARMUP) { ours.push(ms); oursCpu.push(cpuMs(cpu)); hitSum += hits.length; if (hits.length === 0) empty++ }
    }
    // The same recall with no relevance computed and no gate: the gate's cost is the difference
    // (the median of the per-query differences).
    let ungatedHits: Hit[] = []
    const runUngated = () => {
      const cpu = process.cpuUsage()
      const start = nowMs()
      ungatedHits = recallBlocks(reader, query, { topK: 5, relevance: false })
      const ms = nowMs() - start
      if (q >= WARMUP) { ungated.push(ms); ungatedCpu.push(cpuMs(cpu)) }
    }
    // The gate's own work, timed alone on the hits of the recall that just ran without it: what
    // recall adds for the gate (the query's parts weighed from the counts recall just read, both
    // sides of each returned hit's relevance, the notes' own counts not yet read) and the gate.
    // Less exposed to the machine's load than a difference of two recalls.
    const runWork = () => {
      const text = scrubQuery(query)
      const analysis = analyzeQuery(text)
      const cpu = process.cpuUsage()
      const before = nowMs()
      const content = queryContent(reader, analysis, text)
      gateHits(ungatedHits.map((h) => ({ ...h, relevance: relevance(content, h.text) })), gate)
      const ms = nowMs() - before
      if (q >= WARMUP) { work.push(ms); workCpu.push(cpuMs(cpu)) }
    }
    const runRaw = () => {
      const cpu = process.cpuUsage()
      const start = nowMs()
      if (match !== '') floorQuery.all(match)
      const ms = nowMs() - start
      if (q >= WARMUP) { raw.push(ms); rawCpu.push(cpuMs(cpu)) }
    }
    // Alternating order, so that neither side always finds the other's counts cached; the gate's
    // work alone is timed on the odd queries, before the full path has read the notes' counts.
    if (q % 2 === 0) { runOurs(); runUngated(); runRaw() } else { runRaw(); runUngated(); runWork(); runOurs() }
  }
  recall[kind] = timing(ours, oursCpu)
  withoutGate[kind] = summary(ungated)
  // Paired per query (both runs of one query are adjacent), so a burst of load hits both sides.
  gateOverhead[kind] = round(percentile(ours.map((ms, i) => ms - ungated[i]!), 50), 3)
  gateWork[kind] = round(percentile(work, 50), 3)
  gateCpu[kind] = {
    recall_p50_ms: round(percentile(oursCpu, 50), 3),
    without_gate_p50_ms: round(percentile(ungatedCpu, 50), 3),
    overhead_p50_ms: round(percentile(oursCpu.map((ms, i) => ms - ungatedCpu[i]!), 50), 3),
    // The run that goes first pays for reading the query's pages and counts; the order alternates,
    // so the mean of the two orders' medians cancels that cost (the plain median only mixes them).
    overhead_balanced_p50_ms: round(balancedOverhead(oursCpu, ungatedCpu), 3),
    work_p50_ms: round(percentile(workCpu, 50), 3),
  }
  baseline[kind] = timing(raw, rawCpu)
  ratios.push(percentile(ours, 50) / percentile(raw, 50))
  floorRatiosP99[kind] = round(percentile(ours, 99) / percentile(raw, 99), 2)
  log(`recall ${kind.padEnd(20)} p50 ${recall[kind].p50_ms.toFixed(3)} ms  p99 ${recall[kind].p99_ms.toFixed(3)} ms  p99.9 ${recall[kind].p999_ms.toFixed(3)} ms ` +
    `(cpu p99 ${recall[kind].cpu_p99_ms.toFixed(3)} ms) | ` +
    `raw FTS5 p50 ${baseline[kind].p50_ms.toFixed(3)} ms  p99 ${baseline[kind].p99_ms.toFixed(3)} ms (cpu p99 ${baseline[kind].cpu_p99_ms.toFixed(3)} ms) | ` +
    `ratio p50 ${(percentile(ours, 50) / percentile(raw, 50)).toFixed(2)} | gate +${gateOverhead[kind]!.toFixed(3)} ms at p50 (its own work ${gateWork[kind]!.toFixed(3)} ms; CPU +${gateCpu[kind]!.overhead_p50_ms.toFixed(3)}, order-balanced +${gateCpu[kind]!.overhead_balanced_p50_ms.toFixed(3)} / ${gateCpu[kind]!.work_p50_ms.toFixed(3)} ms) | mean hits ${(hitSum / QUERIES).toFixed(1)}, empty ${empty}`)
}
reader.close()
floor.close()

/** The gate's CPU cost per query: the mean of the paired differences' medians over the queries where the gated run went first and those where it went second. */
function balancedOverhead(gated: readonly number[], ungated: readonly number[]): number {
  const first: number[] = []
  const second: number[] = []
  gated.forEach((ms, i) => ((i + WARMUP) % 2 === 0 ? first : second).push(ms - ungated[i]!))
  return (percentile(first, 50) + percentile(second, 50)) / 2
}
const ratioP50 = Math.max(...ratios)

// 3b. Index upkeep (lib/store/fts-upkeep.ts): the store's index as built (as many segments as its
// commits left) against the same file merged into one segment, query by query in alternating order;
// the merge itself timed slice by slice, as the host runs it. The later steps read the merged store.
const builtDir = mkdtempSync(join(tmpdir(), 'stablemem-built-'))
const builtPath = join(builtDir, 'memory.db')
copyFileSync(storePath, builtPath)
/** Upkeep as the host runs it (lib/plugin/index-upkeep.ts): the scope `mergeDue` picks, then the next one `nextMergeScope` gives (the host's own order); every slice timed. */
function hostUpkeep(store: BlockStore) {
  const wall: number[] = []
  const cpuSamples: number[] = []
  const scopes: string[] = []
  const startCpu = process.cpuUsage()
  const start = nowMs()
  for (let scope = store.mergeDue(false); scope !== undefined; scope = nextMergeScope(scope, (levelsDone) => store.mergeDue(levelsDone))) {
    scopes.push(scope)
    for (let outcome = 'merged'; outcome === 'merged' && store.ftsSegments() > 1;) {
      const cpu = process.cpuUsage()
      const t0 = nowMs()
      outcome = store.upkeepSlice({ wait: false, scope })
      wall.push(nowMs() - t0)
      cpuSamples.push(cpuMs(cpu))
    }
  }
  return { wall, cpu: cpuSamples, scopes, wallMs: nowMs() - start, cpuMs: cpuMs(startCpu), segments: store.ftsSegments() }
}
const upkeeper = new BlockStore(storePath)
const segmentsBuilt = upkeeper.ftsSegments()
const merge = hostUpkeep(upkeeper)
const { wall: sliceWall, cpu: sliceCpu, wallMs: upkeepWallMs, cpuMs: upkeepCpuMs, segments: segmentsMerged } = merge
upkeeper.close()
log(`upkeep: ${segmentsBuilt} → ${segmentsMerged} segments in ${sliceWall.length} slices, ${upkeepWallMs.toFixed(0)} ms wall, ${upkeepCpuMs.toFixed(0)} ms CPU; ` +
  `slice p50 ${percentile(sliceWall, 50).toFixed(2)} ms  p99 ${percentile(sliceWall, 99).toFixed(2)} ms  max ${Math.max(...sliceWall).toFixed(1)} ms (cpu p99 ${percentile(sliceCpu, 99).toFixed(2)} ms)`)
/** Recall per kind on two stores, alternating query by query: wall and CPU quantiles of each, and the p99 ratio b / a. */
function alternate(a: BlockStore, b: BlockStore, label: (kind: string, ta: Timing, tb: Timing, ratio: number) => string) {
  const out = { a: {} as Record<string, Timing>, b: {} as Record<string, Timing>, ratioP99: {} as Record<string, number> }
  for (const kind of KINDS) {
    const samples = { a: [] as number[], aCpu: [] as number[], b: [] as number[], bCpu: [] as number[] }
    for (let q = 0; q < WARMUP + QUERIES; q++) {
      const query = gen.query(kind, Math.floor((q * 7_654_321) % N))
      const run = (store: BlockStore, wall: number[], cpuSamples: number[]) => {
        const cpu = process.cpuUsage()
        const start = nowMs()
        gateHits(recallBlocks(store, query, { topK: 5 }), gate)
        const ms = nowMs() - start
        if (q >= WARMUP) { wall.push(ms); cpuSamples.push(cpuMs(cpu)) }
      }
      if (q % 2 === 0) { run(a, samples.a, samples.aCpu); run(b, samples.b, samples.bCpu) }
      else { run(b, samples.b, samples.bCpu); run(a, samples.a, samples.aCpu) }
    }
    out.a[kind] = timing(samples.a, samples.aCpu)
    out.b[kind] = timing(samples.b, samples.bCpu)
    out.ratioP99[kind] = round(percentile(samples.b, 99) / percentile(samples.a, 99), 2)
    log(label(kind, out.a[kind], out.b[kind], out.ratioP99[kind]))
  }
  return out
}
const quantiles = (x: Timing) => `p50 ${x.p50_ms.toFixed(3)}  p99 ${x.p99_ms.toFixed(3)}  p99.9 ${x.p999_ms.toFixed(3)} ms`
const builtReader = new BlockStore(builtPath)
const mergedReader = new BlockStore(storePath)
const upkeepAB = alternate(builtReader, mergedReader, (kind, built, merged, ratio) =>
  `upkeep A/B ${kind.padEnd(20)} as built (${segmentsBuilt} segments) ${quantiles(built)} | merged ${quantiles(merged)} | ratio p99 ${ratio.toFixed(2)}`)
builtReader.close()
// Between two host merges: the merged store plus single commits (new corpus notes) until the index
// is one segment short of the host's threshold, the most a query seeks while the host is idle.
const betweenPath = join(builtDir, 'between.db')
copyFileSync(storePath, betweenPath)
const betweenStore = new BlockStore(betweenPath)
let betweenCommits = 0
while (betweenStore.ftsSegments() < UPKEEP_DUE_SEGMENTS - 1) betweenStore.commit({ text: gen.block(N + betweenCommits++).text, source: 'bench' })
const segmentsBetween = betweenStore.ftsSegments()
const betweenAB = alternate(mergedReader, betweenStore, (kind, merged, between, ratio) =>
  `between merges ${kind.padEnd(20)} merged ${quantiles(merged)} | ${segmentsBetween} segments after ${betweenCommits} commits ${quantiles(between)} | ratio p99 ${ratio.toFixed(2)}`)
// The next commit makes the host's upkeep due: what it then costs (the small segments merge with each other).
betweenStore.commit({ text: gen.block(N + betweenCommits++).text, source: 'bench' })
const segmentsDue = betweenStore.ftsSegments()
const tidy = hostUpkeep(betweenStore)
log(`host upkeep at ${segmentsDue} segments: ${tidy.scopes.join(' then ')}, ${tidy.wall.length} slices, ${tidy.wallMs.toFixed(1)} ms wall, ${tidy.cpuMs.toFixed(1)} ms CPU → ${tidy.segments} segments`)
betweenStore.close()
mergedReader.close()
rmSync(builtDir, { recursive: true, force: true })
const ftsUpkeep = {
  segments_built: segmentsBuilt,
  segments_after: segmentsMerged,
  slices: sliceWall.length,
  wall_ms: round(upkeepWallMs, 1),
  cpu_ms: round(upkeepCpuMs, 1),
  slice: { ...timing(sliceWall, sliceCpu), max_ms: round(Math.max(...sliceWall), 2) },
  recall_built: upkeepAB.a,
  recall_merged: upkeepAB.b,
  ratio_p99_merged_vs_built: upkeepAB.ratioP99,
  scopes: merge.scopes,
  between_merges: {
    segments: segmentsBetween, commits: betweenCommits - 1, recall: betweenAB.b, recall_merged: betweenAB.a, ratio_p99_vs_merged: betweenAB.ratioP99,
    host_upkeep: { segments_before: segmentsDue, scopes: tidy.scopes, slices: tidy.wall.length, wall_ms: round(tidy.wallMs, 1), cpu_ms: round(tidy.cpuMs, 1), segments_after: tidy.segments },
  },
}

// 4. Per-turn overhead in a real agent loop.
const turnQueries: string[] = []
for (let i = 0; i < WARMUP + TURNS; i++) turnQueries.push(gen.query(KINDS[i % KINDS.length]!, Math.floor((i * 1_234_567) % N)))
const pre = await measurePreStep(storePath, turnQueries.slice(WARMUP), WARMUP)
const prestep = tail(pre.overheadMs)
const prestepCpu = tail(pre.overheadCpuMs)
log(`pre-step overhead over ${pre.overheadMs.length} turns: p50 ${prestep.p50_ms.toFixed(3)} ms  p99 ${prestep.p99_ms.toFixed(3)} ms  p99.9 ${prestep.p999_ms.toFixed(3)} ms ` +
  `(cpu p50 ${prestepCpu.p50_ms.toFixed(3)} ms  p99 ${prestepCpu.p99_ms.toFixed(3)} ms  p99.9 ${prestepCpu.p999_ms.toFixed(3)} ms); ${pre.injected}/${pre.turns} turns got notes`)

// 5. Scopes: W workspaces over the same total, recall within one workspace + global.
const scoped: Record<string, { p50_ms: number, p99_ms: number }> = {}
const single: Record<string, { p50_ms: number, p99_ms: number }> = {}
const scopedRatios: number[] = []
if (WORKSPACES > 0) {
  const scopedReader = new BlockStore(scopedPath)
  const singleReader = new BlockStore(storePath)
  for (const kind of KINDS) {
    const inScope: number[] = []
    const whole: number[] = []
    for (let q = 0; q < WARMUP + QUERIES; q++) {
      const target = Math.floor((q * 7_654_321) % N)
      const query = gen.query(kind, target)
      // The workspace of the block the query was cut from: a question asked where its answer was saved.
      const scopes = [GLOBAL_SCOPE, workspaceOf(gen.source(kind, target))]
      const runScoped = () => { const start = nowMs(); recallBlocks(scopedReader, query, { topK: 5, scopes }); if (q >= WARMUP) inScope.push(nowMs() - start) }
      const runSingle = () => { const start = nowMs(); recallBlocks(singleReader, query, { topK: 5 }); if (q >= WARMUP) whole.push(nowMs() - start) }
      if (q % 2 === 0) { runScoped(); runSingle() } else { runSingle(); runScoped() }
    }
    scoped[kind] = summary(inScope)
    single[kind] = summary(whole)
    scopedRatios.push(percentile(inScope, 99) / percentile(whole, 99))
    log(`scoped ${kind.padEnd(20)} ${WORKSPACES} workspaces × ${Math.round(N / WORKSPACES)}: p50 ${scoped[kind].p50_ms.toFixed(3)} ms  p99 ${scoped[kind].p99_ms.toFixed(3)} ms | ` +
      `single scope p50 ${single[kind].p50_ms.toFixed(3)} ms  p99 ${single[kind].p99_ms.toFixed(3)} ms | ratio p99 ${(percentile(inScope, 99) / percentile(whole, 99)).toFixed(2)}`)
  }
  scopedReader.close()
  singleReader.close()
}

// 6. Scene cost (bench/scene-cost.ts): resolving a turn's scene and its card at many scenes; --scene-count 0 skips.
const sceneCost = SCENE_COUNT > 0 ? await measureSceneCost({ scenes: SCENE_COUNT, refs: SCENE_REFS, samples: QUERIES, log }) : undefined

const rssMb = process.resourceUsage().maxRSS / 1024
log(`peak RSS ${rssMb.toFixed(0)} MB`)
if (!args.keep && args.cache === '') rmSync(dir, { recursive: true, force: true })
const elapsedS = (nowMs() - started) / 1000
log(`whole run ${elapsedS.toFixed(0)} s wall, ${(cpuMs(startedCpu) / 1000).toFixed(0)} s CPU; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)

const result = {
  blocks: N,
  commit_per_s: Math.round(commitPerS),
  batch_commit_per_s: Math.round(batchCommitPerS),
  floor_commit_per_s: Math.round(floorInsertPerS),
  batch_vs_floor: round(batchCommitPerS / floorInsertPerS, 2),
  // Per second of CPU time: on a loaded machine close to what a quiet one gives (wall rates are not).
  batch_commit_cpu_per_s: batchCommitCpuPerS === undefined ? null : Math.round(batchCommitCpuPerS),
  floor_commit_cpu_per_s: floorInsertCpuPerS === undefined ? null : Math.round(floorInsertCpuPerS),
  batch_vs_floor_cpu: batchCommitCpuPerS === undefined || floorInsertCpuPerS === undefined ? null : round(batchCommitCpuPerS / floorInsertCpuPerS, 2),
  import_per_s: importPerS === undefined ? null : Math.round(importPerS),
  import_vs_floor: importPerS === undefined ? null : round(importPerS / floorInsertPerS, 2),
  import_cpu_per_s: importCpuPerS === undefined ? null : Math.round(importCpuPerS),
  import_vs_floor_cpu: importCpuPerS === undefined || floorInsertCpuPerS === undefined ? null : round(importCpuPerS / floorInsertCpuPerS, 2),
  bulk_batch: BULK,
  bulk_commit_per_s: bulkCommitPerS === undefined ? null : Math.round(bulkCommitPerS),
  bulk_vs_floor: bulkCommitPerS === undefined ? null : round(bulkCommitPerS / floorInsertPerS, 2),
  bulk_commit_cpu_per_s: bulkCommitCpuPerS === undefined ? null : Math.round(bulkCommitCpuPerS),
  bulk_vs_floor_cpu: bulkCommitCpuPerS === undefined || floorInsertCpuPerS === undefined ? null : round(bulkCommitCpuPerS / floorInsertCpuPerS, 2),
  bulk_batches_cpu_per_s: build.bulkBatchesCpuPerS ?? null,
  cached_build: cached,
  built_at_schema: build.schema,
  count_first_ms: round(countMs),
  db_mb: round(dbBytes / 2 ** 20, 1),
  rss_mb: Math.round(rssMb),
  recall,
  baseline,
  fts_upkeep: ftsUpkeep,
  ratio_p50: round(ratioP50, 2),
  ratio_p99_vs_floor: floorRatiosP99,
  recall_without_gate: withoutGate,
  gate_overhead_p50_ms: gateOverhead,
  gate_work_p50_ms: gateWork,
  gate_cpu: gateCpu,
  prestep_p50_ms: prestep.p50_ms,
  prestep_p99_ms: prestep.p99_ms,
  prestep_p999_ms: prestep.p999_ms,
  prestep_cpu_p50_ms: prestepCpu.p50_ms,
  prestep_cpu_p99_ms: prestepCpu.p99_ms,
  prestep_cpu_p999_ms: prestepCpu.p999_ms,
  elapsed_s: Math.round(elapsedS),
  cpu_s: Math.round(cpuMs(startedCpu) / 1000),
  load_avg: loadavg().map((l) => round(l, 1)),
  ...(sceneCost === undefined ? {} : { scene_cost: sceneCost }),
  ...(WORKSPACES > 0 ? { scopes: { workspaces: WORKSPACES, recall: scoped, single_scope: single, ratio_p99_max: round(Math.max(...scopedRatios), 2) } } : {}),
}
if (JSON_OUT) console.log(JSON.stringify(result))
