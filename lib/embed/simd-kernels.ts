/**
 * The two inner loops of approximate vector search as WebAssembly SIMD, assembled here from their
 * instructions (no toolchain, no native module, nothing to download: every Node this plugin runs on
 * has WebAssembly SIMD). V8 does not vectorise JS loops (docs/decisions.md D14); these kernels do 16
 * bytes an instruction:
 * - `weighted`: for every row code, the query-weighted count of bits where it differs from the query's
 *   sign bits (XOR, AND with each of the query's four weight planes, per-byte popcount);
 * - `dots`: the int8 × int16 dot product of a query with listed rows (sign-extend, pairwise multiply-add).
 * Each `SimdMemory` is one linear memory with the kernels bound to it; its owner lays out its rows
 * and scratch in it.
 */

/** Bytes of one SIMD register: row codes and int8 rows are padded to a multiple of it. */
export const LANE_BYTES = 16

const I32 = 0x7f
const V128 = 0x7b
const op = {
  loop: [0x03, 0x40], end: [0x0b], brIf: (depth: number) => [0x0d, depth],
  get: (i: number) => [0x20, i], set: (i: number) => [0x21, i], tee: (i: number) => [0x22, i],
  i32Load: [0x28, 2, 0], i32Store: [0x36, 2, 0], i32Const: (n: number) => [0x41, ...sleb(n)],
  i32Add: [0x6a], i32Sub: [0x6b], i32Mul: [0x6c], i32Shl: [0x74],
  // SIMD instructions: prefix 0xfd, then the opcode as unsigned LEB128.
  v128Load: (offset: number) => [0xfd, 0x00, 4, ...uleb(offset)],
  v128Zero: [0xfd, 0x0c, ...new Array<number>(16).fill(0)],
  lane: (i: number) => [0xfd, 0x1b, i],
  and: [0xfd, 0x4e], xor: [0xfd, 0x51], popcnt: [0xfd, 0x62], i32x4Shl: [0xfd, ...uleb(0xab)],
  addPairsU8: [0xfd, 0x7d], addPairsU16: [0xfd, 0x7f],
  extendLowS8: [0xfd, ...uleb(0x87)], extendHighS8: [0xfd, ...uleb(0x88)],
  i16Add: [0xfd, ...uleb(0x8e)], i32x4Add: [0xfd, ...uleb(0xae)], dotS16: [0xfd, ...uleb(0xba)],
}

/** Stores the sum of the four i32 lanes of v128 local `acc` at the address in i32 local `at`, then advances `at` by 4. */
function storeLaneSum(at: number, acc: number): number[] {
  return [
    ...op.get(at),
    ...op.get(acc), ...op.lane(0), ...op.get(acc), ...op.lane(1), ...op.i32Add,
    ...op.get(acc), ...op.lane(2), ...op.i32Add, ...op.get(acc), ...op.lane(3), ...op.i32Add,
    ...op.i32Store,
    ...op.get(at), ...op.i32Const(4), ...op.i32Add, ...op.set(at),
  ]
}

/** `local -= 1`, leaving the new value on the stack. */
const decrement = (local: number) => [...op.get(local), ...op.i32Const(1), ...op.i32Sub, ...op.tee(local)]
/** `local += n`. */
const advance = (local: number, n: number) => [...op.get(local), ...op.i32Const(n), ...op.i32Add, ...op.set(local)]

/** Weight planes of a `weighted` query: its weights are 4-bit, 0–15. */
export const WEIGHT_PLANES = 4

/**
 * weighted(codes, query, rows, blocks, out): for each of `rows` codes of `blocks` × 16 bytes from
 * `codes`, Σ_b 2^b · popcount(plane_b AND (code XOR sign)) as an i32 at `out`, where the query holds,
 * per 16-byte block, its sign bits and then its `WEIGHT_PLANES` weight planes (plane b: bit b of each
 * dimension's weight). Rows and blocks ≥ 1; a plane's i16 lanes gain at most 16 a block, so up to
 * 4,095 blocks (524,000 dimensions) fit.
 */
function weightedBody(): number[] {
  const [codes, query, rows, blocks, out, b, qp, diff] = [0, 1, 2, 3, 4, 5, 6, 7]
  const acc = (plane: number) => 8 + plane
  const planes = Array.from({ length: WEIGHT_PLANES }, (_, plane) => plane)
  return [
    ...op.loop,
    ...planes.flatMap((plane) => [...op.v128Zero, ...op.set(acc(plane))]),
    ...op.get(query), ...op.set(qp),
    ...op.get(blocks), ...op.set(b),
    ...op.loop,
    ...op.get(codes), ...op.v128Load(0), ...op.get(qp), ...op.v128Load(0), ...op.xor, ...op.set(diff),
    ...planes.flatMap((plane) => [
      ...op.get(acc(plane)),
      ...op.get(diff), ...op.get(qp), ...op.v128Load((plane + 1) * LANE_BYTES), ...op.and,
      ...op.popcnt, ...op.addPairsU8, ...op.i16Add, ...op.set(acc(plane)),
    ]),
    ...advance(codes, LANE_BYTES), ...advance(qp, (WEIGHT_PLANES + 1) * LANE_BYTES),
    ...decrement(b), ...op.brIf(0),
    ...op.end,
    // Plane sums widened to i32 lanes, shifted by their bit and added up in the first plane's local.
    ...op.get(acc(0)), ...op.addPairsU16,
    ...planes.slice(1).flatMap((plane) => [...op.get(acc(plane)), ...op.addPairsU16, ...op.i32Const(plane), ...op.i32x4Shl, ...op.i32x4Add]),
    ...op.set(acc(0)),
    ...storeLaneSum(out, acc(0)),
    ...decrement(rows), ...op.brIf(0),
    ...op.end,
  ]
}

/**
 * dots(data, query, list, count, blocks, out): for each of `count` row numbers (i32) at `list`, the
 * dot product of that row (`blocks` × 16 int8 at `data + row × blocks × 16`) with the query
 * (`blocks` × 16 int16 at `query`) as an i32 at `out`. Count and blocks ≥ 1.
 */
function dotsBody(): number[] {
  const [data, query, list, count, blocks, out, p, qp, b, acc, x] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  return [
    ...op.loop,
    ...op.get(data), ...op.get(list), ...op.i32Load, ...op.get(blocks), ...op.i32Const(4), ...op.i32Shl, ...op.i32Mul, ...op.i32Add, ...op.set(p),
    ...op.get(query), ...op.set(qp),
    ...op.get(blocks), ...op.set(b),
    ...op.v128Zero, ...op.set(acc),
    ...op.loop,
    ...op.get(p), ...op.v128Load(0), ...op.set(x),
    ...op.get(acc),
    ...op.get(x), ...op.extendLowS8, ...op.get(qp), ...op.v128Load(0), ...op.dotS16, ...op.i32x4Add,
    ...op.get(x), ...op.extendHighS8, ...op.get(qp), ...op.v128Load(16), ...op.dotS16, ...op.i32x4Add,
    ...op.set(acc),
    ...advance(p, LANE_BYTES), ...advance(qp, 2 * LANE_BYTES),
    ...decrement(b), ...op.brIf(0),
    ...op.end,
    ...storeLaneSum(out, acc),
    ...advance(list, 4),
    ...decrement(count), ...op.brIf(0),
    ...op.end,
  ]
}

function uleb(n: number): number[] {
  const out: number[] = []
  do {
    let byte = n & 0x7f
    n >>>= 7
    if (n !== 0) byte |= 0x80
    out.push(byte)
  } while (n !== 0)
  return out
}

function sleb(n: number): number[] {
  const out: number[] = []
  for (;;) {
    const byte = n & 0x7f
    n >>= 7
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) return [...out, byte]
    out.push(byte | 0x80)
  }
}

const vec = (items: number[][]) => [...uleb(items.length), ...items.flat()]
const name = (s: string) => vec([...Buffer.from(s, 'utf8')].map((b) => [b]))
const section = (id: number, body: number[]) => [id, ...uleb(body.length), ...body]
const funcType = (params: number) => [0x60, ...vec(new Array<number[]>(params).fill([I32])), 0]
/** One function's code entry: locals as (count, type) runs, the body, end. */
const code = (locals: Array<[number, number]>, body: number[]) => {
  const entry = [...vec(locals.map(([n, type]) => [...uleb(n), type])), ...body, ...op.end]
  return [...uleb(entry.length), ...entry]
}

function moduleBytes(): Uint8Array {
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([funcType(5), funcType(6)])),
    ...section(2, vec([[...name('e'), ...name('m'), 0x02, 0x00, 0x01]])),
    ...section(3, vec([[0], [1]])),
    ...section(7, vec([[...name('weighted'), 0x00, 0], [...name('dots'), 0x00, 1]])),
    ...section(10, vec([code([[2, I32], [1 + WEIGHT_PLANES, V128]], weightedBody()), code([[3, I32], [2, V128]], dotsBody())])),
  ])
}

/** The WebAssembly API as used here (the project's TypeScript libs, ES2023 and Node's types, do not declare it). */
interface WasmMemory {
  readonly buffer: ArrayBuffer
  grow(pages: number): number
}
interface WasmApi {
  Memory: new (descriptor: { initial: number }) => WasmMemory
  Module: new (bytes: Uint8Array) => object
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> }
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly

let compiled: object | null = null

/** One linear memory with the kernels bound to it. Views of `buffer` go stale when `reserve` grows it. */
export class SimdMemory {
  private readonly memory = new wasm.Memory({ initial: 1 })
  /** See `weightedBody`. Addresses are byte offsets into this memory. */
  readonly weighted: (codes: number, query: number, rows: number, blocks: number, out: number) => void
  /** See `dotsBody`. */
  readonly dots: (data: number, query: number, list: number, count: number, blocks: number, out: number) => void

  constructor() {
    compiled ??= new wasm.Module(moduleBytes())
    const exports = new wasm.Instance(compiled, { e: { m: this.memory } }).exports
    this.weighted = exports.weighted as SimdMemory['weighted']
    this.dots = exports.dots as SimdMemory['dots']
  }

  /** The memory's current bytes. */
  get buffer(): ArrayBuffer {
    return this.memory.buffer
  }

  /** Grows the memory to hold `bytes`: to twice its size when that is more, but never more than 256 MB beyond `bytes`. */
  reserve(bytes: number): void {
    const have = this.memory.buffer.byteLength
    if (bytes <= have) return
    this.memory.grow(Math.ceil((Math.max(bytes, Math.min(2 * have, bytes + (1 << 28))) - have) / 65536))
  }
}

/** `n` rounded up to a multiple of `LANE_BYTES`. */
export function laneAligned(n: number): number {
  return Math.ceil(n / LANE_BYTES) * LANE_BYTES
}
