/**
 * Every benchmark a user or CI runs is an `npm run bench:*` script whose file exists, and answers
 * `--help` with its usage (naming the script and `--json`) and exit code 0, before it builds or
 * measures anything; so does every `eval:*` script (the eval-set converters).
 */
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import t from 'tap'

const root = new URL('../../', import.meta.url)
const scripts = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> }).scripts
const benches = Object.entries(scripts).filter(([name]) => name.startsWith('bench:'))
const converters = Object.entries(scripts).filter(([name]) => name.startsWith('eval:'))

t.ok(benches.length >= 15, 'the benches are npm scripts')
t.ok(converters.length >= 1, 'the eval-set converters are npm scripts')

for (const [name, command] of [...benches, ...converters]) {
  t.test(name, async (t) => {
    const match = /^node (bench\/[\w/-]+\.ts)$/.exec(command)
    t.ok(match, `${name} runs one bench file with node`)
    if (!match) return
    const file = new URL(match[1]!, root)
    t.ok(existsSync(file), `${match[1]} exists`)
    const { stdout } = await promisify(execFile)(process.execPath, [file.pathname, '--help'], { cwd: root.pathname, timeout: 60_000 })
    t.match(stdout, name, 'the usage names the script')
    t.match(stdout, '--json', 'the usage offers --json')
  })
}
