// Process exit codes of the mooring CLI, stable for scripts.
export const EXIT_OK = 0;
/** The command ran and failed (a deploy that did not become stable, an unreachable server). */
export const EXIT_FAILED = 1;
/**
 * Bad input or usage: unknown flag, invalid config file, invalid manifest, an object outside the namespaces of the
 * deploy, or a request the API server refuses to this identity (401, 403): something the user must change.
 */
export const EXIT_USAGE = 2;

/** Thrown by commands to end with a given exit code after printing `message` to stderr. */
export class ExitError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}
