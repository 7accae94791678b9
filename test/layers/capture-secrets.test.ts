/**
 * Captured compaction text and the facts cooling distils from it are masked as a commit is
 * (issue 31, capture and cooling): a key after a Chinese or English prose label and a zero-width
 * character inside a captured turn never reach the cold block, the distilled facts, recall, or the
 * bytes of the file and its WAL. Real store file, the kernel's own cooling tick. Mutation check:
 * with the commit path's secrets policy switched off, the key reaches the cold block and the file.
 */
import { existsSync, readFileSync } from 'node:fs'
import t from 'tap'
import type * as coolingModule from '../../lib/kernel/layers/cooling.ts'
import { coolTick, type CoolingOptions } from '../../lib/kernel/layers/cooling.ts'
import type { CapturePiece } from '../../lib/store/layers.ts'
import type * as storeModule from '../../lib/store/store.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 10, 1, 6, 0)
const RULE: CoolingOptions = { idleMs: 72 * HOUR, maxAccess: 2, retryMs: 24 * HOUR, batch: 50 }
const AWS = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Kd2Lm4T'
const TOKEN = 'Xk29fQm8ZpL4vR7tNw3yBc6H'
const TURNS = [
  `记一下：billing 服务端口 13010，部署在 10.3.7.9，aws 的 secret 是 ${AWS} 别外传\u200b。`,
  `记一下：billing 部署凭证为 ${TOKEN}，服务端口 13010。`,
  `the deploy bot's token: ${TOKEN}, and it runs on 10.3.7.9`,
]

function piece(text: string, seq: number): CapturePiece {
  return { text, origin: { sessionId: 's1', seq, eventType: 'user/message', role: 'user', eventTime: T0, compactionId: 'c' } }
}

function bytesOf(path: string): Buffer {
  return Buffer.concat(['', '-wal'].filter((s) => existsSync(path + s)).map((s) => readFileSync(path + s)))
}

/** Captures the turns, cools them at +73 h, and returns every stored text and the raw bytes. */
async function captureAndCool(Store: typeof BlockStore, cool: typeof coolTick): Promise<{ cold: string[], all: string[], bytes: Buffer, cooled: number, recalled: string[] }> {
  const path = tempStorePath('capture-secrets')
  const writer = new Store(path, { now: () => T0 })
  const captured = writer.layers.capture(TURNS.map(piece), () => 'compaction:user')
  const cold = captured.ids.map((id) => writer.get(id)!.text)
  writer.close()
  const store = new Store(path)
  try {
    const report = await cool(store, T0 + 73 * HOUR, RULE, 'p1')
    const all = [...store.allBlocks()].map((b) => b.text)
    const recalled = recallBlocks(store, 'aws secret billing deploy bot token', { topK: 10 }).map((h) => h.text)
    return { cold, all, bytes: bytesOf(path), cooled: report.cooled, recalled }
  } finally {
    store.close()
  }
}

t.test('a key after a prose label and a zero-width character never reach the cold block, the facts, recall or the file', async (t) => {
  const { cold, all, bytes, cooled, recalled } = await captureAndCool(BlockStore, coolTick)
  t.equal(cold.length, 3, 'every turn captured')
  t.ok(cooled >= 1, `cooling distilled facts (${all.length - cold.length} facts)`)
  t.match(all.join('\n'), /billing\|服务端口=13010/, 'the plain facts are there')
  for (const text of [...all, ...recalled]) {
    t.notMatch(text, AWS.slice(0, 16), `no raw AWS key: ${text.slice(0, 60)}`)
    t.notMatch(text, TOKEN, 'no raw token')
    t.notMatch(text, '\u200b', 'no zero-width character')
  }
  t.notOk(bytes.includes(Buffer.from(AWS)) || bytes.includes(Buffer.from(TOKEN)), 'neither key is in the file or its WAL')
})

t.test('mutation check: with the secrets policy off on the commit path the key reaches the cold block and the file', async (t) => {
  const m = mutant({ file: 'store/validate.ts', from: 'const { text, redacted } = applySecretsPolicy(canonical, secrets, `${prefix}text`)', to: 'const text = canonical; const redacted: string[] = []' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof storeModule>('store/store.ts')
  const { coolTick: mutatedCool } = await m.load<typeof coolingModule>('kernel/layers/cooling.ts')
  const { cold, bytes } = await captureAndCool(Mutated, mutatedCool)
  t.match(cold.join('\n'), AWS, 'the key is in the cold block')
  t.ok(bytes.includes(Buffer.from(AWS)), 'and in the file')
})
