import { describe, expect, it } from 'vitest';
import { type SyncOutcome, SyncQueue } from '../../../src/sync/queue.ts';
import { supersededBy } from '../../../src/sync/superseded.ts';

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

/** A run that records its start and waits until released (or aborted). */
function gate() {
  const started: string[] = [];
  const releases = new Map<string, (o: SyncOutcome) => void>();
  const run = (name: string) => (signal: AbortSignal) =>
    new Promise<SyncOutcome>((resolve) => {
      started.push(name);
      releases.set(name, resolve);
      signal.addEventListener('abort', () => resolve({ result: 'cancelled' }));
    });
  return {
    started,
    run,
    release: (name: string, o: SyncOutcome = { result: 'done' }) => releases.get(name)?.(o),
  };
}

describe('SyncQueue', () => {
  it('coalesces triggers that arrive while a deployment syncs into one sync of the newest revision', async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 4 });
    q.trigger('web', 'r1', g.run('r1'));
    await tick();
    // r2..r4 arrive while r1 runs: r1's wait is cancelled and only r4 runs next.
    q.trigger('web', 'r2', g.run('r2'));
    q.trigger('web', 'r3', g.run('r3'));
    q.trigger('web', 'r4', g.run('r4'));
    await tick();
    expect(g.started).toEqual(['r1', 'r4']);
    g.release('r4');
    await q.idle();
  });

  it('tells a sync cancelled by a newer revision which one replaced it', async () => {
    const q = new SyncQueue({ concurrency: 1 });
    let seen: AbortSignal | undefined;
    q.trigger(
      'web',
      'r1',
      (signal) =>
        new Promise<SyncOutcome>((resolve) => {
          seen = signal;
          signal.addEventListener('abort', () => resolve({ result: 'cancelled' }));
        }),
      'commit-1',
    );
    await tick();
    expect(supersededBy(seen)).toBeUndefined();
    q.trigger('web', 'r2', async () => ({ result: 'done' }), 'commit-2');
    await q.idle();
    expect(supersededBy(seen)).toBe('commit-2');
  });

  it('ignores a trigger of the revision that is running or already done', async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 1 });
    expect(q.trigger('web', 'r1', g.run('r1'))).toBe(true);
    expect(q.trigger('web', 'r1', g.run('again'))).toBe(false);
    g.release('r1');
    await q.idle();
    expect(q.trigger('web', 'r1', g.run('again'))).toBe(false);
    expect(g.started).toEqual(['r1']);
  });

  it('runs different deployments in parallel up to the limit', async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 2 });
    for (const d of ['a', 'b', 'c']) q.trigger(d, 'r1', g.run(d));
    await tick();
    expect(g.started).toEqual(['a', 'b']);
    g.release('a');
    await tick();
    expect(g.started).toEqual(['a', 'b', 'c']);
    g.release('b');
    g.release('c');
    await q.idle();
  });

  it('retries transient failures with growing, jittered delays, and stops retrying when done', async () => {
    let calls = 0;
    const delays: string[] = [];
    const q = new SyncQueue({
      concurrency: 1,
      backoffBaseMs: 4,
      random: () => 1,
      onEvent: (e) => e.type === 'retry-scheduled' && delays.push(e.detail ?? ''),
    });
    q.trigger('web', 'r1', async () => (++calls < 3 ? { result: 'retry' } : { result: 'done' }));
    for (let i = 0; i < 40 && calls < 3; i++) await tick(5);
    await q.idle();
    expect(calls).toBe(3);
    expect(delays).toEqual(['4ms', '8ms']);
  });

  it('does not retry a stalled sync until a new revision arrives', async () => {
    let calls = 0;
    const q = new SyncQueue({ concurrency: 1, backoffBaseMs: 1 });
    q.trigger('web', 'bad', async () => {
      calls++;
      return { result: 'stalled' };
    });
    await tick(30);
    expect(calls).toBe(1);
    expect(q.trigger('web', 'bad', async () => ({ result: 'done' }))).toBe(false);
    expect(q.trigger('web', 'fixed', async () => ({ result: 'done' }))).toBe(true);
    await q.idle();
  });

  it('backs off within its cap', () => {
    const q = new SyncQueue({ concurrency: 1, backoffBaseMs: 1000, backoffMaxMs: 60_000, random: () => 0.5 });
    expect(q.backoff(0)).toBe(500);
    expect(q.backoff(3)).toBe(4000);
    expect(q.backoff(20)).toBe(30_000);
  });

  it("cancel ends one deployment's running wait and drops its queued sync, leaving the others", async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 1 });
    q.trigger('gone', 'r1', g.run('gone-r1'));
    q.trigger('kept', 'r1', g.run('kept-r1'));
    await tick();
    q.trigger('gone', 'r2', g.run('gone-r2'));
    q.cancel('gone');
    await tick();
    expect(g.started).toEqual(['gone-r1', 'kept-r1']);
    g.release('kept-r1');
    await q.idle();
    expect(g.started).toEqual(['gone-r1', 'kept-r1']);
  });

  it('a raised concurrency starts waiting syncs at once', async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 1 });
    for (const d of ['a', 'b', 'c']) q.trigger(d, 'r1', g.run(d));
    await tick();
    expect(g.started).toEqual(['a']);
    q.setConcurrency(3);
    await tick();
    expect(g.started).toEqual(['a', 'b', 'c']);
    for (const d of ['a', 'b', 'c']) g.release(d);
    await q.idle();
  });

  it('stop cancels waits, lets the running sync end, and takes no more triggers', async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 1 });
    q.trigger('web', 'r1', g.run('r1'));
    await tick();
    await q.stop();
    expect(q.trigger('web', 'r2', g.run('r2'))).toBe(false);
    expect(g.started).toEqual(['r1']);
  });
});
