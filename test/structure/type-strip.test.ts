/**
 * The suite runs on Node's own type stripping, never on tap's ts-node loader. package.json's tap
 * settings leave out `@tapjs/typescript`, but tap rebuilds its plugin set only while a run starts,
 * after the runner has read the old set: the first run after `npm ci` (every clean-clone CI run)
 * still starts each test file with `@tapjs/typescript/import`, which loads ts-node unless
 * `TAP_TYPE_STRIP_ONLY=1`. Under ts-node every test process paid about 2.5 s more CPU (loading
 * TypeScript and compiling each `.ts` module), about 400 s of the suite's 1,150 s on a clean clone.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
/** Where ts-node keeps its instance once registered (`REGISTER_INSTANCE` in ts-node). */
const TS_NODE = Symbol.for('ts-node.register.instance')

/** Whether a Node process started with tap's typescript import has ts-node registered. */
function tsNodeWith(env: NodeJS.ProcessEnv): boolean {
  const out = execFileSync(process.execPath, [`--import=${import.meta.resolve('@tapjs/typescript/import')}`, '-e',
    `console.log(process[Symbol.for('ts-node.register.instance')] !== undefined)`], { env, encoding: 'utf8' })
  return out.trim() === 'true'
}

t.test('npm test and npm run test:e2e set TAP_TYPE_STRIP_ONLY=1; the tap settings leave out @tapjs/typescript', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string>, tap: { plugin: string[] } }
  for (const script of ['test', 'test:e2e']) t.match(pkg.scripts[script], /(^| )TAP_TYPE_STRIP_ONLY=1 tap( |$)/, script)
  t.ok(pkg.tap.plugin.includes('!@tapjs/typescript'))
})

t.test("tap's typescript import registers ts-node without the variable and nothing with it", async (t) => {
  const { TAP_TYPE_STRIP_ONLY: _, ...without } = process.env
  t.equal(tsNodeWith(without), true, 'the check sees ts-node')
  t.equal(tsNodeWith({ ...without, TAP_TYPE_STRIP_ONLY: '1' }), false)
})

/** Started by `npx tap` on the first run after an install, without the variable (only npm test sets it). */
const unfixedFirstRun = process.execArgv.some((arg) => arg.includes('@tapjs/typescript')) && process.env.TAP_TYPE_STRIP_ONLY !== '1'

t.test('this test process runs without ts-node', { skip: unfixedFirstRun && 'npx tap on the first run after an install (npm test sets TAP_TYPE_STRIP_ONLY=1)' }, async (t) => {
  t.equal((process as unknown as Record<symbol, unknown>)[TS_NODE], undefined)
})
