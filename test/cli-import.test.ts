/**
 * `stablemem import` and `export --out` under hostile input: lines that are not UTF-8, too long,
 * or out of range, credentials in an export, files that are not exports, and an interrupted
 * export. Each case runs the real command as a child process on real files.
 */
import { execFileSync, spawn } from 'node:child_process'
import { createReadStream, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { fileLines } from '../lib/cli/read-lines.ts'
import { BlockStore } from '../lib/store/store.ts'
import { EXPORT_VERSION, exportJsonl } from '../lib/store/transfer.ts'
import { CLI_SOURCE, filledStore, runCli } from './helpers/cli.ts'
import { mutant } from './helpers/mutant.ts'
import { tempDir } from './helpers/temp.ts'

function exportLines(texts: string[], secrets: 'allow' | 'redact' = 'redact'): { lines: string[], ids: string[] } {
  const store = new BlockStore(join(tempDir('stablemem-src'), 'm.db'), { secrets })
  const ids = texts.map((text) => store.commit({ text }).id)
  if (ids.length > 1) store.link({ sourceKind: 'block', sourceId: ids[1]!, targetKind: 'block', targetId: ids[0]!, type: 'related' })
  const lines = [...exportJsonl(store)]
  store.close()
  return { lines, ids }
}

t.test('import refuses bad lines with their number: dates beyond JavaScript, header versions, invalid UTF-8, oversized lines', async (t) => {
  const dir = tempDir('stablemem-import')
  const { lines } = exportLines(['gateway 10.0.0.1', 'gateway 10.0.0.2'])
  const cases: Array<[string, Buffer | string, RegExp]> = [
    ['future', [lines[0], lines[1], lines[2]!.replace(/"createdAt":\d+/, '"createdAt":8640000000000001')].join('\n'), /^stablemem import: line 3: block field createdAt 8640000000000001 is beyond the last date JavaScript can represent \(8640000000000000\); the 2 lines before it were imported/],
    ['version0', [lines[0]!.replace(`"version":${EXPORT_VERSION}`, '"version":0'), lines[1]].join('\n'), /^stablemem import: line 1: header version must be a whole number from 1, not 0;/],
    ['versionText', lines[0]!.replace(`"version":${EXPORT_VERSION}`, '"version":"1"'), /line 1: header version must be a whole number from 1, not "1"/],
    ['versionNext', lines[0]!.replace(`"version":${EXPORT_VERSION}`, `"version":${EXPORT_VERSION + 1}`), new RegExp(`line 1: export version ${EXPORT_VERSION + 1} is newer than this dsh-stablemem reads`)],
    ['utf8', Buffer.concat([Buffer.from(`${lines[0]}\n${lines[1]}\n`), Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x0a])]), /^stablemem import: line 3: not valid UTF-8; the 2 lines before it were imported/],
  ]
  for (const [name, content, message] of cases) {
    const file = join(dir, `${name}.jsonl`)
    writeFileSync(file, content)
    const r = await runCli(['import', file, '--db', join(dir, `${name}.db`)])
    t.equal(r.code, 1, name)
    t.match(r.stderr, message, name)
    t.equal(r.stderr.trim().split('\n').length, 1)
  }
  const stored = new BlockStore(join(dir, 'future.db'), { readOnly: true })
  t.equal(stored.count(), 1, 'the line before the bad date is kept')
  t.match(stored.stats(), { blocks: 1 })
  stored.close()
  // 17 MiB without a newline: refused once it is too long, not buffered whole.
  const huge = join(dir, 'huge.jsonl')
  writeFileSync(huge, Buffer.alloc(17 << 20, 0x61))
  const r = await runCli(['import', huge, '--db', join(dir, 'huge.db')])
  t.equal(r.code, 1)
  t.equal(r.stderr, 'stablemem import: line 1: line is longer than 16777216 bytes; an export line is one block (a few hundred KB at most), so this is not a dsh-stablemem export; nothing was imported, and no store was created\n')
})

t.test('fileLines: CRLF, a last line without newline, lines across chunks, and the byte bound', async (t) => {
  const dir = tempDir('stablemem-lines')
  const file = join(dir, 'a.txt')
  const long = '端'.repeat(40_000) // 120,000 bytes: crosses 64 KiB read chunks, and a character straddles one
  writeFileSync(file, `a\r\n${long}\n\nlast`)
  const lines: string[] = []
  for await (const line of fileLines(file)) lines.push(line)
  t.same(lines, ['a', long, '', 'last'])
  await t.rejects((async () => { for await (const line of fileLines(file, undefined, 100_000)) void line })(), { code: 'too_large' })
  const ok: string[] = []
  for await (const line of fileLines(file, undefined, 120_000)) ok.push(line)
  t.equal(ok.length, 4, 'a line of exactly the bound is accepted')
})

t.test('a failed import of a file that is not an export leaves no store behind; into an existing store it keeps it', async (t) => {
  const dir = tempDir('stablemem-import')
  const notExport = join(dir, 'notes.txt')
  writeFileSync(notExport, 'just some notes\nnot json\n')
  const db = join(dir, 'new.db')
  const r = await runCli(['import', notExport, '--db', db])
  t.equal(r.code, 1)
  t.equal(r.stderr, 'stablemem import: line 1: not valid JSON; nothing was imported, and no store was created\n')
  t.same(readdirSync(dir), ['notes.txt'])
  const existing = filledStore(2)
  t.equal((await runCli(['import', notExport, '--db', existing])).code, 1)
  t.match(JSON.parse((await runCli(['stats', '--json', '--db', existing])).stdout), { blocks: 2 }, 'an existing store is never removed')
})

t.test('import --secrets: refuse (default) stops at the secret, allow restores an allow store exactly, redact masks and follows the new id', async (t) => {
  const dir = tempDir('stablemem-import')
  const secret = 'deploy key sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD for billing'
  const { lines, ids } = exportLines(['billing 服务端口 8499', secret], 'allow')
  const file = join(dir, 'allow.jsonl')
  writeFileSync(file, `${lines.join('\n')}\n`)
  const refused = await runCli(['import', file, '--db', join(dir, 'refuse.db')])
  t.equal(refused.code, 1)
  t.match(refused.stderr, /^stablemem import: line 3: text contains credentials \(.+\); import refuses them unless told to keep them \(secrets allow\) or mask them \(secrets redact\); the 2 lines before it were imported\n$/)
  t.notMatch(refused.stderr, /sk-abc/, 'the secret is never repeated')

  const allowed = await runCli(['import', file, '--secrets', 'allow', '--db', join(dir, 'allow.db'), '--json'])
  t.equal(allowed.code, 0, allowed.stderr)
  const again = await runCli(['export', '--db', join(dir, 'allow.db')])
  t.same(again.stdout.trim().split('\n').slice(1), lines.slice(1), 'lossless')

  const redacted = await runCli(['import', file, '--secrets', 'redact', '--db', join(dir, 'redact.db'), '--json'])
  t.equal(redacted.code, 0, redacted.stderr)
  const result = JSON.parse(redacted.stdout) as { redacted: Array<{ line: number, id: string, storedAs: string, kinds: string[] }>, edgesCreated: number }
  t.equal(result.redacted.length, 1)
  t.match(result.redacted[0], { line: 3, id: ids[1] })
  t.match(redacted.stderr, new RegExp(`^stablemem import: line 3: masked .+; ${ids[1]} is stored as ${result.redacted[0]!.storedAs}\\n$`))
  t.equal(result.edgesCreated, 1, 'the edge of the masked note follows its new id')
  const stored = JSON.parse((await runCli(['get', result.redacted[0]!.storedAs, '--json', '--db', join(dir, 'redact.db')])).stdout) as { text: string, edges: Array<{ sourceId: string }> }
  t.notMatch(stored.text, /sk-abc/)
  t.equal(stored.edges[0]?.sourceId, result.redacted[0]!.storedAs)
  t.equal((await runCli(['import', file, '--secrets', 'maybe', '--db', join(dir, 'x.db')])).code, 2)
})

/** Runs `export --out` from `entry`, interrupts it mid-write, and lists what is left in the folder. */
async function interruptedExport(entry: string): Promise<{ signal: NodeJS.Signals | null, left: string[] }> {
  const db = filledStore(5_000) // an export of ~1 MB: far more than the pipe and our read buffer hold
  const dir = tempDir('stablemem-export')
  const out = join(dir, 'out.jsonl')
  // The shell waits for a line on stdin before it becomes the CLI, so the partial file can be
  // made a FIFO first: the export then blocks writing it once we stop reading, and is interrupted there.
  const child = spawn('sh', ['-c', `read go; exec "${process.execPath}" "${entry}" export --out "${out}" --db "${db}"`], { stdio: ['pipe', 'ignore', 'pipe'] })
  const partial = `${out}.partial-${child.pid}`
  execFileSync('mkfifo', [partial])
  child.stdin!.end('go\n')
  const reader = createReadStream(partial)
  await new Promise<void>((resolve) => reader.once('data', () => { reader.pause(); resolve() }))
  child.kill('SIGINT')
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, sig) => resolve(sig)))
  reader.destroy()
  return { signal, left: readdirSync(dir) }
}

t.test('an interrupted export --out removes its partial file', async (t) => {
  t.same(await interruptedExport(CLI_SOURCE), { signal: 'SIGINT', left: [] }, 'ended by the signal, neither the partial file nor a truncated export left')
  const m = mutant({ file: 'cli/commands/export.ts', from: 'for (const signal of INTERRUPTS) process.once(signal, interrupted)', to: '' })
  t.teardown(() => m.remove())
  const mutated = await interruptedExport(join(m.dir, 'lib', 'cli', 'main.ts'))
  t.equal(mutated.left.length, 1, 'mutation: without the signal handler the partial file stays')
})

