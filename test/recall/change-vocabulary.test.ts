/**
 * Arbitration's change vocabulary: a later note that puts the old value out of use in words
 * beyond "changed to" (deactivated, retired, abolished, no longer used, 停用, 作废, 旧号码 …)
 * still voids the older note, so with topK 1 the current value is the one recalled. The rule
 * stays strict: the later note must name the old value, its key and another value.
 */
import t from 'tap'
import { CHANGE_VOCABULARY, replacesValue } from '../../lib/recall/arbitration.ts'
import type * as ArbitrationModule from '../../lib/recall/arbitration.ts'
import type * as RecallModule from '../../lib/recall/recall.ts'
import { recallBlocks } from '../../lib/recall/recall.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { mutant } from '../helpers/mutant.ts'

/** Earlier note, later note, and the query that must return the later one first (topK 1). */
const REPLACEMENTS: Array<[string, string, string]> = [
  ['billing 服务端口 8499', 'billing 服务端口 8499 已停用，现在用 8500', 'billing 服务端口'],
  ['The billing port is 8499.', 'The billing port 8499 was deactivated; clients use 8500.', 'billing port'],
  ['The support hotline number is 4006001234.', 'The support hotline number 4006001234 was retired in favour of 4008009999.', 'support hotline number'],
  ['Office fax 021-5555-0100', 'The office fax 021-5555-0100 is no longer used; send to 021-5555-0200.', 'office fax'],
  ['VPN gateway 10.8.0.1', 'VPN gateway 10.8.0.1 decommissioned, new gateway 10.8.0.9', 'VPN gateway'],
  ['值班室分机号 4324', '值班室分机号 4324 作废，请拨 4379', '值班室分机号'],
  ['测试环境数据库端口 5432', '测试环境数据库端口 5432 已废弃，统一走 6432', '测试环境数据库端口'],
  ['客服电话 95588', '客服电话旧号码 95588 已注销，新号码 95566', '客服电话'],
  ['内网 DNS 10.0.0.53', '内网 DNS 10.0.0.53 下线了，换 10.0.0.54', '内网 DNS'],
]

function storeWith(texts: string[]): BlockStore {
  let clock = 1_000
  const store = new BlockStore(':memory:', { now: () => (clock += 1000) })
  for (const text of texts) store.commit({ text })
  return store
}

function currentFirst(recall: typeof recallBlocks): string[] {
  const wrong: string[] = []
  for (const [old, later, query] of REPLACEMENTS) {
    const store = storeWith([old, later])
    try {
      const top = recall(store, query, { topK: 1 }).map((h) => h.text)
      if (top[0] !== later) wrong.push(`${query}: ${JSON.stringify(top)}`)
    } finally {
      store.close()
    }
  }
  return wrong
}

t.test('a later note that retires the old value in other words is recalled alone with topK 1', async (t) => {
  t.same(currentFirst(recallBlocks), [])
})

t.test('the rule stays strict: another key, no other value, a mention, or a word inside another word is not a replacement', async (t) => {
  const old = { text: 'billing port 8499', createdAt: 1 }
  t.notOk(replacesValue(old, { text: 'Server 8499 retired in 2024', createdAt: 2 }), 'the key (port) is not named')
  t.notOk(replacesValue(old, { text: 'billing port 8499 deactivated', createdAt: 2 }), 'no other value')
  t.notOk(replacesValue(old, { text: 'billing port 8499 and 8500 are both open', createdAt: 2 }), 'no change word')
  t.notOk(replacesValue(old, { text: 'I know the billing port 8499 and 8500', createdAt: 2 }), '"now" inside "know" is not a change word')
  t.notOk(replacesValue({ text: '客服电话 95588', createdAt: 1 }, { text: '投诉热线 95588 已停用，新号码 95566', createdAt: 2 }), '另一个键')
  t.ok(replacesValue(old, { text: 'billing port 8499 deactivated, use 8500', createdAt: 2 }))
  for (const group of Object.values(CHANGE_VOCABULARY)) t.ok(group.en.length > 0 && group.zh.length > 0, 'each group has English and Chinese')
})

t.test('mutation: with the old short list of change words the retired value stays first', async (t) => {
  const m = mutant({ file: 'recall/arbitration.ts', from: "export const CHANGE_MARKERS: readonly string[] = Object.values(CHANGE_VOCABULARY).flatMap(({ en, zh }) => [...en, ...zh])",
    to: "export const CHANGE_MARKERS: readonly string[] = ['改为', '改成', '换成', '变成', '变为', '更新为', '更改为', '调整为', '迁移到', '迁到', '替换', '取代', '不再', '已改', '现为', '现在是', 'changed', 'moved to', 'replaced', 'instead of', 'no longer', 'switched', 'migrated', 'now ', '->', '→']" })
  t.teardown(() => m.remove())
  await m.load<typeof ArbitrationModule>('recall/arbitration.ts')
  const { recallBlocks: mutated } = await m.load<typeof RecallModule>('recall/recall.ts')
  t.ok(currentFirst(mutated).length >= 5, 'most of the replacements are missed')
})
