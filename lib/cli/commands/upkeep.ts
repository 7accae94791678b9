/** `stablemem upkeep`: merges the full-text index into one segment, so every query seeks one, and finishes a pending scrub. */
import { println, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'

/** The upkeep command. */
export const command: Command = {
  usage: [
    'Usage: stablemem upkeep [--db <path>] [--json]',
    '',
    'Merges the segments of the full-text index into one: each query seeks every segment, and',
    'a store written by many commits keeps several. It works in short write transactions, so',
    'other processes (a running dsh, another command) wait one slice at most; interrupted, the',
    'next run goes on from where it stopped. The plugin does the same while idle once the index',
    'has 8 segments; `stablemem import` ends with it. `stablemem stats` shows the count. It also',
    'finishes the scrub of a large forget whose bytes are still in the index (`stats`, `doctor`).',
    '',
    '  --json  print {segmentsBefore, segmentsAfter, slices, ms, longestSliceMs} as JSON',
  ].join('\n'),
  options: { json: { type: 'boolean' } },
  positionals: { min: 0, max: 0 },
  async run({ db, dbGiven, values, io }) {
    const result = await withStore(openExisting(db, dbGiven, { write: true }), (store) => store.upkeep())
    if (values.json === true) println(io.stdout, JSON.stringify(result))
    else println(io.stdout, `full-text index of ${db}: ${result.segmentsBefore} → ${result.segmentsAfter} segment${result.segmentsAfter === 1 ? '' : 's'} (${result.slices} slices, ${Math.round(result.ms)} ms)`)
    return 0
  },
}
