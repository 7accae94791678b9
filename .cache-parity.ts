import { startPostgres } from './test/helpers/postgres.ts'
import { migrateTeamSchema, grantTeam } from './lib/team/schema.ts'
import { readEvalSet } from './bench/recall/eval-set.ts'
import { parity } from './bench/team/parity.ts'
const s = await startPostgres()
try {
  const c = await s.admin()
  await migrateTeamSchema(c, 'postgres')
  for (const name of process.argv.slice(2)) {
    const set = readEvalSet(`../shared/eval/${name}`)
    const t0 = Date.now()
    console.log(name, await parity(c, set, 'global', (ns) => grantTeam(c, 'postgres', ns)), Date.now() - t0)
  }
  await c.end()
} finally { await s.stop() }
