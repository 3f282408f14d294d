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

/** The headers of an answer, as the client reads them (one value per name). */
export type HeaderReader = (name: string) => string | undefined;

/** `RateLimit-Reset` (delta seconds; a value past 2001 in epoch seconds is read as a time), in ms from `now`. */
export function parseRateLimitReset(value: string | undefined, now: number): number | undefined {
  const match = value === undefined ? null : /^\s*(\d+)/.exec(value);
  if (match?.[1] === undefined) return undefined;
  const seconds = Number(match[1]);
  return seconds > 1_000_000_000 ? Math.max(0, seconds * 1000 - now) : seconds * 1000;
}

/** The window of Docker Hub's `RateLimit-Remaining: 0;w=21600` (or of `RateLimit-Limit`), in ms. */
function windowMs(...values: (string | undefined)[]): number | undefined {
  for (const value of values) {
    const w = value === undefined ? undefined : /;\s*w=(\d+)/.exec(value)?.[1];
    if (w !== undefined) return Number(w) * 1000;
  }
  return undefined;
}

/** The combined `RateLimit` header of the IETF drafts: `remaining=0, reset=50` or `"policy";r=0;t=50`. */
function parseCombined(value: string | undefined): { remaining?: number; resetSeconds?: number } {
  if (value === undefined) return {};
  const remaining = /(?:^|[\s,;])(?:remaining|r)=(\d+)/.exec(value)?.[1];
  const reset = /(?:^|[\s,;])(?:reset|t)=(\d+)/.exec(value)?.[1];
  return {
    ...(remaining !== undefined ? { remaining: Number(remaining) } : {}),
    ...(reset !== undefined ? { resetSeconds: Number(reset) } : {}),
  };
}

export interface Pause {
  /** Epoch ms before which the registry should not be asked again. */
  until: number;
  /** What the registry said, for the log line: `HTTP 429, Retry-After: 120`, `RateLimit-Remaining: 0`. */
  reason: string;
}

/**
 * When a registry may be asked again, from what its answers said: a 429 (Retry-After as seconds or an HTTP date),
 * or no requests left in its window (RateLimit-Remaining: 0 with RateLimit-Reset, Docker Hub's `0;w=SECONDS`,
 * the drafts' combined RateLimit header). Polls of its sources are skipped until then, instead of spending
 * a request each interval on another refusal. Waits are bounded (an hour): a registry that still refuses then
 * sets the next pause.
 */
export class RegistryPause {
  readonly #clock: Clock;
  #pause: Pause | undefined;

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  /** Reads one answer of the registry. Any answer that is not limited lifts an earlier pause. */
  observe(status: number, header: HeaderReader): void {
    const now = this.#clock.now();
    const retryAfter = header('retry-after');
    const combined = parseCombined(header('ratelimit'));
    const remaining = parseRateLimitRemaining(header('ratelimit-remaining')) ?? combined.remaining;
    const reset =
      parseRateLimitReset(header('ratelimit-reset'), now) ??
      (combined.resetSeconds !== undefined ? combined.resetSeconds * 1000 : undefined);
    if (status === 429) {
      const ms =
        retryAfter !== undefined ? parseRetryAfter(retryAfter, now) : (reset ?? DEFAULT_RETRY_AFTER_MS);
      const said = retryAfter !== undefined ? `, Retry-After: ${retryAfter.trim().slice(0, 40)}` : '';
      this.#pause = { until: now + Math.min(ms, MAX_RETRY_AFTER_MS), reason: `HTTP 429${said}` };
      return;
    }
    if (remaining === 0) {
      const ms =
        reset ??
        (retryAfter !== undefined ? parseRetryAfter(retryAfter, now) : undefined) ??
        windowMs(header('ratelimit-remaining'), header('ratelimit-limit')) ??
        DEFAULT_RETRY_AFTER_MS;
      this.#pause = { until: now + Math.min(ms, MAX_RETRY_AFTER_MS), reason: 'RateLimit-Remaining: 0' };
      return;
    }
    this.#pause = undefined;
  }

  /** The pause in force now, or undefined when the registry may be asked. */
  get current(): Pause | undefined {
    if (this.#pause !== undefined && this.#clock.now() >= this.#pause.until) this.#pause = undefined;
    return this.#pause;
  }
}
