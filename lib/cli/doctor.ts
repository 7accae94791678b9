/**
 * The checks behind `stablemem doctor`: can this Node run the store at all, and is the store
 * file sound? Each check ends in a plain sentence saying what is wrong and what to do. Nothing
 * here writes to the file, and `node:sqlite` is loaded dynamically so a Node without it gets a
 * diagnosis instead of a crash. The write test writes a small probe file beside the store (never
 * in it) and removes it.
 */
import { accessSync, closeSync, constants, existsSync, fsyncSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { ftsStructure } from '../store/fts-structure.ts'
import { UPKEEP_DUE_SEGMENTS } from '../store/fts-upkeep.ts'
import { SCHEMA_VERSION } from '../store/schema.ts'

/** The oldest Node this package supports (matches `engines` in package.json). */
export const MIN_NODE: readonly [number, number] = [22, 19]

/** One finding. */
export interface Check {
  status: 'ok' | 'warn' | 'fail'
  label: string
  detail: string
}

/** What the checks depend on, injectable so tests can show each failure path. */
export interface DoctorEnv {
  nodeVersion: string
  loadSqlite: () => Promise<typeof import('node:sqlite')>
}

/** The real environment. */
export const realEnv: DoctorEnv = {
  nodeVersion: process.versions.node,
  loadSqlite: () => import('node:sqlite'),
}

/** Runs every check for the store at `path`, in order; later checks are skipped when an earlier one makes them meaningless. */
export async function diagnose(path: string, env: DoctorEnv = realEnv): Promise<Check[]> {
  const checks: Check[] = []
  const [major = 0, minor = 0] = env.nodeVersion.split('.').map(Number)
  const nodeOk = major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])
  checks.push(nodeOk
    ? { status: 'ok', label: 'node', detail: `Node ${env.nodeVersion}` }
    : { status: 'fail', label: 'node', detail: `Node ${env.nodeVersion} is too old: dsh-stablemem needs Node ${MIN_NODE.join('.')} or newer (24 recommended)` })

  let sqlite: typeof import('node:sqlite')
  try {
    sqlite = await env.loadSqlite()
  } catch {
    checks.push({ status: 'fail', label: 'node:sqlite', detail: `this Node (${env.nodeVersion}) has no built-in SQLite module (node:sqlite); install Node 22.19 or newer` })
    checks.push({ status: 'fail', label: 'store', detail: `not checked: reading ${path} needs node:sqlite` })
    return checks
  }
  const memory = new sqlite.DatabaseSync(':memory:')
  try {
    const version = String((memory.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v)
    checks.push({ status: 'ok', label: 'node:sqlite', detail: `SQLite ${version}` })
    try {
      memory.exec("CREATE VIRTUAL TABLE probe USING fts5(x, tokenize = 'porter unicode61 remove_diacritics 2')")
      checks.push({ status: 'ok', label: 'fts5', detail: 'full-text search available' })
    } catch {
      checks.push({ status: 'fail', label: 'fts5', detail: 'this SQLite was built without FTS5, so recall cannot work; use an official Node build' })
      return checks
    }
  } finally {
    memory.close()
  }

  checks.push(...checkStoreFile(sqlite, path))
  checks.push(...checkSpace(path))
  return checks
}

/** Free space below which doctor fails: SQLite cannot finish a commit, so notes are not saved. */
export const MIN_FREE_BYTES = 1 << 20
/** Free space below which doctor warns. */
export const LOW_FREE_BYTES = 64 << 20
/** Bytes the write probe writes and syncs beside the store. */
const PROBE_BYTES = 64 << 10

/**
 * Whether the folder of the store has room and takes writes: free space from the file system,
 * and a real write (64 KiB written, synced and removed beside the store, never in it), because a
 * full disk or a read-only mount passes every permission check.
 */
function checkSpace(path: string): Check[] {
  const dir = nearestExisting(dirname(path))
  const checks: Check[] = []
  let free: number | undefined
  try {
    const fs = statfsSync(dir)
    free = Number(fs.bavail) * Number(fs.bsize)
  } catch { /* not every file system reports it; the write probe still runs */ }
  if (free !== undefined) {
    checks.push(free < MIN_FREE_BYTES
      ? { status: 'fail', label: 'space', detail: `only ${kib(free)} free in ${dir}, so notes cannot be saved; free some space (memory recovers by itself, no restart needed)` }
      : free < LOW_FREE_BYTES
        ? { status: 'warn', label: 'space', detail: `${kib(free)} free in ${dir}; saving stops when the disk is full` }
        : { status: 'ok', label: 'space', detail: `${kib(free)} free in ${dir}` })
  }
  const probe = join(dir, `.${basename(path)}.doctor-${process.pid}`)
  let fd: number | undefined
  try {
    fd = openSync(probe, 'wx')
    writeSync(fd, Buffer.alloc(PROBE_BYTES))
    fsyncSync(fd)
    checks.push({ status: 'ok', label: 'write test', detail: `${kib(PROBE_BYTES)} written and synced in ${dir}` })
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error'
    const why = code === 'ENOSPC' || code === 'EDQUOT' ? 'the disk is full' : code === 'EROFS' ? 'the file system is read-only' : code === 'EACCES' || code === 'EPERM' ? 'permission denied' : (error as Error).message
    checks.push({ status: 'fail', label: 'write test', detail: `cannot write in ${dir} (${why}, ${code}), so the plugin cannot save notes there` })
  } finally {
    if (fd !== undefined) closeSync(fd)
    rmSync(probe, { force: true })
  }
  return checks
}

function kib(bytes: number): string {
  return bytes >= 1 << 30 ? `${(bytes / (1 << 30)).toFixed(1)} GiB` : bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MiB` : `${Math.floor(bytes / 1024)} KiB`
}

function checkStoreFile(sqlite: typeof import('node:sqlite'), path: string): Check[] {
  if (!existsSync(path)) {
    const dir = nearestExisting(dirname(path))
    return writable(dir)
      ? [{ status: 'ok', label: 'store', detail: `no store yet at ${path}; it is created on the first save` }]
      : [{ status: 'fail', label: 'store', detail: `no store at ${path}, and ${dir} is not writable, so the plugin cannot create one` }]
  }
  let db: InstanceType<typeof sqlite.DatabaseSync>
  const walFilesBefore = existsSync(`${path}-wal`) || existsSync(`${path}-shm`)
  try {
    db = new sqlite.DatabaseSync(path, { readOnly: true })
  } catch (error) {
    return [{ status: 'fail', label: 'store', detail: `cannot open ${path}: ${(error as Error).message}` }]
  }
  const checks: Check[] = []
  try {
    let problems: string[]
    try {
      problems = db.prepare('PRAGMA integrity_check').all().map((r) => String(r.integrity_check))
    } catch (error) {
      return [{ status: 'fail', label: 'integrity', detail: `${path} is not a readable SQLite database (${(error as Error).message}); restore it from an export or a backup` }]
    }
    checks.push(problems.length === 1 && problems[0] === 'ok'
      ? { status: 'ok', label: 'integrity', detail: 'SQLite integrity check passed' }
      : { status: 'fail', label: 'integrity', detail: `the file is damaged (${problems.length} problem${problems.length === 1 ? '' : 's'}, first: ${problems[0]}); restore it from an export or a backup` })

    const version = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version)
    const hasBlocks = db.prepare("SELECT 1 AS x FROM sqlite_schema WHERE type = 'table' AND name = 'blocks'").get() !== undefined
    if (!hasBlocks) {
      checks.push({ status: 'fail', label: 'schema', detail: `${path} is a SQLite file but not a dsh-stablemem store (no blocks table)` })
      return checks
    }
    if (version > SCHEMA_VERSION) {
      checks.push({ status: 'fail', label: 'schema', detail: `version ${version} was written by a newer dsh-stablemem (this one reads up to ${SCHEMA_VERSION}); upgrade the package` })
      return checks
    }
    checks.push(version === SCHEMA_VERSION
      ? { status: 'ok', label: 'schema', detail: `version ${version} (current)` }
      : { status: 'warn', label: 'schema', detail: `version ${version} is older than ${SCHEMA_VERSION}; it is upgraded the next time the plugin or the CLI opens it for writing` })

    const counts = db.prepare('SELECT (SELECT count(*) FROM blocks) AS blocks, (SELECT count(*) FROM edges) AS edges, (SELECT count(*) FROM blocks_fts) AS indexed').get() as { blocks: number, edges: number, indexed: number }
    checks.push(Number(counts.indexed) === Number(counts.blocks)
      ? { status: 'ok', label: 'index', detail: `${counts.blocks} blocks, ${counts.edges} edges, all blocks indexed` }
      : { status: 'fail', label: 'index', detail: `the full-text index holds ${counts.indexed} entries for ${counts.blocks} blocks, so recall misses notes; export and re-import the store to rebuild it` })
    checks.push(segmentsCheck(db))
    const scrub = scrubCheck(db)
    if (scrub !== undefined) checks.push(scrub)
    checks.push(layersCheck(db))
  } finally {
    db.close()
    if (!walFilesBefore) removeIdleWalFiles(sqlite, path)
  }
  checks.push(writable(path)
    ? { status: 'ok', label: 'writable', detail: `${path} can be written` }
    : { status: 'fail', label: 'writable', detail: `${path} is read-only, so the plugin cannot save notes` })
  return checks
}

/** The full-text index's segments: a query seeks each, so many of them slow recall down until upkeep merges them. */
function segmentsCheck(db: import('node:sqlite').DatabaseSync): Check {
  const segments = ftsStructure(db, 'blocks_fts').segments
  const detail = `the full-text index has ${segments} segment${segments === 1 ? '' : 's'}`
  return segments >= UPKEEP_DUE_SEGMENTS
    ? { status: 'warn', label: 'segments', detail: `${detail}, and every query seeks each: run \`stablemem upkeep\` (the plugin merges them while idle unless indexUpkeep is off)` }
    : { status: 'ok', label: 'segments', detail }
}

/**
 * Large forgets whose bytes the scrub has not removed yet (lib/store/scrub.ts): the notes are gone
 * from every read, but the index's old segments still hold their words. A warning, not a failure:
 * a running agent finishes it within seconds; one left over is finished by `stablemem upkeep`.
 * Undefined on a schema without the table (upgraded on the next writing open).
 */
function scrubCheck(db: import('node:sqlite').DatabaseSync): Check | undefined {
  if (db.prepare("SELECT 1 AS x FROM sqlite_schema WHERE type = 'table' AND name = 'scrub_pending'").get() === undefined) return undefined
  const row = db.prepare('SELECT count(*) AS forgets, coalesce(sum(notes), 0) AS notes, min(created_at) AS since FROM scrub_pending').get() as { forgets: number, notes: number, since: number | null }
  if (Number(row.forgets) === 0) return { status: 'ok', label: 'scrub', detail: 'no forgotten note has bytes left in the index' }
  return {
    status: 'warn', label: 'scrub',
    detail: `${Number(row.notes)} forgotten note(s) (${Number(row.forgets)} forget(s) since ${new Date(Number(row.since)).toISOString()}) still have bytes in the index's old segments: run \`stablemem upkeep\` (a running agent finishes it by itself)`,
  }
}

/** The layers (docs/layers.md): how many blocks are stable and cold, and when cooling last ran. */
function layersCheck(db: import('node:sqlite').DatabaseSync): Check {
  const hasLayers = db.prepare("SELECT 1 AS x FROM pragma_table_info('blocks') WHERE name = 'layer'").get() !== undefined
  if (!hasLayers) return { status: 'ok', label: 'layers', detail: 'no layers yet (older schema): every block is a note; compaction capture starts after the upgrade' }
  const row = db.prepare(`SELECT (SELECT count(*) FROM blocks WHERE layer = 'stable') AS stable, (SELECT count(*) FROM blocks WHERE layer = 'cold') AS cold,
    (SELECT count(*) FROM blocks WHERE layer = 'cold' AND cool_attempts > 0) AS waiting,
    (SELECT max(last_run_at) FROM kernel_runs WHERE name = 'cooling') AS cooled`).get() as { stable: number, cold: number, waiting: number, cooled: number | null }
  const cooled = row.cooled === null || Number(row.cooled) === 0 ? 'cooling has not run yet' : `cooling last ran ${new Date(Number(row.cooled)).toISOString()}`
  return { status: 'ok', label: 'layers', detail: `${row.stable} stable, ${row.cold} cold (${row.waiting} yielded no fact yet and wait for another try); ${cooled}` }
}

/**
 * The read-only open had to create the WAL files; one plain open and close removes them again
 * when no other connection uses them (SQLite deletes an empty WAL on the last close).
 */
function removeIdleWalFiles(sqlite: typeof import('node:sqlite'), path: string): void {
  if (!existsSync(`${path}-wal`) && !existsSync(`${path}-shm`)) return
  try {
    const db = new sqlite.DatabaseSync(path)
    db.prepare('SELECT 1 FROM sqlite_schema LIMIT 1').get()
    db.close()
  } catch { /* a read-only folder: nothing could have been created there */ }
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK)
    return true
  } catch {
    return false
  }
}

function nearestExisting(dir: string): string {
  let current = dir
  while (!existsSync(current) && dirname(current) !== current) current = dirname(current)
  return current
}
