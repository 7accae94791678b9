import { existsSync, readFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'

/**
 * Reads a retrieval set in the JSONL format of `../shared/eval/README.md`: `corpus.jsonl`
 * (`{id, text, session, time?, scope?}`) and `queries.jsonl` (`{qid, query, gold, category?, scope?}`).
 * Anything it cannot use is reported as one `EvalSetError` naming the file, line and field.
 */

/** One corpus block. */
export interface EvalBlock {
  id: string
  text: string
  time: string
  scope: string
  session: string
}

/** One query with its gold block ids. */
export interface EvalQuery {
  qid: string
  query: string
  gold: string[]
  category: string
  scope: string
  /** The earlier messages of the live conversation this query is the last message of (`live.ts`); none in a set's file. */
  earlier?: string[]
}

/** A whole set, validated. */
export interface EvalSet {
  name: string
  blocks: EvalBlock[]
  queries: EvalQuery[]
  /** Distinct scopes of the corpus, in first-seen order ('' when blocks carry none). */
  scopes: string[]
}

/** The one error a set that cannot be read produces; its message is the line the CLI prints. */
export class EvalSetError extends Error {}

/**
 * The folder of the eval sets (`shared/eval`): `given` (a benchmark's flag, `flag` its name) when
 * set, else the first `shared/eval` found beside this checkout or one of its parent folders, then
 * beside the working folder or one of its parents, so a benchmark finds them from the main
 * checkout, a worktree in a folder beside it (`wt/x` finds the `shared/eval` two levels up) and any
 * folder inside them.
 * Throws an `EvalSetError` naming where it looked and the flag to pass otherwise. `starts`: where
 * the search begins (tests give others).
 */
export function evalRoot(given: string | undefined, flag: string, starts = [resolve(import.meta.dirname, '..', '..'), process.cwd()]): string {
  if (given !== undefined) {
    if (!existsSync(given)) throw new EvalSetError(`${flag} ${given}: no such folder`)
    return resolve(given)
  }
  for (const start of starts) {
    for (let dir = start; ; dir = dirname(dir)) {
      const candidate = join(dir, 'shared', 'eval')
      if (existsSync(candidate)) return candidate
      if (dirname(dir) === dir) break
    }
  }
  throw new EvalSetError(`the eval sets (shared/eval) are beside neither this checkout nor the working folder, nor any folder above them (${starts.join(', ')}); pass ${flag} <dir>`)
}

/** Loads and validates the set in `dir`. */
export function readEvalSet(dir: string): EvalSet {
  const root = resolve(dir)
  const blocks = readJsonl(join(root, 'corpus.jsonl'), (row, where) => ({
    id: str(row.id, 'id', where, true),
    text: str(row.text, 'text', where, true),
    time: str(row.time ?? '', 'time', where, false),
    scope: str(row.scope ?? '', 'scope', where, false),
    session: str(row.session ?? '', 'session', where, false),
  }))
  const ids = new Set<string>()
  for (const b of blocks) {
    if (ids.has(b.id)) throw new EvalSetError(`${join(root, 'corpus.jsonl')}: duplicate block id ${JSON.stringify(b.id)}`)
    ids.add(b.id)
  }
  const queries = readJsonl(join(root, 'queries.jsonl'), (row, where) => {
    if (!Array.isArray(row.gold) || row.gold.length === 0 || !row.gold.every((g) => typeof g === 'string')) {
      throw new EvalSetError(`${where}: "gold" must be a non-empty array of block ids`)
    }
    return {
      qid: str(row.qid, 'qid', where, true),
      query: str(row.query, 'query', where, false),
      gold: row.gold as string[],
      category: str(row.category ?? '', 'category', where, false) || '(none)',
      scope: str(row.scope ?? '', 'scope', where, false),
    }
  })
  if (blocks.length === 0) throw new EvalSetError(`${join(root, 'corpus.jsonl')}: no blocks`)
  if (queries.length === 0) throw new EvalSetError(`${join(root, 'queries.jsonl')}: no queries`)
  const scopes = [...new Set(blocks.map((b) => b.scope))]
  return { name: basename(root), blocks, queries, scopes }
}

function readJsonl<T>(file: string, parse: (row: Record<string, unknown>, where: string) => T): T[] {
  let content: string
  try {
    content = readFileSync(file, 'utf8')
  } catch (error) {
    throw new EvalSetError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
  }
  const out: T[] = []
  const lines = content.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === '') continue
    const where = `${file}:${i + 1}`
    let row: unknown
    try {
      row = JSON.parse(line)
    } catch {
      throw new EvalSetError(`${where}: not a JSON object`)
    }
    if (row === null || typeof row !== 'object' || Array.isArray(row)) throw new EvalSetError(`${where}: not a JSON object`)
    out.push(parse(row as Record<string, unknown>, where))
  }
  return out
}

function str(value: unknown, field: string, where: string, required: boolean): string {
  if (typeof value !== 'string') throw new EvalSetError(`${where}: "${field}" must be a string`)
  if (required && value.trim() === '') throw new EvalSetError(`${where}: "${field}" is empty`)
  return value
}
