/**
 * `npm run eval:madial -- --source <MADial-Bench checkout or git dir> --lang zh|en (--out <dir> | --check <dir>) [--json]`
 *
 * Builds the development half of MADial-Bench (hejunqing/MADial-Bench, MIT; user 1) in the shared
 * eval format (`eval-set.ts`): `madial-zh-dev` from the Chinese files, `madial-en-dev` from the
 * English ones (the same dialogues and memories). The rule is the one that made the shared
 * `madial-zh-dev`, which `--check` proves byte for byte:
 *
 * - corpus: the memories of user 1 (the user of a memory comes from the Chinese memory file; the
 *   English one does not carry it, and the ids are the same), in file order, one block each:
 *   `m<id>`, the event as text, session and scope `user1`, its time, scene and emotion; an English
 *   memory with no English text is left out;
 * - queries: each dialogue of user 1, in file order, `madial-<lang>-<its index in the file>`: the
 *   lines before its first test turn (without `<BOD>`) as `Speaker: text`, gold its relevant
 *   memories in the corpus, category the scene of the first of them; a dialogue with no gold left
 *   is left out. A few English lines lost their `<Speaker>:` label: the speakers alternate, so such
 *   a line is the assistant's after the user's and the user's after the assistant's.
 *
 * User 2 (the held-out half) is never written. The data stays outside the repository.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { jsonWanted } from '../args.ts'

/** The user whose memories and dialogues make the development half. */
const DEV_USER = 1

const FILES = {
  zh: { dialogue: 'data/ch/MADial-Bench-zh-dialogue.json', memory: 'data/ch/MADial-Bench-zh-memory.json' },
  en: { dialogue: 'data/en/MADial-Bench-en-dialogue.json', memory: 'data/en/MADial-Bench-en-memory.json' },
} as const

type Lang = keyof typeof FILES

interface Memory {
  time: string
  scene: string
  emotion: string
  event: string
  'user-id'?: number
}

interface Dialogue {
  dialogue: string[]
  'test-turn': number[]
  'relevant-id': number[]
  'user-id': number
}

/** One converted set: the two JSONL files' text and their counts. */
export interface MadialSet {
  corpus: string
  queries: string
  meta: Record<string, unknown>
}

/** Reads one file of the source: from a checkout's work tree, else from a git directory's HEAD. */
export function sourceReader(source: string): (path: string) => string {
  if (!existsSync(source) || !statSync(source).isDirectory()) throw new Error(`--source ${source}: not a directory`)
  return (path) => {
    const file = join(source, path)
    if (existsSync(file)) return readFileSync(file, 'utf8')
    try {
      return execFileSync('git', ['--git-dir', source, 'show', `HEAD:${path}`], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] })
    } catch {
      throw new Error(`--source ${source}: no ${path} (neither a MADial-Bench checkout nor its git directory)`)
    }
  }
}

/** One JSON value per line (the source's files are JSON Lines). */
function jsonLines<T>(text: string, path: string): T[] {
  return text.split('\n').filter((line) => line.trim() !== '').map((line, i) => {
    try {
      return JSON.parse(line) as T
    } catch {
      throw new Error(`${path}: line ${i + 1} is not JSON`)
    }
  })
}

/** The memories of a memory file, by id, in file order (each line is `{ "<id>": { … } }`). */
function memories(text: string, path: string): Map<string, Memory> {
  const out = new Map<string, Memory>()
  for (const line of jsonLines<Record<string, Memory>>(text, path)) for (const [id, memory] of Object.entries(line)) out.set(id, memory)
  return out
}

/** The dialogue before its first test turn as `Speaker: text` lines (see the module comment). */
export function chatBefore(dialogue: Dialogue): string {
  const lines: string[] = []
  let previous: string | undefined
  let user: string | undefined
  for (const raw of dialogue.dialogue.slice(1, dialogue['test-turn'][0])) {
    const line = raw.trim()
    const labelled = /^<([^>]+)>:\s*([\s\S]*)$/.exec(line)
    let speaker: string
    let text: string
    if (labelled) {
      speaker = labelled[1]!
      text = labelled[2]!
      if (speaker !== 'Assistant') user = speaker
    } else {
      speaker = previous !== 'Assistant' ? 'Assistant' : user ?? 'User'
      text = line.replace(/^<+/, '')
      if (!text.startsWith('"')) text = `"${text}"`
    }
    lines.push(`${speaker}: ${text}`)
    previous = speaker
  }
  return lines.join('\n')
}

/** A flat record as Python's `json.dumps(…, ensure_ascii=False)` writes it (how the shared sets were written). */
function pyJson(record: Record<string, string | readonly string[]>): string {
  const value = (v: string | readonly string[]) => (typeof v === 'string' ? JSON.stringify(v) : `[${v.map((s) => JSON.stringify(s)).join(', ')}]`)
  return `{${Object.entries(record).map(([k, v]) => `${JSON.stringify(k)}: ${value(v)}`).join(', ')}}`
}

/** Converts the development half of one language (see the module comment). */
export function convertMadial(read: (path: string) => string, lang: Lang): MadialSet {
  const users = memories(read(FILES.zh.memory), FILES.zh.memory)
  const own = lang === 'zh' ? users : memories(read(FILES[lang].memory), FILES[lang].memory)
  const corpus: string[] = []
  const held = new Map<string, Memory>()
  for (const [id, zh] of users) {
    const memory = own.get(id)
    if (zh['user-id'] !== DEV_USER || memory === undefined || typeof memory.event !== 'string') continue
    held.set(id, memory)
    corpus.push(pyJson({ id: `m${id}`, text: memory.event, session: `user${DEV_USER}`, time: memory.time, scope: `user${DEV_USER}`, scene: memory.scene, emotion: memory.emotion }))
  }
  const queries: string[] = []
  const dialogues = jsonLines<Dialogue>(read(FILES[lang].dialogue), FILES[lang].dialogue)
  dialogues.forEach((dialogue, index) => {
    if (dialogue['user-id'] !== DEV_USER) return
    const gold = dialogue['relevant-id'].map(String).filter((id) => held.has(id))
    if (gold.length === 0) return
    queries.push(pyJson({ qid: `madial-${lang}-${index}`, query: chatBefore(dialogue), gold: gold.map((id) => `m${id}`), category: held.get(gold[0]!)!.scene, scope: `user${DEV_USER}` }))
  })
  return {
    corpus: `${corpus.join('\n')}\n`,
    queries: `${queries.join('\n')}\n`,
    meta: { language: lang, name: `madial-${lang}`, n_corpus: corpus.length, n_queries: queries.length, n_scopes: 1, source: `hejunqing/MADial-Bench (MIT), user ${DEV_USER}: converted by bench/recall/madial-convert.ts` },
  }
}

/** The first line where `made` and the file at `path` differ, or undefined when they are the same bytes. */
export function firstDifference(made: string, path: string): string | undefined {
  if (!existsSync(path)) return `${path}: missing`
  const have = readFileSync(path, 'utf8')
  if (have === made) return undefined
  const a = made.split('\n')
  const b = have.split('\n')
  const line = a.findIndex((l, i) => l !== b[i])
  const at = line < 0 ? a.length : line
  return `${path}: line ${at + 1} differs\n  made: ${(a[at] ?? '(end)').slice(0, 160)}\n  file: ${(b[at] ?? '(end)').slice(0, 160)}`
}

const USAGE = `usage: eval:madial -- --source <MADial-Bench checkout or git dir> --lang zh|en (--out <dir> | --check <dir>) [--json]
Writes the development half of MADial-Bench (user 1) as an eval set: <dir>/corpus.jsonl, queries.jsonl, meta.json.
--check <dir>: writes nothing; compares corpus.jsonl and queries.jsonl with the set in <dir> byte for byte
(the shared madial-zh-dev: --lang zh --check <shared>/eval/madial-zh-dev), exit code 1 on a difference.
--json: one JSON line (counts, and the check's result) on stdout.`

function main(argv: readonly string[]): void {
  const args = { source: '', lang: '', out: '', check: '', json: false, help: false }
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!
    const value = () => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${flag} needs a value`)
      return v
    }
    if (flag === '--source') args.source = value()
    else if (flag === '--lang') args.lang = value()
    else if (flag === '--out') args.out = value()
    else if (flag === '--check') args.check = value()
    else if (flag === '--json') args.json = true
    else if (flag === '--help' || flag === '-h') args.help = true
    else throw new Error(`unknown option ${flag}\n${USAGE}`)
  }
  if (args.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (args.lang !== 'zh' && args.lang !== 'en') throw new Error(`--lang must be zh or en\n${USAGE}`)
  if (args.source === '' || (args.out === '') === (args.check === '')) throw new Error(`--source and one of --out, --check are needed\n${USAGE}`)
  const set = convertMadial(sourceReader(args.source), args.lang)
  const json = jsonWanted(args.json)
  const summary: Record<string, unknown> = { lang: args.lang, corpus: set.meta.n_corpus, queries: set.meta.n_queries }
  if (args.check !== '') {
    const differences = [firstDifference(set.corpus, join(args.check, 'corpus.jsonl')), firstDifference(set.queries, join(args.check, 'queries.jsonl'))].filter((d) => d !== undefined)
    summary.check = args.check
    summary.identical = differences.length === 0
    process.stderr.write(differences.length === 0 ? `same bytes as ${args.check}: ${set.meta.n_corpus} memories, ${set.meta.n_queries} queries\n` : `${differences.join('\n')}\n`)
    if (differences.length > 0) process.exitCode = 1
  } else {
    mkdirSync(args.out, { recursive: true })
    writeFileSync(join(args.out, 'corpus.jsonl'), set.corpus)
    writeFileSync(join(args.out, 'queries.jsonl'), set.queries)
    writeFileSync(join(args.out, 'meta.json'), `${JSON.stringify(set.meta, null, 1)}\n`)
    summary.out = args.out
    process.stderr.write(`wrote ${args.out}: ${set.meta.n_corpus} memories, ${set.meta.n_queries} queries\n`)
  }
  if (json) process.stdout.write(`${JSON.stringify(summary)}\n`)
}

if (import.meta.main) {
  try {
    main(process.argv.slice(2))
  } catch (error) {
    process.stderr.write(`eval:madial: ${(error as Error).message}\n`)
    process.exitCode = 1
  }
}
