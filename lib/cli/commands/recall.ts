/**
 * `stablemem recall`: runs the same recall the plugin injects each turn (same function, same
 * ranking) and shows why each note was found. Read-only: it does not count as an access.
 */
import { abstentionOf } from '../../recall/abstain.ts'
import { recallBlocksHybrid } from '../../recall/hybrid.ts'
import { MAX_TOP_K } from '../../recall/recall.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'

/** The recall command. */
export const command: Command = {
  usage: [
    'Usage: stablemem recall <query> [--k <n>] [--db <path>] [--json]',
    '',
    'Ranks stored notes for a query with the plugin\'s own recall and prints, for each hit,',
    'its score (>= 1 means pinned by an exact symbol such as a port, IP, path or version),',
    'the exact flag and why it matched. When the query names a number, version or IP that no',
    'note holds, says so (the plugin would inject its "no record" notice) and names stored',
    'strings one typo away. Does not change access counts.',
    '',
    `  --k <n>  how many hits (default 5, at most ${MAX_TOP_K})`,
    '  --json   {"hits": [{id, text, score, exact, why}], "abstained"?: {missing, near, mentioned}}',
  ].join('\n'),
  options: { k: { type: 'string' }, json: { type: 'boolean' } },
  positionals: { min: 1, max: 1 },
  async run({ db, dbGiven, args, values, io }) {
    const k = values.k === undefined ? 5 : Number(values.k)
    if (!Number.isInteger(k) || k < 1 || k > MAX_TOP_K) throw new UsageError(`--k must be a whole number from 1 to ${MAX_TOP_K}`)
    const hits = await withStore(openExisting(db, dbGiven), (store) => recallBlocksHybrid(store, null, args[0]!, { topK: k, recordAccess: false }))
    if (values.json === true) {
      // Everything the lines below say: the hits, or that recall abstained and the typo neighbours.
      const abstained = abstentionOf(hits)
      println(io.stdout, JSON.stringify(abstained === undefined ? { hits } : { hits, abstained }))
      return 0
    }
    if (hits.length === 0) {
      const abstained = abstentionOf(hits)
      if (abstained === undefined) println(io.stdout, 'no notes match')
      else {
        // The plugin would inject its "no record" notice here, not unrelated notes.
        println(io.stdout, `no record of ${abstained.missing.join(', ')} (recall abstains)`)
        if (abstained.near.length > 0) println(io.stdout, `one typo away, the store holds: ${abstained.near.join(', ')}`)
      }
      return 0
    }
    hits.forEach((hit, i) => {
      println(io.stdout, `${i + 1}. ${hit.id}  score ${hit.score.toFixed(4)}${hit.exact ? '  exact' : ''}`)
      println(io.stdout, `   why: ${hit.why}`)
      for (const line of hit.text.split(/\r\n|\r|\n/)) println(io.stdout, `   > ${line}`)
    })
    return 0
  },
}
