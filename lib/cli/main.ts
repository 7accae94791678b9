#!/usr/bin/env node
/**
 * Entry point of the `stablemem` command (package `bin`). Sets the exit code and lets Node exit
 * on its own, so buffered output is never cut off. Output that cannot be written (a closed pipe,
 * `stats | head -1`; a full disk, `get > /dev/full`) is reported in one line on standard error
 * and makes the exit code 1, never a stack trace; the command still closes its store.
 */
import { outputFailure, run } from './run.ts'

const name = process.argv[2] ?? ''
let outputFailed = false
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (!outputFailed && stream !== process.stderr) {
      try { process.stderr.write(`${outputFailure(name, error)}\n`) } catch { /* standard error is gone too */ }
    }
    outputFailed = true
    process.exitCode = 1 // the error may arrive after the command returned
  })
}
const code = await run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, stdin: process.stdin })
process.exitCode = outputFailed ? 1 : code
