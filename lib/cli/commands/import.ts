/**
 * `stablemem import`: restores a JSON Lines export. Idempotent; stops at the first bad line and
 * says which, keeping every line before it. Shows progress on a terminal for large files.
 */
import { existsSync, rmSync, statSync } from 'node:fs'
import { StableMemError } from '../../errors.ts'
import type { SecretsPolicy } from '../../secrets.ts'
import { importJsonl, type ImportResult } from '../../store/transfer.ts'
import { escapeForDisplay } from '../../text/terminal.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openForWrite, withStore } from '../open-store.ts'
import { fileLines, type ReadProgress } from '../read-lines.ts'

/** Files at least this large get a progress line when standard error is a terminal. */
const PROGRESS_MIN_BYTES = 1 << 20

/** The import command. */
export const command: Command = {
  usage: [
    'Usage: stablemem import <file.jsonl> [--secrets refuse|allow|redact] [--include-forgotten] [--db <path>] [--json]',
    '',
    'Restores blocks (ids, text, tags, times, access counts) and edges from `stablemem export`.',
    'Importing the same file again changes nothing. A malformed line stops the import with its',
    'line number; the lines before it stay imported, so fix the line and run it again.',
    '',
    'Notes this store has forgotten (`stablemem forget` keeps their ids, never their text) and',
    'their edges are skipped and counted, so an older export does not bring them back.',
    'Lines must be UTF-8 and at most 16 MiB. If nothing could be imported into a store that did',
    'not exist before, no store file is left behind.',
    'When it created notes, it ends by merging the full-text index into one segment (`stablemem upkeep`).',
    '',
    '  --secrets <p>        notes holding credentials: refuse (default; stop at the first), allow',
    '                       (store them as exported, e.g. from a `secrets: allow` store) or redact',
    '                       (mask them; a masked note gets a new id, and the file\'s edges follow it)',
    '  --include-forgotten  import forgotten notes too',
    '  --json               print the counts (and the masked notes) as JSON',
  ].join('\n'),
  options: { json: { type: 'boolean' }, secrets: { type: 'string' }, 'include-forgotten': { type: 'boolean' } },
  positionals: { min: 1, max: 1 },
  async run({ db, args, values, io }) {
    const file = args[0]!
    let size: number
    try {
      size = statSync(file).size
    } catch (error) {
      throw new StableMemError('not_found', `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
    }
    const secrets = values.secrets ?? 'refuse'
    if (secrets !== 'refuse' && secrets !== 'allow' && secrets !== 'redact') throw new UsageError(`--secrets must be refuse, allow or redact, not "${String(secrets)}"`)
    const read: ReadProgress = { bytesRead: 0 }
    const showProgress = io.stderr.isTTY === true && size >= PROGRESS_MIN_BYTES
    const existed = existsSync(db)
    const result = await withStore(openForWrite(db), async (store) => {
      const imported = await importJsonl(store, fileLines(file, read), {
        secrets: secrets as SecretsPolicy,
        includeForgotten: values['include-forgotten'] === true,
        onProgress: showProgress
          ? ({ lines: n }) => io.stderr.write(`\rimporting ${file}: ${n} lines, ${Math.floor((100 * read.bytesRead) / size)}%`)
          : undefined,
      })
      // A bulk write leaves the index in many segments; merged now, the first queries seek one (docs/recall.md, "Index upkeep").
      if (imported.blocksCreated > 0) store.upkeep()
      return imported
    })
    if (showProgress) io.stderr.write('\r\x1b[K')
    // A file that is not an export must not leave an empty store behind in its place.
    const emptyNew = !existed && result.blocksCreated === 0 && result.edgesCreated === 0
    if (emptyNew && result.failure !== undefined) for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true })
    if (values.json === true) println(io.stdout, JSON.stringify(result))
    else println(io.stdout, summary(result))
    for (const r of result.redacted ?? []) println(io.stderr, `stablemem import: line ${r.line}: masked ${r.kinds.join(', ')}; ${r.id} is stored as ${r.storedAs}`)
    if (result.failure !== undefined) {
      const kept = result.failure.afterEnd === true ? 'the other lines were imported'
        : emptyNew ? 'nothing was imported, and no store was created' : `the ${result.lines} lines before it were imported`
      println(io.stderr, `stablemem import: line ${result.failure.line}: ${escapeForDisplay(result.failure.message)}; ${kept}`)
      return 1
    }
    return 0
  },
}

/** One line of counts. */
function summary(result: ImportResult): string {
  return `imported ${result.lines} lines: ${result.blocksCreated + result.blocksMerged} blocks (${result.blocksCreated} new, ${result.blocksMerged} already present), ` +
    `${result.edgesCreated + result.edgesExisting} edges (${result.edgesCreated} new, ${result.edgesExisting} already present)` +
    (result.originsCreated || result.originsExisting
      ? `, ${(result.originsCreated ?? 0) + (result.originsExisting ?? 0)} origins of captured turns (${result.originsCreated ?? 0} new)`
      : '') +
    (result.blocksForgotten || result.edgesForgotten
      ? `; skipped ${result.blocksForgotten ?? 0} forgotten notes and ${result.edgesForgotten ?? 0} of their edges (--include-forgotten restores them)`
      : '')
}
