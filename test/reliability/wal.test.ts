/**
 * The WAL bound: while a long reader holds a snapshot the WAL must grow (nothing after the
 * snapshot can be checkpointed), but once the reader is done the next commits bring it back to
 * `WAL_SIZE_LIMIT`, instead of keeping its largest size for as long as any process has the file.
 */
import { statSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import type * as StoreModule from '../../lib/store/store.ts'
import { BlockStore, WAL_SIZE_LIMIT } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

async function walSizes(Store: typeof BlockStore): Promise<{ underReader: number, afterReader: number }> {
  const path = tempStorePath('wal')
  const wal = () => statSync(`${path}-wal`).size
  const store = new Store(path)
  try {
    const reader = new DatabaseSync(path, { readOnly: true })
    reader.exec('BEGIN')
    reader.prepare('SELECT count(*) FROM blocks').get()
    // Notes long enough that a few hundred commits outgrow the bound.
    for (let i = 0; i < 300; i++) store.commit({ text: `note ${i}: service-${i} 服务端口 ${10_000 + i} 在 10.0.${i % 250}.7 上 ${'负责计费和网关流量，'.repeat(1 + (i % 30))}` })
    const underReader = wal()
    reader.exec('COMMIT')
    reader.close()
    for (let i = 0; i < 10; i++) store.commit({ text: `after the reader ${i}` })
    return { underReader, afterReader: wal() }
  } finally {
    store.close()
  }
}

t.test('the WAL grows under a long reader and returns to the bound once it is done', async (t) => {
  const { underReader, afterReader } = await walSizes(BlockStore)
  t.ok(underReader > WAL_SIZE_LIMIT, `under the reader: ${underReader} bytes, more than the ${WAL_SIZE_LIMIT} bound`)
  t.ok(afterReader <= WAL_SIZE_LIMIT, `after it: ${afterReader} bytes`)
})

t.test('mutation: without journal_size_limit the WAL keeps its largest size', async (t) => {
  const m = mutant({ file: 'store/open-file.ts', from: 'db.exec(`PRAGMA journal_size_limit = ${walSizeLimitBytes}`)', to: '' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof StoreModule>('store/store.ts')
  const { underReader, afterReader } = await walSizes(Mutated)
  t.ok(afterReader >= underReader, 'the WAL stays as large as it grew')
})
