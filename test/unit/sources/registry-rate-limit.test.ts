// The registry client's politeness, on a fake clock: what a registry's 429 and RateLimit-Remaining headers say.
import { describe, expect, it } from 'vitest';
import {
  type Clock,
  DEFAULT_RETRY_AFTER_MS,
  RegistryPause,
} from '../../../src/sources/registry/rate-limit.ts';

// The headers themselves are read by src/http/retry-after.ts (test/unit/http/retry-after.test.ts); the token bucket
// is src/http/token-bucket.ts (test/unit/http/token-bucket.test.ts).
describe('when a registry may be asked again', () => {
  const headers =
    (values: Record<string, string>) =>
    (name: string): string | undefined =>
      values[name];
  const start = Date.parse('2026-11-22T00:00:00Z');
  function clockAt(): Clock & { advance(ms: number): void } {
    let now = start;
    return {
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
      advance: (ms) => {
        now += ms;
      },
    };
  }

  it('pauses for the seconds of a 429 Retry-After, and not a moment longer', () => {
    const clock = clockAt();
    const pause = new RegistryPause(clock);
    expect(pause.current).toBeUndefined();
    pause.observe(429, headers({ 'retry-after': '120' }));
    expect(pause.current).toEqual({ until: start + 120_000, reason: 'HTTP 429, Retry-After: 120' });
    clock.advance(119_999);
    expect(pause.current?.until).toBe(start + 120_000);
    clock.advance(1);
    expect(pause.current).toBeUndefined();
  });

  it('reads an HTTP-date Retry-After', () => {
    const clock = clockAt();
    const pause = new RegistryPause(clock);
    pause.observe(429, headers({ 'retry-after': 'Sun, 22 Nov 2026 00:05:00 GMT' }));
    expect(pause.current?.until).toBe(start + 5 * 60_000);
  });

  it('uses RateLimit-Reset for a 429 without Retry-After, and a minute without either', () => {
    const clock = clockAt();
    const pause = new RegistryPause(clock);
    pause.observe(429, headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': '30' }));
    expect(pause.current?.until).toBe(start + 30_000);
    pause.observe(429, headers({}));
    expect(pause.current?.until).toBe(start + DEFAULT_RETRY_AFTER_MS);
    // An unreadable Retry-After is no hint: neither no wait nor forever.
    pause.observe(429, headers({ 'retry-after': '-5' }));
    expect(pause.current?.until).toBe(start + DEFAULT_RETRY_AFTER_MS);
    pause.observe(429, headers({ 'retry-after': 'soon' }));
    expect(pause.current?.until).toBe(start + DEFAULT_RETRY_AFTER_MS);
    pause.observe(429, headers({ 'retry-after': '99999999999' }));
    expect(pause.current?.until).toBe(start + 60 * 60_000);
  });

  it('pauses a successful answer that leaves no requests, until RateLimit-Reset', () => {
    const clock = clockAt();
    const pause = new RegistryPause(clock);
    pause.observe(200, headers({ 'ratelimit-remaining': '3', 'ratelimit-reset': '600' }));
    expect(pause.current).toBeUndefined();
    pause.observe(200, headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': '600' }));
    expect(pause.current).toEqual({ until: start + 600_000, reason: 'RateLimit-Remaining: 0' });
  });

  it("reads Docker Hub's `0;w=SECONDS` form, bounded to an hour", () => {
    const clock = clockAt();
    const pause = new RegistryPause(clock);
    pause.observe(200, headers({ 'ratelimit-limit': '100;w=21600', 'ratelimit-remaining': '0;w=21600' }));
    expect(pause.current?.until).toBe(start + 60 * 60_000);
    const short = new RegistryPause(clock);
    short.observe(200, headers({ 'ratelimit-remaining': '0;w=90' }));
    expect(short.current?.until).toBe(start + 90_000);
  });

  it('reads the combined RateLimit header of the drafts', () => {
    const clock = clockAt();
    const pause = new RegistryPause(clock);
    pause.observe(200, headers({ ratelimit: 'limit=100, remaining=0, reset=45' }));
    expect(pause.current?.until).toBe(start + 45_000);
    pause.observe(200, headers({ ratelimit: '"default";r=0;t=20' }));
    expect(pause.current?.until).toBe(start + 20_000);
  });

  it('lifts the pause on an answer that is not limited', () => {
    const clock = clockAt();
    const pause = new RegistryPause(clock);
    pause.observe(429, headers({ 'retry-after': '600' }));
    pause.observe(200, headers({}));
    expect(pause.current).toBeUndefined();
  });
});
