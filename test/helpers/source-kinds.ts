/**
 * Finds every message `source.kind` the installed `@deepseek-ai/*` packages declare, by reading
 * their `.d.ts` files: each `interface MessageSourceMap { … }` body (the merge-extensible map of
 * message sources, in dsh-llm and in any package that augments it) is split into entries, and
 * each entry's `kind: '<literal>'` is collected, following a named type (e.g.
 * `ToolMessageSource`) to its declaration in the same package. A plain text scan, so it also
 * works for packages whose code this project never imports.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** One declared source: the map key, its `kind` literal, and where it is declared. */
export interface DeclaredSource {
  key: string
  kind: string
  file: string
}

/** Every `.d.ts` file under a folder, following nested node_modules. */
function declarationFiles(dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry)
    const stat = statSync(path)
    if (stat.isDirectory()) out.push(...declarationFiles(path))
    else if (entry.endsWith('.d.ts') || entry.endsWith('.d.mts') || entry.endsWith('.d.cts')) out.push(path)
  }
  return out
}

/** The text between the brace that opens at `open` and its matching close. */
function braceBody(text: string, open: number): string {
  let depth = 0
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++
    else if (text[i] === '}' && --depth === 0) return text.slice(open + 1, i)
  }
  return text.slice(open + 1)
}

/** Splits an interface body into its top-level `key: type` entries. */
function entries(body: string): Array<{ key: string, type: string }> {
  const out: Array<{ key: string, type: string }> = []
  let depth = 0
  let start = 0
  const push = (chunk: string) => {
    const m = /^\s*(?:readonly\s+)?['"]?([\w-]+)['"]?\??\s*:\s*([\s\S]*?)\s*$/.exec(chunk.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, ''))
    if (m) out.push({ key: m[1]!, type: m[2]! })
  }
  for (let i = 0; i < body.length; i++) {
    const c = body[i]
    if (c === '{' || c === '(' || c === '<' || c === '[') depth++
    else if (c === '}' || c === ')' || c === '>' || c === ']') depth--
    else if ((c === ';' || c === '\n') && depth === 0) {
      if (body.slice(start, i).trim() !== '') push(body.slice(start, i))
      start = i + 1
    }
  }
  if (body.slice(start).trim() !== '') push(body.slice(start))
  return out
}

/** The folder of the package a file belongs to (the deepest `node_modules/<name>` or `node_modules/@scope/<name>`). */
function packageRoot(file: string): string {
  const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+\/)/.exec(file)
  return m ? m[1]! : dirname(file)
}

const KIND = /\bkind\??\s*:\s*['"]([^'"]+)['"]/g

/** The kind literals of a named type declared in any of these files. */
function kindsOfNamedType(name: string, files: readonly string[]): string[] {
  for (const file of files) {
    const text = readFileSync(file, 'utf8')
    const decl = new RegExp(`(?:interface\\s+${name}\\b[^{]*|type\\s+${name}\\s*=\\s*)\\{`).exec(text)
    if (decl) return [...braceBody(text, decl.index + decl[0].length - 1).matchAll(KIND)].map((m) => m[1]!)
  }
  return []
}

/** Every source declared in a `MessageSourceMap` body under `node_modules/@deepseek-ai`. */
export function declaredSources(scope = join(root, 'node_modules', '@deepseek-ai')): DeclaredSource[] {
  const files = declarationFiles(scope)
  const out: DeclaredSource[] = []
  for (const file of files) {
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/interface\s+MessageSourceMap\b[^{]*\{/g)) {
      const body = braceBody(text, m.index + m[0].length - 1)
      for (const { key, type } of entries(body)) {
        let kinds = [...type.matchAll(KIND)].map((k) => k[1]!)
        const named = /^([A-Z]\w*)$/.exec(type.replace(/;$/, '').trim())
        if (kinds.length === 0 && named) {
          const pkg = packageRoot(file)
          const pkgFiles = files.filter((f) => f.startsWith(pkg))
          kinds = kindsOfNamedType(named[1]!, pkgFiles)
        }
        for (const kind of kinds) out.push({ key, kind, file: relative(root, file) })
      }
    }
  }
  return out
}
