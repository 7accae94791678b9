import type { DatabaseSync } from 'node:sqlite'
import { StableMemError } from '../errors.ts'
import { indexColumns } from './fts-columns.ts'
import { SCOPE_COUNT_DELETE_TRIGGER } from './scope-counts.ts'
import { migrateSceneColumn } from './scene-migration.ts'

/**
 * The block count's delete trigger, as the rowid-mark migration in `MIGRATIONS` creates it. A large
 * forget detaches it and moves the count once (lib/store/forget.ts), and checks it against this.
 */
export const BLOCK_COUNT_DELETE_TRIGGER = `CREATE TRIGGER block_count_delete_marked AFTER DELETE ON blocks BEGIN
    UPDATE block_count SET n = n - (old.rowid <= mark), mark = min(mark, coalesce((SELECT max(rowid) FROM blocks), 0));
  END`

/**
 * Forward-only schema migrations, tracked in `PRAGMA user_version`. Each entry moves the file
 * from version `index` to `index + 1` inside one transaction; released entries never change,
 * new ones are appended. A file newer than this code is refused, never downgraded.
 */
export const MIGRATIONS: readonly string[] = [
  // v1: blocks, edges, the (empty) centroid table and the FTS index.
  `
  CREATE TABLE blocks (
    rowid          INTEGER PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE,
    text           TEXT    NOT NULL,
    source         TEXT    NOT NULL DEFAULT '',
    scene          TEXT    NOT NULL DEFAULT '',
    semantic_type  TEXT    NOT NULL DEFAULT '',
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    access_count   INTEGER NOT NULL DEFAULT 0,
    last_access_at INTEGER
  );
  CREATE INDEX blocks_scene ON blocks(scene) WHERE scene <> '';
  CREATE TABLE edges (
    id          INTEGER PRIMARY KEY,
    source_kind TEXT    NOT NULL,
    source_id   TEXT    NOT NULL,
    target_kind TEXT    NOT NULL,
    target_id   TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    UNIQUE (source_kind, source_id, target_kind, target_id, type)
  );
  CREATE INDEX edges_target ON edges(target_kind, target_id);
  CREATE TABLE centroids (
    model        TEXT    NOT NULL,
    dims         INTEGER NOT NULL,
    vector       BLOB    NOT NULL,
    sample_count INTEGER NOT NULL,
    built_at     INTEGER NOT NULL,
    PRIMARY KEY (model, dims)
  );
  CREATE VIRTUAL TABLE blocks_fts USING fts5(
    latin, cjk,
    content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
  );
  `,
  // v2: supersede. A block replaced by a newer one keeps its row (still reachable by id) and names
  // its successor here, so recall can skip it without reading edges; the edge records the history.
  `
  ALTER TABLE blocks ADD COLUMN superseded_by TEXT;
  CREATE INDEX blocks_superseded ON blocks(superseded_by) WHERE superseded_by IS NOT NULL;
  `,
  // v3: block vectors, one per (model, dims, block), as little-endian float32 blobs.
  // `seq` orders writes so an in-memory index can load only what is new.
  `
  CREATE TABLE vectors (
    seq        INTEGER PRIMARY KEY,
    block_id   TEXT    NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
    model      TEXT    NOT NULL,
    dims       INTEGER NOT NULL,
    lang       TEXT    NOT NULL,
    vector     BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (model, dims, block_id)
  );
  CREATE INDEX vectors_space_seq ON vectors(model, dims, seq);
  `,
  // v4: forget and near-duplicates. `tombstones` lists the content addresses `forget` hard-deleted
  // (never their text) and who asked, so an import of an older export does not bring them back.
  // `near_key` is the note's near-duplicate key (lib/text/near-key.ts), filled by the store for
  // rows that have none yet; the partial index finds those rows without a scan. `vectors_block`
  // serves the ON DELETE CASCADE of vectors, which otherwise scans every vector per deleted note.
  `
  CREATE TABLE tombstones (
    id           TEXT    PRIMARY KEY,
    forgotten_at INTEGER NOT NULL,
    origin       TEXT    NOT NULL DEFAULT ''
  ) WITHOUT ROWID;
  ALTER TABLE blocks ADD COLUMN near_key TEXT;
  CREATE INDEX blocks_near_key ON blocks(near_key) WHERE near_key IS NOT NULL;
  CREATE INDEX blocks_unkeyed ON blocks(id) WHERE near_key IS NULL;
  CREATE INDEX vectors_block ON vectors(block_id);
  `,
  // v5: scopes. A block belongs to one or more scopes ('global', 'workspace:<dir>', 'preset:<id>',
  // see lib/store/scopes.ts); scope is membership, never part of the content id. Every block that
  // exists when the file is upgraded becomes global, so recall is unchanged until notes are moved.
  `
  CREATE TABLE memberships (
    block_rowid INTEGER NOT NULL REFERENCES blocks(rowid) ON DELETE CASCADE,
    scope       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (block_rowid, scope)
  ) WITHOUT ROWID;
  INSERT INTO memberships (block_rowid, scope, created_at) SELECT rowid, 'global', created_at FROM blocks;
  `,
  // Layers (docs/layers.md): every block has one holder layer, `stable` (notes, facts) or `cold`
  // (turns captured when compaction took them out of the context window), and a cooling state.
  // `block_origins` says where a captured block came from (session, event seq, original time,
  // role); `kernel_runs` logs background jobs and holds the lease that keeps two processes from
  // running the same job at once.
  `
  ALTER TABLE blocks ADD COLUMN layer TEXT NOT NULL DEFAULT 'stable';
  ALTER TABLE blocks ADD COLUMN cool_state TEXT NOT NULL DEFAULT '';
  ALTER TABLE blocks ADD COLUMN cool_attempts INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE blocks ADD COLUMN cool_next_at INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX blocks_cold_idle ON blocks(coalesce(last_access_at, created_at)) WHERE layer = 'cold';
  CREATE TABLE block_origins (
    block_id      TEXT    NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
    session_id    TEXT    NOT NULL,
    seq           INTEGER NOT NULL,
    event_type    TEXT    NOT NULL,
    role          TEXT    NOT NULL,
    event_time    INTEGER NOT NULL,
    compaction_id TEXT    NOT NULL DEFAULT '',
    captured_at   INTEGER NOT NULL,
    PRIMARY KEY (block_id, session_id, seq)
  ) WITHOUT ROWID;
  CREATE INDEX block_origins_session ON block_origins(session_id, seq);
  CREATE TABLE kernel_runs (
    name        TEXT    PRIMARY KEY,
    last_run_at INTEGER NOT NULL DEFAULT 0,
    result      TEXT    NOT NULL DEFAULT '',
    holder      TEXT    NOT NULL DEFAULT '',
    lease_until INTEGER NOT NULL DEFAULT 0
  );
  `,
  // Scale (docs/benchmarks.md): the number of blocks, kept by triggers, so the count the context
  // line shows on every step is one row read instead of a walk of a whole index (123 ms at a
  // million blocks). Every insert and delete of a block row, by any code path, moves it.
  `
  CREATE TABLE block_count (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    n   INTEGER NOT NULL
  );
  INSERT INTO block_count (one, n) SELECT 1, count(*) FROM blocks;
  CREATE TRIGGER block_count_insert AFTER INSERT ON blocks BEGIN UPDATE block_count SET n = n + 1; END;
  CREATE TRIGGER block_count_delete AFTER DELETE ON blocks BEGIN UPDATE block_count SET n = n - 1; END;
  `,
  // Access-count halving (docs/layers.md): the cold blocks recalled at least once, in rowid order,
  // so one bounded step of a cooling period's halving pass reads only the blocks it halves.
  `
  CREATE INDEX blocks_cold_accessed ON blocks(rowid) WHERE layer = 'cold' AND access_count > 0;
  `,
  // Forget without rewriting the index (docs/reliability.md): the v1 index was contentless with
  // `contentless_delete`, whose delete only marks the row, so a forgotten note's terms stayed in
  // the index pages until the whole index was rewritten. It becomes a plain contentless table with
  // FTS5's persistent `secure-delete` option: a delete names the row's indexed text and FTS5
  // removes every one of its entries from the pages themselves. The index is rebuilt from the
  // blocks' text with the functions `migrate` registers (the same columns commit writes), then
  // merged into one segment.
  `
  DROP TABLE blocks_fts;
  CREATE VIRTUAL TABLE blocks_fts USING fts5(
    latin, cjk,
    content = '',
    tokenize = 'porter unicode61 remove_diacritics 2'
  );
  INSERT INTO blocks_fts (blocks_fts, rank) VALUES ('secure-delete', 1);
  INSERT INTO blocks_fts (rowid, latin, cjk) SELECT rowid, stablemem_fts_latin(text), stablemem_fts_cjk(text) FROM blocks;
  INSERT INTO blocks_fts (blocks_fts) VALUES ('optimize');
  `,
  // Scenes (docs/scenes.md): declared and emergent scenes, the features of emergent ones, the
  // evidence of fingerprints seen once, and the refs attaching notes to scenes (weights decay).
  // A ref goes with its note (ON DELETE CASCADE), so forgetting a note forgets its scene refs.
  // The data step normalises every stored `scene` value and declares its scene (`DATA_STEPS`).
  `
  -- data-step: scenes
  CREATE TABLE scenes (
    id         INTEGER PRIMARY KEY,
    key        TEXT    NOT NULL UNIQUE,
    origin     TEXT    NOT NULL CHECK (origin IN ('declared', 'emergent')),
    strength   INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE TABLE scene_features (
    scene_id INTEGER NOT NULL REFERENCES scenes(id) ON DELETE CASCADE,
    feature  TEXT    NOT NULL,
    weight   REAL    NOT NULL,
    PRIMARY KEY (scene_id, feature)
  ) WITHOUT ROWID;
  CREATE TABLE situation_evidence (
    label      TEXT    PRIMARY KEY,
    count      INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE scene_refs (
    scene_id   INTEGER NOT NULL REFERENCES scenes(id) ON DELETE CASCADE,
    block_id   TEXT    NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
    weight     REAL    NOT NULL,
    decayed_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (scene_id, block_id)
  ) WITHOUT ROWID;
  CREATE INDEX scene_refs_block ON scene_refs(block_id);
  `,
  // A scene's refs in the order a turn reads them, heaviest first, then the most recently
  // attached (docs/scenes.md, "Cost per turn"): the read walks this index and stops after the few
  // notes it shows, instead of reading and sorting every ref of the scene.
  `
  CREATE INDEX scene_refs_rank ON scene_refs(scene_id, weight DESC, created_at DESC, block_id);
  `,
  // Writes at the raw floor (docs/benchmarks.md, "Writes"): the block count without an insert
  // trigger. A row trigger gives every block insert a statement journal and savepoint of its own
  // (and FTS5 flushes its pending terms at each savepoint). Now `n` counts the blocks up to rowid
  // `mark`, and the count is `n` plus the blocks above `mark`: exact whichever code path inserts,
  // since SQLite gives a new row the largest rowid plus one. Commit and import fold the blocks
  // above `mark` into `n` in the same transaction, so the part counted live stays one batch. A
  // delete lowers `mark` to the largest remaining rowid, so a freed rowid given out again is above it.
  `
  ALTER TABLE block_count ADD COLUMN mark INTEGER NOT NULL DEFAULT 0;
  UPDATE block_count SET mark = coalesce((SELECT max(rowid) FROM blocks), 0);
  DROP TRIGGER block_count_insert;
  DROP TRIGGER block_count_delete;
  ${BLOCK_COUNT_DELETE_TRIGGER};
  `,
  // Notes per scope (lib/store/scope-counts.ts), kept like the block count: a number up to a rowid
  // mark plus the memberships above it, moved by a delete trigger and by the code that adds a
  // membership to an existing block. Scoped recall reads them to skip the per-row membership test
  // when one scope of the union holds every note (docs/benchmarks.md, "Scale").
  `
  CREATE TABLE scope_counts (
    scope TEXT    PRIMARY KEY,
    n     INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE scope_count_mark (
    one  INTEGER PRIMARY KEY CHECK (one = 1),
    mark INTEGER NOT NULL
  );
  INSERT INTO scope_counts (scope, n) SELECT scope, count(*) FROM memberships GROUP BY scope;
  INSERT INTO scope_count_mark (one, mark) SELECT 1, coalesce((SELECT max(block_rowid) FROM memberships), 0);
  ${SCOPE_COUNT_DELETE_TRIGGER};
  `,
  // Forgets whose index bytes wait for the scrub (lib/store/scrub.ts): the notes are gone from
  // every read at the forget's commit; a row here says the old index segments still hold them.
  `
  CREATE TABLE scrub_pending (
    id         INTEGER PRIMARY KEY,
    created_at INTEGER NOT NULL,
    notes      INTEGER NOT NULL,
    origin     TEXT    NOT NULL DEFAULT ''
  );
  `,
]

/**
 * Data steps: JavaScript run right after the SQL of the migration that names it in a
 * `-- data-step: <name>` line, in the same transaction. Keyed by name rather than position, so
 * migrations of parallel branches can be reordered without moving their data steps.
 */
const DATA_STEPS: Readonly<Record<string, (db: DatabaseSync) => void>> = {
  scenes: (db) => migrateSceneColumn(db),
}

/** The schema version this code writes and reads. */
export const SCHEMA_VERSION = MIGRATIONS.length

/** Reads `PRAGMA user_version`. */
export function schemaVersion(db: DatabaseSync): number {
  const row = db.prepare('PRAGMA user_version').get() as { user_version: number }
  return Number(row.user_version)
}

/**
 * Returns the file's schema version, or throws `newer_schema` when a newer release wrote it.
 * The store calls it before any statement that writes (even `journal_mode`), so a refused file
 * is left byte-identical.
 */
export function refuseNewerSchema(db: DatabaseSync): number {
  const current = schemaVersion(db)
  if (current > SCHEMA_VERSION) {
    throw new StableMemError('newer_schema',
      `store schema version ${current} is newer than this dsh-stablemem supports (${SCHEMA_VERSION}); upgrade the package`)
  }
  return current
}

/**
 * Brings the file up to `target` (default: the newest version), one transaction per step.
 * Refuses a file from a newer release so that an older install never damages it.
 */
export function migrate(db: DatabaseSync, target: number = SCHEMA_VERSION): void {
  const current = refuseNewerSchema(db)
  if (current < target) registerIndexFunctions(db)
  for (let v = current; v < target; v++) {
    db.exec('BEGIN IMMEDIATE')
    try {
      // Another process opening the same new file may have run this step while we waited for the lock.
      if (schemaVersion(db) > v) {
        db.exec('COMMIT')
        continue
      }
      db.exec(MIGRATIONS[v]!)
      for (const [, step] of MIGRATIONS[v]!.matchAll(/^\s*-- data-step: ([a-z-]+)$/gm)) DATA_STEPS[step!]!(db)
      db.exec(`PRAGMA user_version = ${v + 1}`)
      db.exec('COMMIT')
    } catch (error) {
      db.exec('ROLLBACK')
      throw error
    }
  }
}

/**
 * SQL functions a migration uses to rebuild the full-text index from the blocks' text: the two
 * columns `indexColumns` gives, which are what commit writes.
 */
function registerIndexFunctions(db: DatabaseSync): void {
  db.function('stablemem_fts_latin', { deterministic: true }, (text) => indexColumns(String(text))[0])
  db.function('stablemem_fts_cjk', { deterministic: true }, (text) => indexColumns(String(text))[1])
}
