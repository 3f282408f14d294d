import { describe, expect, it } from 'vitest';
import { appsCollectionPath, selectorString, workloadPath } from '../../../src/kube/rollout/paths.ts';

describe('rollout request paths', () => {
  it.each([
    ['Deployment', '/apis/apps/v1/namespaces/prod/deployments/web'],
    ['StatefulSet', '/apis/apps/v1/namespaces/prod/statefulsets/web'],
    ['DaemonSet', '/apis/apps/v1/namespaces/prod/daemonsets/web'],
    ['ReplicaSet', '/apis/apps/v1/namespaces/prod/replicasets/web'],
  ])('names a %s', (kind, path) => {
    expect(workloadPath({ kind, namespace: 'prod', name: 'web' })).toBe(path);
  });

  it('names the scale subresource', () => {
    expect(workloadPath({ kind: 'StatefulSet', namespace: 'prod', name: 'db' }, 'scale')).toBe(
      '/apis/apps/v1/namespaces/prod/statefulsets/db/scale',
    );
  });

  it('names collections, and escapes what would change the path', () => {
    expect(appsCollectionPath('ControllerRevision', 'prod')).toBe(
      '/apis/apps/v1/namespaces/prod/controllerrevisions',
    );
    expect(workloadPath({ kind: 'Deployment', namespace: 'a/b', name: 'x?y' })).toBe(
      '/apis/apps/v1/namespaces/a%2Fb/deployments/x%3Fy',
    );
  });

  it('refuses a kind that is not an apps/v1 workload', () => {
    expect(() => workloadPath({ kind: 'Pod', namespace: 'prod', name: 'web' })).toThrow(/Pod is not/);
  });
});

describe('selectorString', () => {
  it('writes labels and every operator in the list API syntax', () => {
    expect(
      selectorString({
        matchLabels: { app: 'web', tier: 'front' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod', 'staging'] },
          { key: 'track', operator: 'NotIn', values: ['canary'] },
          { key: 'owner', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('app=web,tier=front,env in (prod,staging),track notin (canary),owner,!legacy');
  });

  it('refuses an unknown operator and an empty selector', () => {
    expect(() => selectorString({ matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] })).toThrow(
      /operator Gt is not one of/,
    );
    expect(() => selectorString({})).toThrow(/empty selector/);
    expect(() => selectorString(undefined)).toThrow(/empty selector/);
  });
});
