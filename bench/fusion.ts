/**
 * `npm run bench:fusion -- --embed-url <url> [--embed-model <name>] [--data <dir>]… [--json]`
 *
 * Chooses the fusion formula by measurement: on every given set and mode it runs the recall bench
 * for the lexical recall and for the hybrid recall with each fusion (HologramAgent 0.7/0.3,
 * fixed weights 0.2…0.5, reciprocal-rank fusion at vector weights 0.5 and 0.3), all in one process against one embedding
 * endpoint (the corpus is embedded once; start the server with `--cache` so repeated queries are
 * answered from memory), and prints R@5 / R@10 / MRR@10 per
 * variant. The last variant declares every language, to show what the language gate prevents.
 * The last line is one JSON object.
 */
import type { Embedder } from '../lib/embed/types.ts'
import { exitOnHelp } from './args.ts'
import { runRecallBench } from './recall.ts'
import { EvalSetError, readEvalSet } from './recall/eval-set.ts'
import { BenchEmbedderError, benchEmbedder, hybridRecallFn, type HybridBenchOptions } from './recall/hybrid.ts'

const VARIANTS: Array<{ name: string, fusion?: HybridBenchOptions['fusion'], vectorWeight?: number, ungated?: boolean }> = [
  { name: 'lexical' },
  { name: 'ha 0.7/0.3', fusion: 'ha' },
  { name: 'weighted 0.2', fusion: 'weighted', vectorWeight: 0.2 },
  { name: 'weighted 0.3', fusion: 'weighted', vectorWeight: 0.3 },
  { name: 'weighted 0.4', fusion: 'weighted', vectorWeight: 0.4 },
  { name: 'weighted 0.5', fusion: 'weighted', vectorWeight: 0.5 },
  { name: 'rrf 0.5', fusion: 'rrf', vectorWeight: 0.5 },
  { name: 'rrf 0.3', fusion: 'rrf', vectorWeight: 0.3 },
  // The language gate's mutation check: the same model claiming every language.
  { name: 'w 0.3 ungated', fusion: 'weighted', vectorWeight: 0.3, ungated: true },
]

async function main(): Promise<void> {
  exitOnHelp('npm run bench:fusion -- --embed-url <url> [--embed-model <name>] [--data <dir>]… [--json]\n\nR@5 / R@10 / MRR@10 of lexical and hybrid recall with each fusion formula, on every given set and mode, against one embedding endpoint (docs/embeddings.md).')
  const argv = process.argv.slice(2)
  const sets: string[] = []
  let url = ''
  let model = 'default'
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--data') sets.push(argv[++i] ?? '')
    else if (argv[i] === '--embed-url') url = argv[++i] ?? ''
    else if (argv[i] === '--embed-model') model = argv[++i] ?? ''
    else if (argv[i] !== '--json') throw new EvalSetError(`unknown option ${argv[i]}`)
  }
  if (url === '' || sets.length === 0) throw new EvalSetError('usage: --embed-url <url> --data <dir> [--data <dir>]… [--embed-model <name>]')
  const out: Record<string, Record<string, unknown>> = {}
  for (const dir of sets) {
    const set = readEvalSet(dir)
    const base: HybridBenchOptions = { url, model, languages: ['en'], budgetMs: 60_000 }
    const embedder = await benchEmbedder(set, base)
    for (const mode of set.scopes.length > 1 ? ['scoped', 'global'] as const : ['global'] as const) {
      const key = `${set.name} ${mode}`
      out[key] = {}
      for (const v of VARIANTS) {
        const used: Embedder = v.ungated
          ? { model: embedder.model, get dims() { return embedder.dims }, languages: ['en', 'zh', 'ja', 'ko'], embed: (t, o) => embedder.embed(t, o) }
          : embedder
        const hybrid = v.fusion ? hybridRecallFn(used, { ...base, fusion: v.fusion, vectorWeight: v.vectorWeight }) : undefined
        const { result } = await runRecallBench(set, { mode, ks: [5, 10], recall: hybrid?.recall, label: v.name })
        const row = { 'recall@5': result['recall@5'], 'recall@10': result['recall@10'], 'mrr@10': result['mrr@10'], ...(hybrid ? { degraded: hybrid.degraded } : {}) }
        out[key][v.name] = row
        process.stdout.write(`${key.padEnd(28)} ${v.name.padEnd(14)} R@5 ${row['recall@5']}  R@10 ${row['recall@10']}  MRR@10 ${row['mrr@10']}\n`)
      }
    }
  }
  process.stdout.write(`${JSON.stringify(out)}\n`)
}

if (import.meta.main) {
  main().catch((error) => {
    if (!(error instanceof EvalSetError) && !(error instanceof BenchEmbedderError)) throw error
    process.stderr.write(`bench:fusion: ${error.message}\n`)
    process.exitCode = 1
  })
}
