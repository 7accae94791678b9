import type pg from 'pg'
import { parseTarget } from '../store/forget-target.ts'
import type { ForgetTarget } from '../store/forget-types.ts'
import { normalizeSceneKey } from '../store/scene-key.ts'
import { termFrequencies, unpackTokens } from './terms.ts'

/**
 * Forgetting team notes, by id or by the local forget's filters (`{ scene }`, `{ source }`,
 * `{ before }`, `{ all: true }`, checked by the same `parseTarget`), always inside the caller's
 * namespace — named in every statement and enforced again by row-level security, so a filter
 * can never reach another team's rows. One transaction deletes the notes and their postings,
 * takes their terms out of the document frequencies and the namespace's counts, and makes the
 * notes they had superseded current again. The selected rows are locked first, so a concurrent
 * share of a matching note either lands before (and is forgotten) or after (and stays).
 */

/** A team note as a forget reports it. */
export interface SharedNote {
  id: string
  text: string
  member: string
  source: string
  scene: string
  createdAt: number
}

/** What one team forget did (or, with `dryRun`, would do). */
export interface SharedForgetResult {
  /** The notes deleted, oldest first. */
  deleted: SharedNote[]
  /** Ids asked for that the namespace does not hold. */
  unknown: string[]
  /** Team notes a forgotten note had superseded, current again. */
  restored: string[]
  dryRun: boolean
}

interface Row { seq: string, id: string, text: string, toks: string, member: string, source: string, scene: string, created_at: string }

/** The WHERE clause (after the namespace, `$1`) and its parameters for a checked target. */
function selectionSql(target: ForgetTarget): { where: string, params: unknown[], ids: string[] } {
  const selection = parseTarget(target)
  if (selection.kind === 'ids') return { where: 'AND id = ANY($2::text[])', params: [selection.ids], ids: selection.ids }
  const clauses: string[] = []
  const params: unknown[] = []
  const filter = selection.filter
  if (filter.scene !== undefined) {
    // Team notes keep the scene as it was shared: the normal key or the spelling given.
    params.push([...new Set([normalizeSceneKey(filter.scene), filter.scene])].filter((s) => s !== ''))
    clauses.push(`AND scene = ANY($${params.length + 1}::text[])`)
  }
  if (filter.source !== undefined) {
    params.push(filter.source)
    clauses.push(`AND source = $${params.length + 1}`)
  }
  if (filter.before !== undefined) {
    params.push(filter.before)
    clauses.push(`AND created_at < $${params.length + 1}`)
  }
  return { where: clauses.join(' '), params, ids: [] }
}

/**
 * Deletes the target's team notes in `namespace` (see the module comment); refuses an empty
 * filter or a malformed target before anything is sent.
 */
export async function forgetShared(client: pg.ClientBase, namespace: string, target: ForgetTarget, options: { dryRun?: boolean } = {}): Promise<SharedForgetResult> {
  const { where, params, ids } = selectionSql(target)
  const dryRun = options.dryRun ?? false
  await client.query('BEGIN')
  try {
    const { rows } = await client.query<Row>(`SELECT seq, id, text, toks, member, source, scene, created_at FROM stablemem.notes
      WHERE namespace = $1 ${where} ORDER BY seq FOR UPDATE`, [namespace, ...params])
    const gone = rows.map((r) => r.id)
    const restored = (await client.query<{ id: string }>(`SELECT id FROM stablemem.notes WHERE namespace = $1 AND superseded_by = ANY($2::text[])
      AND NOT id = ANY($2::text[]) ORDER BY seq`, [namespace, gone])).rows.map((r) => r.id)
    if (!dryRun && rows.length > 0) {
      const df = new Map<string, number>()
      const postings = { term: [] as string[], seq: [] as string[] }
      let tokenTotal = 0
      for (const r of rows) {
        const t = unpackTokens(r.toks)
        tokenTotal += t.latin.length + t.cjk.length
        for (const term of termFrequencies(t).keys()) {
          df.set(term, (df.get(term) ?? 0) + 1)
          postings.term.push(term)
          postings.seq.push(r.seq)
        }
      }
      const sorted = [...df.keys()].sort()
      await client.query('DELETE FROM stablemem.notes WHERE namespace = $1 AND seq = ANY($2::bigint[])', [namespace, rows.map((r) => r.seq)])
      await client.query(`DELETE FROM stablemem.postings p USING unnest($2::text[], $3::bigint[]) AS u(term, seq)
        WHERE p.namespace = $1 AND p.term = u.term AND p.seq = u.seq`, [namespace, postings.term, postings.seq])
      await client.query(`UPDATE stablemem.terms AS t SET df = t.df - u.n FROM unnest($2::text[], $3::int[]) AS u(term, n)
        WHERE t.namespace = $1 AND t.term = u.term`, [namespace, sorted, sorted.map((k) => df.get(k)!)])
      await client.query('DELETE FROM stablemem.terms WHERE namespace = $1 AND term = ANY($2::text[]) AND df <= 0', [namespace, sorted])
      await client.query('UPDATE stablemem.stats SET notes = notes - $2, tokens = tokens - $3 WHERE namespace = $1', [namespace, rows.length, tokenTotal])
      await client.query('UPDATE stablemem.notes SET superseded_by = NULL WHERE namespace = $1 AND superseded_by = ANY($2::text[])', [namespace, gone])
    }
    await client.query(dryRun ? 'ROLLBACK' : 'COMMIT')
    const found = new Set(gone)
    return {
      deleted: rows.map((r) => ({ id: r.id, text: r.text, member: r.member, source: r.source, scene: r.scene, createdAt: Number(r.created_at) })),
      unknown: ids.filter((id) => !found.has(id)), restored, dryRun,
    }
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    throw error
  }
}
