// The command line read as `mooring … | head -1` reads it: the first line of its standard output, then the pipe
// closed while the command may still be writing. For the tests of a command that outlives its output's reader.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.ts';

export interface FirstLineRun {
  /** The exit code (null when a signal ended it). */
  code: number | null;
  stderr: string;
  /** The first line of standard output, before the reader went away. */
  first: string;
}

/** `mooring ARGS` from the sources, its standard output read until its first line and then closed. */
export function firstLineOnly(args: readonly string[]): Promise<FirstLineRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'src', 'cli', 'main.ts'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let first = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (first) return;
      first = chunk.toString('utf8').split('\n', 1)[0] ?? '';
      child.stdout.destroy();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr, first }));
  });
}
