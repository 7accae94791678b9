/**
 * `stablemem install-dsh <prefix>`: dsh at the versions this package is tested with, in a folder
 * the user names, with `<prefix>/bin/dsh` to run it (see `../dsh-installer.ts`).
 */
import { println, UsageError, type Command } from '../command.ts'
import { PrefixError, installDsh, pinnedDshVersion } from '../dsh-installer.ts'

/** The install-dsh command. */
export const command: Command = {
  usage: [
    'Usage: stablemem install-dsh <prefix>',
    '',
    `Installs dsh ${pinnedDshVersion()} at the exact versions dsh-stablemem is tested with (the lock`,
    'shipped in this package), with Node 24 to run it and pnpm for `dsh plugin`, into <prefix>',
    '(a new or empty folder). Run it as <prefix>/bin/dsh, or put <prefix>/bin on your PATH.',
    'Rerunning on the same prefix changes nothing.',
  ].join('\n'),
  options: {},
  positionals: { min: 1, max: 1 },
  async run({ args, io }) {
    let result
    try {
      result = installDsh(args[0]!, { log: (line) => println(io.stderr, line), env: io.env })
    } catch (error) {
      if (error instanceof PrefixError) throw new UsageError(error.message)
      throw error
    }
    println(io.stdout, result.outcome === 'unchanged'
      ? `dsh ${pinnedDshVersion()} is already installed in ${result.prefix}; run ${result.launcher}`
      : `dsh ${pinnedDshVersion()} installed in ${result.prefix}; run ${result.launcher}`)
    return 0
  },
}
