// Judging in time slices: with a scripted clock, judgements past a turn's slice wait for a later turn of the
// event loop, in the order they came, and a wait still ends with the verdicts it would have had.
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { TimeSlice } from '../../../src/stability/time-slice.ts';
import { type Watchable, waitForStability } from '../../../src/stability/waiter.ts';

/** A clock that moves only when told: each judgement "takes" what the test says. */
function scriptedClock() {
  let now = 0;
  return { clock: () => now, spend: (ms: number) => (now += ms) };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

const widget = (name: string, ready: boolean): KubeObject =>
  ({
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name, namespace: 'ns' },
    status: { ready },
  }) as unknown as KubeObject;

describe('TimeSlice', () => {
  it.each([
    { name: 'cheap tasks all run at once', costMs: 1, tasks: 10, firstTurn: 10 },
    { name: 'a slice fits a few', costMs: 6, tasks: 10, firstTurn: 4 },
    { name: 'one task per turn when each passes the slice', costMs: 30, tasks: 5, firstTurn: 1 },
  ])('$name', async ({ costMs, tasks, firstTurn }) => {
    const { clock, spend } = scriptedClock();
    const slice = new TimeSlice(20, clock);
    const ran: number[] = [];
    for (let i = 0; i < tasks; i++)
      slice.run(() => {
        ran.push(i);
        spend(costMs);
      });
    expect(ran).toHaveLength(firstTurn);
    while (slice.waiting > 0) await turn();
    expect(ran).toEqual([...Array(tasks).keys()]);
  });

  it('starts a new slice once the event loop has had a turn', async () => {
    const { clock, spend } = scriptedClock();
    const slice = new TimeSlice(20, clock);
    let ran = 0;
    slice.run(() => {
      ran += 1;
      spend(25);
    });
    await turn();
    slice.run(() => {
      ran += 1;
    });
    expect(ran).toBe(2);
  });
});

describe('waitForStability in time slices', () => {
  it('judges a burst of expensive objects across turns of the event loop, in order, on their latest copy', async () => {
    const { clock, spend } = scriptedClock();
    const judged: string[] = [];
    const progress: string[] = [];
    const deliveries: Array<() => void> = [];
    const targets: Watchable[] = Array.from({ length: 8 }, (_, i) => ({
      name: `Widget ns/w${i}`,
      watch: (onObject, signal) => {
        // As an informer's list does: every object delivered in one synchronous loop (below).
        deliveries.push(() => {
          onObject(widget(`w${i}`, false));
          onObject(widget(`w${i}`, true));
        });
        return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
      },
    }));
    const waiting = waitForStability(targets, {
      timeoutMs: 10_000,
      slice: new TimeSlice(20, clock),
      rule: (object) => {
        judged.push(object.metadata.name);
        spend(30);
        const ready = (object as unknown as { status: { ready: boolean } }).status.ready;
        return ready
          ? { state: 'stable', message: `${object.metadata.name}: ready` }
          : { state: 'progressing', message: `${object.metadata.name}: not ready` };
      },
      onProgress: (v) => progress.push(v.name),
    });
    for (const deliver of deliveries) deliver();
    expect(judged, 'one judgement past the slice in this turn, the rest later').toEqual(['w0']);
    let turns = 0;
    const counting = (async () => {
      while (judged.length < 8) {
        await turn();
        turns += 1;
      }
    })();
    const result = await waiting;
    await counting;
    expect(result.outcome).toBe('stable');
    expect(turns).toBeGreaterThanOrEqual(7);
    // w0's first copy came while the turn had time; every later one waited, and was judged once, on its
    // latest copy, in the order first heard.
    const inOrder = Array.from({ length: 8 }, (_, i) => `w${i}`);
    expect(judged).toEqual(['w0', ...inOrder]);
    expect(progress).toEqual(['w0', ...inOrder].map((n) => `Widget ns/${n}`));
  });
});
