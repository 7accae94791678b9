/**
 * The scene mechanism on a real store file: keys, emergence, declared scenes, prefix reads,
 * decay — and for each bug confirmed in HologramAgent's code, a mutation that puts its behaviour
 * back and must turn the property red.
 */
import t from 'tap'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import type * as KeyModule from '../../lib/store/scene-key.ts'
import type * as StoreModule from '../../lib/store/store.ts'
import type * as ResolveModule from '../../lib/kernel/scenes/resolve.ts'
import type * as SituationModule from '../../lib/kernel/scenes/situation.ts'
import * as keyModule from '../../lib/store/scene-key.ts'
import * as storeModule from '../../lib/store/store.ts'
import * as resolveModule from '../../lib/kernel/scenes/resolve.ts'
import * as situationModule from '../../lib/kernel/scenes/situation.ts'

interface Lib {
  keys: typeof KeyModule
  store: typeof StoreModule
  resolve: typeof ResolveModule
  situation: typeof SituationModule
}

const real: Lib = { keys: keyModule, store: storeModule, resolve: resolveModule, situation: situationModule }

async function load(edit: { file: string, from: string, to: string }): Promise<{ lib: Lib, remove: () => void }> {
  const m = mutant(edit)
  const lib = {
    keys: await m.load<typeof KeyModule>('store/scene-key.ts'),
    store: await m.load<typeof StoreModule>('store/store.ts'),
    resolve: await m.load<typeof ResolveModule>('kernel/scenes/resolve.ts'),
    situation: await m.load<typeof SituationModule>('kernel/scenes/situation.ts'),
  }
  return { lib, remove: m.remove }
}

const DAY = 86_400_000
const T0 = Date.UTC(2026, 0, 5, 2, 0) // 10:00 in Asia/Shanghai

function sig(lib: Lib, parts: Array<[string, string]>) {
  return lib.situation.newSituation(parts.map(([k, v]) => lib.situation.feature(k, v)))
}

/** A: the second sighting creates an emergent scene; the first leaves only evidence; another bucket's evidence survives. */
function emergence(lib: Lib): { first: string, second: string, otherEvidence: number } {
  const store = new lib.store.BlockStore(tempStorePath('emerge'))
  try {
    const g1 = sig(lib, [['group', 'group_1'], ['chan', 'qq'], ['part', 'morning']])
    const other = sig(lib, [['peer', 'alice'], ['chan', 'mail'], ['part', 'morning']])
    lib.resolve.resolveTurn(store.scenes, other, [], T0) // the other situation, seen once
    const first = lib.resolve.resolveTurn(store.scenes, g1, [], T0)
    const second = lib.resolve.resolveTurn(store.scenes, g1, [], T0 + 1000)
    return { first: first.primary, second: second.primary, otherEvidence: store.scenes.evidence(lib.situation.label(other)) }
  } finally {
    store.close()
  }
}

/** B: notes attached under `peer:groupx1/…` are not read through the `peer:group_1` key (no `LIKE` wildcard). */
function prefixIsText(lib: Lib): { group1: string[], groupX1: string[], broad: string[] } {
  const store = new lib.store.BlockStore(tempStorePath('prefix'))
  try {
    const a = store.commit({ text: 'note of group_1', scene: 'peer:group_1/topic:deploy' }).id
    const b = store.commit({ text: 'note of groupX1', scene: 'peer:groupX1/topic:deploy' }).id
    const c = store.commit({ text: 'note for all of qq', scene: 'chan:QQ' }).id
    const ids = (keys: string[]) => store.scenes.attached(keys, undefined, 10).map((r) => r.blockId)
    const name = (id: string) => id === a ? 'a' : id === b ? 'b' : id === c ? 'c' : id
    return { group1: ids(['peer:group_1']).map(name), groupX1: ids(['peer:groupx1']).map(name), broad: ids(['chan:qq/group:group_1']).map(name) }
  } finally {
    store.close()
  }
}

t.test('keys: case, punctuation, CJK and the byte cap', async (t) => {
  const { normalizeSceneKey, checkSceneKey } = keyModule
  t.equal(normalizeSceneKey('chan:QQ'), 'chan:qq')
  t.equal(normalizeSceneKey(' Chan:QQ / Peer:Group 1 '), 'chan:qq/peer:group_1')
  t.equal(normalizeSceneKey('a+b'), 'a_b')
  t.equal(normalizeSceneKey('//x//'), 'x')
  const long = normalizeSceneKey(`chan:qq/${'群聊'.repeat(40)}`)
  t.ok(Buffer.byteLength(long) <= keyModule.MAX_SCENE_KEY_BYTES)
  t.equal(Buffer.from(long, 'utf8').toString('utf8'), long, 'valid UTF-8 after the cut')
  t.notOk(long.includes('\ufffd'))
  for (const bad of ['a\nb', 'a\u0007b', '!!!', 'x'.repeat(10_000)]) {
    t.throws(() => checkSceneKey(bad, 'scene', true), { name: 'StableMemError' }, JSON.stringify(bad.slice(0, 10)))
  }
  t.throws(() => checkSceneKey('', 'scene', true), /scene is empty/)
  t.equal(checkSceneKey('', 'scene', false), '')
})

t.test('HologramAgent cut the key at 96 bytes and could split a CJK character', async (t) => {
  const key = `chan:qq/${'a'.repeat(87)}群聊` // the cap falls inside 群
  const cut = keyModule.normalizeSceneKey(key)
  t.ok(!Buffer.from(cut, 'utf8').toString('utf8').includes('\ufffd'))
  const m = await load({ file: 'store/scene-key.ts', from: 'return cutToBytes(segments.join(\'/\'), MAX_SCENE_KEY_BYTES)', to: 'return Buffer.from(segments.join(\'/\'), \'utf8\').subarray(0, MAX_SCENE_KEY_BYTES).toString(\'utf8\')' })
  t.teardown(m.remove)
  t.ok(m.lib.keys.normalizeSceneKey(key).includes('\ufffd'), 'the byte cut leaves a replacement character')
})

t.test('situations: weights, Jaccard, identity conflicts, labels', async (t) => {
  const { similarity, label, joins, featuresFromKey } = situationModule
  const qqMorning = sig(real, [['chan', 'qq'], ['part', 'morning']])
  const qqEvening = sig(real, [['chan', 'qq'], ['part', 'evening']])
  t.equal(Number(similarity(qqMorning, qqEvening).toFixed(3)), 0.714, 'sharing only the channel: 1.0 / 1.4')
  t.equal(label(qqEvening), 'chan:qq', 'part of day never names a scene (R2)')
  const g1 = sig(real, [['group', 'group_1'], ['chan', 'qq'], ['part', 'morning']])
  const g2 = sig(real, [['group', 'group_2'], ['chan', 'qq'], ['part', 'morning']])
  t.equal(similarity(g1, g2), 0, 'two groups of one channel are two situations (R4)')
  t.equal(label(g1), 'group:group_1_chan:qq', 'the group outranks the channel in the label (R4)')
  const withTopics = (ts: string[]) => sig(real, [['group', 'group_1'], ['chan', 'qq'], ['part', 'morning'], ...ts.map((w) => ['topic', w] as [string, string])])
  const a = withTopics(['deploy', 'nginx', 'port'])
  const b = withTopics(['lunch', 'menu', 'price'])
  t.ok(similarity(a, b) < 0.5, 'Jaccard alone: .478')
  t.ok(joins(a, b), 'the same identity joins the scene')
  t.same(featuresFromKey('chan:qq/group:ops').map((f) => f.key), ['group:ops', 'chan:qq'])
  t.same(featuresFromKey('老大2026-09-04_12:27_qq私聊图片'), [], 'no features are guessed from a free-form key')
})

t.test('emergence: nothing at the first sighting, a scene at the second, other buckets kept', async (t) => {
  const r = emergence(real)
  t.equal(r.first, '', 'first sighting: no scene')
  t.equal(r.second, 'auto:group:group_1_chan:qq')
  t.equal(r.otherEvidence, 1, 'the other situation\'s evidence survives the creation')
})

t.test('HologramAgent wiped every evidence bucket when it created a scene (R5)', async (t) => {
  const m = await load({ file: 'store/scenes.ts', from: "'DELETE FROM situation_evidence WHERE label = ?').run(label)", to: "'DELETE FROM situation_evidence').run()" })
  t.teardown(m.remove)
  t.equal(emergence(m.lib).otherEvidence, 0)
})

t.test('prefix reads compare text: `_` is no wildcard, broader keys cover narrower situations', async (t) => {
  const r = prefixIsText(real)
  t.same(r.group1, ['a'])
  t.same(r.groupX1, ['b'])
  t.same(r.broad, ['c'], 'chan:qq covers chan:qq/group:group_1')
})

t.test('HologramAgent matched prefixes with LIKE k||\'/%\'', async (t) => {
  // LIKE's semantics in the key index's prefix search: `_` matches any one character.
  const m = await load({
    file: 'store/scene-index.ts',
    from: 'for (let i = this.firstAtOrAfter(prefix); i < this.sorted.length && this.sorted[i]!.startsWith(prefix); i++) this.take(out, this.sorted[i]!)',
    to: "for (const k of this.sorted) if (k.length > prefix.length && [...prefix].every((c, j) => c === '_' || c === k[j])) this.take(out, k)",
  })
  t.teardown(m.remove)
  t.same(prefixIsText(m.lib).group1.sort(), ['a', 'b'], 'group_1 reads groupX1\'s note')
})

t.test('declared scenes: created at once with strength 1, +1 per turn, never twice at creation', async (t) => {
  const store = new storeModule.BlockStore(tempStorePath('declared'))
  t.teardown(() => store.close())
  const turn = resolveModule.resolveTurn(store.scenes, [], ['chan:qq/group:ops'], T0)
  t.equal(turn.primary, 'chan:qq/group:ops')
  t.equal(store.scenes.byKey('chan:qq/group:ops')!.strength, 1)
  resolveModule.resolveTurn(store.scenes, [], ['chan:qq/group:ops'], T0 + 1)
  t.equal(store.scenes.byKey('chan:qq/group:ops')!.strength, 2)
  store.commit({ text: 'tagged by a commit', scene: 'chan:QQ/group:OPS' })
  t.equal(store.scenes.byKey('chan:qq/group:ops')!.strength, 2, 'a commit attaches, it is no sighting')
  t.equal(store.scenes.list().length, 1, 'chan:QQ ≡ chan:qq: no twin')
})

t.test('HologramAgent counted a declared scene\'s first sighting twice', async (t) => {
  const m = await load({ file: 'store/scenes.ts', from: '    if (!created) this.deps.stmt(\'scene.bump\'', to: '    if (true) this.deps.stmt(\'scene.bump\'' })
  t.teardown(m.remove)
  const store = new m.lib.store.BlockStore(tempStorePath('declared-m'))
  t.teardown(() => store.close())
  m.lib.resolve.resolveTurn(store.scenes, [], ['chan:qq'], T0)
  t.equal(store.scenes.byKey('chan:qq')!.strength, 2)
})

t.test('ties between equally similar scenes go to the stronger one', async (t) => {
  const store = new storeModule.BlockStore(tempStorePath('ties'))
  t.teardown(() => store.close())
  const f = sig(real, [['chan', 'qq'], ['part', 'morning']])
  const a = store.scenes.createEmergent('auto:a', f, 'x', T0)
  const b = store.scenes.createEmergent('auto:b', f, 'y', T0)
  store.scenes.reinforce(store.scenes.byKey(b)!.id, [], 5, T0)
  t.equal(resolveModule.resolveTurn(store.scenes, f, [], T0).primary, b)
  t.same(resolveModule.similarScenes(f, store.scenes.emergent()), [b, a])
})

t.test('decay: halves once per half-life however often it runs; below the floor the ref goes', async (t) => {
  const store = new storeModule.BlockStore(tempStorePath('decay'), { now: () => T0 })
  t.teardown(() => store.close())
  const { id } = store.commit({ text: 'a rule of the ops group', scene: 'chan:qq/group:ops' })
  const weak = store.commit({ text: 'a weakly attached note' }).id
  store.scenes.tag('chan:qq/group:ops', weak, 0.15, T0)
  const weight = (block: string) => store.scenes.attached(['chan:qq/group:ops'], undefined, 10).find((r) => r.blockId === block)?.weight
  const hl = 30 * DAY
  const tick = (from: number, to: number) => {
    for (let at = from; at < to; at += 7 * 3_600_000) store.scenes.decay(hl, 0.05, at)
    store.scenes.decay(hl, 0.05, to)
  }
  tick(T0 + 3_600_000, T0 + 30 * DAY)
  t.equal(weight(id), 0.5, '+30 days, ticks every 7 hours: halved once')
  t.equal(weight(weak), 0.075)
  tick(T0 + 30 * DAY + 3_600_000, T0 + 60 * DAY)
  t.equal(weight(id), 0.25, '+60 days: halved twice')
  t.equal(weight(weak), undefined, 'below the floor: removed')
  t.equal(store.scenes.decay(0, 0.05, T0 + 400 * DAY).halved, 0, 'half-life 0: no decay')
})

t.test('HologramAgent aged refs by creation time: every heartbeat halved them again', async (t) => {
  const m = await load({ file: 'store/scenes.ts', from: "UPDATE scene_refs SET weight = weight * 0.5, decayed_at = ?1\n        WHERE decayed_at <= ?2", to: "UPDATE scene_refs SET weight = weight * 0.5, decayed_at = ?1\n        WHERE created_at <= ?2" })
  t.teardown(m.remove)
  const store = new m.lib.store.BlockStore(tempStorePath('decay-m'), { now: () => T0 })
  t.teardown(() => store.close())
  const { id } = store.commit({ text: 'a rule', scene: 'chan:qq' })
  for (let hour = 30 * 24; hour <= 31 * 24; hour += 1) store.scenes.decay(30 * DAY, 0.05, T0 + hour * 3_600_000)
  t.equal(store.scenes.attached(['chan:qq'], undefined, 10).find((r) => r.blockId === id), undefined, 'sudden death, not half-life')
})

t.test('forget deletes the refs of forgotten notes; forget({scene}) takes attached notes and any spelling', async (t) => {
  const store = new storeModule.BlockStore(tempStorePath('forget'))
  t.teardown(() => store.close())
  const a = store.commit({ text: 'rule one', scene: 'chan:qq' }).id
  const b = store.commit({ text: 'rule two' }).id
  store.scenes.tag('chan:qq', b, 1)
  const c = store.commit({ text: 'rule three', scene: 'chan:web' }).id
  store.forget(c)
  t.equal(store.scenes.counts().refs, 2, 'the forgotten note\'s ref is gone')
  const result = store.forget({ scene: 'Chan:QQ' })
  t.same(result.deleted.map((f) => f.id).sort(), [a, b].sort())
  t.equal(store.scenes.counts().refs, 0)
})

t.test('dedupe merges rows whose keys normalise alike (R3)', async (t) => {
  const store = new storeModule.BlockStore(tempStorePath('dedupe'))
  t.teardown(() => store.close())
  const id = store.commit({ text: 'rule', scene: 'chan:qq' }).id
  // A row as an older writer left it, un-normalised.
  ;(store as unknown as { stmt(k: string, s: string): { run(...a: unknown[]): unknown } }).stmt('t.raw', "INSERT INTO scenes (key, origin, strength, created_at, updated_at) VALUES ('chan:QQ', 'emergent', 3, 1, 1)").run()
  t.equal(store.scenes.dedupe(), 1)
  const row = store.scenes.byKey('chan:qq')!
  t.equal(row.strength, 4)
  t.same(store.scenes.attached(['chan:qq'], undefined, 5).map((r) => r.blockId), [id])
  t.equal(store.scenes.dedupe(), 0, 'idempotent')
})
