// The sources the agents of several clusters share (src/sync/shared-sources.ts): one client per source and
// settings, given back by its last user, and one schedule whose every tick polls the source in each agent under
// one trigger. (Shared requests to a real Git server: test/integration/clusters.test.ts.)
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { gitSource } from '../../../src/config/schema.ts';
import { type PollTrigger, SharedSources } from '../../../src/sync/shared-sources.ts';

const source = (fields: Record<string, unknown> = {}) =>
  gitSource.parse({ name: 'fleet', url: 'https://git.example.test/fleet.git', ...fields });

describe('shared sources', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('gives the agents of the same source one repository, and a new one once every agent gave it back', () => {
    const shared = new SharedSources('/tmp/mooring-shared-test');
    const a = shared.git(source());
    const b = shared.git(source());
    expect(b.value).toBe(a.value);
    // Other settings (another branch, another credential) are another client.
    const other = shared.git(source({ ref: { branch: 'staging' } }));
    expect(other.value).not.toBe(a.value);
    a.release();
    a.release(); // a second release of the same lease changes nothing
    expect(shared.git(source()).value).toBe(b.value);
    b.release();
  });

  it('polls every agent of a source on one schedule, each tick under a trigger of its own', () => {
    const shared = new SharedSources('/tmp/mooring-shared-test');
    const ticks: [string, PollTrigger][] = [];
    const spec = source({ interval: '10s' });
    const stopA = shared.schedule(spec, (t) => ticks.push(['a', t]));
    vi.advanceTimersByTime(4_000);
    const stopB = shared.schedule(spec, (t) => ticks.push(['b', t]));
    vi.advanceTimersByTime(6_000);
    // One timer: b joined a's schedule, and both were polled under the same trigger.
    expect(ticks.map(([who]) => who)).toEqual(['a', 'b']);
    expect(ticks[0]?.[1]).toBe(ticks[1]?.[1]);
    vi.advanceTimersByTime(10_000);
    expect(ticks).toHaveLength(4);
    expect(ticks[2]?.[1]).not.toBe(ticks[0]?.[1]);
    stopA();
    vi.advanceTimersByTime(10_000);
    expect(ticks.slice(4).map(([who]) => who)).toEqual(['b']);
    stopB();
    vi.advanceTimersByTime(60_000);
    expect(ticks).toHaveLength(5);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('keeps sources of other settings on schedules of their own', () => {
    const shared = new SharedSources('/tmp/mooring-shared-test');
    const seen: string[] = [];
    const fast = source({ interval: '1s' });
    const slow = source({ interval: '5s' });
    const stops = [
      shared.schedule(fast, () => seen.push('fast')),
      shared.schedule(slow, () => seen.push('slow')),
    ];
    vi.advanceTimersByTime(5_000);
    expect(seen.filter((s) => s === 'fast')).toHaveLength(5);
    expect(seen.filter((s) => s === 'slow')).toHaveLength(1);
    for (const stop of stops) stop();
  });
});
