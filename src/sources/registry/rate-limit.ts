// Being a polite registry client: our own per-registry request rate (a token bucket), and reading what the
// registry says about its limits (Retry-After on 429, RateLimit-Remaining as Docker Hub sends it).

export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * A token bucket holding up to one second's worth of requests. Each caller reserves a token at once (the
 * balance may go negative) and sleeps until its turn, so concurrent callers need no queue and stay in order.
 */
export class TokenBucket {
  readonly #rate: number;
  readonly #capacity: number;
  readonly #clock: Clock;
  #tokens: number;
  #updatedAt: number;

  constructor(requestsPerSecond: number, clock: Clock = systemClock) {
    if (!(requestsPerSecond > 0)) throw new RangeError('requestsPerSecond must be positive');
    this.#rate = requestsPerSecond / 1000;
    this.#capacity = Math.max(1, requestsPerSecond);
    this.#clock = clock;
    this.#tokens = this.#capacity;
    this.#updatedAt = clock.now();
  }

  /** Resolves when the caller may send one request. */
  async take(): Promise<void> {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#capacity, this.#tokens + (now - this.#updatedAt) * this.#rate);
    this.#updatedAt = now;
    this.#tokens -= 1;
    if (this.#tokens < 0) await this.#clock.sleep(Math.ceil(-this.#tokens / this.#rate));
  }
}

// When a 429 gives no hint, wait a minute: Docker Hub's windows are hours long, and hammering does not help.
export const DEFAULT_RETRY_AFTER_MS = 60_000;
// A registry asking us to wait a day is better served by a bounded wait and another 429.
const MAX_RETRY_AFTER_MS = 60 * 60_000;

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 10.2.3), in milliseconds from `now`. */
export function parseRetryAfter(value: string | undefined, now: number): number {
  if (value === undefined) return DEFAULT_RETRY_AFTER_MS;
  const text = value.trim();
  let ms: number | undefined;
  if (/^\d+$/.test(text)) ms = Number(text) * 1000;
  else {
    const date = Date.parse(text);
    if (!Number.isNaN(date)) ms = Math.max(0, date - now);
  }
  if (ms === undefined) return DEFAULT_RETRY_AFTER_MS;
  return Math.min(ms, MAX_RETRY_AFTER_MS);
}

/** `RateLimit-Remaining: 76;w=21600` (Docker Hub) or a bare number; undefined when absent or unreadable. */
export function parseRateLimitRemaining(value: string | undefined): number | undefined {
  const match = value === undefined ? null : /^\s*(\d+)/.exec(value);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}
