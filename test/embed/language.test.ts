import t from 'tap'
import { languageDeclared, textLanguage } from '../../lib/embed/language.ts'
import { resolveConfig } from '../../lib/config.ts'
import { boot, tempStorePath } from '../helpers/harness.ts'

t.test('script-based language of queries and notes', (t) => {
  t.equal(textLanguage('Which port does the billing service use?'), 'en')
  t.equal(textLanguage('服务器的公网地址是多少？'), 'zh')
  t.equal(textLanguage('我们用 SQLite 存长期记忆'), 'zh', 'a Chinese sentence naming SQLite stays Chinese')
  t.equal(textLanguage('The word for port is 端口 in Chinese, as my colleague explained yesterday'), 'en', 'an English sentence quoting one Chinese word stays English')
  t.equal(textLanguage('サーバーのポートは何番ですか'), 'ja')
  t.equal(textLanguage('서버 포트는 몇 번입니까'), 'ko')
  t.equal(textLanguage('8080 10.3.7.9'), 'und')
  t.ok(languageDeclared('8080', ['en']), 'no letters: never gated')
  t.notOk(languageDeclared('服务器端口', ['en']))
  t.ok(languageDeclared('服务器端口', ['en', 'zh']))
  t.end()
})

t.test('a broken embed configuration disables vectors visibly, never the plugin', async (t) => {
  const embed = { ...resolveConfig().embed, baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKeyEnv: 'STABLEMEM_UNSET_KEY_FOR_TEST' }
  const h = await boot({ path: tempStorePath(), embed })
  t.teardown(() => h.dispose())
  await h.ctx.stablemem.commit({ text: 'The billing service listens on port 8499.' })
  const hits = await h.ctx.stablemem.recall('billing service port')
  t.equal(hits.length, 1, 'lexical recall works')
  const stats = await h.ctx.stablemem.stats()
  t.match(stats.vectors?.error, /STABLEMEM_UNSET_KEY_FOR_TEST/, 'the reason is in stats')
  t.equal(stats.recallDegraded.no_embedder, 1)
})
