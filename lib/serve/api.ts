/**
 * The memory browser's JSON API (`/api/…`): search with the agent's own recall and the exact
 * message the pre-step would inject, pages of notes under filters, a note's page, health, facts,
 * scenes, and the three changes (edit as a superseding note, forget, mark a near-duplicate). Every
 * stored string goes out twice: exact (`text`, for editing) and as display lines with every
 * control, bidi and hidden character made visible (`lines`), which the page puts in text nodes.
 */
import type { Config } from '../config.ts'
import { StableMemError } from '../errors.ts'
import { originLabel } from '../plugin/origin.ts'
import { renderAbstention, renderRecall } from '../plugin/render.ts'
import { abstentionOf } from '../recall/abstain.ts'
import { gateHits } from '../recall/gate.ts'
import { recallBlocksHybrid } from '../recall/hybrid.ts'
import { MAX_TOP_K } from '../recall/recall.ts'
import type { Hit } from '../recall/types.ts'
import type { BrowseFilter } from '../store/browse.ts'
import { checkScopeKey, GLOBAL_SCOPE } from '../store/scope-key.ts'
import { scrubInBackground } from '../store/scrub.ts'
import type { BlockStore } from '../store/store.ts'
import type { Block } from '../store/types.ts'
import { LINE_BREAK } from '../text/invisible.ts'
import { isQuestion } from '../text/question.ts'
import { escapeForDisplay } from '../text/terminal.ts'
import { scenesView } from './scenes.ts'

/** What the API works on. */
export interface ApiContext {
  store: BlockStore
  readOnly: boolean
  /** The plugin configuration whose recall settings (topK, gate, budget) the search reproduces. */
  config: Config
  csrf: string
}

/** A request as a route sees it. */
export interface ApiRequest {
  query: URLSearchParams
  body: unknown
}

type Route = (api: ApiContext, req: ApiRequest) => unknown

/** GET routes: reads. */
export const READS: Readonly<Record<string, Route>> = {
  '/api/session': (api) => ({ csrf: api.csrf, readOnly: api.readOnly, path: api.store.path }),
  '/api/search': search,
  '/api/notes': notes,
  '/api/filters': (api) => ({
    sources: api.store.browse.values('source'), scenes: api.store.browse.values('scene'), scopes: api.store.scopes.counts(),
  }),
  '/api/note': note,
  '/api/health': health,
  '/api/facts': (api) => ({ facts: api.store.browse.facts().map((f) => ({ ...f, lines: display(f.text) })) }),
  '/api/scenes': (api) => scenesView(api.store),
}

/** POST routes: changes (refused as a whole under `--read-only`). */
export const CHANGES: Readonly<Record<string, Route>> = {
  '/api/edit': edit,
  '/api/forget': forget,
  '/api/duplicate': duplicate,
}

/** A note as the page gets it: exact text, display lines, and its layer. */
function shown(store: BlockStore, block: Block) {
  return { ...block, lines: display(block.text), layer: store.layers.layerOf(block.id) ?? 'stable' }
}

/** Display lines of stored text: split at every line break, each line with unsafe characters escaped. */
export function display(text: string): string[] {
  return text.split(LINE_BREAK).map(escapeForDisplay)
}

/**
 * Which scope keys a search covers: every note (`all`), or what a session there sees (global plus
 * that key). A malformed key (a relative or unnormalised path, a bad preset id) is refused naming
 * the field, rather than searched as a scope that holds nothing.
 */
function unionOf(scope: string | null): string[] | undefined {
  if (scope === null || scope === '' || scope === 'all') return undefined
  const key = checkScopeKey(scope, 'scope')
  return key === GLOBAL_SCOPE ? [GLOBAL_SCOPE] : [GLOBAL_SCOPE, key]
}

/**
 * The search: the ranked list (ungated, `k` hits), which of them the per-turn injection would
 * show (the same recall with the config's topK and the relevance gate, as `recall(q, { purpose:
 * 'inject' })`), and the injected message itself, built by the pre-step's own renderer.
 */
async function search(api: ApiContext, req: ApiRequest) {
  const q = req.query.get('q') ?? ''
  const k = integer(req.query.get('k'), 10, 1, MAX_TOP_K, 'k')
  const scopes = unionOf(req.query.get('scope'))
  const { store, config } = api
  const started = process.hrtime.bigint()
  const ranked = await recallBlocksHybrid(store, null, q, { topK: k, recordAccess: false, scopes })
  // What the injection starts from: recall with the config's topK. Lexical recall's best topK are
  // the first topK of a longer list (ranking and arbitration do not depend on the cut; pinned by
  // test/serve/api.test.ts), so a list at least that long is reused instead of recalled again.
  const pool = k >= config.topK && abstentionOf(ranked) === undefined ? ranked.slice(0, config.topK)
    : await recallBlocksHybrid(store, null, q, { topK: config.topK, recordAccess: false, scopes })
  const abstained = abstentionOf(pool)
  let message = ''
  let injected: Hit[] = []
  if (abstained !== undefined) {
    // The pre-step's rule: the notice answers a question, on a store that holds notes.
    message = isQuestion(q) && store.count() > 0 ? renderAbstention(abstained) : ''
  } else {
    injected = gateHits(pool, { minRelevance: config.minRelevance, falloff: config.relevanceFalloff, minScore: config.minScore, topK: MAX_TOP_K })
    const origins = store.layers.firstOrigins(injected.map((h) => h.id))
    const rendered = renderRecall(injected, config.injectBudgetChars, undefined, (id) => originLabel(origins.get(id), undefined))
    message = rendered.text
    injected = injected.slice(0, rendered.shown)
  }
  const shownIds = new Set(injected.map((h) => h.id))
  const hits = ranked.map((hit) => {
    const block = store.get(hit.id)
    return {
      ...hit, lines: display(hit.text), injected: shownIds.has(hit.id),
      scene: block?.scene ?? '', source: block?.source ?? '', layer: store.layers.layerOf(hit.id) ?? 'stable',
    }
  })
  const serverMs = Number(process.hrtime.bigint() - started) / 1e6
  return {
    hits, message, messageLines: message === '' ? [] : message.split('\n'),
    ...(abstained === undefined ? {} : { abstained }),
    gate: { topK: config.topK, minRelevance: config.minRelevance, falloff: config.relevanceFalloff, budgetChars: config.injectBudgetChars },
    serverMs,
  }
}

/** One page of notes under the filters in the query string. */
function notes(api: ApiContext, req: ApiRequest) {
  const q = req.query
  const filter: BrowseFilter = {}
  for (const key of ['scene', 'source', 'scope'] as const) {
    const value = q.get(key)
    if (value !== null && value !== '') filter[key] = key === 'scope' ? checkScopeKey(value, 'scope') : value
  }
  const layer = q.get('layer')
  if (layer === 'stable' || layer === 'cold') filter.layer = layer
  else if (layer !== null && layer !== '') throw new StableMemError('invalid_input', 'layer must be stable or cold')
  const state = q.get('state')
  if (state === 'all' || state === 'current' || state === 'superseded') filter.state = state
  else if (state !== null && state !== '') throw new StableMemError('invalid_input', 'state must be all, current or superseded')
  const since = time(q.get('since'), 'since')
  const until = time(q.get('until'), 'until')
  if (since !== undefined) filter.since = since
  if (until !== undefined) filter.until = until
  const limit = integer(q.get('limit'), 50, 1, 200, 'limit')
  const before = q.get('before')
  const page = api.store.browse.page(filter, limit, before === null || before === '' ? undefined : integer(before, 0, 1, Number.MAX_SAFE_INTEGER, 'before'))
  return { ...page, notes: page.notes.map((n) => ({ ...n, lines: display(n.text) })) }
}

/** A note's page: the block, its scopes, edges, supersede chain, provenance, facts and near-duplicates. */
function note(api: ApiContext, req: ApiRequest) {
  const id = req.query.get('id') ?? ''
  const { store } = api
  const block = store.get(id)
  if (block === undefined) throw new StableMemError('not_found', store.isForgotten(id) ? `${id} was forgotten` : `no note ${id}`)
  const brief = (other: string) => {
    const b = store.get(other)
    return b === undefined ? { id: other, missing: true } : { id: other, lines: display(b.text).slice(0, 3), supersededBy: b.supersededBy }
  }
  const chain = store.browse.chain(id)
  return {
    note: shown(store, block),
    scopes: store.scopes.of(id),
    edges: store.edgesOf('block', id).map((e) => ({ ...e, sourceId: escapeForDisplay(e.sourceId), targetId: escapeForDisplay(e.targetId), type: escapeForDisplay(e.type) })),
    older: chain.older.map(brief),
    newer: chain.newer.map(brief),
    origins: store.browse.origins(id),
    facts: store.browse.factsFrom(id).map(brief),
    duplicates: store.browse.nearDuplicates(id).map(brief),
  }
}

/** What `stats` and `doctor` say about the file, at a glance. */
function health(api: ApiContext) {
  const { store } = api
  const lease = store.layers.lastRun('cooling')
  return {
    ...store.stats(), layers: store.layers.stats(), byScope: store.scopes.counts(),
    perDay: store.browse.perDay(), readOnly: api.readOnly,
    ...(lease === undefined ? {} : { lastCooling: lease }),
  }
}

/**
 * Edits a note: the new text is saved as a new note that supersedes the old one (same source,
 * scene, type and scopes), so the old text stays in the history.
 */
function edit(api: ApiContext, req: ApiRequest) {
  const body = object(req.body)
  const id = string(body.id, 'id')
  const text = string(body.text, 'text')
  const { store } = api
  const old = store.get(id)
  if (old === undefined) throw new StableMemError('not_found', `no note ${id}`)
  if (old.supersededBy !== null) throw new StableMemError('invalid_input', `${id} was already replaced by ${old.supersededBy}: edit the current note`)
  if (text.normalize('NFC').trim() === old.text) throw new StableMemError('invalid_input', 'the text is unchanged')
  const [first, ...others] = store.scopes.of(id)
  return store.transaction(() => {
    const result = store.commit({ text, source: old.source, scene: old.scene, semanticType: old.semanticType, supersedes: id, scope: first ?? GLOBAL_SCOPE })
    for (const scope of others) store.scopes.add([result.id], scope)
    return result
  })
}

/** Forgets notes by id, through the store's forget path (index deletes, WAL checkpoint, tombstones; a large forget's scrub in the background). */
function forget(api: ApiContext, req: ApiRequest) {
  const body = object(req.body)
  if (!Array.isArray(body.ids) || body.ids.length === 0 || body.ids.length > 1000) throw new StableMemError('invalid_input', 'ids must be a list of 1 to 1000 note ids')
  const ids = body.ids.map((id, i) => string(id, `ids[${i}]`))
  const { store } = api
  const result = store.forget(ids, { origin: 'serve', dryRun: body.dryRun === true, withDuplicates: false })
  // A large forget left its bytes to the scrub: this server runs it between requests.
  if (result.bytesPending) {
    scrubInBackground(() => store.isClosed ? undefined : store,
      (error) => process.stderr.write(`stablemem serve: scrubbing the forgotten notes' bytes failed (\`stablemem upkeep\` finishes it): ${error instanceof Error ? error.message : String(error)}\n`))
  }
  return { deleted: result.deleted.map((b) => b.id), unknown: result.unknown, restored: result.restored, dryRun: result.dryRun, walCleared: result.walCleared, bytesPending: result.bytesPending }
}

/** Marks `id` as a near-duplicate of `of` (a `duplicates` edge, as commit's `link` policy records). */
function duplicate(api: ApiContext, req: ApiRequest) {
  const body = object(req.body)
  const id = string(body.id, 'id')
  const of = string(body.of, 'of')
  const { store } = api
  if (id === of) throw new StableMemError('invalid_input', 'a note cannot duplicate itself')
  for (const each of [id, of]) if (store.get(each) === undefined) throw new StableMemError('not_found', `no note ${each}`)
  return store.link({ sourceKind: 'block', sourceId: id, targetKind: 'block', targetId: of, type: 'duplicates' })
}

function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new StableMemError('invalid_input', 'the request body must be a JSON object')
  return body as Record<string, unknown>
}

function string(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw new StableMemError('invalid_input', `${name} must be a non-empty string`)
  return value
}

function integer(value: string | null, fallback: number, min: number, max: number, name: string): number {
  if (value === null || value === '') return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < min || n > max) throw new StableMemError('invalid_input', `${name} must be a whole number from ${min} to ${max}`)
  return n
}

/** A time filter: a date (`2026-11-30`), an ISO time, or ms since the epoch. */
function time(value: string | null, name: string): number | undefined {
  if (value === null || value === '') return undefined
  const n = /^\d+$/.test(value) ? Number(value) : Date.parse(value)
  if (!Number.isSafeInteger(n)) throw new StableMemError('invalid_input', `${name} must be a date (2026-11-30), an ISO time or ms since the epoch`)
  return n
}
