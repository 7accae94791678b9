/**
 * `npm run bench:forget-phases -- [--blocks 100000] [--forget 10000] [--rounds 3] [--cache <dir>] [--baseline-lib <dir>] [--as-committed] [--json]`
 *
 * Where the large forget's time goes: the store `bench:forget` builds (same seed, every tenth
 * note in the scene that is forgotten), copied once per round and per `lib/`, and on each copy
 * `forget({scene})` with every SQL call it makes timed (wall and CPU, `process.cpuUsage`). The
 * calls are grouped into phases by their SQL (selection, reading the notes, supersede splice,
 * edges, vectors, each dependent table, the index's delete entries, its rewrite, tombstones, block
 * rows, commit, checkpoint); the JavaScript between calls counts in the phase around it (see
 * `instrument`). With `--baseline-lib <dir>` (another commit's `lib/`) the same forget by that code
 * runs on a byte-identical copy in each round, alternating which goes first, and the ratio of
 * the medians is reported. By default each copy's index is first merged into one segment, as
 * it is when `bench:forget` runs its large forget (after step 2's rewrites); `--as-committed`
 * leaves it in the segments the commits wrote. `--cache <dir>` keeps the built store there.
 * With `--json` the last line is one JSON object.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { BlockStore } from '../lib/store/store.ts'
import { jsonWanted, progressLog, wholeFlag } from './args.ts'
import { corpus } from './corpus.ts'
import { cpuMs, nowMs, round } from './stats.ts'

const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    forget: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '3' },
    seed: { type: 'string', default: '20261130' },
    cache: { type: 'string' },
    'baseline-lib': { type: 'string' },
    'as-committed': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
})
const asJson = jsonWanted(args.json)
const log = progressLog(asJson)
const N = wholeFlag('blocks', args.blocks)
const FORGET = Math.min(wholeFlag('forget', args.forget), Math.floor(N / 2))
const ROUNDS = wholeFlag('rounds', args.rounds)
const SEED = wholeFlag('seed', args.seed)

/** Phases, matched in order against each call's SQL (the first match wins). */
const PHASES: ReadonlyArray<[name: string, pattern: RegExp]> = [
  ['commit', /^\s*COMMIT\b/i],
  ['checkpoint', /wal_checkpoint/i],
  ['fts_rewrite', /'optimize'/],
  ['fts_delete_entries', /'delete'/],
  ['fts_delete_all', /'delete-all'|DELETE FROM blocks_fts\b/],
  ['fts_options', /blocks_fts \(blocks_fts, rank\)|blocks_fts_config/],
  ['select', /INSERT (OR IGNORE )?INTO temp\.stablemem_forget/],
  ['read_notes', /FROM temp\.stablemem_forget f CROSS JOIN blocks b/],
  ['supersede_splice', /superseded_by IN|UPDATE blocks SET superseded_by|'supersedes'/],
  ['edges', /DELETE FROM edges/],
  ['vectors', /DELETE FROM (centroids|vectors)\b/],
  ['tombstones', /INTO tombstones/],
  ['block_rows', /DELETE FROM blocks\b/],
  ['count', /block_count|scope_count|TRIGGER/],
]
/** A dependent table's delete is its own phase (`dependent <table>`). */
const phaseOf = (sql: string): string => PHASES.find(([, p]) => p.test(sql))?.[0]
  ?? /^\s*DELETE FROM "([^"]+)"/.exec(sql)?.[1]?.replace(/^/, 'dependent ') ?? 'other_sql'

type Spent = Map<string, { wall_ms: number, cpu_ms: number, calls: number }>

/**
 * Times the phases of what runs on `db` from now on, into `spent`: every `exec` and every
 * run/get/all of a statement prepared from now on names its phase (instance methods shadow the
 * prototype's, so the store's code is unchanged), and the clock is read only when the phase
 * changes. So the JavaScript between two calls of one phase (the index columns between the
 * index's deletes) counts in that phase, and what follows the last call of a phase counts in it
 * until the next call; the clocks are read a few dozen times per forget, not per call.
 * `close()` ends the last phase. The WAL's size is read before the first checkpoint.
 */
function instrument(db: DatabaseSync, spent: Spent, wal: { path: string, bytes: number }): { close(): void } {
  let current: string | undefined
  let wall = 0
  let cpu = 0
  const close = () => {
    if (current === undefined) return
    const s = spent.get(current) ?? { wall_ms: 0, cpu_ms: 0, calls: 0 }
    s.wall_ms += nowMs() - wall
    s.cpu_ms += cpuMs() - cpu
    spent.set(current, s)
    current = undefined
  }
  const enter = (phase: string) => {
    if (phase !== current) {
      close()
      if (phase === 'checkpoint' && wal.bytes < 0) wal.bytes = statSync(wal.path, { throwIfNoEntry: false })?.size ?? 0
      current = phase
      wall = nowMs()
      cpu = cpuMs()
    }
    spent.get(phase)!.calls++
  }
  const count = (phase: string) => {
    if (!spent.has(phase)) spent.set(phase, { wall_ms: 0, cpu_ms: 0, calls: 0 })
    enter(phase)
  }
  const exec = db.exec.bind(db)
  const prepare = db.prepare.bind(db)
  Object.assign(db, {
    exec: (sql: string) => { count(phaseOf(sql)); return exec(sql) },
    prepare: (sql: string) => {
      const statement: StatementSync = prepare(sql)
      const phase = phaseOf(sql)
      for (const method of ['run', 'get', 'all'] as const) {
        const original = statement[method].bind(statement) as (...params: unknown[]) => unknown
        Object.assign(statement, { [method]: (...params: unknown[]) => { count(phase); return original(...params) } })
      }
      return statement
    },
  })
  return { close }
}

/** The store bench:forget builds (its scenes: `doomed` every tenth note, the rest `kept`). */
function build(path: string): void {
  const gen = corpus(SEED)
  const every = Math.floor(N / FORGET)
  const store = new BlockStore(path, { duplicates: 'keep' })
  const t0 = nowMs()
  for (let from = 0; from < N; from += 1000) {
    const batch = []
    for (let i = from; i < Math.min(N, from + 1000); i++) {
      batch.push({ text: gen.block(i).text, source: 'bench', scene: i % every === 0 && i / every < FORGET ? 'doomed' : 'kept' })
    }
    store.commitMany(batch)
  }
  store.close()
  const db = new DatabaseSync(path)
  db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()
  db.close()
  log(`built ${N} blocks in ${Math.round(nowMs() - t0)} ms`)
}

const dir = mkdtempSync(join(tmpdir(), 'stablemem-bench-forget-phases-'))
const cacheDir = args.cache === undefined ? dir : resolve(args.cache)
mkdirSync(cacheDir, { recursive: true })
const source = join(cacheDir, `forget-${N}-${FORGET}-seed${SEED}.db`)
if (!existsSync(source)) build(source)
else log(`store: ${source}`)
/** The copy every round starts from, upgraded by this code and merged unless `--as-committed`. */
const prepared = join(dir, 'prepared.db')
copyFileSync(source, prepared)
new BlockStore(prepared).close() // runs any pending migration once, before the clocks
{
  const db = new DatabaseSync(prepared)
  if (!args['as-committed']) db.exec("INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize')")
  db.exec('VACUUM')
  db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get()
  db.close()
}

type Store = { forget: BlockStore['forget'], close(): void }
const libs: Array<{ name: string, open: (path: string) => Store }> = [{ name: 'this', open: (path) => new BlockStore(path, { duplicates: 'keep' }) }]
if (args['baseline-lib'] !== undefined) {
  const lib = resolve(args['baseline-lib'])
  const { BlockStore: Baseline } = await import(pathToFileURL(join(lib, 'store', 'store.ts')).href) as { BlockStore: typeof BlockStore }
  libs.push({ name: 'baseline', open: (path) => new Baseline(path, { duplicates: 'keep' }) })
}

interface Run { total_wall_ms: number, total_cpu_ms: number, wal_bytes: number, phases: Record<string, { wall_ms: number, cpu_ms: number, calls: number }> }
const runs = new Map<string, Run[]>(libs.map((l) => [l.name, []]))
for (let round_ = 0; round_ < ROUNDS; round_++) {
  const order = round_ % 2 === 0 ? libs : [...libs].reverse()
  for (const lib of order) {
    const copy = join(dir, `${lib.name}.db`)
    copyFileSync(prepared, copy)
    const store = lib.open(copy)
    const spent: Spent = new Map()
    const wal = { path: `${copy}-wal`, bytes: -1 }
    const clock = instrument((store as unknown as { db: DatabaseSync }).db, spent, wal)
    const wall = nowMs()
    const cpu = cpuMs()
    const result = store.forget({ scene: 'doomed' })
    clock.close()
    const total = { wall_ms: nowMs() - wall, cpu_ms: cpuMs() - cpu }
    store.close()
    for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true })
    const phases = Object.fromEntries([...spent].sort((a, b) => b[1].cpu_ms - a[1].cpu_ms)
      .map(([k, s]) => [k, { wall_ms: round(s.wall_ms, 1), cpu_ms: round(s.cpu_ms, 1), calls: s.calls }]))
    runs.get(lib.name)!.push({ total_wall_ms: round(total.wall_ms, 1), total_cpu_ms: round(total.cpu_ms, 1), wal_bytes: wal.bytes, phases })
    log(`round ${round_ + 1} ${lib.name}: ${result.deleted.length} notes, ${Math.round(total.wall_ms)} ms wall, ${Math.round(total.cpu_ms)} ms CPU, WAL ${(wal.bytes / 2 ** 20).toFixed(1)} MiB; `
      + Object.entries(phases).map(([k, s]) => `${k} ${Math.round(s.cpu_ms)}`).join(', '))
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}
/** Per lib: the median of each phase over the rounds. */
const medians = Object.fromEntries([...runs].map(([name, rs]) => {
  const names = [...new Set(rs.flatMap((r) => Object.keys(r.phases)))]
  const phases = Object.fromEntries(names.map((p) => [p, {
    wall_ms: round(median(rs.map((r) => r.phases[p]?.wall_ms ?? 0)), 1), cpu_ms: round(median(rs.map((r) => r.phases[p]?.cpu_ms ?? 0)), 1),
  }]).sort((a, b) => (b[1] as { cpu_ms: number }).cpu_ms - (a[1] as { cpu_ms: number }).cpu_ms))
  return [name, { total_wall_ms: round(median(rs.map((r) => r.total_wall_ms)), 1), total_cpu_ms: round(median(rs.map((r) => r.total_cpu_ms)), 1),
    wal_bytes: median(rs.map((r) => r.wal_bytes)), phases }]
}))
const out = {
  blocks: N, forgotten: FORGET, rounds: ROUNDS, index: args['as-committed'] ? 'as committed' : 'merged first',
  median: medians,
  ...(runs.has('baseline') ? {
    cpu_ratio_vs_baseline: round(medians.this!.total_cpu_ms / medians.baseline!.total_cpu_ms, 3),
    wall_ratio_vs_baseline: round(medians.this!.total_wall_ms / medians.baseline!.total_wall_ms, 3),
  } : {}),
  totals: Object.fromEntries([...runs].map(([name, rs]) => [name, rs.map((r) => ({ wall_ms: r.total_wall_ms, cpu_ms: r.total_cpu_ms }))])),
}
if (asJson) console.log(JSON.stringify(out))
else console.log(JSON.stringify(out, null, 2))
rmSync(dir, { recursive: true, force: true })
