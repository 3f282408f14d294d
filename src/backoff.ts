// The one back-off formula for retries: exponential with full jitter (AWS's "exponential backoff and jitter"), a
// random delay up to base * 2^attempt, capped, so that writers that failed together do not come back together.
// A floor (minMs) keeps a retry loop from spinning when the random draw is near zero.

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** The shortest delay returned (0 by default); the cap still wins when it is lower. */
  minMs?: number | undefined;
  random?: (() => number) | undefined;
}

/** The delay before retry number `attempt` (0 for the first retry). */
export function fullJitter(attempt: number, options: BackoffOptions): number {
  const exponent = Math.max(0, Math.min(attempt, 52));
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** exponent);
  const delay = Math.round((options.random ?? Math.random)() * ceiling);
  return Math.min(Math.max(delay, options.minMs ?? 0), options.maxMs);
}
