/**
 * The index's segments where users see them, through the real `stablemem` command on real files:
 * `stats` shows the count, `doctor` warns from 8, `upkeep` merges the index into one segment, and
 * `import` ends merged, also into a store that had several. Mutation check: without import's final
 * upkeep that store keeps its segments.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { UPKEEP_DUE_SEGMENTS } from '../lib/store/fts-upkeep.ts'
import { BlockStore } from '../lib/store/store.ts'
import { exportJsonl } from '../lib/store/transfer.ts'
import { runCli } from './helpers/cli.ts'
import { mutant } from './helpers/mutant.ts'
import { tempDir } from './helpers/temp.ts'

/** A store committed one note at a time until its index has `UPKEEP_DUE_SEGMENTS` segments. */
function segmentedStore(label: string): string {
  const path = join(tempDir(`stablemem-${label}`), 'm.db')
  const store = new BlockStore(path)
  for (let i = 0; store.ftsSegments() < UPKEEP_DUE_SEGMENTS; i++) store.commit({ text: `service-${i} port ${10_000 + i} 服务端口` })
  store.close()
  return path
}

/** An export of `n` notes, written as one file. */
function exportFile(n: number): string {
  const store = new BlockStore(':memory:')
  store.commitMany(Array.from({ length: n }, (_, i) => ({ text: `imported note ${i}: queue q${i % 31} on host ${i % 7}` })))
  const file = join(tempDir('stablemem-export'), 'x.jsonl')
  writeFileSync(file, [...exportJsonl(store)].join('\n') + '\n')
  store.close()
  return file
}

const segmentsOf = (path: string) => { const s = new BlockStore(path, { readOnly: true }); try { return s.ftsSegments() } finally { s.close() } }

t.test('stats shows the segments, doctor warns, upkeep merges them into one', async (t) => {
  const path = segmentedStore('cli-upkeep')
  const stats = await runCli(['stats', '--db', path, '--json'])
  t.equal(stats.code, 0)
  t.equal(JSON.parse(stats.stdout).ftsSegments, UPKEEP_DUE_SEGMENTS)
  t.match((await runCli(['stats', '--db', path])).stdout, new RegExp(`index segments: ${UPKEEP_DUE_SEGMENTS}`))
  const doctor = await runCli(['doctor', '--db', path, '--json'])
  const check = (JSON.parse(doctor.stdout) as Array<{ status: string, label: string, detail: string }>).find((c) => c.label === 'segments')
  t.equal(check?.status, 'warn')
  t.match(check?.detail, /stablemem upkeep/)
  const run = await runCli(['upkeep', '--db', path, '--json'])
  t.equal(run.code, 0, run.stderr)
  const result = JSON.parse(run.stdout) as { segmentsBefore: number, segmentsAfter: number, slices: number }
  t.same([result.segmentsBefore, result.segmentsAfter], [UPKEEP_DUE_SEGMENTS, 1])
  t.equal(segmentsOf(path), 1)
  t.match((await runCli(['upkeep', '--db', path])).stdout, /1 → 1 segment \(0 slices/)
  const after = (JSON.parse((await runCli(['doctor', '--db', path, '--json'])).stdout) as Array<{ status: string, label: string }>).find((c) => c.label === 'segments')
  t.equal(after?.status, 'ok')
  t.equal((await runCli(['upkeep', '--db', join(tempDir('stablemem-none'), 'absent.db')])).code, 1, 'no store: a plain failure, nothing created')
})

// An import writes up to 10,000 lines a transaction, so an import into an empty store can end with
// one segment by itself; the store imported into already has several here, as a user's store does.
t.test('import ends with the index merged', async (t) => {
  const file = exportFile(3000)
  const path = segmentedStore('import-upkeep')
  const run = await runCli(['import', file, '--db', path])
  t.equal(run.code, 0, run.stderr)
  t.equal(segmentsOf(path), 1)
})

t.test('mutation check: without import\'s final upkeep the imported store keeps several segments', async (t) => {
  const m = mutant({ file: 'cli/commands/import.ts', from: 'if (imported.blocksCreated > 0) store.upkeep()', to: '' })
  t.teardown(() => m.remove())
  const file = exportFile(3000)
  const path = segmentedStore('import-mutant')
  const run = await runCli(['import', file, '--db', path], { entry: join(m.dir, 'lib', 'cli', 'main.ts') })
  t.equal(run.code, 0, run.stderr)
  t.ok(segmentsOf(path) > 1, `${segmentsOf(path)} segments`)
})
