/**
 * `stablemem import`: restores a JSON Lines export. Idempotent; stops at the first bad line and
 * says which, keeping every line before it. Shows progress on a terminal for large files.
 */
import { createReadStream, statSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { StableMemError } from '../../errors.ts'
import { importJsonl, type ImportResult } from '../../store/transfer.ts'
import { println, type Command } from '../command.ts'
import { openForWrite, withStore } from '../open-store.ts'

/** Files at least this large get a progress line when standard error is a terminal. */
const PROGRESS_MIN_BYTES = 1 << 20

/** The import command. */
export const command: Command = {
  usage: [
    'Usage: stablemem import <file.jsonl> [--include-forgotten] [--db <path>] [--json]',
    '',
    'Restores blocks (ids, text, tags, times, access counts) and edges from `stablemem export`.',
    'Importing the same file again changes nothing. A malformed line stops the import with its',
    'line number; the lines before it stay imported, so fix the line and run it again.',
    '',
    'Notes this store has forgotten (`stablemem forget` keeps their ids, never their text) and',
    'their edges are skipped and counted, so an older export does not bring them back.',
    '',
    '  --include-forgotten  import forgotten notes too',
    '  --json               print the counts as JSON',
  ].join('\n'),
  options: { json: { type: 'boolean' }, 'include-forgotten': { type: 'boolean' } },
  positionals: { min: 1, max: 1 },
  async run({ db, args, values, io }) {
    const file = args[0]!
    let size: number
    try {
      size = statSync(file).size
    } catch (error) {
      throw new StableMemError('not_found', `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
    }
    const stream = createReadStream(file, { encoding: 'utf8' })
    const lines = createInterface({ input: stream, crlfDelay: Infinity })
    const showProgress = io.stderr.isTTY === true && size >= PROGRESS_MIN_BYTES
    const result = await withStore(openForWrite(db), (store) => importJsonl(store, lines, {
      includeForgotten: values['include-forgotten'] === true,
      onProgress: showProgress
        ? ({ lines: n }) => io.stderr.write(`\rimporting ${file}: ${n} lines, ${Math.floor((100 * stream.bytesRead) / size)}%`)
        : undefined,
    }))
    lines.close()
    stream.destroy()
    if (showProgress) io.stderr.write('\r\x1b[K')
    if (values.json === true) println(io.stdout, JSON.stringify(result))
    else println(io.stdout, summary(result))
    if (result.failure !== undefined) {
      println(io.stderr, `stablemem import: line ${result.failure.line}: ${result.failure.message}; the ${result.lines} lines before it were imported`)
      return 1
    }
    return 0
  },
}

/** One line of counts. */
function summary(result: ImportResult): string {
  return `imported ${result.lines} lines: ${result.blocksCreated + result.blocksMerged} blocks (${result.blocksCreated} new, ${result.blocksMerged} already present), ` +
    `${result.edgesCreated + result.edgesExisting} edges (${result.edgesCreated} new, ${result.edgesExisting} already present)` +
    (result.blocksForgotten || result.edgesForgotten
      ? `; skipped ${result.blocksForgotten ?? 0} forgotten notes and ${result.edgesForgotten ?? 0} of their edges (--include-forgotten restores them)`
      : '')
}
