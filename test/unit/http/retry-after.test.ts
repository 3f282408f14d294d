// The one reader of Retry-After and the RateLimit headers (src/http/retry-after.ts): what each form means, and
// that garbage, negative, huge and past values give a bounded answer or none.
import { describe, expect, it } from 'vitest';
import {
  MAX_SERVER_DELAY_MS,
  parseRateLimit,
  parseRateLimitRemaining,
  parseRateLimitReset,
  parseRetryAfter,
  rateLimitWindowMs,
  readLimits,
  serverDelayMs,
} from '../../../src/http/retry-after.ts';

const now = Date.parse('2026-11-22T00:00:00Z');
const headers =
  (values: Record<string, string>) =>
  (name: string): string | undefined =>
    values[name];

describe('Retry-After', () => {
  it.each([
    ['120', 120_000],
    [' 7 ', 7_000],
    ['0', 0],
    ['Sun, 22 Nov 2026 00:00:30 GMT', 30_000],
    ['Sunday, 22-Nov-26 00:00:30 GMT', 30_000],
    ['Sun Nov 22 00:00:30 2026', 30_000],
    // A date in the past: ask now, not never.
    ['Sat, 21 Nov 2026 23:00:00 GMT', 0],
    ['Thu, 01 Jan 1970 00:00:00 GMT', 0],
    // Huge: bounded.
    ['999999', MAX_SERVER_DELAY_MS],
    ['99999999999999999999', MAX_SERVER_DELAY_MS],
    ['Fri, 31 Dec 9999 23:59:59 GMT', MAX_SERVER_DELAY_MS],
  ])('reads %j as %d ms', (value, ms) => {
    expect(parseRetryAfter(value, now)).toBe(ms);
  });

  it.each([
    [undefined],
    [null],
    [''],
    ['   '],
    ['soon'],
    ['-5'],
    ['-0.5'],
    ['1.5'],
    ['12abc'],
    ['0x10'],
    ['1e3'],
    ['Infinity'],
    ['NaN'],
    ['2026-11-22T00:00:30Z'],
    ['x 2'],
    ['Sun, 99 Foo 2026 99:99:99 GMT'],
    ['1'.repeat(30)],
  ])('reads %j as nothing', (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it('takes a cap of the caller', () => {
    expect(parseRetryAfter('600', now, 30_000)).toBe(30_000);
    expect(parseRetryAfter('20', now, 30_000)).toBe(20_000);
  });
});

describe('RateLimit-Reset and X-RateLimit-Reset', () => {
  it.each([
    ['50', 50_000],
    ['0', 0],
    ['50;w=60', 50_000],
    [String(now / 1000 + 90), 90_000],
    // A reset already past: ask now.
    [String(now / 1000 - 90), 0],
    ['99999999', MAX_SERVER_DELAY_MS],
    ['later', undefined],
    ['-5', undefined],
    ['5x', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('reads %j as %j ms', (value, ms) => {
    expect(parseRateLimitReset(value, now)).toBe(ms);
  });
});

describe('RateLimit-Remaining', () => {
  it.each([
    ['76;w=21600', 76],
    ['0', 0],
    [' 12 ', 12],
    ['none', undefined],
    ['-1', undefined],
    ['3abc', undefined],
    [undefined, undefined],
  ])('reads %j as %j', (value, remaining) => {
    expect(parseRateLimitRemaining(value)).toBe(remaining);
  });

  it("reads the drafts' combined header and Docker Hub's window", () => {
    expect(parseRateLimit('limit=100, remaining=0, reset=45')).toEqual({ remaining: 0, resetSeconds: 45 });
    expect(parseRateLimit('"default";r=3;t=20')).toEqual({ remaining: 3, resetSeconds: 20 });
    expect(parseRateLimit('r=1.5;t=x')).toEqual({});
    expect(rateLimitWindowMs(undefined, '0;w=21600')).toBe(21_600_000);
    expect(rateLimitWindowMs('0', '100')).toBeUndefined();
  });
});

describe('what a server asked for', () => {
  it('prefers Retry-After, and reads a reset only for a rate limit', () => {
    const both = headers({ 'retry-after': '7', 'x-ratelimit-reset': String(now / 1000 + 60) });
    expect(serverDelayMs(both, now, { rateLimited: true })).toBe(7_000);
    const reset = headers({ 'x-ratelimit-reset': String(now / 1000 + 60) });
    expect(serverDelayMs(reset, now, { rateLimited: true })).toBe(60_000);
    expect(serverDelayMs(reset, now, { rateLimited: false })).toBeUndefined();
    expect(serverDelayMs(headers({ 'ratelimit-reset': '12' }), now, { rateLimited: true })).toBe(12_000);
    expect(serverDelayMs(headers({ ratelimit: 'remaining=0, reset=9' }), now, { rateLimited: true })).toBe(
      9_000,
    );
    expect(serverDelayMs(headers({ 'retry-after': 'garbage' }), now, { rateLimited: true })).toBeUndefined();
    expect(serverDelayMs(headers({ 'retry-after': '600' }), now, { rateLimited: true, capMs: 1000 })).toBe(
      1000,
    );
  });

  it('reads remaining from whichever header says it', () => {
    expect(readLimits(headers({ 'x-ratelimit-remaining': '0' }), now).remaining).toBe(0);
    expect(readLimits(headers({ 'ratelimit-remaining': '4;w=60' }), now)).toEqual({
      retryAfterMs: undefined,
      resetMs: undefined,
      remaining: 4,
      windowMs: 60_000,
    });
  });
});
