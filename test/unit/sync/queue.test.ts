import { describe, expect, it } from 'vitest';
import { type SyncTarget, supersededBy } from '../../../src/contract.ts';
import { type SyncJob, type SyncOutcome, SyncQueue } from '../../../src/sync/queue.ts';

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
  it('forgets a removed deployment: its lane goes at once, or when its running sync ends, and it may come back', async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 2 });
    const lanes = () => [...(q as unknown as { lanes: Map<string, unknown> }).lanes.keys()].sort();
    // 500 environments opened, synced and removed: nothing of them is kept.
    for (let i = 0; i < 500; i++) {
      q.trigger(`pr-${i}`, 'r1', g.run(`pr-${i}`));
      await tick(0);
      g.release(`pr-${i}`);
      await q.idle();
      q.forget(`pr-${i}`);
    }
    expect(lanes()).toEqual([]);
    // Removed while it runs (a retry would follow): cancelled, and gone once it ends, with no retry.
    q.trigger('web', 'r1', g.run('web-1'));
    await tick();
    q.forget('web', new Error('removed'));
    await q.idle();
    expect(lanes()).toEqual([]);
    expect(q.busy('web')).toBe(false);
    // Back in the configuration: synced as new, the same revision included.
    q.trigger('web', 'r1', g.run('web-2'));
    await tick();
    expect(g.started.filter((n) => n.startsWith('web'))).toEqual(['web-1', 'web-2']);
    g.release('web-2');
    await q.idle();
    expect(lanes()).toEqual(['web']);
  });

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

  it('keeps a job held before the queue out of the ready list until its delay, and drops it for a newer one', async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 1 });
    const dropped: unknown[] = [];
    const held: SyncJob = {
      revision: 'r1',
      run: g.run('r1'),
      dropped: (reason) => void dropped.push(reason),
    };
    expect(q.request('web', held, { afterMs: 40 })).toBe('queued');
    // It waits outside the turns: another deployment runs at once, and the held one counts as busy.
    q.trigger('api', 'a1', g.run('a1'));
    await tick();
    expect(g.started).toEqual(['a1']);
    expect(q.busy('web')).toBe(true);
    g.release('a1');
    await tick(60);
    expect(g.started).toEqual(['a1', 'r1']);
    g.release('r1');
    await q.idle();
    // Asked for again while it waits (the next poll): joined to it, its delay not started over.
    q.request('web', { revision: 'r9', run: g.run('r9') }, { afterMs: 40 });
    await tick(20);
    expect(q.request('web', { revision: 'r9', run: g.run('r9 again') }, { afterMs: 40 })).toBe('joined');
    await tick(40);
    expect(g.started).toEqual(['a1', 'r1', 'r9']);
    g.release('r9');
    await q.idle();
    // Held again, then replaced by a newer revision before its delay: dropped, and the newer one runs now.
    q.request(
      'web',
      { revision: 'r2', run: g.run('r2'), dropped: (reason) => void dropped.push(reason) },
      { afterMs: 1_000 },
    );
    q.trigger('web', 'r3', g.run('r3'));
    await tick();
    expect(g.started).toEqual(['a1', 'r1', 'r9', 'r3']);
    expect(dropped).toHaveLength(1);
    g.release('r3');
    await q.idle();
  });

  it('tells a sync cancelled by a newer revision what replaced it', async () => {
    const q = new SyncQueue({ concurrency: 1 });
    let seen: AbortSignal | undefined;
    const target = (commit: string): SyncTarget => ({ commit, images: {}, spec: 0, trigger: 'commit' });
    q.request('web', {
      revision: 'r1',
      target: target('a'.repeat(40)),
      run: (signal) =>
        new Promise<SyncOutcome>((resolve) => {
          seen = signal;
          signal.addEventListener('abort', () => resolve({ result: 'cancelled' }));
        }),
    });
    await tick();
    expect(supersededBy(seen)).toBeUndefined();
    const result = q.request('web', {
      revision: 'r2',
      target: target('b'.repeat(40)),
      run: async () => ({ result: 'done' }),
    });
    expect(result).toBe('superseding');
    await q.idle();
    expect(supersededBy(seen)).toEqual({ by: 'commit', commit: 'b'.repeat(40) });
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

  it('starts a one-deployment change next, not behind a commit that queued a hundred (fair queueing)', async () => {
    const g = gate();
    const q = new SyncQueue({ concurrency: 1 });
    const fleet = Array.from({ length: 100 }, (_, i) => `app-${i}`);
    for (const d of fleet) q.request(d, { revision: 'c1', group: 'commit:c1', run: g.run(d) });
    await tick();
    expect(g.started).toEqual(['app-0']);
    // A later commit changes one deployment that already synced c1... and one still queued for it.
    g.release('app-0');
    await tick();
    q.request('app-0', { revision: 'c2', group: 'commit:c2', run: g.run('app-0 at c2') });
    q.request('solo', { revision: 'c2', group: 'commit:c2', run: g.run('solo at c2') });
    g.release('app-1');
    await tick();
    // Turns alternate between the two commits' syncs, each group in the order it asked.
    expect(g.started).toEqual(['app-0', 'app-1', 'app-0 at c2']);
    g.release('app-0 at c2');
    await tick();
    g.release('app-2');
    await tick();
    expect(g.started).toEqual(['app-0', 'app-1', 'app-0 at c2', 'app-2', 'solo at c2']);
    // Without groups, the same requests wait their turn at the end: what the groups change.
    const plain = gate();
    const p = new SyncQueue({ concurrency: 1 });
    for (const d of fleet) p.request(d, { revision: 'c1', run: plain.run(d) });
    p.request('solo', { revision: 'c2', run: plain.run('solo') });
    for (let i = 0; i < 3; i++) {
      await tick();
      plain.release(`app-${i}`);
    }
    await tick();
    expect(plain.started).not.toContain('solo');
    await q.stop();
    await p.stop();
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

/** A job that answers the requests joined to it, as the agent's do; `open` false once it has answered. */
interface Job extends SyncJob<Job> {
  name: string;
  answers: string[];
  open: boolean;
}

describe('SyncQueue coalescing requests of one revision', () => {
  const target = (trigger: string, over: Partial<SyncTarget> = {}): SyncTarget => ({
    commit: 'c'.repeat(40),
    images: {},
    spec: 0,
    trigger,
    ...over,
  });
  function job(name: string, revision: string, run: Job['run'], over: Partial<Job> = {}): Job {
    const j: Job = {
      name,
      revision,
      run,
      answers: [name],
      open: true,
      join: (other) => {
        if (!j.open) return false;
        j.answers.push(...other.answers.splice(0));
        return true;
      },
      ...over,
    };
    return j;
  }

  it('joins a request of the revision that runs to that sync: no second sync, nothing cancelled', async () => {
    const g = gate();
    const q = new SyncQueue<Job>({ concurrency: 1 });
    let signal: AbortSignal | undefined;
    const started = job('start', 'r1', (s) => {
      signal = s;
      return g.run('start')(s);
    });
    expect(q.request('web', { ...started, target: target('start') })).toBe('queued');
    await tick();
    // The reconcile request, then a poll and a webhook of the same revision, while the start-up sync waits.
    const manual = job('manual', 'r1', g.run('manual'), { force: true, target: target('manual') });
    expect(q.request('web', manual)).toBe('joined');
    expect(q.request('web', job('poll', 'r1', g.run('poll'), { target: target('commit') }))).toBe('joined');
    expect(q.request('web', job('webhook', 'r1', g.run('webhook'), { target: target('commit') }))).toBe(
      'joined',
    );
    await tick();
    expect(signal?.aborted).toBe(false);
    expect(g.started).toEqual(['start']);
    g.release('start');
    await q.idle();
    expect(g.started).toEqual(['start']);
    // The running sync answers for the request that joined it.
    expect(started.answers).toEqual(['start', 'manual', 'poll', 'webhook']);
  });

  it('joins a request of the revision that waits to the queued sync', async () => {
    const g = gate();
    const q = new SyncQueue<Job>({ concurrency: 1 });
    q.request('other', job('other', 'r1', g.run('other')));
    const queued = job('start', 'r1', g.run('start'));
    expect(q.request('web', queued)).toBe('queued');
    expect(q.request('web', job('manual', 'r1', g.run('manual'), { force: true }))).toBe('joined');
    g.release('other');
    await tick();
    g.release('start');
    await q.idle();
    expect(g.started).toEqual(['other', 'start']);
    expect(queued.answers).toEqual(['start', 'manual']);
  });

  it('lets a newer revision supersede the running sync, naming the commit, and hands it the queued requests', async () => {
    const g = gate();
    const q = new SyncQueue<Job>({ concurrency: 1 });
    let signal: AbortSignal | undefined;
    q.request(
      'web',
      job(
        'c1',
        'r1',
        (s) => {
          signal = s;
          return g.run('c1')(s);
        },
        { target: target('start', { commit: '1'.repeat(40) }) },
      ),
    );
    await tick();
    const second = job('c2', 'r2', g.run('c2'), { target: target('commit', { commit: '2'.repeat(40) }) });
    expect(q.request('web', second)).toBe('superseding');
    expect(q.request('web', job('manual', 'r2', g.run('manual'), { force: true }))).toBe('joined');
    const third = job('c3', 'r3', g.run('c3'), { target: target('commit', { commit: '3'.repeat(40) }) });
    expect(q.request('web', third)).toBe('queued');
    await tick();
    expect(supersededBy(signal)).toEqual({ by: 'commit', commit: '2'.repeat(40) });
    expect(g.started).toEqual(['c1', 'c3']);
    // c3 replaced c2 before it ran: it answers what c2 was to answer.
    expect(third.answers).toEqual(['c3', 'c2', 'manual']);
    g.release('c3');
    await q.idle();
  });

  it('reruns an ended revision only when forced (a reconcile request, a drift correction)', async () => {
    const g = gate();
    const q = new SyncQueue<Job>({ concurrency: 1 });
    q.request('web', job('first', 'r1', g.run('first')));
    await tick();
    g.release('first');
    await q.idle();
    expect(q.request('web', job('poll', 'r1', g.run('poll')))).toBe('settled');
    expect(q.request('web', job('manual', 'r1', g.run('manual'), { force: true }))).toBe('queued');
    await tick();
    g.release('manual');
    await q.idle();
    expect(g.started).toEqual(['first', 'manual']);
  });

  it('runs a request after a sync of its revision that has already answered, without cancelling it', async () => {
    const g = gate();
    const q = new SyncQueue<Job>({ concurrency: 1 });
    let signal: AbortSignal | undefined;
    const ending = job('ending', 'r1', (s) => {
      signal = s;
      return g.run('ending')(s);
    });
    q.request('web', ending);
    await tick();
    ending.open = false;
    expect(q.request('web', job('manual', 'r1', g.run('manual'), { force: true }))).toBe('queued');
    expect(signal?.aborted).toBe(false);
    g.release('ending');
    await tick();
    expect(g.started).toEqual(['ending', 'manual']);
    g.release('manual');
    await q.idle();
  });

  it('says a reconcile request or a changed spec superseded a sync when neither commit nor image moved', async () => {
    const q = new SyncQueue<Job>({ concurrency: 1 });
    const signals: AbortSignal[] = [];
    const waiting = (s: AbortSignal) =>
      new Promise<SyncOutcome>((resolve) => {
        signals.push(s);
        s.addEventListener('abort', () => resolve({ result: 'cancelled' }));
      });
    const image = { web: { image: 'example/web', digest: `sha256:${'1'.repeat(64)}` } };
    q.request('web', job('start', 'r1|release 0', waiting, { target: target('start', { images: image }) }));
    await tick();
    // Another ledger state (a release recorded meanwhile), the same commit and image: no "newer image".
    q.request(
      'web',
      job('manual', 'r1|release 1', waiting, { force: true, target: target('manual', { images: image }) }),
    );
    await tick();
    expect(supersededBy(signals[0])).toEqual({ by: 'reconcile' });
    q.request(
      'web',
      job('config', 'r1|release 1|spec 1', waiting, { target: target('config', { images: image, spec: 1 }) }),
    );
    await tick();
    expect(supersededBy(signals[1])).toEqual({ by: 'config' });
    const newer = { web: { image: 'example/web', digest: `sha256:${'2'.repeat(64)}` } };
    q.request('web', job('image', 'r2', waiting, { target: target('image', { images: newer, spec: 1 }) }));
    await tick();
    expect(supersededBy(signals[2])).toEqual({ by: 'image', images: ['example/web@sha256:222222222222'] });
    await q.stop();
  });
});

describe('waits hold no slot', () => {
  it('starts the next sync while one only waits, and is idle only when both ended', async () => {
    const q = new SyncQueue({ concurrency: 1 });
    const order: string[] = [];
    let endWait: () => void = () => undefined;
    const waited = new Promise<void>((resolve) => {
      endWait = resolve;
    });
    q.trigger('fleet-wide', 'r1', async (_signal, release) => {
      order.push('fleet-wide applied');
      release();
      release(); // twice is once
      await waited;
      order.push('fleet-wide stable');
      return { result: 'done' };
    });
    let started: () => void = () => undefined;
    const oneApp = new Promise<void>((resolve) => {
      started = resolve;
    });
    q.trigger('one-app', 'r1', async () => {
      order.push('one-app synced');
      started();
      return { result: 'done' };
    });
    await oneApp;
    let idle = false;
    const idled = q.idle().then(() => {
      idle = true;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(idle).toBe(false);
    endWait();
    await idled;
    expect(order).toEqual(['fleet-wide applied', 'one-app synced', 'fleet-wide stable']);
  });

  it('still bounds the work: with one slot, a sync that does not release it holds the next', async () => {
    const q = new SyncQueue({ concurrency: 1 });
    const order: string[] = [];
    let finish: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      finish = resolve;
    });
    q.trigger('a', 'r1', async () => {
      await held;
      order.push('a');
      return { result: 'done' };
    });
    q.trigger('b', 'r1', async () => {
      order.push('b');
      return { result: 'done' };
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(order).toEqual([]);
    finish();
    await q.idle();
    expect(order).toEqual(['a', 'b']);
  });
});
