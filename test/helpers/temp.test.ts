import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import t from 'tap'

const TEMP = new URL('./temp.ts', import.meta.url).pathname

t.test('a tempDir is gone once its process exits', async (t) => {
  const script = `import { tempDir } from ${JSON.stringify(TEMP)}; import { writeFileSync } from 'node:fs'; const d = tempDir('stablemem-tempcheck'); writeFileSync(d + '/x.db', 'x'); console.log(d)`
  const dir = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).trim()
  t.match(dir, /stablemem-tempcheck-/)
  t.notOk(existsSync(dir), `${dir} removed`)
})
