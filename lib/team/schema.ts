import type pg from 'pg'
import { TeamError } from './errors.ts'

/**
 * The shared layer's tables, in their own PostgreSQL schema `stablemem`, versioned like the
 * SQLite store (`meta.version` = how many `TEAM_MIGRATIONS` ran). Every table holds a
 * `namespace` column and row-level security forced on it: a role sees and writes only the rows
 * of the namespace `stablemem.access` gives it, whatever SQL it sends (the table owner included;
 * PostgreSQL superusers bypass it by design). In `access` a role sees only its own row.
 */

/** Marks the schema as this program's (`meta.app`). */
export const TEAM_APP = 'dsh-stablemem'

/** Each entry moves the schema one version forward; append only. */
export const TEAM_MIGRATIONS: readonly string[] = [
  `CREATE EXTENSION IF NOT EXISTS pg_trgm;
  CREATE SCHEMA IF NOT EXISTS stablemem;
  CREATE TABLE stablemem.meta (key text PRIMARY KEY, value text NOT NULL);
  INSERT INTO stablemem.meta VALUES ('app', '${TEAM_APP}'), ('version', '0');
  CREATE TABLE stablemem.access (role name PRIMARY KEY, namespace text NOT NULL);
  ALTER TABLE stablemem.access ENABLE ROW LEVEL SECURITY;
  CREATE POLICY own ON stablemem.access USING (role = current_user);
  CREATE FUNCTION stablemem.my_namespace() RETURNS text LANGUAGE sql STABLE
    SET search_path = pg_catalog AS $$ SELECT namespace FROM stablemem.access WHERE role = current_user $$;
  REVOKE ALL ON FUNCTION stablemem.my_namespace() FROM PUBLIC;
  CREATE TABLE stablemem.notes (
    namespace text NOT NULL,
    id text NOT NULL,
    text text NOT NULL,
    terms tsvector NOT NULL,
    toks text NOT NULL,
    doc_len integer NOT NULL,
    member text NOT NULL,
    source text NOT NULL DEFAULT '',
    scene text NOT NULL DEFAULT '',
    created_at bigint NOT NULL,
    supersedes text NOT NULL DEFAULT '',
    superseded_by text,
    PRIMARY KEY (namespace, id)
  );
  CREATE INDEX notes_terms ON stablemem.notes USING gin (terms);
  CREATE INDEX notes_text_trgm ON stablemem.notes USING gin (lower(text) gin_trgm_ops);
  CREATE INDEX notes_supersedes ON stablemem.notes (namespace, supersedes) WHERE supersedes <> '';
  CREATE TABLE stablemem.terms (namespace text NOT NULL, term text NOT NULL, df integer NOT NULL, PRIMARY KEY (namespace, term));
  CREATE TABLE stablemem.stats (namespace text PRIMARY KEY, notes bigint NOT NULL, tokens bigint NOT NULL);
  DO $$ DECLARE t text; BEGIN
    FOREACH t IN ARRAY ARRAY['notes', 'terms', 'stats'] LOOP
      EXECUTE format('ALTER TABLE stablemem.%I ENABLE ROW LEVEL SECURITY', t);
      EXECUTE format('ALTER TABLE stablemem.%I FORCE ROW LEVEL SECURITY', t);
      EXECUTE format('CREATE POLICY team ON stablemem.%I USING (namespace = (SELECT stablemem.my_namespace())) WITH CHECK (namespace = (SELECT stablemem.my_namespace()))', t);
    END LOOP;
  END $$;`,
  // 2: postings, so bm25 ranks on the server (search.ts) and only the best candidates leave it. A
  // note gets an insertion number (`seq`, what "newest" means, as a local rowid); each of its
  // distinct terms a row with its frequency and the note's length. They replace the tsvector,
  // which could find a term's notes but not rank them without reading every one. The backfill
  // reads the packed tokens (`toks`), with row-level security lifted for the owner meanwhile.
  `ALTER TABLE stablemem.notes NO FORCE ROW LEVEL SECURITY;
  ALTER TABLE stablemem.notes ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;
  CREATE UNIQUE INDEX notes_seq ON stablemem.notes (namespace, seq);
  DROP INDEX stablemem.notes_terms;
  ALTER TABLE stablemem.notes DROP COLUMN terms;
  CREATE TABLE stablemem.postings (
    namespace text NOT NULL,
    term text NOT NULL,
    seq bigint NOT NULL,
    tf integer NOT NULL,
    doc_len integer NOT NULL,
    PRIMARY KEY (namespace, term, seq) INCLUDE (tf, doc_len)
  );
  INSERT INTO stablemem.postings (namespace, term, seq, tf, doc_len)
    SELECT n.namespace, k.term, n.seq, count(*), n.doc_len FROM stablemem.notes n CROSS JOIN LATERAL (
      SELECT 'l:' || t AS term FROM unnest(string_to_array(split_part(n.toks, chr(1), 1), ' ')) AS t
      UNION ALL SELECT 'c:' || t FROM unnest(string_to_array(split_part(n.toks, chr(1), 2), ' ')) AS t) k
    WHERE octet_length(k.term) <= 2000 GROUP BY n.namespace, k.term, n.seq, n.doc_len;
  ALTER TABLE stablemem.notes FORCE ROW LEVEL SECURITY;
  ALTER TABLE stablemem.postings ENABLE ROW LEVEL SECURITY;
  ALTER TABLE stablemem.postings FORCE ROW LEVEL SECURITY;
  CREATE POLICY team ON stablemem.postings USING (namespace = (SELECT stablemem.my_namespace()))
    WITH CHECK (namespace = (SELECT stablemem.my_namespace()));
  DO $$ DECLARE r record; BEGIN
    FOR r IN SELECT role FROM stablemem.access LOOP
      EXECUTE format('GRANT SELECT, INSERT, DELETE ON stablemem.postings TO %I', r.role);
    END LOOP;
  END $$;`,
  // 3: multi-token phrases are found through the postings of their rarest tokens (search.ts), so
  // the trigram index over the text, costly on every write and slow on digit-heavy symbols whose
  // trigrams every IP shares, has no reader left. The extension stays: dropping it needs its
  // creator, who need not be the role migrating now.
  `DROP INDEX IF EXISTS stablemem.notes_text_trgm;`,
]

/** The schema version this release writes. */
export const TEAM_SCHEMA_VERSION = TEAM_MIGRATIONS.length

/** Where a database stands: ours at some version, empty, or someone else's. */
export type SchemaState =
  | { kind: 'ours', version: number }
  | { kind: 'empty' }
  | { kind: 'foreign', reason: string }

/** Reads the database's state without changing anything. */
export async function schemaState(client: pg.ClientBase): Promise<SchemaState> {
  const { rows } = await client.query<{ meta: string | null, schema: boolean, tables: string }>(`SELECT
    to_regclass('stablemem.meta')::text AS meta,
    EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'stablemem') AS schema,
    (SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema'))::text AS tables`)
  const row = rows[0]!
  if (row.meta === null) {
    if (row.schema) return { kind: 'foreign', reason: 'it has a schema named stablemem that dsh-stablemem did not create' }
    if (Number(row.tables) > 0) return { kind: 'foreign', reason: `it holds ${row.tables} tables of another program and no dsh-stablemem schema` }
    return { kind: 'empty' }
  }
  const meta = await client.query<{ key: string, value: string }>(`SELECT key, value FROM stablemem.meta WHERE key IN ('app', 'version')`)
  const values = new Map(meta.rows.map((r) => [r.key, r.value]))
  if (values.get('app') !== TEAM_APP) return { kind: 'foreign', reason: `its stablemem schema belongs to ${JSON.stringify(values.get('app') ?? 'an unknown program')}` }
  const version = Number(values.get('version'))
  if (!Number.isInteger(version) || version < 0) return { kind: 'foreign', reason: `its stablemem schema has version ${JSON.stringify(values.get('version'))}` }
  return { kind: 'ours', version }
}

/**
 * Brings the schema to `TEAM_SCHEMA_VERSION` (creating it in an empty database), one transaction
 * under an advisory lock so two processes never migrate at once. Refuses another program's
 * database and a newer schema with a `TeamError`; a role without the rights to migrate gets one
 * that says who can (`stablemem team init` as the database owner). Returns the version found.
 */
export async function migrateTeamSchema(client: pg.ClientBase, database: string): Promise<number> {
  await client.query('BEGIN')
  try {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('stablemem.migrate'))`)
    const state = await schemaState(client)
    if (state.kind === 'foreign') throw new TeamError('foreign', `database ${JSON.stringify(database)} is not a dsh-stablemem team database: ${state.reason}; give the team layer a database of its own`)
    const from = state.kind === 'empty' ? 0 : state.version
    if (from > TEAM_SCHEMA_VERSION) throw newerSchema(database, from)
    for (let v = from; v < TEAM_SCHEMA_VERSION; v++) {
      await client.query(TEAM_MIGRATIONS[v]!)
      await client.query(`UPDATE stablemem.meta SET value = $1 WHERE key = 'version'`, [String(v + 1)])
    }
    await client.query('COMMIT')
    return from
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    if (error instanceof TeamError) throw error
    const code = (error as { code?: string }).code
    if (code === '42501') throw new TeamError('permission', `the team database ${JSON.stringify(database)} needs its schema created or migrated, which this role may not do: run \`stablemem team init\` as the database owner`, { cause: error })
    throw error
  }
}

/** The refusal of a schema written by a newer release. */
export function newerSchema(database: string, version: number): TeamError {
  return new TeamError('newer_schema', `team database ${JSON.stringify(database)} has schema version ${version}, newer than this dsh-stablemem understands (${TEAM_SCHEMA_VERSION}); upgrade dsh-stablemem`)
}

/**
 * Gives `role` the team `namespace` (and the table rights it needs): what an administrator runs
 * once per team. A role belongs to one namespace; granting another moves it.
 */
export async function grantTeam(client: pg.ClientBase, role: string, namespace: string): Promise<void> {
  const ident = (await client.query<{ q: string }>('SELECT quote_ident($1) AS q', [role])).rows[0]!.q
  await client.query('INSERT INTO stablemem.access VALUES ($1, $2) ON CONFLICT (role) DO UPDATE SET namespace = excluded.namespace', [role, namespace])
  await client.query(`GRANT USAGE ON SCHEMA stablemem TO ${ident};
    GRANT SELECT ON stablemem.meta, stablemem.access TO ${ident};
    GRANT SELECT, INSERT, UPDATE, DELETE ON stablemem.notes, stablemem.terms, stablemem.stats TO ${ident};
    GRANT SELECT, INSERT, DELETE ON stablemem.postings TO ${ident};
    GRANT EXECUTE ON FUNCTION stablemem.my_namespace() TO ${ident}`)
}
