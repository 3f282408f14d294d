// The one back-off formula (src/backoff.ts): full jitter, a random share of base * 2^attempt, capped.
import { describe, expect, it } from 'vitest';
import { fullJitter } from '../../src/backoff.ts';

describe('fullJitter', () => {
  it.each([
    [0, 1, 20],
    [3, 1, 160],
    [10, 1, 1000],
    [3, 0.5, 80],
    [3, 0, 0],
  ])('attempt %i with random %f waits %i ms', (attempt, random, expected) => {
    expect(fullJitter(attempt, { baseMs: 20, maxMs: 1000, random: () => random })).toBe(expected);
  });
});

describe('fullJitter bounds', () => {
  it('keeps a floor, under the cap', () => {
    expect(fullJitter(0, { baseMs: 100, maxMs: 1000, minMs: 50, random: () => 0 })).toBe(50);
    expect(fullJitter(5, { baseMs: 100, maxMs: 1000, minMs: 50, random: () => 0.5 })).toBe(500);
    expect(fullJitter(0, { baseMs: 100, maxMs: 30, minMs: 50, random: () => 0 })).toBe(30);
  });

  it('stays finite and capped for any attempt', () => {
    for (const attempt of [0, 52, 1024, Number.MAX_SAFE_INTEGER]) {
      const delay = fullJitter(attempt, { baseMs: 250, maxMs: 5000, random: () => 1 });
      expect(delay).toBe(attempt === 0 ? 250 : 5000);
    }
    expect(fullJitter(-3, { baseMs: 250, maxMs: 5000, random: () => 1 })).toBe(250);
  });

  it('spreads writers that failed together', () => {
    const draws = [0.1, 0.5, 0.9].map((r) => fullJitter(4, { baseMs: 100, maxMs: 60_000, random: () => r }));
    expect(draws).toEqual([160, 800, 1440]);
  });
});
