import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { runRecallBench } from '../../bench/recall.ts'
import { precisionTable, runPrecisionBench } from '../../bench/recall/precision.ts'
import { allSetsTable, evalSetsIn, runAllSets } from '../../bench/recall/all-sets.ts'
import { EvalSetError, evalRoot, readEvalSet } from '../../bench/recall/eval-set.ts'
import { FloorIndex } from '../../bench/recall/floors.ts'
import { metrics } from '../../bench/recall/metrics.ts'
import { tempDir } from '../helpers/temp.ts'

const BENCH = new URL('../../bench/recall.ts', import.meta.url).pathname

function tinySet(corpus: unknown[], queries: unknown[]): string {
  const dir = tempDir('stablemem-eval')
  writeFileSync(join(dir, 'corpus.jsonl'), corpus.map((r) => JSON.stringify(r)).join('\n'))
  writeFileSync(join(dir, 'queries.jsonl'), queries.map((r) => JSON.stringify(r)).join('\n'))
  return dir
}

// Every note its own session: saved side by side in one session, b1 would be recalled as b2's
// conversation neighbour (lib/recall/neighbours.ts), and these tests pin the bench's counting of
// a gold note no query term reaches, not the ranking.
const CORPUS = [
  { id: 'a1', text: 'billing 服务端口 8499', session: 's1', scope: 'u1' },
  { id: 'a2', text: '周会改到周三下午', session: 's2', scope: 'u1' },
  { id: 'b1', text: 'Alice likes dark roast coffee', session: 's3', scope: 'u2' },
  { id: 'b2', text: 'Bob is allergic to peanuts', session: 's4', scope: 'u2' },
]
const QUERIES = [
  { qid: 'q1', query: 'billing 端口', gold: ['a1'], category: 'zh', scope: 'u1' },
  { qid: 'q2', query: 'what coffee does Alice like', gold: ['b1'], category: 'en', scope: 'u2' },
  { qid: 'q3', query: 'peanut allergy', gold: ['b2', 'b1'], category: 'en', scope: 'u2' },
]

t.test('metrics follow the eval README definitions', async (t) => {
  const m = metrics([
    { category: 'x', gold: ['a', 'b'], ranked: ['c', 'a', 'd', 'e', 'f', 'b'] },
    { category: 'x', gold: ['z'], ranked: ['c'] },
  ], [5, 10])
  t.same(m, { n: 2, 'recall@5': 0.25, 'hit@5': 0.5, 'recall@10': 0.5, 'hit@10': 0.5, 'mrr@10': 0.25 })
})

t.test('a tiny set runs scoped, with per-category metrics and same-run floors', async (t) => {
  const set = readEvalSet(tinySet(CORPUS, QUERIES))
  const { result, tables } = await runRecallBench(set, { mode: 'scoped', ks: [1, 5] })
  t.equal(result.stores, 2)
  t.equal(result.n, 3)
  t.equal(result['hit@1'], 1, 'every query finds a gold note first')
  t.same(Object.keys(result.by_category as object), ['en', 'zh'])
  t.same(Object.keys(result.floors as object), ['unicode61', 'porter', 'trigram', 'cjk_bigram'])
  t.match(tables, /cjk_bigram/)
  // A plugged-in recall is measured instead of the default (how a hybrid recall is benchmarked).
  const { result: empty } = await runRecallBench(set, { mode: 'scoped', ks: [5], recall: () => [] })
  t.equal(empty['recall@5'], 0)
})

t.test('each floor tokenises as the eval README says', async (t) => {
  const blocks = [{ id: 'en', text: 'the configuration file of the gateway' }, { id: 'zh', text: '网关的配置文件在这里' }, { id: 'x', text: 'unrelated words' }]
  const floors = Object.fromEntries((['unicode61', 'porter', 'trigram', 'cjk_bigram'] as const).map((f) => [f, new FloorIndex(f, blocks)]))
  t.teardown(() => { for (const f of Object.values(floors)) f.close() })
  t.same(floors.unicode61!.search('configure', 5), [], 'unicode61: whole words only')
  t.same(floors.porter!.search('configurations', 5), ['en'], 'porter: stems')
  t.same(floors.trigram!.search('configure', 5), ['en'], 'trigram: shared 3-character windows')
  t.same(floors.trigram!.search('配置文件', 5), ['zh'])
  t.same(floors.trigram!.search('网关', 5), [], 'trigram: a 2-character token has no window')
  t.same(floors.unicode61!.search('配置文件', 5), [], 'unicode61: a CJK run is one token')
  t.same(floors.cjk_bigram!.search('网关', 5), ['zh'], 'cjk_bigram: bigrams')
})

t.test('the CLI prints the JSON result as its last line', async (t) => {
  const dir = tinySet(CORPUS, QUERIES)
  // Without npm's own json setting, whatever runs this test (see the npm case below).
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => key !== 'npm_config_json'))
  const run = spawnSync(process.execPath, [BENCH, '--data', dir, '--json', '--k', '1,5'], { encoding: 'utf8', env })
  const lines = run.stdout.trim().split('\n')
  t.equal(lines.length, 1, 'with --json stdout holds the JSON line alone')
  t.match(run.stderr, /R@5/, 'and the tables go to stderr')
  const last = JSON.parse(lines.at(-1)!)
  for (const key of ['dataset', 'mode', 'n', 'recall@5', 'recall@10', 'hit@5', 'mrr@10', 'p50_ms', 'p99_ms', 'by_category']) t.ok(key in last, key)
  t.equal(last.mode, 'scoped', 'default mode is scoped when the corpus has several scopes')
  // `npm run bench:recall --json -- --data …`: npm keeps a --json before `--` as its own setting
  // and passes only npm_config_json=true on; the bench still gives the JSON line.
  const viaNpm = execFileSync(process.execPath, [BENCH, '--data', dir, '--k', '1,5'], { encoding: 'utf8', env: { ...env, npm_config_json: 'true' }, stdio: ['ignore', 'pipe', 'ignore'] })
  t.same(Object.keys(JSON.parse(viaNpm.trim())), Object.keys(last), 'a --json npm kept for itself gives the same JSON line')
  const md = execFileSync(process.execPath, [BENCH, '--data', dir, '--markdown'], { encoding: 'utf8', env }).trim().split('\n')
  t.same(md.slice(0, 3), ['| category | n | system | R@5 | R@10 | hit@5 | MRR@10 |', '|---|---|---|---|---|---|---|', '| (all) | 3 | **ours** | **0.833** | **0.833** | **1.000** | **1.000** |'], '--markdown prints the docs table')
  t.equal(md.length, 2 + 3 * 5, 'a row for ours and each floor, overall and per category')
})

t.test('an unreadable set gets one clear error line and exit code 1', async (t) => {
  const cases: Array<[string[], RegExp]> = [
    [['--data', join(tmpdir(), 'no-such-eval-set')], /cannot read .*corpus\.jsonl: ENOENT/],
    [['--data', tinySet([{ id: 'x' }], QUERIES)], /corpus\.jsonl:1: "text" must be a string/],
    [['--data', tinySet(CORPUS, [{ qid: 'q', query: 'x', gold: [] }])], /queries\.jsonl:1: "gold" must be a non-empty array/],
    [['--data', tinySet(CORPUS, [{ ...QUERIES[0], scope: 'nobody' }]), '--mode', 'scoped'], /scope "nobody" has no blocks/],
    [['--mode', 'sideways'], /--mode must be scoped or global/],
    [['--eval', join(tmpdir(), 'no-such-eval-root')], /--eval .*no-such-eval-root: no such folder/],
    [['--all', '--data', tinySet(CORPUS, QUERIES)], /--all runs every set: leave out --data/],
    [['--negatives', 'cross-scope'], /--negatives needs --data <dir>/],
    [['--sideways'], /unknown option --sideways \(usage: bench:recall .*--help for all\)/],
  ]
  for (const [args, message] of cases) {
    const run = spawnSync(process.execPath, [BENCH, ...args], { encoding: 'utf8' })
    t.equal(run.status, 1, args.join(' '))
    t.equal(run.stderr.trim().split('\n').length, 1, 'one line')
    t.match(run.stderr, message)
  }
  const broken = tinySet(CORPUS, QUERIES)
  writeFileSync(join(broken, 'queries.jsonl'), '{not json')
  const run = spawnSync(process.execPath, [BENCH, '--data', broken], { encoding: 'utf8' })
  t.match(run.stderr, /queries\.jsonl:1: not a JSON object/)
})

t.test('an embedder that is down, or an --embed-url that is not one, ends the run with one line naming it and exit code 1', async (t) => {
  const dead = await deadPort()
  const dir = tinySet(CORPUS, QUERIES)
  const cases: Array<[string[], RegExp]> = [
    [['--embed-url', `http://127.0.0.1:${dead}`], new RegExp(`^bench:recall: embedder http://127\\.0\\.0\\.1:${dead} \\(model "default"\\) could not embed the corpus \\(4 texts\\): embedding request failed: connect ECONNREFUSED`)],
    [['--embed-url', `http://127.0.0.1:${dead}`, '--negatives', 'cross-scope', '--json'], /could not embed the corpus/],
    [['--embed-url', 'not-a-url'], /^bench:recall: embedder not-a-url \(model "default"\) cannot be used: embed\.baseUrl is not a URL/],
  ]
  for (const [args, message] of cases) {
    const run = spawnSync(process.execPath, [BENCH, '--data', dir, ...args], { encoding: 'utf8' })
    t.equal(run.status, 1, args.join(' '))
    t.equal(run.stderr.trim().split('\n').length, 1, 'one line, no stack trace')
    t.match(run.stderr, message)
    t.equal(run.stdout, '', 'and no result: without its embedder the run measured nothing it was asked to')
  }
})

/** A local port nothing listens on: one the kernel just gave out and got back. */
async function deadPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

t.test('negatives: cross-scope and cross-set runs count false injections with and without the gate', async (t) => {
  const set = readEvalSet(tinySet(CORPUS, QUERIES))
  const gate = { minRelevance: 0.3, falloff: 0.33, minScore: 0, topK: 5 }
  const scoped = await runPrecisionBench(set, { mode: 'scoped', negatives: { kind: 'cross-scope' }, gate })
  t.match(scoped, { negatives: 'cross-scope', ungated: { 'recall@5': 0.8333 }, gated: { 'recall@5': 0.8333, negative: { turns: 3, injected: 0, mean_chars: 0 } } },
    'each scope asked the other\'s questions injects nothing; in its own store each ranked gold note passes ("peanut allergy" holds half: "peanut", not "allergy")')
  const other = readEvalSet(tinySet([{ id: 'z1', text: 'Alice moved to Lisbon in March', session: 'z', scope: '' }], [{ qid: 'z', query: 'Lisbon', gold: ['z1'] }]))
  const crossed = await runPrecisionBench(set, { mode: 'scoped', negatives: { kind: 'cross-set', against: other }, gate: { ...gate, minRelevance: 0, falloff: 0 } })
  t.match(crossed, { negatives: `cross-set against ${other.name}`, ungated: { negative: { turns: 3, injected: 1 } }, gated: { negative: { turns: 3, injected: 1 } } },
    'ungated, the question naming Alice gets the Lisbon note from the other set; a gate of 0 lets it through too')
  t.match(precisionTable(scoped), /false inj\./)
  const half = await runPrecisionBench(set, { mode: 'scoped', negatives: { kind: 'cross-scope' }, gate, half: 'b' })
  t.match(half, { half: 'b', gated: { negative: { turns: 1 } } }, 'half b: the queries at odd positions')
  const cli = spawnSync(process.execPath, [BENCH, '--data', tinySet(CORPUS, QUERIES), '--negatives', 'cross-set'], { encoding: 'utf8' })
  t.match(cli.stderr, /--negatives cross-set and --against <dir> go together/)
  const lone = spawnSync(process.execPath, [BENCH, '--data', tinySet(CORPUS.slice(0, 2), QUERIES.slice(0, 1)), '--negatives', 'cross-scope'], { encoding: 'utf8' })
  t.match(lone.stderr, /needs at least two scopes/)
})

t.test('the eval sets are found beside a checkout or a folder above it (a worktree), else one error naming the flag', async (t) => {
  const root = tempDir('stablemem-eval-root')
  mkdirSync(join(root, 'shared', 'eval'), { recursive: true })
  mkdirSync(join(root, 'wt', 'branch', 'bench'), { recursive: true })
  t.equal(evalRoot(undefined, '--eval', [join(root, 'wt', 'branch')]), join(root, 'shared', 'eval'))
  t.equal(evalRoot(undefined, '--eval', [join(root, 'wt', 'branch', 'bench')]), join(root, 'shared', 'eval'))
  const elsewhere = tempDir('stablemem-no-eval')
  t.equal(evalRoot(undefined, '--eval', [elsewhere, join(root, 'wt')]), join(root, 'shared', 'eval'), 'the second start when the first finds none')
  t.throws(() => evalRoot(undefined, '--eval', [elsewhere]), new EvalSetError(`the eval sets (shared/eval) are beside neither this checkout nor the working folder, nor any folder above them (${elsewhere}); pass --eval <dir>`))
  t.equal(evalRoot(join(root, 'shared', 'eval'), '--data'), join(root, 'shared', 'eval'))
  t.throws(() => evalRoot(join(root, 'nowhere'), '--data'), new EvalSetError(`--data ${join(root, 'nowhere')}: no such folder`))
})

t.test('with no --data every set runs in each mode it has, ranked and gated, against every kind of negatives', async (t) => {
  const root = tempDir('stablemem-eval-all')
  const place = (name: string, corpus: unknown[], queries: unknown[]) => {
    mkdirSync(join(root, name))
    writeFileSync(join(root, name, 'corpus.jsonl'), corpus.map((r) => JSON.stringify(r)).join('\n'))
    writeFileSync(join(root, name, 'queries.jsonl'), queries.map((r) => JSON.stringify(r)).join('\n'))
  }
  place('two-scopes', CORPUS, QUERIES)
  place('one-scope', [{ id: 'z1', text: 'Alice moved to Lisbon in March', session: 'z' }], [{ qid: 'z', query: 'Lisbon', gold: ['z1'] }])
  mkdirSync(join(root, 'not-a-set'))
  const sets = evalSetsIn(root)
  t.same(sets.map((s) => s.name), ['one-scope', 'two-scopes'], 'folders holding both files, by name')
  const gate = { minRelevance: 0.3, falloff: 0.33, minScore: 0, topK: 5 }
  const rows = await runAllSets(sets, { gate })
  t.same(rows.map((r) => `${r.dataset} ${r.mode}`), ['one-scope scoped', 'one-scope live', 'two-scopes scoped', 'two-scopes global', 'two-scopes live'],
    'global too where a set has several scopes; live (the queries as a live conversation\'s last message) for every set')
  t.match(rows[0], { queries: 1, ranked: { 'recall@5': 1, 'recall@10': 1 }, gated: { 'recall@5': 1, 'recall@10': 1 }, cross_set_false_injections: 0, cross_scope_false_injections: null })
  t.same(rows[2]!.suite.negatives.map((n) => n.against), ['cross-set against one-scope', 'cross-scope'])
  t.match(rows[2], { ranked: { 'recall@5': 0.8333 }, gated: { 'recall@5': 0.8333 }, cross_scope_false_injections: 0 },
    'the same figures as the single-set precision run of the test above')
  t.match(rows[4], { mode: 'live', queries: 3 }, 'the live row asks every query')
  t.match(allSetsTable(rows, 't'), /two-scopes\s+global\s+3\s+0\.833/)
  const cli = spawnSync(process.execPath, [BENCH, '--eval', root, '--json'], { encoding: 'utf8' })
  t.equal(cli.status, 0, cli.stderr)
  const out = JSON.parse(cli.stdout.trim()) as { rows: Array<{ dataset: string }> }
  t.equal(cli.stdout.trim().split('\n').length, 1, 'stdout is the JSON line alone')
  t.same(out.rows.map((r) => r.dataset), ['one-scope', 'one-scope', 'two-scopes', 'two-scopes', 'two-scopes'])
  t.match(cli.stderr, /gated R@5/, 'the table goes to stderr')
  const help = spawnSync(process.execPath, [BENCH, '--help'], { encoding: 'utf8' })
  t.equal(help.status, 0)
  t.match(help.stdout, /^usage: bench:recall \[--all\]/)
})

t.test('--no-neighbours measures the same sets without conversation neighbours, for a baseline in the same run', async (t) => {
  const root = tempDir('stablemem-eval-neighbours')
  mkdirSync(join(root, 'chat'))
  // The answer (c2) shares no word with the question; only its place beside c1 in session s1 finds it.
  const corpus = [
    { id: 'c1', text: 'Which database did you pick for the ledger service?', session: 's1', time: '2024-01-01T10:00' },
    { id: 'c2', text: 'We went with Postgres in the end.', session: 's1', time: '2024-01-01T10:00' },
    { id: 'c3', text: 'Lunch is at the noodle place on Friday.', session: 's2', time: '2024-01-02T10:00' },
  ]
  writeFileSync(join(root, 'chat', 'corpus.jsonl'), corpus.map((r) => JSON.stringify(r)).join('\n'))
  writeFileSync(join(root, 'chat', 'queries.jsonl'), JSON.stringify({ qid: 'q', query: 'database for the ledger service', gold: ['c1', 'c2'] }))
  const run = (...extra: string[]) => {
    const cli = spawnSync(process.execPath, [BENCH, '--eval', root, '--json', ...extra], { encoding: 'utf8' })
    t.equal(cli.status, 0, cli.stderr)
    return JSON.parse(cli.stdout.trim()) as { neighbours: boolean, rows: Array<{ ranked: { 'recall@5': number } }> }
  }
  t.match(run(), { neighbours: true, rows: [{ ranked: { 'recall@5': 1 } }] })
  t.match(run('--no-neighbours'), { neighbours: false, rows: [{ ranked: { 'recall@5': 0.5 } }] })
})
