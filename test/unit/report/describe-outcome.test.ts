import { describe, expect, it } from 'vitest';
import { type DeployReport, Superseded, Withdrawn } from '../../../src/contract.ts';
import { describeOutcome } from '../../../src/report/commit-status-sync.ts';
import { deployReport } from '../deploy-report.ts';

const report = (outcome: DeployReport['outcome'], extra: Partial<DeployReport> = {}) =>
  deployReport(outcome, { elapsedMs: 3000, ...extra });

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

  it("says a success had the API server's warnings: one whole, several by file, line and topic", () => {
    const podSecurity = {
      text: 'would violate PodSecurity "restricted:latest": privileged',
      object: 'Deployment a/web',
      source: 'web.yaml:6:1',
    };
    const one = report('stable', { warnings: [podSecurity] });
    expect(describeOutcome(one, undefined, 'commit').description).toBe(
      '0/0 stable in 3s (1 warning: web.yaml:6:1: Deployment a/web: would violate PodSecurity "restricted:latest": privileged)',
    );
    const several = report('stable', {
      warnings: [
        { text: 'v1 Endpoints is deprecated in v1.33+', object: 'Endpoints a/ext', source: 'ep.yaml:7:1' },
        { text: 'unknown field "spec.x"', object: 'Deployment a/typo', source: 'typo.yaml:1:1' },
        podSecurity,
        { text: 'something the server says at length, and more', object: 'GET /api/v1/things' },
      ],
    });
    expect(describeOutcome(several, undefined, 'commit').description).toBe(
      '0/0 stable in 3s (4 warnings: ep.yaml:7 deprecated API, typo.yaml:1 unknown field, web.yaml:6 PodSecurity, GET /api/v1/things something the server says at length, an…)',
    );
  });

  it("says a failure or time-out by its rule and the newest warning Event, without the controller's preamble", () => {
    const message =
      'Create Pod pg-0 in StatefulSet pg failed error: pods "pg-0" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true';
    const culprit = {
      name: 'StatefulSet db/pg',
      stability: {
        state: 'progressing' as const,
        message: `StatefulSet db/pg: 0 of 1 replicas ready; Warning FailedCreate (x12) on StatefulSet db/pg: ${message}`,
      },
      warnings: [{ object: 'StatefulSet db/pg', reason: 'FailedCreate', message, count: 12, lastMs: 2 }],
    };
    const timedOut = report('timed-out', {
      wait: { outcome: 'timed-out', verdicts: [culprit], culprit, elapsedMs: 1 },
    });
    expect(describeOutcome(timedOut, undefined, 'commit')).toEqual({
      state: 'failure',
      description:
        'StatefulSet db/pg: 0 of 1 replicas ready; FailedCreate: pods "pg-0" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true',
    });
    // Without warnings: the rule's message, as before.
    const plain = {
      ...culprit,
      stability: { ...culprit.stability, message: 'StatefulSet db/pg: 0 of 1 replicas ready' },
    };
    delete (plain as { warnings?: unknown }).warnings;
    const quiet = report('timed-out', {
      wait: { outcome: 'timed-out', verdicts: [plain], culprit: plain, elapsedMs: 1 },
    });
    expect(describeOutcome(quiet, undefined, 'commit').description).toBe(
      'StatefulSet db/pg: 0 of 1 replicas ready',
    );
  });

  it('tells a sync superseded by a commit from one whose deployment left the configuration', () => {
    const by = { by: 'commit', commit: 'b'.repeat(40) } as const;
    expect(describeOutcome(report('cancelled'), undefined, 'commit', aborted(new Superseded(by)))).toEqual({
      state: 'cancelled',
      description: 'Superseded by commit bbbbbbb before it was stable',
    });
    expect(describeOutcome(report('cancelled'), undefined, 'commit', aborted(new Withdrawn('web')))).toEqual({
      state: 'cancelled',
      description: 'Cancelled: the deployment was removed from the configuration (nothing was deleted)',
    });
    expect(
      describeOutcome(report('cancelled'), undefined, 'commit', aborted(new Error('stop'))).description,
    ).toMatch(/^Agent stopped/);
  });

  it.each([
    [{ by: 'commit', commit: 'c'.repeat(40) }, 'Superseded by commit ccccccc before it was stable'],
    [
      { by: 'image', images: ['registry.test/web@sha256:0123456789ab'] },
      'Superseded by a newer image registry.test/web@sha256:0123456789ab before it was stable',
    ],
    [{ by: 'config' }, 'Superseded by a configuration change before it was stable'],
    [{ by: 'reconcile' }, 'Superseded by a reconcile request before it was stable'],
    [{ by: 'drift' }, 'Superseded by a drift correction before it was stable'],
  ] as const)('names what superseded a sync: %j', (by, description) => {
    expect(describeOutcome(report('cancelled'), undefined, 'start', aborted(new Superseded(by)))).toEqual({
      state: 'cancelled',
      description,
    });
  });
});
