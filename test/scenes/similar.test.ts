/**
 * The similarity index (lib/kernel/scenes/similar.ts) is exact: on a store of varied emergent
 * scenes — with and without partner or channel, light and heavy features — `compare` over its
 * candidates gives what `compare` over every scene gives, also after scenes gain features and new
 * ones appear, while it hands over far fewer scenes than the store holds. Mutations that prune one
 * feature too many or miss a change must turn it red.
 */
import t from 'tap'
import { rng } from '../../bench/corpus.ts'
import { tempStorePath } from '../helpers/harness.ts'
import { mutant } from '../helpers/mutant.ts'
import type * as StoreModule from '../../lib/store/store.ts'
import type * as ResolveModule from '../../lib/kernel/scenes/resolve.ts'
import type * as SimilarModule from '../../lib/kernel/scenes/similar.ts'
import type * as SituationModule from '../../lib/kernel/scenes/situation.ts'
import * as storeModule from '../../lib/store/store.ts'
import * as resolveModule from '../../lib/kernel/scenes/resolve.ts'
import * as similarModule from '../../lib/kernel/scenes/similar.ts'
import * as situationModule from '../../lib/kernel/scenes/situation.ts'

interface Lib {
  store: typeof StoreModule
  resolve: typeof ResolveModule
  similar: typeof SimilarModule
  situation: typeof SituationModule
}

const real: Lib = { store: storeModule, resolve: resolveModule, similar: similarModule, situation: situationModule }

const T0 = Date.UTC(2026, 0, 5, 2, 0)

/** A random fingerprint over a small vocabulary, so that scenes overlap in every way. */
function randomSig(lib: Lib, rand: () => number): SituationModule.Feature[] {
  const pick = (xs: readonly string[]) => xs[Math.floor(rand() * xs.length)]!
  const parts: Array<[string, string]> = []
  const who = rand()
  if (who < 0.4) parts.push(['group', pick(['g1', 'g2', 'g3', 'g4', 'g5', 'g6'])])
  else if (who < 0.7) parts.push(['peer', pick(['alice', 'bob', 'carol'])])
  if (rand() < 0.8) parts.push(['chan', pick(['qq', 'web', 'mail'])])
  const topics = Math.floor(rand() * 4)
  for (let i = 0; i < topics; i++) parts.push(['topic', pick(['deploy', 'lunch', 'nginx', 'budget', 'port', 'review', '发布', '报销'])])
  if (rand() < 0.3) parts.push(['tool', pick(['shell', 'search'])])
  if (rand() < 0.9) parts.push(['part', pick(['morning', 'evening'])])
  return lib.situation.newSituation(parts.map(([k, v]) => lib.situation.feature(k, v)))
}

/** How many of `probes` fingerprints the index answers differently from the full scan, and the candidates it handed over. */
function mismatches(lib: Lib): { wrong: number, candidates: number, scenes: number, probes: number } {
  const rand = rng(7)
  const store = new lib.store.BlockStore(tempStorePath('similar'))
  try {
    const table = store.scenes
    for (let i = 0; i < 150; i++) {
      const sig = randomSig(lib, rand)
      if (sig.length > 0) table.createEmergent(`auto:s${i}`, sig, `l${i}`, T0)
    }
    let wrong = 0
    let candidates = 0
    let probes = 0
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 150; i++) {
        const sig = randomSig(lib, rand)
        if (sig.length === 0) continue
        const found = lib.similar.similarCandidates(table, lib.situation.prepare(sig))
        const indexed = lib.resolve.compare(sig, found)
        const full = lib.resolve.compare(sig, table.emergent())
        if (indexed.best?.key !== full.best?.key || indexed.similar.join(' ') !== full.similar.join(' ')) wrong++
        candidates += found.length
        probes++
      }
      // Between rounds the scenes change: some gain features (a turn's new topics), new ones appear.
      const scenes = table.emergent()
      for (let i = 0; i < 40; i++) table.reinforceLater(scenes[Math.floor(rand() * scenes.length)]!.key, randomSig(lib, rand), 1, T0 + round)
      for (let i = 0; i < 20; i++) {
        const sig = randomSig(lib, rand)
        if (sig.length > 0) table.createEmergent(`auto:r${round}n${i}`, sig, `m${round}.${i}`, T0 + round)
      }
    }
    return { wrong, candidates, scenes: table.emergent().length, probes }
  } finally {
    store.close()
  }
}

async function load(edit: { file: string, from: string, to: string }): Promise<{ lib: Lib, remove: () => void }> {
  const m = mutant(edit)
  const lib = {
    store: await m.load<typeof StoreModule>('store/store.ts'),
    resolve: await m.load<typeof ResolveModule>('kernel/scenes/resolve.ts'),
    similar: await m.load<typeof SimilarModule>('kernel/scenes/similar.ts'),
    situation: await m.load<typeof SituationModule>('kernel/scenes/situation.ts'),
  }
  return { lib, remove: m.remove }
}

t.test('the index gives what the full scan gives, through changes, with fewer scenes compared', async (t) => {
  const r = mismatches(real)
  t.equal(r.wrong, 0, `${r.probes} fingerprints answered alike`)
  t.ok(r.candidates / r.probes < r.scenes / 2, `on average ${(r.candidates / r.probes).toFixed(1)} of ${r.scenes} scenes compared`)
})

t.test('pruning one light feature too many loses similar scenes', async (t) => {
  const m = await load({ file: 'kernel/scenes/similar.ts', from: 'if ((weight + w) / sig.total >= RECALL_THRESHOLD) break', to: 'if ((weight + w) / sig.total >= 2 * RECALL_THRESHOLD) break' })
  t.teardown(m.remove)
  const r = mismatches(m.lib)
  t.ok(r.wrong > 0, `${r.wrong} of ${r.probes} fingerprints answered wrongly`)
})

t.test('an index that misses a scene\'s new features answers wrongly', async (t) => {
  const m = await load({ file: 'kernel/scenes/similar.ts', from: 'else this.dirty.add(id)', to: 'else void id' })
  t.teardown(m.remove)
  const r = mismatches(m.lib)
  t.ok(r.wrong > 0, `${r.wrong} of ${r.probes} fingerprints answered wrongly`)
})
