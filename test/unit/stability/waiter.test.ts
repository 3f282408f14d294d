// The waiter's logic, driven by scripted object histories (the watch itself is tested on the real API server).
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { type Watchable, waitForStability } from '../../../src/stability/waiter.ts';
import { scripted } from './scripted.ts';

const cm = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns' },
});
const pod = (name: string, phase: string, ready = false): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'ns' },
    status: { phase, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  }) as unknown as KubeObject;

describe('waitForStability', () => {
  it('says when the last state seen is stale because the watch broke, and a time-out carries it', async () => {
    const watch: Watchable = {
      name: 'Pod ns/p',
      watch: async (onObject, signal) => {
        onObject(pod('p', 'Pending'));
        onObject(pod('p', 'Pending'), 'cannot watch Pods in namespace ns: connect ECONNREFUSED');
        await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
      },
    };
    const result = await waitForStability([watch], { timeoutMs: 50 });
    expect(result.outcome).toBe('timed-out');
    expect(result.culprit?.stability.state).toBe('progressing');
    expect(result.culprit?.stability.message).toMatch(
      /^Pod ns\/p: .+ \(last seen; since then cannot watch Pods in namespace ns: connect ECONNREFUSED\)$/,
    );
  });

  it('ends stable once every object is stable, reporting progress on the way', async () => {
    const progress: string[] = [];
    const result = await waitForStability(
      [
        scripted('ConfigMap ns/a', [cm('a')]),
        scripted('Pod ns/p', [pod('p', 'Pending'), pod('p', 'Running', true)]),
      ],
      { timeoutMs: 5000, onProgress: (v) => progress.push(`${v.name}=${v.stability.state}`) },
    );
    expect(result.outcome).toBe('stable');
    expect(result.culprit).toBeUndefined();
    expect(progress).toContain('Pod ns/p=stable');
  });

  it('stops at the first failure, naming it, without waiting for the others', async () => {
    const result = await waitForStability(
      [
        scripted('Pod ns/slow', [pod('slow', 'Pending')]),
        scripted('Pod ns/bad', [pod('bad', 'Pending'), pod('bad', 'Failed')]),
      ],
      { timeoutMs: 60_000 },
    );
    expect(result.outcome).toBe('failed');
    expect(result.culprit?.name).toBe('Pod ns/bad');
    expect(result.elapsedMs).toBeLessThan(60_000);
  });

  it('judges an unchanged object again when its verdict asks to (a rule out of time), and ends stable', async () => {
    const judged: string[] = [];
    const result = await waitForStability([scripted('ConfigMap ns/a', [cm('a')])], {
      timeoutMs: 5000,
      rule: (object) => {
        judged.push(object.metadata.name);
        return judged.length === 1
          ? { state: 'progressing', message: 'out of time', againMs: 20 }
          : { state: 'stable', message: 'current' };
      },
    });
    expect(result.outcome).toBe('stable');
    expect(judged).toEqual(['a', 'a']);
  });

  it('asks an unchanged object again twice as late each time its verdict comes back the same', async () => {
    const at: number[] = [];
    const started = Date.now();
    const result = await waitForStability([scripted('ConfigMap ns/a', [cm('a')])], {
      timeoutMs: 1000,
      rule: () => {
        at.push(Date.now() - started);
        return { state: 'progressing', message: 'out of time', againMs: 40 };
      },
    });
    expect(result.outcome).toBe('timed-out');
    // Judged at about 0, 40, 120, 280 and 600 ms: waits of 40, 80, 160 and 320 ms fit in the second, never more
    // (timers fire late under load, never early; so fewer judgements, each gap at least twice the one before).
    expect(at.length).toBeGreaterThanOrEqual(2);
    expect(at.length).toBeLessThanOrEqual(5);
    const gaps = at.slice(1).map((t, i) => t - (at[i] as number));
    for (const [i, gap] of gaps.entries()) expect(gap).toBeGreaterThanOrEqual(40 * 2 ** i - 5);
  });

  it('judges an unchanged object only when it changes if its verdict does not ask again', async () => {
    let judged = 0;
    const result = await waitForStability([scripted('ConfigMap ns/a', [cm('a')])], {
      timeoutMs: 100,
      rule: () => {
        judged += 1;
        return { state: 'progressing', message: 'waiting' };
      },
    });
    expect(result.outcome).toBe('timed-out');
    expect(judged).toBe(1);
  });

  it('times out with the first object that is not stable', async () => {
    const result = await waitForStability(
      [scripted('ConfigMap ns/a', [cm('a')]), scripted('Pod ns/p', [pod('p', 'Pending')])],
      {
        timeoutMs: 50,
      },
    );
    expect(result.outcome).toBe('timed-out');
    expect(result.culprit?.name).toBe('Pod ns/p');
  });

  it('can be cancelled', async () => {
    const controller = new AbortController();
    const waiting = waitForStability([scripted('Pod ns/p', [pod('p', 'Pending')])], {
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    controller.abort();
    expect((await waiting).outcome).toBe('cancelled');
  });

  it('treats an object it cannot watch as failed', async () => {
    const result = await waitForStability(
      [{ name: 'Widget ns/w', watch: async () => Promise.reject(new Error('forbidden')) }],
      { timeoutMs: 5000 },
    );
    expect(result.outcome).toBe('failed');
    expect(result.culprit?.stability.message).toBe('Widget ns/w: cannot watch: forbidden');
  });
});
