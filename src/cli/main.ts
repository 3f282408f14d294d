#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_TRIM_THRESHOLD_=131072 node --max-semi-space-size=4 --optimize-for-size --liftoff-only --max-opt=2
// Entry point of the `mooring` command. A young generation of 4 MiB semi-spaces (V8's default grows them to
// 16-32 MiB) keeps a deploy of thousands of objects near 150 MiB instead of 220, at no measured cost in time:
// mooring's objects are short-lived per request, so scavenges stay cheap. V8's --optimize-for-size grows the old
// generation in smaller steps: an agent with 300 deployments peaked at 155 MiB instead of 267 through a rollout of
// all of them, and idled at 139 instead of 175, within a few percent of the time (bench:fleet, docs/memory.md). Two glibc arenas and a low trim
// threshold let the native memory of a burst (connections, zlib streams) go back to the system once it is over
// (docs/memory.md). --liftoff-only keeps WebAssembly on V8's baseline compiler: the one module mooring runs is the
// HTTP parser of its outbound client (src/http/fetch.ts), which the optimising tier would recompile for 13 MiB
// resident to read response heads faster. --max-opt=2 stops V8's tiers at Maglev: TurboFan's code is never run,
// so its pages of the node binary are never read in, nor its compile zones allocated. Measured on 2 cores
// (docs/memory.md): the agent at 1,000 deployments idles at 141 MiB instead of 151 and peaks at 180-193 instead of
// 202, its first sync as fast (100.7 s against 105.7); `mooring render` of a 1 MB chart takes 0.96 s instead of
// 1.07 (a short command does not pay back TurboFan's compile time); the small agent 92-95 MiB instead of 100.
// The flag must be on the command line: set at run time (v8.setFlagsFromString) it changes nothing.
//
// This file imports nothing before it has checked the Node version: the dependencies (isomorphic-git, chokidar) fail
// deep inside on an older Node, so an unsupported one is named here, with the version needed, and exit code 1.
import { unsupportedNode } from './node-version.ts';

const problem = unsupportedNode(process.versions.node);
if (problem) {
  process.stderr.write(`error: ${problem}\n`);
  process.exit(1);
}
cacheCompiledCode();
// A chart's `render --offline` starts helm now, while the rest of the command loads (early-render.ts).
if (process.argv[2] === 'render') (await import('./early-render.ts')).startEarlyRender(process.argv.slice(3));
const { exitOnSignals, installLastResort, outliveReaders } = await import('./last-resort.ts');
const { runCli } = await import('./program.ts');

installLastResort();
outliveReaders();
exitOnSignals();

process.exitCode = await runCli(process.argv.slice(2));
// A run of helm started ahead that the command never asked for (it ended first, on a bad flag) would hold the
// process until helm ends.
if (process.argv[2] === 'render') (await import('../child-process.ts')).stopPrestarted();

/**
 * Node's compile cache, in the user's own cache folder (XDG_CACHE_HOME, else ~/.cache): a command started again
 * does not compile its modules again, about a fifth of the start of `mooring render`. Never a shared folder (a
 * cache another user could write is code this process would run); none without a home, and none when
 * NODE_DISABLE_COMPILE_CACHE is set (Node's own switch). NODE_COMPILE_CACHE, when set, is Node's choice and kept.
 */
function cacheCompiledCode(): void {
  if (process.env.NODE_COMPILE_CACHE || process.env.NODE_DISABLE_COMPILE_CACHE) return;
  // Taken as module objects, not imported: an import of a built-in module builds a facade of all it exports, and
  // node:fs's loads its file streams, all before helm can be started (scripts/builtin-imports.ts).
  const { homedir } = process.getBuiltinModule('node:os');
  const { dirname, isAbsolute, join } = process.getBuiltinModule('node:path');
  const xdg = process.env.XDG_CACHE_HOME;
  let home = '';
  try {
    home = homedir();
  } catch {
    return;
  }
  const base = xdg && isAbsolute(xdg) ? xdg : home && home !== '/' ? join(home, '.cache') : undefined;
  if (!base) return;
  try {
    // Made here, under a folder that exists (making a path under a missing /proc folder never returns): a folder
    // that cannot be made is no cache.
    const { mkdirSync, statSync } = process.getBuiltinModule('node:fs');
    if (!statSync(dirname(base), { throwIfNoEntry: false })?.isDirectory()) return;
    const dir = join(base, 'mooring', 'node-compile-cache');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const { enableCompileCache } = process.getBuiltinModule('node:module');
    enableCompileCache?.(dir);
  } catch {
    // A cache that cannot be made (a read-only home) only costs the start time it would have saved.
  }
}
