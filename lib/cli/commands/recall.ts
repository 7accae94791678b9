/**
 * `stablemem recall`: runs the same recall the plugin injects each turn (same function, same
 * ranking) and shows why each note was found and how relevant it is; with `--inject`, exactly
 * the notes the per-turn injection would show (the relevance gate applied with the default
 * config, or the values given). Read-only: it does not count as an access.
 */
import { resolveConfig } from '../../config.ts'
import { abstentionOf } from '../../recall/abstain.ts'
import { gateHits } from '../../recall/gate.ts'
import { recallBlocksHybrid } from '../../recall/hybrid.ts'
import { MAX_TOP_K } from '../../recall/recall.ts'
import { LINE_BREAK } from '../../text/invisible.ts'
import { escapeForDisplay as show, jsonForDisplay } from '../../text/terminal.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'
import { cliPolicy, recallView } from '../scope-args.ts'

/** The plugin's defaults: what the injection uses unless a composition's config says otherwise. */
const DEFAULTS = resolveConfig()

/** The recall command. */
export const command: Command = {
  usage: [
    'Usage: stablemem recall <query> [--k <n>] [--inject [--min-relevance <x>] [--falloff <x>]] [--workspace <dir>] [--preset <id>] [--all] [--db <path>] [--json]',
    '',
    'Ranks stored notes for a query with the plugin\'s own recall and prints, for each hit,',
    'its score (>= 1 means pinned by an exact symbol such as a port, IP, path or version),',
    'its relevance (the share of what is specific in the query the note holds; the plugin',
    'injects notes only when the best five\'s relevances sum to minRelevance), the exact flag and why it matched. When the query names a number, version or IP that no',
    'note holds, says so (the plugin would inject its "no record" notice) and names stored',
    'strings one typo away. Does not change access counts.',
    '',
    'Searches global notes, plus those of --workspace and --preset when given (what a session',
    'there would see); --all searches every note of every scope.',
    '',
    `  --k <n>              how many hits (default 5, at most ${MAX_TOP_K})`,
    '  --inject             only what the plugin would inject: of the best <n>, the notes the',
    '                       relevance gate lets through (nothing when nothing is relevant)',
    `  --min-relevance <x>  the gate's threshold with --inject (default ${DEFAULTS.minRelevance})`,
    `  --falloff <x>        the adaptive count's share with --inject (default ${DEFAULTS.relevanceFalloff})`,
    '  --workspace <dir>    add this workspace\'s notes',
    '  --preset <id>        add this agent preset\'s notes',
    '  --all                every note, whatever its scope',
    '  --json               {"hits": [{id, text, score, exact, relevance, why}], "abstained"?: {missing, near, mentioned}}',
  ].join('\n'),
  options: { k: { type: 'string' }, json: { type: 'boolean' }, inject: { type: 'boolean' }, 'min-relevance': { type: 'string' }, falloff: { type: 'string' }, workspace: { type: 'string' }, preset: { type: 'string' }, all: { type: 'boolean' } },
  positionals: { min: 1, max: 1 },
  async run({ db, dbGiven, args, values, io }) {
    const k = values.k === undefined ? 5 : Number(values.k)
    if (!Number.isInteger(k) || k < 1 || k > MAX_TOP_K) throw new UsageError(`--k must be a whole number from 1 to ${MAX_TOP_K}`)
    const minRelevance = share(values['min-relevance'], '--min-relevance', DEFAULTS.minRelevance)
    const falloff = share(values.falloff, '--falloff', DEFAULTS.relevanceFalloff)
    if (values.inject !== true && (values['min-relevance'] !== undefined || values.falloff !== undefined)) throw new UsageError('--min-relevance and --falloff go with --inject')
    const scopes = cliPolicy.recallUnion(recallView(values))
    const ranked = await withStore(openExisting(db, dbGiven), (store) => recallBlocksHybrid(store, null, args[0]!, { topK: k, recordAccess: false, scopes }))
    const gated = values.inject === true && abstentionOf(ranked) === undefined
    const hits = gated ? gateHits(ranked, { minRelevance, falloff, minScore: DEFAULTS.minScore, topK: k }) : ranked
    if (values.json === true) {
      // Everything the lines below say: the hits, or that recall abstained and the typo neighbours.
      const abstained = abstentionOf(hits)
      println(io.stdout, jsonForDisplay(abstained === undefined ? { hits } : { hits, abstained }))
      return 0
    }
    if (hits.length === 0) {
      const abstained = abstentionOf(hits)
      if (abstained === undefined) println(io.stdout, gated && ranked.length > 0 ? `nothing relevant enough to inject (${ranked.length} ranked below the gate)` : 'no notes match')
      else {
        // The plugin would inject its "no record" notice here, not unrelated notes.
        println(io.stdout, show(`no record of ${abstained.missing.join(', ')} (recall abstains)`))
        if (abstained.near.length > 0) println(io.stdout, show(`one typo away, the store holds: ${abstained.near.join(', ')}`))
      }
      return 0
    }
    hits.forEach((hit, i) => {
      println(io.stdout, `${i + 1}. ${hit.id}  score ${hit.score.toFixed(4)}  relevance ${hit.relevance.toFixed(3)}${hit.exact ? '  exact' : ''}`)
      println(io.stdout, `   why: ${show(hit.why)}`)
      for (const line of hit.text.split(LINE_BREAK)) println(io.stdout, `   > ${show(line)}`)
    })
    return 0
  },
}

/** A share option (0…1), or its default. */
function share(value: unknown, flag: string, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (typeof value !== 'string' || value.trim() === '' || !(n >= 0 && n <= 1)) throw new UsageError(`${flag} must be a number from 0 to 1`)
  return n
}
