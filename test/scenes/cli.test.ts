/** `stablemem scenes`: list and show, lines and JSON, through the real command in a child process. */
import { join } from 'node:path'
import t from 'tap'
import { runCli } from '../helpers/cli.ts'
import { tempDir } from '../helpers/temp.ts'

t.test('scenes list and show, with any spelling of the key; a missing scene exits 1', async (t) => {
  const db = join(tempDir('stablemem-scenes-cli'), 'm.db')
  t.equal((await runCli(['commit', '回这个群的消息不要用 Markdown', '--scene', 'Chan:QQ/Group:G1', '--db', db])).code, 0)
  const list = await runCli(['scenes', '--db', db])
  t.match(list.stdout, /^chan:qq\/group:g1 {2}declared, strength 1, 1 note {2}\[group:g1 1, chan:qq 1\]\n$/)
  const show = await runCli(['scenes', 'show', 'CHAN:qq/group:G1', '--db', db, '--json'])
  t.match(JSON.parse(show.stdout), { key: 'chan:qq/group:g1', refs: 1, notes: [{ text: '回这个群的消息不要用 Markdown', weight: 1 }] })
  const missing = await runCli(['scenes', 'show', 'chan:web', '--db', db])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /no scene chan:web/)
  t.equal((await runCli(['scenes', 'drop', '--db', db])).code, 2)
})
