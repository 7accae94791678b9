/**
 * `npm run bench:vectors -- [--n 10000,100000] [--dims 384,512] [--queries 200] [--sqlite-vec-dir <dir>] [--json]`
 *
 * Nearest-neighbour latency of the vector side of hybrid recall: the brute-force cosine scan over
 * one contiguous Float32Array (`lib/embed/vector-index.ts`, as recall uses it, loaded from a real
 * store file) against sqlite-vec's `vec0` KNN in the same process, when a folder holding an
 * install of the `sqlite-vec` npm package is given (it is not a dependency of this project).
 * Vectors are random unit vectors with a shared offset (an anisotropic space like real models
 * produce); latency does not depend on their meaning. The last line is one JSON object.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { DatabaseSync } from 'node:sqlite'
import { toBlob } from '../lib/embed/vector.ts'
import { vectorIndexFor } from '../lib/embed/vector-index.ts'
import { BlockStore } from '../lib/store/store.ts'

function args(): { ns: number[], dims: number[], queries: number, vecDir: string } {
  const out = { ns: [10_000, 100_000], dims: [384, 512], queries: 200, vecDir: '' }
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1] ?? ''
    if (argv[i] === '--n') { out.ns = v.split(',').map(Number); i++ }
    else if (argv[i] === '--dims') { out.dims = v.split(',').map(Number); i++ }
    else if (argv[i] === '--queries') { out.queries = Number(v); i++ }
    else if (argv[i] === '--sqlite-vec-dir') { out.vecDir = v; i++ }
  }
  return out
}

function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => ((s = Math.imul(s ^ (s >>> 15), 2246822507) + 0x9e3779b9 >>> 0) / 2 ** 32)
}

function unitVector(next: () => number, offset: Float32Array): Float32Array {
  const v = new Float32Array(offset.length)
  let n = 0
  for (let i = 0; i < v.length; i++) { v[i] = offset[i]! + (next() - 0.5); n += v[i]! * v[i]! }
  for (let i = 0; i < v.length; i++) v[i]! /= Math.sqrt(n)
  return v
}

function quantiles(samples: number[]): { p50_ms: number, p99_ms: number } {
  const s = [...samples].sort((a, b) => a - b)
  const q = (p: number) => Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))]! * 1000) / 1000
  return { p50_ms: q(0.5), p99_ms: q(0.99) }
}

async function main(): Promise<void> {
  const { ns, dims: dimsList, queries, vecDir } = args()
  const results: Array<Record<string, unknown>> = []
  for (const dims of dimsList) {
    for (const n of ns) {
      const next = rng(n + dims)
      const offset = new Float32Array(dims).map(() => (next() - 0.5) * 0.15)
      const dir = mkdtempSync(join(tmpdir(), 'stablemem-bench-vec-'))
      const store = new BlockStore(join(dir, 'v.db'))
      const vectors: Float32Array[] = []
      const batch = 5000
      for (let start = 0; start < n; start += batch) {
        const texts = Array.from({ length: Math.min(batch, n - start) }, (_, i) => `note ${start + i} about topic ${(start + i) % 977}`)
        const ids = store.commitMany(texts.map((text) => ({ text }))).map((r) => r.id)
        const rows = ids.map((blockId) => { const v = unitVector(next, offset); vectors.push(v); return { blockId, lang: 'en', vector: toBlob(v) } })
        store.vectors.put('bench', dims, rows)
      }
      const qs = Array.from({ length: queries }, () => unitVector(next, offset))
      const rssBefore = process.memoryUsage().rss
      let t0 = performance.now()
      const index = vectorIndexFor(store, 'bench', dims)
      const loadMs = performance.now() - t0
      const rssMb = Math.round((process.memoryUsage().rss - rssBefore) / 1e5) / 10
      const allow = () => true
      for (let i = 0; i < 10; i++) index.search(qs[i]!, 100, allow)
      const brute: number[] = []
      for (const q of qs) { t0 = performance.now(); index.search(q, 100, allow); brute.push(performance.now() - t0) }
      const row: Record<string, unknown> = { n, dims, brute_force: { ...quantiles(brute), load_ms: Math.round(loadMs), index_mb: Math.round(n * dims * 4 / 1e5) / 10, rss_delta_mb: rssMb } }
      store.close()
      if (vecDir !== '') row.sqlite_vec = sqliteVec(vecDir, dir, dims, vectors, qs)
      rmSync(dir, { recursive: true, force: true })
      results.push(row)
      process.stdout.write(`${JSON.stringify(row)}\n`)
    }
  }
  process.stdout.write(`${JSON.stringify({ k: 100, queries, results })}\n`)
}

function sqliteVec(vecDir: string, dir: string, dims: number, vectors: Float32Array[], qs: Float32Array[]): Record<string, number> {
  const require = createRequire(join(vecDir, 'package.json'))
  const { getLoadablePath } = require('sqlite-vec') as { getLoadablePath(): string }
  const db = new DatabaseSync(join(dir, 'vec.db'), { allowExtension: true })
  db.loadExtension(getLoadablePath())
  db.exec(`CREATE VIRTUAL TABLE v USING vec0(embedding float[${dims}] distance_metric=cosine)`)
  let t0 = performance.now()
  const insert = db.prepare('INSERT INTO v (rowid, embedding) VALUES (?, ?)')
  db.exec('BEGIN')
  vectors.forEach((v, i) => insert.run(BigInt(i + 1), toBlob(v)))
  db.exec('COMMIT')
  const insertMs = performance.now() - t0
  const knn = db.prepare('SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = 100')
  for (let i = 0; i < 10; i++) knn.all(toBlob(qs[i]!))
  const times: number[] = []
  for (const q of qs) { t0 = performance.now(); knn.all(toBlob(q)); times.push(performance.now() - t0) }
  db.close()
  return { ...quantiles(times), insert_ms: Math.round(insertMs) }
}

if (import.meta.main) await main()
