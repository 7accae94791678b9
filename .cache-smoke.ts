import { startTeamDb } from './test/team/setup.ts'
import { boot, injected, reply, textOf, toolCall, tempStorePath } from './test/helpers/harness.ts'
const db = await startTeamDb()
try {
  const a = await db.role('team_a', 'alpha')
  const h = await boot({ path: tempStorePath(), team: a.config('alice') as never }, [])
  await h.ctx.stablemem.teamReady()
  console.log((await h.ctx.stablemem.stats()).team)
  h.script(toolCall('c1', 'stablemem_commit', { text: 'billing 服务端口 8499', shared: true, scope: 'global' }), reply('ok'))
  await h.turn('记住 billing 端口 8499，分享给团队')
  console.log(h.errors)
  const h2 = await boot({ path: tempStorePath(), team: a.config('bob') as never }, [])
  await h2.ctx.stablemem.teamReady()
  await h2.ctx.stablemem.commit({ text: 'nginx 配置在 /etc/nginx/nginx.conf', scope: 'global' })
  h2.script(reply('ok'))
  await h2.turn('billing 服务端口是多少？')
  console.log(injected(h2.adapter.requests.at(-1)!).map(textOf))
  console.log(await h2.ctx.stablemem.recall('8499'), (await h2.ctx.stablemem.stats()).team)
  await h.dispose(); await h2.dispose()
} finally { await db.stop() }
