// The last resort of the process: a promise rejection nobody handled, or an exception nobody caught, is a defect
// (every failure of a sync is meant to end that sync, not the agent). It is logged on one line and the process
// exits non-zero, so a supervisor restarts it into a known state instead of running on half-broken.
// The fault-injection tests fail if this ever fires.

export const LAST_RESORT_EXIT = 70;

export const LAST_RESORT_MARK = 'mooring: internal error';

function describe(error: unknown): string {
  if (error instanceof Error)
    return `${error.name}: ${error.message}${error.stack ? `\n${error.stack}` : ''}`;
  return String(error);
}

export function installLastResort(write: (line: string) => void = (l) => process.stderr.write(l)): void {
  const fail = (what: string) => (error: unknown) => {
    write(`${LAST_RESORT_MARK} (${what}); exiting: ${describe(error)}\n`);
    process.exit(LAST_RESORT_EXIT);
  };
  process.on('unhandledRejection', fail('unhandled rejection'));
  process.on('uncaughtException', fail('uncaught exception'));
}

/**
 * A reader of standard output or error that goes away (`mooring render | head`, a log pipe closed) ends what is
 * printed there, not the command: a deploy goes on to its end and its exit code, as a render does. Without this,
 * the write's EPIPE was an uncaught error, and the last resort ended the process wherever it was (a deploy half
 * applied). Other errors of the streams are still the last resort's.
 */
export function outliveReaders(
  streams: readonly NodeJS.WritableStream[] = [process.stdout, process.stderr],
): void {
  for (const stream of streams)
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
      throw error;
    });
}

/**
 * Ctrl-C or SIGTERM ends a command that does not handle it itself (`deploy` cancels its wait, `run` stops the
 * agent) through `process.exit`, so that the process's exit hooks run: the tools it started in their own process
 * groups are stopped (src/child-process.ts) and decrypted copies of SOPS files are removed
 * (src/sources/sops/tree.ts). Killed by the signal's default action instead, the process ran none of them: a
 * `kubectl kustomize` went on running, and the decrypted files stayed in the temporary folder. Exit code 128 + the
 * signal's number, as a shell reports it.
 */
export function exitOnSignals(): void {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)
    process.on(signal, () => {
      // A command listening itself decides; its second Ctrl-C (its listener gone) comes here.
      if (process.listenerCount(signal) > 1) return;
      process.exit(code);
    });
}
