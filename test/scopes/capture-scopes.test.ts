/**
 * Turns captured at compaction, and the facts cooling distils from them, stay in the workspace of
 * the conversation they came from (issue 31: a workspace note never reaches another workspace).
 * Before, captured turns were saved as global notes, so what was said in project A was recalled
 * in every session of project B. Real loop with dsh's token meter and basic compaction, in a
 * session whose header records its cwd; cooling through the store's own cooling write. Mutation
 * checks: capture without the session's scope, facts without their block's scopes.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { SessionId } from '@deepseek-ai/dsh-session'
import t from 'tap'
import * as plugin from '../../lib/index.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import type * as storeModule from '../../lib/store/store.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { tempStorePath, userMessage } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { tempDir } from '../helpers/temp.ts'
import { bootWindowed, filler } from '../helpers/windowed.ts'

const root = realpathSync(tempDir('stablemem-capture-scopes'))
const A = join(root, 'project-a')
const B = join(root, 'project-b')
mkdirSync(A)
mkdirSync(B)

const NEEDLE = '记住：quasar 服务端口 13010，部署在 10.7.7.9。'

/** Runs a long conversation in a session at `cwd` until compaction has captured the needle; returns the store path. */
async function conversationAt(cwd: string, module?: typeof plugin): Promise<string> {
  const path = tempStorePath('capture-scopes')
  const w = await bootWindowed({ contextWindow: 3_000, plugin: { path }, module })
  try {
    const handle = await w.ctx.agents.create({ sessionId: SessionId(`cap-${Math.random().toString(36).slice(2, 10)}`), meta: { cwd }, agentOptions: { provider: 'mock', model: 'mock-1' } })
    const say = async (text: string) => {
      handle.agent.followup(userMessage(text))
      await handle.agent.whenIdle()
    }
    await say(NEEDLE)
    for (let i = 0; i < 14; i++) await say(filler(i, 600))
    if (w.adapter.compactions() === 0) throw new Error('no compaction happened')
    await handle.dispose()
  } finally {
    await w.dispose()
  }
  return path
}

/** What a session at `cwd` would get for a query: the texts recall finds in its union (global plus that workspace). */
function recalledAt(store: BlockStore, cwd: string, query: string): string[] {
  return recallBlocks(store, query, { topK: 10, scopes: ['global', `workspace:${cwd}`] }).map((h) => h.text)
}

/** Cools the captured needle block with one fact, through the store's cooling write. */
function coolNeedle(store: { layers: BlockStore['layers'], allBlocks: BlockStore['allBlocks'] }): string {
  const needle = [...store.allBlocks()].find((b) => b.text.includes('13010') && store.layers.layerOf(b.id) === 'cold')
  if (needle === undefined) throw new Error('the needle was not captured')
  const [outcome] = store.layers.coolMany([{ id: needle.id, facts: [{ text: 'quasar|服务端口=13010' }] }], Date.now(), 3_600_000)
  if (outcome?.result !== 'cooled') throw new Error(`not cooled: ${JSON.stringify(outcome)}`)
  return outcome.facts[0]!
}

t.test('a conversation\'s captured turns and their facts are recalled in its workspace only', async (t) => {
  const path = await conversationAt(A)
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  const captured = [...store.allBlocks()].find((b) => b.text.includes('13010'))
  t.ok(captured, 'the needle was captured')
  t.same(store.scopes.of(captured!.id), [`workspace:${A}`], 'in the session\'s workspace')
  t.ok(recalledAt(store, A, 'quasar 服务端口').some((x) => x.includes('13010')), 'recalled in A')
  t.notOk(recalledAt(store, B, 'quasar 服务端口').some((x) => x.includes('13010')), 'not in B')
  t.notOk(recalledAt(store, B, '10.7.7.9').some((x) => x.includes('13010')), 'not in B by its exact value')
  const fact = coolNeedle(store)
  t.same(store.scopes.of(fact), [`workspace:${A}`], 'the distilled fact is in its block\'s scope')
  t.ok(recalledAt(store, A, 'quasar 服务端口 13010').some((x) => x === 'quasar|服务端口=13010'), 'the fact is recalled in A')
  t.notOk(recalledAt(store, B, 'quasar 服务端口 13010').some((x) => x.includes('13010')), 'not in B')
})

t.test('a fact of a block in two workspaces is in both', async (t) => {
  const store = new BlockStore(tempStorePath('capture-two'))
  t.teardown(() => store.close())
  const piece = { text: 'quasar 服务端口 13010，部署在 10.7.7.9', origin: { sessionId: 's', seq: 1, eventType: 'user/message', role: 'user', eventTime: 0, compactionId: 'c' } }
  store.layers.capture([piece], () => 'compaction:user', `workspace:${A}`)
  store.layers.capture([{ ...piece, origin: { ...piece.origin, sessionId: 's2' } }], () => 'compaction:user', `workspace:${B}`)
  const fact = coolNeedle(store)
  t.same(store.scopes.of(fact), [`workspace:${A}`, `workspace:${B}`])
  t.notOk(recallBlocks(store, 'quasar 服务端口 13010', { topK: 10, scopes: ['global'] }).some((h) => h.text.includes('13010')), 'and not global')
})

t.test('mutation: capture without the session\'s scope saves the turns as global notes, recalled in B', async (t) => {
  const m = mutant({ file: 'store/layers.ts', from: 'pieces.map((piece) => ({ text: piece.text, scope }))', to: 'pieces.map((piece) => ({ text: piece.text }))' })
  t.teardown(() => m.remove())
  const path = await conversationAt(A, await m.load<typeof plugin>('index.ts'))
  const store = new BlockStore(path)
  t.teardown(() => store.close())
  t.ok(recalledAt(store, B, 'quasar 服务端口').some((x) => x.includes('13010')), 'the scope is what keeps it in A')
})

t.test('mutation: facts without their block\'s scopes are global, recalled in B', async (t) => {
  const m = mutant({ file: 'store/layers.ts', from: 'item.facts.map((f) => fact(f.text, scopes.get(item.id)![0]))', to: 'item.facts.map((f) => fact(f.text, undefined))' })
  t.teardown(() => m.remove())
  const { BlockStore: Mutated } = await m.load<typeof storeModule>('store/store.ts')
  const store = new Mutated(tempStorePath('capture-fact-mutant'))
  t.teardown(() => store.close())
  store.layers.capture([{ text: 'quasar 服务端口 13010，部署在 10.7.7.9', origin: { sessionId: 's', seq: 1, eventType: 'user/message', role: 'user', eventTime: 0, compactionId: 'c' } }], () => 'compaction:user', `workspace:${A}`)
  coolNeedle(store)
  t.ok(recallBlocks(store as never, 'quasar 服务端口 13010', { topK: 10, scopes: ['global', `workspace:${B}`] }).some((h) => h.text === 'quasar|服务端口=13010'), 'the fact\'s scope is what keeps it in A')
})

