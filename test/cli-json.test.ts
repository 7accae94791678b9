/** `--json` carries everything the human output says. */
import { join } from 'node:path'
import t from 'tap'
import { runCli } from './helpers/cli.ts'
import { tempDir } from './helpers/temp.ts'

t.test('recall --json carries abstentions and typo neighbours; commit --json and its lines carry masks', async (t) => {
  const db = join(tempDir('stablemem-cli'), 'm.db')
  t.equal((await runCli(['commit', 'billing 服务端口 8499，部署在 10.3.7.9', '--db', db])).code, 0)
  const typoHuman = await runCli(['recall', '8494 是哪个服务的端口？', '--db', db])
  t.equal(typoHuman.stdout, 'no record of 8494 (recall abstains)\none typo away, the store holds: 8499\n')
  const typoJson = JSON.parse((await runCli(['recall', '8494 是哪个服务的端口？', '--db', db, '--json'])).stdout) as unknown
  t.match(typoJson, { hits: [], abstained: { missing: ['8494'], near: ['8499'] } })
  t.same(JSON.parse((await runCli(['recall', 'zebra', '--db', db, '--json'])).stdout), { hits: [] }, 'no abstained key when nothing matched')
  const secret = await runCli(['commit', 'billing token sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD', '--db', db])
  t.match(secret.stdout, /^saved blk_[0-9a-f]{24}\nmasked before saving: .+\n$/, 'the human output says what was masked')
  const secretJson = JSON.parse((await runCli(['commit', 'gateway token sk-abcdefghijklmnopqrstuvwxyz0123456789ABCE', '--db', db, '--json'])).stdout) as unknown
  t.match(secretJson, { created: true, redacted: [String] }, 'and so does --json')

})
