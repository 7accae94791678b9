/**
 * `npm run bench:forget -- [--blocks 100000] [--forget 10000] [--single 20] [--batch 300] [--commit-blocks 20000] [--queries 300] [--baseline-lib <dir>] [--json]`
 *
 * What forgetting costs and what it leaves, at N blocks (seeded synthetic corpus, bench/corpus.ts),
 * all in one run, each time as wall and CPU time (`process.cpuUsage`; under load CPU time is close
 * to what a quiet machine gives):
 * 1. forgetting one note by id, `--single` times (FTS5's secure delete removes its index entries);
 * 2. the baseline of the previous release, in the same run: the same single forget with the
 *    index's secure-delete off (the delete leaves the terms), then a full rewrite of the index and
 *    the checkpoint, which is what every forget used to cost;
 * 3. forgetting `--batch` notes by id in one call (still the secure-delete way, near break-even);
 * 4. forgetting `--forget` notes by one filter (`{scene}`) in one call (the issue's bound: ≤ 1 s for
 *    10,000 at 100k; the rewrite way, in two phases): the time until the notes are invisible (the
 *    call), then the scrub as a running agent does it (bounded background turns) and the time until
 *    the bytes are gone, checked by searching the file, its WAL and its shared memory for a marker
 *    note's words (also after step 1, whose bytes must be gone at return); with `--baseline-lib <dir>` (the `lib/` of another commit,
 *    e.g. `git archive <commit> lib | tar -x -C .cache/baseline`), first the same forget by that
 *    code on a byte-identical copy of the store, as the baseline of the same run (ratio);
 * 5. recall latency p50/p99 over the same queries before and after the large deletion (ratio);
 * 6. the file size after `vacuum` against a fresh import of the remaining notes into a new file
 *    (also vacuumed, so both are compact), as a ratio;
 * 7. what the index's secure-delete option costs commits: `--commit-blocks` notes committed in
 *    batches of 1,000 into three fresh stores, batch by batch in turn: the index as it is, the same
 *    index with secure-delete off, and the previous release's `contentless_delete` index.
 * With `--json` the last line is one JSON object.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { DatabaseSync } from 'node:sqlite'
import { recallBlocks } from '../lib/recall/recall.ts'
import { indexDeletion } from '../lib/store/forget-index.ts'
import { BACKGROUND_SLICE_MS } from '../lib/store/scrub.ts'
import { exitOnHelp, jsonWanted, progressLog, wholeFlag } from './args.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../lib/store/transfer.ts'
import { QUERY_KINDS, corpus, type QueryKind } from './corpus.ts'
import { cpuMs, nowMs, round, summary } from './stats.ts'

const USAGE = 'npm run bench:forget -- [--blocks 100000] [--forget 10000] [--single 20] [--batch 300] [--commit-blocks 20000] [--queries 300] [--baseline-lib <dir>] [--json]\n\nWhat forgetting costs and what it leaves: one note, a batch of ids, a large forget by filter and its scrub, recall before and after, the file after vacuum (docs/benchmarks.md, "Forget").'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    forget: { type: 'string', default: '10000' },
    single: { type: 'string', default: '20' },
    batch: { type: 'string', default: '300' },
    'commit-blocks': { type: 'string', default: '20000' },
    queries: { type: 'string', default: '300' },
    seed: { type: 'string', default: '20261130' },
    'baseline-lib': { type: 'string' },
    json: { type: 'boolean', default: false },
  },
})
const asJson = jsonWanted(args.json)
const log = progressLog(asJson)
const N = wholeFlag('blocks', args.blocks)
const FORGET = Math.min(wholeFlag('forget', args.forget), Math.floor(N / 2))
const SINGLE = wholeFlag('single', args.single)
const BATCH = wholeFlag('batch', args.batch)
const COMMIT_BLOCKS = wholeFlag('commit-blocks', args['commit-blocks'])
const QUERIES = wholeFlag('queries', args.queries)
const SEED = wholeFlag('seed', args.seed)

const dir = mkdtempSync(join(tmpdir(), 'stablemem-bench-forget-'))
const path = join(dir, 'memory.db')
const gen = corpus(SEED)
const every = Math.floor(N / FORGET)
/** Block i's scene: `doomed` for the notes the filter removes; every other note picks a role in turn. */
const sceneOf = (i: number): string => {
  if (i % every === 0 && i / every < FORGET) return 'doomed'
  const k = Math.floor(i / every) // the k-th run of `every` notes gives one note to each small role
  const role = i % every
  if (role === 1 && k < SINGLE) return 'single'
  if (role === 2 && k < SINGLE) return 'baseline'
  if (role === 3 && k < BATCH) return 'batch'
  return 'kept'
}
if (every < 4 || Math.floor(N / every) < Math.max(SINGLE, BATCH)) throw new Error('--blocks is too small for --forget, --single and --batch')

log(`corpus: ${N} blocks, seed ${SEED}; forgetting ${FORGET} by filter; files in ${dir}`)
const store = new BlockStore(path, { duplicates: 'keep' })
let t0 = nowMs()
for (let from = 0; from < N; from += 1000) {
  const batch = []
  for (let i = from; i < Math.min(N, from + 1000); i++) batch.push({ text: gen.block(i).text, source: 'bench', scene: sceneOf(i) })
  store.commitMany(batch)
}
// Marker notes with words no other note has, one per role that is forgotten, so the raw bytes of the
// file, its WAL and its shared memory can be searched for them after each forget.
const MARKERS = { single: 'xqjsinglemarker Kvöldrimmer 单铭痕', doomed: 'jxqdoomedmarker Ystravelline 毁铭痕' }
for (const [scene, text] of Object.entries(MARKERS)) store.commit({ text: `${text}: a note that must leave no bytes`, source: 'bench', scene })
log(`committed ${store.count()} blocks in ${Math.round(nowMs() - t0)} ms`)

/** Which of a marker's words the store's files still hold (a Latin word by its first 8 letters, lower-cased: the index stems it). */
function bytesLeft(marker: string): string[] {
  const words = marker.split(' ').flatMap((w) => /^[\p{Script=Han}]+$/u.test(w) ? [w] : [w, w.toLowerCase().slice(0, 8)])
  const found: string[] = []
  for (const suffix of ['', '-wal', '-shm']) {
    let bytes: Buffer
    try {
      bytes = readFileSync(path + suffix)
    } catch {
      continue
    }
    for (const word of words) if (bytes.includes(Buffer.from(word, 'utf8'))) found.push(`${word} in ${suffix || 'db'}`)
  }
  return found
}

const queries: string[] = []
for (let q = 0; q < QUERIES; q++) queries.push(gen.query(QUERY_KINDS[q % QUERY_KINDS.length] as QueryKind, Math.floor((q * 7_654_321) % N)))
function recallLatency(): { p50_ms: number, p99_ms: number } {
  for (const q of queries.slice(0, 20)) recallBlocks(store, q, { topK: 5, recordAccess: false }) // warm-up
  const samples: number[] = []
  for (const q of queries) {
    const s = nowMs()
    recallBlocks(store, q, { topK: 5, recordAccess: false })
    samples.push(nowMs() - s)
  }
  return summary(samples)
}

const recallBefore = recallLatency()
log(`recall before: p50 ${recallBefore.p50_ms} ms, p99 ${recallBefore.p99_ms} ms`)

/** Wall and CPU time of `fn`, in ms. */
function timed(fn: () => void): { wall_ms: number, cpu_ms: number } {
  const wall = nowMs()
  const cpu = cpuMs()
  fn()
  return { wall_ms: nowMs() - wall, cpu_ms: cpuMs() - cpu }
}
const perNote = (t: { wall_ms: number, cpu_ms: number }, notes: number) => ({ notes, wall_ms_per_note: round(t.wall_ms / notes, 2), cpu_ms_per_note: round(t.cpu_ms / notes, 2) })
const idsOf = (scene: string) => [...store.allBlocks()].filter((b) => b.scene === scene).map((b) => b.id)

// 1. One id per call, as the model tool or a user deletes one note.
const singles = idsOf('single')
const single = perNote(timed(() => { for (const id of singles) store.forget(id) }), singles.length)
const singleBytesLeft = bytesLeft(MARKERS.single)
log(`one id per call: ${single.notes} notes, ${single.wall_ms_per_note} ms wall, ${single.cpu_ms_per_note} ms CPU per note; marker bytes left at return: ${singleBytesLeft.length === 0 ? 'none' : singleBytesLeft.join(', ')}`)

// 2. The previous release's cost in the same run: the same forget, then a full index rewrite and checkpoint.
const rewriter = new DatabaseSync(path, { timeout: 5000 })
rewriter.exec('PRAGMA secure_delete = ON')
const baselineIds = idsOf('baseline')
const baseline = perNote(timed(() => {
  for (const id of baselineIds) {
    // The previous release's delete left the terms in place (secure-delete off), and its forget rewrote the index.
    rewriter.exec("INSERT INTO blocks_fts (blocks_fts, rank) VALUES ('secure-delete', 0)")
    store.forget(id)
    rewriter.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
    rewriter.exec("INSERT INTO blocks_fts (blocks_fts, rank) VALUES ('secure-delete', 1)")
    rewriter.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()
  }
}), baselineIds.length)
rewriter.close()
log(`baseline (forget + full index rewrite, the previous release): ${baseline.wall_ms_per_note} ms wall, ${baseline.cpu_ms_per_note} ms CPU per note`)

// 3. A batch of ids in one call.
const batchIds = idsOf('batch')
const batchWay = indexDeletion(batchIds.length, store.count())
const batch = perNote(timed(() => { store.forget(batchIds) }), batchIds.length)
log(`${batch.notes} ids in one call (${batchWay}): ${round(batch.wall_ms_per_note * batch.notes, 0)} ms wall, ${round(batch.cpu_ms_per_note * batch.notes, 0)} ms CPU`)

// 4. The large forget by filter: first by the baseline's code on a copy (the WAL is empty after every forget), then by this code.
const filterWay = indexDeletion(FORGET, store.count())
let baselineFilter: { wall_ms: number, cpu_ms: number, lib: string } | undefined
if (args['baseline-lib'] !== undefined) {
  const lib = resolve(args['baseline-lib'])
  const { BlockStore: Baseline } = await import(pathToFileURL(join(lib, 'store', 'store.ts')).href) as { BlockStore: typeof BlockStore }
  const copy = join(dir, 'baseline.db')
  copyFileSync(path, copy)
  const other = new Baseline(copy, { duplicates: 'keep' })
  let forgotten = 0
  baselineFilter = { ...timed(() => { forgotten = other.forget({ scene: 'doomed' }).deleted.length }), lib }
  other.close()
  log(`baseline forget by filter (${lib}): ${forgotten} notes in ${Math.round(baselineFilter.wall_ms)} ms wall, ${Math.round(baselineFilter.cpu_ms)} ms CPU`)
}
let result: ReturnType<typeof store.forget> | undefined
const filter = timed(() => { result = store.forget({ scene: 'doomed' }) })
log(`forget by filter (${filterWay}): ${result!.deleted.length} notes invisible in ${Math.round(filter.wall_ms)} ms wall, ${Math.round(filter.cpu_ms)} ms CPU (bytes pending: ${result!.bytesPending})`)
// Phase 2 as a running agent does it (lib/store/scrub.ts, scrubInBackground): bounded turns that
// yield to the event loop between them, timed from the forget's return until the bytes are gone.
const pendingBytes = bytesLeft(MARKERS.doomed)
const scrubStart = nowMs()
const scrubCpu = cpuMs()
let scrubSlices = 0
let scrubTurns = 0
for (;;) {
  const turn = store.scrub({ budgetMs: BACKGROUND_SLICE_MS, wait: false })
  scrubSlices += turn.slices
  scrubTurns++
  if (!turn.pending) break
  await new Promise((resolve) => setImmediate(resolve))
}
const scrub = { wall_ms: nowMs() - scrubStart, cpu_ms: cpuMs() - scrubCpu }
const scrubbedBytes = bytesLeft(MARKERS.doomed)
log(`scrub: bytes gone ${Math.round(filter.wall_ms + scrub.wall_ms)} ms after the call began (${Math.round(scrub.wall_ms)} ms after it returned, ${Math.round(scrub.cpu_ms)} ms CPU, ${scrubSlices} slices in ${scrubTurns} turns); marker bytes before: ${pendingBytes.length}, after: ${scrubbedBytes.length === 0 ? 'none' : scrubbedBytes.join(', ')}`)

const recallAfter = recallLatency()
log(`recall after: p50 ${recallAfter.p50_ms} ms, p99 ${recallAfter.p99_ms} ms`)

const remaining = store.count()
const vacuum = store.vacuum()
log(`vacuum: ${vacuum.bytesBefore} → ${vacuum.bytesAfter} bytes`)
const lines = [...exportJsonl(store)]
store.close()

const freshPath = join(dir, 'fresh.db')
const fresh = new BlockStore(freshPath, { duplicates: 'keep' })
await importJsonl(fresh, lines)
const freshVacuum = fresh.vacuum()
fresh.close()
log(`fresh import of the ${remaining} remaining notes: ${freshVacuum.bytesBefore} bytes as written, ${freshVacuum.bytesAfter} after vacuum`)

// 7. Commit cost of the index's secure-delete option, three stores in turn, batch by batch.
type Variant = 'secure_delete' | 'without_secure_delete' | 'previous_contentless_delete'
const variants: Record<Variant, string> = {
  secure_delete: '',
  without_secure_delete: "INSERT INTO blocks_fts (blocks_fts, rank) VALUES ('secure-delete', 0);",
  previous_contentless_delete: `DROP TABLE blocks_fts; CREATE VIRTUAL TABLE blocks_fts USING fts5(latin, cjk, content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2');`,
}
const stores = new Map<Variant, BlockStore>()
const spent = new Map<Variant, { wall_ms: number, cpu_ms: number }>()
for (const [variant, sql] of Object.entries(variants) as Array<[Variant, string]>) {
  const variantPath = join(dir, `commit-${variant}.db`)
  new BlockStore(variantPath).close()
  const raw = new DatabaseSync(variantPath)
  raw.exec(sql)
  raw.close()
  stores.set(variant, new BlockStore(variantPath, { duplicates: 'keep' }))
  spent.set(variant, { wall_ms: 0, cpu_ms: 0 })
}
const commitGen = corpus(SEED + 1)
for (let from = 0, turn = 0; from < COMMIT_BLOCKS; from += 1000, turn++) {
  const inputs: Array<{ text: string, source: string }> = []
  for (let i = from; i < Math.min(COMMIT_BLOCKS, from + 1000); i++) inputs.push({ text: commitGen.block(i).text, source: 'bench' })
  const order = [...stores.keys()]
  for (let r = 0; r < turn % order.length; r++) order.push(order.shift()!) // each store goes first in turn
  for (const variant of order) {
    const t = timed(() => { stores.get(variant)!.commitMany(inputs) })
    const total = spent.get(variant)!
    total.wall_ms += t.wall_ms
    total.cpu_ms += t.cpu_ms
  }
}
for (const s of stores.values()) s.close()
const commitCost = Object.fromEntries([...spent].map(([variant, t]) => [variant, {
  per_s_wall: Math.round(COMMIT_BLOCKS / (t.wall_ms / 1000)), cpu_us_per_note: round((t.cpu_ms * 1000) / COMMIT_BLOCKS, 1),
}])) as Record<Variant, { per_s_wall: number, cpu_us_per_note: number }>
const cpuRatio = (variant: Variant) => round(spent.get('secure_delete')!.cpu_ms / spent.get(variant)!.cpu_ms, 3)
log(`commit ${COMMIT_BLOCKS} notes in batches of 1000: ${Object.entries(commitCost).map(([v, c]) => `${v} ${c.per_s_wall}/s, ${c.cpu_us_per_note} µs CPU per note`).join('; ')}`)

const ms = (t: { wall_ms: number, cpu_ms: number }) => ({ wall_ms: Math.round(t.wall_ms), cpu_ms: Math.round(t.cpu_ms) })
const out = {
  blocks: N,
  forgotten: result!.deleted.length,
  forget_filter: { ...ms(filter), index: filterWay, bytes_pending: result!.bytesPending },
  forget_filter_ms: Math.round(filter.wall_ms),
  forget_visible_ms: Math.round(filter.wall_ms),
  scrub: { ...ms(scrub), slices: scrubSlices, turns: scrubTurns, marker_bytes_before: pendingBytes.length, marker_bytes_after: scrubbedBytes },
  bytes_gone_after_return_ms: Math.round(scrub.wall_ms),
  single_marker_bytes_at_return: singleBytesLeft,
  ...(baselineFilter === undefined ? {} : {
    baseline_forget_filter: { wall_ms: Math.round(baselineFilter.wall_ms), cpu_ms: Math.round(baselineFilter.cpu_ms), lib: baselineFilter.lib },
    forget_filter_cpu_ratio_vs_baseline: round(filter.cpu_ms / baselineFilter.cpu_ms, 3),
  }),
  single_id: single,
  baseline_single_with_rewrite: baseline,
  single_speedup_cpu: round(baseline.cpu_ms_per_note / single.cpu_ms_per_note, 1),
  single_speedup_wall: round(baseline.wall_ms_per_note / single.wall_ms_per_note, 1),
  batch_ids: { ...batch, index: batchWay },
  recall_before: recallBefore,
  recall_after: recallAfter,
  recall_p99_ratio_after_before: round(recallAfter.p99_ms / recallBefore.p99_ms, 2),
  file_bytes_before_vacuum: vacuum.bytesBefore,
  file_bytes_after_vacuum: vacuum.bytesAfter,
  fresh_import_bytes: freshVacuum.bytesBefore,
  fresh_import_vacuumed_bytes: freshVacuum.bytesAfter,
  vacuum_vs_fresh_ratio: round(vacuum.bytesAfter / freshVacuum.bytesAfter, 3),
  commit: { blocks: COMMIT_BLOCKS, ...commitCost,
    cpu_ratio_secure_vs_without: cpuRatio('without_secure_delete'), cpu_ratio_secure_vs_previous: cpuRatio('previous_contentless_delete') },
}
if (asJson) console.log(JSON.stringify(out))
else console.log(out)
rmSync(dir, { recursive: true, force: true })
