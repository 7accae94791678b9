/**
 * `npm run bench:serve -- [--blocks 100000] [--queries 200] [--pages 200] [--json]`
 *
 * The memory browser's server time at N notes (seeded synthetic corpus, bench/corpus.ts, with
 * sources, scenes, a cold layer and superseded notes mixed in), all in one run:
 * 1. the first page of `/api/notes` (50 notes) unfiltered and under each filter, p50/p99 of the
 *    route's own time, wall and CPU (the bound: first page ≤ 200 ms at 100k);
 * 2. a deep page by cursor against the baseline of OFFSET paging at the same depth (ratio);
 * 3. `/api/search` (the ranked list, the gated injection and its rendered message), p50/p99
 *    wall and CPU (bound: ≤ 50 ms p99), against the baseline of the bare per-turn `recallBlocks`
 *    over the same queries (ratio);
 * 4. the same first page and search over real HTTP on 127.0.0.1 (round trip, for reference).
 * With `--json` the last line is one JSON object.
 */
import { request, Agent } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { resolveConfig } from '../lib/config.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import { READS, type ApiContext } from '../lib/serve/api.ts'
import { serve } from '../lib/serve/server.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exitOnHelp, jsonWanted, progressLog, wholeFlag } from './args.ts'
import { QUERY_KINDS, corpus, type QueryKind } from './corpus.ts'
import { nowMs, round, summary } from './stats.ts'

const USAGE = 'npm run bench:serve -- [--blocks 100000] [--queries 200] [--pages 200] [--json]\n\nThe memory browser\'s server time at N notes: first pages, deep pages against OFFSET, search against the bare recall (docs/browser.md).'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    pages: { type: 'string', default: '200' },
    seed: { type: 'string', default: '20261201' },
    json: { type: 'boolean', default: false },
  },
})
const asJson = jsonWanted(args.json)
const log = progressLog(asJson)
const N = wholeFlag('blocks', args.blocks)
const QUERIES = wholeFlag('queries', args.queries)
const PAGES = wholeFlag('pages', args.pages)
const SEED = wholeFlag('seed', args.seed)

const dir = mkdtempSync(join(tmpdir(), 'stablemem-bench-serve-'))
const path = join(dir, 'memory.db')
const gen = corpus(SEED)
const SOURCES = ['user', 'tool', 'ops', 'import']
log(`corpus: ${N} blocks, seed ${SEED}; files in ${dir}`)
const store = new BlockStore(path, { duplicates: 'keep' })
let t0 = nowMs()
for (let from = 0; from < N; from += 1000) {
  const batch = []
  for (let i = from; i < Math.min(N, from + 1000); i++) batch.push({ text: gen.block(i).text, source: SOURCES[i % SOURCES.length]!, scene: i % 50 === 0 ? 'rare' : `scene-${i % 20}` })
  store.commitMany(batch)
}
// Some notes are superseded, some captured (cold): the filters have something to find.
const firstIds = store.browse.page({}, 200).notes.map((n) => n.id)
for (let k = 0; k + 1 < firstIds.length && k < 100; k += 2) store.commit({ text: `${gen.block(N + k).text} (corrected)`, supersedes: firstIds[k + 1]! })
store.layers.capture(Array.from({ length: 500 }, (_, i) => ({ text: `captured turn ${i}: ${gen.block(N + 1000 + i).text}`, origin: { sessionId: 'bench', seq: i, eventType: 'user/message', role: 'user', eventTime: Date.now(), compactionId: 'c1' } })), () => 'compaction:user')
log(`committed ${store.count()} blocks in ${Math.round(nowMs() - t0)} ms`)

const api: ApiContext = { store, readOnly: true, config: resolveConfig(), csrf: '' }

/** Runs `fn` `count` times; p50/p99 of wall and CPU time per call, in ms. */
async function measure(count: number, fn: (i: number) => unknown | Promise<unknown>): Promise<{ wall: { p50_ms: number, p99_ms: number }, cpu: { p50_ms: number, p99_ms: number } }> {
  for (let i = 0; i < Math.min(10, count); i++) await fn(i) // warm-up
  const wall: number[] = []
  const cpu: number[] = []
  for (let i = 0; i < count; i++) {
    const c = process.cpuUsage()
    const s = nowMs()
    await fn(i)
    wall.push(nowMs() - s)
    const d = process.cpuUsage(c)
    cpu.push((d.user + d.system) / 1000)
  }
  return { wall: summary(wall), cpu: summary(cpu) }
}

const route = (name: string, query: Record<string, string>) => READS[name]!(api, { query: new URLSearchParams(query), body: undefined })
const pageFilters: Record<string, Record<string, string>> = {
  none: {}, scene: { scene: 'scene-7' }, rareScene: { scene: 'rare' }, source: { source: 'ops' }, layerCold: { layer: 'cold' },
  superseded: { state: 'superseded' }, current: { state: 'current' }, since: { since: String(Date.now() - 86_400_000) }, scope: { scope: 'global' },
}
const firstPage: Record<string, unknown> = {}
for (const [name, filter] of Object.entries(pageFilters)) {
  firstPage[name] = await measure(PAGES, () => route('/api/notes', filter))
  log(`first page (${name}): ${JSON.stringify(firstPage[name])}`)
}

// Deep paging: the cursor of page ~N/100, against OFFSET at the same depth.
const depth = Math.floor(N / 2)
let cursor: number | undefined
{
  // Walk to the depth once to get a real cursor.
  let before: number | undefined
  let seen = 0
  while (seen < depth) {
    const page = store.browse.page({}, 200, before)
    seen += page.notes.length
    before = page.next
    if (before === undefined) break
  }
  cursor = before
}
const deepCursor = await measure(PAGES, () => route('/api/notes', { before: String(cursor) }))
const offsetStmt = (store as unknown as { stmt(k: string, sql: string): { all(...a: unknown[]): unknown[] } })
const deepOffset = await measure(PAGES, () => offsetStmt.stmt('bench.offset', 'SELECT id, text FROM blocks ORDER BY rowid DESC LIMIT 51 OFFSET ?').all(depth))
log(`deep page at ${depth}: cursor ${JSON.stringify(deepCursor)}; OFFSET baseline ${JSON.stringify(deepOffset)}`)

const queries: string[] = []
for (let q = 0; q < QUERIES; q++) queries.push(gen.query(QUERY_KINDS[q % QUERY_KINDS.length] as QueryKind, Math.floor((q * 7_654_321) % N)))
const bareRecall = await measure(QUERIES, (i) => recallBlocks(store, queries[i]!, { topK: 5, recordAccess: false }))
const search = await measure(QUERIES, (i) => route('/api/search', { q: queries[i]! }))
log(`search: ${JSON.stringify(search)}; bare recall baseline ${JSON.stringify(bareRecall)}`)

// Over real HTTP on loopback, for reference (includes JSON encoding and the socket).
const server = await serve({ store, config: resolveConfig(), readOnly: true })
const agent = new Agent({ keepAlive: true })
const get = (p: string) => new Promise<void>((resolve, reject) => {
  const req = request({ host: '127.0.0.1', port: server.port, path: p, agent, headers: { 'x-stablemem-token': server.token } }, (res) => {
    res.resume()
    res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode} for ${p}`))))
  })
  req.on('error', reject)
  req.end()
})
const httpPage = await measure(PAGES, () => get('/api/notes'))
const httpSearch = await measure(QUERIES, (i) => get(`/api/search?${new URLSearchParams({ q: queries[i]! })}`))
agent.destroy()
await server.close()
store.close()
rmSync(dir, { recursive: true, force: true })

const result = {
  bench: 'serve', blocks: N, queries: QUERIES, pages: PAGES,
  first_page: firstPage,
  deep_page: { depth, cursor: deepCursor, offset_baseline: deepOffset, ratio_p99_wall: round(deepCursor.wall.p99_ms / deepOffset.wall.p99_ms) },
  search: { ...search, bare_recall_baseline: bareRecall, ratio_p99_wall: round(search.wall.p99_ms / bareRecall.wall.p99_ms), ratio_p99_cpu: round(search.cpu.p99_ms / Math.max(0.001, bareRecall.cpu.p99_ms)) },
  http: { first_page: httpPage, search: httpSearch },
  bounds: { first_page_p99_ms: 200, search_p99_ms: 50 },
}
console.log(asJson ? JSON.stringify(result) : JSON.stringify(result, null, 2))
