// The syncs in flight following the API server's answers (src/sync/adaptive-concurrency.ts), on the real sync queue:
// more syncs start while others wait for a slot and answers stay fast, none more when nothing waits, fewer at a 429,
// and never beyond concurrencyMax. The answers are told as KubeApi tells them (onAnswer), on a clock of the test's.
import { describe, expect, it } from 'vitest';
import type { ApiAnswer } from '../../../src/kube/api.ts';
import { adaptConcurrency } from '../../../src/sync/adaptive-concurrency.ts';
import { SyncQueue } from '../../../src/sync/queue.ts';
import { stepClock } from '../http/step-clock.ts';

const clock = stepClock;

/** Answers as KubeApi gives them to its listeners. */
function answers() {
  const listeners = new Set<(a: ApiAnswer) => void>();
  return {
    onAnswer(listener: (a: ApiAnswer) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    tell(answer: ApiAnswer) {
      for (const l of listeners) l(answer);
    },
    get listening() {
      return listeners.size;
    },
  };
}

/** One window of the rule: a dozen answers of `latencyMs`, the last a second after the window began. */
function window(api: ReturnType<typeof answers>, c: ReturnType<typeof clock>, latencyMs: number) {
  for (let i = 0; i < 12; i++) api.tell({ latencyMs });
  c.advance(1000);
  api.tell({ latencyMs });
}

/** `n` syncs that hold their slot until the test lets them go; how many run now. */
function blockedSyncs(queue: SyncQueue, n: number) {
  let running = 0;
  const gates: (() => void)[] = [];
  for (let i = 0; i < n; i++)
    queue.trigger(`d${i}`, 'r1', async () => {
      running++;
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      return { result: 'done' };
    });
  return {
    running: () => running,
    release: () => {
      for (const g of gates.splice(0)) g();
    },
  };
}

describe('syncs in flight that follow the API server', () => {
  it('grow while syncs wait and answers stay fast, up to concurrencyMax, and halve at a 429', async () => {
    const c = clock();
    const api = answers();
    const queue = new SyncQueue({ concurrency: 4 });
    const seen: number[] = [];
    const stop = adaptConcurrency(api, queue, { concurrency: 4, concurrencyMax: 10, clock: c }, (n) =>
      seen.push(n),
    );
    const syncs = blockedSyncs(queue, 30);
    await Promise.resolve();
    expect(syncs.running()).toBe(4);
    // Windows of fast answers while 26 syncs wait: 4 -> 5 -> 6 -> 8 -> 10, and no further.
    for (let w = 0; w < 8; w++) window(api, c, 20);
    await Promise.resolve();
    expect(seen).toEqual([5, 6, 8, 10]);
    expect(syncs.running()).toBe(10);
    // The server refuses with 429: half as many start from now on (the running ones finish as usual).
    c.advance(1000);
    api.tell({ limited: true });
    expect(queue.concurrency).toBe(5);
    expect(seen.at(-1)).toBe(5);
    stop();
    expect(api.listening).toBe(0);
    syncs.release();
    await queue.stop();
  });

  it('do not grow while no sync waits for a slot, however fast the answers', async () => {
    const c = clock();
    const api = answers();
    const queue = new SyncQueue({ concurrency: 4 });
    const stop = adaptConcurrency(api, queue, { concurrency: 4, concurrencyMax: 32, clock: c });
    const syncs = blockedSyncs(queue, 3);
    for (let w = 0; w < 5; w++) window(api, c, 5);
    expect(queue.concurrency).toBe(4);
    stop();
    syncs.release();
    await queue.stop();
  });

  it('step down when answers slow to several times their best (the server queues), not below a quarter', async () => {
    const c = clock();
    const api = answers();
    const queue = new SyncQueue({ concurrency: 8 });
    const stop = adaptConcurrency(api, queue, { concurrency: 8, concurrencyMax: 16, clock: c });
    const syncs = blockedSyncs(queue, 20);
    window(api, c, 50);
    const grown = queue.concurrency;
    expect(grown).toBe(10);
    for (let w = 0; w < 20; w++) window(api, c, 2000);
    expect(queue.concurrency).toBe(2);
    stop();
    syncs.release();
    await queue.stop();
  });
});
