import { describe, expect, it } from 'vitest';
import { describeOutcome } from '../../../src/report/commit-status-sync.ts';
import type { DeployReport } from '../../../src/sync/deploy.ts';
import { Superseded, Withdrawn } from '../../../src/sync/superseded.ts';

function report(outcome: DeployReport['outcome'], extra: Partial<DeployReport> = {}): DeployReport {
  return {
    outcome,
    summary: '',
    applied: [],
    wait: undefined,
    history: undefined,
    prune: undefined,
    error: undefined,
    elapsedMs: 3000,
    ...extra,
  };
}

function aborted(reason: unknown): AbortSignal {
  const controller = new AbortController();
  controller.abort(reason);
  return controller.signal;
}

describe('describeOutcome', () => {
  it('counts what was pruned in a success', () => {
    const pruned = report('stable', {
      prune: { deleted: ['Service a/x', 'ConfigMap a/y'], planned: [], kept: [] },
    });
    expect(describeOutcome(pruned, undefined, 'commit')).toEqual({
      state: 'success',
      description: '0/0 stable in 3s, 2 pruned',
    });
    expect(describeOutcome(report('stable'), undefined, 'commit').description).toBe('0/0 stable in 3s');
  });

  it('tells a sync superseded by a commit from one whose deployment left the configuration', () => {
    const commit = 'a'.repeat(40);
    expect(
      describeOutcome(
        report('cancelled'),
        undefined,
        'commit',
        aborted(new Superseded('b'.repeat(40))),
        commit,
      ),
    ).toEqual({ state: 'cancelled', description: 'Superseded by bbbbbbb before it was stable' });
    expect(
      describeOutcome(report('cancelled'), undefined, 'commit', aborted(new Withdrawn('web')), commit),
    ).toEqual({
      state: 'cancelled',
      description: 'Cancelled: the deployment was removed from the configuration (nothing was deleted)',
    });
    expect(
      describeOutcome(report('cancelled'), undefined, 'commit', aborted(new Error('stop')), commit)
        .description,
    ).toMatch(/^Agent stopped/);
  });
});
