// The collection after a burst of syncs: once, only after the quiet period, never while a sync runs.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clearedWhenQuiet } from '../../../src/quiet-caches.ts';
import { memoryRelease, reducingCollection } from '../../../src/sync/memory-release.ts';

const sync = {} as never;
const report = {} as never;

describe('memoryRelease', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('collects once after the syncs have been quiet for the period, and not again until a sync ends', () => {
    const collect = vi.fn();
    const release = memoryRelease(collect, 15_000);
    release.started?.(sync);
    release.finished?.(sync, report, undefined);
    vi.advanceTimersByTime(14_999);
    expect(collect).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(600_000);
    expect(collect).toHaveBeenCalledTimes(1);
  });

  it('never collects while a sync runs, and a sync that starts cancels the pending collection', () => {
    const collect = vi.fn();
    const release = memoryRelease(collect, 15_000);
    release.started?.(sync);
    release.started?.(sync);
    release.finished?.(sync, report, undefined);
    vi.advanceTimersByTime(60_000);
    expect(collect).not.toHaveBeenCalled(); // the second sync still runs
    release.finished?.(sync, report, undefined);
    vi.advanceTimersByTime(10_000);
    release.started?.(sync);
    vi.advanceTimersByTime(60_000);
    expect(collect).not.toHaveBeenCalled();
    release.finished?.(sync, report, undefined);
    vi.advanceTimersByTime(15_000);
    expect(collect).toHaveBeenCalledTimes(1);
    release.finished?.(sync, report, undefined);
    release.stop();
    vi.advanceTimersByTime(60_000);
    expect(collect).toHaveBeenCalledTimes(1);
  });
  it('empties the caches that served the burst at the quiet moment, before the collection, never during a burst', () => {
    const order: string[] = [];
    const cache = new Map([['a..b', 'diff']]);
    const clear = cache.clear.bind(cache);
    cache.clear = () => {
      order.push('cleared');
      clear();
    };
    clearedWhenQuiet(cache);
    const release = memoryRelease(() => order.push('collected'), 15_000);
    release.started?.(sync);
    release.started?.(sync);
    release.finished?.(sync, report, undefined);
    vi.advanceTimersByTime(60_000);
    expect(cache.size).toBe(1); // a sync still runs
    release.finished?.(sync, report, undefined);
    vi.advanceTimersByTime(15_000);
    expect(cache.size).toBe(0);
    expect(order).toEqual(['cleared', 'collected']);
    // Without a collection on this runtime, the caches are still emptied.
    cache.set('b..c', 'diff');
    const bare = memoryRelease(undefined, 15_000);
    bare.finished?.(sync, report, undefined);
    vi.advanceTimersByTime(15_000);
    expect(cache.size).toBe(0);
  });
});

describe('reducingCollection', () => {
  it('is available on this runtime and frees what is no longer referenced', () => {
    const collect = reducingCollection();
    expect(collect).toBeTypeOf('function');
    let garbage: number[][] | undefined = Array.from({ length: 50 }, () => new Array(100_000).fill(1));
    const held = process.memoryUsage().heapUsed;
    garbage = undefined;
    collect?.();
    expect(garbage).toBeUndefined();
    expect(process.memoryUsage().heapUsed).toBeLessThan(held - 20 * 1024 * 1024);
  });
});
