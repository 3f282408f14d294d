// The adaptive request budget's decisions (src/http/adaptive-rate.ts), on a clock of the test's own: it grows
// while requests wait for it and answers stay fast, holds when nothing waits, steps down when answers slow to
// several times their best, halves at a 429 (once per window, however many came), and stays between its bounds.
import { describe, expect, it } from 'vitest';
import { AdaptiveRate } from '../../../src/http/adaptive-rate.ts';
import { TokenBucket } from '../../../src/http/token-bucket.ts';
import { stepClock } from './step-clock.ts';

const clock = stepClock;

/** One window: `n` answers of `latencyMs`, the last one a second after the window began. */
function window(
  rate: AdaptiveRate,
  c: ReturnType<typeof clock>,
  n: number,
  latencyMs: number,
  waited: boolean,
) {
  let moved: number | undefined;
  for (let i = 0; i < n; i++) {
    if (i === n - 1) c.advance(1000);
    moved = rate.answered(latencyMs, waited) ?? moved;
  }
  return moved;
}

describe('AdaptiveRate', () => {
  it('grows while requests wait for the budget and the server answers as fast as ever, up to its maximum', () => {
    const c = clock();
    const rate = new AdaptiveRate({ start: 200, min: 50, max: 2000, clock: c });
    const seen: number[] = [];
    for (let w = 0; w < 15; w++) seen.push(window(rate, c, 50, 20, true) ?? rate.rate);
    expect(seen[0]).toBe(250);
    expect(seen.every((r, i) => i === 0 || r >= (seen[i - 1] as number))).toBe(true);
    expect(rate.rate).toBe(2000);
  });

  it('holds when nothing waits for the budget: the agent asks for less than it may', () => {
    const c = clock();
    const rate = new AdaptiveRate({ start: 200, min: 50, max: 2000, clock: c });
    for (let w = 0; w < 5; w++) expect(window(rate, c, 50, 20, false)).toBeUndefined();
    expect(rate.rate).toBe(200);
  });

  it('steps down when answers slow to several times their best, and not for a slow answer alone', () => {
    const c = clock();
    const rate = new AdaptiveRate({ start: 400, min: 50, max: 2000, clock: c });
    window(rate, c, 50, 40, false);
    // Five times slower than the best window, and over the floor: the server queues.
    expect(window(rate, c, 50, 400, true)).toBe(320);
    // A few slow answers among fast ones move the median nowhere.
    for (let i = 0; i < 45; i++) rate.answered(40, true);
    for (let i = 0; i < 5; i++) rate.answered(2000, true);
    c.advance(1000);
    expect(rate.answered(40, true)).toBe(400);
  });

  it('halves at a 429, once per window however many came, and never goes below its minimum', () => {
    const c = clock();
    const rate = new AdaptiveRate({ start: 400, min: 100, max: 2000, clock: c });
    c.advance(1000);
    expect(rate.limited()).toBe(200);
    // The rest of the burst of 429s falls in the new window: no decision until it ends.
    for (let i = 0; i < 20; i++) expect(rate.limited()).toBeUndefined();
    c.advance(1000);
    expect(rate.limited()).toBe(100);
    c.advance(1000);
    expect(rate.limited()).toBeUndefined();
    expect(rate.rate).toBe(100);
  });

  it('decides nothing on a window of too few answers', () => {
    const c = clock();
    const rate = new AdaptiveRate({ start: 200, min: 50, max: 2000, clock: c });
    expect(window(rate, c, 5, 20, true)).toBeUndefined();
    expect(rate.rate).toBe(200);
  });
});

describe('TokenBucket.setRate', () => {
  it('keeps what accrued at the old rate and spaces the next requests at the new one', async () => {
    const c = clock();
    const slept: number[] = [];
    const bucket = new TokenBucket({
      ratePerSecond: 10,
      burst: 1,
      clock: { now: c.now, sleep: async (ms) => void slept.push(ms) },
    });
    expect(await bucket.take()).toBe(0);
    bucket.setRate(100);
    expect(bucket.rate).toBe(100);
    // One token short: at 100 a second, 10 ms.
    expect(await bucket.take()).toBe(10);
    expect(() => bucket.setRate(0)).toThrow(RangeError);
  });
});
