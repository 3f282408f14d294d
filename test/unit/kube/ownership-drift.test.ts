// What managed fields say about drift, read against the manifest mooring applied. The managedFields lists are
// what a Kubernetes 1.37.2 API server wrote (test/fixtures/managed-fields/README.md says how they were made).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type FieldOwner, type FieldsV1, fieldOwners } from '../../../src/kube/field-owners.ts';
import { type OwnershipReading, readOwnership } from '../../../src/kube/ownership-drift.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const dir = new URL('../../fixtures/managed-fields/', import.meta.url);
const manifest = (name: string) => parse(readFileSync(new URL(name, dir), 'utf8')) as KubeObject;
const captured = (name: string) => fieldOwners(JSON.parse(readFileSync(new URL(name, dir), 'utf8'))) ?? [];
const env = 'spec.template.spec.containers[name=web].env';
const nothing: OwnershipReading = { taken: [], gone: [], added: [] };

describe('readOwnership: managed fields as a 1.37 server writes them', () => {
  const cases: [string, string, string, OwnershipReading][] = [
    // Right after mooring's apply: it owns all it sets; the controller's entry is status (and its annotation).
    ['as mooring applied it', 'web.yaml', 'web-applied.json', nothing],
    // kubectl scale: an Update of subresource scale takes spec.replicas.
    [
      'kubectl scale',
      'web.yaml',
      'web-scaled.json',
      { taken: [{ path: 'spec.replicas', by: ['kubectl'] }], gone: [], added: [] },
    ],
    // kubectl edit: the label it changed is taken; the env entry it added is its own.
    [
      'kubectl edit: a label changed, an env entry added',
      'web.yaml',
      'web-edited.json',
      {
        taken: [{ path: 'metadata.labels.tier', by: ['kubectl-edit'] }],
        gone: [],
        added: [{ path: `${env}[name=DEBUG]`, by: ['kubectl-edit'] }],
      },
    ],
    // A forced apply takes the label back; the env entry the manifest does not set stays kubectl-edit's.
    [
      'applied again after the edit',
      'web.yaml',
      'web-reapplied-after-edit.json',
      { taken: [], gone: [], added: [{ path: `${env}[name=DEBUG]`, by: ['kubectl-edit'] }] },
    ],
    [
      'kubectl edit: an env value changed',
      'web.yaml',
      'web-value-edited.json',
      {
        taken: [{ path: `${env}[name=LEVEL].value`, by: ['kubectl-edit'] }],
        gone: [],
        added: [{ path: `${env}[name=DEBUG]`, by: ['kubectl-edit'] }],
      },
    ],
    // A JSON patch removed env MODE: nobody owns it any more.
    [
      'an env entry removed',
      'web.yaml',
      'web-env-removed.json',
      {
        taken: [{ path: `${env}[name=LEVEL].value`, by: ['kubectl-edit'] }],
        gone: [`${env}[name=MODE]`],
        added: [{ path: `${env}[name=DEBUG]`, by: ['kubectl-edit'] }],
      },
    ],
    // A ConfigMap's copy comes from a metadata-only stream: its managed fields still name the data key.
    [
      'kubectl edit of a ConfigMap key',
      'cfg.yaml',
      'cfg-edited.json',
      { taken: [{ path: 'data.a', by: ['kubectl-edit'] }], gone: [], added: [] },
    ],
    // kubectl set env on a container whose manifest sets no env: the list is kubectl-set's, named by its items.
    [
      'kubectl set env, no env in the manifest',
      'auto.yaml',
      'auto-set-env.json',
      {
        taken: [],
        gone: [],
        added: [{ path: 'spec.template.spec.containers[name=web].env[name=DEBUG]', by: ['kubectl-set'] }],
      },
    ],
    // The manifest leaves replicas out: /scale writes to a field nobody owns are not even recorded on 1.37...
    ['scaled, replicas not in the manifest', 'auto.yaml', 'auto-scaled-unowned.json', nothing],
    // ...and a manager that writes them to the object itself (an autoscaler) owns them: not drift.
    ['an autoscaler owns replicas the manifest leaves out', 'auto.yaml', 'auto-autoscaler.json', nothing],
  ];
  it.each(cases)('%s', (_, file, fields, expected) => {
    expect(readOwnership(manifest(file), captured(fields), 'mooring')).toEqual(expected);
  });

  it('cannot tell when mooring owns nothing in the object', () => {
    expect(readOwnership(manifest('web.yaml'), captured('web-scaled.json'), 'someone-else')).toBeUndefined();
    expect(readOwnership(manifest('web.yaml'), [], 'mooring')).toBeUndefined();
  });

  it('drops the status entries and what is not FieldsV1', () => {
    const owners = fieldOwners([
      { manager: 'kube-controller-manager', operation: 'Update', subresource: 'status', fieldsV1: {} },
      { manager: 'x', operation: 'Update', fieldsType: 'FieldsV2', fieldsV1: {} },
      { manager: 'y', operation: 'Update', fieldsV1: { 'f:spec': { 'f:paused': 'no' } } },
      { manager: 'kubectl', operation: 'Update', subresource: 'scale', fieldsV1: { 'f:spec': {} } },
    ]);
    expect(owners).toEqual([
      { manager: 'kubectl', operation: 'Update', subresource: 'scale', fields: { 'f:spec': {} } },
    ]);
    expect(fieldOwners(undefined)).toBeUndefined();
  });
});

describe('readOwnership: shapes the captures do not hold', () => {
  const service: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop' },
    // No protocol: the server keys the port by the TCP it fills in.
    spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
  };
  const own = {
    manager: 'mooring',
    operation: 'Apply',
    fields: {
      'f:spec': {
        'f:ports': { 'k:{"port":80,"protocol":"TCP"}': { '.': {}, 'f:port': {}, 'f:protocol': {} } },
        'f:selector': {},
      },
    },
  };
  it.each<[string, unknown[], OwnershipReading]>([
    ['a port keyed by a protocol the manifest leaves out', [own], nothing],
    [
      'a port added by hand',
      [
        own,
        {
          manager: 'kubectl-edit',
          operation: 'Update',
          fields: {
            'f:spec': { 'f:ports': { 'k:{"port":81,"protocol":"TCP"}': { '.': {}, 'f:port': {} } } },
          },
        },
      ],
      {
        taken: [],
        gone: [],
        added: [{ path: 'spec.ports[port=81,protocol=TCP]', by: ['kubectl-edit'] }],
      },
    ],
    [
      'the selector (an atomic map) replaced by hand',
      [
        { ...own, fields: { 'f:spec': { 'f:ports': own.fields['f:spec']['f:ports'] } } },
        { manager: 'kubectl-edit', operation: 'Update', fields: { 'f:spec': { 'f:selector': {} } } },
      ],
      { taken: [{ path: 'spec.selector', by: ['kubectl-edit'] }], gone: [], added: [] },
    ],
    [
      // Another manager's server-side apply of the same values shares them: nothing is taken.
      'shared with another applier',
      [own, { ...own, manager: 'kubectl' }],
      nothing,
    ],
    [
      'a field set on the object by hand, outside the manifest',
      [
        own,
        {
          manager: 'kubectl-patch',
          operation: 'Update',
          fields: { 'f:metadata': { 'f:labels': { 'f:extra': {} } }, 'f:spec': { 'f:sessionAffinity': {} } },
        },
      ],
      { taken: [], gone: [], added: [{ path: 'spec.sessionAffinity', by: ['kubectl-patch'] }] },
    ],
  ])('%s', (_, owners, expected) => {
    expect(readOwnership(service, owners as never, 'mooring')).toEqual(expected);
  });

  it('reads a ConfigMap of 20,000 keys: the few taken or gone named, in order, among all owned', () => {
    const data = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`key${i}`, `value-${i}`]));
    const big: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'big' }, data };
    const owned = (skip: readonly string[]) =>
      Object.fromEntries(
        Object.keys(data)
          .filter((k) => !skip.includes(k))
          .map((k) => [`f:${k}`, {}]),
      );
    const mooring = { manager: 'mooring', operation: 'Apply', fields: { 'f:data': owned([]) } };
    expect(readOwnership(big, [mooring], 'mooring')).toEqual(nothing);
    const edited = [
      { ...mooring, fields: { 'f:data': owned(['key7', 'key19999', 'key123']) } },
      { manager: 'kubectl-edit', operation: 'Update', fields: { 'f:data': { 'f:key7': {}, 'f:extra': {} } } },
    ];
    expect(readOwnership(big, edited, 'mooring')).toEqual({
      taken: [{ path: 'data.key7', by: ['kubectl-edit'] }],
      gone: ['data.key123', 'data.key19999'],
      added: [{ path: 'data.extra', by: ['kubectl-edit'] }],
    });
  });

  it('reads an env list of 3,000 entries by their keys: one taken, one gone, one added', () => {
    const vars = Array.from({ length: 3000 }, (_, i) => ({ name: `VAR_${i}`, value: `v${i}` }));
    const deployment: KubeObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
      spec: { template: { spec: { containers: [{ name: 'web', image: 'web:1', env: vars }] } } },
    };
    const entries = (names: readonly string[]) =>
      Object.fromEntries(names.map((n) => [`k:{"name":"${n}"}`, { '.': {}, 'f:name': {}, 'f:value': {} }]));
    const container = (env: FieldsV1, rest: FieldsV1 = {}): FieldsV1 => ({
      'f:spec': {
        'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { ...rest, 'f:env': env } } } },
      },
    });
    const mine = vars.map((v) => v.name).filter((n) => n !== 'VAR_5' && n !== 'VAR_2999');
    const owners: FieldOwner[] = [
      {
        manager: 'mooring',
        operation: 'Apply',
        fields: container(entries(mine), { '.': {}, 'f:name': {}, 'f:image': {} }),
      },
      { manager: 'kubectl-edit', operation: 'Update', fields: container(entries(['VAR_5', 'VAR_NEW'])) },
    ];
    expect(readOwnership(deployment, owners, 'mooring')).toEqual({
      taken: [{ path: `${env}[name=VAR_5]`, by: ['kubectl-edit'] }],
      gone: [`${env}[name=VAR_2999]`],
      added: [{ path: `${env}[name=VAR_NEW]`, by: ['kubectl-edit'] }],
    });
  });

  it('a ServiceAccount’s secrets are the token controller’s', () => {
    const account: KubeObject = { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'a' } };
    const owners: FieldOwner[] = [
      { manager: 'mooring', operation: 'Apply', fields: { 'f:metadata': {} } },
      {
        manager: 'kube-controller-manager',
        operation: 'Update',
        fields: { 'f:secrets': { '.': {}, 'k:{"name":"a-token"}': { '.': {}, 'f:name': {} } } },
      },
    ];
    expect(readOwnership(account, owners, 'mooring')).toEqual(nothing);
  });
});
