/**
 * `stablemem export`: the whole store as JSON Lines (lossless; `import` restores it) or as
 * Markdown for people. A file is written under a temporary name and renamed when complete, so
 * an interrupted export never leaves a truncated file that looks whole.
 */
import { createWriteStream, renameSync, rmSync } from 'node:fs'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { exportJsonl, exportMarkdown, type ExportCounts } from '../../store/transfer.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'

/** Signals that end an export early; the partial file is removed before the process ends. */
const INTERRUPTS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']

/** The export command. */
export const command: Command = {
  usage: [
    'Usage: stablemem export [--format jsonl|md] [--out <file>] [--db <path>]',
    '',
    'Writes every block and edge. jsonl (default) keeps ids, text, tags, times, access counts and',
    'edges exactly, for `stablemem import`; md is a readable view that cannot be imported.',
    '',
    '  --format <f>  jsonl (default) or md',
    '  --out <file>  write to this file instead of standard output',
  ].join('\n'),
  options: { format: { type: 'string' }, out: { type: 'string' } },
  positionals: { min: 0, max: 0 },
  async run({ db, dbGiven, values, io }) {
    const format = values.format ?? 'jsonl'
    if (format !== 'jsonl' && format !== 'md') throw new UsageError(`--format must be jsonl or md, not "${String(format)}"`)
    const out = typeof values.out === 'string' ? values.out : undefined
    const counts: ExportCounts = { blocks: 0, edges: 0 }
    await withStore(openExisting(db, dbGiven), async (store) => {
      const lines = format === 'jsonl' ? exportJsonl(store, counts) : exportMarkdown(store, counts)
      const source = Readable.from((function * () { for (const line of lines) yield `${line}\n` })())
      if (out === undefined) {
        await pipeline(source, io.stdout, { end: false })
        return
      }
      const partial = `${out}.partial-${process.pid}`
      // Ctrl-C, a closed terminal or `kill` must not leave the partial file behind either.
      const interrupted = (signal: NodeJS.Signals) => {
        rmSync(partial, { force: true })
        process.kill(process.pid, signal)
      }
      for (const signal of INTERRUPTS) process.once(signal, interrupted)
      try {
        await pipeline(source, createWriteStream(partial))
        renameSync(partial, out)
      } catch (error) {
        rmSync(partial, { force: true })
        throw error
      } finally {
        for (const signal of INTERRUPTS) process.removeListener(signal, interrupted)
      }
    })
    const origins = counts.origins ? `, with ${counts.origins} origins of captured turns,` : ''
    if (out !== undefined) println(io.stderr, `exported ${counts.blocks} blocks and ${counts.edges} edges${origins} to ${out}`)
    return 0
  },
}
