// The one reader of what a server says about when to ask again: Retry-After (delta-seconds or an HTTP date, RFC 9110
// 10.2.3), the reset of a rate-limit window (RateLimit-Reset of the IETF drafts and GitLab, X-RateLimit-Reset of
// GitHub and Gitea, the drafts' combined RateLimit header) and the requests left in it (RateLimit-Remaining, as
// Docker Hub sends it). Every delay is in milliseconds from `now`, never negative and never above a cap: a server
// asking for a day is better served by a bounded wait and another refusal. An unreadable value is no value (the
// caller's own back-off applies), never a reason to wait forever or not at all.

/** The headers of an answer, one value per name (lower case); undefined or null when absent. */
export type HeaderReader = (name: string) => string | null | undefined;

/** The longest wait any server can ask of us. */
export const MAX_SERVER_DELAY_MS = 60 * 60_000;
// Epoch seconds past this (2001-09-09) are a time; smaller numbers are seconds from now, as the drafts define them.
const EPOCH_SECONDS = 1_000_000_000;
const DIGITS = /^\d{1,20}$/;
// An HTTP date names its weekday first in all three forms RFC 9110 allows (IMF-fixdate, RFC 850, asctime).
// Date.parse alone reads almost anything ("1", "x 2") as some date.
const HTTP_DATE = /^(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*,?\s+[\w\s:,-]{10,40}$/i;

function bounded(ms: number, capMs: number): number {
  return Math.min(Math.max(0, ms), capMs);
}

/** Retry-After as delta-seconds or an HTTP date; undefined when absent or unreadable (garbage, negative). */
export function parseRetryAfter(
  value: string | null | undefined,
  now: number,
  capMs = MAX_SERVER_DELAY_MS,
): number | undefined {
  if (value === undefined || value === null) return undefined;
  const text = value.trim();
  if (DIGITS.test(text)) return bounded(Number(text) * 1000, capMs);
  if (!HTTP_DATE.test(text)) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : bounded(date - now, capMs);
}

/**
 * A rate-limit window's reset (`RateLimit-Reset`, `X-RateLimit-Reset`): seconds from now, or Unix seconds when the
 * number is that large. A parameter list after the number (`50;w=60`) is allowed; anything else is unreadable.
 */
export function parseRateLimitReset(
  value: string | null | undefined,
  now: number,
  capMs = MAX_SERVER_DELAY_MS,
): number | undefined {
  const seconds = leadingNumber(value);
  if (seconds === undefined) return undefined;
  return bounded(seconds > EPOCH_SECONDS ? seconds * 1000 - now : seconds * 1000, capMs);
}

/** `RateLimit-Remaining: 76;w=21600` (Docker Hub) or a bare number; undefined when absent or unreadable. */
export function parseRateLimitRemaining(value: string | null | undefined): number | undefined {
  return leadingNumber(value);
}

/** The combined `RateLimit` header of the IETF drafts: `remaining=0, reset=50` or `"policy";r=0;t=50`. */
export function parseRateLimit(value: string | null | undefined): {
  remaining?: number;
  resetSeconds?: number;
} {
  if (value === undefined || value === null) return {};
  const remaining = /(?:^|[\s,;])(?:remaining|r)=(\d{1,20})(?![\w.])/.exec(value)?.[1];
  const reset = /(?:^|[\s,;])(?:reset|t)=(\d{1,20})(?![\w.])/.exec(value)?.[1];
  return {
    ...(remaining !== undefined ? { remaining: Number(remaining) } : {}),
    ...(reset !== undefined ? { resetSeconds: Number(reset) } : {}),
  };
}

/** The window of Docker Hub's `RateLimit-Remaining: 0;w=21600` (or of `RateLimit-Limit`), in ms. */
export function rateLimitWindowMs(...values: (string | null | undefined)[]): number | undefined {
  for (const value of values) {
    const w =
      value === undefined || value === null ? undefined : /;\s*w=(\d{1,20})(?![\w.])/.exec(value)?.[1];
    if (w !== undefined) return Number(w) * 1000;
  }
  return undefined;
}

export interface ServerLimits {
  /** Retry-After, when it was readable. */
  retryAfterMs?: number | undefined;
  /** Until the rate-limit window resets, from whichever header says it. */
  resetMs?: number | undefined;
  /** Requests left in the window, from whichever header says it. */
  remaining?: number | undefined;
  /** The window's length, when only that is known (Docker Hub's `0;w=21600`). */
  windowMs?: number | undefined;
}

/** Everything an answer says about limits, each delay bounded by `capMs`. */
export function readLimits(header: HeaderReader, now: number, capMs = MAX_SERVER_DELAY_MS): ServerLimits {
  const combined = parseRateLimit(header('ratelimit'));
  const reset =
    parseRateLimitReset(header('ratelimit-reset'), now, capMs) ??
    parseRateLimitReset(header('x-ratelimit-reset'), now, capMs) ??
    (combined.resetSeconds !== undefined ? bounded(combined.resetSeconds * 1000, capMs) : undefined);
  const window = rateLimitWindowMs(header('ratelimit-remaining'), header('ratelimit-limit'));
  return {
    retryAfterMs: parseRetryAfter(header('retry-after'), now, capMs),
    resetMs: reset,
    remaining:
      parseRateLimitRemaining(header('ratelimit-remaining')) ??
      parseRateLimitRemaining(header('x-ratelimit-remaining')) ??
      combined.remaining,
    windowMs: window === undefined ? undefined : bounded(window, capMs),
  };
}

/**
 * The wait a server asked for: Retry-After first; for a rate-limited answer (`rateLimited`), else the time its
 * window resets. Undefined when it said nothing readable: the caller's back-off decides.
 */
export function serverDelayMs(
  header: HeaderReader,
  now: number,
  options: { rateLimited: boolean; capMs?: number | undefined },
): number | undefined {
  const limits = readLimits(header, now, options.capMs);
  if (limits.retryAfterMs !== undefined) return limits.retryAfterMs;
  return options.rateLimited ? limits.resetMs : undefined;
}

/** A header reader over an answer's headers (fetch's Headers, or fetch.ts's). */
export function fetchHeaders(headers: { get(name: string): string | null }): HeaderReader {
  return (name) => headers.get(name);
}

function leadingNumber(value: string | null | undefined): number | undefined {
  const match = value === undefined || value === null ? null : /^\s*(\d{1,20})(?=$|[\s;,])/.exec(value);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}
