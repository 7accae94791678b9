/**
 * The import graph of a source tree, read from the text of its `.ts` files: every static
 * `import … from './x.ts'` and `export … from './x.ts'` (type-only ones too, since a type circle
 * ties two modules together just the same) between files of the tree. Used by the layout test
 * to refuse import circles; kept apart so the test can run it on a fixture.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

/** Every `.ts` file under `dir`, as absolute paths, skipping `node_modules` and dot folders. */
export function tsFiles(dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...tsFiles(path))
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path)
  }
  return out
}

const specifier = /(?:^|\n)\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g

/** The relative imports of one file's text, resolved against its folder. */
export function importsOf(file: string, text: string): string[] {
  const out: string[] = []
  for (const match of text.matchAll(specifier)) {
    const spec = match[1] ?? match[2]
    if (spec !== undefined && spec.startsWith('.')) out.push(resolve(dirname(file), spec))
  }
  return out
}

/** The graph over the given files: each file to the files of the same set it imports. */
export function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  for (const file of files) graph.set(file, importsOf(file, readFileSync(file, 'utf8')).filter((to) => known.has(to)))
  return graph
}

/**
 * The circles of a graph: its strongly connected components of more than one file, and files
 * that import themselves (Tarjan's algorithm), each as paths relative to `root`, sorted.
 */
export function circles(graph: Map<string, string[]>, root: string): string[][] {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (node: string): void => {
    index.set(node, counter)
    low.set(node, counter)
    counter++
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!))
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) {
        found.push(component.map((path) => relative(root, path)).sort())
      }
    }
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return found
}

/** Lines of a text as `wc -l` counts them for a file that ends with a newline. */
export function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
}

/** The files under `dir` longer than `limit` lines, as `path: lines`, paths relative to `root`. */
export function longFiles(dir: string, root: string, limit: number): Map<string, number> {
  const out = new Map<string, number>()
  for (const file of tsFiles(dir)) {
    const lines = lineCount(readFileSync(file, 'utf8'))
    if (lines > limit) out.set(relative(root, file), lines)
  }
  return out
}

/**
 * The rows of `lib/` from the bottom up (docs/architecture.md, "Rooms and layers"): a module may
 * import its own row and the rows below it. Each row lists path prefixes relative to `lib/`; the
 * first row whose prefix matches a file places it.
 */
export const LAYERS: ReadonlyArray<{ name: string, paths: readonly string[] }> = [
  { name: 'text', paths: ['text/', 'errors.ts', 'dsh-home.ts'] },
  { name: 'store', paths: ['store/', 'secrets.ts', 'secrets/'] },
  { name: 'recall', paths: ['recall/', 'team/', 'embed/'] },
  { name: 'config', paths: ['config.ts', 'scope-policy.ts', 'embed/from-config.ts'] },
  { name: 'kernel', paths: ['kernel/stages/', 'kernel/scenes/', 'kernel/layers/', 'kernel/host-memory.ts', 'kernel/preset.ts'] },
  { name: 'service', paths: ['service.ts', 'service/'] },
  { name: 'plugin', paths: ['plugin/'] },
  { name: 'entries', paths: ['index.ts', 'kernel/index.ts', 'kernel/compaction.ts', 'cli/', 'serve/'] },
]

/** The row of a file under `lib/` (its path relative to `lib/`), or -1 when no row names it. */
export function layerOf(path: string): number {
  let found = -1
  let longest = -1
  LAYERS.forEach((layer, i) => {
    for (const prefix of layer.paths) {
      const hit = prefix.endsWith('/') ? path.startsWith(prefix) : path === prefix
      if (hit && prefix.length > longest) { found = i; longest = prefix.length }
    }
  })
  return found
}

/** Imports in `graph` (files under `lib`) that point to a higher row, as `from → to`, paths relative to `lib`. */
export function upwardImports(graph: Map<string, string[]>, lib: string): string[] {
  const out: string[] = []
  for (const [from, tos] of graph) {
    for (const to of tos) {
      const [a, b] = [relative(lib, from), relative(lib, to)]
      if (layerOf(b) > layerOf(a)) out.push(`${a} → ${b}`)
    }
  }
  return out.sort()
}
