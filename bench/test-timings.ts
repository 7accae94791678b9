/**
 * `npm run test:timings -- [--run [files…]] [--tap FILE] [--top N] [--limit S] [--json]` (`--help`)
 *
 * Where the suite's time goes: each test file's wall time, slowest first. By default it reads
 * the last tap run's process records (`.tap/processinfo/`, newest record per file: the whole
 * process, Node's start and the imports included), so it costs nothing after `npm test`.
 * `--run` runs tap first (the whole suite, or the files named after it). `--tap FILE` reads a
 * saved TAP stream instead (`tap --reporter=tap > FILE`: the `ok N - file # time=…` lines, tap's
 * own in-process time, which leaves out Node's start and the imports before tap's). `--limit S`
 * exits 1 naming every file above S seconds, so CI can hold the per-file ceiling.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { jsonWanted, wholeFlag } from './args.ts'

const USAGE = `npm run test:timings -- [--run [files…]] [--tap FILE] [--top N] [--limit S] [--json]
  (no flag)   read the last tap run's records in .tap/processinfo/ (wall time per file)
  --run       run tap first (the whole suite, or the test files named after the flags)
  --tap FILE  read a saved TAP stream (tap --reporter=tap > FILE) instead
  --top N     files to show (default 20; 0 = all)
  --limit S   exit 1 if a file took more than S seconds
  --json      one JSON object on stdout instead of the table`

/** One test file's outcome. */
interface FileTime {
  file: string
  seconds: number
  ok: boolean
}

/** The files of a saved TAP stream: each top-level `ok N - file # time=…ms` line. */
function fromTap(text: string): FileTime[] {
  const files: FileTime[] = []
  for (const m of text.matchAll(/^(not )?ok \d+ - (\S+) # time=([\d.]+)ms/gm)) {
    files.push({ file: m[2]!, seconds: Number(m[3]) / 1000, ok: m[1] === undefined })
  }
  return files
}

/** A tap process record (`@tapjs/processinfo`): the file it ran, when it started, how long it took. */
interface ProcessRecord { externalID?: string, parent: string | null, date: string, runtime?: number, code: number | null, signal: string | null }

/** The newest record of each test file in `dir`, and the span from the first start to the last end. */
function fromProcessInfo(dir: string): { files: FileTime[], span_s: number } {
  const newest = new Map<string, ProcessRecord>()
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.json')) continue
    const record = JSON.parse(readFileSync(join(dir, name), 'utf8')) as ProcessRecord
    if (record.parent !== null || record.externalID === undefined || record.runtime === undefined) continue
    const seen = newest.get(record.externalID)
    if (seen === undefined || Date.parse(record.date) > Date.parse(seen.date)) newest.set(record.externalID, record)
  }
  const records = [...newest.values()]
  const start = Math.min(...records.map((r) => Date.parse(r.date)))
  const end = Math.max(...records.map((r) => Date.parse(r.date) + r.runtime!))
  return {
    files: records.map((r) => ({ file: r.externalID!, seconds: r.runtime! / 1000, ok: r.code === 0 && r.signal === null })),
    span_s: records.length === 0 ? 0 : (end - start) / 1000,
  }
}

/** Reads the flags, collects the times, prints them; returns the exit code. */
function main(): number {
  const { values: args, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      run: { type: 'boolean', default: false },
      tap: { type: 'string' },
      top: { type: 'string', default: '20' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (args.help) {
    console.log(USAGE)
    return 0
  }
  const top = wholeFlag('top', args.top, 0)
  const limit = args.limit === undefined ? undefined : wholeFlag('limit', args.limit)
  const json = jsonWanted(args.json)
  if (positionals.length > 0 && !args.run) throw new Error(`test files (${positionals.join(' ')}) are only taken with --run`)
  if (args.run && args.tap !== undefined) throw new Error('--run and --tap: choose one')

  let wall_s: number | undefined
  let loadBefore: number[] | undefined
  if (args.run) {
    // tap's TAP stream is kept in .cache/ beside the process records, for a later `--tap`.
    mkdirSync('.cache', { recursive: true })
    loadBefore = loadavg()
    const started = performance.now()
    // As `npm test`: the compile cache, and Node's own type stripping (never tap's ts-node loader).
    const env = { ...process.env, NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join('.cache', 'node-compile'), TAP_TYPE_STRIP_ONLY: '1' }
    const tap = spawnSync('tap', ['--reporter=tap', ...positionals], { encoding: 'utf8', env, maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'inherit'] })
    wall_s = (performance.now() - started) / 1000
    writeFileSync(join('.cache', 'test-timings.tap'), tap.stdout)
    if (tap.error !== undefined) throw tap.error
  }
  let files: FileTime[]
  let span_s: number | undefined
  if (args.tap !== undefined) {
    files = fromTap(readFileSync(args.tap, 'utf8'))
    if (files.length === 0) throw new Error(`--tap: no "ok N - file # time=…ms" lines in ${args.tap}`)
  } else {
    const dir = join('.tap', 'processinfo')
    if (!existsSync(dir)) throw new Error('no .tap/processinfo/ here: run `npm test` first, or pass --run or --tap FILE')
    ;({ files, span_s } = fromProcessInfo(dir))
  }
  files.sort((a, b) => b.seconds - a.seconds)
  const round = (x: number) => Math.round(x * 10) / 10
  const over = limit === undefined ? [] : files.filter((f) => f.seconds > limit)
  const shown = top === 0 ? files : files.slice(0, top)
  const report = {
    source: args.tap ?? '.tap/processinfo',
    files: files.length,
    sum_s: round(files.reduce((s, f) => s + f.seconds, 0)),
    ...(span_s === undefined ? {} : { span_s: round(span_s) }),
    ...(wall_s === undefined ? {} : { wall_s: round(wall_s), load_before: loadBefore!.map(round) }),
    load: loadavg().map(round),
    failed: files.filter((f) => !f.ok).map((f) => f.file),
    ...(limit === undefined ? {} : { limit_s: limit, over_limit: over.map((f) => f.file) }),
    slowest: shown.map((f) => ({ file: f.file, s: round(f.seconds), ...(f.ok ? {} : { ok: false }) })),
  }
  if (json) console.log(JSON.stringify(report))
  else {
    const width = Math.max(...shown.map((f) => f.file.length), 4)
    console.log(`${'file'.padEnd(width)}  seconds`)
    for (const f of shown) console.log(`${f.file.padEnd(width)}  ${round(f.seconds).toFixed(1).padStart(7)}${f.ok ? '' : '  FAILED'}`)
    console.log(`${files.length} files, ${report.sum_s} s summed` +
      (span_s === undefined ? '' : `, ${report.span_s} s from the first start to the last end`) +
      (wall_s === undefined ? '' : `, ${report.wall_s} s wall`) + `; load average ${report.load.join(' ')}`)
    if (over.length > 0) console.log(`above ${limit} s: ${over.map((f) => f.file).join(', ')}`)
  }
  return over.length > 0 || (args.run && files.some((f) => !f.ok)) ? 1 : 0
}

try {
  process.exitCode = main()
} catch (error) {
  console.error(`test:timings: ${error instanceof Error ? error.message : String(error)} (--help for usage)`)
  process.exitCode = 2
}
