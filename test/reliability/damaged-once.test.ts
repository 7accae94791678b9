/**
 * A truncated or corrupt store file (issue 31): `stablemem doctor` says what is wrong in one line
 * (exit 1, one `fail` line naming the file and the fix, no stack trace), and the agent keeps
 * running without memory over several turns, saying so once: one log record for the person,
 * while every turn's context line tells the model that memory is unavailable and no turn fails.
 * Damage found after a clean open is logged once too. Mutation check: a service that keeps the
 * damaged store open meets the damage again on every call and logs it each time.
 * (`damaged.test.ts` covers more kinds of unusable file and the bytes-unchanged property.)
 */
import { closeSync, openSync, statSync, truncateSync, writeSync } from 'node:fs'
import t, { type Test } from 'tap'
import * as plugin from '../../lib/index.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { runCli } from '../helpers/cli.ts'
import { boot, reply, requestTexts, tempStorePath, type Harness } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** A healthy store file with `n` notes, closed. */
function healthyStore(label: string, n = 400): string {
  const path = tempStorePath(label)
  const store = new BlockStore(path)
  store.commitMany(Array.from({ length: n }, (_, i) => ({ text: `note ${i}: billing 服务端口 ${8000 + i}，部署在 10.3.${i % 250}.9，负责人 user${i}` })))
  store.close()
  return path
}

function overwrite(path: string, at: number, length: number): void {
  const fd = openSync(path, 'r+')
  writeSync(fd, Buffer.alloc(length, 0xab), 0, length, at)
  closeSync(fd)
}

const DAMAGE: ReadonlyArray<{ name: string, make: () => string, why: RegExp }> = [
  { name: 'truncated to half', make: () => { const p = healthyStore('half'); truncateSync(p, Math.floor(statSync(p).size / 2)); return p }, why: /malformed/ },
  { name: 'truncated inside the header', make: () => { const p = healthyStore('short'); truncateSync(p, 50); return p }, why: /malformed|not a database/ },
  { name: 'pages overwritten', make: () => { const p = healthyStore('pages'); overwrite(p, 4096, 4096 * 8); return p }, why: /malformed|not a database/ },
  { name: 'header overwritten', make: () => { const p = healthyStore('header'); overwrite(p, 0, 100); return p }, why: /not a database/ },
]

/** The log records about memory being off or unusable. */
function memoryOffLogs(h: Harness): string[] {
  return h.logs.filter((l) => l.name === 'stablemem' && (l.type === 'error' || l.type === 'warn')).map((l) => l.text)
}

for (const { name, make, why } of DAMAGE) {
  t.test(`${name}: doctor says it in one line; the agent runs three turns without memory and says so once`, async (t) => {
    const path = make()
    const doctor = await runCli(['doctor', '--db', path])
    t.equal(doctor.code, 1, 'doctor exits 1')
    const fails = doctor.stdout.split('\n').filter((line) => line.startsWith('fail'))
    t.equal(fails.length, 1, `one fail line: ${fails.join(' | ')}`)
    t.match(fails[0], new RegExp(`^fail  integrity +${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a readable SQLite database \\(.*\\); restore it from an export or a backup$`))
    t.match(fails[0], why)
    t.match(doctor.stdout, /1 problem found\n$/)
    t.notMatch(doctor.stdout + doctor.stderr, /\n\s+at /, 'no stack trace')

    const h = await boot({ path }, [reply('一'), reply('二'), reply('三')])
    t.teardown(() => h.dispose())
    for (const question of ['billing 服务端口是多少？', '10.3.7.9 上跑的是什么', '记住：周五发版']) await h.turn(question)
    t.same(h.errors, [], 'no turn failed')
    t.equal(h.adapter.requests.length, 3, 'every turn reached the model')
    for (const [i, request] of h.adapter.requests.entries()) {
      t.ok(requestTexts(request).some((x) => x.includes('Long-term memory (dsh-stablemem) is unavailable')), `turn ${i + 1}: the model is told`)
    }
    const logs = memoryOffLogs(h)
    t.equal(logs.length, 1, `said once: ${JSON.stringify(logs)}`)
    t.match(logs[0], /memory disabled: .*/)
    t.match(logs[0], why)
  })
}

/** Three turns over a store damaged behind the open connection, with the plugin `module`. */
async function lateDamage(t: Tap, module?: typeof plugin): Promise<Harness> {
  const path = healthyStore('late', 3000)
  const h = await boot({ path }, [reply('一'), reply('二'), reply('三')], module ? { module } : {})
  t.teardown(() => h.dispose())
  const size = statSync(path).size
  overwrite(path, Math.floor(size / 3), Math.floor(size / 3))
  // Questions whose recall reads the overwritten pages (the notes' middle third).
  for (const question of ['note 1500 billing 服务端口 9500 部署在哪里？负责人是谁', 'note 1600 billing 服务端口 9600 部署在哪里？', 'note 1700 billing 服务端口 9700 部署在哪里？']) await h.turn(question)
  return h
}
type Tap = Test

t.test('damage found after a clean open: said once, every turn runs', async (t) => {
  const h = await lateDamage(t)
  t.same(h.errors, [])
  t.equal(h.adapter.requests.length, 3)
  const all = memoryOffLogs(h)
  const off = all.filter((l) => /memory disabled/.test(l))
  t.equal(off.length, 1, `said once: ${JSON.stringify(all)}`)
  // The turn that met the damage also says its recall failed; the later turns say nothing more.
  t.ok(all.length <= 2 && all.every((l) => /memory disabled|recall failed, turn continues without notes/.test(l)), `nothing else logged: ${JSON.stringify(all)}`)
  t.equal((await h.ctx.stablemem.stats()).available, false)
})

t.test('mutation: a service that keeps the damaged store open logs the damage on every call', async (t) => {
  const m = mutant({ file: 'service/store-guard.ts', from: "    this.logger.error('memory disabled: %s', this.failure)\n    store.close()\n", to: "    this.logger.error('memory disabled: %s', this.failure)\n" })
  t.teardown(() => m.remove())
  const h = await lateDamage(t, await m.load<typeof plugin>('index.ts'))
  const off = memoryOffLogs(h).filter((l) => /memory disabled/.test(l))
  t.ok(off.length > 1, `the guard is what makes it once (${off.length} records)`)
})
