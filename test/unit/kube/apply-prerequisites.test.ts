import { describe, expect, it } from 'vitest';
import { prerequisitesOf } from '../../../src/kube/apply-order.ts';

const obj = (apiVersion: string, kind: string, name: string, namespace?: string, spec?: unknown) => ({
  object: {
    apiVersion,
    kind,
    metadata: { name, ...(namespace ? { namespace } : {}) },
    ...(spec ? { spec } : {}),
  },
});

const ns = obj('v1', 'Namespace', 'shop');
const other = obj('v1', 'Namespace', 'other');
const crd = obj('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'widgets.example.com', undefined, {
  group: 'example.com',
  names: { kind: 'Widget' },
});
const gadgets = obj('apiextensions.k8s.io/v1', 'CustomResourceDefinition', 'gadgets.example.com', undefined, {
  group: 'example.com',
  names: { kind: 'Gadget' },
});
const widget = obj('example.com/v1', 'Widget', 'w', 'apps');
const config = obj('v1', 'ConfigMap', 'c', 'shop');
const set = [ns, other, crd, gadgets, widget, config];

describe('prerequisites of objects that cannot be dry-run yet', () => {
  it.each([
    ['an object in a new namespace needs that Namespace only', [config], [ns]],
    ['a custom resource needs the CRD of its kind only', [widget], [crd]],
    ['both', [config, widget], [ns, crd]],
    ['nothing waiting needs nothing', [], []],
    [
      'an object in a namespace the set does not hold needs nothing of it',
      [obj('v1', 'Secret', 's', 'elsewhere')],
      [],
    ],
  ])('%s', (_, waiting, expected) => {
    expect(prerequisitesOf(waiting, set)).toEqual(expected);
  });
});
