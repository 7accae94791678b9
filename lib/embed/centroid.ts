import type { BlockStore } from '../store/store.ts'
import { fromBlob, toBlob } from './vector.ts'

/** Below this ‖mean‖ the space is already spread out and centring only amplifies noise (HologramAgent: 0.6). */
export const ANOMALY_THRESHOLD = 0.6
/** A centroid is used only while the vector count is within this ratio of its sample count (HologramAgent: 0.2). */
export const REBUILD_RATIO = 0.2
/** Fewer vectors than this give no centroid: the mean of a handful of notes is those notes, and centring would erase them. */
export const MIN_SAMPLES = 32

/**
 * The library mean to subtract before cosine, or null when centring should not happen: no
 * centroid, too few samples, stale (the library grew or shrank by more than 20 % since it was
 * built), or not anomalous (‖mean‖ < 0.6). Stale is not an error; recall just skips centring.
 */
export function usableCentroid(store: BlockStore, model: string, dims: number): Float32Array | null {
  const stored = store.vectors.centroid(model, dims)
  if (!stored || stored.sampleCount < MIN_SAMPLES) return null
  const current = store.vectors.count(model, dims)
  if (Math.abs(current - stored.sampleCount) / stored.sampleCount > REBUILD_RATIO) return null
  const mean = fromBlob(stored.vector)
  if (mean.length !== dims || meanLength(mean) < ANOMALY_THRESHOLD) return null
  return mean
}

/**
 * Rebuilds the stored centroid when it is missing or stale, from every vector of the space.
 * Called after vectors are written; cheap when nothing changed enough (one count query).
 * Returns true when it rebuilt.
 */
export function refreshCentroid(store: BlockStore, model: string, dims: number): boolean {
  const count = store.vectors.count(model, dims)
  if (count < MIN_SAMPLES) return false
  const stored = store.vectors.centroid(model, dims)
  if (stored && stored.sampleCount > 0 && Math.abs(count - stored.sampleCount) / stored.sampleCount <= REBUILD_RATIO) return false
  const sum = new Float64Array(dims)
  let n = 0
  let after = 0
  for (let page = store.vectors.since(model, dims, 0, 4096); page.length > 0; page = store.vectors.since(model, dims, after, 4096)) {
    for (const row of page) {
      after = row.seq
      const v = fromBlob(row.vector)
      if (v.length !== dims) continue
      for (let i = 0; i < dims; i++) sum[i]! += v[i]!
      n++
    }
  }
  if (n === 0) return false
  const mean = new Float32Array(dims)
  for (let i = 0; i < dims; i++) mean[i] = sum[i]! / n
  store.vectors.putCentroid(model, dims, toBlob(mean), n)
  return true
}

/** ‖mean‖; its square estimates the average pairwise cosine of the library. */
export function meanLength(mean: Float32Array): number {
  let s = 0
  for (let i = 0; i < mean.length; i++) s += mean[i]! * mean[i]!
  return Math.sqrt(s)
}

/** `normalize(v − mean)`, into a new array. Both query and block are centred, never one side only. */
export function centre(v: Float32Array, mean: Float32Array): Float32Array {
  const out = new Float32Array(v.length)
  let norm = 0
  for (let i = 0; i < v.length; i++) {
    const d = v[i]! - mean[i]!
    out[i] = d
    norm += d * d
  }
  if (norm > 0) {
    const scale = 1 / Math.sqrt(norm)
    for (let i = 0; i < out.length; i++) out[i]! *= scale
  }
  return out
}
