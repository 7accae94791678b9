/**
 * Static guard: `lib/embed/` is the only place in `lib/` with transport code or identifiers.
 * Deliberately imports nothing from `lib/`, so it still runs when a violation breaks loading.
 *
 * History: an earlier port exempted the adapter with `rel.startsWith(ADAPTER.slice(4))`, i.e.
 * `'embed/'`, which never matches `'lib/embed/…'`; the guard stayed green only because the
 * adapter did not exist yet. The exemption here compares the full `lib/embed/` prefix, and the
 * mutation checks below prove both halves: a violation elsewhere is caught, the adapter passes.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const ADAPTER = 'lib/embed/'

/** What transport looks like in source text (after comments are stripped). */
const RULES: ReadonlyArray<[string, RegExp]> = [
  ['fetch(', /\bfetch\s*\(/],
  ['Authorization', /authorization/i],
  ['Bearer', /bearer/i],
  ['http://', /http:\/\//i],
  ['https://', /https:\/\//i],
  ['api_key', /api_key/i],
  ['undici', /['"]undici['"]/],
  ['node:http/https/net/tls', /['"]node:(?:https?|net|tls|dgram)['"]/],
]

/** Removes // and /* comments, leaving string and template literals intact. */
export function stripComments(src: string): string {
  let out = ''
  let i = 0
  let quote: string | null = null
  while (i < src.length) {
    const c = src[i]!
    if (quote) {
      out += c
      if (c === '\\') { out += src[i + 1] ?? ''; i += 2; continue }
      if (c === quote) quote = null
      i++
      continue
    }
    if (c === '"' || c === '\'' || c === '`') { quote = c; out += c; i++; continue }
    if (c === '/' && src[i + 1] === '/') { while (i < src.length && src[i] !== '\n') i++; continue }
    if (c === '/' && src[i + 1] === '*') { const end = src.indexOf('*/', i + 2); i = end < 0 ? src.length : end + 2; continue }
    out += c
    i++
  }
  return out
}

/** Violations in a file table (`rel path → text`); a (file, rule) pair that `isExempt` accepts is skipped. */
export function violations(files: ReadonlyMap<string, string>, isExempt: (rel: string, rule: string) => boolean): string[] {
  const found: string[] = []
  for (const [rel, text] of files) {
    const code = stripComments(text)
    for (const [name, re] of RULES) if (!isExempt(rel, name) && re.test(code)) found.push(`${rel}: ${name}`)
  }
  return found
}

const exemptAdapter = (rel: string) => rel.startsWith(ADAPTER)

/**
 * The secrets scanner recognises credential formats in note text in order to mask them, so it may
 * name those formats (`Bearer …`, `Authorization:`, `api_key=`); it may never hold transport code.
 */
const CREDENTIAL_FORMATS: ReadonlyMap<string, readonly string[]> = new Map([['lib/secrets/shapes.ts', ['Authorization', 'Bearer', 'api_key']]])

/**
 * The memory browser (`stablemem serve`) answers on loopback; it never calls out: its server may
 * use `node:http` (listening) and `node:net` (`isIP`) and build `http://` origins, its page may
 * `fetch(` its own relative API paths and name the SVG namespace. Nothing else (no `https://`,
 * no undici, no credentials headers).
 */
const LOOPBACK_SERVER: ReadonlyMap<string, readonly string[]> = new Map([
  ['lib/serve/server.ts', ['node:http/https/net/tls', 'http://']],
  ['lib/serve/security.ts', ['node:http/https/net/tls', 'http://']],
  ['lib/serve/static/app.js', ['fetch(', 'http://']],
])

/** What the guard allows: the adapter everything, the secrets scanner the names of credential formats, the browser its loopback server. */
const exempt = (rel: string, rule: string) => exemptAdapter(rel) || (CREDENTIAL_FORMATS.get(rel)?.includes(rule) ?? false) ||
  (LOOPBACK_SERVER.get(rel)?.includes(rule) ?? false)

function libFiles(): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (/\.(ts|js|mjs|cjs)$/.test(entry.name)) out.set(relative(ROOT, path).split(sep).join('/'), readFileSync(path, 'utf8'))
    }
  }
  walk(join(ROOT, 'lib'))
  return out
}

t.test('only lib/embed/ holds transport code', (t) => {
  const files = libFiles()
  t.ok(files.size >= 20, `scanned ${files.size} files (an empty scan would pass vacuously)`)
  t.ok(files.has('lib/embed/http.ts'), 'the adapter is among the scanned files')
  t.same(violations(files, exempt), [])
  t.end()
})

t.test('mutation: the secrets scanner may name credential formats, never transport code', (t) => {
  const files = libFiles()
  t.ok(violations(files, exemptAdapter).some((v) => v.startsWith('lib/secrets/shapes.ts: ')), 'without its narrow exemption the scanner is flagged, so the exemption is load-bearing')
  const leaky = new Map([['lib/secrets/shapes.ts', `${files.get('lib/secrets/shapes.ts')}\nexport const send = () => fetch('https://example.invalid/')\n`]])
  t.same(violations(leaky, exempt), ['lib/secrets/shapes.ts: fetch(', 'lib/secrets/shapes.ts: https://'], 'transport code in it is still caught')
  t.end()
})

t.test('mutation: a violation outside lib/embed/ is caught, and only it is named', (t) => {
  const files = libFiles()
  files.set('lib/store/leak.ts', 'export const x = () => fetch(\'https://example.invalid/\')\n')
  t.same(violations(files, exempt), ['lib/store/leak.ts: fetch(', 'lib/store/leak.ts: https://'])
  const header = new Map([['lib/recall/x.ts', 'const h = { authorization: token }']])
  t.same(violations(header, exemptAdapter), ['lib/recall/x.ts: Authorization'], 'case does not hide a header')
  t.end()
})

t.test('mutation: the adapter itself is accepted only because of the exact lib/embed/ exemption', (t) => {
  const files = libFiles()
  const adapterOnly = new Map([...files].filter(([rel]) => rel.startsWith(ADAPTER)))
  const unexempted = violations(adapterOnly, () => false)
  t.ok(unexempted.some((v) => v.startsWith('lib/embed/http.ts: ')), 'the adapter really contains transport code, so the exemption is load-bearing')
  t.same(violations(adapterOnly, exemptAdapter), [], 'and the exemption accepts it')
  const sliceBug = (rel: string) => rel.startsWith(ADAPTER.slice(4))
  t.not(violations(files, sliceBug).length, 0, 'the earlier port\'s slice(4) prefix would flag the legitimate adapter')
  t.end()
})

t.test('comments are stripped, string literals are not', (t) => {
  const inComment = new Map([['lib/a.ts', '// see https://example.invalid and fetch(x)\n/* Bearer */ export const a = 1\n']])
  t.same(violations(inComment, exemptAdapter), [])
  const inString = new Map([['lib/a.ts', 'export const u = "http://example.invalid" // comment\n']])
  t.same(violations(inString, exemptAdapter), ['lib/a.ts: http://'])
  t.end()
})

t.test('the memory browser\'s exemption is narrow: it serves, it never calls out', (t) => {
  const files = libFiles()
  for (const rel of LOOPBACK_SERVER.keys()) t.ok(files.has(rel), `${rel} is scanned`)
  const app = stripComments(files.get('lib/serve/static/app.js')!)
  const calls = [...app.matchAll(/\bfetch\s*\(\s*([^,)]+)/g)].map((m) => m[1]!.trim())
  t.ok(calls.length >= 2, 'the page\'s requests are found')
  t.ok(calls.every((arg) => /^(`\$\{path\}|path\b|'\/)/.test(arg)), `every fetch goes to a path on the page's own origin (${calls.join(', ')})`)
  const leaky = new Map([['lib/serve/server.ts', `${files.get('lib/serve/server.ts')}\nexport const out = () => import('undici').then(() => 'https://example.invalid/')\n`]])
  t.same(violations(leaky, exempt), ['lib/serve/server.ts: https://', 'lib/serve/server.ts: undici'], 'an outbound call in the server is still caught')
  t.end()
})
