/**
 * `npm run bench:wal -- [--commits N] [--json]`
 *
 * How large the WAL file grows while a long reader holds a snapshot, and how large it stays
 * after the reader finished, with the store's WAL bound and, in the same run, without it
 * (`walSizeLimitBytes: -1`, SQLite's default). Each side: a fresh store, a reader in another
 * connection that opens a read transaction and keeps it, N single-note commits, the reader ends,
 * then 10 more commits. Prints one JSON object with the WAL sizes in bytes at each point.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { parseArgs } from 'node:util'
import { BlockStore, WAL_SIZE_LIMIT } from '../lib/store/store.ts'
import { exitOnHelp, wholeFlag } from './args.ts'
import { corpus } from './corpus.ts'

const USAGE = 'npm run bench:wal -- [--commits N] [--json]\n\nWAL size under a long reader and after it, with the store\'s bound and without it; prints one JSON object (docs/reliability.md).'
exitOnHelp(USAGE)
// The output is one JSON line either way; `--json` is accepted as every bench accepts it.
const { values: args } = parseArgs({ options: { commits: { type: 'string', default: '3000' }, seed: { type: 'string', default: '20261130' }, json: { type: 'boolean', default: false } } })
const N = wholeFlag('commits', args.commits)
const gen = corpus(wholeFlag('seed', args.seed))

function run(walSizeLimitBytes: number | undefined): Record<string, number> {
  const dir = mkdtempSync(join(tmpdir(), 'stablemem-bench-wal-'))
  const path = join(dir, 'memory.db')
  const wal = () => { try { return statSync(`${path}-wal`).size } catch { return 0 } }
  const store = new BlockStore(path, { walSizeLimitBytes })
  const reader = new DatabaseSync(path, { readOnly: true })
  reader.exec('BEGIN')
  reader.prepare('SELECT count(*) FROM blocks').get()
  for (let i = 0; i < N; i++) store.commit({ text: gen.block(i).text })
  const underReader = wal()
  reader.exec('COMMIT')
  reader.close()
  for (let i = 0; i < 10; i++) store.commit({ text: `after the reader ${i}: ${gen.block(N + i).text}` })
  const afterReader = wal()
  store.close()
  const afterClose = wal()
  rmSync(dir, { recursive: true, force: true })
  return { under_reader_bytes: underReader, after_reader_bytes: afterReader, after_close_bytes: afterClose }
}

const unbounded = run(-1)
const bounded = run(undefined)
console.log(JSON.stringify({
  commits: N, wal_size_limit_bytes: WAL_SIZE_LIMIT, load: loadavg().map((x) => Math.round(x * 100) / 100),
  unbounded, bounded, after_reader_ratio: Math.round((bounded.after_reader_bytes! / unbounded.after_reader_bytes!) * 1000) / 1000,
}))
