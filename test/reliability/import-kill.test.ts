/**
 * Kill -9 through an import in the bulk path's shape (issue 30, lib/store/import-batch.ts): a child
 * imports an export of three batches of `BULK_NOTES`+ notes, each batch one transaction whose
 * index rows are written after its block rows under the bulk index options, and is killed at
 * seeded moments from the open to after the last commit. After every kill the file opens,
 * `integrity_check` is ok, the notes there before are all there, every batch is whole or absent and
 * the batches present are the file's first ones, the index holds each batch as the rows do, the
 * index option is not left at the bulk value, and importing the file again completes it.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { BULK_NOTES } from '../../lib/store/fts-bulk.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../../lib/store/transfer.ts'
import { canonicalText } from '../../lib/text/normalize.ts'
import { hashSize } from '../helpers/fts-index.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { killOnCopy, type Child } from './child.ts'
import { bulkNote } from './fixtures/bulk-notes.ts'
import { rng } from '../../bench/corpus.ts' // seeded (mulberry32): a failing schedule can be replayed

const BATCHES = 3
const SIZE = BULK_NOTES + 1_000
const KEPT = 300

/** The export every round imports: batch b's notes are the file's b-th batch of `SIZE` lines. */
const file = `${tempStorePath('import-kill-file')}.jsonl`
{
  const source = new BlockStore(':memory:')
  for (let b = 0; b < BATCHES; b++) source.commitMany(Array.from({ length: SIZE }, (_, i) => bulkNote(b, i)))
  writeFileSync(file, `${[...exportJsonl(source)].join('\n')}\n`)
  source.close()
}

/** The store every round starts from: notes that must survive every kill. */
const template = tempStorePath('import-kill-template')
{
  const store = new BlockStore(template)
  store.commitMany(Array.from({ length: KEPT }, (_, i) => ({ text: `kept note ${i}: lease l${i} renews every ${i + 1} minutes` })))
  store.close()
}
const keptIds = Array.from({ length: KEPT }, (_, i) => blockId(`kept note ${i}: lease l${i} renews every ${i + 1} minutes`))
const batchIds = Array.from({ length: BATCHES }, (_, b) => Array.from({ length: SIZE }, (_, i) => blockId(canonicalText(bulkNote(b, i).text))))

/** One child importing into a fresh copy of the template, killed when `when` resolves; the store's path and the child's lines. */
async function killRound(label: string, when: (child: Child) => Promise<unknown>): Promise<{ path: string, lines: string[] }> {
  const path = tempStorePath(`import-kill-${label}`)
  return { path, lines: await killOnCopy(template, path, 'bulk-importer', [file, String(SIZE)], when) }
}

/** The properties after a kill, then the same import again on the same file. */
async function check(t: Test, path: string): Promise<void> {
  const store = new BlockStore(path)
  try {
    t.same(store.integrityCheck(), ['ok'], 'integrity_check ok')
    t.equal(keptIds.filter((id) => store.get(id) === undefined).length, 0, 'every note stored before is there')
    const rows = batchIds.map((ids) => ids.filter((id) => store.get(id) !== undefined).length)
    for (let b = 0; b < BATCHES; b++) {
      t.ok(rows[b] === 0 || rows[b] === SIZE, `batch ${b} is whole or absent (${rows[b]} of ${SIZE})`)
      t.equal(store.matchCount(`"bulkbatch${b}"`), rows[b], `the index holds batch ${b} as the rows do`)
    }
    t.ok(rows.every((n, b) => b === 0 || n === 0 || rows[b - 1] === SIZE), `the batches present are the file's first ones (${rows.join(', ')})`)
    t.equal(store.count(), KEPT + rows.reduce((a, n) => a + n, 0), 'the count agrees')
    t.equal(hashSize(path), 1 << 20, 'the index option is not left at the bulk value')
    const again = await importJsonl(store, readFileSync(file, 'utf8').split('\n'))
    t.equal(again.failure, undefined, 'importing again works')
    t.equal(store.count(), KEPT + BATCHES * SIZE, 'and completes it')
    for (let b = 0; b < BATCHES; b++) t.equal(store.matchCount(`"bulkbatch${b}"`), SIZE, `batch ${b} indexed once`)
    t.same(store.integrityCheck(), ['ok'], 'integrity_check ok after it')
  } finally {
    store.close()
  }
}

t.test('killed after the import was done', async (t) => {
  const round = await killRound('after', (c) => c.waitFor((l) => l.startsWith('done')))
  await check(t, round.path)
})

t.test('killed at seeded points from the open to the last commit (batch rows, index under the bulk options, commit)', async (t) => {
  // The kills land at fractions of the whole import's time, measured by a first round; where each
  // landed is in its name (the child's last line), and the properties hold wherever.
  const calibration = await killRound('calibrate', (c) => c.waitFor((l) => l.startsWith('done')))
  const ms = Number(/in (\d+) ms/.exec(calibration.lines.find((l) => l.startsWith('done')) ?? '')?.[1] ?? 2000)
  const random = rng(20261209)
  for (let i = 0; i < 8; i++) {
    const delay = Math.floor(random() * ms * 1.1)
    const round = await killRound(`seeded-${i}`, async (c) => {
      await c.waitFor((l) => l === 'ready')
      await new Promise((resolve) => setTimeout(resolve, delay))
    })
    // Checked before the next round starts: the check imports too, and would delay that round's kill.
    await t.test(`kill ${i}, ${delay} ms into an import of about ${ms} ms (last line: ${round.lines.at(-1) ?? 'none'})`, async (t) => { await check(t, round.path) })
  }
})
