/**
 * `npm run bench:forget -- [--blocks 100000] [--forget 10000] [--queries 300] [--json]`
 *
 * What forgetting costs and what it leaves, at N blocks (seeded synthetic corpus, bench/corpus.ts),
 * all in one run:
 * 1. forgetting `--forget` notes by one filter (`{scene}`), in one call: total ms (the issue's
 *    bound: ≤ 1 s for 10,000 at 100k), beside the baseline of forgetting notes one id per call
 *    (`--single` of them, extrapolated per note), which is what a client without a filter does;
 * 2. forgetting one note at N blocks (the index rewrite makes it cost about the same as many);
 * 3. recall latency p50/p99 over the same queries before and after the large deletion (ratio);
 * 4. the file size after `vacuum` against a fresh import of the remaining notes into a new file
 *    (also vacuumed, so both are compact), as a ratio.
 * With `--json` the last line is one JSON object.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { recallBlocks } from '../lib/recall/recall.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../lib/store/transfer.ts'
import { QUERY_KINDS, corpus, type QueryKind } from './corpus.ts'
import { nowMs, round, summary } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    forget: { type: 'string', default: '10000' },
    single: { type: 'string', default: '20' },
    queries: { type: 'string', default: '300' },
    seed: { type: 'string', default: '20261130' },
    json: { type: 'boolean', default: false },
  },
})
const positive = (name: 'blocks' | 'forget' | 'single' | 'queries' | 'seed'): number => {
  const value = Number(args[name])
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer, got ${String(args[name])}`)
  return value
}
const N = positive('blocks')
const FORGET = Math.min(positive('forget'), Math.floor(N / 2))
const SINGLE = positive('single')
const QUERIES = positive('queries')
const SEED = positive('seed')
const log = (line: string) => (args.json ? console.error : console.log)(line)

const dir = mkdtempSync(join(tmpdir(), 'stablemem-bench-forget-'))
const path = join(dir, 'memory.db')
const gen = corpus(SEED)
const every = Math.floor(N / FORGET)
/** Block i's scene: `doomed` for the FORGET notes the filter removes, `single` for the one-by-one baseline. */
const sceneOf = (i: number) => (i % every === 0 && i / every < FORGET ? 'doomed' : i % every === 1 && (i - 1) / every < SINGLE ? 'single' : 'kept')

log(`corpus: ${N} blocks, seed ${SEED}; forgetting ${FORGET} by filter; files in ${dir}`)
const store = new BlockStore(path, { duplicates: 'keep' })
let t0 = nowMs()
for (let from = 0; from < N; from += 1000) {
  const batch = []
  for (let i = from; i < Math.min(N, from + 1000); i++) batch.push({ text: gen.block(i).text, source: 'bench', scene: sceneOf(i) })
  store.commitMany(batch)
}
log(`committed ${store.count()} blocks in ${Math.round(nowMs() - t0)} ms`)

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

// Baseline: one id per call, as a client without filters would delete.
const singles = [...store.allBlocks()].filter((b) => b.scene === 'single').map((b) => b.id)
t0 = nowMs()
for (const id of singles) store.forget(id)
const singleMs = nowMs() - t0
const perNoteMs = singleMs / singles.length
log(`baseline: ${singles.length} notes one id per call in ${Math.round(singleMs)} ms (${perNoteMs.toFixed(1)} ms per note; ${FORGET} would take ≈ ${Math.round(perNoteMs * FORGET)} ms)`)

t0 = nowMs()
const result = store.forget({ scene: 'doomed' })
const filterMs = nowMs() - t0
log(`forget by filter: ${result.deleted.length} notes in ${Math.round(filterMs)} ms (WAL cleared: ${result.walCleared})`)

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

const out = {
  blocks: N,
  forgotten: result.deleted.length,
  forget_filter_ms: Math.round(filterMs),
  baseline_one_by_one: { notes: singles.length, total_ms: Math.round(singleMs), per_note_ms: round(perNoteMs, 2), extrapolated_ms: Math.round(perNoteMs * FORGET) },
  speedup_vs_one_by_one: round((perNoteMs * FORGET) / filterMs, 1),
  recall_before: recallBefore,
  recall_after: recallAfter,
  recall_p99_ratio_after_before: round(recallAfter.p99_ms / recallBefore.p99_ms, 2),
  file_bytes_before_vacuum: vacuum.bytesBefore,
  file_bytes_after_vacuum: vacuum.bytesAfter,
  fresh_import_bytes: freshVacuum.bytesBefore,
  fresh_import_vacuumed_bytes: freshVacuum.bytesAfter,
  vacuum_vs_fresh_ratio: round(vacuum.bytesAfter / freshVacuum.bytesAfter, 3),
}
if (args.json) console.log(JSON.stringify(out))
else console.log(out)
rmSync(dir, { recursive: true, force: true })
