/**
 * Starts the local USE-lite embedding server for benchmarks and prints its base URL:
 *   node test/embed/serve-model.ts [--cache]   → http://127.0.0.1:PORT/v1
 * `--cache` answers repeated texts from memory (repeated benchmark runs; not for latency numbers).
 * Stops on SIGINT/SIGTERM. Dev only; listens on 127.0.0.1.
 */
import { startModelServer } from './servers.ts'

if (import.meta.main) {
  const server = await startModelServer({ cache: process.argv.includes('--cache') })
  console.log(server.url)
  const stop = () => { void server.close().then(() => process.exit(0)) }
  process.on('SIGINT', stop)
  process.on('SIGTERM', stop)
}
