/**
 * A private PostgreSQL server for one test process: `initdb` into a fresh temporary folder,
 * `postgres` on 127.0.0.1 with a free port and a unix-socket folder of its own, password
 * authentication (scram) so wrong credentials are really refused. As root (CI, this machine) the
 * server runs as the `postgres` system user, which refuses nothing but root. Stopped by `stop()`,
 * and killed when the test process exits whatever happened, so a failing test never leaves a
 * server behind. No fixed ports, no shared folders: other engineers' tests run at the same time.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'

/** Where Debian puts the server binaries; `STABLEMEM_PG_BIN` overrides. */
export function pgBinDir(): string {
  if (process.env.STABLEMEM_PG_BIN) return process.env.STABLEMEM_PG_BIN
  for (const v of ['17', '16', '15', '14']) {
    const dir = `/usr/lib/postgresql/${v}/bin`
    if (existsSync(join(dir, 'initdb'))) return dir
  }
  throw new Error('PostgreSQL server binaries not found (install Debian\'s postgresql, or set STABLEMEM_PG_BIN)')
}

/** A running private server. */
export interface PgServer {
  port: number
  /** The superuser and its password. */
  user: string
  password: string
  /** A connection URL for `database` as the superuser (no password inside: pass it separately). */
  url(database?: string, user?: string): string
  /** A superuser client; close it with `end()`. */
  admin(database?: string): Promise<pg.Client>
  /** Kills the server at once (SIGKILL of the postmaster, as a crash). */
  kill(): Promise<void>
  /** Starts it again on the same port and data folder after `kill`. */
  restart(): Promise<void>
  /** Stops it and removes its folder. */
  stop(): Promise<void>
}

const running = new Set<ChildProcess>()
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL')
})
// A test process ended by a signal (tap's timeout) does not run 'exit' handlers: stop the servers first.
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.once(signal, () => {
    for (const child of running) child.kill('SIGKILL')
    process.kill(process.pid, signal)
  })
}

function runAs(): { uid: number, gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
  if (id.status !== 0) throw new Error('running as root needs the `postgres` system user (Debian\'s postgresql package creates it)')
  return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) }
}

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
}

/**
 * Starts a private server; call `stop()` in teardown. With `keep` (a folder; benchmarks only) the
 * data folder lives there and outlives `stop()`: a later start reuses it and its password.
 */
export async function startPostgres(options: { keep?: string } = {}): Promise<PgServer> {
  const bin = pgBinDir()
  const owner = runAs()
  const kept = options.keep !== undefined && existsSync(join(options.keep, 'data', 'PG_VERSION'))
  const root = options.keep ?? mkdtempSync(join(tmpdir(), 'stablemem-pg-'))
  if (options.keep !== undefined) spawnSync('mkdir', ['-p', root])
  const data = join(root, 'data')
  const sockets = join(root, 'sock')
  const pwfile = join(root, 'pw')
  const password = kept ? readFileSync(pwfile, 'utf8').trim() : `pw-${process.pid}-${Math.random().toString(36).slice(2)}`
  if (!kept) writeFileSync(pwfile, `${password}\n`)
  if (owner) {
    chownSync(root, owner.uid, owner.gid)
    chownSync(pwfile, owner.uid, owner.gid)
  }
  chmodSync(root, 0o700)
  const as = owner ?? {}
  if (!kept) {
    const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync'], { ...as, encoding: 'utf8' })
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`)
  }
  spawnSync('mkdir', ['-p', sockets], as)
  let port = 0
  let child: ChildProcess | undefined

  const launch = async (): Promise<void> => {
    for (let attempt = 0; attempt < 5; attempt++) {
      if (port === 0 || attempt > 0) port = await freePort()
      const proc = spawn(join(bin, 'postgres'), ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', sockets,
        '-c', 'fsync=off', '-c', 'max_connections=200', '-c', 'shared_buffers=64MB'], { ...as, stdio: ['ignore', 'ignore', 'pipe'] })
      let log = ''
      proc.stderr!.on('data', (chunk: Buffer) => { log = (log + chunk.toString()).slice(-4000) })
      running.add(proc)
      proc.once('exit', () => running.delete(proc))
      if (await ready(proc)) {
        child = proc
        return
      }
      proc.kill('SIGKILL')
      if (!/could not bind|already in use/.test(log)) throw new Error(`postgres did not start: ${log}`)
    }
    throw new Error('postgres did not start: no free port')
  }

  const ready = async (proc: ChildProcess): Promise<boolean> => {
    for (let i = 0; i < 600; i++) {
      if (proc.exitCode !== null) return false
      const probe = spawnSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-q'])
      if (probe.status === 0) return true
      await new Promise((r) => setTimeout(r, 100))
    }
    return false
  }

  const killNow = async (): Promise<void> => {
    const proc = child
    child = undefined
    if (!proc || proc.exitCode !== null) return
    const gone = new Promise((r) => proc.once('exit', r))
    proc.kill('SIGKILL')
    await gone
    // The postmaster's backends notice it died and leave; wait until the port is free again.
    for (let i = 0; i < 100; i++) {
      const probe = spawnSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port), '-q'])
      if (probe.status !== 0) break
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  await launch()
  const url = (database = 'postgres', user = 'postgres') => `postgresql://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`
  return {
    get port() { return port },
    user: 'postgres',
    password,
    url,
    async admin(database = 'postgres') {
      const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database, password })
      await client.connect()
      return client
    },
    kill: killNow,
    async restart() {
      const before = port
      const proc = spawn(join(bin, 'postgres'), ['-D', data, '-h', '127.0.0.1', '-p', String(before), '-k', sockets, '-c', 'fsync=off', '-c', 'max_connections=200'],
        { ...as, stdio: 'ignore' })
      running.add(proc)
      proc.once('exit', () => running.delete(proc))
      if (!(await ready(proc))) throw new Error('postgres did not restart')
      child = proc
    },
    async stop() {
      const proc = child
      child = undefined
      if (proc && proc.exitCode === null) {
        const gone = new Promise((r) => proc.once('exit', r))
        proc.kill('SIGINT') // fast shutdown
        await gone
      }
      if (options.keep === undefined) rmSync(root, { recursive: true, force: true })
    },
  }
}
