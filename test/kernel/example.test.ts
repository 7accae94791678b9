/**
 * The `examples/stage-guards.ts` plugin in real turns: its rate limiter (on_input), secret
 * redactor (after_toolcall) and turn counter (after_output), mounted beside dsh-stablemem.
 */
import { defineTool } from '@deepseek-ai/dsh-tools'
import t from 'tap'
import * as example from '../../examples/stage-guards.ts'
import { boot, reply, tempStorePath, toolCall } from '../helpers/harness.ts'

t.test('the example plugin limits, redacts and counts through three stages', async (t) => {
  const config = example.Config({ maxTurns: 2, windowMs: 3_600_000, tooFast: 'slow down' })
  const h = await boot({ path: tempStorePath() }, [toolCall('c1', 'read_env', {}), reply('done'), reply('second')], { extra: [{ plugin: example, config }] })
  t.teardown(() => h.dispose())
  h.ctx.tools.register(defineTool({
    name: 'read_env',
    description: 'Read the environment.',
    parameters: {},
    output: { schema: { type: 'string' }, render: (_a, v) => [{ type: 'text', text: v }] },
    async execute() { return 'OPENAI_KEY=sk-abcdefghijklmnopqrstuv password=hunter2 region=eu' },
  }))
  await h.turn('read the env', 'a')
  const toolText = h.adapter.requests[1]!.messages.filter((m) => m.source.kind === 'tool')
    .flatMap((m) => m.content.flatMap((b) => (b.type === 'tool-result' ? b.content.map((c) => (c.type === 'text' ? c.text : '')) : [])))
  t.same(toolText, ['OPENAI_KEY=[secret masked] password=[secret masked] region=eu'], 'secrets masked before the model saw them')
  await h.turn('second turn', 'a')
  const third = await h.turn('third turn', 'a')
  t.equal(h.adapter.requests.length, 3, 'the third turn within the window did not reach the model')
  const last = third.session.events.filter((e) => e.type === 'assistant/message').at(-1)!
  t.same(last.data.message.content, [{ type: 'text', text: 'slow down' }])
  await h.ctx.stablemem.stages.idle()
  const counted = h.logs.filter((l) => l.name === 'stage-guards' && /finished turn/.test(l.text)).map((l) => l.text.split(' ').slice(-3).join(' '))
  t.same(counted, ['a 1 completed', 'a 2 completed', 'a 3 completed'])
})
