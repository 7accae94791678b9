/**
 * The scene table's in-memory key index (lib/store/scene-index.ts), which answers which scenes a
 * turn's keys match and whether a scene holds notes at all, is read again when it may be stale:
 * when another connection wrote the file (`data_version`) and when a transaction of this one
 * rolled back (a scene it was told of may be gone, and its id taken by another). Notes attached
 * by this connection mark their scene, and a key `dedupe` renames is read under its new spelling. Each guard has a mutation check that turns its test red.
 * Also: the fast path of `normalizeSceneKey` gives what the full normalisation gives.
 */
import t from 'tap'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import { rng } from '../../bench/corpus.ts'
import * as storeModule from '../../lib/store/store.ts'
import { normalizeSceneKey } from '../../lib/store/scene-key.ts'

type Store = typeof storeModule

const T0 = Date.UTC(2026, 0, 5, 2, 0)

/** A declared scene with no notes is read into the cache; another connection then attaches a note to it. */
function foreignRef(lib: Store): string[] {
  const path = tempStorePath('scene-cache-foreign')
  const a = new lib.BlockStore(path)
  const b = new lib.BlockStore(path)
  try {
    a.scenes.declare('chan:qq/group:ops', 0, T0)
    a.scenes.declare('chan:qq', 0, T0)
    const before = a.scenes.attached(['chan:qq/group:ops'], undefined, 3).map((r) => r.text)
    if (before.length !== 0) throw new Error('a declared scene holds no note yet')
    b.commit({ text: 'ops group: answer in plain text', scene: 'chan:qq/group:ops' })
    b.commit({ text: 'ops oncall rota lives in the wiki', scene: 'chan:qq/group:ops/peer:alice' }) // a narrower key, new to `a`
    return a.scenes.attached(['chan:qq/group:ops'], undefined, 3).map((r) => r.text).sort()
  } finally {
    b.close()
    a.close()
  }
}

/**
 * A transaction of this connection tags a note with a new scene and rolls back; the next scene
 * created takes the same id. The rolled-back key must match nothing.
 */
function afterRollback(lib: Store): string[] {
  const store = new lib.BlockStore(tempStorePath('scene-cache-rollback'))
  try {
    const note = store.commit({ text: 'release notes go to the changelog' })
    store.scenes.attached(['chan:mail'], undefined, 3) // the cache is read
    try {
      store.transaction(() => {
        store.scenes.tag('chan:mail/peer:bob', note.id, 1, T0)
        throw new Error('refused')
      })
    } catch {
      // rolled back on purpose
    }
    store.scenes.tag('chan:web/peer:carol', note.id, 1, T0) // same scene id as the rolled-back one
    return store.scenes.attached(['chan:mail/peer:bob'], undefined, 3).map((r) => r.text)
  } finally {
    store.close()
  }
}

/** This connection attaches a note to a scene the cache holds as empty. */
function ownRef(lib: Store): string[] {
  const store = new lib.BlockStore(tempStorePath('scene-cache-own'))
  try {
    store.scenes.declare('chan:qq/group:dev', 0, T0)
    store.scenes.attached(['chan:qq/group:dev'], undefined, 3)
    store.commit({ text: 'dev group: reviews before noon', scene: 'chan:qq/group:dev' })
    return store.scenes.attached(['chan:qq/group:dev'], undefined, 3).map((r) => r.text)
  } finally {
    store.close()
  }
}

/** A scene row an older writer left un-normalised, with a note: `dedupe` renames it (nothing to merge with). */
function afterRename(lib: Store): string[] {
  const store = new lib.BlockStore(tempStorePath('scene-cache-rename'))
  try {
    const note = store.commit({ text: 'mail: sign with the team name' })
    const raw = (store as unknown as { stmt(k: string, s: string): { run(...a: unknown[]): unknown } })
    raw.stmt('t.raw', "INSERT INTO scenes (key, origin, strength, created_at, updated_at) VALUES ('Chan:Mail', 'declared', 1, 1, 1)").run()
    raw.stmt('t.rawRef', "INSERT INTO scene_refs (scene_id, block_id, weight, decayed_at, created_at) SELECT id, ?, 1, 1, 1 FROM scenes WHERE key = 'Chan:Mail'").run(note.id)
    store.scenes.attached(['chan:mail'], undefined, 3) // the cache is read, with the old spelling
    store.scenes.dedupe()
    return store.scenes.attached(['chan:mail'], undefined, 3).map((r) => r.text)
  } finally {
    store.close()
  }
}

t.test('another connection\'s note, on a known scene and on a scene new to this one, is read', async (t) => {
  t.same(foreignRef(storeModule), ['ops group: answer in plain text', 'ops oncall rota lives in the wiki'])
})

t.test('a rolled-back scene matches nothing, even when its id is taken again', async (t) => {
  t.same(afterRollback(storeModule), [])
})

t.test('a key renamed by dedupe is read under its new spelling', async (t) => {
  t.same(afterRename(storeModule), ['mail: sign with the team name'])
})

t.test('a note this connection attaches is read at once', async (t) => {
  t.same(ownRef(storeModule), ['dev group: reviews before noon'])
})

t.test('mutations: without each guard the cache answers from stale keys', async (t) => {
  const cases: Array<[string, { file: string, from: string, to: string }, (lib: Store) => string[], unknown]> = [
    ['no data_version check', { file: 'store/scenes.ts', from: 'this.cache.version === version && ', to: '' }, foreignRef, ['ops group: answer in plain text', 'ops oncall rota lives in the wiki']],
    ['no rollback check', { file: 'store/scenes.ts', from: ' && this.cache.rollbacks === rollbacks', to: '' }, afterRollback, []],
    ['own refs not marked', { file: 'store/scenes.ts', from: '    this.cache?.keys.markRefs(key)\n', to: '' }, ownRef, ['dev group: reviews before noon']],
    ['a rename alone does not refresh', { file: 'store/scenes.ts', from: 'if (merged + renamed > 0) this.invalidate()', to: 'if (merged > 0) this.invalidate()' }, afterRename, ['mail: sign with the team name']],
  ]
  for (const [name, edit, run, expected] of cases) {
    const m = mutant(edit)
    try {
      const lib = await m.load<Store>('store/store.ts')
      t.notSame(run(lib), expected, name)
    } finally {
      m.remove()
    }
  }
})

/** The full normalisation, as `normalizeSceneKey` computes it without its fast path. */
function reference(raw: string): string {
  const segments: string[] = []
  for (const part of raw.normalize('NFC').toLowerCase().split('/')) {
    let out = ''
    for (const ch of part) out += /[a-z0-9\u4e00-\u9fff:.-]/.test(ch) ? ch : '_'
    out = out.replace(/_+/g, '_').replace(/^_+|_+$/g, '')
    if (out !== '') segments.push(out)
  }
  let [bytes, end] = [0, 0]
  const joined = segments.join('/')
  for (const ch of joined) {
    const size = Buffer.byteLength(ch, 'utf8')
    if (bytes + size > 96) break
    bytes += size
    end += ch.length
  }
  return joined.slice(0, end).replace(/[/_]+$/, '')
}

t.test('normalizeSceneKey: the fast path for keys already normal agrees with the full normalisation', async (t) => {
  const rand = rng(11)
  const alphabet = ['a', 'z', 'Q', '0', '9', ':', '.', '-', '_', '__', '/', '//', ' ', '端', '口', 'é', 'e\u0301', 'İ', '😀', '\u3000', 'ｑ']
  let wrong = 0
  for (let i = 0; i < 5_000; i++) {
    let raw = ''
    const n = 1 + Math.floor(rand() * (i % 10 === 0 ? 80 : 12))
    for (let j = 0; j < n; j++) raw += alphabet[Math.floor(rand() * alphabet.length)]
    for (const s of [raw, reference(raw)]) if (normalizeSceneKey(s) !== reference(s)) wrong++
  }
  t.equal(wrong, 0)
  t.equal(normalizeSceneKey('chan:qq/group:group_1'), 'chan:qq/group:group_1')
  t.equal(normalizeSceneKey('端'.repeat(40)), '端'.repeat(32))
})
