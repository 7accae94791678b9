/**
 * `stablemem forget --shared` shows rows written on another machine (issue 31): a member name or
 * a note planted in the team's table with terminal escapes (ESC and C1 sequences that retitle the
 * window or move the cursor), a bidi override or hidden characters reaches the terminal as
 * visible escapes, in the preview and in `--json` (which still parses to the exact stored value).
 * Real CLI processes, real PostgreSQL. Mutation check: the preview without the escaper writes the
 * raw ESC sequence.
 */
import { join } from 'node:path'
import t from 'tap'
import { forgetShared } from '../../lib/team/forget.ts'
import { shareNotes } from '../../lib/team/write.ts'
import { runCli } from '../helpers/cli.ts'
import { mutant } from '../helpers/mutant.ts'
import { startTeamDb, type TeamDb, type TeamRole } from './setup.ts'

let db: TeamDb
let a: TeamRole
t.before(async () => {
  db = await startTeamDb()
  a = await db.role('team_a', 'alpha')
})
t.teardown(() => db?.stop())

const MEMBER = 'eve\u001b]0;owned\u0007\u009b2J\u202Eevil\u200B'
const TEXT = 'alpha 值班表\u001b[2J\u202Egnp.exe\u{E0049} rotates on monday'
/** Raw characters a terminal acts on or hides. */
const RAW = /[\u001b\u0007\u009b\u202e\u200b\u{E0000}-\u{E007F}]/u

async function plant(): Promise<void> {
  const ca = await db.connect(a)
  try {
    await forgetShared(ca, 'alpha', { all: true })
    await shareNotes(ca, [{ text: TEXT, source: 'chat' }], { namespace: 'alpha', member: 'x', secrets: 'redact', maxBlockChars: 32_768 })
  } finally {
    await ca.end()
  }
  const admin = await db.server.admin(db.database)
  await admin.query('UPDATE stablemem.notes SET member = $1', [MEMBER])
  await admin.end()
}

const env = () => ({ ...process.env, STABLEMEM_TEAM_URL: db.server.url(db.database, a.role), STABLEMEM_TEAM_NAMESPACE: 'alpha', STABLEMEM_TEAM_MEMBER: 'oscar', STABLEMEM_TEAM_PASSWORD: a.password })

t.test('forget --shared shows a planted member name and text as escapes, never raw', async (t) => {
  await plant()
  const look = await runCli(['forget', '--shared', '--all', '--dry-run'], { env: env() })
  t.equal(look.code, 0, look.stderr)
  t.notMatch(look.stdout, RAW, 'no raw escape, bidi or hidden character in the preview')
  t.match(look.stdout, /eve\\u\{1B\}\]0;owned\\u\{7\}\\u\{9B\}2J\\u\{202E\}evil\\u\{200B\}: alpha 值班表 \[2J\\u\{202E\}gnp\.exe\\u\{E0049\} rotates on monday/, 'shown as escapes')
  const json = await runCli(['forget', '--shared', '--all', '--dry-run', '--json'], { env: env() })
  t.equal(json.code, 0, json.stderr)
  t.notMatch(json.stdout, RAW, 'no raw character in --json either')
  t.match(JSON.parse(json.stdout), { deleted: [{ member: MEMBER, text: TEXT }] }, '--json parses to the exact stored values')
})

t.test('mutation: a preview without the escaper writes the raw ESC sequence', async (t) => {
  await plant()
  const m = mutant({ file: 'cli/commands/forget.ts', from: '${escapeForDisplay(note.member)}: ${firstLine(note)}', to: '${note.member}: ${firstLine(note)}' })
  t.teardown(() => m.remove())
  const look = await runCli(['forget', '--shared', '--all', '--dry-run'], { env: env(), entry: join(m.dir, 'lib', 'cli', 'main.ts') })
  t.match(look.stdout, /\u001b\]0;owned/, 'the guard is what keeps the terminal safe')
})
