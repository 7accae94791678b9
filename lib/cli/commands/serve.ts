/**
 * `stablemem serve`: the memory browser (docs/browser.md). Serves a local page to search,
 * inspect, correct and forget notes on 127.0.0.1, prints its URL with a per-run token, and stops
 * on Ctrl-C (SIGINT) or SIGTERM, closing the store. It reads the same file the plugin writes (WAL;
 * dsh may be running).
 */
import { spawn } from 'node:child_process'
import { resolveConfig } from '../../config.ts'
import { isLoopback } from '../../serve/security.ts'
import { serve } from '../../serve/server.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openExisting } from '../open-store.ts'

/** The serve command. */
export const command: Command = {
  usage: [
    'Usage: stablemem serve [--db <path>] [--port <n>] [--read-only] [--open] [--host <address>]',
    '',
    'Serves the memory browser: search with the recall the agent gets (and the message it would',
    'be shown), browse and filter notes, edit (a new note superseding the old), forget, health.',
    'Prints the URL with a random per-run token; every request needs it. Stops on Ctrl-C.',
    '',
    '  --port <n>        port (default: any free port)',
    '  --read-only       open the store read-only and refuse every change',
    '  --open            open the page in the default browser',
    '  --host <address>  bind this address instead of 127.0.0.1; anything not loopback makes',
    '                    the store reachable from the network (the token still guards it)',
  ].join('\n'),
  options: { port: { type: 'string' }, 'read-only': { type: 'boolean' }, open: { type: 'boolean' }, host: { type: 'string' } },
  positionals: { min: 0, max: 0 },
  async run({ db, dbGiven, values, io }) {
    const port = values.port === undefined ? 0 : Number(values.port)
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a whole number from 0 to 65535')
    const host = typeof values.host === 'string' ? values.host : '127.0.0.1'
    if (host.trim() === '') throw new UsageError('--host needs an address')
    const readOnly = values['read-only'] === true
    if (!isLoopback(host)) println(io.stderr, `stablemem serve: warning: serving on ${host}, which is not a loopback address: anyone who can reach it and has the token can read${readOnly ? '' : ' and change'} this memory`)
    const store = openExisting(db, dbGiven, { write: !readOnly })
    let running
    try {
      running = await serve({ store, config: resolveConfig(), host, port, readOnly, allowRemote: typeof values.host === 'string' })
    } catch (error) {
      store.close()
      throw error
    }
    println(io.stdout, `stablemem serve: ${store.path}${readOnly ? ' (read-only)' : ''}`)
    println(io.stdout, running.url)
    println(io.stdout, 'Press Ctrl-C to stop.')
    if (values.open === true) openBrowser(running.url)
    await new Promise<void>((resolve) => {
      const stop = () => { process.off('SIGINT', stop); process.off('SIGTERM', stop); resolve() }
      process.on('SIGINT', stop)
      process.on('SIGTERM', stop)
    })
    await running.close()
    store.close()
    println(io.stdout, 'stablemem serve: stopped')
    return 0
  },
}

/** Opens the URL with the platform's opener; a failure only means the user opens it by hand. */
function openBrowser(url: string): void {
  const [cmd, args] = process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '', url]] : ['xdg-open', [url]]
  try {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true })
    child.on('error', () => {})
    child.unref()
  } catch { /* printed URL is the fallback */ }
}
