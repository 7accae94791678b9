/**
 * `npm run bench:follow-up -- [--blocks N] [--queries Q] [--earlier E] [--store FILE] [--json]`
 *
 * The cost of reading a live conversation (`lib/recall/conversation.ts`) at N notes of
 * `bench:perf`'s corpus: a vague follow-up question ("那后来怎么样了？", "and what about the other
 * one?"), which alone matches nothing and so is recalled again with its E earlier messages (each
 * a `bench:perf` query), against the same question alone, recall + gate, alternating which goes
 * first query by query. Two passes; the second (warm caches, as every turn after the first) is
 * reported: wall-clock p50 / p99 ms of each, and their ratio. The store is built (one
 * `commitMany` per 5,000 notes, then `upkeep`) unless `--store` names a file that already holds
 * the corpus; bench:perf's pre-step turns each start a session, so they never read a conversation.
 *
 * `--session T [--baseline REF] [--window TOKENS]`: instead, the real pre-step through T turns of
 * one session (`bench/prestep-session.ts`) on a copy of that store, each turn a `bench:perf` query:
 * wall and CPU p50 / p99 of the pre-step, of its recall and of its bookkeeping over the first 50
 * turns and the 50 ending at turns 100, 500, 1,000 and T; with `--baseline`, the same session on
 * `lib/` as of the git ref REF, turn by turn alternating with the working tree's. `--window`: the
 * model's context window (compaction at half of it; default none).
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { DEFAULT_FALLOFF, DEFAULT_MIN_RELEVANCE, gateHits } from '../lib/recall/gate.ts'
import { recallBlocks } from '../lib/recall/recall.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exitOnHelp, jsonWanted, progressLog, wholeFlag } from './args.ts'
import { QUERY_KINDS, SCALE_QUERY_KINDS, corpus } from './corpus.ts'
import { afterCompaction, measureSession, windowSummary, type Build } from './prestep-session.ts'
import { nowMs, round, summary } from './stats.ts'

const USAGE = 'npm run bench:follow-up -- [--blocks N] [--queries Q] [--earlier E] [--store FILE] [--seed S] [--json]\n' +
  '       npm run bench:follow-up -- --session T [--baseline REF] [--window TOKENS] [--blocks N] [--store FILE] [--seed S] [--json]\n\n' +
  'The cost of reading a live conversation: a vague follow-up recalled with its E earlier messages against the same question alone, at N notes (docs/recall.md, "The live conversation").\n' +
  'With --session: the real pre-step through T turns of one session, at turn 1 and at turn T (bench/prestep-session.ts); --baseline REF runs lib/ as of that git ref alongside, turn by turn.'
exitOnHelp(USAGE)
const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '400' },
    earlier: { type: 'string', default: '4' },
    store: { type: 'string', default: '' },
    seed: { type: 'string', default: '20261130' },
    session: { type: 'string', default: '0' },
    baseline: { type: 'string', default: '' },
    window: { type: 'string', default: '0' },
    json: { type: 'boolean' },
  },
})
const json = jsonWanted(args.json)
const log = progressLog(json)
const blocks = wholeFlag('blocks', args.blocks)
const queries = wholeFlag('queries', args.queries)
const earlierCount = wholeFlag('earlier', args.earlier)
const generator = corpus(wholeFlag('seed', args.seed))
const path = args.store !== '' ? args.store : join(tmpdir(), `stablemem-follow-up-${blocks}.sqlite`)
const store = new BlockStore(path)
if (store.count() < blocks) {
  for (let i = store.count(); i < blocks; i += 5_000) {
    store.commitMany(Array.from({ length: Math.min(5_000, blocks - i) }, (_, j) => ({ text: generator.block(i + j).text })))
  }
  store.upkeep()
}
log(`${store.count()} notes in ${path}`)
const sessionTurns = wholeFlag('session', args.session, 0)
if (sessionTurns > 0) {
  store.close()
  await longSession(sessionTurns)
  process.exit(0)
}
const gate = { minRelevance: DEFAULT_MIN_RELEVANCE, falloff: DEFAULT_FALLOFF, minScore: 0, topK: 5 }
const VAGUE = ['那后来怎么样了？', '那个定了吗？', 'and what about the other one?', '还有别的吗？']
const asked = (i: number) => generator.query(QUERY_KINDS[i % QUERY_KINDS.length]!, (i * 7_919) % blocks)
const time = (message: string, earlier: string[]) => {
  const start = nowMs()
  gateHits(recallBlocks(store, message, { topK: 5, earlier }), gate)
  return nowMs() - start
}
let alone: number[] = []
let withEarlier: number[] = []
for (let pass = 0; pass < 2; pass++) {
  alone = []
  withEarlier = []
  for (let i = 0; i < queries; i++) {
    const message = VAGUE[i % VAGUE.length]!
    const earlier = Array.from({ length: earlierCount }, (_, k) => asked(i + k))
    if (i % 2 === 0) {
      alone.push(time(message, []))
      withEarlier.push(time(message, earlier))
    } else {
      withEarlier.push(time(message, earlier))
      alone.push(time(message, []))
    }
  }
}
store.close()
const a = summary(alone)
const e = summary(withEarlier)
const result = {
  blocks, queries, earlier: earlierCount, load: round(loadavg()[0]!, 2),
  alone: a, with_earlier: e, p50_ratio: round(e.p50_ms / a.p50_ms, 2), p99_ratio: round(e.p99_ms / a.p99_ms, 2),
}
log(`follow-up alone p50 ${a.p50_ms} ms p99 ${a.p99_ms} ms; with ${earlierCount} earlier messages p50 ${e.p50_ms} ms p99 ${e.p99_ms} ms`)
if (json) process.stdout.write(`${JSON.stringify(result)}\n`)

/** `--session T`: the pre-step through T turns of one session, on the working tree's lib/ and, with `--baseline`, a git ref's. */
async function longSession(turns: number): Promise<void> {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..')
  const builds: Build[] = [{ label: 'current', lib: join(root, 'lib') }]
  const contextWindow = wholeFlag('window', args.window, 0) || 1e9
  let baselineDir: string | undefined
  if (args.baseline !== '') {
    const sha = execFileSync('git', ['rev-parse', '--short', `${args.baseline}^{commit}`], { cwd: root, encoding: 'utf8' }).trim()
    // Inside the project, so its bare imports resolve through node_modules (as test/helpers/mutant.ts does).
    baselineDir = join(root, '.cache', 'bench-baseline', `${sha}-${process.pid}`)
    mkdirSync(baselineDir, { recursive: true })
    execFileSync('sh', ['-c', `git archive ${sha} lib | tar -x -C '${baselineDir}'`], { cwd: root })
    builds.push({ label: `baseline ${sha}`, lib: join(baselineDir, 'lib') })
  }
  const scratch = mkdtempSync(join(tmpdir(), 'stablemem-session-'))
  const query = (i: number) => generator.query(SCALE_QUERY_KINDS[i % SCALE_QUERY_KINDS.length]!, Math.floor((i * 1_234_567) % blocks))
  const started = nowMs()
  try {
    const samples = await measureSession({
      store: path, scratch, builds, contextWindow, log,
      warmup: Array.from({ length: 20 }, (_, i) => query(turns + i)),
      queries: Array.from({ length: turns }, (_, i) => query(i)),
    })
    const span = Math.min(50, turns)
    const ends = [...new Set([span, 100, 500, 1_000, turns].filter((t) => t >= span && t <= turns))].sort((a, b) => a - b)
    const windows = Object.fromEntries(Object.entries(samples).map(([label, s]) => [label, ends.map((end) => windowSummary(s, end - span + 1, end))]))
    for (const [label, list] of Object.entries(windows)) {
      for (const w of list) {
        log(`${label.padEnd(18)} turns ${w.turns.padEnd(9)} (${w.events} events, ${w.surface} on the surface, ${w.compactions} compactions): pre-step p50 ${w.prestep.p50_ms} p99 ${w.prestep.p99_ms} ms ` +
          `(cpu ${w.prestep_cpu.p50_ms} / ${w.prestep_cpu.p99_ms}); recall cpu ${w.recall_cpu.p50_ms} / ${w.recall_cpu.p99_ms}; bookkeeping cpu ${w.bookkeeping_cpu.p50_ms} / ${w.bookkeeping_cpu.p99_ms} ` +
          `(repeats ${w.shown_cpu.p50_ms}, conversation ${w.conversation_cpu.p50_ms}, place ${w.place_cpu.p50_ms} at p50); the rest cpu ${w.other_cpu.p50_ms} / ${w.other_cpu.p99_ms}`)
      }
    }
    const compaction = Object.fromEntries(Object.entries(samples).map(([label, s]) => [label, afterCompaction(s)]))
    for (const [label, c] of Object.entries(compaction)) {
      if (c.after_compaction.turns > 0) log(`${label.padEnd(18)} the ${c.after_compaction.turns} turns after a compaction: repeat memory cpu p50 ${c.after_compaction.shown_cpu_p50_ms} max ${c.after_compaction.shown_cpu_max_ms} ms (other turns p50 ${c.other_turns.shown_cpu_p50_ms} max ${c.other_turns.shown_cpu_max_ms})`)
    }
    const result = { blocks, session: turns, context_window: contextWindow === 1e9 ? null : contextWindow, elapsed_s: Math.round((nowMs() - started) / 1000), load: loadavg().map((l) => round(l, 2)), windows, compaction }
    log(`${turns} turns in ${result.elapsed_s} s; load average ${result.load.join(' ')}`)
    if (json) process.stdout.write(`${JSON.stringify(result)}\n`)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
    if (baselineDir !== undefined) rmSync(baselineDir, { recursive: true, force: true })
  }
}
