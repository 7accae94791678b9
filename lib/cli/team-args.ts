/**
 * The team layer from the shell: `--team-url`, `--namespace`, `--member` and `--password-env`
 * (default: `STABLEMEM_TEAM_URL`, `STABLEMEM_TEAM_NAMESPACE`, `STABLEMEM_TEAM_MEMBER`, and the
 * password in `STABLEMEM_TEAM_PASSWORD`), validated like the plugin's `team:` block.
 */
import type { ParseArgsOptionsConfig } from 'node:util'
import { TeamConfig, checkTeamConfig } from '../team/config.ts'
import { teamTarget } from '../team/connection.ts'
import { TeamLayer } from '../team/layer.ts'
import { UsageError, type CommandInput } from './command.ts'

/** The options every team-aware command takes. */
export const TEAM_OPTIONS: ParseArgsOptionsConfig = {
  'team-url': { type: 'string' }, namespace: { type: 'string' }, member: { type: 'string' }, 'password-env': { type: 'string' },
}

/** Their lines in a command's help. */
export const TEAM_USAGE = [
  '  --team-url <url>      PostgreSQL URL without a password (default $STABLEMEM_TEAM_URL)',
  '  --namespace <ns>      the team\'s namespace (default $STABLEMEM_TEAM_NAMESPACE)',
  '  --member <name>       who shares (default $STABLEMEM_TEAM_MEMBER, else the user name)',
  '  --password-env <var>  environment variable holding the password (default STABLEMEM_TEAM_PASSWORD)',
]

/** The team config the options and environment give; a usage error when incomplete or malformed. */
export function teamConfigOf({ values, io }: Pick<CommandInput, 'values' | 'io'>): TeamConfig {
  const pick = (option: string, env: string) => typeof values[option] === 'string' ? values[option] as string : (io.env[env] ?? '')
  const partial = {
    url: pick('team-url', 'STABLEMEM_TEAM_URL'), namespace: pick('namespace', 'STABLEMEM_TEAM_NAMESPACE'), member: pick('member', 'STABLEMEM_TEAM_MEMBER'),
    ...(typeof values['password-env'] === 'string' ? { passwordEnv: values['password-env'] } : {}),
  }
  if (partial.url === '') throw new UsageError('no team database: pass --team-url or set STABLEMEM_TEAM_URL')
  try {
    const config = TeamConfig(partial as TeamConfig)
    checkTeamConfig(config, teamTarget)
    return config
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error))
  }
}

/**
 * A team layer for one command, with its startup check run. It logs nothing: a command that
 * cannot use it fails with the check's one error (`stats().error`).
 */
export async function openTeam(input: Pick<CommandInput, 'values' | 'io'>, options: { secrets?: 'redact' | 'refuse' | 'allow' } = {}): Promise<TeamLayer> {
  const quiet = () => {}
  const layer = new TeamLayer(teamConfigOf(input), { secrets: options.secrets ?? 'redact', maxBlockChars: 32_768, logger: { info: quiet, warn: quiet, error: quiet }, env: input.io.env })
  await layer.start()
  return layer
}
