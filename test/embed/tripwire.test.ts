/**
 * With no embedder configured, the plugin makes zero network calls. A tripwire replaces the
 * global fetch, the undici global dispatcher and `net.Socket#connect` for the duration of a
 * scenario and counts every attempt; the mutation check runs the same scenario with an embedder
 * forced on and shows the tripwire sees it.
 */
import net from 'node:net'
import t from 'tap'
import { Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from 'undici'
import { resolveConfig, type EmbedConfig } from '../../lib/config.ts'
import { backfillVectors } from '../../lib/embed/backfill.ts'
import { embedderFromConfig } from '../../lib/embed/from-config.ts'
import { recallBlocksHybrid } from '../../lib/recall/hybrid.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { boot, realBatch, reply, tempStorePath, toolCall } from '../helpers/harness.ts'

class TripwireDispatcher extends Dispatcher {
  readonly calls: string[]
  constructor(calls: string[]) {
    super()
    this.calls = calls
  }
  override dispatch(options: Dispatcher.DispatchOptions): boolean {
    this.calls.push(`undici ${String(options.origin)}${options.path}`)
    throw new Error('tripwire: network call')
  }
}

/** Runs `fn` with every network path replaced by a counter; returns what was attempted. */
async function withTripwire(fn: () => Promise<void>): Promise<string[]> {
  const calls: string[] = []
  const savedFetch = globalThis.fetch
  const savedDispatcher = getGlobalDispatcher()
  const savedConnect = net.Socket.prototype.connect
  globalThis.fetch = (async (input: unknown) => { calls.push(`fetch ${String(input)}`); throw new Error('tripwire: fetch') }) as typeof fetch
  setGlobalDispatcher(new TripwireDispatcher(calls))
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    calls.push(`socket ${JSON.stringify(args[0])}`)
    return (savedConnect as (...a: unknown[]) => net.Socket).apply(this, args)
  } as typeof savedConnect
  try {
    await fn()
  } finally {
    globalThis.fetch = savedFetch
    setGlobalDispatcher(savedDispatcher)
    net.Socket.prototype.connect = savedConnect
  }
  return calls
}

/** Commit, background vectors, hybrid recall and a backfill as the configuration decides. */
async function storeScenario(embed: EmbedConfig): Promise<void> {
  const store = new BlockStore(tempStorePath())
  try {
    store.commit({ text: 'The billing service listens on port 8499.' })
    let embedder = null
    try { embedder = embedderFromConfig(embed, {}) } catch { /* a bad config means no embedder */ }
    await recallBlocksHybrid(store, embedder, 'which port does billing use', { budgetMs: 200 })
    if (embedder) await backfillVectors(store, embedder).catch(() => {})
  } finally {
    store.close()
  }
}

t.test('no embedder configured: the whole plugin makes zero network calls', async (t) => {
  const calls = await withTripwire(async () => {
    const h = await boot({ path: tempStorePath() }, [
      toolCall('c1', 'stablemem_commit', { text: 'billing 服务端口 8499，部署在 10.3.7.9' }),
      reply('ok'),
      reply('8499'),
    ])
    try {
      await h.turn('please remember the billing port')
      await h.turn(realBatch('which port does the billing service use')[0]!)
      await h.ctx.stablemem.recall('billing port')
      await h.ctx.stablemem.vectorsIdle()
      t.equal((await h.ctx.stablemem.stats()).recallDegraded.no_embedder, 3)
      t.same(h.errors, [])
    } finally {
      await h.dispose()
    }
    await storeScenario(resolveConfig().embed)
  })
  t.same(calls, [], 'no network call of any kind')
})

t.test('mutation: the tripwire catches a network call when an embedder is forced on', async (t) => {
  const forced = { ...resolveConfig().embed, baseUrl: 'http://127.0.0.1:9/v1', model: 'm', timeoutMs: 1000 }
  const calls = await withTripwire(() => storeScenario(forced))
  t.ok(calls.length > 0, `the tripwire saw: ${calls.join(', ')}`)
  const viaFetch = await withTripwire(async () => { await fetch('http://127.0.0.1:9/').catch(() => {}) })
  t.equal(viaFetch.length, 1, 'a global fetch is caught too')
})
