// toYaml writes each object in canonical order directly (the writer's KeyOrder): the same bytes as writing a sorted
// copy (canonical()), for any object, whatever order its keys came in.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonical, toYaml } from '../../../src/render/canonical.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { stringifyYaml } from '../../../src/yaml/write.ts';

const key = fc.oneof(
  fc.constantFrom(
    'apiVersion',
    'kind',
    'metadata',
    'name',
    'namespace',
    'labels',
    'spec',
    'data',
    'b',
    'a',
    'Z',
  ),
  fc.string({ maxLength: 6 }),
);
const value = fc.letrec((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.string({ maxLength: 8 }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(key, tie('v'), { maxKeys: 5 }),
  ),
}));
const object = fc
  .record({
    top: fc.dictionary(key, value.v, { maxKeys: 6 }),
    metadata: fc.dictionary(key, value.v, { maxKeys: 6 }),
  })
  .map(({ top, metadata }) => {
    // Keys in a shuffled order: the top-level ones around metadata, metadata's name after its labels.
    const o: Record<string, unknown> = { ...top, metadata, apiVersion: 'v1' };
    o.kind = 'ConfigMap';
    return o as unknown as KubeObject;
  });

describe('toYaml', () => {
  it('writes what writing the canonical copy writes', () => {
    fc.assert(
      fc.property(fc.array(object, { minLength: 1, maxLength: 3 }), (objects) => {
        expect(toYaml(objects)).toBe(objects.map((o) => stringifyYaml(canonical(o))).join('---\n'));
      }),
      { numRuns: 3000 },
    );
  });

  it('puts apiVersion, kind and metadata first and name, namespace first in metadata, then sorts', () => {
    const o = {
      spec: { z: 1, a: [{ w: 1, b: 2 }] },
      metadata: { labels: { b: '1', a: '2' }, namespace: 'ns', name: 'x' },
      kind: 'Thing',
      apiVersion: 'v1',
    } as unknown as KubeObject;
    expect(toYaml([o])).toBe(
      'apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\n  namespace: ns\n  labels:\n    a: "2"\n    b: "1"\nspec:\n  a:\n    - b: 2\n      w: 1\n  z: 1\n',
    );
  });
});
