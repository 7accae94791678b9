import { existsSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { COMMANDS } from '../lib/cli/run.ts'
import { SCHEMA_VERSION } from '../lib/store/schema.ts'
import { runCli } from './helpers/cli.ts'
import { tempDir } from './helpers/temp.ts'

t.test('every command has --help, exit 0, synopsis first', async (t) => {
  for (const name of Object.keys(COMMANDS)) {
    const r = await runCli([name, '--help'])
    t.equal(r.code, 0, `${name} --help exits 0`)
    t.match(r.stdout, new RegExp(`^Usage: stablemem ${name}`), `${name} --help starts with its synopsis`)
    t.equal(r.stderr, '')
  }
  const top = await runCli(['--help'])
  t.equal(top.code, 0)
  for (const name of Object.keys(COMMANDS)) t.match(top.stdout, `  ${name} `)
})

t.test('usage errors exit 2 with one line on stderr', async (t) => {
  const db = join(tempDir('stablemem-cli'), 'm.db')
  const cases: Array<[string[], RegExp]> = [
    [[], /Usage: stablemem <command>/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['stats', '--bogus', '--db', db], /unknown option --bogus/],
    [['commit', '--db', db], /missing argument/],
    [['get', 'a', 'b', '--db', db], /unexpected argument "b"/],
    [['recall', 'x', '--k', '0', '--db', db], /--k must be a whole number/],
    [['recall', 'x', '--k', 'five', '--db', db], /--k must be a whole number/],
    [['export', '--format', 'csv', '--db', db], /--format must be jsonl or md/],
    [['get', 'blk_nothex', '--db', db], /is not a block id/],
    [['stats', '--db', ''], /--db needs a path/],
  ]
  for (const [args, message] of cases) {
    const r = await runCli(args)
    t.equal(r.code, 2, `${args.join(' ')} → 2`)
    t.match(r.stderr, message)
    if (args.length > 0) t.equal(r.stderr.trim().split('\n').length, 1, `${args.join(' ')}: one line`)
    t.equal(r.stdout, '')
  }
  t.notOk(existsSync(db), 'no usage error created the store file')
})

t.test('commit, get and recall: Chinese and English, exact pin, read-only recall', async (t) => {
  const db = join(tempDir('stablemem-cli'), 'm.db')
  const zh = await runCli(['commit', 'billing 服务端口 8499，部署在 10.3.7.9', '--scene', 'ops', '--db', db, '--json'])
  t.equal(zh.code, 0, zh.stderr)
  const zhId = JSON.parse(zh.stdout) as { id: string, created: boolean }
  t.match(zhId, { id: /^blk_[0-9a-f]{24}$/, created: true })
  const en = await runCli(['commit', 'The staging database runs PostgreSQL 16.4 on db-stage.internal:5433', '--source', 'ops', '--db', db])
  t.match(en.stdout, /^saved blk_[0-9a-f]{24}\n$/)
  const again = await runCli(['commit', '  billing 服务端口 8499，部署在 10.3.7.9 ', '--db', db])
  t.equal(again.stdout, `already stored as ${zhId.id}\n`, 'same text, same id')

  const got = await runCli(['get', zhId.id, '--db', db, '--json'])
  t.match(JSON.parse(got.stdout), { id: zhId.id, text: 'billing 服务端口 8499，部署在 10.3.7.9', source: 'cli', scene: 'ops', accessCount: 0, edges: [] })
  const human = await runCli(['get', zhId.id, '--db', db])
  t.match(human.stdout, /> billing 服务端口 8499/)

  const recalled = await runCli(['recall', '8499 是哪个服务的端口？', '--db', db, '--json'])
  t.equal(recalled.code, 0, recalled.stderr)
  const { hits } = JSON.parse(recalled.stdout) as { hits: Array<{ id: string, score: number, exact: boolean, why: string }> }
  t.equal(hits[0]?.id, zhId.id)
  t.equal(hits[0]?.exact, true)
  t.ok(hits[0]!.score >= 1, 'pinned score')
  t.match(hits[0]?.why, /exact 8499/)
  const english = await runCli(['recall', 'which PostgreSQL version is on staging?', '--db', db])
  t.match(english.stdout, /^1\. blk_[0-9a-f]{24}  score [0-9.]+  relevance [0-9.]+\n   why: .*postgresql.*\n   > The staging database runs PostgreSQL 16\.4/)
  const none = await runCli(['recall', 'zebra', '--db', db])
  t.equal(none.stdout, 'no notes match\n')
  const typo = await runCli(['recall', '8494 是哪个服务的端口？', '--db', db])
  t.equal(typo.stdout, 'no record of 8494 (recall abstains)\none typo away, the store holds: 8499\n')
  const absent = await runCli(['recall', '19999 是哪个服务的端口？', '--db', db])
  t.equal(absent.stdout, 'no record of 19999 (recall abstains)\n')
  const after = JSON.parse((await runCli(['get', zhId.id, '--db', db, '--json'])).stdout) as { accessCount: number }
  t.equal(after.accessCount, 0, 'recall from the CLI is read-only')

  const missing = await runCli(['get', 'blk_000000000000000000000000', '--db', db])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^stablemem get: no block blk_0+ in /)
})

t.test('refusals exit 1 with one line; reading a missing store creates nothing', async (t) => {
  const dir = tempDir('stablemem-cli')
  const db = join(dir, 'none', 'm.db')
  for (const args of [['stats'], ['recall', 'x'], ['export'], ['get', 'blk_000000000000000000000000']]) {
    const r = await runCli([...args, '--db', db])
    t.equal(r.code, 1, `${args[0]} on a missing store fails`)
    t.equal(r.stderr, `stablemem ${args[0]}: no store at ${db}\n`, 'names the path it tried, and no advice to pass the --db that was passed')
  }
  t.notOk(existsSync(join(dir, 'none')), 'no file or directory was created')
  const defaulted = await runCli(['stats'], { env: { DSH_HOME: join(dir, 'home') } })
  t.equal(defaulted.stderr, `stablemem stats: no store at ${join(dir, 'home', 'stablemem', 'memory.db')} (the default path: nothing saved there yet; --db chooses another file)\n`)
  const empty = await runCli(['commit', '   ', '--db', join(dir, 'm.db')])
  t.equal(empty.code, 2, 'an empty text is a usage error')
  t.equal(empty.stderr, 'stablemem commit: <text> is empty (see stablemem commit --help)\n')
  t.equal((await runCli(['commit', '', '--db', join(dir, 'm.db')])).code, 2)
  const large = await runCli(['commit', 'x'.repeat(40_000), '--db', join(dir, 'm.db')])
  t.equal(large.code, 1)
  t.match(large.stderr, /limit is 32768/)
})

t.test('--db defaults to the plugin default path under DSH_HOME', async (t) => {
  const home = tempDir('stablemem-cli')
  const r = await runCli(['commit', 'nginx 配置在 /etc/nginx/nginx.conf'], { env: { DSH_HOME: home } })
  t.equal(r.code, 0, r.stderr)
  t.ok(existsSync(join(home, 'stablemem', 'memory.db')))
  const stats = await runCli(['stats', '--json'], { env: { DSH_HOME: home } })
  t.match(JSON.parse(stats.stdout), { blocks: 1, edges: 0, schemaVersion: SCHEMA_VERSION, path: join(home, 'stablemem', 'memory.db') })
  const human = await runCli(['stats'], { env: { DSH_HOME: home } })
  t.match(human.stdout, new RegExp(`blocks: +1\\nedges: +0\\nfile size: +[0-9.]+ KiB\\nschema version: +${SCHEMA_VERSION}\\nlast write: +\\d{4}-`))
})

t.test('hostile recall queries never crash: FTS syntax, quotes, emoji, dashes', async (t) => {
  const db = join(tempDir('stablemem-cli'), 'm.db')
  await runCli(['commit', 'gateway 10.0.0.1 "quoted" NEAR(x)', '--db', db])
  const queries = ['"', 'NEAR(a b)', 'a OR b AND NOT c*', '^', '😀😀', '-- --', '*', '{latin}: x', 'gateway"', '\u2028\u2029']
  for (const [i, query] of queries.entries()) {
    const r = await runCli(['recall', '--db', db, '--json', '--', query])
    t.equal(r.code, 0, `hostile query #${i + 1}: ${r.stderr}`) // no raw query in the message: U+2028 would split the TAP line
    t.ok(Array.isArray((JSON.parse(r.stdout) as { hits: unknown }).hits))
  }
})
