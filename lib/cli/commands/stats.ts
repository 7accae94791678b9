/** `stablemem stats`: what is in the store file, for a quick look or a script (`--json`). */
import { println, type Command } from '../command.ts'
import { describeScope } from '../../store/scope-key.ts'
import { escapeForDisplay as show, jsonForDisplay } from '../../text/terminal.ts'
import { openExisting, withStore } from '../open-store.ts'

/** The stats command. */
export const command: Command = {
  usage: [
    'Usage: stablemem stats [--by-scope] [--db <path>] [--json]',
    '',
    'Blocks, edges, file size, schema version, the time of the last write and the segments of the',
    'full-text index (each query seeks every one; `stablemem upkeep` merges them), and large forgets',
    'whose bytes are not scrubbed yet.',
    '',
    '  --by-scope  notes per scope (global, each workspace, each preset); a note in two scopes counts in both',
    '  --json  one JSON object instead of lines',
  ].join('\n'),
  options: { json: { type: 'boolean' }, 'by-scope': { type: 'boolean' } },
  positionals: { min: 0, max: 0 },
  async run({ db, dbGiven, values, io }) {
    const byScope = values['by-scope'] === true
    const stats = await withStore(openExisting(db, dbGiven), (store) => ({ ...store.stats(), ...(byScope ? { byScope: store.scopes.counts() } : {}), layers: store.layers.stats(), cooling: store.layers.lastRun('cooling') ?? null }))
    if (values.json === true) {
      println(io.stdout, jsonForDisplay(stats))
      return 0
    }
    println(io.stdout, `store:          ${stats.path}`)
    println(io.stdout, `blocks:         ${stats.blocks}`)
    println(io.stdout, `edges:          ${stats.edges}`)
    println(io.stdout, `file size:      ${formatBytes(stats.fileBytes)}`)
    println(io.stdout, `schema version: ${stats.schemaVersion}`)
    println(io.stdout, `last write:     ${stats.lastWriteAt === null ? 'never' : new Date(stats.lastWriteAt).toISOString()}`)
    println(io.stdout, `index segments: ${stats.ftsSegments}`)
    const scrubs = stats.pendingScrubs
    println(io.stdout, `pending scrubs: ${scrubs.forgets === 0 ? 'none' : `${scrubs.forgets} forget(s) of ${scrubs.notes} note(s) since ${new Date(scrubs.since!).toISOString()} still have bytes in the index (\`stablemem upkeep\` finishes)`}`)
    println(io.stdout, `layers:         ${stats.layers.stable} stable, ${stats.layers.cold} cold (${stats.layers.captured} captured at compaction, ${stats.layers.undistilled} waiting for another try)`)
    println(io.stdout, `last cooling:   ${stats.cooling === null ? 'never' : `${new Date(stats.cooling.lastRunAt).toISOString()} ${stats.cooling.result}`}`)
    if (stats.byScope !== undefined) {
      println(io.stdout, 'notes by scope:')
      for (const { scope, notes } of stats.byScope) println(io.stdout, `  ${String(notes).padStart(8)}  ${show(describeScope(scope))}`)
    }
    return 0
  },
}

/** Bytes as a short human figure (B, KiB, MiB, GiB). */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB']
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`
}
