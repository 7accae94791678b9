import t from 'tap'
import { boot, injected, reply, requestTexts, tempStorePath, toolCall } from './helpers/harness.ts'

t.test('a fact saved by the tool in one session is recalled into the next session\'s request', async (t) => {
  const path = tempStorePath()
  const h = await boot({ path }, [
    toolCall('c1', 'stablemem_commit', { text: 'billing 服务端口 8499，部署在 10.3.7.9' }),
    reply('已记住。'),
    reply('billing 的端口是 8499。'),
  ])
  t.teardown(() => h.dispose())
  await h.turn('记住：billing 服务端口 8499，部署在 10.3.7.9')
  await h.turn('billing 服务的端口是多少？')
  t.same(h.errors, [])
  t.equal(h.adapter.requests.length, 3)
  const toolResult = requestTexts(h.adapter.requests[1]!)
  t.ok(toolResult.some((x) => /^Saved to long-term memory as blk_[0-9a-f]{24}\.$/.test(x)), 'tool result rendered')
  const second = h.adapter.requests[2]!
  const ours = injected(second)
  t.equal(ours.length, 1, 'exactly one attributed recall message')
  const text = ours[0]!.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
  t.match(text, /> billing 服务端口 8499，部署在 10\.3\.7\.9/)
  t.ok(requestTexts(second).some((x) => x.includes('Long-term memory (dsh-stablemem): 1 note stored')), 'context line present')
  t.same(second.tools?.map((tool) => tool.name), ['stablemem_commit', 'stablemem_recall'])
})
