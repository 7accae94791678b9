import t from 'tap'
import { ANOMALY_THRESHOLD, MIN_SAMPLES, refreshCentroid, usableCentroid } from '../../lib/embed/centroid.ts'
import { toBlob } from '../../lib/embed/vector.ts'
import { VectorIndex } from '../../lib/embed/vector-index.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'

const DIMS = 16

function rng(seed: number): () => number {
  let s = seed
  return () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32)
}

/** Unit vectors around a shared direction (an anisotropic space, like real sentence models) or isotropic ones. */
function vectors(count: number, anisotropic: boolean, seed: number): Float32Array[] {
  const next = rng(seed)
  return Array.from({ length: count }, () => {
    const v = new Float32Array(DIMS).map((_, i) => (anisotropic && i === 0 ? 3 : 0) + (next() - 0.5))
    const n = Math.hypot(...v)
    return v.map((x) => x / n)
  })
}

function fill(store: BlockStore, vs: Float32Array[], from = 0): string[] {
  const ids = store.commitMany(vs.map((_, i) => ({ text: `note ${from + i}` }))).map((r) => r.id)
  store.vectors.put('m', DIMS, ids.map((blockId, i) => ({ blockId, lang: 'en', vector: toBlob(vs[i]!) })))
  return ids
}

t.test('centring is used only when the mean is large, the sample big enough and the centroid fresh', (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  fill(store, vectors(MIN_SAMPLES - 1, true, 1))
  t.equal(refreshCentroid(store, 'm', DIMS), false, 'too few samples: no centroid')
  fill(store, vectors(9, true, 2), 100)
  t.equal(refreshCentroid(store, 'm', DIMS), true)
  const mean = usableCentroid(store, 'm', DIMS)
  t.ok(mean && Math.hypot(...mean) >= ANOMALY_THRESHOLD, 'anisotropic space: centroid in use')
  t.equal(refreshCentroid(store, 'm', DIMS), false, 'fresh: not rebuilt')
  fill(store, vectors(10, true, 3), 200)
  t.equal(usableCentroid(store, 'm', DIMS), null, 'library grew by 25 %: stale, not used')
  t.equal(refreshCentroid(store, 'm', DIMS), true, 'and rebuilt on the next refresh')
  t.not(usableCentroid(store, 'm', DIMS), null)
  t.end()
})

t.test('an isotropic space is not centred', (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  fill(store, vectors(64, false, 4))
  refreshCentroid(store, 'm', DIMS)
  t.equal(usableCentroid(store, 'm', DIMS), null)
  t.end()
})

t.test('centring separates neighbours in an anisotropic space (and the index without it does not)', (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const vs = vectors(64, true, 5)
  const ids = fill(store, vs)
  const plain = new VectorIndex('m', DIMS)
  plain.refresh(store)
  refreshCentroid(store, 'm', DIMS)
  const centred = new VectorIndex('m', DIMS)
  centred.refresh(store)
  t.equal(plain.centred, false)
  t.equal(centred.centred, true)
  const all = () => true
  const a = plain.search(vs[7]!, 64, all)
  const b = centred.search(vs[7]!, 64, all)
  t.equal(a[0]!.id, ids[7])
  t.equal(b[0]!.id, ids[7])
  t.ok(b[0]!.score > 0.999, 'a vector still matches itself fully')
  const meanOthers = (hits: Array<{ score: number }>) => hits.slice(1).reduce((s, h) => s + h.score, 0) / (hits.length - 1)
  t.ok(meanOthers(a) > 0.8, `uncentred: unrelated notes average ${meanOthers(a).toFixed(3)} (everything looks alike)`)
  t.ok(Math.abs(meanOthers(b)) < 0.2, `centred: they average ${meanOthers(b).toFixed(3)}`)
  plain.refresh(store)
  t.equal(plain.centred, true, 'a refresh picks up the new centroid and reloads')
  t.end()
})

t.test('the scan is exact for any dimension (the unrolled loop keeps its tail)', (t) => {
  for (const dims of [5, 7, 8]) {
    const store = new BlockStore(tempStorePath())
    const next = rng(dims)
    const vs = Array.from({ length: 20 }, () => {
      const v = new Float32Array(dims).map(() => next() - 0.5)
      const n = Math.hypot(...v)
      return v.map((x) => x / n)
    })
    const ids = store.commitMany(vs.map((_, i) => ({ text: `v${i}` }))).map((r) => r.id)
    store.vectors.put('m', dims, ids.map((blockId, i) => ({ blockId, lang: 'en', vector: toBlob(vs[i]!) })))
    const index = new VectorIndex('m', dims)
    index.refresh(store)
    const q = vs[3]!
    const naive = vs.map((v, i) => ({ id: ids[i]!, score: v.reduce((s, x, j) => s + x * q[j]!, 0) })).sort((a, b) => b.score - a.score).slice(0, 5)
    const got = index.search(q, 5, () => true)
    t.same(got.map((h) => h.id), naive.map((h) => h.id), `dims ${dims}: same neighbours`)
    t.ok(got.every((h, i) => Math.abs(h.score - naive[i]!.score) < 1e-5), `dims ${dims}: same scores`)
    store.close()
  }
  t.end()
})
