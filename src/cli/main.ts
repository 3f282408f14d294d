#!/usr/bin/env node
// Entry point of the `mooring` command.
import { runCli } from './program.ts';

process.exitCode = await runCli(process.argv.slice(2));
