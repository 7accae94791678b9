import fc from 'fast-check'
import t from 'tap'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { exportJsonl, importJsonl } from '../../lib/store/transfer.ts'
import type * as StoreModule from '../../lib/store/store.ts'
import type * as TransferModule from '../../lib/store/transfer.ts'
import { boot, injected, reply, requestTexts, tempStorePath, textOf, toolCall } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const OLD = 'billing 服务端口 8499'
const NEW = 'billing 服务端口 8500'

function clocked(path = ':memory:', Store: typeof BlockStore = BlockStore): BlockStore {
  let clock = 1_000
  return new Store(path, { now: () => (clock += 1000) })
}

t.test('saving a replaced text again makes it current again, with an edge dated by that commit', async (t) => {
  const store = clocked()
  t.teardown(() => store.close())
  const old = store.commit({ text: OLD })
  const next = store.commit({ text: NEW, supersedes: old.id })
  const again = store.commit({ text: OLD })
  t.same(again, { id: old.id, created: false, restored: next.id }, 'the result says which note it replaces now')
  t.equal(store.get(old.id)?.supersededBy, null, 'current again')
  t.equal(store.get(next.id)?.supersededBy, old.id, 'the later commit wins')
  t.same(recallBlocks(store, 'billing 8499', { topK: 5 }).map((h) => h.text), [OLD])
  t.same(recallBlocks(store, 'billing 端口', { topK: 5 }).map((h) => h.text), [OLD], 'the changed-back value is what recall serves')
  const edges = store.edgesOf('block', old.id).map((e) => [e.sourceId, e.type, e.targetId, e.createdAt])
  t.same(edges, [[next.id, 'supersedes', old.id, 3000], [old.id, 'supersedes', next.id, 4000]])
  t.same(store.commit({ text: OLD }), { id: old.id, created: false }, 'saying a current note again changes nothing')
  // Back and forth once more: the older edge takes the newer date, so the history says who won last.
  store.commit({ text: NEW })
  store.commit({ text: OLD })
  t.equal(store.get(next.id)?.supersededBy, old.id)
  t.same(store.edgesOf('block', old.id).map((e) => e.createdAt), [6000, 7000])
})

t.test('commit "A supersedes B" after B superseded A does not make a cycle: A is current', async (t) => {
  const store = clocked()
  t.teardown(() => store.close())
  const a = store.commit({ text: OLD }).id
  const b = store.commit({ text: NEW, supersedes: a }).id
  store.commit({ text: OLD, supersedes: b })
  t.equal(store.get(a)?.supersededBy, null)
  t.equal(store.get(b)?.supersededBy, a)
  t.same(recallBlocks(store, 'billing 端口', { topK: 5 }).map((h) => h.id), [a], 'one of the two is always recalled')
})

/** Every block's successor chain ends at a current block (no loop), and returns that block. */
function heads(store: BlockStore): Map<string, string> {
  const next = new Map([...store.allBlocks()].map((b) => [b.id, b.supersededBy]))
  const out = new Map<string, string>()
  for (const id of next.keys()) {
    const seen = new Set<string>()
    let at = id
    while (next.get(at) !== null) {
      if (seen.has(at)) throw new Error(`loop through ${at}`)
      seen.add(at)
      at = next.get(at)!
    }
    out.set(id, at)
  }
  return out
}

const TEXTS = ['gateway 10.0.0.1', 'gateway 10.0.0.2', 'gateway 10.0.0.3', 'gateway 10.0.0.4']

/** Any sequence of commits with or without supersedes: chains never loop and the last text committed is current. */
async function chainProperty(Store: typeof BlockStore): Promise<void> {
  await fc.assert(fc.asyncProperty(
    fc.array(fc.record({ text: fc.integer({ min: 0, max: 3 }), supersedes: fc.option(fc.integer({ min: 0, max: 3 })) }), { minLength: 1, maxLength: 12 }),
    async (steps) => {
      const store = clocked(':memory:', Store)
      try {
        const ids = new Map<number, string>()
        for (const step of steps) {
          const target = step.supersedes === null ? undefined : ids.get(step.supersedes)
          const input = { text: TEXTS[step.text]!, supersedes: target !== undefined && step.supersedes !== step.text ? target : '' }
          ids.set(step.text, store.commit(input).id)
          heads(store)
          const last = ids.get(step.text)!
          if (store.get(last)?.supersededBy !== null) throw new Error(`the note just committed (${input.text}) is not current`)
        }
      } finally {
        store.close()
      }
    }), { numRuns: 150, seed: 19 })
}

t.test('property: supersede chains never loop, and the note just committed is always current', async (t) => {
  await t.resolves(chainProperty(BlockStore))
})

t.test('mutation: without the restore a re-committed text stays replaced, and the property goes red', async (t) => {
  const m = mutant({ file: 'store/commit.ts', from: 'replaced = restore(host.chain, row.id, now)', to: 'replaced = undefined' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof StoreModule>('store/store.ts')
  await t.rejects(chainProperty(Mutated))
})

t.test('the commit tool in a real turn: re-saving the old value tells the model, and the next turn recalls it', async (t) => {
  const h = await boot({ path: tempStorePath() }, [
    toolCall('c1', 'stablemem_commit', { text: OLD }), reply('ok'),
  ])
  t.teardown(() => h.dispose())
  await h.turn('记住 billing 端口 8499')
  const oldId = (await h.ctx.stablemem.recall('billing 端口'))[0]!.id
  h.script(toolCall('c2', 'stablemem_commit', { text: NEW, supersedes: oldId }), reply('ok'))
  await h.turn('billing 端口改成 8500 了')
  h.script(toolCall('c3', 'stablemem_commit', { text: OLD }), reply('ok'), reply('8499'))
  await h.turn('billing 端口又改回 8499 了')
  const toolResult = requestTexts(h.adapter.requests.at(-1)!).join('\n')
  t.match(toolResult, /Saved again as blk_[0-9a-f]{24}: it is the current note again and replaces blk_/)
  await h.turn('billing 端口是多少')
  t.same(h.errors, [])
  const text = injected(h.adapter.requests.at(-1)!).map(textOf).join('')
  t.match(text, /8499/)
  t.notMatch(text, /8500/, 'the note it replaced is not injected')
})

function exported(...texts: Array<{ text: string, supersedes?: number }>): { lines: string[], ids: string[] } {
  const src = clocked(tempStorePath('src'))
  const ids: string[] = []
  for (const { text, supersedes } of texts) ids.push(src.commit({ text, supersedes: supersedes === undefined ? '' : ids[supersedes] }).id)
  const lines = [...exportJsonl(src)]
  src.close()
  return { lines, ids }
}

t.test('import restores forward and backward supersede links, and refuses a link to a block that is nowhere', async (t) => {
  // OLD, then NEW supersedes OLD, then OLD again: OLD (line 2) current, NEW (line 3) replaced by OLD.
  const { lines, ids } = exported({ text: OLD }, { text: NEW, supersedes: 0 }, { text: OLD })
  const dst = new BlockStore(tempStorePath('dst'))
  t.teardown(() => dst.close())
  t.equal((await importJsonl(dst, lines)).failure, undefined)
  t.equal(dst.get(ids[0]!)?.supersededBy, null)
  t.equal(dst.get(ids[1]!)?.supersededBy, ids[0])

  const forward = exported({ text: OLD }, { text: NEW, supersedes: 0 })
  const fresh = new BlockStore(tempStorePath('dst'))
  t.teardown(() => fresh.close())
  t.equal((await importJsonl(fresh, forward.lines)).failure, undefined, 'a successor later in the file is waited for')
  t.equal(fresh.get(forward.ids[0]!)?.supersededBy, forward.ids[1])

  const dangling = forward.lines[1]!.replace(forward.ids[1]!, 'blk_000000000000000000000000')
  const third = new BlockStore(tempStorePath('dst'))
  t.teardown(() => third.close())
  const result = await importJsonl(third, [forward.lines[0]!, dangling])
  t.same(result.failure, { line: 2, afterEnd: true, message: 'supersededBy blk_000000000000000000000000 names a block that is neither in this file nor in the store; the block was imported as a current note' })
  t.equal(third.get(forward.ids[0]!)?.supersededBy, null, 'never stored pointing at nothing')
})

/** A file whose two blocks name each other as successor. */
function loopFile(): string[] {
  const { lines, ids } = exported({ text: OLD }, { text: NEW, supersedes: 0 })
  const second = JSON.parse(lines[2]!) as Record<string, unknown>
  return [lines[0]!, lines[1]!, JSON.stringify({ ...second, supersededBy: ids[0] })]
}

async function importsLoop(Store: typeof BlockStore, importer: typeof importJsonl): Promise<{ line?: number, loops: boolean }> {
  const dst = new Store(tempStorePath('dst'))
  try {
    const result = await importer(dst, loopFile())
    let loops = false
    try { heads(dst) } catch { loops = true }
    return { line: result.failure?.line, loops }
  } finally {
    dst.close()
  }
}

t.test('import refuses a supersede loop at its line and stores nothing of that line', async (t) => {
  t.same(await importsLoop(BlockStore, importJsonl), { line: 3, loops: false })
  const m = mutant({ file: 'store/supersede.ts', from: "if (wouldLoop(access, id, successor)) throw new StableMemError('invalid_input', `supersededBy:", to: "if (false) throw new StableMemError('invalid_input', `supersededBy:" })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof StoreModule>('store/store.ts')
  const { importJsonl: mutatedImport } = await m.load<typeof TransferModule>('store/transfer.ts')
  t.same(await importsLoop(Mutated, mutatedImport), { line: undefined, loops: true }, 'mutation: without the loop check the file loops')
})
