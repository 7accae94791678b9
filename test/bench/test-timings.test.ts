/**
 * `npm run test:timings` (bench/test-timings.ts) on a saved TAP stream and on tap's process
 * records: slowest first, failed files named, `--limit` exits 1 naming the files above it, and a
 * bad flag is refused naming it.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { tempDir } from '../helpers/temp.ts'

const SCRIPT = fileURLToPath(new URL('../../bench/test-timings.ts', import.meta.url))

/** Runs the script in `cwd`; resolves with its exit code and output. */
function timings(args: string[], cwd: string): Promise<{ code: number, stdout: string, stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SCRIPT, ...args], { cwd, env: { ...process.env, npm_config_json: '' } }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
    })
  })
}

const STREAM = `TAP version 14
# Subtest: test/a.test.ts
    ok 1 - inner # time=1.5ms
ok 1 - test/a.test.ts # time=1500.5ms
not ok 2 - test/b.test.ts # time=70250ms
ok 3 - test/c.test.ts # time=300ms
# { total: 3, pass: 2, fail: 1 }
`

t.test('a saved TAP stream: slowest first, the failed file named, --limit names the files above it', async (t) => {
  const dir = tempDir('test-timings')
  writeFileSync(join(dir, 'run.tap'), STREAM)
  const json = await timings(['--tap', 'run.tap', '--json', '--top', '2', '--limit', '60'], dir)
  t.equal(json.code, 1, 'a file above the limit fails the run')
  t.match(JSON.parse(json.stdout), {
    source: 'run.tap', files: 3, sum_s: 72.1, failed: ['test/b.test.ts'], limit_s: 60, over_limit: ['test/b.test.ts'],
    slowest: [{ file: 'test/b.test.ts', s: 70.3, ok: false }, { file: 'test/a.test.ts', s: 1.5 }],
  })
  const table = await timings(['--tap', 'run.tap'], dir)
  t.equal(table.code, 0, 'no limit, no failure of its own')
  t.match(table.stdout, /^file +seconds\ntest\/b\.test\.ts +70\.3 +FAILED\ntest\/a\.test\.ts +1\.5\ntest\/c\.test\.ts +0\.3\n3 files, 72\.1 s summed;/)
})

t.test('tap\'s process records: the newest record of each file, child processes left out', async (t) => {
  const dir = tempDir('test-timings')
  const records = join(dir, '.tap', 'processinfo')
  mkdirSync(records, { recursive: true })
  const record = (name: string, fields: object) => writeFileSync(join(records, `${name}.json`), JSON.stringify({ parent: null, code: 0, signal: null, ...fields }))
  record('old', { externalID: 'test/a.test.ts', date: '2026-12-07T10:00:00.000Z', runtime: 9000 })
  record('new', { externalID: 'test/a.test.ts', date: '2026-12-07T11:00:00.000Z', runtime: 2000 })
  record('other', { externalID: 'test/b.test.ts', date: '2026-12-07T11:00:01.000Z', runtime: 3000, code: 1 })
  record('child', { externalID: 'test/a.test.ts', parent: 'new', date: '2026-12-07T11:00:00.500Z', runtime: 50_000 })
  const r = await timings(['--json'], dir)
  t.equal(r.code, 0, r.stderr)
  t.match(JSON.parse(r.stdout), { files: 2, sum_s: 5, span_s: 4, failed: ['test/b.test.ts'], slowest: [{ file: 'test/b.test.ts', s: 3 }, { file: 'test/a.test.ts', s: 2 }] })
})

t.test('bad input: a flag is refused naming it; --help answers', async (t) => {
  const dir = tempDir('test-timings')
  const top = await timings(['--top', 'ten'], dir)
  t.not(top.code, 0)
  t.match(top.stderr, /--top must be a whole number ≥ 0, got "ten"/)
  const none = await timings([], dir)
  t.match(none.stderr, /no \.tap\/processinfo\/ here: run `npm test` first/)
  const help = await timings(['--help'], dir)
  t.equal(help.code, 0)
  t.match(help.stdout, /^npm run test:timings -- /)
})
