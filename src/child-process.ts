// The one place a child process is started (kubectl kustomize and helm through sources/build/tool.ts, exec
// credential plugins through kube/exec-credential.ts): bounded time (SIGKILL at the deadline), bounded standard
// output (SIGKILL past the limit), a bounded share of standard error, and bounded memory. The memory bound is
// RLIMIT_DATA, set by `/bin/sh -c 'ulimit -d'` in front of the command: the limit on an address space
// (RLIMIT_AS, `ulimit -v`) would have to leave room for what Go binaries reserve without using (helm and kubectl
// do not start under 1 GiB of it), while RLIMIT_DATA counts what is really allocated, and a Go binary past it
// dies at once with "fatal error: out of memory". The environment is the caller's choice, never inherited.
//
// A run may be started ahead (prestartProcess: `mooring render` starts helm before it has loaded what reads its
// output, src/cli/early-render.ts). It is the same run, under the same bounds; the later call of runProcess adopts it
// only when it asks for exactly the same command, arguments, environment and bounds (its HOME aside, each side's own
// throwaway folder), and otherwise stops it and starts its own. What a caller gets never depends on the guess.
import { spawn } from 'node:child_process';
import { accessSync, constants, rmSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 32 * 1024 * 1024;
export const DEFAULT_MEMORY_BYTES = 1024 * 1024 * 1024;
const MAX_STDERR_BYTES = 64 * 1024;

// The process groups running: a child in its own group is not stopped with this process unless told.
const running = new Set<number>();
let exitHook = false;
function track(pid: number): void {
  running.add(pid);
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const group of running) killGroup(group);
  });
}

function killGroup(pid: number): boolean {
  try {
    process.kill(-pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}

export interface ProcessOptions {
  /** The whole environment of the child: nothing of this process's is added. */
  env: NodeJS.ProcessEnv;
  timeoutMs?: number | undefined;
  maxStdoutBytes?: number | undefined;
  /** RLIMIT_DATA of the child (and what it starts); 0 for none. */
  memoryBytes?: number | undefined;
  cwd?: string | undefined;
  /**
   * Given up when it aborts (the sync that asked for the run was stopped): the child's group is killed at once and
   * the run ends `stopped`; not started at all when it has already aborted.
   */
  signal?: AbortSignal | undefined;
}

export interface ProcessResult {
  /** How it ended: exited (see code), or stopped by the runner or by the caller's signal, or never started (`error`). */
  ended: 'exited' | 'timeout' | 'output' | 'stopped' | 'not-found' | 'error';
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  /** The first 64 KiB of standard error. */
  stderr: string;
  error?: Error | undefined;
}

/**
 * Where `command` is: itself when it names a path, else the first executable of that name on `path`. Looked up at
 * once (a few stats), so that a run starts in the same turn it is asked for: a run started ahead would otherwise
 * wait behind the modules that load meanwhile.
 */
export function findExecutable(command: string, path: string | undefined): string | undefined {
  const candidates = command.includes('/')
    ? [command]
    : (path ?? '')
        .split(delimiter)
        .filter((dir) => dir !== '')
        .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate, { throwIfNoEntry: false })?.isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not there (a PATH entry that is a file), or not executable by this user: the next one.
    }
  }
  return undefined;
}

/** The command line that runs `binary` with RLIMIT_DATA set to `bytes` (rounded up to KiB, as ulimit counts). */
export function withMemoryLimit(binary: string, args: readonly string[], bytes: number): [string, string[]] {
  const kib = String(Math.ceil(bytes / 1024));
  // $0 is the limit, "$@" the command: nothing of the command's text is ever parsed by the shell.
  return ['/bin/sh', ['-c', 'ulimit -d "$0" || exit 125; exec "$@"', kib, binary, ...args]];
}

interface Prestarted {
  key: string;
  result: Promise<ProcessResult>;
  stop: (why?: 'error' | 'stopped') => void;
}

let prestarted: Prestarted | undefined;
let adopted = 0;

/**
 * What identifies a run: the command, its arguments, environment and bounds, with the environment's HOME (each
 * run's own throwaway folder) written as a mark wherever it appears.
 */
function runKey(command: string, args: readonly string[], options: ProcessOptions): string {
  const home = options.env.HOME;
  const mark = (text: string | undefined) =>
    text === undefined || !home ? text : text.split(home).join('\u0000HOME\u0000');
  const env = Object.entries(options.env)
    .map(([k, v]) => [k, mark(v)])
    .sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1));
  return JSON.stringify([
    command,
    args.map(mark),
    env,
    options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    options.maxStdoutBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    options.memoryBytes ?? DEFAULT_MEMORY_BYTES,
    options.cwd ?? null,
  ]);
}

/**
 * Starts `command` now, for a later runProcess with the same request to adopt (at most one run waits; a second
 * replaces it). `home` (the environment's HOME, a folder of the caller's making) is removed when the run ends.
 * A run nobody adopts is stopped when another is asked for, and at exit.
 */
export function prestartProcess(command: string, args: readonly string[], options: ProcessOptions): void {
  prestarted?.stop();
  const key = runKey(command, args, options);
  const home = options.env.HOME;
  const remove = () => {
    if (home) rmSync(home, { recursive: true, force: true });
  };
  const controller: { stopped: 'error' | 'stopped' | undefined; kill: (why: 'error' | 'stopped') => void } = {
    stopped: undefined,
    kill: () => undefined,
  };
  const result = startProcess(command, args, options, (kill) => {
    controller.kill = kill;
    if (controller.stopped) kill(controller.stopped);
  });
  process.once('exit', remove);
  void result.then(() => {
    process.off('exit', remove);
    remove();
  });
  const entry: Prestarted = {
    key,
    result,
    stop: (why: 'error' | 'stopped' = 'error') => {
      controller.stopped ??= why;
      controller.kill(why);
      if (prestarted === entry) prestarted = undefined;
    },
  };
  prestarted = entry;
}

/** Stops a run started ahead that nobody adopted (a command that ended before it asked for it: a bad flag). */
export function stopPrestarted(): void {
  prestarted?.stop();
}

/** How many runs were adopted from prestartProcess (for tests and the render's timeline). */
export function adoptedRuns(): number {
  return adopted;
}

/** Runs `command` to its end within the bounds; never rejects. */
export async function runProcess(
  command: string,
  args: readonly string[],
  options: ProcessOptions,
): Promise<ProcessResult> {
  const early = prestarted;
  if (early) {
    prestarted = undefined;
    if (early.key === runKey(command, args, options)) {
      adopted++;
      const signal = options.signal;
      if (!signal) return early.result;
      // The adopting caller's signal stops the run as it would have stopped its own.
      const stop = () => early.stop('stopped');
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
      return early.result.finally(() => signal.removeEventListener('abort', stop));
    }
    early.stop();
  }
  return startProcess(command, args, options);
}

function startProcess(
  command: string,
  args: readonly string[],
  options: ProcessOptions,
  onKill?: (kill: (why: 'error' | 'stopped') => void) => void,
): Promise<ProcessResult> {
  const signal = options.signal;
  if (signal?.aborted)
    return Promise.resolve({ ended: 'stopped', code: null, signal: null, stdout: '', stderr: '' });
  const binary = findExecutable(command, options.env.PATH);
  if (!binary) {
    const error = Object.assign(new Error(`spawn ${command} ENOENT`), { code: 'ENOENT' });
    return Promise.resolve({ ended: 'not-found', code: null, signal: null, stdout: '', stderr: '', error });
  }
  const memory = options.memoryBytes ?? DEFAULT_MEMORY_BYTES;
  const [file, argv] = memory > 0 ? withMemoryLimit(binary, args, memory) : [binary, [...args]];
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxStdout = options.maxStdoutBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  return new Promise((resolve) => {
    // Its own process group, so that what it starts (git, for kustomize's remote bases; a shell's commands) is
    // stopped with it: a survivor would hold the pipes open.
    const child = spawn(file, argv, {
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    if (child.pid !== undefined) track(child.pid);
    const out: Buffer[] = [];
    let outBytes = 0;
    const err: Buffer[] = [];
    let errBytes = 0;
    let ended: ProcessResult['ended'] = 'exited';
    let error: Error | undefined;
    const stop = (why: ProcessResult['ended']) => {
      if (ended === 'exited') ended = why;
      if (child.pid === undefined || !killGroup(child.pid)) child.kill('SIGKILL');
    };
    const timer = setTimeout(() => stop('timeout'), timeoutMs);
    onKill?.(stop);
    const given = () => stop('stopped');
    signal?.addEventListener('abort', given, { once: true });
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > maxStdout) {
        stop('output');
        return;
      }
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (errBytes >= MAX_STDERR_BYTES) return;
      const part = chunk.subarray(0, MAX_STDERR_BYTES - errBytes);
      err.push(part);
      errBytes += part.length;
    });
    child.on('error', (e) => {
      error ??= e;
      if (ended === 'exited') ended = 'error';
    });
    child.on('close', (code, exitSignal) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', given);
      if (child.pid !== undefined) running.delete(child.pid);
      resolve({
        ended,
        code,
        signal: exitSignal,
        stdout: ended === 'output' || ended === 'stopped' ? '' : Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        error,
      });
    });
  });
}
