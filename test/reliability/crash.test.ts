/**
 * Crash safety: a child process commits in a loop and is SIGKILLed at seeded random points, many
 * times, on the same file. After every kill the file opens, `integrity_check` is ok, and every
 * note the child acknowledged (printed after `commit` returned) is present.
 */
import t from 'tap'
import { blockId } from '../../lib/store/block-id.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { startFixture } from './child.ts'
import { rng } from '../../bench/corpus.ts' // seeded (mulberry32): a failing schedule can be replayed

const SEED = 20261130
const ROUNDS = 24

/** Acknowledged note texts in one child's output. */
function acked(lines: readonly string[]): string[] {
  return lines.filter((l) => l.startsWith('ack ')).flatMap((l) => JSON.parse(l.slice(4)) as string[])
}

/** Runs one child until `acks` acknowledgements plus a random delay, then SIGKILLs it. */
async function killRound(path: string, round: number, mode: string, random: () => number): Promise<string[]> {
  const child = startFixture('committer', [path, String(round), mode])
  const acks = 1 + Math.floor(random() * 30)
  await child.waitFor(() => acked(child.lines).length >= (mode === 'ack-before' ? 1 : acks))
  await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 12)))
  child.proc.kill('SIGKILL')
  const { signal } = await child.exited
  if (signal !== 'SIGKILL') throw new Error(`round ${round}: child ended by ${signal}, not by the kill`)
  return acked(child.lines)
}

/** The property checked after every kill: the file is sound and holds every acknowledged note. */
function check(path: string, acknowledged: readonly string[]): { integrity: string[], missing: string[] } {
  const store = new BlockStore(path)
  try {
    const integrity = store.integrityCheck()
    return { integrity, missing: acknowledged.filter((text) => store.get(blockId(text))?.text !== text) }
  } finally {
    store.close()
  }
}

t.test(`${ROUNDS} SIGKILLs at random points: the file stays sound and keeps every acknowledged note`, async (t) => {
  const path = tempStorePath('crash')
  const random = rng(SEED)
  const acknowledged: string[] = []
  for (let round = 0; round < ROUNDS; round++) {
    acknowledged.push(...await killRound(path, round, round % 3 === 2 ? 'batch' : 'single', random))
    const { integrity, missing } = check(path, acknowledged)
    t.same(integrity, ['ok'], `round ${round}: integrity_check ok`)
    t.same(missing, [], `round ${round}: all ${acknowledged.length} acknowledged notes present`)
  }
})

t.test('mutation check: a writer that acknowledges before committing is caught', async (t) => {
  const path = tempStorePath('crash-mutant')
  const acknowledged = await killRound(path, 0, 'ack-before', rng(SEED))
  t.equal(acknowledged.length, 1)
  t.same(check(path, acknowledged).missing, acknowledged, 'the same assertion goes red: the acknowledged note is missing')
})
