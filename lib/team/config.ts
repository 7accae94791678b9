import Schema from '@deepseek-ai/schemastery'

/** The `team:` block: an optional shared layer on PostgreSQL beside the local store (docs/team.md). */
export interface TeamConfig {
  url: string
  namespace: string
  member: string
  passwordEnv: string
  budgetMs: number
  connectTimeoutMs: number
  poolSize: number
}

/**
 * Schema of `team:`. Off while `url` is empty. The password is never read from the config file:
 * `passwordEnv` names the environment variable that holds it, and a URL with a password in it is
 * refused at load, naming the field.
 */
export const TeamConfig: Schema<TeamConfig> = Schema.object({
  url: Schema.string().pattern(/^$|^postgres(ql)?:\/\/(?![^/@]*:[^/@]*@)\S+$/).default('')
    .description('PostgreSQL URL of the team\'s shared layer, without a password (`postgresql://team_billing@db.internal:5432/stablemem`; a URL with one is refused: use `passwordEnv`). Empty (default): no shared layer.'),
  namespace: Schema.string().pattern(/^$|^[a-z0-9][a-z0-9_.-]{0,62}$/).default('')
    .description('The team\'s namespace in that database: its notes, and only its, are read and written (row-level security enforces it per role).'),
  member: Schema.string().pattern(/^$|^[^\s\p{C}][^\p{C}]{0,63}$/u).default('')
    .description('Who saves shared notes from this agent (shown with every team note). Empty: the user name of the process.'),
  passwordEnv: Schema.string().pattern(/^[A-Za-z_][A-Za-z0-9_]*$|^$/).default('STABLEMEM_TEAM_PASSWORD')
    .description('Name of the environment variable holding the database password, read when the plugin starts. The password is never taken from the config file.'),
  budgetMs: Schema.natural().min(1).max(10_000).default(60)
    .description('How long a turn\'s recall waits for the shared layer, in ms; after that the turn gets the local notes and the team layer counts as degraded.'),
  connectTimeoutMs: Schema.natural().min(100).max(60_000).default(3_000)
    .description('Timeout of one connection attempt to PostgreSQL, in ms (startup check, reconnects).'),
  poolSize: Schema.natural().min(1).max(64).default(4)
    .description('Most connections this process keeps open to the team database in each of its two pools (writes and checks; recalls, on their own thread).'),
})

/**
 * The checks the schema cannot express, run when the plugin loads so a malformed `team:` block
 * fails the load naming the field: a url needs a namespace, and must name a role and a database.
 */
export function checkTeamConfig(config: TeamConfig | undefined, parse: (url: string) => unknown): void {
  if (!config || config.url === '') return
  if (config.namespace === '') throw new TypeError('team.namespace is required when team.url is set')
  parse(config.url)
}
