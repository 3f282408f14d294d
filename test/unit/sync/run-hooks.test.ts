// The runner's order of writes and deletions, as Helm's execHook makes them: before-hook-creation just before each
// hook, hook-succeeded only once the whole phase succeeded (newest first), and on a failure the failed hook per
// hook-failed and the earlier ones per hook-succeeded. The actions record what the runner asks; the cluster's part
// is test/integration/charts-hooks.test.ts.
import { describe, expect, it } from 'vitest';
import type { HookRun } from '../../../src/contract.ts';
import type { ApplyResult, ApplyTarget } from '../../../src/kube/apply.ts';
import type { DeletePolicy, Hook } from '../../../src/render/hooks.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import {
  endSyncHooks,
  type HookActions,
  HookFailedError,
  HooksCancelledError,
  type HookTarget,
  runHooks,
  type SyncEndHook,
} from '../../../src/sync/hooks.ts';

function target(kind: string, name: string, weight: number, policies: DeletePolicy[]): HookTarget {
  const object: KubeObject = { apiVersion: 'v1', kind, metadata: { name, namespace: 'app' } };
  const hook: Hook = {
    phase: 'pre',
    weight,
    deletePolicies: new Set(policies),
    label: 'pre-install',
    flavor: 'helm',
  };
  return { target: { object, plan: {} } as unknown as ApplyTarget, hook };
}

function recorder(failing: string[] = [], running: string[] = []) {
  const log: string[] = [];
  const name = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;
  const actions: HookActions = {
    check: async () => undefined,
    apply: async (targets) => {
      log.push(`apply ${targets.map((t) => name(t.object)).join('+')}`);
      return targets.map((t) => ({ target: t, action: 'created' }) as unknown as ApplyResult);
    },
    wait: async (results) => {
      const verdicts = results.map((r) => {
        const failed = failing.includes(name(r.target.object));
        const still = running.includes(name(r.target.object));
        return {
          name: `${r.target.object.kind} app/${r.target.object.metadata.name}`,
          stability: failed
            ? { state: 'failed' as const, message: 'BackoffLimitExceeded' }
            : still
              ? { state: 'progressing' as const, message: '0 of 1 completions' }
              : { state: 'stable' as const, message: 'complete' },
        };
      });
      // A hook still running when the wait ends: the sync was cancelled (superseded, the agent stopping).
      if (verdicts.some((v) => v.stability.state === 'progressing'))
        return { outcome: 'cancelled', verdicts, culprit: undefined, elapsedMs: 1 };
      const culprit = verdicts.find((v) => v.stability.state === 'failed');
      return { outcome: culprit ? 'failed' : 'stable', verdicts, culprit, elapsedMs: 1 };
    },
    remove: async (object) => {
      log.push(`delete ${name(object)}`);
      return true;
    },
  };
  return { log, actions };
}

const CERTGEN = [
  target('Job', 'certgen-create', 1, ['before-hook-creation', 'hook-succeeded']),
  target('RoleBinding', 'certgen', -4, ['before-hook-creation', 'hook-succeeded']),
  target('ServiceAccount', 'certgen', -5, ['before-hook-creation', 'hook-succeeded']),
];

describe('runHooks', () => {
  it('deletes hook-succeeded hooks after the phase, never before a later hook ran', async () => {
    const { log, actions } = recorder();
    const runs: HookRun[] = [];
    await runHooks(actions, CERTGEN, (r) => runs.push(r));
    expect(log).toEqual([
      'delete ServiceAccount/certgen',
      'apply ServiceAccount/certgen',
      'delete RoleBinding/certgen',
      'apply RoleBinding/certgen',
      'delete Job/certgen-create',
      'apply Job/certgen-create',
      'delete Job/certgen-create',
      'delete RoleBinding/certgen',
      'delete ServiceAccount/certgen',
    ]);
    expect(runs.map((r) => `${r.object} ${r.outcome} ${r.deleted}`)).toEqual([
      'ServiceAccount app/certgen succeeded true',
      'RoleBinding app/certgen succeeded true',
      'Job app/certgen-create succeeded true',
    ]);
  });

  it('a failed hook: no later hook runs; it goes per hook-failed, the earlier ones per hook-succeeded', async () => {
    const hooks = [
      target('ServiceAccount', 'sa', -5, ['hook-succeeded']),
      target('Job', 'migrate', 0, ['hook-failed']),
      target('Job', 'notify', 1, []),
    ];
    const { log, actions } = recorder(['Job/migrate']);
    const runs: HookRun[] = [];
    const run = runHooks(actions, hooks, (r) => runs.push(r));
    await expect(run).rejects.toThrow(HookFailedError);
    await expect(run).rejects.toThrow('pre-install hook Job app/migrate failed: BackoffLimitExceeded');
    expect(log).toEqual([
      'apply ServiceAccount/sa',
      'apply Job/migrate',
      'delete Job/migrate',
      'delete ServiceAccount/sa',
    ]);
    expect(runs.map((r) => `${r.object} ${r.outcome} ${r.deleted}`)).toEqual([
      'ServiceAccount app/sa succeeded true',
      'Job app/migrate failed true',
    ]);
  });

  it('a sync cancelled while a hook runs: the hook is left running, not failed nor deleted, and no later hook runs', async () => {
    const hooks = [
      target('ServiceAccount', 'sa', -5, ['hook-succeeded']),
      target('Job', 'migrate', 0, ['hook-failed', 'hook-succeeded']),
      target('Job', 'notify', 1, []),
    ];
    const { log, actions } = recorder([], ['Job/migrate']);
    const runs: HookRun[] = [];
    const run = runHooks(actions, hooks, (r) => runs.push(r));
    await expect(run).rejects.toThrow(HooksCancelledError);
    await expect(run).rejects.toThrow('pre-install hook Job app/migrate was still running');
    await expect(run).rejects.not.toThrow(HookFailedError);
    expect(log).toEqual(['apply ServiceAccount/sa', 'apply Job/migrate', 'delete ServiceAccount/sa']);
    expect(runs.map((r) => `${r.object} ${r.outcome} ${r.deleted}`)).toEqual([
      'ServiceAccount app/sa succeeded true',
      'Job app/migrate cancelled false',
    ]);
  });

  it('never deletes a CustomResourceDefinition hook', async () => {
    const { log, actions } = recorder();
    await runHooks(
      actions,
      [
        target('CustomResourceDefinition', 'widgets.example.com', 0, [
          'before-hook-creation',
          'hook-succeeded',
        ]),
      ],
      () => undefined,
    );
    expect(log).toEqual(['apply CustomResourceDefinition/widgets.example.com']);
  });
});

describe("Argo CD's hooks, deleted when the sync ends", () => {
  const argo = (kind: string, name: string, weight: number, policies: DeletePolicy[]): HookTarget => {
    const t = target(kind, name, weight, policies);
    return { ...t, hook: { ...t.hook, flavor: 'argo', label: 'PreSync' } };
  };
  const hooks = [
    argo('ServiceAccount', 'migrator', 0, ['hook-succeeded']),
    argo('ConfigMap', 'notes', 1, ['hook-failed']),
    argo('Job', 'check', 2, ['before-hook-creation', 'hook-succeeded', 'hook-failed']),
  ];

  it('leaves them at the phase end, then deletes per the sync outcome, newest first', async () => {
    for (const failed of [false, true]) {
      const { log, actions } = recorder();
      const runs: HookRun[] = [];
      const later: SyncEndHook[] = [];
      await runHooks(
        actions,
        hooks,
        (r) => runs.push(r),
        (h) => later.push(h),
      );
      // Only before-hook-creation acts during the phase.
      expect(log).toEqual([
        'apply ServiceAccount/migrator',
        'apply ConfigMap/notes',
        'delete Job/check',
        'apply Job/check',
      ]);
      expect(runs.map((r) => r.deleted)).toEqual([false, false, false]);
      log.length = 0;
      const told: string[] = [];
      await endSyncHooks(actions, later, failed, (r) => told.push(r.object));
      expect(log).toEqual(
        failed
          ? ['delete Job/check', 'delete ConfigMap/notes']
          : ['delete Job/check', 'delete ServiceAccount/migrator'],
      );
      expect(told).toEqual(
        failed ? ['Job app/check', 'ConfigMap app/notes'] : ['Job app/check', 'ServiceAccount app/migrator'],
      );
      expect(runs.map((r) => r.deleted)).toEqual(failed ? [false, true, true] : [true, false, true]);
    }
  });

  it('says a deletion that was refused in the run, and goes on with the others', async () => {
    const { actions } = recorder();
    const runs: HookRun[] = [];
    const later: SyncEndHook[] = [];
    await runHooks(
      actions,
      hooks,
      (r) => runs.push(r),
      (h) => later.push(h),
    );
    const refusing: HookActions = {
      ...actions,
      remove: async (object) => {
        if (object.kind === 'Job') throw new Error("Job app/check is not this hook's own");
        return true;
      },
    };
    await endSyncHooks(refusing, later, false);
    expect(runs.map((r) => [r.deleted, r.message])).toEqual([
      [true, 'complete'],
      [false, 'complete'],
      [false, "complete; not deleted: Job app/check is not this hook's own"],
    ]);
  });
});
