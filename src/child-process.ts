// The one place a child process is started (kubectl kustomize and helm through sources/build/tool.ts, exec
// credential plugins through kube/exec-credential.ts): bounded time (SIGKILL at the deadline), bounded standard
// output (SIGKILL past the limit), a bounded share of standard error, and bounded memory. The memory bound is
// RLIMIT_DATA, set by `/bin/sh -c 'ulimit -d'` in front of the command: the limit on an address space
// (RLIMIT_AS, `ulimit -v`) would have to leave room for what Go binaries reserve without using (helm and kubectl
// do not start under 1 GiB of it), while RLIMIT_DATA counts what is really allocated, and a Go binary past it
// dies at once with "fatal error: out of memory". The environment is the caller's choice, never inherited.
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
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
}

export interface ProcessResult {
  /** How it ended: exited (see code), or stopped by the runner, or never started (`error`). */
  ended: 'exited' | 'timeout' | 'output' | 'not-found' | 'error';
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  /** The first 64 KiB of standard error. */
  stderr: string;
  error?: Error | undefined;
}

/** Where `command` is: itself when it names a path, else the first executable of that name on `path`. */
export async function findExecutable(command: string, path: string | undefined): Promise<string | undefined> {
  const candidates = command.includes('/')
    ? [command]
    : (path ?? '')
        .split(delimiter)
        .filter((dir) => dir !== '')
        .map((dir) => join(dir, command));
  for (const candidate of candidates) {
    const info = await stat(candidate).catch(() => undefined);
    if (!info?.isFile()) continue;
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return candidate;
  }
  return undefined;
}

/** The command line that runs `binary` with RLIMIT_DATA set to `bytes` (rounded up to KiB, as ulimit counts). */
export function withMemoryLimit(binary: string, args: readonly string[], bytes: number): [string, string[]] {
  const kib = String(Math.ceil(bytes / 1024));
  // $0 is the limit, "$@" the command: nothing of the command's text is ever parsed by the shell.
  return ['/bin/sh', ['-c', 'ulimit -d "$0" || exit 125; exec "$@"', kib, binary, ...args]];
}

/** Runs `command` to its end within the bounds; never rejects. */
export async function runProcess(
  command: string,
  args: readonly string[],
  options: ProcessOptions,
): Promise<ProcessResult> {
  const binary = await findExecutable(command, options.env.PATH);
  if (!binary) {
    const error = Object.assign(new Error(`spawn ${command} ENOENT`), { code: 'ENOENT' });
    return { ended: 'not-found', code: null, signal: null, stdout: '', stderr: '', error };
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
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (child.pid !== undefined) running.delete(child.pid);
      resolve({
        ended,
        code,
        signal,
        stdout: ended === 'output' ? '' : Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        error,
      });
    });
  });
}
