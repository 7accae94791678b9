/**
 * `stablemem embed --backfill`: computes the vectors that are missing for one embedding model,
 * e.g. after turning `embed:` on for a store that already holds notes, or after a model change.
 * The endpoint is given on the command line, since the CLI reads no dsh composition.
 */
import { EmbedConfig } from '../../config.ts'
import { backfillVectors } from '../../embed/backfill.ts'
import { embedderFromConfig } from '../../embed/from-config.ts'
import { println, UsageError, type Command } from '../command.ts'
import { openExisting, withStore } from '../open-store.ts'

/** The embed command. */
export const command: Command = {
  usage: [
    'Usage: stablemem embed --backfill --url <base-url> --model <name> [--api-key-env VAR] [--dims N] [--languages en,zh] [--batch N] [--db <path>] [--json]',
    '',
    'Embeds every note that has no vector for this model yet, through an OpenAI-compatible',
    '`POST <base-url>/embeddings`, and refreshes the centroid. Vectors already written are kept,',
    'so an interrupted run continues where it stopped. Use the same url/model as the plugin\'s',
    '`embed:` config.',
    '',
    '  --backfill         required: embed the notes that have no vector',
    '  --url <base-url>   embeddings API base URL (embed.baseUrl)',
    '  --model <name>     model name (embed.model)',
    '  --api-key-env VAR  environment variable holding the API key (embed.apiKeyEnv)',
    '  --dims N           expected vector length (embed.dims; default: from the first answer)',
    '  --languages a,b    languages the model handles (embed.languages; default en)',
    '  --batch N          texts per request (embed.batchSize; default 32)',
    '  --json             print the result as JSON',
  ].join('\n'),
  options: {
    backfill: { type: 'boolean' },
    url: { type: 'string' },
    model: { type: 'string' },
    'api-key-env': { type: 'string' },
    dims: { type: 'string' },
    languages: { type: 'string' },
    batch: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: { min: 0, max: 0 },
  async run({ db, dbGiven, values, io }) {
    if (values.backfill !== true) throw new UsageError('embed needs --backfill (the only action it has)')
    if (typeof values.url !== 'string' || typeof values.model !== 'string') throw new UsageError('embed --backfill needs --url and --model')
    let config: EmbedConfig
    try {
      config = EmbedConfig({
        baseUrl: values.url,
        model: values.model,
        apiKeyEnv: typeof values['api-key-env'] === 'string' ? values['api-key-env'] : undefined,
        dims: typeof values.dims === 'string' ? Number(values.dims) : undefined,
        languages: typeof values.languages === 'string' ? values.languages.split(',').map((l) => l.trim()).filter((l) => l !== '') : undefined,
        batchSize: typeof values.batch === 'string' ? Number(values.batch) : undefined,
      } as EmbedConfig)
    } catch (error) {
      throw new UsageError(`bad option: ${(error as Error).message.replace(/^\$\./, 'embed.')}`)
    }
    const embedder = embedderFromConfig(config, io.env)!
    const progress = io.stderr.isTTY === true
    const result = await withStore(openExisting(db, dbGiven, { write: true }), (store) => backfillVectors(store, embedder, {
      batchSize: config.batchSize,
      onProgress: progress ? ({ done, total }) => io.stderr.write(`\rembedding: ${done} of ${total} notes`) : undefined,
    }))
    if (progress) io.stderr.write('\r\x1b[K')
    if (values.json === true) println(io.stdout, JSON.stringify({ model: embedder.model, dims: embedder.dims, ...result }))
    else println(io.stdout, `embedded ${result.done} of ${result.total} notes without a vector (model ${embedder.model}, ${embedder.dims} dims)`)
    return 0
  },
}
