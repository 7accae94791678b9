/**
 * Preset detection against the real `dsh-agent-presets`: an agent mounted on a preset through
 * `AgentPresets.mount` is on that preset for `presetOf` (the scope chain), a bare agent is on none.
 */
import t from 'tap'
import { KERNEL_ROWS } from '../../lib/kernel/preset.ts'
import { presetOf } from '../../lib/plugin/session-place.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { presetHarness } from '../helpers/presets.ts'

t.test('presetOf sees the preset an agent joined through AgentPresets', async (t) => {
  const h = await presetHarness({ host: { path: tempStorePath() }, presets: { stablemem: KERNEL_ROWS } })
  t.teardown(() => h.dispose())
  t.equal(presetOf(await h.agent('on-preset', 'stablemem')), 'stablemem')
  t.equal(presetOf(await h.agent('bare', null)), undefined)
})
