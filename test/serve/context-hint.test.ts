/** The context line tells the model where the user can see and correct memory (dsh web has no plugin panel for it). */
import t from 'tap'
import { BROWSER_HINT } from '../../lib/plugin/context-line.ts'
import { boot, reply, requestTexts, tempStorePath } from '../helpers/harness.ts'

t.test('the context line names stablemem serve once notes exist', async (t) => {
  const h = await boot({ path: tempStorePath() }, [reply('ok'), reply('ok')])
  t.teardown(() => h.dispose())
  await h.turn('hello')
  t.notOk(requestTexts(h.adapter.requests[0]!).some((x) => x.includes('stablemem serve')), 'an empty store announces nothing')
  await h.ctx.stablemem.commit({ text: 'the billing port is 8499' })
  await h.turn('what is the billing port?')
  t.ok(requestTexts(h.adapter.requests[1]!).some((x) => x.includes(BROWSER_HINT)), 'the model can tell the user how to look')
})
