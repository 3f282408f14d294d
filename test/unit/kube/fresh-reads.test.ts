// FreshReads (src/kube/fresh-reads.ts): callers that ask while a read runs share the next one, and no caller is
// ever answered by a read that began before it asked.
import { describe, expect, it } from 'vitest';
import { withDeadline } from '../../../src/kube/deadline.ts';
import { FreshReads } from '../../../src/kube/fresh-reads.ts';

/** A read the test ends by hand, numbered in the order reads start. */
function controlled() {
  const started: { n: number; end: (value: number) => void; fail: (error: Error) => void }[] = [];
  const read = () =>
    new Promise<number>((resolve, reject) => {
      const n = started.length;
      started.push({ n, end: resolve, fail: reject });
    });
  return { started, read };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('FreshReads', () => {
  it('answers those who asked while a read ran with one read begun after it', async () => {
    const reads = new FreshReads<number>();
    const { started, read } = controlled();
    const a = reads.read('ns', read);
    await settle();
    expect(started).toHaveLength(1);
    const b = reads.read('ns', read);
    const c = reads.read('ns', read);
    await settle();
    expect(started).toHaveLength(1);
    started[0]?.end(10);
    expect(await a).toBe(10);
    await settle();
    expect(started).toHaveLength(2);
    started[1]?.end(20);
    expect(await b).toBe(20);
    expect(await c).toBe(20);
    await settle();
    expect(reads.busy).toBe(0);
  });

  it('a failed read fails only those it answers; the next read answers the rest', async () => {
    const reads = new FreshReads<number>();
    const { started, read } = controlled();
    const a = reads.read('ns', read);
    const b = reads.read('ns', read);
    await settle();
    started[0]?.fail(new Error('server gone'));
    await expect(a).rejects.toThrow('server gone');
    await settle();
    started[1]?.end(2);
    expect(await b).toBe(2);
  });

  it('a caller whose sync is cancelled stops waiting at once; the read answers the others', async () => {
    const reads = new FreshReads<number>();
    const { started, read } = controlled();
    const first = reads.read('ns', read);
    const controller = new AbortController();
    // Both wait for the next read, which begins when the first ends.
    const cancelled = withDeadline({ until: Date.now() + 60_000, signal: controller.signal }, () =>
      reads.read('ns', read),
    );
    const other = reads.read('ns', read);
    await settle();
    controller.abort(new Error('superseded'));
    await expect(cancelled).rejects.toThrow('superseded');
    started[0]?.end(5);
    expect(await first).toBe(5);
    await settle();
    expect(started).toHaveLength(2);
    started[1]?.end(7);
    expect(await other).toBe(7);
    await settle();
    expect(reads.busy).toBe(0);
  });

  it('keys are read apart', async () => {
    const reads = new FreshReads<number>();
    const { started, read } = controlled();
    const a = reads.read('one', read);
    const b = reads.read('two', read);
    await settle();
    expect(started).toHaveLength(2);
    started[0]?.end(1);
    started[1]?.end(2);
    expect([await a, await b]).toEqual([1, 2]);
  });

  it('never answers with a read begun before the question (random schedules)', async () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let round = 0; round < 200; round++) {
      const reads = new FreshReads<number>();
      let clock = 0;
      let running = 0;
      let most = 0;
      const begunAt: number[] = [];
      const pending: { end: (v: number) => void; fail: (e: Error) => void; n: number }[] = [];
      const read = () =>
        new Promise<number>((resolve, reject) => {
          const n = begunAt.length;
          begunAt.push(clock++);
          running++;
          most = Math.max(most, running);
          const done = () => running--;
          pending.push({
            n,
            end: (v) => {
              done();
              resolve(v);
            },
            fail: (e) => {
              done();
              reject(e);
            },
          });
        });
      const asks: Promise<void>[] = [];
      let reads_ = 0;
      for (let step = 0; step < 30; step++) {
        if (random() < 0.5) {
          const askedAt = clock++;
          asks.push(
            reads.read('k', read).then(
              (n) => {
                expect(begunAt[n]).toBeGreaterThan(askedAt);
              },
              (error: Error) => {
                const n = Number(error.message);
                expect(begunAt[n]).toBeGreaterThan(askedAt);
              },
            ),
          );
          reads_++;
        } else {
          const next = pending.shift();
          if (random() < 0.2) next?.fail(new Error(String(next.n)));
          else next?.end(next?.n ?? -1);
        }
        await settle();
      }
      while (pending.length > 0 || reads.busy > 0) {
        const next = pending.shift();
        next?.end(next.n);
        await settle();
      }
      await Promise.all(asks);
      // Never more reads than questions, and one read at a time.
      expect(begunAt.length).toBeLessThanOrEqual(reads_);
      expect(most).toBeLessThanOrEqual(1);
    }
  });
});
