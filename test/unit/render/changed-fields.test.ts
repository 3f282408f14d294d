import { describe, expect, it } from 'vitest';
import { changedFields } from '../../../src/render/changed-fields.ts';
import type { JsonValue } from '../../../src/render/manifest.ts';

const deployment = (replicas: number, env: { name: string; value: string }[]): JsonValue => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', resourceVersion: String(replicas) },
  spec: {
    replicas,
    template: {
      spec: {
        containers: [
          { name: 'web', image: 'web:1', env },
          { name: 'side', image: 's:1' },
        ],
      },
    },
  },
  status: { replicas },
});

describe('changedFields', () => {
  it.each([
    ['nothing', deployment(1, []), deployment(1, []), []],
    ['a scalar', deployment(1, []), deployment(3, []), ['spec.replicas']],
    [
      'an item added to a named list, matched by name',
      deployment(1, [{ name: 'A', value: '1' }]),
      deployment(1, [
        { name: 'DEBUG', value: '1' },
        { name: 'A', value: '1' },
      ]),
      ['spec.template.spec.containers[name=web].env[name=DEBUG]'],
    ],
    [
      'a value in a named list',
      deployment(1, [{ name: 'A', value: '1' }]),
      deployment(1, [{ name: 'A', value: '2' }]),
      ['spec.template.spec.containers[name=web].env[name=A].value'],
    ],
    [
      'metadata and status are not compared',
      deployment(1, []),
      { ...(deployment(1, []) as object), metadata: { name: 'x' }, status: {} } as JsonValue,
      [],
    ],
    [
      'lists without names by position',
      { spec: { args: ['a', 'b'] } },
      { spec: { args: ['a', 'c'] } },
      ['spec.args[1]'],
    ],
    [
      'a Secret names keys, never values',
      { data: { password: 'c2VjcmV0' } },
      { data: { password: 'b3RoZXI=' } },
      ['data.password'],
    ],
  ])('%s', (_what, before, after, expected) => {
    expect(changedFields(before as JsonValue, after as JsonValue)).toEqual(expected);
  });

  it('names what was added whole by its items or keys', () => {
    const before = { spec: { containers: [{ name: 'web' }] } };
    const after = {
      spec: {
        containers: [{ name: 'web', env: [{ name: 'DEBUG', value: '1' }] }],
        nodeSelector: { disk: 'ssd' },
      },
    };
    expect(changedFields(before, after)).toEqual([
      'spec.containers[name=web].env[name=DEBUG]',
      'spec.nodeSelector.disk',
    ]);
  });

  it('stops at the limit', () => {
    const a = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i]));
    const b = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, i + 1]));
    expect(changedFields({ data: a }, { data: b }, 3)).toHaveLength(3);
  });
});
