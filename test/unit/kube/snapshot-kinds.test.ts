// Which versioned collections a render set needs listed: the kinds it holds, and the kinds its objects' fields
// refer to. A fleet of Deployments that read ConfigMaps lists no Secrets, Pods or ReplicaSets on every sync, while
// a set that could bind to their versions still lists them.
import { describe, expect, it } from 'vitest';
import { versionedKindsNeeded } from '../../../src/kube/snapshot.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const object = (apiVersion: string, kind: string, rest: Record<string, unknown> = {}): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name: 'x', namespace: 'ns' },
  ...rest,
});
const sorted = (set: Set<string>) => [...set].sort();
const podSpec = (spec: Record<string, unknown>) => ({ spec: { template: { metadata: {}, spec } } });

describe('the versioned collections a set needs', () => {
  it('a Deployment that reads a ConfigMap lists ConfigMaps; a Service and a ServiceAccount add nothing', () => {
    const set = [
      object('v1', 'ConfigMap'),
      object('v1', 'Service'),
      object('v1', 'ServiceAccount'),
      object(
        'apps/v1',
        'Deployment',
        podSpec({ containers: [{ name: 'c', envFrom: [{ configMapRef: { name: 'settings' } }] }] }),
      ),
    ];
    expect(sorted(versionedKindsNeeded(set))).toEqual(['ConfigMap']);
  });

  it('a Deployment that mounts a Secret lists Secrets; one that refers to nothing lists nothing', () => {
    const mounts = object(
      'apps/v1',
      'Deployment',
      podSpec({ containers: [{ name: 'c' }], volumes: [{ name: 'v', secret: { secretName: 'tls' } }] }),
    );
    expect(sorted(versionedKindsNeeded([mounts]))).toEqual(['Secret']);
    const plain = object('apps/v1', 'Deployment', podSpec({ containers: [{ name: 'c', image: 'web:1' }] }));
    expect(sorted(versionedKindsNeeded([plain]))).toEqual([]);
  });

  it('a set of a Service alone needs none', () => {
    expect(sorted(versionedKindsNeeded([object('v1', 'Service')]))).toEqual([]);
  });

  it('a ReplicaSet or a Pod in the set lists its own kind', () => {
    expect(sorted(versionedKindsNeeded([object('apps/v1', 'ReplicaSet')]))).toEqual(['ReplicaSet']);
    expect(sorted(versionedKindsNeeded([object('v1', 'Pod')]))).toEqual(['Pod']);
  });

  it("an HPA lists the versioned kind its target names, and none for a Deployment's", () => {
    const hpa = (kind: string) =>
      object('autoscaling/v2', 'HorizontalPodAutoscaler', {
        spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind, name: 'web' } },
      });
    expect(sorted(versionedKindsNeeded([hpa('ReplicaSet')]))).toEqual(['ReplicaSet']);
    expect(sorted(versionedKindsNeeded([hpa('Deployment')]))).toEqual([]);
  });

  it("the configuration's reference rules count: a custom kind naming a ConfigMap lists ConfigMaps", () => {
    const set = [object('example.com/v1', 'Widget', { spec: { configRef: 'settings' } })];
    expect(sorted(versionedKindsNeeded(set))).toEqual([]);
    const rules = [{ group: 'example.com', kind: 'Widget', path: 'spec.configRef', target: 'ConfigMap' }];
    expect(sorted(versionedKindsNeeded(set, rules))).toEqual(['ConfigMap']);
  });
});
