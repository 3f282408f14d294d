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
