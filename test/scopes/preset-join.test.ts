/**
 * Preset detection against the real `dsh-agent-presets`: an agent mounted on a preset through
 * `AgentPresets.mount` is on that preset for `presetOf` (the scope chain), a bare agent is on none;
 * a session that records a selection (`agent-preset/selected`) is on the last one it recorded.
 */
import t, { type Test } from 'tap'
import { KERNEL_ROWS } from '../../lib/kernel/preset.ts'
import { presetOf } from '../../lib/plugin/session-place.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { presetHarness } from '../helpers/presets.ts'

t.test('presetOf sees the preset an agent joined through AgentPresets', async (t) => {
  const h = await presetHarness({ host: { path: tempStorePath() }, presets: { stablemem: KERNEL_ROWS } })
  t.teardown(() => h.dispose())
  t.equal(presetOf(await h.agent('on-preset', 'stablemem')), 'stablemem')
  t.equal(presetOf(await h.agent('bare', null)), undefined)
})

/** presetOf on a bare agent whose session records `agent-preset/selected` events, read between appends. */
async function selections(t: Test, read: typeof presetOf): Promise<Array<string | undefined>> {
  const h = await presetHarness({ host: { path: tempStorePath() }, presets: { stablemem: KERNEL_ROWS } })
  t.teardown(() => h.dispose())
  const agent = await h.agent('switched', null)
  // dsh-agent-presets declares this event type; the test appends it as that package's switch does.
  const append = agent.session.append.bind(agent.session) as unknown as (type: string, data: object) => void
  const select = (agentPreset: string) => { append('agent-preset/selected', { agentPreset }) }
  const seen = [read(agent)]
  select('first')
  seen.push(read(agent))
  agent.session.append('turn/start', { turn: 1 })
  seen.push(read(agent))
  select('second')
  agent.session.append('turn/start', { turn: 2 })
  seen.push(read(agent))
  return seen
}

t.test('presetOf reads a session\'s recorded selection, the last one, each event once', async (t) => {
  t.same(await selections(t, presetOf), [undefined, 'first', 'first', 'second'])
  const m = mutant({ file: 'plugin/session-place.ts', from: 'if (seen.read >= session.seq) return seen.preset', to: 'if (seen.read > 0) return seen.preset' })
  t.teardown(() => m.remove())
  const mutated = await m.load<typeof import('../../lib/plugin/session-place.ts')>('plugin/session-place.ts')
  t.same(await selections(t, mutated.presetOf), [undefined, 'first', 'first', 'first'], 'the mutant that stops reading the log once it read some never sees the later selection')
})
