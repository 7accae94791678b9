/**
 * The README is the test: the install block and the "later session" block of README.md's
 * Install section (between the `install:start`/`install:end` and `install-next:*` markers; the
 * Chinese README must hold the same blocks) run literally, line by line, in one bash, in a fresh
 * home: HOME (so `~` and the default `~/.dsh`) is a temp folder, PATH holds only a Node 24 and the
 * system folders (npm, npx), DEEPSEEK_API_KEY is a fake key and DEEPSEEK_BASE_URL points at a
 * DeepSeek-compatible server on 127.0.0.1 that scripts the model.
 *
 * One substitution, because this package is not on the registry: every shell word that is
 * exactly the package name `dsh-stablemem` (the package spec of `npx -p …` and
 * `dsh plugin … add …`) is replaced by the path of this package packed with `npm pack`. Nothing
 * else is changed. The npm cache is the one this machine already has (npm_config_cache), so the
 * pinned dsh packages come from it, and the machine's certificate and proxy variables are passed
 * through; the run removes its own npx entry afterwards.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { wireRecalledNotes } from '../test/helpers/fake-deepseek.ts'
import { tempDir } from '../test/helpers/temp.ts'
import { PACKAGE_ROOT, packThisPackage } from './dsh-cli.ts'
import { isConversation, run, startMemoryModel } from './memory-model.ts'

/** The shell lines of the fenced block between `<!-- name:start -->` and `<!-- name:end -->`. */
export function readmeBlock(markdown: string, name: string): string[] {
  const match = new RegExp(`<!-- ${name}:start -->\\n\`\`\`sh\\n([\\s\\S]*?)\`\`\`\\n<!-- ${name}:end -->`).exec(markdown)
  if (match === null) throw new Error(`README has no ${name} block`)
  return match[1]!.split('\n').filter((line) => line.trim() !== '' && !line.trim().startsWith('#'))
}

/** Replaces every shell word that is exactly `word` (space-delimited, unquoted) with `by`. */
function substituteWord(line: string, word: string, by: string): string {
  return line.split(' ').map((part) => part === word ? by : part).join(' ')
}

const README = readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8')
const README_ZH = readFileSync(join(PACKAGE_ROOT, 'README.zh.md'), 'utf8')

t.test('both READMEs give the same install commands, at most three', async (t) => {
  for (const block of ['install', 'install-next']) t.same(readmeBlock(README_ZH, block), readmeBlock(README, block), block)
  t.ok(readmeBlock(README, 'install').length <= 3, 'three commands at most')
  t.notOk(readmeBlock(README, 'install').some((line) => /\.ya?ml\b|cordis\.patch/.test(line)), 'no YAML in the install')
})

t.test('the README install section, run literally: session 1 saves a fact, session 2 gets it', async (t) => {
  const install = readmeBlock(README, 'install')
  const later = readmeBlock(README, 'install-next')
  const fact = /"记住：([^"]+)"/.exec(install.join('\n'))?.[1]
  t.ok(fact, 'the install block saves a fact')

  const work = realpathSync(tempDir('stablemem-readme'))
  const tarball = packThisPackage(work)
  const home = join(work, 'home')
  const userBin = join(work, 'user-bin')
  mkdirSync(home)
  mkdirSync(userBin)
  // The user's Node (>= 22.19): this project's Node 24, alone, so nothing else of the project is on PATH.
  symlinkSync(process.execPath, join(userBin, 'node'))
  const npmCache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim()
  const server = await startMemoryModel()
  t.teardown(() => server.close())
  t.teardown(() => removeNpxEntry(npmCache, tarball))
  const env: NodeJS.ProcessEnv = {
    PATH: [userBin, '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
    HOME: home,
    TMPDIR: work,
    LANG: 'C.UTF-8',
    DEEPSEEK_API_KEY: 'sk-readme-e2e-fake',
    DEEPSEEK_BASE_URL: server.baseURL,
    npm_config_cache: npmCache,
    npm_config_update_notifier: 'false',
    // How this machine reaches the registry (certificates, proxies) is the machine's, not the README's.
    ...Object.fromEntries(Object.entries(process.env).filter(([key]) => /^(NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR)|https?_proxy|no_proxy|npm_config_(cafile|registry|proxy|https_proxy))$/i.test(key))),
  }

  const literal = (lines: string[]) => ['set -eu', ...lines.map((line) => substituteWord(line, 'dsh-stablemem', tarball))].join('\n')
  const script = literal(install)
  t.equal(script.split(tarball).length - 1, 2, 'the package spec was substituted twice (npx -p, dsh plugin add), nothing else')
  t.comment(script)
  const first = await run('bash', ['-c', script], env, home, 25 * 60_000)
  t.equal(first.code, 0, `install block: ${first.stderr.slice(-4000)}`)
  t.ok(existsSync(join(home, '.local', 'dsh', 'bin', 'dsh')), 'the launcher is where the README says')
  t.ok(existsSync(join(home, '.dsh', 'stablemem', 'memory.db')), 'the default store under ~/.dsh')
  t.ok(server.requests.some((r) => r.body.messages.some((m) => m.role === 'tool' && /Saved to long-term memory as blk_/.test(m.content ?? ''))), 'session 1 saved the fact with the tool')

  const before = server.requests.length
  const second = await run('bash', ['-c', literal(later)], env, home)
  t.equal(second.code, 0, `later session: ${second.stderr.slice(-4000)}`)
  const request = server.requests.slice(before).find(isConversation)
  t.ok(request, 'the later session asked the model')
  t.same(wireRecalledNotes(request!), [fact], 'session 2 got the fact in the model\'s request')
  t.match(second.stdout, /根据长期记忆：billing 服务端口 8499/)
})

/** Removes the npx install of `tarball` from the npm cache (npx keys its installs by the spec). */
function removeNpxEntry(cache: string, tarball: string): void {
  const npx = join(cache, '_npx')
  if (!existsSync(npx)) return
  for (const entry of readdirSync(npx)) {
    const manifest = join(npx, entry, 'package.json')
    if (existsSync(manifest) && readFileSync(manifest, 'utf8').includes(tarball)) rmSync(join(npx, entry), { recursive: true, force: true })
  }
}
