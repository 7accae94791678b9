import type pg from 'pg'
import { StableMemError } from '../errors.ts'
import { applySecretsPolicy, type SecretsPolicy } from '../secrets.ts'
import { blockId, isBlockId } from '../store/block-id.ts'
import { checkTag } from '../store/tags.ts'
import { isInvisibleOnly } from '../text/invisible.ts'
import { canonicalText, hasLoneSurrogate } from '../text/normalize.ts'
import { noteTokens, packTokens, termFrequencies } from './terms.ts'

/**
 * Writing to the team layer: the local commit's rules (canonical text, the content id, the
 * secrets policy, size limit, tags) applied before anything is sent, then one transaction per
 * call that inserts the notes and their postings (each distinct term with its frequency), adds
 * their terms to the namespace's document frequencies and its note and token counts (the
 * statistics bm25 reads, `search.ts`), and marks what they supersede.
 * A note already shared is not written again; saying it again makes it current again. Terms are
 * upserted in sorted order, so concurrent writers never deadlock.
 */

/** One note to share. */
export interface SharedNoteInput {
  text: string
  source?: string
  scene?: string
  /** Id of an earlier note (team or local) this one replaces. */
  supersedes?: string
}

/** The writer's settings: whose namespace, who saves, and the local commit's policies. */
export interface ShareOptions {
  namespace: string
  member: string
  secrets: SecretsPolicy
  maxBlockChars: number
  now?: number
}

/** What sharing one note did. */
export interface ShareResult {
  id: string
  created: boolean
  redacted?: string[]
}

interface Checked { id: string, text: string, source: string, scene: string, supersedes: string, redacted: string[] }

function check(input: SharedNoteInput, prefix: string, options: ShareOptions): Checked {
  if (input === null || typeof input !== 'object' || typeof input.text !== 'string') throw new StableMemError('invalid_input', `${prefix}text must be a string`)
  if (hasLoneSurrogate(input.text)) throw new StableMemError('invalid_input', `${prefix}text contains an unpaired UTF-16 surrogate and cannot be stored without loss`)
  const canonical = canonicalText(input.text)
  if (canonical.length === 0) throw new StableMemError('invalid_input', `${prefix}text is empty`)
  if (isInvisibleOnly(canonical)) throw new StableMemError('invalid_input', `${prefix}text has no visible characters`)
  if (canonical.length > options.maxBlockChars) throw new StableMemError('too_large', `${prefix}text has ${canonical.length} characters; the limit is ${options.maxBlockChars} (config maxBlockChars)`)
  const { text, redacted } = applySecretsPolicy(canonical, options.secrets, `${prefix}text`)
  const tag = (value: unknown, field: string) => {
    const checked = checkTag(value ?? '', `${prefix}${field}`, false, options.secrets)
    for (const kind of checked.redacted) if (!redacted.includes(kind)) redacted.push(kind)
    return checked.value
  }
  const supersedes = tag(input.supersedes, 'supersedes')
  if (supersedes !== '' && !isBlockId(supersedes)) throw new StableMemError('invalid_input', `${prefix}supersedes must be a block id (blk_…)`)
  return { id: blockId(text), text, source: tag(input.source, 'source'), scene: tag(input.scene, 'scene'), supersedes, redacted }
}

/** Shares notes in one transaction; every note is checked before anything is written. */
export async function shareNotes(client: pg.ClientBase, notes: readonly SharedNoteInput[], options: ShareOptions): Promise<ShareResult[]> {
  const checked = notes.map((n, i) => check(n, notes.length === 1 ? '' : `notes[${i}].`, options))
  if (checked.length === 0) return []
  const now = options.now ?? Date.now()
  const seen = new Set<string>()
  const unique = checked.filter((c) => !seen.has(c.id) && seen.add(c.id))
  const toks = unique.map((c) => noteTokens(c.text))
  const tfs = toks.map(termFrequencies)
  await client.query('BEGIN')
  try {
    const inserted = await client.query<{ id: string, seq: string }>(`INSERT INTO stablemem.notes (namespace, id, text, toks, doc_len, member, source, scene, created_at, supersedes)
      SELECT $1, u.id, u.text, u.toks, u.len, $2, u.source, u.scene, $3, u.supersedes
      FROM unnest($4::text[], $5::text[], $6::int[], $7::text[], $8::text[], $9::text[], $10::text[]) AS u(id, text, len, source, scene, supersedes, toks)
      ON CONFLICT (namespace, id) DO NOTHING RETURNING id, seq`,
    [options.namespace, options.member, now, unique.map((c) => c.id), unique.map((c) => c.text),
      toks.map((t) => t.latin.length + t.cjk.length), unique.map((c) => c.source), unique.map((c) => c.scene), unique.map((c) => c.supersedes), toks.map(packTokens)])
    const created = new Map(inserted.rows.map((r) => [r.id, r.seq]))
    const df = new Map<string, number>()
    const postings = { term: [] as string[], seq: [] as string[], tf: [] as number[], len: [] as number[] }
    let tokenTotal = 0
    unique.forEach((c, i) => {
      const seq = created.get(c.id)
      if (seq === undefined) return
      const length = toks[i]!.latin.length + toks[i]!.cjk.length
      tokenTotal += length
      for (const [term, tf] of tfs[i]!) {
        df.set(term, (df.get(term) ?? 0) + 1)
        postings.term.push(term)
        postings.seq.push(seq)
        postings.tf.push(tf)
        postings.len.push(length)
      }
    })
    if (created.size > 0) {
      await client.query(`INSERT INTO stablemem.postings (namespace, term, seq, tf, doc_len) SELECT $1, u.* FROM unnest($2::text[], $3::bigint[], $4::int[], $5::int[]) AS u`,
        [options.namespace, postings.term, postings.seq, postings.tf, postings.len])
      const sorted = [...df.keys()].sort()
      await client.query(`INSERT INTO stablemem.terms (namespace, term, df) SELECT $1, t, n FROM unnest($2::text[], $3::int[]) AS u(t, n)
        ON CONFLICT (namespace, term) DO UPDATE SET df = stablemem.terms.df + excluded.df`, [options.namespace, sorted, sorted.map((t) => df.get(t)!)])
      await client.query(`INSERT INTO stablemem.stats (namespace, notes, tokens) VALUES ($1, $2, $3)
        ON CONFLICT (namespace) DO UPDATE SET notes = stablemem.stats.notes + excluded.notes, tokens = stablemem.stats.tokens + excluded.tokens`,
      [options.namespace, created.size, tokenTotal])
    }
    const again = unique.filter((c) => !created.has(c.id)).map((c) => c.id)
    // Saying a replaced text again makes it current again: the later commit wins.
    if (again.length > 0) await client.query('UPDATE stablemem.notes SET superseded_by = NULL WHERE namespace = $1 AND id = ANY($2::text[])', [options.namespace, again])
    for (const c of unique) {
      if (c.supersedes === '' || c.supersedes === c.id) continue
      await client.query('UPDATE stablemem.notes SET superseded_by = $3 WHERE namespace = $1 AND id = $2', [options.namespace, c.supersedes, c.id])
    }
    await client.query('COMMIT')
    return checked.map((c) => ({ id: c.id, created: created.has(c.id) && seen.delete(c.id), ...(c.redacted.length > 0 ? { redacted: c.redacted } : {}) }))
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    throw error
  }
}
