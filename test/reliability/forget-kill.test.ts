/**
 * Kill -9 at every phase of a large forget (issue 30): during the forget's transaction, after it
 * returned with its bytes pending, in the middle of the scrub, at random points of the scrub, and
 * after it. After every kill the file opens, `integrity_check` is ok, every kept note is there, a
 * forget that was acknowledged stays done (nothing forgotten comes back), one that was not is
 * either whole or absent, and the next scrub leaves none of the forgotten bytes in the file, its
 * WAL or its shared memory.
 */
import { existsSync, readFileSync } from 'node:fs'
import t, { type Test } from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { DEFER_SCRUB_FROM } from '../../lib/store/forget.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { killOnCopy, type Child } from './child.ts'
import { rng } from '../../bench/corpus.ts' // seeded (mulberry32): a failing schedule can be replayed

const SECRET_EN = 'The launch code for project Mordrakelle is 5531-omega-Vexquilline'
const SECRET_ZH = '机密：赵铁柱的社保卡号是S98765432，住在澜沧苑九栋'
const NEEDLES = ['Mordrakelle', 'mordrakelle', 'vexquilline', 'Vexquilline', '5531-omega', 'S98765432', 's98765432', '澜沧苑', SECRET_EN, SECRET_ZH]
const KEPT = DEFER_SCRUB_FROM + 200
const DOOMED = 400

function scan(path: string): string[] {
  const found: string[] = []
  for (const suffix of ['', '-wal', '-shm']) {
    if (!existsSync(path + suffix)) continue
    const bytes = readFileSync(path + suffix)
    for (const needle of NEEDLES) if (bytes.includes(Buffer.from(needle, 'utf8'))) found.push(`${needle} in ${suffix || 'db'}`)
  }
  return found
}

/** The store every round starts from: the kept notes, and the doomed scene with the two secrets. */
const template = tempStorePath('forget-kill-template')
{
  const store = new BlockStore(template)
  store.commitMany(Array.from({ length: KEPT }, (_, i) => ({ text: `kept note ${i}: service k${i} on port ${10000 + (i % 50000)}, 服务 ${i} 在 机房${i % 9}`, scene: 'kept' })))
  store.commitMany(Array.from({ length: DOOMED }, (_, i) => ({ text: `doomed note ${i}: temp job d${i}, 临时 ${i}`, scene: 'doomed' })))
  store.commit({ text: SECRET_EN, scene: 'doomed' })
  store.commit({ text: SECRET_ZH, scene: 'doomed' })
  store.close()
}
const doomedIds = [blockId(SECRET_EN), blockId(SECRET_ZH)]

interface Round {
  /** The child's lines before the kill. */
  lines: string[]
  path: string
}

/** One child on a fresh copy of the template, killed when `when` resolves. */
async function killRound(label: string, stop: string, when: (child: Child) => Promise<unknown>): Promise<Round> {
  const path = tempStorePath(`forget-kill-${label}`)
  return { lines: await killOnCopy(template, path, 'scrubber', [stop], when), path }
}

/** The properties after a kill, then the next scrub and its scan. */
function check(t: Test, { lines, path }: Round): void {
  const acknowledged = lines.some((l) => l.startsWith('forgotten '))
  const store = new BlockStore(path)
  try {
    t.same(store.integrityCheck(), ['ok'], 'integrity_check ok')
    const present = doomedIds.filter((id) => store.get(id) !== undefined).length
    t.equal(store.count(), KEPT + (present === 0 ? 0 : DOOMED + 2), 'every kept note is there (and the doomed ones all or none)')
    if (acknowledged) t.equal(present, 0, 'the acknowledged forget stays done')
    else t.ok(present === 0 || present === 2, `an unacknowledged forget is whole or absent (${present} of 2 left)`)
    t.equal(store.matchCount('"mordrakelle"'), present === 0 ? 0 : 1, 'the index agrees with the rows')
    const pending = store.pendingScrubs().forgets
    if (present === 0) t.ok(pending === 0 || pending === 1, `the pending record survives the kill or the scrub had finished (${pending})`)
    else t.equal(pending, 0, 'no scrub is pending for a forget that did not happen')
    store.scrub()
    t.equal(store.pendingScrubs().forgets, 0, 'the next scrub finishes it')
    if (present === 0) t.same(scan(path), [], 'and leaves no byte of the notes in the db, WAL or shm')
  } finally {
    store.close()
  }
  if (lines.some((l) => l.startsWith('forgotten '))) t.same(scan(path), [], 'nor after close')
}

const line = (prefix: string) => (l: string) => l.startsWith(prefix)

t.test('killed after the forget returned, before any scrub: the record survives and the next scrub finishes', async (t) => {
  const round = await killRound('after-forget', 'after-forget', (c) => c.waitFor(line('forgotten ')))
  t.match(round.lines.find(line('forgotten ')), /pending true/, 'the forget left its bytes to the scrub')
  t.ok(scan(round.path).length > 0, 'the old index segments still hold the words at the kill')
  check(t, round)
})

t.test('killed in the middle of the scrub', async (t) => {
  const round = await killRound('mid-scrub', 'mid-scrub', (c) => c.waitFor(line('slices 2')))
  check(t, round)
})

t.test('killed after the scrub', async (t) => {
  const round = await killRound('after-scrub', 'after-scrub', (c) => c.waitFor(line('scrubbed')))
  t.same(scan(round.path), [], 'nothing left at the kill')
  check(t, round)
})

t.test('killed at random points of the forget and the scrub', async (t) => {
  // The child holds after the scrub, so every kill lands in a live process: during the open, the
  // forget's transaction, between slices, or after. Where each landed is in its name; the
  // properties hold wherever it was.
  const random = rng(20261206)
  for (let i = 0; i < 10; i++) {
    const delay = Math.floor(random() * 150)
    const round = await killRound(`random-${i}`, 'after-scrub', async (c) => {
      await c.waitFor(line('ready'))
      await new Promise((resolve) => setTimeout(resolve, delay))
    })
    t.test(`kill ${i}, ${delay} ms after the open (last line: ${round.lines.at(-1) ?? 'none'})`, async (t) => { check(t, round) })
  }
})
