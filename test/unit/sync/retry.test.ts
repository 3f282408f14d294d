// Which failed syncs the agent retries at the same revision, and how long it waits: what may pass (waiting,
// transient, unknown) is retried with full-jitter back-off capped by the deployment's retryInterval; what the
// user must fix (stalled) waits for something to change.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.ts';
import type { DeployReport } from '../../../src/contract.ts';
import { NotFoundError, StalledError, TransientError, WaitingError } from '../../../src/errors.ts';
import { ApplyRejectedError } from '../../../src/kube/apply.ts';
import { outcomeOf } from '../../../src/sync/outcome.ts';
import { SyncQueue } from '../../../src/sync/queue.ts';
import { cappedRetry, DEFAULT_RETRY_INTERVAL_MS, retryIntervalOf } from '../../../src/sync/retry.ts';
import { deployReport } from '../deploy-report.ts';

const report = (outcome: DeployReport['outcome'], error?: unknown) => deployReport(outcome, { error });

describe('which failed syncs are retried', () => {
  it.each([
    [
      'a namespace that does not exist yet',
      report('error', new WaitingError('namespace "x"', 30_000)),
      {
        result: 'retry',
        delayMs: 30_000,
      },
    ],
    [
      'an unreachable API server',
      report('error', new TransientError('API server unreachable')),
      {
        result: 'retry',
      },
    ],
    ['an error nobody classified', report('error', new Error('socket hang up')), { result: 'retry' }],
    ['an invalid manifest', report('error', new StalledError('app.yaml:3: bad')), { result: 'stalled' }],
    [
      'a set the server refused',
      report('error', new ApplyRejectedError(['x: forbidden'])),
      {
        result: 'stalled',
      },
    ],
    [
      'something that is not there',
      report('error', new NotFoundError('no such thing')),
      {
        result: 'stalled',
      },
    ],
    ['a rollout that failed', report('failed'), { result: 'stalled' }],
    ['a rollout that timed out (the cluster answered)', report('timed-out'), { result: 'stalled' }],
    ['a stable sync', report('stable'), { result: 'done' }],
    ['a superseded sync', report('cancelled'), { result: 'cancelled' }],
  ])('%s', (_what, given, expected) => {
    expect(outcomeOf(given)).toEqual(expected);
  });

  it("caps only a retry with the deployment's interval", () => {
    expect(cappedRetry({ result: 'retry' }, 2000)).toEqual({ result: 'retry', maxDelayMs: 2000 });
    expect(cappedRetry({ result: 'stalled' }, 2000)).toEqual({ result: 'stalled' });
    expect(cappedRetry({ result: 'done' }, 2000)).toEqual({ result: 'done' });
  });
});

describe('how long a retry waits', () => {
  const queue = (random: number) =>
    new SyncQueue({ concurrency: 1, backoffBaseMs: 1000, backoffMaxMs: 300_000, random: () => random });

  it('backs off with full jitter: up to base * 2^attempt, never more than the cap', () => {
    const top = queue(1);
    expect([0, 1, 2, 3].map((a) => top.retryDelay(a, { maxDelayMs: 60_000 }))).toEqual([
      1000, 2000, 4000, 8000,
    ]);
    expect(top.retryDelay(10, { maxDelayMs: 60_000 })).toBe(60_000);
    expect(top.retryDelay(30, { maxDelayMs: 2000 })).toBe(2000);
    // Without a deployment's cap, the queue's.
    expect(top.retryDelay(30)).toBe(300_000);
    // A cap above the queue's own holds: the deployment's interval is the limit.
    expect(top.retryDelay(30, { maxDelayMs: 600_000 })).toBe(600_000);
    expect(queue(0.25).retryDelay(10, { maxDelayMs: 60_000 })).toBe(15_000);
    expect(queue(0).retryDelay(5, { maxDelayMs: 60_000 })).toBe(1);
  });

  it('waits as long as the failure asked, within the cap', () => {
    const q = queue(1);
    expect(q.retryDelay(0, { delayMs: 30_000, maxDelayMs: 60_000 })).toBe(30_000);
    expect(q.retryDelay(0, { delayMs: 30_000, maxDelayMs: 2000 })).toBe(2000);
    expect(q.retryDelay(4, { delayMs: 0, maxDelayMs: 2000 })).toBe(1);
  });

  it('schedules the retries of a sync that may pass at the delays it computes', async () => {
    const delays: string[] = [];
    let calls = 0;
    const q = new SyncQueue({
      concurrency: 1,
      backoffBaseMs: 4,
      random: () => 1,
      onEvent: (e) => e.type === 'retry-scheduled' && delays.push(e.detail ?? ''),
    });
    q.trigger('web', 'r1', async () =>
      ++calls < 4
        ? { result: 'retry', delayMs: calls === 1 ? 50 : undefined, maxDelayMs: 6 }
        : { result: 'done' },
    );
    for (let i = 0; i < 100 && calls < 4; i++) await new Promise((r) => setTimeout(r, 5));
    await q.idle();
    expect(calls).toBe(4);
    expect(delays).toEqual(['6ms', '6ms', '6ms']);
  });
});

describe('retryInterval', () => {
  const config = (deployment: string, source = 'interval: 45s') =>
    parseConfig(`
sources:
  git:
    - {name: app, url: "https://git.example.com/app.git", ${source}}
deployments:
  - {name: web, namespace: web, source: app${deployment}}
`);

  it("defaults to its source's poll interval, and createNamespace to false", () => {
    const c = config('');
    const d = c.deployments[0];
    expect(d?.createNamespace).toBe(false);
    expect(d?.retryInterval).toBeUndefined();
    expect(d && retryIntervalOf(c, d)).toBe(45_000);
  });

  it('is the given interval when set', () => {
    const c = config(', retryInterval: 2s, createNamespace: true');
    const d = c.deployments[0];
    expect(d?.createNamespace).toBe(true);
    expect(d && retryIntervalOf(c, d)).toBe(2000);
  });

  it('is 5m for a source on a cron schedule', () => {
    const c = config('', 'cron: "*/5 * * * *"');
    const d = c.deployments[0];
    expect(d && retryIntervalOf(c, d)).toBe(DEFAULT_RETRY_INTERVAL_MS);
  });

  it('is at least 1s, as every interval that repeats', () => {
    expect(() => config(', retryInterval: 100ms')).toThrow(/under 1s/);
  });
});
