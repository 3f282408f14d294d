// Install or upgrade, decided per release as Helm decides it: the owner's inventory holding one of the objects the
// release renders now, CRDs and Namespaces (what is deployed first) not counted.
import { describe, expect, it } from 'vitest';
import type { InventoryEntry } from '../../../src/kube/inventory.ts';
import { releaseEvent } from '../../../src/sync/hook-event.ts';

const e = (
  kind: string,
  name: string,
  apiVersion = 'v1',
  namespace: string | undefined = 'app',
): InventoryEntry => ({
  apiVersion,
  kind,
  name,
  namespace,
});
const CRD = e('CustomResourceDefinition', 'gateways.example.com', 'apiextensions.k8s.io/v1', undefined);
const WEB = e('Deployment', 'web', 'apps/v1');
const SVC = e('Service', 'web');

describe('releaseEvent', () => {
  it.each([
    { why: 'no inventory', previous: undefined, release: [WEB], event: 'install' },
    { why: 'an empty inventory', previous: [], release: [WEB], event: 'install' },
    { why: 'the release deployed before', previous: [WEB, SVC], release: [WEB, SVC], event: 'upgrade' },
    { why: 'one object of it deployed before', previous: [WEB], release: [WEB, SVC], event: 'upgrade' },
    { why: 'its CRDs deployed first', previous: [CRD], release: [WEB, SVC], event: 'install' },
    { why: 'its CRDs, which it holds too', previous: [CRD], release: [CRD, WEB], event: 'install' },
    {
      why: 'its Namespace deployed first',
      previous: [e('Namespace', 'app', 'v1', undefined)],
      release: [WEB],
      event: 'install',
    },
    { why: 'a CRD set again', previous: [CRD], release: [CRD], event: 'upgrade' },
    {
      why: 'another API version of the same object',
      previous: [e('Deployment', 'web', 'apps/v1beta2')],
      release: [WEB],
      event: 'upgrade',
    },
    {
      why: 'the same name in another namespace',
      previous: [e('Deployment', 'web', 'apps/v1', 'other')],
      release: [WEB],
      event: 'install',
    },
    {
      why: 'a versioned ConfigMap by its artifact',
      previous: [{ ...e('ConfigMap', 'web-config-v000'), artifact: 'web-config' }],
      release: [{ ...e('ConfigMap', 'web-config-v001'), artifact: 'web-config' }],
      event: 'upgrade',
    },
  ] as const)('$why: $event', ({ previous, release, event }) => {
    expect(releaseEvent(previous, release)).toBe(event);
  });
});
