/**
 * The layout rules of issue 32, checked on the source itself: no import circle among the modules
 * of `lib/` and `bench/` (type-only imports count: a type circle ties two modules together just
 * the same), no import in `lib/` pointing up the rows of docs/architecture.md (plugin → service →
 * kernel → config → recall → store → text), and no file in `lib/` above 450 lines. Each check is
 * shown to fail: on a fixture, or on a copy of `lib/` with one edit (`test/helpers/mutant.ts`).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { mutant } from '../helpers/mutant.ts'
import { tempDir } from '../helpers/temp.ts'
import { circles, importGraph, layerOf, longFiles, tsFiles, upwardImports } from './imports.ts'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** Most lines a file in `lib/` may have. */
const LIMIT = 450

/** Files allowed above the limit, with the reason (none today; an entry that no longer exceeds it fails). */
const EXCEPTIONS: ReadonlyMap<string, string> = new Map([])

/** The circles among the `.ts` files under the given folders of `base`. */
function circlesUnder(base: string, ...dirs: string[]): string[][] {
  return circles(importGraph(dirs.flatMap((dir) => tsFiles(join(base, dir)))), base)
}

t.test('no import circle in lib/ and bench/', async (t) => {
  t.same(circlesUnder(root, 'lib', 'bench'), [])
})

t.test('the circle check finds a circle: type-only, through three files, a self-import; none in a chain', async (t) => {
  const dir = tempDir('layout-circles')
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  write('src/a.ts', "import type { B } from './b.ts'\nexport interface A { b?: B }\n")
  write('src/b.ts', "import type { A } from './a.ts'\nexport interface B { a?: A }\n")
  write('src/c.ts', "import {\n  d,\n} from './sub/d.ts'\nexport const c = d\n")
  write('src/sub/d.ts', "export { e as d } from '../e.ts'\n")
  write('src/e.ts', "import { c } from './c.ts'\nexport const e = 1\nexport const f = () => c\n")
  write('src/self.ts', "import './self.ts'\n")
  write('src/chain.ts', "import { e } from './e.ts'\nimport { readFileSync } from 'node:fs'\nexport const g = [e, readFileSync]\n")
  t.same(circlesUnder(dir, 'src'), [
    ['src/a.ts', 'src/b.ts'],
    ['src/c.ts', 'src/e.ts', 'src/sub/d.ts'],
    ['src/self.ts'],
  ])
})

t.test('mutation: one import that closes a circle in a copy of lib/ turns the check red', async (t) => {
  const m = mutant({
    file: 'recall/types.ts',
    from: '/** One recalled block as callers see it. */',
    to: "import type { MENTIONED_WORDS } from './abstain.ts'\n/** One recalled block as callers see it. */",
  })
  t.teardown(() => m.remove())
  t.same(circlesUnder(m.dir, 'lib'), [['lib/recall/abstain.ts', 'lib/recall/types.ts']])
})

t.test('every file of lib/ has a row, and no import points up the rows', async (t) => {
  const lib = join(root, 'lib')
  const files = tsFiles(lib)
  t.same(files.map((f) => f.slice(lib.length + 1)).filter((f) => layerOf(f) < 0), [], 'a new room needs its row in imports.ts')
  t.same(upwardImports(importGraph(files), lib), [])
})

t.test('mutation: the kernel importing the service class again is found', async (t) => {
  const m = mutant({
    file: 'kernel/layers/heartbeat.ts',
    from: "import type { KernelMemory } from '../host-memory.ts'",
    to: "import type { KernelMemory } from '../host-memory.ts'\nimport type { StableMem } from '../../service.ts'\nexport type Host = StableMem",
  })
  t.teardown(() => m.remove())
  const lib = join(m.dir, 'lib')
  t.same(upwardImports(importGraph(tsFiles(lib)), lib), ['kernel/layers/heartbeat.ts → service.ts'])
})

t.test(`no file in lib/ above ${LIMIT} lines, but the listed exceptions`, async (t) => {
  const long = longFiles(join(root, 'lib'), root, LIMIT)
  for (const [path, lines] of long) t.ok(EXCEPTIONS.has(path), `${path} has ${lines} lines (at most ${LIMIT}); split it by concern`)
  for (const [path, why] of EXCEPTIONS) t.ok(long.has(path), `${path} is within ${LIMIT} lines now: remove its exception (${why})`)
})

t.test('the line check finds a long file', async (t) => {
  const dir = tempDir('layout-lines')
  mkdirSync(join(dir, 'lib', 'sub'), { recursive: true })
  writeFileSync(join(dir, 'lib', 'short.ts'), 'export const a = 1\n'.repeat(LIMIT))
  writeFileSync(join(dir, 'lib', 'sub', 'long.ts'), 'export const a = 1\n'.repeat(LIMIT) + 'export const b = 2')
  t.same([...longFiles(join(dir, 'lib'), dir, LIMIT)], [['lib/sub/long.ts', LIMIT + 1]])
})
