/**
 * Bad scene input through the service and the configuration: refused with the field named, or
 * normalised deliberately — never stored raw.
 */
import t from 'tap'
import * as plugin from '../../lib/index.ts'
import { boot, tempStorePath } from '../helpers/harness.ts'
import { refusal } from '../helpers/refusal.ts'

t.test('commit and declare: line breaks, controls, 10 kB keys and empty keys', async (t) => {
  const h = await boot({ path: tempStorePath('scene-inputs'), scenes: ['Chan:QQ', 'chan:qq/Group:Ops'] })
  t.teardown(() => h.dispose())
  const sm = h.ctx.stablemem
  t.same(sm.scenes.list().map((s) => s.key).sort(), ['chan:qq', 'chan:qq/group:ops'], 'config scenes declared, normalised')
  t.match(await refusal(() => sm.commit({ text: 'a', scene: 'chan:qq\nfake: line' })), { code: 'invalid_input', message: /scene contains a line break/ })
  t.match(await refusal(() => sm.commit({ text: 'a', scene: 'chan:\u0007qq' })), { code: 'invalid_input', message: /scene contains a control/ })
  t.match(await refusal(() => sm.commit({ text: 'a', scene: 'x'.repeat(10_000) })), { code: 'too_large', message: /scene is longer than/ })
  t.match(await refusal(() => sm.commit({ text: 'a', scene: '!!!' })), { code: 'invalid_input', message: /scene "!!!" has no letter/ })
  const none = await sm.commit({ text: 'no scene at all', scene: '' })
  t.equal((await sm.get(none.id))!.scene, '')
  const cjk = await sm.commit({ text: 'a long CJK key', scene: `chan:qq/${'群聊记录'.repeat(30)}` })
  const key = (await sm.get(cjk.id))!.scene
  t.ok(Buffer.byteLength(key) <= 96 && !key.includes('\ufffd'), 'cut on a character, valid UTF-8')
  t.equal(sm.scenes.get(key)?.notes[0]?.id, cjk.id)
  t.match(await refusal(() => sm.scenes.declare('')), { code: 'invalid_input', message: 'key is empty' })
  t.match(await refusal(() => sm.scenes.declare('a\u2028b')), { code: 'invalid_input' })
  t.equal(sm.scenes.declare(' Chan:WEB ').key, 'chan:web')
  t.match(await refusal(() => sm.scenes.attach('chan:web', ['blk_000000000000000000000000'])), { code: 'not_found' })
  t.match(await refusal(() => sm.scenes.attach('chan:web', [cjk.id], 2)), { code: 'invalid_input', message: /weight/ })
  t.equal((await sm.stats()).scenes?.scenes, 4)
})

t.test('a malformed scenes entry or time zone fails the load, naming the field', async (t) => {
  await t.rejects(boot({ path: tempStorePath(), scenes: ['chan:qq', 'bad\nkey'] }), /scenes\[1\] contains a line break/)
  await t.rejects(boot({ path: tempStorePath(), scenes: ['???'] }), /scenes\[0\]/)
  await t.rejects(boot({ path: tempStorePath(), timeZone: 'Mars/Olympus' }), /timeZone: "Mars\/Olympus" is not an IANA time zone/)
  t.throws(() => plugin.resolveConfig({ scenes: [42] } as never), /scenes/)
  t.throws(() => plugin.resolveConfig({ sceneCard: 'banner' } as never), /sceneCard/)
})
