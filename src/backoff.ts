// The one back-off formula for retries: exponential with full jitter (AWS's "exponential backoff and jitter"), a
// random delay up to base * 2^attempt, capped, so that writers that failed together do not come back together.

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  random?: (() => number) | undefined;
}

/** The delay before retry number `attempt` (0 for the first retry). */
export function fullJitter(attempt: number, options: BackoffOptions): number {
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** attempt);
  return Math.round((options.random ?? Math.random)() * ceiling);
}
