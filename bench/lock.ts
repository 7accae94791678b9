/**
 * `npm run bench:lock -- [--blocks N] [--turns T] [--rounds R] [--json]`
 *
 * What a turn costs while another real process holds the store's write lock (an import paused
 * with Ctrl-Z, a long backfill), against the same turns with the lock free, in the same run:
 * real agent-loop turns with the plugin mounted, timed around its pre-step listener
 * (bench/prestep.ts). Rounds alternate free and held, so load changes hit both alike. Prints one
 * JSON object: p50/p99 per-turn overhead free and held, the extra time held costs (p50 and p99),
 * their ratio, and how many held turns still injected notes.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { BlockStore } from '../lib/store/store.ts'
import { exitOnHelp, wholeFlag } from './args.ts'
import { QUERY_KINDS, corpus, type QueryKind } from './corpus.ts'
import { measurePreStep } from './prestep.ts'
import { round, summary } from './stats.ts'

const USAGE = 'npm run bench:lock -- [--blocks N] [--turns T] [--rounds R] [--json]\n\nA turn while another process holds the store\'s write lock, against free turns in the same run; prints one JSON object (docs/reliability.md).'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '5000' },
    turns: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '3' },
    seed: { type: 'string', default: '20261130' },
    // The output is one JSON line either way; `--json` is accepted as every bench accepts it.
    json: { type: 'boolean', default: false },
  },
})
const N = wholeFlag('blocks', args.blocks)
const TURNS = wholeFlag('turns', args.turns)
const ROUNDS = wholeFlag('rounds', args.rounds)
const WARMUP = 5

const dir = mkdtempSync(join(tmpdir(), 'stablemem-bench-lock-'))
const storePath = join(dir, 'memory.db')
const gen = corpus(wholeFlag('seed', args.seed))
const store = new BlockStore(storePath)
for (let i = 0; i < N; i += 500) store.commitMany(Array.from({ length: Math.min(500, N - i) }, (_, k) => ({ text: gen.block(i + k).text })))
store.close()
// Queries that find notes (exact symbols and phrases), so every turn records accesses.
const kinds: QueryKind[] = QUERY_KINDS.filter((k) => k !== 'absent_symbol')
const queries = Array.from({ length: WARMUP + TURNS }, (_, i) => gen.query(kinds[i % kinds.length]!, (i * 7_919) % N))

/** Holds the write lock from a child process until the returned function is called. */
async function holdLock(): Promise<() => Promise<void>> {
  const script = fileURLToPath(new URL('../test/reliability/fixtures/locker.ts', import.meta.url))
  const child = spawn(process.execPath, [script, storePath], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout })
  await new Promise<void>((resolve) => lines.on('line', (l) => { if (l === 'locked') resolve() }))
  return async () => {
    child.stdin.end()
    await new Promise((resolve) => child.on('close', resolve))
  }
}

const free: number[] = []
const held: number[] = []
let heldInjected = 0
let heldTurns = 0
for (let r = 0; r < ROUNDS; r++) {
  free.push(...(await measurePreStep(storePath, queries.slice(WARMUP), WARMUP)).overheadMs)
  const release = await holdLock()
  const result = await measurePreStep(storePath, queries.slice(WARMUP), WARMUP)
  await release()
  held.push(...result.overheadMs)
  heldInjected += result.injected
  heldTurns += result.turns
}
rmSync(dir, { recursive: true, force: true })
const a = summary(free)
const b = summary(held)
console.log(JSON.stringify({
  blocks: N, turns_per_side: free.length, load: loadavg().map((x) => round(x, 2)),
  free_p50_ms: a.p50_ms, free_p99_ms: a.p99_ms,
  held_p50_ms: b.p50_ms, held_p99_ms: b.p99_ms,
  extra_p50_ms: round(b.p50_ms - a.p50_ms), extra_p99_ms: round(b.p99_ms - a.p99_ms),
  ratio_p50: round(b.p50_ms / a.p50_ms), held_turns_injected: `${heldInjected}/${heldTurns}`,
}))
