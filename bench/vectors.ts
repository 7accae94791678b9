/**
 * `npm run bench:vectors -- [--n 10000,100000] [--dims 512] [--data uniform,topics] [--queries 300]
 *   [--k 100] [--shortlist 1024,4096] [--rerank 1024] [--usearch-dir <dir>] [--hnsw] [--sqlite-vec-dir <dir>] [--json]`
 *
 * Nearest-neighbour search for the vector side of hybrid recall, every candidate side by side in one
 * process on the same vectors (loaded from a real store file) and the same queries:
 * - `exact`: the brute-force cosine scan over one contiguous Float32Array (`VectorIndex.searchExact`),
 *   the baseline every ratio is taken against;
 * - `staged`: what recall uses (`VectorIndex.search`): a shortlist by sign codes against the query's
 *   weighted signs, its best rows by int8 dot product, those re-ranked with the exact cosine (the
 *   default sizes, then each `--shortlist` size with the default re-rank and each `--rerank` size with
 *   the default shortlist, as `staged_s<shortlist>_r<rerank>`);
 * - `sign_exact`: the same shortlist re-ranked exactly with no int8 stage (D14's stages);
 * - `hamming_pass`: the first stage alone, D14's plain-JS Hamming pass against the SIMD weighted pass:
 *   CPU time and the share of the exact top 10 on the shortlist;
 * - `int8_wasm_full`: no codes, the int8 SIMD kernel over every row, its best re-ranked exactly;
 * - `int8_js`: the same scan in plain JS over an Int8Array with integer sums (no re-rank), to show what
 *   int8 buys without SIMD;
 * - with `--usearch-dir` (a folder holding `npm i usearch@2.26.2`; not a dependency of this project):
 *   `usearch_exact_i8`, its SIMD int8 exact scan, and with `--hnsw` its HNSW index (f16, connectivity 16,
 *   expansion_add 64, built with 2 threads), searched at expansion 64 and 256;
 * - with `--sqlite-vec-dir` (a folder holding `npm i sqlite-vec@0.1.9`): sqlite-vec's `vec0` KNN.
 * Each query asks for k neighbours (hybrid recall asks 100). recall_at_10 / recall_at_k is the share of
 * the exact top 10 / top k that a candidate returns in its own top 10 / top k. Times are per query:
 * wall and CPU (`process.cpuUsage`, the figure that holds under load), p50 / p99 / p99.9.
 * Two vector sets: `uniform`, random unit vectors with a shared offset (no neighbourhood structure at
 * all: the worst case for any shortlist), and `topics`, 1,000 random topic directions with each note
 * its topic plus Gaussian noise 1.5× the topic's scale (same-topic cosine ≈ 0.3, other topics ≈ 0),
 * closer to what sentence models produce. The last line is one JSON object.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { DatabaseSync } from 'node:sqlite'
import { toBlob } from '../lib/embed/vector.ts'
import { Int8Rows } from '../lib/embed/int8-rows.ts'
import { SignCodes } from '../lib/embed/sign-codes.ts'
import { RERANK_MIN, RERANK_PER_K, SHORTLIST_MIN, SHORTLIST_PER_K, VectorIndex } from '../lib/embed/vector-index.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exitOnHelp } from './args.ts'

interface Args {
  ns: number[]
  dims: number[]
  data: string[]
  queries: number
  k: number
  shortlists: number[]
  reranks: number[]
  usearchDir: string
  hnsw: boolean
  vecDir: string
}

function args(): Args {
  exitOnHelp('npm run bench:vectors -- [--n 10000,100000] [--dims 512] [--data uniform,topics] [--queries 300] [--k 100] [--shortlist 1024,4096] [--rerank 1024] [--usearch-dir <dir>] [--hnsw] [--sqlite-vec-dir <dir>] [--json]\n\nNearest-neighbour search for hybrid recall: the staged search and the other candidates against the exact scan, same vectors and queries (docs/decisions.md D14, D15).')
  const out: Args = { ns: [10_000, 100_000], dims: [512], data: ['uniform', 'topics'], queries: 300, k: 100, shortlists: [1024, 4096], reranks: [1024], usearchDir: '', hnsw: false, vecDir: '' }
  const argv = process.argv.slice(2)
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1] ?? ''
    if (argv[i] === '--n') { out.ns = v.split(',').map(Number); i++ }
    else if (argv[i] === '--dims') { out.dims = v.split(',').map(Number); i++ }
    else if (argv[i] === '--data') { out.data = v.split(','); i++ }
    else if (argv[i] === '--queries') { out.queries = Number(v); i++ }
    else if (argv[i] === '--k') { out.k = Number(v); i++ }
    else if (argv[i] === '--shortlist') { out.shortlists = v.split(',').filter(Boolean).map(Number); i++ }
    else if (argv[i] === '--rerank') { out.reranks = v.split(',').filter(Boolean).map(Number); i++ }
    else if (argv[i] === '--usearch-dir') { out.usearchDir = v; i++ }
    else if (argv[i] === '--hnsw') out.hnsw = true
    else if (argv[i] === '--sqlite-vec-dir') { out.vecDir = v; i++ }
  }
  for (const d of out.data) if (d !== 'uniform' && d !== 'topics') throw new Error(`--data: unknown set ${d} (uniform, topics)`)
  return out
}

function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => ((s = Math.imul(s ^ (s >>> 15), 2246822507) + 0x9e3779b9 >>> 0) / 2 ** 32)
}

function gaussian(next: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())
}

/** A generator of unit vectors of one set. */
function vectorSet(kind: string, dims: number, seed: number): () => Float32Array {
  const next = rng(seed)
  const normalise = (v: Float32Array) => {
    let n = 0
    for (let i = 0; i < v.length; i++) n += v[i]! * v[i]!
    for (let i = 0; i < v.length; i++) v[i]! /= Math.sqrt(n)
    return v
  }
  if (kind === 'uniform') {
    const offset = new Float32Array(dims).map(() => (next() - 0.5) * 0.15)
    return () => normalise(new Float32Array(dims).map((_, i) => offset[i]! + (next() - 0.5)))
  }
  const topics = Array.from({ length: 1000 }, () => new Float32Array(dims).map(() => gaussian(next)))
  return () => {
    const topic = topics[Math.floor(next() * topics.length)]!
    return normalise(new Float32Array(dims).map((_, i) => topic[i]! + 1.5 * gaussian(next)))
  }
}

interface Timed {
  wall: number[]
  cpu: number[]
}

function timed(): Timed {
  return { wall: [], cpu: [] }
}

function measure<T>(into: Timed, fn: () => T): T {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  const out = fn()
  into.wall.push(performance.now() - t0)
  const c = process.cpuUsage(c0)
  into.cpu.push((c.user + c.system) / 1000)
  return out
}

function quantiles(samples: number[]): { p50: number, p99: number, p999: number } {
  const s = [...samples].sort((a, b) => a - b)
  const q = (p: number) => Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))]! * 1000) / 1000
  return { p50: q(0.5), p99: q(0.99), p999: q(0.999) }
}

function summary(t: Timed): Record<string, number> {
  const w = quantiles(t.wall)
  const c = quantiles(t.cpu)
  return { p50_ms: w.p50, p99_ms: w.p99, p999_ms: w.p999, cpu_p50_ms: c.p50, cpu_p99_ms: c.p99, cpu_p999_ms: c.p999 }
}

/** Share of the exact top `m` that `got`'s top `m` holds, over all queries. */
function recallAt(m: number, exact: number[][], got: number[][]): number {
  let hit = 0
  let total = 0
  exact.forEach((truth, q) => {
    const want = new Set(truth.slice(0, m))
    for (const r of got[q]!.slice(0, m)) if (want.has(r)) hit++
    total += want.size
  })
  return Math.round(hit / total * 10000) / 10000
}

interface Cell {
  vectors: Float32Array[]
  qs: Float32Array[]
  k: number
  exact: number[][]
  exactCpuP99: number
}

function candidate(cell: Cell, timing: Timed, rows: number[][], extra: Record<string, unknown> = {}): Record<string, unknown> {
  const s = summary(timing)
  return {
    ...s,
    recall_at_10: recallAt(10, cell.exact, rows),
    recall_at_k: recallAt(cell.k, cell.exact, rows),
    cpu_p99_ratio: Math.round(s.cpu_p99_ms! / cell.exactCpuP99 * 1000) / 1000,
    ...extra,
  }
}

async function main(): Promise<void> {
  const a = args()
  const results: Array<Record<string, unknown>> = []
  const loadStart = loadavg()[0]!
  for (const dims of a.dims) {
    for (const n of a.ns) {
      for (const kind of a.data) {
        const row = runCell(a, kind, n, dims)
        results.push(row)
        process.stdout.write(`${JSON.stringify(row)}\n`)
      }
    }
  }
  process.stdout.write(`${JSON.stringify({ k: a.k, queries: a.queries, shortlist_default: SHORTLIST_MIN, rerank_default: RERANK_MIN, load_start: loadStart, load_end: loadavg()[0], results })}\n`)
}

function runCell(a: Args, kind: string, n: number, dims: number): Record<string, unknown> {
  const make = vectorSet(kind, dims, n + dims)
  const dir = mkdtempSync(join(tmpdir(), 'stablemem-bench-vec-'))
  const store = new BlockStore(join(dir, 'v.db'))
  const vectors: Float32Array[] = []
  const rowOfId = new Map<string, number>()
  for (let start = 0; start < n; start += 5000) {
    const texts = Array.from({ length: Math.min(5000, n - start) }, (_, i) => `note ${start + i} about topic ${(start + i) % 977}`)
    const ids = store.commitMany(texts.map((text) => ({ text }))).map((r) => r.id)
    const rows = ids.map((blockId) => {
      const v = make()
      rowOfId.set(blockId, vectors.length)
      vectors.push(v)
      return { blockId, lang: 'en', vector: toBlob(v) }
    })
    store.vectors.put('bench', dims, rows)
  }
  const qs = Array.from({ length: a.queries }, make)
  const k = a.k
  const allow = () => true
  const rowsOf = (hits: Array<{ id: string }>) => hits.map((h) => rowOfId.get(h.id)!)

  const t0 = performance.now()
  const index = new VectorIndex('bench', dims, { approximateFrom: 0 })
  index.refresh(store)
  const loadMs = performance.now() - t0
  // The first approximate query codes every row: the one-off cost after a load (or a forget).
  const codesT = timed()
  measure(codesT, () => index.search(qs[0]!, k, allow))
  for (let i = 0; i < 10; i++) { index.searchExact(qs[i]!, k, allow); index.search(qs[i]!, k, allow) }

  const exactT = timed()
  const exact = qs.map((q) => rowsOf(measure(exactT, () => index.searchExact(q, k, allow))))
  const cell: Cell = { vectors, qs, k, exact, exactCpuP99: quantiles(exactT.cpu).p99 }
  const out: Record<string, unknown> = {
    n, dims, data: kind, load_ms: Math.round(loadMs), index_mb: Math.round(n * dims * 4 / 1e5) / 10,
    sign_codes_mb: Math.round(n * Math.ceil(dims / 128) * 16 / 1e5) / 10, int8_mb: Math.round(n * Math.ceil(dims / 16) * 16 / 1e5) / 10, first_query_cpu_ms: Math.round(codesT.cpu[0]!), load_avg: loadavg()[0],
    exact: { ...summary(exactT), recall_at_10: 1, recall_at_k: 1 },
  }
  const shortlist = Math.max(SHORTLIST_MIN, SHORTLIST_PER_K * k)
  const rerank = Math.max(RERANK_MIN, RERANK_PER_K * k)
  const stagedT = timed()
  out.staged = candidate(cell, stagedT, qs.map((q) => rowsOf(measure(stagedT, () => index.search(q, k, allow)))), { shortlist, rerank })
  const variants = [...a.shortlists.map((s) => [s, rerank]), ...a.reranks.map((r) => [shortlist, r])]
  for (const [s, r] of variants) {
    const variant = new VectorIndex('bench', dims, { approximateFrom: 0, shortlistMin: s, rerankMin: r })
    variant.refresh(store)
    variant.search(qs[0]!, k, allow)
    const t = timed()
    out[`staged_s${s}_r${r}`] = candidate(cell, t, qs.map((q) => rowsOf(measure(t, () => variant.search(q, k, allow)))), { shortlist: Math.max(s!, SHORTLIST_PER_K * k), rerank: Math.max(r!, RERANK_PER_K * k) })
  }
  // The previous default's stages (sign codes, then the exact cosine of the whole shortlist), on the SIMD codes.
  const signOnly = new VectorIndex('bench', dims, { approximateFrom: 0, shortlistMin: SHORTLIST_MIN, rerankMin: Number.MAX_SAFE_INTEGER })
  signOnly.refresh(store)
  signOnly.search(qs[0]!, k, allow)
  const signT = timed()
  out.sign_exact = candidate(cell, signT, qs.map((q) => rowsOf(measure(signT, () => signOnly.search(q, k, allow)))), { shortlist })
  out.int8_wasm_full = int8WasmFull(cell, rerank)
  out.hamming_pass = hammingPass(cell, shortlist)
  store.close()
  out.int8_js = int8Js(cell)
  if (a.usearchDir !== '') Object.assign(out, usearch(a, cell, dims))
  if (a.vecDir !== '') out.sqlite_vec = sqliteVec(a.vecDir, dir, cell, dims)
  rmSync(dir, { recursive: true, force: true })
  return out
}

/** Rows in `rows` re-ranked by the exact dot product: the top k, best first. */
function exactTop(cell: Cell, q: Float32Array, rows: Int32Array): number[] {
  const scored = Array.from(rows, (r) => {
    const v = cell.vectors[r]!
    let s = 0
    for (let i = 0; i < v.length; i++) s += v[i]! * q[i]!
    return { r, s }
  })
  return scored.sort((x, y) => y.s - x.s).slice(0, cell.k).map((h) => h.r)
}

function packed(cell: Cell): Float32Array {
  const dims = cell.vectors[0]!.length
  const data = new Float32Array(cell.vectors.length * dims)
  cell.vectors.forEach((v, r) => data.set(v, r * dims))
  return data
}

/** No sign codes: the int8 kernel over every row, its best `rerank` re-ranked exactly. */
function int8WasmFull(cell: Cell, rerank: number): Record<string, unknown> {
  const rows = new Int8Rows(cell.vectors[0]!.length)
  rows.sync(packed(cell), cell.vectors.length)
  const all = Int32Array.from({ length: cell.vectors.length }, (_, r) => r)
  const stage = timed()
  const t = timed()
  const got = cell.qs.map((q) => measure(t, () => exactTop(cell, q, measure(stage, () => rows.best(q, all, rerank)))))
  const s = summary(stage)
  return candidate(cell, t, got, { rerank, int8_stage_cpu_p50_ms: s.cpu_p50_ms, int8_stage_cpu_p99_ms: s.cpu_p99_ms })
}

/**
 * The first stage alone over every code, for the same queries: the previous plain-JS Hamming pass
 * (32-bit words, SWAR popcount, the query reduced to its own sign code) against `SignCodes.nearest`
 * (the query's signs and 4-bit weights, the WebAssembly kernel, the histogram cut). `recall_at_10`
 * here is the share of the exact top 10 on the shortlist: the ceiling for everything after it.
 */
function hammingPass(cell: Cell, shortlist: number): Record<string, unknown> {
  const dims = cell.vectors[0]!.length
  const n = cell.vectors.length
  const codes = new SignCodes(dims)
  codes.sync(packed(cell), n)
  const words = Math.ceil(dims / 32)
  const mean = new Float64Array(dims)
  for (const v of cell.vectors) for (let i = 0; i < dims; i++) mean[i]! += v[i]! / n
  const encode = (v: Float32Array, out: Int32Array, at: number) => {
    for (let i = 0; i < dims; i++) if (v[i]! > Math.fround(mean[i]!)) out[at + (i >> 5)]! |= 1 << (i & 31)
  }
  const js = new Int32Array(n * words)
  cell.vectors.forEach((v, r) => encode(v, js, r * words))
  const distances = new Uint32Array(n)
  const jsPass = (query: Float32Array): Int32Array => {
    const q = new Int32Array(words)
    encode(query, q, 0)
    const histogram = new Int32Array(dims + 1)
    for (let r = 0, o = 0; r < n; r++, o += words) {
      let d = 0
      for (let w0 = 0; w0 < words; w0 += 31) {
        let bytes = 0
        const end = Math.min(words, w0 + 31)
        for (let w = w0; w < end; w++) {
          let x = js[o + w]! ^ q[w]!
          x -= (x >>> 1) & 0x55555555
          x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
          bytes += (x + (x >>> 4)) & 0x0f0f0f0f
        }
        const halves = (bytes & 0x00ff00ff) + ((bytes >>> 8) & 0x00ff00ff)
        d += (halves & 0xffff) + (halves >>> 16)
      }
      distances[r] = d
      histogram[d]!++
    }
    let cut = 0
    for (let taken = histogram[0]!; taken < shortlist && cut < dims; taken += histogram[++cut]!);
    const out: number[] = []
    for (let r = 0; r < n; r++) if (distances[r]! <= cut) out.push(r)
    return Int32Array.from(out)
  }
  const jsT = timed()
  const simdT = timed()
  const contained = (rows: Int32Array, q: number) => {
    const on = new Set(rows)
    return cell.exact[q]!.slice(0, 10).filter((r) => on.has(r)).length
  }
  let jsHits = 0
  let simdHits = 0
  cell.qs.forEach((q, i) => {
    jsHits += contained(measure(jsT, () => jsPass(q)), i)
    simdHits += contained(measure(simdT, () => codes.nearest(q, shortlist)), i)
  })
  const j = summary(jsT)
  const w = summary(simdT)
  const share = (hits: number) => Math.round(hits / (10 * cell.qs.length) * 10000) / 10000
  return {
    shortlist,
    js_hamming: { cpu_p50_ms: j.cpu_p50_ms, cpu_p99_ms: j.cpu_p99_ms, recall_at_10: share(jsHits) },
    simd_weighted: { cpu_p50_ms: w.cpu_p50_ms, cpu_p99_ms: w.cpu_p99_ms, recall_at_10: share(simdHits) },
    cpu_p99_ratio: Math.round(w.cpu_p99_ms! / j.cpu_p99_ms! * 1000) / 1000,
  }
}

/** The scan in plain JS over int8 rows (scale 127 / largest component), integer sums, top k by that score. */
function int8Js(cell: Cell): Record<string, unknown> {
  const { vectors, qs, k } = cell
  const dims = vectors[0]!.length
  let max = 0
  for (const v of vectors) for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(v[i]!))
  const scale = 127 / max
  const quantise = (v: Float32Array) => Int8Array.from(v, (x) => Math.max(-127, Math.min(127, Math.round(x * scale))))
  const data = new Int8Array(vectors.length * dims)
  vectors.forEach((v, r) => data.set(quantise(v), r * dims))
  const t = timed()
  const rows = qs.map((query) => measure(t, () => {
    const q = quantise(query)
    const topIdx = new Int32Array(k).fill(-1)
    const topScore = new Float64Array(k).fill(-Infinity)
    for (let r = 0, off = 0; r < vectors.length; r++, off += dims) {
      let s = 0
      for (let i = 0; i < dims; i++) s = (s + data[off + i]! * q[i]!) | 0
      if (s <= topScore[k - 1]!) continue
      let p = k - 1
      while (p > 0 && topScore[p - 1]! < s) { topScore[p] = topScore[p - 1]!; topIdx[p] = topIdx[p - 1]!; p-- }
      topScore[p] = s
      topIdx[p] = r
    }
    return [...topIdx].filter((r) => r >= 0)
  }))
  return candidate(cell, t, rows)
}

interface UsearchModule {
  Index: new (config: Record<string, unknown>) => {
    add(keys: BigUint64Array, vectors: Float32Array, threads: number): void
    search(vector: Float32Array, k: number, threads: number): { keys: BigUint64Array }
    save(path: string): void
    load(path: string): void
  }
  exactSearch(dataset: Int8Array, query: Int8Array, dims: number, k: number, metric: string, threads: number): { keys: BigUint64Array }
}

/** usearch's SIMD int8 exact scan and (with --hnsw) its HNSW index, one query thread each. */
function usearch(a: Args, cell: Cell, dims: number): Record<string, unknown> {
  const require = createRequire(join(a.usearchDir, 'package.json'))
  const u = require('usearch') as UsearchModule
  const { vectors, qs, k } = cell
  const out: Record<string, unknown> = {}
  const toI8 = (v: Float32Array) => Int8Array.from(v, (x) => Math.max(-127, Math.min(127, Math.round(x * 127 / 0.25))))
  const data = new Int8Array(vectors.length * dims)
  vectors.forEach((v, r) => data.set(toI8(v), r * dims))
  const te = timed()
  out.usearch_exact_i8 = candidate(cell, te, qs.map((q) => [...measure(te, () => u.exactSearch(data, toI8(q), dims, k, 'cos', 1)).keys].map(Number)))
  if (!a.hnsw) return out
  const flat = new Float32Array(vectors.length * dims)
  vectors.forEach((v, r) => flat.set(v, r * dims))
  const keys = BigUint64Array.from({ length: vectors.length }, (_, i) => BigInt(i))
  const config = { dimensions: dims, metric: 'cos', quantization: 'f16', connectivity: 16, expansion_add: 64 }
  const index = new u.Index({ ...config, expansion_search: 64 })
  const build = timed()
  measure(build, () => index.add(keys, flat, 2))
  const file = join(tmpdir(), `stablemem-bench-hnsw-${process.pid}.usearch`)
  index.save(file)
  for (const expansion of [64, 256]) {
    const view = new u.Index({ ...config, expansion_search: expansion })
    view.load(file)
    const t = timed()
    out[`usearch_hnsw_ef${expansion}`] = candidate(cell, t, qs.map((q) => [...measure(t, () => view.search(q, k, 1)).keys].map(Number)),
      { build_wall_s: Math.round(build.wall[0]! / 100) / 10, build_cpu_s: Math.round(build.cpu[0]! / 100) / 10 })
  }
  rmSync(file, { force: true })
  return out
}

function sqliteVec(vecDir: string, dir: string, cell: Cell, dims: number): Record<string, unknown> {
  const require = createRequire(join(vecDir, 'package.json'))
  const { getLoadablePath } = require('sqlite-vec') as { getLoadablePath(): string }
  const db = new DatabaseSync(join(dir, 'vec.db'), { allowExtension: true })
  db.loadExtension(getLoadablePath())
  db.exec(`CREATE VIRTUAL TABLE v USING vec0(embedding float[${dims}] distance_metric=cosine)`)
  const insert = db.prepare('INSERT INTO v (rowid, embedding) VALUES (?, ?)')
  db.exec('BEGIN')
  cell.vectors.forEach((v, i) => insert.run(BigInt(i + 1), toBlob(v)))
  db.exec('COMMIT')
  const knn = db.prepare(`SELECT rowid FROM v WHERE embedding MATCH ? AND k = ${cell.k}`)
  const t = timed()
  const rows = cell.qs.map((q) => (measure(t, () => knn.all(toBlob(q))) as Array<{ rowid: number }>).map((r) => Number(r.rowid) - 1))
  db.close()
  return candidate(cell, t, rows)
}

if (import.meta.main) await main()
