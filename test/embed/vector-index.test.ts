import t, { type Test } from 'tap'
import { toBlob } from '../../lib/embed/vector.ts'
import { SignCodes } from '../../lib/embed/sign-codes.ts'
import { APPROXIMATE_FROM, VectorIndex, vectorIndexFor, type VectorHit } from '../../lib/embed/vector-index.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/**
 * The vector index's two paths: the exact scan (always available, `searchExact`, and what `search`
 * uses below `approximateFrom`) and the staged search: a sign-code shortlist, its best rows by int8
 * dot product, those re-ranked exactly. Seeded vectors, real
 * store files. Each guard has a mutation check against a copy of lib/.
 */

const DIMS = 64
const allowAll = () => true
type IndexModule = typeof import('../../lib/embed/vector-index.ts')

function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => ((s = Math.imul(s ^ (s >>> 15), 2246822507) + 0x9e3779b9 >>> 0) / 2 ** 32)
}

/** Unit vectors around `topics` random directions (noise 1.5× a topic's scale), like a sentence model's clusters. */
function topicVectors(count: number, topics: number, seed: number, dims = DIMS): Float32Array[] {
  const next = rng(seed)
  const gauss = () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next())
  const centres = Array.from({ length: topics }, () => new Float32Array(dims).map(gauss))
  return Array.from({ length: count }, () => {
    const c = centres[Math.floor(next() * topics)]!
    const v = new Float32Array(dims).map((_, i) => c[i]! + 1.5 * gauss())
    const n = Math.hypot(...v)
    return v.map((x) => x / n)
  })
}

function storeWith(t: Test, vs: Float32Array[], dims = DIMS): { store: BlockStore, ids: string[] } {
  const store = new BlockStore(tempStorePath('vectors'))
  t.teardown(() => store.close())
  const ids = store.commitMany(vs.map((_, i) => ({ text: `note ${i}` }))).map((r) => r.id)
  store.vectors.put('m', dims, ids.map((blockId, i) => ({ blockId, lang: 'en', vector: toBlob(vs[i]!) })))
  return { store, ids }
}

/** The true top k by a full sort: the reference both paths are held to. */
function reference(vs: Float32Array[], ids: string[], q: Float32Array, k: number, allow: (id: string) => boolean = () => true): string[] {
  const dot = (v: Float32Array) => v.reduce((s, x, i) => s + x * q[i]!, 0)
  return vs.map((v, i) => ({ id: ids[i]!, s: dot(v) })).filter((h) => allow(h.id)).sort((a, b) => b.s - a.s).slice(0, k).map((h) => h.id)
}

function recallAt10(index: VectorIndex, queries: Float32Array[]): number {
  let hit = 0
  for (const q of queries) {
    const truth = new Set(index.searchExact(q, 10, allowAll).map((h) => h.id))
    hit += index.search(q, 10, allowAll).filter((h) => truth.has(h.id)).length
  }
  return hit / (10 * queries.length)
}

const ids = (hits: VectorHit[]) => hits.map((h) => h.id)

t.test('the exact path returns the true top k, best first, and asks allow before a row enters', async (t) => {
  const vs = topicVectors(1500, 20, 1)
  const { store, ids: all } = storeWith(t, vs)
  const index = vectorIndexFor(store, 'm', DIMS)
  t.equal(index.size, 1500)
  const queries = topicVectors(20, 20, 2)
  for (const q of queries) t.same(ids(index.searchExact(q, 10, allowAll)), reference(vs, all, q, 10))
  const hits = index.searchExact(queries[0]!, 10, allowAll)
  t.ok(hits.every((h, i) => i === 0 || hits[i - 1]!.score >= h.score), 'best first')
  const even = new Set(all.filter((_, i) => i % 2 === 0))
  const allowEven = (_lang: string, id: string) => even.has(id)
  t.same(ids(index.searchExact(queries[0]!, 10, allowEven)), reference(vs, all, queries[0]!, 10, (id) => even.has(id)), 'a filter (scope, language) is exact too')
  t.same(ids(index.search(queries[0]!, 10, allowAll)), ids(hits), `below ${APPROXIMATE_FROM} vectors search is the exact scan`)

  const m = mutant({ file: 'embed/vector-index.ts', from: "      if (!allow(this.langs[r]!, this.ids[r]!)) continue\n", to: '' })
  t.teardown(() => m.remove())
  const Mutated = (await m.load<IndexModule>('embed/vector-index.ts')).VectorIndex
  const unfiltered = new Mutated('m', DIMS)
  unfiltered.refresh(store)
  t.ok(ids(unfiltered.searchExact(queries[0]!, 10, allowEven)).some((id) => !even.has(id)), 'mutation: without the allow check rows outside the filter come back')
})

t.test('the staged search (sign codes, int8, exact re-rank) keeps recall@10 ≥ .99 against the exact scan', async (t) => {
  // 256 dims: a code's estimate sharpens with its length; the models in use have 384–512.
  const dims = 256
  const notes = topicVectors(6060, 60, 3, dims)
  const vs = notes.slice(0, 6000)
  const queries = notes.slice(6000)
  const { store } = storeWith(t, vs, dims)
  const index = new VectorIndex('m', dims, { approximateFrom: 0, shortlistMin: 300, rerankMin: 40 })
  index.refresh(store)
  const recall = recallAt10(index, queries)
  t.ok(recall >= 0.99, `recall@10 ${recall}`)

  const codes = new SignCodes(dims)
  const data = new Float32Array(vs.length * dims)
  vs.forEach((v, r) => data.set(v, r * dims))
  codes.sync(data, vs.length)
  const shortlist = codes.nearest(vs[7]!, 300)
  t.ok(shortlist.length >= 300 && shortlist.length < vs.length / 4, `a shortlist, not a scan (${shortlist.length} of ${vs.length})`)
  t.ok(shortlist.includes(7), 'a stored vector is on its own shortlist')
  t.ok(shortlist.every((r, i) => i === 0 || shortlist[i - 1]! < r), 'rows in ascending order')

  // Mutation: a shortlist of only k rows ranks by the codes alone, and recall falls.
  const m = mutant({ file: 'embed/vector-index.ts', from: 'Math.max(this.shortlistMin, SHORTLIST_PER_K * k)', to: 'k' })
  t.teardown(() => m.remove())
  const Mutated = (await m.load<IndexModule>('embed/vector-index.ts')).VectorIndex
  const narrow = new Mutated('m', dims, { approximateFrom: 0, shortlistMin: 300, rerankMin: 40 })
  narrow.refresh(store)
  const mutatedRecall = recallAt10(narrow, queries)
  t.ok(mutatedRecall < 0.99, `mutation: without the re-ranked shortlist recall@10 is ${mutatedRecall}`)

  // Mutation: an exact re-rank of only k rows ranks by the int8 dot product alone, and recall falls.
  const int8Only = mutant({ file: 'embed/vector-index.ts', from: 'Math.max(this.rerankMin, RERANK_PER_K * k)', to: 'k' })
  t.teardown(() => int8Only.remove())
  const Int8Only = (await int8Only.load<IndexModule>('embed/vector-index.ts')).VectorIndex
  const coarse = new Int8Only('m', dims, { approximateFrom: 0, shortlistMin: 300, rerankMin: 40 })
  coarse.refresh(store)
  const int8Recall = recallAt10(coarse, queries)
  t.ok(int8Recall < 0.99, `mutation: without the exact re-rank recall@10 is ${int8Recall}`)
})

t.test('codes follow a growing space: the split is re-taken when the rows grow by a quarter', async (t) => {
  // Four rows around 0, then 396 around 100 in two alternating patterns: only a split re-taken
  // at the new mean tells the patterns apart.
  const data = new Float32Array(400 * 4).map((_, i) => {
    const row = Math.floor(i / 4)
    const sign = (row + i) % 2 === 0 ? 1 : -1
    return row < 4 ? sign : 100 + 10 * sign
  })
  const grow = (codes: SignCodes) => {
    codes.sync(data, 4)
    codes.sync(data, 400)
    return codes.nearest(data.subarray(399 * 4), 1).length
  }
  const codes = new SignCodes(4)
  t.ok(grow(codes) <= 200, 'after the re-take only the query\'s pattern is nearest')
  t.equal(codes.size, 400)
  t.throws(() => codes.sync(data, 399), /sign codes hold 400 rows/, 'codes never silently cover rows that are gone')

  const m = mutant({ file: 'embed/sign-codes.ts', from: 'if (this.rows === 0 || n > this.splitRows * (1 + drift)) {', to: 'if (this.rows === 0) {' })
  t.teardown(() => m.remove())
  const Mutated = (await m.load<typeof import('../../lib/embed/sign-codes.ts')>('embed/sign-codes.ts')).SignCodes
  t.ok(grow(new Mutated(4)) > 390, 'mutation: with the first split kept every new row has the same code')
})

t.test('a forgotten note leaves the approximate index as it leaves the exact one', async (t) => {
  const vs = topicVectors(2000, 20, 5)
  const { store, ids: all } = storeWith(t, vs)
  const index = new VectorIndex('m', DIMS, { approximateFrom: 0, shortlistMin: 200 })
  index.refresh(store)
  const target = all[42]!
  t.equal(index.search(vs[42]!, 1, allowAll)[0]?.id, target, 'found by its own vector before')
  store.forget(target)
  index.refresh(store)
  t.equal(index.size, 1999)
  t.notOk(ids(index.search(vs[42]!, 50, allowAll)).includes(target), 'not on the shortlist path after forget')
  t.notOk(ids(index.searchExact(vs[42]!, 50, allowAll)).includes(target), 'nor on the exact path')

  // Mutation: without the forget epoch the loaded rows (and their codes) keep the forgotten note.
  const m = mutant({ file: 'embed/vector-index.ts', from: ' || store.forgetEpoch !== this.forgetEpoch', to: '' })
  t.teardown(() => m.remove())
  const Mutated = (await m.load<IndexModule>('embed/vector-index.ts')).VectorIndex
  const stale = new Mutated('m', DIMS, { approximateFrom: 0, shortlistMin: 200 })
  stale.refresh(store)
  const other = all[43]!
  stale.search(vs[43]!, 1, allowAll)
  store.forget(other)
  stale.refresh(store)
  t.equal(stale.search(vs[43]!, 1, allowAll)[0]?.id, other, 'mutation: the forgotten note is still found')

  // Mutation: keeping the old codes over a reloaded space is refused, never served.
  const kept = mutant({ file: 'embed/vector-index.ts', from: '      this.signs = new SignCodes(this.dims)\n      this.int8 = new Int8Rows(this.dims)\n    }', to: '    }' })
  t.teardown(() => kept.remove())
  const Kept = (await kept.load<IndexModule>('embed/vector-index.ts')).VectorIndex
  const reused = new Kept('m', DIMS, { approximateFrom: 0, shortlistMin: 200 })
  reused.refresh(store)
  reused.search(vs[44]!, 1, allowAll)
  store.forget(all[44]!)
  reused.refresh(store)
  t.throws(() => reused.search(vs[44]!, 1, allowAll), /sign codes hold/, 'mutation: stale codes would cover a row that is gone')
})

t.test('the exact scan answers when the shortlist cannot: below the threshold, and under a narrow filter', async (t) => {
  const vs = topicVectors(3000, 30, 6)
  const { store, ids: all } = storeWith(t, vs)
  const q = vs[0]!
  // A narrow filter: five notes far from the query (a small scope); none is on its shortlist.
  const far = reference(vs, all, q.map((x) => -x), 5)
  const allowFar = (_lang: string, id: string) => far.includes(id)
  const index = new VectorIndex('m', DIMS, { approximateFrom: 0, shortlistMin: 100 })
  index.refresh(store)
  t.same(ids(index.search(q, 5, allowFar)), ids(index.searchExact(q, 5, allowFar)), 'the five in-scope notes, as the exact scan finds them')
  t.equal(index.search(q, 5, allowFar).length, 5)

  const small = new VectorIndex('m', DIMS, { approximateFrom: 3001, shortlistMin: 1 })
  small.refresh(store)
  const exact = ids(small.searchExact(q, 20, allowAll))
  t.same(ids(small.search(q, 20, allowAll)), exact, 'below approximateFrom: exactly the exact scan')

  const m = mutant({ file: 'embed/vector-index.ts', from: 'if (hits.length >= Math.min(k, n) || rerank.length === n) return hits', to: 'return hits' })
  t.teardown(() => m.remove())
  const Mutated = (await m.load<IndexModule>('embed/vector-index.ts')).VectorIndex
  const noFallback = new Mutated('m', DIMS, { approximateFrom: 0, shortlistMin: 100 })
  noFallback.refresh(store)
  t.ok(noFallback.search(q, 5, allowFar).length < 5, 'mutation: without the fallback a narrow scope loses its notes')

  const always = mutant({ file: 'embed/vector-index.ts', from: 'if (n >= this.approximateFrom) {', to: 'if (true) {' })
  t.teardown(() => always.remove())
  const Always = (await always.load<IndexModule>('embed/vector-index.ts')).VectorIndex
  const approx = new Always('m', DIMS, { approximateFrom: 3001, shortlistMin: 1 })
  approx.refresh(store)
  const probes = topicVectors(20, 30, 99)
  const top1 = (index: VectorIndex) => probes.map((p) => index.search(p, 1, allowAll)[0]?.id)
  t.same(top1(small), probes.map((p) => small.searchExact(p, 1, allowAll)[0]?.id))
  t.notSame(top1(approx), top1(small), 'mutation: without the threshold a small space gets the approximate answer')
})
