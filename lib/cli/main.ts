#!/usr/bin/env node
/**
 * Entry point of the `stablemem` command (package `bin`). Sets the exit code and lets Node exit
 * on its own, so buffered output is never cut off.
 */
import { run } from './run.ts'

process.exitCode = await run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, stdin: process.stdin })
