// The error taxonomy of mooring. Errors are grouped by what should happen next, not by which library threw:
// StalledError: the user must act (bad YAML, invalid manifest, forbidden); retrying cannot help.
// WaitingError: not done yet (not stable, rate limited); retry after `retryAfterMs`.
// TransientError: the outside world failed (network, 5xx, 409); back off and retry.
// Each carries what it is about (an object, a source at a revision, or a file position) and its cause.

export interface Subject {
  /** e.g. `Deployment prod/web`, `https://git.example.com/app.git@3f2a1c9`, `apps/web.yaml:14:3` */
  readonly describe: string;
}

export interface MooringErrorOptions {
  subject?: Subject | undefined;
  cause?: unknown;
}

export abstract class MooringError extends Error {
  abstract readonly kind: 'stalled' | 'waiting' | 'transient';
  readonly subject: Subject | undefined;

  constructor(message: string, options: MooringErrorOptions = {}) {
    super(options.subject ? `${options.subject.describe}: ${message}` : message, { cause: options.cause });
    this.subject = options.subject;
    this.name = new.target.name;
  }
}

export class StalledError extends MooringError {
  readonly kind = 'stalled' as const;
}

/** What was asked for does not exist (an object, a deployment's ledger): the CLI exits 1, as kubectl does. */
export class NotFoundError extends StalledError {}

export class WaitingError extends MooringError {
  readonly kind = 'waiting' as const;
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number, options: MooringErrorOptions = {}) {
    super(message, options);
    this.retryAfterMs = retryAfterMs;
  }
}

export class TransientError extends MooringError {
  readonly kind = 'transient' as const;
}

export type Disposition =
  | { action: 'stop' }
  | { action: 'retry-after'; delayMs: number }
  | { action: 'back-off' };

/**
 * The one place that decides whether a failure is retried. Errors we did not classify ourselves are
 * treated as transient: an unknown failure deserves a bounded retry, and the finalizer reports it.
 */
export function classify(error: unknown): Disposition {
  if (error instanceof StalledError) return { action: 'stop' };
  if (error instanceof WaitingError) return { action: 'retry-after', delayMs: error.retryAfterMs };
  return { action: 'back-off' };
}

/** A position in a file, as editors print it (1-based line and column). */
export interface FilePosition {
  file: string;
  line: number;
  column: number;
}

export function formatPosition(pos: FilePosition): string {
  return `${pos.file}:${pos.line}:${pos.column}`;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The one line a commit status shows of an error: an error that lists problems (a set the API server refused)
 * gives its `headline`, which leads with the first; any other error its message.
 */
export function errorHeadline(error: unknown): string {
  const headline = error instanceof MooringError ? (error as { headline?: unknown }).headline : undefined;
  return typeof headline === 'string' && headline ? headline : errorMessage(error);
}

/** How many problems a message lists; the rest are counted (the error keeps them all). */
export const PROBLEMS_SHOWN = 20;

/** Problems as indented lines, at most PROBLEMS_SHOWN of them, then how many more there are. */
export function problemLines(problems: readonly string[], shown = PROBLEMS_SHOWN): string {
  const lines = problems.slice(0, shown).map((p) => `  ${p}`);
  if (problems.length > shown) lines.push(`  … and ${problems.length - shown} more`);
  return lines.join('\n');
}

let collator: Intl.Collator | undefined;

/**
 * Orders `file.yaml:430` before `file.yaml:1002`: numbers within text compared as numbers. The collator is made on
 * first use (ICU's collation data costs every command about 10 ms to load, and most never sort a message).
 */
export function naturalOrder(a: string, b: string): number {
  collator ??= new Intl.Collator('en', { numeric: true });
  return collator.compare(a, b);
}

/**
 * The same kind of error, now saying what it is about (`chart source web: …`): what a source's poll or download
 * threw, before the commit status shows it. An error that already names its subject is left as it is, unless
 * `always` (a dependency named inside its chart's message). Anything but a MooringError is returned unchanged.
 */
export function withSubject(error: unknown, describe: string, always = false): unknown {
  if (!(error instanceof MooringError) || (error.subject !== undefined && !always)) return error;
  const options = { subject: { describe }, cause: error };
  if (error instanceof WaitingError) return new WaitingError(error.message, error.retryAfterMs, options);
  if (error instanceof TransientError) return new TransientError(error.message, options);
  return new StalledError(error.message, options);
}
