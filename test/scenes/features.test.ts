/**
 * The situation of a human message from dsh facts: bridge fields, web prompts, the configured
 * channel, topic words, and the part of day in the user's zone (HologramAgent used the server's).
 */
import { createUserMessage } from '@deepseek-ai/dsh-llm'
import t from 'tap'
import * as features from '../../lib/kernel/scenes/features.ts'
import { mutant } from '../helpers/mutant.ts'

const AT = Date.UTC(2026, 0, 5, 2, 30) // 02:30 UTC: 10:30 in Shanghai, 21:30 the evening before in New York

function msg(text: string, source: Record<string, unknown>) {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user', ...source } as never })
}

function keys(mod: typeof features, text: string, source: Record<string, unknown>, context = { now: AT, channel: '', timeZone: '' }) {
  return mod.situationOf(msg(text, source), context)
}

t.test('bridge fields, web, the configured channel, topics', async (t) => {
  const qq = keys(features, '这个端口配置怎么改', { channel: 'QQ', group: 'Group 1', peer: 'u_9', clientTimeZone: 'Asia/Shanghai' })
  t.same(qq.declared, ['chan:qq/group:group_1'])
  t.same(qq.features.slice(0, 2).map((f) => f.key), ['group:group_1', 'chan:qq'], 'the group is the partner; the speaker is no feature')
  t.ok(qq.features.some((f) => f.key.startsWith('topic:')), 'topic words of the Chinese text')
  t.ok(qq.features.every((f) => !f.key.startsWith('peer:')))
  const web = keys(features, 'deploy the staging server', { rpcId: 'r1' })
  t.same(web.declared, ['chan:web'])
  t.same(web.features.filter((f) => f.key.startsWith('topic:')).map((f) => f.key).sort(), ['topic:deploy', 'topic:server', 'topic:staging'])
  t.same(keys(features, 'hi there', {}, { now: AT, channel: 'cli', timeZone: '' }).declared, ['chan:cli'])
  t.same(keys(features, 'hi there', {}).declared, [], 'no channel: no declared key')
  t.same(keys(features, 'x', { channel: 'qq', scene: ['Team:Ops', 'bad\nkey', 42] }).declared, ['chan:qq', 'team:ops'], 'extra scene keys: normalised, bad ones dropped')
})

t.test('part of day in the user\'s zone: clientTimeZone, else config timeZone', async (t) => {
  const part = (f: features.SituationFacts) => f.features.find((x) => x.key.startsWith('part:'))?.key
  t.equal(part(keys(features, 'x', { channel: 'qq', clientTimeZone: 'Asia/Shanghai' })), 'part:morning')
  t.equal(part(keys(features, 'x', { channel: 'qq' }, { now: AT, channel: '', timeZone: 'America/New_York' })), 'part:evening')
  t.equal(part(keys(features, 'x', { channel: 'qq', clientTimeZone: 'Asia/Shanghai' }, { now: AT, channel: '', timeZone: 'America/New_York' })), 'part:morning', 'the message\'s zone wins')
  const m = mutant({ file: 'kernel/scenes/features.ts', from: "feature('part', partOfDay(hourIn(context.now, zone)))", to: "feature('part', partOfDay(new Date(context.now).getUTCHours()))" })
  t.teardown(m.remove)
  const server = await m.load<typeof features>('kernel/scenes/features.ts')
  t.equal(part(keys(server, 'x', { channel: 'qq', clientTimeZone: 'Asia/Shanghai' })), 'part:night', 'HologramAgent: the server clock says night')
})

t.test('the hour, formatted once per UTC quarter, is the zone\'s hour at every moment, across a DST change', async (t) => {
  let wrong = 0
  for (const zone of ['America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Asia/Shanghai']) {
    const format = new Intl.DateTimeFormat('en-US', { hour: 'numeric', hourCycle: 'h23', timeZone: zone })
    // 2026-03-08 is a spring-forward day in New York; Lord Howe moves by half an hour in April.
    for (let at = Date.UTC(2026, 2, 7); at < Date.UTC(2026, 2, 9); at += 7 * 60_000) {
      const expected = Number(format.formatToParts(at).find((p) => p.type === 'hour')!.value) % 24
      if (features.hourIn(at, zone) !== expected) wrong++
    }
    for (let at = Date.UTC(2026, 3, 4, 12); at < Date.UTC(2026, 3, 5, 18); at += 7 * 60_000) {
      const expected = Number(format.formatToParts(at).find((p) => p.type === 'hour')!.value) % 24
      if (features.hourIn(at, zone) !== expected) wrong++
    }
  }
  t.equal(wrong, 0)
})
