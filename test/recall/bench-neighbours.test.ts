import t from 'tap'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** `bench:neighbours` runs end to end on a small store and prints one JSON line with every query kind, with and without. */
const BENCH = fileURLToPath(new URL('../../bench/neighbours.ts', import.meta.url))

t.test('bench:neighbours prints both sides for every kind, and names a bad flag', async (t) => {
  const run = spawnSync(process.execPath, [BENCH, '--blocks', '300', '--queries', '3', '--json'], { encoding: 'utf8' })
  t.equal(run.status, 0, run.stderr)
  const lines = run.stdout.trim().split('\n')
  t.equal(lines.length, 1, 'stdout is the JSON line alone')
  const out = JSON.parse(lines[0]!) as { blocks: number, kinds: Record<string, { with: { cpu: { p99_ms: number } }, without: { cpu: { p99_ms: number } }, cpu_p50_added_ms: number }> }
  t.equal(out.blocks, 300)
  t.same(Object.keys(out.kinds), ['zh_phrase', 'en_words', 'exact_symbol', 'long_conversational', 'absent_symbol', 'common_term'])
  for (const kind of Object.values(out.kinds)) t.ok(kind.with.cpu.p99_ms >= 0 && kind.without.cpu.p99_ms >= 0 && Number.isFinite(kind.cpu_p50_added_ms))
  const bad = spawnSync(process.execPath, [BENCH, '--blocks', 'many'], { encoding: 'utf8' })
  t.not(bad.status, 0)
  t.match(bad.stderr, /--blocks must be a positive integer/)
})
