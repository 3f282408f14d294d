// The one request budget (src/http/token-bucket.ts), on a clock of the test's own: the burst goes at once, the rest
// at the rate, and callers are served in the order they asked.
import { describe, expect, it } from 'vitest';
import { type Clock, TokenBucket } from '../../../src/http/token-bucket.ts';

/** A clock whose sleeps resolve only when the test moves time past them. */
function manualClock(): Clock & { advance(ms: number): Promise<void>; slept: number[] } {
  let now = 1_000_000;
  const sleepers: { at: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        slept.push(ms);
        const sleeper = { at: now + ms, resolve, reject };
        sleepers.push(sleeper);
        signal?.addEventListener('abort', () => {
          sleepers.splice(sleepers.indexOf(sleeper), 1);
          reject(signal.reason);
        });
      }),
    advance: async (ms) => {
      now += ms;
      for (const s of sleepers.filter((x) => x.at <= now)) {
        sleepers.splice(sleepers.indexOf(s), 1);
        s.resolve();
      }
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe('TokenBucket', () => {
  it('lets `burst` requests through at once, then spaces the rest at the rate', async () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ ratePerSecond: 5, burst: 10, clock });
    for (let i = 0; i < 10; i++) expect(await bucket.take()).toBe(0);
    expect(clock.slept).toEqual([]);
    const done: number[] = [];
    for (let i = 0; i < 3; i++) void bucket.take().then(() => done.push(i));
    // One token every 200 ms, the eleventh request's after 200, the twelfth's after 400, …
    expect(clock.slept).toEqual([200, 400, 600]);
    await clock.advance(199);
    expect(done).toEqual([]);
    await clock.advance(1);
    expect(done).toEqual([0]);
    await clock.advance(400);
    expect(done).toEqual([0, 1, 2]);
  });

  it('over a long run, sends no more than burst + rate * time', async () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ ratePerSecond: 50, burst: 100, clock });
    let sent = 0;
    const takes = Array.from({ length: 1000 }, () => bucket.take().then(() => sent++));
    await clock.advance(0);
    expect(sent).toBe(100);
    await clock.advance(1000);
    expect(sent).toBe(150);
    await clock.advance(9000);
    expect(sent).toBe(600);
    await clock.advance(8000);
    expect(sent).toBe(1000);
    await Promise.all(takes);
  });

  it('refills while idle, never above the burst', async () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ ratePerSecond: 10, burst: 3, clock });
    for (let i = 0; i < 3; i++) await bucket.take();
    await clock.advance(60_000);
    for (let i = 0; i < 3; i++) expect(await bucket.take()).toBe(0);
    void bucket.take();
    expect(clock.slept).toEqual([100]);
  });

  it('serves callers in the order they asked: a late caller never overtakes an early one', async () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ ratePerSecond: 1, burst: 1, clock });
    const order: string[] = [];
    await bucket.take();
    const first = bucket.take().then(() => order.push('first'));
    await clock.advance(500);
    // Refilled half a token meanwhile: the newcomer still waits behind the first.
    const second = bucket.take().then(() => order.push('second'));
    await clock.advance(500);
    expect(order).toEqual(['first']);
    await clock.advance(1000);
    await Promise.all([first, second]);
    expect(order).toEqual(['first', 'second']);
  });

  it('gives the token of an aborted wait back', async () => {
    const clock = manualClock();
    const bucket = new TokenBucket({ ratePerSecond: 1, burst: 1, clock });
    await bucket.take();
    const stop = new AbortController();
    const aborted = bucket.take(stop.signal);
    stop.abort(new Error('stopped'));
    await expect(aborted).rejects.toThrow('stopped');
    await clock.advance(1000);
    expect(await bucket.take()).toBe(0);
  });

  it('refuses a rate or burst that cannot work', () => {
    expect(() => new TokenBucket({ ratePerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => new TokenBucket({ ratePerSecond: Number.NaN, burst: 1 })).toThrow(RangeError);
    expect(() => new TokenBucket({ ratePerSecond: 5, burst: 0 })).toThrow(RangeError);
  });
});
