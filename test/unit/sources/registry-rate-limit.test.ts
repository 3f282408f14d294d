// The registry client's politeness, on a fake clock: its own request rate, and what a registry's 429 and
// RateLimit-Remaining headers say.
import { describe, expect, it } from 'vitest';
import {
  type Clock,
  DEFAULT_RETRY_AFTER_MS,
  parseRateLimitRemaining,
  parseRetryAfter,
  TokenBucket,
} from '../../../src/sources/registry/rate-limit.ts';

function fakeClock(): Clock & { slept: number[] } {
  let now = 1_000_000;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
  };
}

describe('TokenBucket', () => {
  it('lets a second of requests through at once, then spaces the rest at the rate', async () => {
    const clock = fakeClock();
    const bucket = new TokenBucket(5, clock);
    for (let i = 0; i < 5; i++) await bucket.take();
    expect(clock.slept).toEqual([]);
    await bucket.take();
    await bucket.take();
    expect(clock.slept).toEqual([200, 200]);
  });

  it('refuses a rate that is not positive', () => {
    expect(() => new TokenBucket(0)).toThrow(RangeError);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-22T00:00:00Z');
  it.each([
    ['120', 120_000],
    ['0', 0],
    ['Sun, 22 Nov 2026 00:00:30 GMT', 30_000],
    ['Sat, 21 Nov 2026 23:00:00 GMT', 0],
    ['999999', 60 * 60_000],
  ])('reads %j as %d ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms);
  });

  it('waits a minute when the registry gives no usable hint', () => {
    expect(parseRetryAfter(undefined, now)).toBe(DEFAULT_RETRY_AFTER_MS);
    expect(parseRetryAfter('soon', now)).toBe(DEFAULT_RETRY_AFTER_MS);
  });
});

describe('RateLimit-Remaining', () => {
  it.each([
    ['76;w=21600', 76],
    ['0', 0],
    [' 12 ', 12],
    ['none', undefined],
    [undefined, undefined],
  ])('reads %j as %j', (value, remaining) => {
    expect(parseRateLimitRemaining(value)).toBe(remaining);
  });
});
