import { DatabaseSync } from 'node:sqlite'
import t, { type Test } from 'tap'
import { embedBlocks } from '../../lib/embed/backfill.ts'
import { embeddingText, PREDECESSOR_CHARS } from '../../lib/embed/embed-text.ts'
import type { EmbedOptions, Embedder } from '../../lib/embed/types.ts'
import { BlockStore } from '../../lib/store/store.ts'
import { SCENE_PREDECESSOR_SQL } from '../../lib/store/vectors.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'

/** Stands in for the model: answers a fixed vector and remembers what it was asked to read. */
class RecordingEmbedder implements Embedder {
  readonly model = 'rec'
  readonly dims = 4
  readonly languages = ['en']
  readonly seen: string[] = []
  async embed(texts: readonly string[], _options: EmbedOptions = {}): Promise<Float32Array[]> {
    this.seen.push(...texts)
    return texts.map(() => Float32Array.of(1, 0, 0, 0))
  }
}

const NOTES = [
  { text: 'Caroline: I am thinking about adopting a child.', scene: 's1' },
  { text: 'Melanie: That is wonderful, go for it!', scene: 's1' },
  { text: 'Bob: The server moved to port 8443.', scene: 's2' },
  { text: 'A note without a scene.', scene: '' },
]

/** What each note must be read as: the first of a scene and a scene-less note alone, a reply with the note before it. */
const EXPECTED = [
  NOTES[0]!.text,
  `${NOTES[0]!.text}\n${NOTES[1]!.text}`,
  NOTES[2]!.text,
  NOTES[3]!.text,
]

/** Commits the notes into a fresh store and returns what the embedder was asked to read. */
async function reads(t: Test, breakLookup: boolean): Promise<string[]> {
  const store = new BlockStore(tempStorePath())
  t.teardown(() => store.close())
  const ids = store.commitMany(NOTES.map((n) => ({ text: n.text, scene: n.scene }))).map((r) => r.id)
  if (breakLookup) store.vectors.scenePredecessor = () => null
  const embedder = new RecordingEmbedder()
  t.equal(await embedBlocks(store, embedder, ids.map((id) => store.get(id)!)), 4)
  t.equal(store.get(ids[1]!)!.text, NOTES[1]!.text, 'the stored note is unchanged')
  return embedder.seen
}

t.test('embedBlocks reads each note with its scene predecessor', async (t) => {
  t.same(await reads(t, false), EXPECTED)
})

t.test('mutation check: without the scene lookup the same assertion fails', async (t) => {
  t.notSame(await reads(t, true), EXPECTED)
})

t.test('embeddingText keeps only the end of a long predecessor and ignores a blank one', async (t) => {
  const long = 'x'.repeat(PREDECESSOR_CHARS) + 'TAIL'
  const out = embeddingText('note', long)
  t.ok(out.endsWith('TAIL\nnote'))
  t.equal(out.length, PREDECESSOR_CHARS + '\nnote'.length)
  t.equal(embeddingText('note', null), 'note')
  t.equal(embeddingText('note', '  '), 'note')
})

/** The query plan's lines for the scene-predecessor lookup, in a real store file. */
function plan(t: Test, sql: string): string {
  const path = tempStorePath()
  new BlockStore(path).close()
  const db = new DatabaseSync(path)
  t.teardown(() => db.close())
  return db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('blk_x').map((r) => String(r.detail)).join('\n')
}

t.test('the scene-predecessor lookup is an index search, not a walk over the library', async (t) => {
  t.match(plan(t, SCENE_PREDECESSOR_SQL), /SEARCH p USING INDEX blocks_scene \(scene=\? AND rowid<\?\)/)
})

t.test('mutation check: without the repeated scene condition the same assertion fails', async (t) => {
  const unguarded = SCENE_PREDECESSOR_SQL.replace("AND p.scene <> '' ", '')
  t.not(unguarded, SCENE_PREDECESSOR_SQL)
  t.notMatch(plan(t, unguarded), /SEARCH p USING INDEX blocks_scene/)
})

t.test('the kept end of a long predecessor never starts with half a surrogate pair', async (t) => {
  const predecessor = '😀'.repeat(PREDECESSOR_CHARS) + 'x' // odd length: the cut lands on a low surrogate
  const text = embeddingText('note', predecessor)
  t.notOk(/(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text), 'no unpaired low surrogate')
  t.ok(text.startsWith('😀') && text.endsWith('😀x\nnote'), 'starts on a whole pair')
  t.equal(embeddingText('note', 'short'), 'short\nnote')
})

t.test('mutation: without the surrogate guard the cut can start with half a pair', async (t) => {
  const m = mutant({ file: 'embed/embed-text.ts', from: '  if (/^[\\uDC00-\\uDFFF]/.test(tail)) tail = tail.slice(1)\n', to: '' })
  t.teardown(() => m.remove())
  const { embeddingText: unguarded } = await m.load<typeof import('../../lib/embed/embed-text.ts')>('embed/embed-text.ts')
  t.ok(/^[\uDC00-\uDFFF]/.test(unguarded('note', '😀'.repeat(PREDECESSOR_CHARS) + 'x')), 'the mutant starts with an unpaired low surrogate')
})
