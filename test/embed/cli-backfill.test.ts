import { join } from 'node:path'
import t from 'tap'
import { EmbedConfig } from '../../lib/config.ts'
import { backfillVectors } from '../../lib/embed/backfill.ts'
import { embedderFromConfig } from '../../lib/embed/from-config.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { runCli } from '../helpers/cli.ts'
import { mutant } from '../helpers/mutant.ts'
import { startFaultServer, startHashServer } from './servers.ts'
import { tempDir } from '../helpers/temp.ts'

function storeWith(n: number): string {
  const path = join(tempDir('stablemem-embed-cli'), 'memory.db')
  const store = new BlockStore(path)
  store.commitMany(Array.from({ length: n }, (_, i) => ({ text: `service-${i} listens on port ${20_000 + i}` })))
  store.close()
  return path
}

t.test('embed --backfill writes a vector for every note, then has nothing left to do', async (t) => {
  const server = await startHashServer(16)
  t.teardown(() => server.close())
  const db = storeWith(70)
  const first = await runCli(['embed', '--backfill', '--url', server.url, '--model', 'hash-16', '--batch', '32', '--db', db, '--json'])
  t.equal(first.code, 0, first.stderr)
  t.same(JSON.parse(first.stdout), { model: 'hash-16', dims: 16, done: 70, total: 70 })
  const store = new BlockStore(db)
  t.equal(store.vectors.count('hash-16', 16), 70, 'the vectors are in the file')
  store.close()
  const again = await runCli(['embed', '--backfill', '--url', server.url, '--model', 'hash-16', '--db', db])
  t.equal(again.code, 0, again.stderr)
  t.equal(again.stdout, 'embedded 0 of 0 notes without a vector (model hash-16, 16 dims)\n', 'idempotent')
})

t.test('a failing endpoint: exit 1 with one line on stderr, and the store is intact', async (t) => {
  const server = await startFaultServer('status500', 16)
  t.teardown(() => server.close())
  const db = storeWith(5)
  const r = await runCli(['embed', '--backfill', '--url', server.url, '--model', 'broken', '--db', db])
  t.equal(r.code, 1)
  t.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
  t.match(r.stderr, /^stablemem embed: /)
  const store = new BlockStore(db)
  t.equal(store.count(), 5)
  t.same(store.integrityCheck(), ['ok'])
  store.close()
})

t.test('usage errors exit 2: no --backfill, no --url, a bad --dims', async (t) => {
  const db = storeWith(1)
  for (const args of [['embed', '--db', db], ['embed', '--backfill', '--model', 'm', '--db', db], ['embed', '--backfill', '--url', 'x', '--model', 'm', '--dims', 'many', '--db', db]]) {
    const r = await runCli(args)
    t.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
    t.equal(r.stderr.trim().split('\n').length, 1)
  }
})

t.test('a backfill with unconfigured dims asks the right space: a second run costs one probe request, not the store', async (t) => {
  const server = await startHashServer(16)
  t.teardown(() => server.close())
  const db = storeWith(70)
  const store = new BlockStore(db)
  t.teardown(() => store.close())
  const config = EmbedConfig({ baseUrl: server.url, model: 'hash-16' } as EmbedConfig)
  const run = async (backfill: typeof backfillVectors) => {
    const before = server.requests
    const result = await backfill(store, embedderFromConfig(config)!, { batchSize: 32 })
    return { ...result, requests: server.requests - before }
  }
  t.same(await run(backfillVectors), { done: 70, total: 70, requests: 4 }, 'one probe, then three batches')
  t.same(await run(backfillVectors), { done: 0, total: 0, requests: 1 }, 'a fresh embedder (as at each service start) only probes')
  const m = mutant({ file: 'embed/backfill.ts', from: '  await learnDims(store, embedder, options.signal)\n', to: '' })
  t.teardown(() => m.remove())
  const { backfillVectors: unguarded } = await m.load<typeof import('../../lib/embed/backfill.ts')>('embed/backfill.ts')
  const bad = await run(unguarded)
  t.ok(bad.done > 0 && bad.total === 70, `mutation: without learning the dims a batch is embedded again and every note counted as missing (${JSON.stringify(bad)})`)
})
