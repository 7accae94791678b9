import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { blockId } from '../lib/store/block-id.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../lib/store/transfer.ts'
import { tempStorePath } from './helpers/harness.ts'
import { mutant } from './helpers/mutant.ts'

function filled(n: number): BlockStore {
  let clock = 1_700_000_000_000
  const store = new BlockStore(tempStorePath('src'), { now: () => ++clock })
  store.commitMany(Array.from({ length: n }, (_, i) => ({ text: `service-${i} 端口 ${10_000 + i}` })))
  return store
}

t.test('a large import crosses batches, reports progress and keeps every line before a bad one', async (t) => {
  const src = filled(1_234)
  const lines = [...exportJsonl(src)]
  src.close()
  const broken = [...lines.slice(0, 1_101), 'not json', ...lines.slice(1_101)]
  const dst = new BlockStore(tempStorePath('dst'))
  t.teardown(() => dst.close())
  const progress: number[] = []
  const result = await importJsonl(dst, broken, { onProgress: (p) => progress.push(p.lines), progressEvery: 250 })
  t.same(result.failure, { line: 1_102, message: 'not valid JSON' })
  t.equal(result.lines, 1_101)
  t.equal(result.blocksCreated, 1_100, 'two full batches and the partial third one are stored')
  t.equal(dst.count(), 1_100)
  t.same(progress, [250, 500, 750, 1_000])
  const rest = await importJsonl(dst, lines)
  t.equal(rest.failure, undefined)
  t.equal(rest.blocksCreated, 134)
  t.equal(rest.blocksMerged, 1_100)
})

t.test('a line the store refuses mid-batch keeps the batch lines before it', async (t) => {
  const src = filled(10)
  const lines = [...exportJsonl(src)]
  src.close()
  const tampered = lines[6]!.replace('端口', '端 口')
  const dst = new BlockStore(tempStorePath('dst'))
  t.teardown(() => dst.close())
  const result = await importJsonl(dst, [...lines.slice(0, 6), tampered, ...lines.slice(7)])
  t.equal(result.failure?.line, 7)
  t.match(result.failure?.message, /is not the content address of its text/)
  t.equal(dst.count(), 5)
})

/** Every stored block's id is the hash of its text: the property the import guard protects. */
function contentAddressed(store: BlockStore): boolean {
  return [...store.allBlocks()].every((b) => b.id === blockId(b.text))
}

t.test('the content-address guard: refusing tampered blocks keeps the store consistent; without it the check goes red', async (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const good = store.commit({ text: 'gateway 10.0.0.1' })
  const block = store.get(good.id)!
  const tampered = { ...block, text: 'gateway 10.0.0.2' }
  t.throws(() => store.importBlock(tampered), /is not the content address of its text/)
  t.throws(() => store.importBlock({ ...block, id: blockId(' x'), text: ' x' }), /canonical form/)
  t.ok(contentAddressed(store), 'guarded import leaves the store content-addressed')
  // Mutation check: the same tampered record written without the guard (a plain insert, which
  // is what an unguarded import does) makes the property fail, so the assertion above has teeth.
  const path = tempStorePath()
  new BlockStore(path).close()
  const raw = new DatabaseSync(path)
  raw.prepare('INSERT INTO blocks (id, text, created_at, updated_at) VALUES (?, ?, ?, ?)').run(tampered.id, tampered.text, 1, 1)
  raw.close()
  const unguarded = new BlockStore(path)
  t.teardown(() => unguarded.close())
  t.notOk(contentAddressed(unguarded), 'without the id check a wrong id gets stored')
})

t.test('merging an existing block is idempotent and keeps the widest times', async (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const base = { id: blockId('a note'), text: 'a note', source: 'old', scene: '', semanticType: '', createdAt: 100, updatedAt: 200, accessCount: 2, lastAccessAt: 150, supersededBy: null }
  store.transaction(() => store.importBlock(base))
  const newer = { ...base, source: 'new', createdAt: 300, updatedAt: 400, accessCount: 1, lastAccessAt: null }
  for (let i = 0; i < 2; i++) t.same(store.transaction(() => store.importBlock(newer)), { created: false, id: base.id })
  t.same(store.get(base.id), { ...base, source: 'new', updatedAt: 400 })
  const older = { ...base, source: 'older', createdAt: 50, updatedAt: 60, accessCount: 9, lastAccessAt: 900 }
  store.transaction(() => store.importBlock(older))
  t.same(store.get(base.id), { ...base, source: 'new', createdAt: 50, updatedAt: 400, accessCount: 9, lastAccessAt: 900 })
})

t.test('a superseded note keeps its supersede mark and edge through export and import, and stays out of recall', async (t) => {
  const src = new BlockStore(tempStorePath('src'))
  const old = src.commit({ text: '值班室分机号 4324' })
  const current = src.commit({ text: '值班室分机号 4379', supersedes: old.id })
  const lines = [...exportJsonl(src)]
  src.close()
  const dst = new BlockStore(tempStorePath('dst'))
  t.teardown(() => dst.close())
  const result = await importJsonl(dst, lines)
  t.equal(result.failure, undefined)
  t.equal(dst.get(old.id)?.supersededBy, current.id, 'the mark survives the round trip')
  t.same(dst.edgesOf('block', old.id).map((e) => [e.sourceId, e.type, e.targetId]), [[current.id, 'supersedes', old.id]])
  const { recallBlocks } = await import('../lib/recall/recall.ts')
  t.same(recallBlocks(dst, '值班室分机号').map((h) => h.id), [current.id], 'the imported old value is not recalled')
})

t.test('an imported edge is checked and stored in its normalised spelling, like link', async (t) => {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const a = store.commit({ text: 'note a' }).id
  const missing = blockId('never stored')
  t.throws(() => store.importEdge({ sourceKind: ' block', sourceId: missing, targetKind: 'block', targetId: a, type: 'related', createdAt: 5 }),
    { code: 'not_found' }, "' block' cannot slip past the endpoint check")
  t.same(store.importEdge({ sourceKind: ' block ', sourceId: a, targetKind: 'block', targetId: a, type: ' related', createdAt: 5 }), { created: true })
  t.same(store.importEdge({ sourceKind: 'block', sourceId: a, targetKind: 'block', targetId: a, type: 'related', createdAt: 9 }), { created: false }, 'the same edge, spelled plainly, is a duplicate')
  t.same(store.edgesOf('block', a).map((e) => [e.sourceKind, e.type, e.createdAt]), [['block', 'related', 5]])
})

/**
 * An export with every kind of numbered field: a cold block with cooling state, a note, an edge
 * between them and an origin row. Returns its lines (header first).
 */
function numberedExport(): string[] {
  const store = new BlockStore(tempStorePath('numbers-src'), { now: () => 1_700_000_000_000 })
  const [captured] = store.layers.capture([{ text: 'billing 服务端口 13010', origin: { sessionId: 's1', seq: 4, eventType: 'user/message', role: 'user', eventTime: 1_699_999_999_000, compactionId: 'c1' } }], () => 'compaction:user').ids
  const note = store.commit({ text: 'grafana 3000' }).id
  store.link({ sourceKind: 'block', sourceId: note, targetKind: 'block', targetId: captured!, type: 'related' })
  const lines = [...exportJsonl(store)].map((line) => {
    const record = JSON.parse(line) as Record<string, unknown>
    if (record.id !== captured) return line
    return JSON.stringify({ ...record, accessCount: 2, lastAccessAt: 1_700_000_000_500, layer: 'cold', coolState: 'undistilled', coolAttempts: 1, coolNextAt: 1_700_086_400_000 })
  })
  store.close()
  return lines
}

/** Every number an import reads, by record: counts, and times (ms since the epoch that a `Date` can hold). */
const NUMBERS: Array<[record: 'block' | 'edge' | 'origin', field: string, kind: 'count' | 'time']> = [
  ['block', 'createdAt', 'time'], ['block', 'updatedAt', 'time'], ['block', 'accessCount', 'count'], ['block', 'lastAccessAt', 'time'],
  ['block', 'coolAttempts', 'count'], ['block', 'coolNextAt', 'time'],
  ['edge', 'createdAt', 'time'],
  ['origin', 'seq', 'count'], ['origin', 'eventTime', 'time'], ['origin', 'capturedAt', 'time'],
]

/** The line of `lines` holding `record` (for blocks, the cold one, which has every field) with `field` set to `value`. */
function withField(lines: string[], record: string, field: string, value: unknown): { lines: string[], line: number } {
  const at = lines.findIndex((l) => JSON.parse(l).record === record && (record !== 'block' || l.includes('"coolNextAt"')))
  const changed = [...lines]
  changed[at] = JSON.stringify({ ...JSON.parse(lines[at]!), [field]: value })
  return { lines: changed, line: at + 1 }
}

/** What a store holds, to compare a refused import with the lines before the bad one. */
function contents(store: BlockStore): unknown {
  return { blocks: [...store.allBlocks()], states: [...store.allBlocks()].map((b) => store.layers.stateOf(b.id)), edges: [...store.allEdges()], origins: [...store.layers.allOrigins()] }
}

t.test('every number of every record is refused with its line, record and field when it is negative, fractional, not a number or out of range; the line leaves nothing', async (t) => {
  const lines = numberedExport()
  const bad = { count: [-1, 1.5, '2', true, 2 ** 53, 1e300], time: [-1, 0.5, '1700000000000', 8_640_000_000_000_001, 2 ** 53] }
  for (const [record, field, kind] of NUMBERS) {
    const values = field === 'lastAccessAt' ? bad[kind] : [...bad[kind], null]
    for (const value of values) {
      const name = `${record}.${field} = ${JSON.stringify(value)}`
      const { lines: changed, line } = withField(lines, record, field, value)
      const dst = new BlockStore(tempStorePath('numbers-dst'))
      const before = new BlockStore(tempStorePath('numbers-before'))
      const result = await importJsonl(dst, changed)
      await importJsonl(before, changed.slice(0, line - 1))
      t.equal(result.failure?.line, line, `${name}: refused at its line`)
      const expected = typeof value === 'number' && Number.isSafeInteger(value) && value > 0
        ? `${record} field ${field} ${value} is beyond the last date JavaScript can represent (8640000000000000)`
        : `${record} field ${field} must be a non-negative integer, not ${JSON.stringify(value)}`
      t.equal(result.failure?.message, expected, `${name}: the message names record and field`)
      t.same(contents(dst), contents(before), `${name}: exactly the lines before it are stored`)
      dst.close()
      before.close()
    }
  }
})

t.test('0, the last date and the largest safe count are valid and come back exactly; a future date is kept', async (t) => {
  const lines = numberedExport()
  const future = Date.UTC(2999, 0, 1)
  for (const [record, field, kind] of NUMBERS) {
    for (const value of kind === 'count' ? [0, Number.MAX_SAFE_INTEGER] : [0, 8_640_000_000_000_000, future]) {
      const name = `${record}.${field} = ${value}`
      const { lines: changed } = withField(lines, record, field, value)
      const dst = new BlockStore(tempStorePath('numbers-valid'))
      const result = await importJsonl(dst, changed)
      t.equal(result.failure, undefined, name)
      const exported = [...exportJsonl(dst)].map((l) => JSON.parse(l) as Record<string, unknown>)
      t.ok(exported.some((r) => r.record === record && r[field] === value), `${name}: exported again as imported`)
      dst.close()
    }
  }
})

t.test('mutation: without the time check an origin or cooling time past the last date is stored (the store does not check those)', async (t) => {
  const m = mutant(
    { file: 'store/export-format.ts', from: "eventTime: time(record, 'eventTime')", to: "eventTime: count(record, 'eventTime')" },
    { file: 'store/export-format.ts', from: "capturedAt: time(record, 'capturedAt')", to: "capturedAt: count(record, 'capturedAt')" },
    { file: 'store/export-format.ts', from: "time(record, 'coolNextAt')", to: "count(record, 'coolNextAt')" },
  )
  t.teardown(() => m.remove())
  const mod = await m.load<typeof import('../lib/store/transfer.ts')>('store/transfer.ts')
  const { BlockStore: MutantStore } = await m.load<typeof import('../lib/store/store.ts')>('store/store.ts')
  const lines = numberedExport()
  for (const [record, field] of [['origin', 'eventTime'], ['origin', 'capturedAt'], ['block', 'coolNextAt']] as const) {
    const dst = new MutantStore(tempStorePath('numbers-mutant'))
    const result = await mod.importJsonl(dst as never, withField(lines, record, field, 8_640_000_000_000_001).lines)
    t.equal(result.failure, undefined, `red: ${record} field ${field} past the last date is imported`)
    dst.close()
  }
})

t.test('a line refused mid-batch: the batch is replayed line by line, and what the first pass counted is not counted twice', async (t) => {
  const src = new BlockStore(tempStorePath('src-redact'), { secrets: 'allow' })
  src.commit({ text: 'billing 服务端口 8499' })
  src.commit({ text: 'the deploy token: Xk29fQm8ZpL4vR7tNw3yBc6H for the bot' })
  for (let i = 0; i < 6; i++) src.commit({ text: `service-${i} 端口 ${10_000 + i}` })
  const lines = [...exportJsonl(src)]
  src.close()
  const at = lines.findIndex((l) => l.includes('service-3'))
  const tampered = lines[at]!.replace('端口', '端 口')
  const run = async (importer: typeof importJsonl) => {
    const dst = new BlockStore(tempStorePath('dst-redact'))
    try {
      const result = await importer(dst, [...lines.slice(0, at), tampered, ...lines.slice(at + 1)], { secrets: 'redact' })
      return { result, count: dst.count() }
    } finally {
      dst.close()
    }
  }
  const { result, count } = await run(importJsonl)
  t.equal(result.failure?.line, at + 1, 'the refused line is named')
  t.equal(result.blocksCreated, count, 'each stored note counted once')
  t.equal(count, at - 1, 'every block line before it is kept (the header is not a block)')
  t.equal(result.redacted?.length, 1, 'the masked note is reported once')
  const m = mutant({ file: 'store/transfer.ts', from: '      restore() // the batch rolled back: as if it had not run\n', to: '' })
  t.teardown(() => m.remove())
  const mutated = await run((await m.load<typeof import('../lib/store/transfer.ts')>('store/transfer.ts')).importJsonl)
  t.ok(mutated.result.blocksCreated > mutated.count && (mutated.result.redacted?.length ?? 0) > 1, 'mutation check: without restoring the state the first pass is counted again')
})

const TOKEN = `ghp_${'Zq7Xw2Kp9Lm4Nv8Rt3Ys6Bd1Fg5Hj0Ac2Ee'}`

/** An export of a `secrets: allow` store: a plain note, a token in a note's text, a token in a note's tag. */
function secretLines(): string[] {
  const src = new BlockStore(tempStorePath('src-secrets'), { secrets: 'allow' })
  src.commit({ text: 'billing 服务端口 8499' })
  src.commit({ text: `the deploy token for the registry is ${TOKEN}` })
  src.commit({ text: 'gateway 10.0.0.9 answers on 8443', source: `ci-token ${TOKEN}` })
  const lines = [...exportJsonl(src)]
  src.close()
  return lines
}

/** What importing `lines` under `secrets` stores and reports. */
async function importSecrets(importer: typeof importJsonl, lines: string[], secrets: 'refuse' | 'redact', Store: typeof BlockStore = BlockStore): Promise<{ failure?: { line: number, message: string }, masked: number, kept: boolean }> {
  const dst = new Store(tempStorePath('dst-secrets'))
  try {
    const result = await importer(dst, lines, { secrets })
    return { failure: result.failure, masked: result.redacted?.length ?? 0, kept: [...exportJsonl(dst)].some((l) => l.includes(TOKEN)) }
  } finally {
    dst.close()
  }
}

t.test('a note is checked once when nothing in it is masked; refuse still refuses and redact still masks a credential in the text or a tag', async (t) => {
  const lines = secretLines()
  const refused = await importSecrets(importJsonl, lines, 'refuse')
  t.same(refused, { failure: { line: 3, message: 'text contains credentials (github-token); import refuses them unless told to keep them (secrets allow) or mask them (secrets redact)' }, masked: 0, kept: false })
  t.same((await importSecrets(importJsonl, [lines[0]!, lines[1]!, lines[3]!], 'refuse')).failure?.line, 3, 'a credential in a tag is refused too')
  t.same(await importSecrets(importJsonl, lines, 'redact'), { failure: undefined, masked: 1, kept: false }, 'both masked (a masked text changes the note\'s id, a masked tag does not)')
  // A tampered line holding a credential is refused for the tampering, as before: the exported text is checked first.
  const tampered = lines[2]!.replace('the deploy token', 'the deploy  token')
  t.match((await importSecrets(importJsonl, [lines[0]!, tampered], 'refuse')).failure, { line: 2, message: /is not the content address of its text/ })
  const m = mutant({ file: 'store/import-rows.ts', from: "const policy = secrets === 'allow' ? 'allow' : 'redact'", to: "const policy = 'allow'" })
  t.teardown(() => m.remove())
  const mutated = (await m.load<typeof import('../lib/store/transfer.ts')>('store/transfer.ts')).importJsonl
  const { BlockStore: MutantStore } = await m.load<{ BlockStore: typeof BlockStore }>('store/store.ts')
  t.same(await importSecrets(mutated, lines, 'refuse', MutantStore), { failure: undefined, masked: 0, kept: true }, 'mutation check: checked only as exported, the credentials are stored')
})
