/**
 * The `stablemem` command with scopes, run as a real child process on a real store file: commit
 * into a workspace (a relative `--workspace` is from the shell's directory), recall per view,
 * move notes, count by scope, and refuse unknown scope names with exit code 2.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/temp.ts'

t.test('commit, recall, scope and stats --by-scope', async (t) => {
  const root = realpathSync(tempDir('stablemem-cli-scopes'))
  const A = join(root, 'a')
  const B = join(root, 'b')
  mkdirSync(A)
  mkdirSync(B)
  const db = join(root, 'memory.db')
  const json = async (args: string[], cwd?: string) => {
    const r = await runCli([...args, '--db', db, '--json'], { cwd })
    t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
    return JSON.parse(r.stdout)
  }
  const { id } = await json(['commit', 'billing 服务端口 8499', '--workspace', '.'], A)
  await json(['commit', 'billing 服务端口 8499', '--workspace', B])
  await json(['commit', '我的时区是上海'])
  t.same(await json(['scope', 'show', id]), [{ id, scopes: [`workspace:${A}`, `workspace:${B}`] }], 'one block, two workspaces')
  t.same((await json(['recall', 'billing 端口'])).hits.length, 0, 'default view: global notes only')
  t.same((await json(['recall', 'billing 端口', '--workspace', A])).hits.map((h: { id: string }) => h.id), [id])
  t.same((await json(['recall', 'billing 端口', '--all'])).hits.map((h: { id: string }) => h.id), [id])
  t.match(await json(['stats', '--by-scope']), { blocks: 2, byScope: [{ scope: 'global', notes: 1 }, { scope: `workspace:${A}`, notes: 1 }, { scope: `workspace:${B}`, notes: 1 }] })

  t.match(await json(['scope', 'remove', id, 'workspace', A]), { changed: 1 })
  const last = await runCli(['scope', 'remove', id, 'workspace', B, '--db', db])
  t.equal(last.code, 1)
  t.match(last.stderr, /belongs only to workspace:.*delete it instead/)
  t.match(await json(['scope', 'set', id, 'global']), { scope: 'global', changed: 1 })
  t.same((await json(['recall', 'billing 端口'])).hits.map((h: { id: string }) => h.id), [id], 'moved to global')
  const text = await runCli(['stats', '--by-scope', '--db', db])
  t.match(text.stdout, /notes by scope:\n\s+2 {2}global\n/)
  const get = await runCli(['get', id, '--db', db])
  t.match(get.stdout, /scopes: {3}global\n/)

  for (const [args, message] of [
    [['commit', 'x', '--scope', 'team'], /--scope must be one of global, workspace, preset/],
    [['scope', 'set', id, 'team'], /unknown scope "team"/],
    [['scope', 'set', id, 'workspace'], /workspace needs a value/],
    [['scope', 'move', id, 'global'], /unknown action "move"/],
    [['recall', 'x', '--all', '--workspace', A], /--all cannot be combined/],
  ] as const) {
    const r = await runCli([...args, '--db', db])
    t.equal(r.code, 2, `${args.join(' ')} is a usage error`)
    t.match(r.stderr, message)
  }
  const missing = await runCli(['commit', 'x', '--workspace', join(root, 'nope'), '--db', db])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /workspace: ".*nope" does not exist/)
})
