import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { indexColumns } from '../lib/store/fts-columns.ts'
import { BlockStore } from '../lib/store/store.ts'
import { EXPORT_VERSION } from '../lib/store/transfer.ts'
import { CLI_SOURCE, runCli } from './helpers/cli.ts'
import { tempDir } from './helpers/temp.ts'

/** A store with edges, tags, access counts and fixed times: everything export must carry. */
function richStore(path: string): BlockStore {
  let clock = 1_700_000_000_000
  const store = new BlockStore(path, { now: () => (clock += 1000) })
  const a = store.commit({ text: 'billing 服务端口 8499', source: 'user', scene: 'chan:qq', semanticType: 'Service' })
  const b = store.commit({ text: 'Deploy host is 10.3.7.9\nwith two lines' })
  store.commit({ text: 'Ünïcödé café notes 🚀' })
  store.recordAccess([a.id, b.id])
  store.recordAccess([a.id])
  store.link({ sourceKind: 'block', sourceId: a.id, targetKind: 'block', targetId: b.id, type: 'related' })
  store.link({ sourceKind: 'scene', sourceId: 'chan:qq', targetKind: 'block', targetId: a.id, type: 'contains' })
  return store
}

function dataLines(file: string): string[] {
  return readFileSync(file, 'utf8').trim().split('\n').slice(1)
}

t.test('export → import → export is lossless and import is idempotent', async (t) => {
  const dir = tempDir('stablemem-cli')
  const src = join(dir, 'src.db')
  const store = richStore(src)
  const blocks = [...store.allBlocks()]
  const edges = [...store.allEdges()]
  store.close()
  const first = join(dir, 'first.jsonl')
  const exp = await runCli(['export', '--db', src, '--out', first])
  t.equal(exp.code, 0, exp.stderr)
  t.equal(exp.stderr, `exported 3 blocks and 2 edges to ${first}\n`)
  t.same(readdirSync(dir).filter((f) => f.includes('.partial-')), [], 'no partial file left')

  const dst = join(dir, 'dst.db')
  const imp = await runCli(['import', first, '--db', dst, '--json'])
  t.equal(imp.code, 0, imp.stderr)
  t.same(JSON.parse(imp.stdout), { lines: 6, blocksCreated: 3, blocksMerged: 0, edgesCreated: 2, edgesExisting: 0 })
  const copy = new BlockStore(dst)
  t.same([...copy.allBlocks()], blocks, 'blocks identical: ids, text, tags, times, access counts')
  t.same([...copy.allEdges()], edges, 'edges identical, with their times')
  t.same(copy.edgesOf('block', blocks[0]!.id).length, 2)
  copy.close()

  const second = join(dir, 'second.jsonl')
  await runCli(['export', '--db', dst, '--out', second])
  t.same(dataLines(second), dataLines(first), 'a second export is byte-identical apart from the header time')

  const again = await runCli(['import', first, '--db', dst])
  t.equal(again.code, 0)
  t.equal(again.stdout, 'imported 6 lines: 3 blocks (0 new, 3 already present), 2 edges (0 new, 2 already present)\n')
  await runCli(['export', '--db', dst, '--out', second])
  t.same(dataLines(second), dataLines(first), 'importing twice changed nothing')

  const recall = await runCli(['recall', '8499', '--db', dst, '--json'])
  t.equal((JSON.parse(recall.stdout) as { hits: Array<{ id: string }> }).hits[0]?.id, blocks[0]!.id, 'imported blocks are indexed for recall')

  const md = await runCli(['export', '--format', 'md', '--db', dst])
  t.match(md.stdout, /^# dsh-stablemem export\n\n3 blocks, 2 edges/)
  t.match(md.stdout, /> Deploy host is 10\.3\.7\.9\n> with two lines/)
  t.match(md.stdout, /- related → block `blk_/)
})

t.test('a malformed line stops the import with its number and keeps the lines before it', async (t) => {
  const dir = tempDir('stablemem-cli')
  const src = join(dir, 'src.db')
  richStore(src).close()
  const file = join(dir, 'x.jsonl')
  await runCli(['export', '--db', src, '--out', file])
  const lines = readFileSync(file, 'utf8').trim().split('\n')
  const bad = [lines[0], lines[1], lines[2], '{"record":"block", oops', lines[3], lines[4], lines[5]].join('\n')
  const badFile = join(dir, 'bad.jsonl')
  writeFileSync(badFile, bad)
  const dst = join(dir, 'dst.db')
  const r = await runCli(['import', badFile, '--db', dst])
  t.equal(r.code, 1)
  t.equal(r.stderr, 'stablemem import: line 4: not valid JSON; the 3 lines before it were imported\n')
  t.match(r.stdout, /imported 3 lines: 2 blocks \(2 new/)
  const store = new BlockStore(dst)
  t.equal(store.count(), 2, 'the two blocks before the bad line are stored')
  store.close()

  writeFileSync(badFile, lines.join('\n') + '\n')
  const fixed = await runCli(['import', badFile, '--db', dst])
  t.equal(fixed.code, 0, 'after fixing the line the import completes')
  t.match(fixed.stdout, /3 blocks \(1 new, 2 already present\), 2 edges \(2 new/)

  const refusals: Array<[string, RegExp]> = [
    [lines[1]!.replace('8499', '8500'), /line 2: id blk_\w+ is not the content address of its text/],
    ['{"record":"edge","sourceKind":"block","sourceId":"blk_000000000000000000000000","targetKind":"x","targetId":"y","type":"t","createdAt":1}', /line 2: sourceId: no block blk_0+/],
    ['{"record":"block","id":"blk_1","text":5}', /line 2: block field text must be a string/],
    ['{"record":"mystery"}', /line 2: unknown record "mystery"/],
    ['[1,2]', /line 2: not a JSON object/],
    [lines[0]!, /line 2: a header is only allowed on the first line/],
    [lines[1]!.replace('"accessCount":2', '"accessCount":-1'), /line 2: block field accessCount must be a non-negative integer, not -1;/],
  ]
  for (const [line, message] of refusals) {
    writeFileSync(badFile, `${lines[0]}\n${line}\n`)
    const out = await runCli(['import', badFile, '--db', join(dir, 'refuse.db')])
    t.equal(out.code, 1, line)
    t.match(out.stderr, message)
  }
  writeFileSync(badFile, `{"record":"header","format":"dsh-stablemem","version":${EXPORT_VERSION + 1}}\n`)
  const newer = await runCli(['import', badFile, '--db', join(dir, 'refuse.db')])
  t.match(newer.stderr, new RegExp(`line 1: export version ${EXPORT_VERSION + 1} is newer`))
  const absent = await runCli(['import', join(dir, 'absent.jsonl'), '--db', join(dir, 'refuse.db')])
  t.equal(absent.code, 1)
  t.match(absent.stderr, /^stablemem import: cannot read .*absent\.jsonl: ENOENT\n$/)
})

t.test('doctor: healthy, missing, damaged, foreign, newer and unindexed stores', async (t) => {
  const dir = tempDir('stablemem-cli')
  const fresh = await runCli(['doctor', '--db', join(dir, 'nothing.db')])
  t.equal(fresh.code, 0, fresh.stdout)
  t.match(fresh.stdout, /^ok    node +Node 24\./m)
  t.match(fresh.stdout, /^ok    node:sqlite +SQLite 3\./m)
  t.match(fresh.stdout, /^ok    fts5 /m)
  t.match(fresh.stdout, /no store yet at .*nothing\.db; it is created on the first save/)
  t.notOk(existsSync(join(dir, 'nothing.db')), 'doctor creates nothing')

  const good = join(dir, 'good.db')
  richStore(good).close()
  const healthy = await runCli(['doctor', '--db', good, '--json'])
  t.equal(healthy.code, 0)
  const checks = JSON.parse(healthy.stdout) as Array<{ status: string, label: string }>
  t.same(checks.map((c) => c.label), ['node', 'node:sqlite', 'fts5', 'integrity', 'schema', 'index', 'segments', 'scrub', 'layers', 'writable', 'space', 'write test'])
  t.same(checks.map((c) => c.status), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok'])
  t.same(readdirSync(dir).sort(), ['good.db'], 'the write probe is removed')

  const junk = join(dir, 'junk.db')
  writeFileSync(junk, 'this is not a database at all, just text'.repeat(200))
  const damaged = await runCli(['doctor', '--db', junk])
  t.equal(damaged.code, 1)
  t.match(damaged.stdout, /fail  integrity +.*junk\.db is not a readable SQLite database .*restore it/)
  t.match(damaged.stdout, /1 problem found\n$/)

  const foreign = join(dir, 'foreign.db')
  new DatabaseSync(foreign).exec('CREATE TABLE t (x)')
  t.match((await runCli(['doctor', '--db', foreign])).stdout, /fail  schema +.*not a dsh-stablemem store/)

  const newer = join(dir, 'newer.db')
  richStore(newer).close()
  const raw = new DatabaseSync(newer)
  raw.exec('PRAGMA user_version = 99')
  raw.close()
  const newerRun = await runCli(['doctor', '--db', newer])
  t.equal(newerRun.code, 1)
  t.match(newerRun.stdout, /fail  schema +version 99 was written by a newer dsh-stablemem .*upgrade the package/)

  const unindexed = join(dir, 'unindexed.db')
  richStore(unindexed).close()
  const db = new DatabaseSync(unindexed)
  // The index is contentless: a row leaves it by naming the text it was indexed with.
  const { text } = db.prepare('SELECT text FROM blocks WHERE rowid = 1').get() as { text: string }
  db.prepare("INSERT INTO blocks_fts (blocks_fts, rowid, latin, cjk) VALUES ('delete', 1, ?, ?)").run(...indexColumns(text))
  db.close()
  const index = await runCli(['doctor', '--db', unindexed])
  t.equal(index.code, 1)
  t.match(index.stdout, /fail  index +the full-text index holds 2 entries for 3 blocks/)
})

t.test('import shows progress on a terminal for a large file, and none when piped', async (t) => {
  const dir = tempDir('stablemem-cli')
  const src = new BlockStore(join(dir, 'src.db'))
  src.commitMany(Array.from({ length: 12_000 }, (_, i) => ({ text: `note ${i}: service-${i} 端口 ${10_000 + i} ${'x'.repeat(80)}` })))
  src.close()
  const file = join(dir, 'big.jsonl')
  t.equal((await runCli(['export', '--db', join(dir, 'src.db'), '--out', file])).code, 0)
  t.ok(statSync(file).size > 1 << 20, 'over the 1 MiB progress threshold')

  const piped = await runCli(['import', file, '--db', join(dir, 'piped.db')])
  t.equal(piped.code, 0)
  t.equal(piped.stderr, '', 'no progress when stderr is not a terminal')
  t.match(piped.stdout, /^imported 12001 lines: 12000 blocks \(12000 new/)

  const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0
  if (!hasScript) {
    t.comment('util-linux `script` not found: the terminal progress path is covered by the onProgress unit test only')
    return
  }
  // `script` runs the command on a pseudo-terminal, so stderr is a TTY as in an interactive shell.
  const command = [process.execPath, CLI_SOURCE, 'import', file, '--db', join(dir, 'tty.db')].map((a) => `'${a}'`).join(' ')
  const tty = spawnSync('script', ['-qec', command, '/dev/null'], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME } })
  t.equal(tty.status, 0, tty.stderr)
  t.match(tty.stdout, /\rimporting .*big\.jsonl: 1000 lines, \d+%/)
  t.match(tty.stdout, /\r\x1b\[Kimported 12001 lines/, 'the progress line is cleared before the summary')
})
