/** `stablemem vacuum`: gives the space of forgotten notes back to the file system. */
import { println, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'
import { formatBytes } from './stats.ts'

/** The vacuum command. */
export const command: Command = {
  usage: [
    'Usage: stablemem vacuum [--db <path>] [--json]',
    '',
    'Rewrites the full-text index and the store file without free pages (SQLite VACUUM), then',
    'empties the WAL. Use it after forgetting many notes; it also removes any free-page residue',
    'left by releases before secure deletion. Other processes may keep the file open; writers',
    'wait while it runs.',
    '',
    '  --json  print {bytesBefore, bytesAfter, walCleared} as JSON',
  ].join('\n'),
  options: { json: { type: 'boolean' } },
  positionals: { min: 0, max: 0 },
  async run({ db, dbGiven, values, io }) {
    const result = await withStore(openExisting(db, dbGiven, { write: true }), (store) => store.vacuum())
    if (values.json === true) println(io.stdout, JSON.stringify(result))
    else println(io.stdout, `vacuumed ${db}: ${formatBytes(result.bytesBefore)} → ${formatBytes(result.bytesAfter)}`)
    if (!result.walCleared) println(io.stderr, 'stablemem vacuum: another process is reading the store, so its WAL could not be emptied yet; run vacuum again later')
    return 0
  },
}
