/**
 * Which message of a step's batch is the recall query. A real batch is the human question
 * FOLLOWED by injected context, all role `user`, so the query is picked by `source.kind` from an
 * allowlist. Every guard here has a mutation check run against a copy of the real source with
 * that guard removed.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createUserMessage, type Message, type UserMessage } from '@deepseek-ai/dsh-llm'
import t from 'tap'
import { humanMessages } from '../../lib/plugin/query-source.ts'
import { name as pluginName } from '../../lib/index.ts'
import { realBatch } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { declaredSources } from '../helpers/source-kinds.ts'
import { tempDir } from '../helpers/temp.ts'

type Extract = (messages: readonly Message[], allow: ReadonlySet<string>, ownPlugin: string) => string
/** The query as the pre-step takes it: the last human message of the batch (`lib/plugin/pre-step.ts`). */
const queryOf = (human: typeof humanMessages): Extract => (messages, allow, ownPlugin) => human(messages, allow, ownPlugin).at(-1) ?? ''
const queryFromBatch = queryOf(humanMessages)
const DEFAULT_ALLOW: ReadonlySet<string> = new Set(['user'])

/**
 * Source kinds listed in ../shared/research/dsh-contract.md §B. Each must be found by the scan of
 * the installed packages or be listed in NOT_INSTALLED with the package that declares it.
 */
const CONTRACT_KINDS = ['user', 'plugin', 'model', 'tool', 'goal', 'session-reference', 'coordinator', 'subagent-report',
  'subagent-settled', 'agent-instructions', 'skill-catalog', 'skill-invocation']

/** Kinds declared by dsh packages this project does not install (so the scan cannot see them). */
const NOT_INSTALLED: Record<string, string> = {
  'goal': 'dsh-goal',
  'session-reference': 'dsh-session-reference',
  'coordinator': 'dsh-subagent',
  'subagent-report': 'dsh-subagent',
  'subagent-settled': 'dsh-subagent',
  'agent-instructions': 'dsh-agent-instructions',
  'skill-catalog': 'dsh-tool-skill',
  'skill-invocation': 'dsh-skill',
  // Listed by the earlier port's README as declared in its installed harness.
  'runtime-context': 'dsh-agent-loop (later releases)',
  'schedule': 'dsh-schedule',
  'agent-message': 'dsh-subagent',
  'time-context': 'dsh-time-context',
  'tool-goal': 'dsh-tool-goal',
  'tool-jobs': 'dsh-tool-jobs',
  'user-approval': 'dsh-user-approval (later releases)',
  'plan-mode': 'dsh-plan-mode',
  'ptc-mode': 'dsh-tools (later releases)',
}

const scanned = declaredSources()
const scannedKinds = [...new Set(scanned.map((s) => s.kind))].sort()
/** Every kind that is not a human prompt: all must be refused as a query source. */
const INJECTED_KINDS = [...new Set([...scannedKinds, ...CONTRACT_KINDS, ...Object.keys(NOT_INSTALLED)])].filter((k) => k !== 'user').sort()

/** A message of this kind, shaped like its declaration (extra fields where the contract lists them). */
function messageOfKind(kind: string, text: string): UserMessage {
  const extra: Record<string, unknown> = {
    plugin: { plugin: 'some-plugin', form: 'notice', summary: 'x' },
    tool: { callId: 'c1' },
    model: { provider: 'p', model: 'm' },
    'skill-catalog': { form: 'catalog', entries: [] },
    'session-reference': { form: 'recall', version: 1, references: [] },
    'subagent-settled': { form: 'notice', summary: 'done', senderSessionId: 's' },
  }
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind, ...(extra[kind] as object ?? {}) } as never })
}

/** The same batch with `injected` appended after the question, as a real step would. */
function batchWith(question: string, ...injected: Message[]): Message[] {
  return [...realBatch(question), ...injected]
}

/** The seed's regression: "the last role=user message is the query". */
const lastRoleUser: Extract = (messages) => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!
    if (m.role === 'user') return m.content.flatMap((b) => b.type === 'text' ? [b.text] : []).join('\n').trim()
  }
  return ''
}

/** The extraction properties, as one function so every variant runs the very same assertions. */
function extractionFails(extract: Extract): string[] {
  const failures: string[] = []
  const expect = (label: string, got: string, want: string) => { if (got !== want) failures.push(`${label}: got ${JSON.stringify(got.slice(0, 60))}`) }
  expect('real batch', extract(realBatch('billing 服务的端口是多少？'), DEFAULT_ALLOW, pluginName), 'billing 服务的端口是多少？')
  for (const kind of INJECTED_KINDS) {
    expect(`kind ${kind} after the question`, extract(batchWith('question 42', messageOfKind(kind, `INJECTED ${kind}`)), DEFAULT_ALLOW, pluginName), 'question 42')
    expect(`kind ${kind} alone`, extract([messageOfKind(kind, `INJECTED ${kind}`)], DEFAULT_ALLOW, pluginName), '')
  }
  return failures
}

t.test('the scan finds the sources the installed packages declare', async (t) => {
  t.comment(`scanned: ${scanned.map((s) => `${s.kind} (${s.file}, key ${s.key})`).join('; ')}`)
  for (const kind of ['user', 'plugin', 'model', 'tool']) t.ok(scannedKinds.includes(kind), `found ${kind}`)
  for (const kind of CONTRACT_KINDS) {
    t.ok(scannedKinds.includes(kind) || kind in NOT_INSTALLED, `contract kind ${kind} is found or listed explicitly`)
  }
  for (const kind of Object.keys(NOT_INSTALLED)) {
    t.notOk(scannedKinds.includes(kind), `${kind} is listed as not installed and really is not found (else move it)`)
  }
  t.ok(INJECTED_KINDS.length >= 20, `${INJECTED_KINDS.length} injected kinds under test`)
})

t.test('the scanner reads augmentations of MessageSourceMap in other packages', async (t) => {
  const dir = tempDir('stablemem-scan')
  const pkg = join(dir, 'node_modules', '@deepseek-ai', 'dsh-fake', 'lib', 'types')
  mkdirSync(pkg, { recursive: true })
  writeFileSync(join(pkg, 'index.d.ts'), `import type { X } from './x.ts';
declare module '@deepseek-ai/dsh-llm' {
    interface MessageSourceMap {
        /** browser prompts */
        'user-rpc': {
            kind: 'user';
            rpcId: X;
            clientTimeZone?: string;
        };
        'skill-catalog': { kind: 'skill-catalog'; form: 'catalog'; entries: readonly { name: string }[] };
        schedule: ScheduleSource;
    }
}
export interface ScheduleSource { readonly kind: 'schedule'; readonly jobId: string }
`)
  const found = declaredSources(join(dir, 'node_modules', '@deepseek-ai'))
  t.same(found.map((s) => `${s.key}=${s.kind}`), ['user-rpc=user', 'skill-catalog=skill-catalog', 'schedule=schedule'])
})

t.test('extraction on a real batch returns the human question, never injected context', async (t) => {
  t.same(extractionFails(queryFromBatch), [])
  t.equal(queryFromBatch(realBatch('  端口 8499？ \n'), DEFAULT_ALLOW, pluginName), '端口 8499？', 'trimmed')
})

t.test('mutation: "the last role=user message" (the seed regression) reads injected context', async (t) => {
  const failures = extractionFails(lastRoleUser)
  t.match(failures[0], /^real batch: got "E2E reminder from another plugin/, 'on a real batch it returns the last injected note')
  t.ok(failures.length >= INJECTED_KINDS.length, `fails for every injected kind (${failures.length} failures)`)
})

t.test('mutation: removing the allowlist check from the real source admits every injected kind', async (t) => {
  const m = mutant({ file: 'plugin/query-source.ts', from: ' || !allow.has(source.kind)', to: '' })
  t.teardown(() => m.remove())
  const mutated = queryOf((await m.load<{ humanMessages: typeof humanMessages }>('plugin/query-source.ts')).humanMessages)
  const failures = extractionFails(mutated)
  t.ok(failures.some((f) => f.startsWith('real batch')), 'the real batch now yields the wrong query')
  for (const kind of INJECTED_KINDS) t.ok(failures.some((f) => f.startsWith(`kind ${kind} `)), `kind ${kind} is admitted`)
})

t.test('web prompts: kind "user" with rpcId (the user-rpc source) is accepted', async (t) => {
  const rpc = createUserMessage({
    content: [{ type: 'text', text: 'web question 2379' }],
    source: { kind: 'user', rpcId: 'rpc-1', clientTimeZone: 'Asia/Shanghai', principal: { id: 'u1' } } as never,
  })
  t.equal(queryFromBatch(realBatch(rpc), DEFAULT_ALLOW, pluginName), 'web question 2379')
})

t.test('a message with no source (or a non-string kind) yields no query', async (t) => {
  const bare = { ...realBatch('x')[0]!, source: undefined } as unknown as Message
  const numeric = { ...realBatch('x')[0]!, content: [{ type: 'text', text: 'numeric kind' }], source: { kind: 1 } } as unknown as Message
  t.equal(queryFromBatch([bare], DEFAULT_ALLOW, pluginName), '')
  t.equal(queryFromBatch([numeric], DEFAULT_ALLOW, pluginName), '')
  t.equal(queryFromBatch([...realBatch('the question'), bare], DEFAULT_ALLOW, pluginName), 'the question', 'skipped, the human question wins')
  const m = mutant({ file: 'plugin/query-source.ts', from: "if (!source || typeof source.kind !== 'string' || ", to: 'if (' })
  t.teardown(() => m.remove())
  const mutated = queryOf((await m.load<{ humanMessages: typeof humanMessages }>('plugin/query-source.ts')).humanMessages)
  t.throws(() => mutated([bare], DEFAULT_ALLOW, pluginName), TypeError, 'mutation: without the guard a source-less message crashes the step')
})

t.test('never reads its own injections, even when plugin messages are allowed', async (t) => {
  const allow = new Set(['user', 'plugin'])
  const ownRecall = createUserMessage({ content: [{ type: 'text', text: '[stablemem] Notes recalled … > billing 8499' }], source: { kind: 'plugin', plugin: pluginName, form: 'recall' } })
  const batch = [userMessage('the question'), ownRecall]
  t.equal(queryFromBatch(batch, allow, pluginName), 'the question')
  t.equal(queryFromBatch([ownRecall], allow, pluginName), '')
  const m = mutant({ file: 'plugin/query-source.ts', from: "if (source.kind === 'plugin' && source.plugin === ownPlugin) continue", to: '' })
  t.teardown(() => m.remove())
  const mutated = queryOf((await m.load<{ humanMessages: typeof humanMessages }>('plugin/query-source.ts')).humanMessages)
  t.match(mutated(batch, allow, pluginName), /^\[stablemem\] Notes recalled/, 'mutation: without the skip it reads its own recall')
})

t.test('a human message without text falls back to no query rather than to injected text', async (t) => {
  const image = createUserMessage({ content: [{ type: 'image', mediaType: 'image/png', data: 'AA==' } as never], source: { kind: 'user' } })
  t.equal(queryFromBatch([image, ...realBatch('').slice(1)], DEFAULT_ALLOW, pluginName), '')
})

function userMessage(text: string): UserMessage {
  return realBatch(text)[0]!
}
