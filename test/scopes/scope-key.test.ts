/**
 * Scope keys and workspace paths: one spelling per workspace (absolute, `..` resolved, symbolic
 * links resolved where the path exists), aliases followed to their end, and every bad input
 * refused with the field named.
 */
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { checkScopeKey, normaliseWorkspace, presetScope, resolveAliases } from '../../lib/store/scope-key.ts'
import { ScopePolicy } from '../../lib/scope-policy.ts'
import { mutant } from '../helpers/mutant.ts'
import { refusal } from '../helpers/refusal.ts'
import { tempDir } from '../helpers/temp.ts'

const root = realpathSync(tempDir('stablemem-scope-key'))
const A = join(root, 'a')
mkdirSync(join(A, 'deep'), { recursive: true })
symlinkSync(A, join(root, 'link'))
writeFileSync(join(root, 'file'), 'x')

t.test('workspace paths are normalised to one spelling', async (t) => {
  t.equal(normaliseWorkspace(A), A)
  t.equal(normaliseWorkspace(`${A}/`), A, 'trailing separator')
  t.equal(normaliseWorkspace(join(A, 'deep', '..', '.')), A, '.. and .')
  t.equal(normaliseWorkspace(join(root, 'link')), A, 'symbolic link')
  t.equal(normaliseWorkspace(join(root, 'link', 'deep', '..')), A, 'link and ..')
  t.equal(normaliseWorkspace(join(root, 'gone', '..', 'gone2')), join(root, 'gone2'), 'a path that does not exist is normalised lexically')
})

t.test('bad workspace paths are refused, naming the field', async (t) => {
  t.match(await refusal(() => normaliseWorkspace('project', 'workspace')), { code: 'invalid_input', message: 'workspace: "project" is relative; give an absolute directory' })
  t.match(await refusal(() => normaliseWorkspace('./project')), { code: 'invalid_input', message: /relative/ })
  t.match(await refusal(() => normaliseWorkspace('')), { code: 'invalid_input', message: /non-empty/ })
  t.match(await refusal(() => normaliseWorkspace(42)), { code: 'invalid_input' })
  t.match(await refusal(() => normaliseWorkspace('/a\0b')), { code: 'invalid_input' })
  t.match(await refusal(() => normaliseWorkspace(join(root, 'missing'), 'workspace', { mustExist: true })), { code: 'not_found', message: /does not exist/ })
  t.match(await refusal(() => normaliseWorkspace(join(root, 'file'), 'workspace', { mustExist: true })), { code: 'invalid_input', message: /not a directory/ })
})

t.test('scope keys: only the three forms, normalised', async (t) => {
  t.equal(checkScopeKey('global'), 'global')
  t.equal(checkScopeKey(`workspace:${A}`), `workspace:${A}`)
  t.equal(checkScopeKey('preset:review'), 'preset:review')
  for (const bad of ['Global', 'team', 'workspace:', 'workspace:rel', `workspace:${A}/`, `workspace:${A}/../a`, 'preset:', 'preset:Bad_Id', 42]) {
    t.match(await refusal(() => checkScopeKey(bad)), { code: 'invalid_input' }, `refused: ${JSON.stringify(bad)}`)
  }
  t.match(await refusal(() => presetScope('../x')), { code: 'invalid_input', message: /not an agent preset id/ })
})

t.test('aliases: chains followed, self-maps dropped, cycles refused with the paths', async (t) => {
  const b = join(root, 'b')
  const c = join(root, 'c')
  t.same([...resolveAliases({ [A]: b, [b]: c })], [[A, c], [b, c]], 'a → b → c')
  t.same([...resolveAliases({ [join(root, 'link')]: A })], [], 'a link to its own target is a no-op')
  t.match(await refusal(() => resolveAliases({ [A]: b, [b]: c, [c]: A })), { code: 'invalid_input', message: `scopes.workspaceAliases: alias cycle ${A} → ${b} → ${c} → ${A}` })
  t.match(await refusal(() => resolveAliases({ [A]: 'rel' })), { message: /scopes\.workspaceAliases\[.*\]: "rel" is relative/ })
  const policy = new ScopePolicy({ defaultScope: 'workspace', workspaceAliases: { [join(root, 'link', '..', 'b')]: A }, recallGlobal: true })
  t.equal(policy.workspaceKey(b), `workspace:${A}`, 'an alias key is normalised too')
})

t.test('mutation: without the cycle check an alias cycle loops forever (here: hits the step bound)', async (t) => {
  const m = mutant({ file: 'store/scope-key.ts', from: "      if (seen.includes(at)) throw new StableMemError('invalid_input', `${field}: alias cycle ${[...seen.slice(seen.indexOf(at)), at].join(' → ')}`)\n", to: "      if (seen.length > 1000) throw new Error('unbounded')\n" })
  t.teardown(() => m.remove())
  const { resolveAliases: mutated } = await m.load<typeof import('../../lib/store/scope-key.ts')>('store/scope-key.ts')
  t.throws(() => mutated({ [A]: join(root, 'b'), [join(root, 'b')]: A }), /unbounded/)
})
