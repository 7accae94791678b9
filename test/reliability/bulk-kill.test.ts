/**
 * Kill -9 at every phase of the bulk commit path (issue 30, lib/store/fts-bulk.ts): a child commits
 * batches of `BULK_NOTES`+ notes and is killed while opening, while writing a batch's block rows,
 * while indexing it under the bulk options, while committing it (the whole pending hash written
 * out, the WAL synced), between batches and after the last. After every kill the file opens,
 * `integrity_check` is ok, the notes there before are all there, every acknowledged batch is
 * whole, an unacknowledged one is whole or absent, the index agrees with the rows, the index
 * option is not left at the bulk value, and the next bulk commit works.
 */
import t, { type Test } from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { BULK_NOTES } from '../../lib/store/fts-bulk.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { canonicalText } from '../../lib/text/normalize.ts'
import { hashSize } from '../helpers/fts-index.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { killOnCopy, type Child } from './child.ts'
import { bulkNote } from './fixtures/bulk-notes.ts'
import { rng } from '../../bench/corpus.ts' // seeded (mulberry32): a failing schedule can be replayed

const BATCHES = 3
const SIZE = BULK_NOTES + 1_000
const KEPT = 300

/** The store every round starts from: notes that must survive every kill. */
const template = tempStorePath('bulk-kill-template')
{
  const store = new BlockStore(template)
  store.commitMany(Array.from({ length: KEPT }, (_, i) => ({ text: `kept note ${i}: lease l${i} renews every ${i + 1} minutes` })))
  store.close()
}
const keptIds = Array.from({ length: KEPT }, (_, i) => blockId(`kept note ${i}: lease l${i} renews every ${i + 1} minutes`))
const batchIds = Array.from({ length: BATCHES }, (_, b) => Array.from({ length: SIZE }, (_, i) => blockId(canonicalText(bulkNote(b, i).text))))

interface Round {
  lines: string[]
  path: string
}

/** One child on a fresh copy of the template, killed when `when` resolves. */
async function killRound(label: string, when: (child: Child) => Promise<unknown>): Promise<Round> {
  const path = tempStorePath(`bulk-kill-${label}`)
  return { lines: await killOnCopy(template, path, 'bulk-committer', [String(BATCHES), String(SIZE)], when), path }
}

/** The properties after a kill, then one more bulk commit on the same file. */
function check(t: Test, { lines, path }: Round): void {
  const acknowledged = lines.filter((l) => l.startsWith('committed ')).length
  const store = new BlockStore(path)
  try {
    t.same(store.integrityCheck(), ['ok'], 'integrity_check ok')
    t.equal(keptIds.filter((id) => store.get(id) === undefined).length, 0, 'every note stored before is there')
    let present = 0
    for (let b = 0; b < BATCHES; b++) {
      const rows = batchIds[b]!.filter((id) => store.get(id) !== undefined).length
      if (b < acknowledged) t.equal(rows, SIZE, `acknowledged batch ${b} is whole`)
      else t.ok(rows === 0 || rows === SIZE, `unacknowledged batch ${b} is whole or absent (${rows} of ${SIZE})`)
      t.equal(store.matchCount(`"bulkbatch${b}"`), rows, `the index holds batch ${b} as the rows do`)
      present += rows
    }
    t.equal(store.count(), KEPT + present, 'the count agrees')
    t.equal(hashSize(path), 1 << 20, 'the index option is not left at the bulk value')
    const next = store.commitMany(Array.from({ length: SIZE }, (_, i) => ({ text: `after the kill ${i}: probe p${i} answered in ${i % 90} ms` })))
    t.equal(next.filter((r) => r.created).length, SIZE, 'the next bulk commit stores its notes')
    t.equal(store.matchCount('"probe"'), SIZE, 'and indexes them')
    t.same(store.integrityCheck(), ['ok'], 'integrity_check ok after it')
  } finally {
    store.close()
  }
}

const line = (prefix: string) => (l: string) => l.startsWith(prefix)

t.test('killed after every batch was acknowledged', async (t) => {
  const round = await killRound('after', (c) => c.waitFor(line('done')))
  t.equal(round.lines.filter(line('committed ')).length, BATCHES)
  check(t, round)
})

t.test('killed between batches', async (t) => {
  const round = await killRound('between', (c) => c.waitFor(line('committed 0')))
  check(t, round)
})

t.test('killed at seeded points through a batch (rows, index under the bulk options, commit)', async (t) => {
  // How long a batch takes here decides the spread: the kills land at fractions of the second
  // batch's expected time after the first was acknowledged, so they cover its block rows, its
  // index writes and its commit. Where each landed is in its name; the properties hold wherever.
  const calibration = await killRound('calibrate', (c) => c.waitFor(line('committed 1')))
  const ms = Number(/in (\d+) ms/.exec(calibration.lines.find(line('committed 1')) ?? '')?.[1] ?? 1000)
  check(t, calibration)
  const random = rng(20261207)
  for (let i = 0; i < 8; i++) {
    const delay = Math.floor(random() * ms * 1.2)
    const round = await killRound(`seeded-${i}`, async (c) => {
      await c.waitFor(line('committed 0'))
      await new Promise((resolve) => setTimeout(resolve, delay))
    })
    t.test(`kill ${i}, ${delay} ms into batch 1 of about ${ms} ms (last line: ${round.lines.at(-1) ?? 'none'})`, async (t) => { check(t, round) })
  }
})

t.test('killed at seeded points from the open on', async (t) => {
  const random = rng(20261208)
  for (let i = 0; i < 4; i++) {
    const delay = Math.floor(random() * 400)
    const round = await killRound(`open-${i}`, async (c) => {
      await c.waitFor(line('ready'))
      await new Promise((resolve) => setTimeout(resolve, delay))
    })
    t.test(`kill ${i}, ${delay} ms after the open (last line: ${round.lines.at(-1) ?? 'none'})`, async (t) => { check(t, round) })
  }
})

