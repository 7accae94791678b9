/** `stablemem cool`, and the layers in `stats` and `doctor`, as a person runs them. */
import t from 'tap'
import { BlockStore } from '../../lib/store/store.ts'
import { runCli } from '../helpers/cli.ts'
import { tempStorePath } from '../helpers/harness.ts'

const T0 = Date.UTC(2026, 10, 1, 6, 0)

function seeded(): string {
  const path = tempStorePath('cli-cool')
  const store = new BlockStore(path, { now: () => T0 })
  const origin = { sessionId: 's', eventType: 'user/message', role: 'user', eventTime: T0, compactionId: '' }
  store.layers.capture([{ text: '记一下：billing 服务端口 13010。', origin: { ...origin, seq: 1 } }, { text: '好的，继续。', origin: { ...origin, seq: 2 } }], () => 'compaction:user')
  store.commit({ text: 'a saved note 8499' })
  store.close()
  return path
}

t.test('cool --dry-run lists what would cool and why, writes nothing; cool does it', async (t) => {
  const db = seeded()
  const at = new Date(T0 + 73 * 3_600_000).toISOString()
  const early = await runCli(['cool', '--db', db, '--now', new Date(T0 + 3_600_000).toISOString()])
  t.equal(early.code, 0)
  t.match(early.stdout, /nothing to cool/)
  const dry = await runCli(['cool', '--dry-run', '--db', db, '--now', at])
  t.equal(dry.code, 0, dry.stderr)
  t.match(dry.stdout, /would-cool {2}\(accessed 0×, idle 73 h\)\n {3}→ billing\|服务端口=13010/)
  t.match(dry.stdout, /1 would cool, 1 would be kept for a later try \(dry run: nothing written\)/)
  const store = new BlockStore(db)
  t.equal(store.layers.stats().cold, 2, 'dry run wrote nothing')
  store.close()
  const real = await runCli(['cool', '--db', db, '--now', at, '--json'])
  t.equal(real.code, 0, real.stderr)
  t.match(JSON.parse(real.stdout), { status: 'ran', selected: 2, cooled: 1, kept: 1 })
  const stats = await runCli(['stats', '--db', db])
  t.match(stats.stdout, /layers: +3 stable, 1 cold \(2 captured at compaction, 1 waiting for another try\)/)
  t.match(stats.stdout, /last cooling: +\d{4}-/)
  const json = JSON.parse((await runCli(['stats', '--db', db, '--json'])).stdout)
  t.match(json, { layers: { stable: 3, cold: 1, captured: 2, undistilled: 1 } })
  const doctor = await runCli(['doctor', '--db', db])
  t.match(doctor.stdout, /layers.*3 stable, 1 cold \(1 yielded no fact yet/)
})

t.test('bad --now is a usage error; a missing store is a failure naming it', async (t) => {
  const bad = await runCli(['cool', '--db', seeded(), '--now', 'next tuesday-ish'])
  t.equal(bad.code, 2)
  t.match(bad.stderr, /--now: cannot read "next tuesday-ish"/)
  const missing = await runCli(['cool', '--db', tempStorePath('none')])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /no store at/)
  const relative = await runCli(['cool', '--dry-run', '--db', seeded(), '--now', '+1h'])
  t.equal(relative.code, 0)
})
