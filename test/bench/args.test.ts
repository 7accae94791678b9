/**
 * The flag checks the benches share (bench/args.ts): a whole-number flag refuses an empty, a
 * fractional, a non-numeric and a too-small value with a message naming the flag; `--kinds`
 * names an unknown kind; `--store` must hold both files of a bench:perf cache; `--json` counts
 * when npm kept it for itself.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { jsonWanted, kindsFlag, requirePerfCache, wholeFlag } from '../../bench/args.ts'
import { tempDir } from '../helpers/temp.ts'

t.test('a whole-number flag: the value, or an error naming the flag', async (t) => {
  t.equal(wholeFlag('notes', '20000'), 20_000)
  t.equal(wholeFlag('turns', '0', 0), 0, 'the least value is allowed')
  for (const [value, shown] of [['0', '"0"'], ['', '""'], [' ', '" "'], ['1.5', '"1.5"'], ['ten', '"ten"'], [undefined, 'null']] as const) {
    t.throws(() => wholeFlag('batch', value), { message: `--batch must be a whole number ≥ 1, got ${shown}` }, `refuses ${shown}`)
  }
  t.throws(() => wholeFlag('turns', '-1', 0), { message: '--turns must be a whole number ≥ 0, got "-1"' })
  t.throws(() => wholeFlag('to', '', 0), { message: '--to must be a whole number ≥ 0, got ""' }, 'an empty value is not 0')
})

t.test('--kinds: the listed kinds, or an error naming the unknown one', async (t) => {
  t.same(kindsFlag('zh_phrase,common_term'), ['zh_phrase', 'common_term'])
  t.throws(() => kindsFlag('zh_phrase,zh'), /--kinds: unknown kind zh \(known: zh_phrase, /)
})

t.test('--store: a folder with memory.db and floor.db, or an error naming the flag', async (t) => {
  const dir = tempDir('bench-args')
  t.throws(() => requirePerfCache(''), /--store must name a folder built by `bench:perf --cache`/)
  writeFileSync(join(dir, 'memory.db'), '')
  t.throws(() => requirePerfCache(dir), /--store must name/, 'memory.db alone is not a cache')
  writeFileSync(join(dir, 'floor.db'), '')
  t.doesNotThrow(() => requirePerfCache(dir))
})

t.test('--json: the flag, or npm\'s json setting when npm kept the flag for itself', async (t) => {
  const before = process.env.npm_config_json
  t.teardown(() => {
    if (before === undefined) delete process.env.npm_config_json
    else process.env.npm_config_json = before
  })
  delete process.env.npm_config_json
  t.equal(jsonWanted(true), true)
  t.equal(jsonWanted(false), false)
  process.env.npm_config_json = 'true'
  t.equal(jsonWanted(false), true)
  process.env.npm_config_json = 'false'
  t.equal(jsonWanted(false), false)
})
