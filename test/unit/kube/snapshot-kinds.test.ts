// Which versioned collections a render set needs listed: a fleet of Deployments and ConfigMaps lists no Pods and
// no ReplicaSets on every sync, while a set that could bind to their versions still lists them.
import { describe, expect, it } from 'vitest';
import { versionedKindsNeeded } from '../../../src/kube/snapshot.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const object = (apiVersion: string, kind: string): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name: 'x', namespace: 'ns' },
});
const sorted = (set: Set<string>) => [...set].sort();

describe('the versioned collections a set needs', () => {
  it('a Deployment refers to ConfigMaps and Secrets; a Service and a ServiceAccount add nothing more', () => {
    const set = [
      object('v1', 'ConfigMap'),
      object('v1', 'Service'),
      object('v1', 'ServiceAccount'),
      object('apps/v1', 'Deployment'),
    ];
    expect(sorted(versionedKindsNeeded(set))).toEqual(['ConfigMap', 'Secret']);
  });

  it('a set of a Service alone needs none', () => {
    expect(sorted(versionedKindsNeeded([object('v1', 'Service')]))).toEqual([]);
  });

  it('a ReplicaSet or a Pod in the set lists its own kind', () => {
    expect(sorted(versionedKindsNeeded([object('apps/v1', 'ReplicaSet')]))).toEqual([
      'ConfigMap',
      'ReplicaSet',
      'Secret',
    ]);
    expect(sorted(versionedKindsNeeded([object('v1', 'Pod')]))).toEqual(['ConfigMap', 'Pod', 'Secret']);
  });

  it('an HPA may target any versioned kind outside the set: all four', () => {
    expect(sorted(versionedKindsNeeded([object('autoscaling/v2', 'HorizontalPodAutoscaler')]))).toEqual([
      'ConfigMap',
      'Pod',
      'ReplicaSet',
      'Secret',
    ]);
  });

  it("the configuration's reference rules count: a custom kind naming a ConfigMap lists ConfigMaps", () => {
    const set = [object('example.com/v1', 'Widget')];
    expect(sorted(versionedKindsNeeded(set))).toEqual([]);
    const rules = [{ group: 'example.com', kind: 'Widget', path: 'spec.configRef', target: 'ConfigMap' }];
    expect(sorted(versionedKindsNeeded(set, rules))).toEqual(['ConfigMap']);
  });
});
