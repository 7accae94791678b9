/**
 * Small, allocation-conscious vector helpers shared by the adapter, the store and the search.
 * Vectors are Float32Array, unit length once accepted.
 */

/** Checks length and finiteness and returns a unit-length copy; throws a plain Error naming the problem. */
export function acceptVector(values: unknown, dims: number): Float32Array {
  if (!Array.isArray(values) && !(values instanceof Float32Array)) throw new Error('embedding is not an array of numbers')
  if (values.length !== dims) throw new Error(`embedding has ${values.length} dimensions, expected ${dims}`)
  const out = new Float32Array(dims)
  let norm = 0
  for (let i = 0; i < dims; i++) {
    const v = values[i]
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`embedding component ${i} is not a finite number`)
    out[i] = v
    norm += v * v
  }
  if (!(norm > 0) || !Number.isFinite(norm)) throw new Error('embedding has zero length')
  const scale = 1 / Math.sqrt(norm)
  for (let i = 0; i < dims; i++) out[i]! *= scale
  return out
}

/** The vector as a little-endian float32 blob for SQLite. */
export function toBlob(v: Float32Array): Uint8Array {
  return new Uint8Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength))
}

/** A float32 blob back as a vector (copied, so it is aligned and owned). */
export function fromBlob(blob: Uint8Array): Float32Array {
  const copy = new Uint8Array(blob.byteLength)
  copy.set(blob)
  return new Float32Array(copy.buffer)
}
