import { join } from 'node:path'
import t from 'tap'
import { diagnose, realEnv } from '../lib/cli/doctor.ts'
import { tempDir } from './helpers/temp.ts'

const missing = join(tempDir('stablemem-doctor'), 'none.db')

t.test('doctor says plainly when node:sqlite is missing or Node is too old', async (t) => {
  const checks = await diagnose(missing, { nodeVersion: '20.20.2', loadSqlite: () => Promise.reject(new Error('No such built-in module: node:sqlite')) })
  t.same(checks.map((c) => `${c.status} ${c.label}`), ['fail node', 'fail node:sqlite', 'fail store'])
  t.match(checks[0]!.detail, /Node 20\.20\.2 is too old: dsh-stablemem needs Node 22\.19 or newer/)
  t.match(checks[1]!.detail, /install Node 22\.19 or newer/)
})

t.test('the version gate: 22.19 passes, 22.18 fails (boundary on both sides)', async (t) => {
  for (const [version, status] of [['22.19.0', 'ok'], ['22.18.9', 'fail'], ['23.0.0', 'ok'], ['24.21.0', 'ok']] as const) {
    const [node] = await diagnose(missing, { ...realEnv, nodeVersion: version })
    t.equal(node!.status, status, version)
  }
})

t.test('a SQLite without FTS5 is reported, and the file is not checked further', async (t) => {
  const real = await realEnv.loadSqlite()
  class NoFts extends real.DatabaseSync {
    override exec(sql: string): void {
      if (/fts5/i.test(sql)) throw new Error('no such module: fts5')
      super.exec(sql)
    }
  }
  const checks = await diagnose(missing, { ...realEnv, loadSqlite: async () => ({ ...real, DatabaseSync: NoFts }) })
  t.same(checks.map((c) => `${c.status} ${c.label}`), ['ok node', 'ok node:sqlite', 'fail fts5'])
  t.match(checks[2]!.detail, /built without FTS5, so recall cannot work/)
})
