// The test bed's kubelet starts no Pod whose configuration is missing, and says so in a kubelet's words: the
// rollouts of a dangling ConfigMap or Secret version must fail on the bed as they do on a cluster.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  blockedPodStatus,
  type ConfigKind,
  configProblem,
  configReferences,
} from '../../testbed/pod-config.ts';

const pod: V1Pod = {
  metadata: { name: 'web-1', namespace: 'shop', uid: 'u1' },
  spec: {
    volumes: [
      {
        name: 'config',
        configMap: { name: 'web-config-v001', items: [{ key: 'app.yaml', path: 'app.yaml' }] },
      },
      { name: 'maybe', configMap: { name: 'extra', optional: true } },
      { name: 'tls', secret: { secretName: 'web-tls' } },
      {
        name: 'kube-api-access',
        projected: {
          sources: [
            { serviceAccountToken: { path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          ],
        },
      },
      { name: 'scratch', emptyDir: {} },
    ],
    initContainers: [
      {
        name: 'migrate',
        image: 'm',
        env: [{ name: 'DB', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } }],
      },
    ],
    containers: [
      {
        name: 'app',
        image: 'a',
        envFrom: [{ configMapRef: { name: 'web-env' } }, { secretRef: { name: 'opt', optional: true } }],
      },
      {
        name: 'side',
        image: 's',
        env: [{ name: 'LEVEL', valueFrom: { configMapKeyRef: { name: 'web-env', key: 'level' } } }],
      },
    ],
  },
};

const all: Record<string, string[]> = {
  'ConfigMap/web-config-v001': ['app.yaml'],
  'Secret/web-tls': ['tls.crt', 'tls.key'],
  'ConfigMap/kube-root-ca.crt': ['ca.crt'],
  'Secret/db': ['url'],
  'ConfigMap/web-env': ['level'],
};
const lookupOf =
  (objects: Record<string, string[]>) =>
  (kind: ConfigKind, name: string): ReadonlySet<string> | undefined => {
    const keys = objects[`${kind}/${name}`];
    return keys ? new Set(keys) : undefined;
  };
const without = (key: string, keys?: string[]) => {
  const copy = { ...all };
  if (keys) copy[key] = keys;
  else delete copy[key];
  return copy;
};
const now = new Date('2026-01-01T00:00:00Z');

describe('the test-bed kubelet checks a Pod configuration before starting it', () => {
  it('finds every non-optional reference, volumes first', () => {
    expect(configReferences(pod).map((r) => [r.kind, r.name, r.volume ?? r.container, r.keys])).toEqual([
      ['ConfigMap', 'web-config-v001', 'config', ['app.yaml']],
      ['Secret', 'web-tls', 'tls', []],
      ['ConfigMap', 'kube-root-ca.crt', 'kube-api-access', ['ca.crt']],
      ['Secret', 'db', 'migrate', ['url']],
      ['ConfigMap', 'web-env', 'app', []],
      ['ConfigMap', 'web-env', 'side', ['level']],
    ]);
  });

  it('starts a Pod whose configuration is all there', () => {
    expect(configProblem('shop', configReferences(pod), lookupOf(all))).toBeUndefined();
  });

  it.each([
    [
      without('ConfigMap/web-config-v001'),
      'mount',
      'FailedMount',
      'MountVolume.SetUp failed for volume "config" : configmap "web-config-v001" not found',
    ],
    [
      without('ConfigMap/web-config-v001', ['other']),
      'mount',
      'FailedMount',
      'MountVolume.SetUp failed for volume "config" : configmap references non-existent config key: app.yaml',
    ],
    [
      without('ConfigMap/kube-root-ca.crt'),
      'mount',
      'FailedMount',
      'MountVolume.SetUp failed for volume "kube-api-access" : configmap "kube-root-ca.crt" not found',
    ],
    [without('Secret/db'), 'start', 'Failed', 'Error: secret "db" not found'],
    [without('Secret/db', ['password']), 'start', 'Failed', "Error: couldn't find key url in Secret shop/db"],
    [without('ConfigMap/web-env'), 'start', 'Failed', 'Error: configmap "web-env" not found'],
    [
      without('ConfigMap/web-env', []),
      'start',
      'Failed',
      "Error: couldn't find key level in ConfigMap shop/web-env",
    ],
  ])('refuses a Pod missing part of it (%#)', (objects, stage, reason, message) => {
    const problem = configProblem('shop', configReferences(pod), lookupOf(objects));
    expect([problem?.stage, problem?.reason, problem?.message]).toEqual([stage, reason, message]);
  });

  it('reports a Pod whose volumes cannot be mounted as Pending, every container waiting', () => {
    const problem = configProblem('shop', configReferences(pod), lookupOf(without('Secret/web-tls')));
    if (!problem) throw new Error('expected a problem');
    const status = blockedPodStatus(pod, problem, '10.244.0.9', 'BestEffort', now);
    expect(status.phase).toBe('Pending');
    expect(status.podIP).toBeUndefined();
    expect(status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    expect(status.initContainerStatuses?.map((c) => c.state?.waiting?.reason)).toEqual(['PodInitializing']);
    expect(status.containerStatuses?.map((c) => c.state?.waiting?.reason)).toEqual([
      'PodInitializing',
      'PodInitializing',
    ]);
  });

  it('reports the container whose environment is missing in CreateContainerConfigError', () => {
    const problem = configProblem('shop', configReferences(pod), lookupOf(without('ConfigMap/web-env', [])));
    if (!problem) throw new Error('expected a problem');
    const status = blockedPodStatus(pod, problem, '10.244.0.9', 'BestEffort', now);
    expect(status.phase).toBe('Running');
    expect(status.initContainerStatuses?.[0]?.state?.terminated?.reason).toBe('Completed');
    expect(
      status.containerStatuses?.map((c) => [c.name, c.state?.waiting?.reason, c.state?.waiting?.message]),
    ).toEqual([
      ['app', undefined, undefined],
      ['side', 'CreateContainerConfigError', "couldn't find key level in ConfigMap shop/web-env"],
    ]);
    const init = configProblem('shop', configReferences(pod), lookupOf(without('Secret/db')));
    if (!init) throw new Error('expected a problem');
    const held = blockedPodStatus(pod, init, 'ip', 'BestEffort', now);
    expect(held.phase).toBe('Pending');
    expect(held.initContainerStatuses?.[0]?.state?.waiting?.reason).toBe('CreateContainerConfigError');
    expect(held.containerStatuses?.every((c) => c.state?.waiting?.reason === 'PodInitializing')).toBe(true);
  });
});
