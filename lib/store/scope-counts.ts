import type { StatementSync } from 'node:sqlite'

/**
 * Notes per scope, kept without a trigger on the commit path (docs/benchmarks.md, "Scale: the
 * query side at a million notes"). Like the block count, `scope_counts.n` counts the memberships
 * of blocks up to the rowid `scope_count_mark.mark`, and a scope's count is that number plus its
 * memberships above the mark: exact whichever code path inserts a new block's membership, because
 * a new block gets the largest rowid plus one. What the mark cannot see is handled where it happens:
 * - a membership added to an existing block (a repeated text saved in another scope, `scope add`,
 *   `scope set`) is counted by `ScopeTable.join`, the only code that adds one;
 * - every membership deleted (a scope move, a forget, SQLite's cascade) is counted by the delete
 *   trigger below, which also lowers the mark when the largest block goes, so a freed rowid given
 *   out again is above it;
 * - commit and import fold the memberships above the mark into the numbers (`foldScopeCounts`), so the
 *   part counted live stays one batch.
 * Scoped recall reads it to skip the per-row membership test when one scope of the union holds
 * every note.
 */

/** The migration's delete trigger (one statement per deleted membership; the mark moves only when the largest goes). */
export const SCOPE_COUNT_DELETE_TRIGGER = `CREATE TRIGGER scope_count_delete AFTER DELETE ON memberships BEGIN
    UPDATE scope_counts SET n = n - 1 WHERE scope = old.scope AND old.block_rowid <= (SELECT mark FROM scope_count_mark);
    UPDATE scope_count_mark SET mark = min(mark, coalesce((SELECT max(block_rowid) FROM memberships), 0)) WHERE old.block_rowid >= mark;
  END`

/** What the counts read and write through (the owning store's cached statements). */
export interface ScopeCountDeps {
  stmt(key: string, sql: string): StatementSync
}

/** How many notes `scope` holds: the folded number plus its memberships above the mark. */
export function scopeCount(deps: ScopeCountDeps, scope: string): number {
  const row = deps.stmt('scopeCount', `SELECT coalesce((SELECT n FROM scope_counts WHERE scope = ?1), 0)
    + (SELECT count(*) FROM memberships WHERE block_rowid > (SELECT mark FROM scope_count_mark) AND scope = ?1) AS n`).get(scope) as { n: number }
  return Number(row.n)
}

/** Notes per scope, every scope that holds one, most first (ties by key): `ScopeTable.counts`. */
export function allScopeCounts(deps: ScopeCountDeps): Array<{ scope: string, notes: number }> {
  const rows = deps.stmt('scopeCountsAll', `SELECT scope, sum(n) AS n FROM (
      SELECT scope, n FROM scope_counts
      UNION ALL SELECT scope, count(*) FROM memberships WHERE block_rowid > (SELECT mark FROM scope_count_mark) GROUP BY scope)
    GROUP BY scope HAVING sum(n) > 0 ORDER BY n DESC, scope`).all()
  return rows.map((r) => ({ scope: String(r.scope), notes: Number(r.n) }))
}

/** Counts a membership just added to the block `id`, when the mark already covers its rowid (inside the writer's transaction). */
export function countJoined(deps: ScopeCountDeps, scope: string, id: string): void {
  deps.stmt('scopeCountJoined', `INSERT INTO scope_counts (scope, n) SELECT ?1, 1 FROM scope_count_mark
    WHERE (SELECT rowid FROM blocks WHERE id = ?2) <= mark
    ON CONFLICT(scope) DO UPDATE SET n = n + 1`).run(scope, id)
}

/** Folds the memberships above the mark into the numbers and moves the mark (inside the writer's transaction). */
export function foldScopeCounts(deps: ScopeCountDeps): void {
  deps.stmt('scopeCountFold', `INSERT INTO scope_counts (scope, n)
    SELECT scope, count(*) FROM memberships WHERE block_rowid > (SELECT mark FROM scope_count_mark) GROUP BY scope
    ON CONFLICT(scope) DO UPDATE SET n = n + excluded.n`).run()
  deps.stmt('scopeCountMark', 'UPDATE scope_count_mark SET mark = max(mark, coalesce((SELECT max(block_rowid) FROM memberships), 0))').run()
}
