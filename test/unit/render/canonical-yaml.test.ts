// toYaml writes each object in canonical order directly (the writer's KeyOrder): the same bytes as writing a sorted
// copy (canonical()), for any object, whatever order its keys came in. canonical() itself: a copy in that order
// that shares with its input only the parts already in order, and never holds one value at two places.
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

/** The canonical form built the plain way: every mapping and list copied, keys sorted (the top's and metadata's first). */
function plainCopy(value: unknown, first: readonly string[] = []): unknown {
  if (Array.isArray(value)) return value.map((v) => plainCopy(v));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  const head = first.filter((k) => keys.includes(k));
  const ordered = head.length > 0 ? [...head, ...keys.filter((k) => !first.includes(k)).sort()] : keys.sort();
  const out: Record<string, unknown> = {};
  for (const k of ordered) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined) continue;
    out[k] = plainCopy(v, k === 'metadata' && first.includes('kind') ? ['name', 'namespace'] : []);
  }
  return out;
}

/** Every mapping and list of `value` with its path, however many times it is reached. */
function containers(value: unknown, path = '', into: [object, string][] = []): [object, string][] {
  if (value === null || typeof value !== 'object') return into;
  into.push([value, path]);
  for (const [k, v] of Object.entries(value)) containers(v, `${path}/${k}`, into);
  return into;
}

/** JSON with key order kept: two values equal in it have the same keys in the same order. */
const ordered = (value: unknown) => JSON.stringify(value);

describe('canonical', () => {
  it('equals a full sorted copy, key order included, and leaves its input as it was', () => {
    fc.assert(
      fc.property(object, (o) => {
        const before = ordered(o);
        expect(ordered(canonical(o))).toBe(ordered(plainCopy(o, ['apiVersion', 'kind', 'metadata'])));
        expect(ordered(o)).toBe(before);
      }),
      { numRuns: 3000 },
    );
  });

  it('shares the parts of its input already in canonical order and copies the others', () => {
    const sortedSpec = { a: [{ b: 1, c: { d: 2 } }], z: { y: 'x' } };
    const unsortedLabels = { b: '1', a: '2' };
    const o = {
      apiVersion: 'v1',
      kind: 'Thing',
      metadata: { name: 'x', labels: unsortedLabels },
      spec: sortedSpec,
    } as unknown as KubeObject;
    const c = canonical(o) as unknown as typeof o;
    expect(c.spec).toBe(sortedSpec);
    expect(c.metadata).not.toBe(o.metadata);
    expect(c.metadata.labels).not.toBe(unsortedLabels);
    expect(Object.keys(c.metadata.labels ?? {})).toEqual(['a', 'b']);
    expect(Object.keys(unsortedLabels)).toEqual(['b', 'a']);
  });

  it('never holds one value at two places, though its input does (a YAML alias)', () => {
    const shared = { a: 1, b: { c: [1, 2] } };
    const list = [shared, shared];
    const o = {
      apiVersion: 'v1',
      kind: 'Thing',
      metadata: { name: 'x' },
      spec: { first: shared, list, second: shared },
    } as unknown as KubeObject;
    const c = canonical(o);
    const seen = new Map<object, string>();
    for (const [part, path] of containers(c)) {
      expect(seen.get(part), `${path} is also at ${seen.get(part)}`).toBeUndefined();
      seen.set(part, path);
    }
    expect(ordered(c)).toBe(ordered(plainCopy(o, ['apiVersion', 'kind', 'metadata'])));
  });
});
