#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072 node --max-semi-space-size=4 --optimize-for-size
// Entry point of the `mooring` command. A young generation of 4 MiB semi-spaces (V8's default grows them to
// 16-32 MiB) keeps a deploy of thousands of objects near 150 MiB instead of 220, at no measured cost in time:
// mooring's objects are short-lived per request, so scavenges stay cheap. V8's --optimize-for-size grows the old
// generation in smaller steps: an agent with 300 deployments peaked at 155 MiB instead of 267 through a rollout of
// all of them, and idled at 139 instead of 175, within a few percent of the time (bench:fleet, docs/memory.md). Two glibc arenas and a low trim
// threshold let the native memory of a burst (connections, zlib streams) go back to the system once it is over
// (docs/memory.md).
//
// This file imports nothing before it has checked the Node version: the dependencies (undici, chokidar) fail
// deep inside on an older Node, so an unsupported one is named here, with the version needed, and exit code 1.
import { unsupportedNode } from './node-version.ts';

const problem = unsupportedNode(process.versions.node);
if (problem) {
  process.stderr.write(`error: ${problem}\n`);
  process.exit(1);
}
const { installLastResort } = await import('./last-resort.ts');
const { runCli } = await import('./program.ts');

installLastResort();

process.exitCode = await runCli(process.argv.slice(2));
