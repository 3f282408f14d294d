// Taking over a client-side apply's fields, as client-go's csaupgrade does: which entries merge into mooring's, and
// that no other manager's entry is ever changed (the property tests).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type FieldsTrie,
  LAST_APPLIED,
  type ManagedFieldsEntry,
  mergeManager,
  onlyClientSideConflicts,
  pendingTakeOver,
  takeOverPatch,
  unionFields,
} from '../../../src/kube/client-side-takeover.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const RUNS = { seed: 36_2, numRuns: 150 };
const CSA = 'kubectl-client-side-apply';
const BFA = 'before-first-apply';

const labels = (...names: string[]): FieldsTrie => ({
  'f:metadata': { 'f:labels': Object.fromEntries(names.map((n) => [`f:${n}`, {}])) },
});
const entry = (
  manager: string,
  operation: string,
  fieldsV1: FieldsTrie,
  extra: Partial<ManagedFieldsEntry> = {},
): ManagedFieldsEntry => ({
  manager,
  operation,
  apiVersion: 'apps/v1',
  fieldsType: 'FieldsV1',
  fieldsV1,
  ...extra,
});
const wanted = (annotations?: Record<string, string>): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', ...(annotations ? { annotations } : {}) },
});
const live = (managedFields: ManagedFieldsEntry[], annotations?: Record<string, string>) => ({
  metadata: {
    name: 'web',
    resourceVersion: '42',
    managedFields: managedFields as never,
    ...(annotations ? { annotations } : {}),
  },
});

describe('mergeManager (csaupgrade)', () => {
  it.each<[string, ManagedFieldsEntry[], ManagedFieldsEntry[] | undefined]>([
    ['no client-side entry: nothing to do', [entry('mooring', 'Apply', labels('a'))], undefined],
    [
      'no Apply entry: the client-side entry becomes it',
      [entry(CSA, 'Update', labels('a', 'b'), { time: 't1' })],
      [entry('mooring', 'Apply', labels('a', 'b'), { time: 't1' })],
    ],
    [
      'an Apply entry: the union goes into it, the client-side entry goes',
      [entry('mooring', 'Apply', labels('a')), entry(CSA, 'Update', labels('b'))],
      [entry('mooring', 'Apply', labels('a', 'b'))],
    ],
    [
      'a client-side entry of another version is dropped, not merged',
      [
        entry('mooring', 'Apply', labels('a')),
        entry(CSA, 'Update', labels('b'), { apiVersion: 'apps/v1beta1' }),
      ],
      [entry('mooring', 'Apply', labels('a'))],
    ],
    [
      'other managers and subresources stay as they are',
      [
        entry('kubectl-label', 'Update', labels('team')),
        entry(CSA, 'Update', labels('b')),
        entry(CSA, 'Update', { 'f:status': {} }, { subresource: 'status' }),
        entry('mooring', 'Update', labels('c')),
      ],
      [
        entry('kubectl-label', 'Update', labels('team')),
        entry('mooring', 'Apply', labels('b')),
        entry(CSA, 'Update', { 'f:status': {} }, { subresource: 'status' }),
        entry('mooring', 'Update', labels('c')),
      ],
    ],
  ])('%s', (_, entries, expected) => {
    expect(mergeManager(entries, CSA, 'mooring')).toEqual(expected);
  });
});

describe('takeOverPatch', () => {
  it('merges both managers, drops the annotation and guards the patch with the resourceVersion', () => {
    const change = takeOverPatch(
      live([entry(CSA, 'Update', labels('a')), entry(BFA, 'Update', labels('b'))], {
        [LAST_APPLIED]: '{}',
        keep: 'x',
      }),
      wanted(),
      'mooring',
    );
    expect(change).toEqual({
      managers: [CSA, BFA],
      lastApplied: true,
      patch: [
        { op: 'add', path: '/metadata/managedFields', value: [entry('mooring', 'Apply', labels('a', 'b'))] },
        { op: 'replace', path: '/metadata/resourceVersion', value: '42' },
        { op: 'add', path: '/metadata/annotations', value: { keep: 'x' } },
      ],
    });
  });

  it.each<[string, boolean, ManagedFieldsEntry[], Record<string, string> | undefined, KubeObject]>([
    ['nothing client-side', false, [entry('mooring', 'Apply', labels('a'))], undefined, wanted()],
    [
      'an annotation the manifest sets too',
      false,
      [],
      { [LAST_APPLIED]: '{}' },
      wanted({ [LAST_APPLIED]: '{}' }),
    ],
    ['only the annotation', true, [], { [LAST_APPLIED]: '{}' }, wanted()],
    [
      'a client-side entry of a subresource',
      false,
      [entry(CSA, 'Update', {}, { subresource: 'scale' })],
      undefined,
      wanted(),
    ],
    [
      'an Apply entry named like the client-side manager',
      false,
      [entry(CSA, 'Apply', labels('a'))],
      undefined,
      wanted(),
    ],
  ])('%s: a take-over is pending: %s', (_, pending, entries, annotations, manifest) => {
    expect(pendingTakeOver(live(entries, annotations), manifest) !== undefined).toBe(pending);
    expect(takeOverPatch(live(entries, annotations), manifest, 'mooring') !== undefined).toBe(pending);
  });

  it('refuses to send a patch it cannot guard', () => {
    const { resourceVersion: _, ...metadata } = live([entry(CSA, 'Update', labels('a'))]).metadata;
    expect(() => takeOverPatch({ metadata }, wanted(), 'mooring')).toThrow(/resourceVersion/);
  });
});

describe('onlyClientSideConflicts', () => {
  const conflict = (...messages: string[]) => ({
    details: {
      causes: messages.map((message) => ({ reason: 'FieldManagerConflict', message, field: '.spec' })),
    },
  });
  it.each<[string, boolean, unknown]>([
    ['client-side apply', true, conflict('conflict with "kubectl-client-side-apply" using apps/v1')],
    ['both', true, conflict(`conflict with "${CSA}" using apps/v1`, `conflict with "${BFA}" using apps/v1`)],
    [
      'and a third party',
      false,
      conflict(`conflict with "${CSA}" using apps/v1`, 'conflict with "hpa" using apps/v1'),
    ],
    [
      'a prefix is not the manager',
      false,
      conflict('conflict with "kubectl-client-side-apply-2" using apps/v1'),
    ],
    ['no causes', false, { details: {} }],
    ['not a Status', false, 'conflict'],
  ])('%s: only client-side conflicts: %s', (_, only, body) => {
    expect(onlyClientSideConflicts(body)).toBe(only);
  });
});

// Field sets and managed-fields lists of any shape.
const KEYS = fc.constantFrom('f:a', 'f:b', 'f:c', '.', 'k:{"name":"x"}');
const trieOf = (depth: number): fc.Arbitrary<FieldsTrie> =>
  depth === 0 ? fc.constant({}) : fc.dictionary(KEYS, trieOf(depth - 1), { maxKeys: 3 });
const trie = trieOf(3);
// One entry per manager, operation and subresource, as the server keeps them.
const managed = fc
  .uniqueArray(
    fc.record({
      manager: fc.constantFrom(CSA, BFA, 'mooring', 'kubectl-label', 'hpa'),
      operation: fc.constantFrom('Update', 'Apply'),
      apiVersion: fc.constantFrom('apps/v1', 'apps/v1beta1'),
      fieldsType: fc.constant('FieldsV1'),
      fieldsV1: trie,
      subresource: fc.constantFrom(undefined, 'status'),
    }),
    { maxLength: 6, selector: (e) => `${e.manager}|${e.operation}|${e.subresource}` },
  )
  .map((entries) => entries.map(({ subresource, ...e }) => (subresource ? { ...e, subresource } : e)));

function paths(t: FieldsTrie, prefix = ''): string[] {
  return Object.entries(t).flatMap(([k, v]) => [`${prefix}/${k}`, ...paths(v, `${prefix}/${k}`)]);
}

describe('properties', () => {
  it('a union holds exactly the paths of both sets, whatever their order', () => {
    fc.assert(
      fc.property(trie, trie, (a, b) => {
        const union = unionFields(a, b);
        expect(union).toEqual(unionFields(b, a));
        expect(new Set(paths(union))).toEqual(new Set([...paths(a), ...paths(b)]));
        expect(unionFields(union, a)).toEqual(union);
      }),
      RUNS,
    );
  });

  it('no entry but the client-side ones and mooring Apply entry changes; no client-side Update entry is left', () => {
    fc.assert(
      fc.property(managed, (entries) => {
        const change = takeOverPatch(live(entries), wanted(), 'mooring');
        const after = (change?.patch[0] as { value?: ManagedFieldsEntry[] } | undefined)?.value ?? entries;
        const clientSide = (e: ManagedFieldsEntry) =>
          (e.manager === CSA || e.manager === BFA) && e.operation === 'Update' && !e.subresource;
        const mooringApply = (e: ManagedFieldsEntry) =>
          e.manager === 'mooring' && e.operation === 'Apply' && !e.subresource;
        // Every third party's entry is there, unchanged, in its order.
        expect(after.filter((e) => !clientSide(e) && !mooringApply(e))).toEqual(
          entries.filter((e) => !clientSide(e) && !mooringApply(e)),
        );
        expect(after.filter(clientSide)).toEqual([]);
        // Mooring's entry holds what it held and what the client-side managers held in its version: no more.
        const own = after.filter(mooringApply);
        const before = entries.find(mooringApply);
        const first = entries.find((e) => clientSide(e) && e.manager === CSA) ?? entries.find(clientSide);
        const version = before?.apiVersion ?? first?.apiVersion;
        const expected = [before, ...entries.filter((e) => clientSide(e) && e.apiVersion === version)];
        if (!before && !first) expect(own).toEqual([]);
        else {
          expect(own.length).toBe(1);
          expect(new Set(paths(own[0]?.fieldsV1 ?? {}))).toEqual(
            new Set(expected.flatMap((e) => (e ? paths(e.fieldsV1 ?? {}) : []))),
          );
        }
      }),
      RUNS,
    );
  });
});
