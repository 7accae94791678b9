import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type Schema from '@deepseek-ai/schemastery'
import t from 'tap'
import { Config } from '../lib/config.ts'
import { boot, tempStorePath } from './helpers/harness.ts'
import { tempDir } from './helpers/temp.ts'

const root = new URL('..', import.meta.url)
const README = readFileSync(new URL('README.md', root), 'utf8')
const README_ZH = readFileSync(new URL('README.zh.md', root), 'utf8')

/** One documented configuration field. */
interface Row {
  name: string
  type: string
  default: string
  description: string
}

/** The rows the schema implies: leaves of nested objects get dotted names (`embed.url`). */
function schemaRows(schema: Schema, prefix = ''): Row[] {
  const dict = (schema as unknown as { dict?: Record<string, Schema> }).dict ?? {}
  return Object.entries(dict).flatMap(([key, field]) => {
    const node = field as unknown as { type: string, inner?: { type: string }, meta?: { default?: unknown, description?: unknown, min?: number, max?: number, step?: number } }
    if (node.type === 'object') return schemaRows(field, `${prefix}${key}.`)
    return [{
      name: `${prefix}${key}`,
      type: typeName(node),
      default: JSON.stringify(node.meta?.default),
      description: typeof node.meta?.description === 'string' ? node.meta.description : '',
    }]
  })
}

function typeName(node: { type: string, inner?: { type: string }, list?: Array<{ type: string, value?: unknown }>, meta?: { min?: number, max?: number, step?: number } }): string {
  if (node.type === 'union' && node.list?.every((member) => member.type === 'const')) return `one of ${node.list.map((member) => String(member.value)).join(', ')}`
  const base = node.type === 'array' ? `${node.inner?.type ?? 'any'}[]` : node.type === 'number' && node.meta?.step === 1 ? 'integer' : node.type
  const { min, max } = node.meta ?? {}
  if (node.type !== 'number') return base
  if (min !== undefined && max !== undefined) return `${base} ${min}–${max}`
  if (min !== undefined) return `${base} ≥ ${min}`
  if (max !== undefined) return `${base} ≤ ${max}`
  return base
}

/** The rows of the README table between the config-table markers. */
function tableRows(markdown: string): Row[] {
  const start = markdown.indexOf('<!-- config-table:start -->')
  const end = markdown.indexOf('<!-- config-table:end -->')
  if (start < 0 || end < start) throw new Error('config table markers not found')
  return markdown.slice(start, end).split('\n').filter((line) => /^\|\s*`/.test(line)).map((line) => {
    const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim())
    return { name: unquote(cells[0]!), type: cells[1]!, default: unquote(cells[2]!), description: cells[3]! }
  })
}

function unquote(cell: string): string {
  return cell.replace(/^`(.*)`$/, '$1')
}

/** Every difference between a documented table and the schema, as readable lines. */
function drift(documented: Row[], expected: Row[], compareDescriptions: boolean): string[] {
  const problems: string[] = []
  const names = (rows: Row[]) => rows.map((r) => r.name).join(', ')
  if (names(documented) !== names(expected)) problems.push(`fields: README has [${names(documented)}], schema has [${names(expected)}]`)
  for (const want of expected) {
    const have = documented.find((r) => r.name === want.name)
    if (!have) continue
    if (have.type !== want.type) problems.push(`${want.name}: type "${have.type}" should be "${want.type}"`)
    if (have.default !== want.default) problems.push(`${want.name}: default ${have.default} should be ${want.default}`)
    if (compareDescriptions && have.description !== want.description) problems.push(`${want.name}: description should be "${want.description}"`)
  }
  return problems
}

t.test('the README config tables match the schema (fields, types, defaults; English descriptions too)', async (t) => {
  const expected = schemaRows(Config)
  t.ok(expected.length >= 8)
  t.same(drift(tableRows(README), expected, true), [], 'README.md')
  t.same(drift(tableRows(README_ZH), expected, false), [], 'README.zh.md')
})

t.test('the drift check catches drift (mutation check)', async (t) => {
  const expected = schemaRows(Config)
  const rows = tableRows(README)
  t.match(drift(rows.slice(1), expected, true), [/^fields: /], 'a missing row')
  t.match(drift(rows.map((r) => (r.name === 'topK' ? { ...r, default: '6' } : r)), expected, true), ['topK: default 6 should be 5'], 'a changed default')
  t.match(drift(rows.map((r) => (r.name === 'inject' ? { ...r, type: 'string' } : r)), expected, true), ['inject: type "string" should be "boolean"'], 'a wrong type')
  t.match(drift(rows.map((r) => (r.name === 'path' ? { ...r, description: 'old words' } : r)), expected, true), [/^path: description should be/], 'stale wording')
  t.match(drift(rows, [...expected, { name: 'embed.url', type: 'string', default: '""', description: 'x' }], true), [/^fields: .*embed\.url/], 'a new schema field')
})

/** The TypeScript block of the service section. */
function serviceExample(markdown: string, heading: RegExp): string {
  const section = markdown.slice(markdown.search(heading))
  const match = /```ts\n([^]*?)```/.exec(section)
  if (!match) throw new Error('no ts block in the service section')
  return match[1]!
}

t.test('the README service example runs as written against the real plugin', async (t) => {
  const code = serviceExample(README, /^## The service/m)
  t.equal(serviceExample(README_ZH, /^## 服务/m), code, 'the Chinese README shows the same code')
  const file = join(tempDir('stablemem-readme'), 'deploy-notes.mts')
  writeFileSync(file, code)
  const example = await import(pathToFileURL(file).href) as { name: string, inject: string[], apply: (ctx: unknown) => Promise<void> }
  t.same(example.inject, ['stablemem'])
  const h = await boot({ path: tempStorePath() })
  t.teardown(() => h.dispose())
  await h.ctx.plugin(example as never, {} as never)
  const hits = await h.ctx.stablemem.recall('billing 8499')
  t.equal(hits[0]?.text, 'billing 服务端口 8499，部署在 10.3.7.9')
  t.equal(hits[0]?.exact, true)
  const stats = await h.ctx.stablemem.stats()
  t.match(stats, { available: true, blocks: 1, edges: 1 })
})
