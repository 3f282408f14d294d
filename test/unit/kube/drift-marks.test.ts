// The decision a drift pass makes from the watch cache alone: which objects did not move (and cost no request),
// which moved and what their managed fields say (drift, or nothing of the manifest touched: no request either),
// which only the dry runs can judge; the marks it keeps per deployment; the pass's summary line.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  type Baseline,
  baselineFrom,
  type CachedCopy,
  type DriftMark,
  DriftMarks,
  desiredDigest,
  judgeCopy,
  liveMetadata,
} from '../../../src/kube/drift-marks.ts';
import { countRequest, DriftPasses, noRequests } from '../../../src/kube/drift-pass.ts';
import { type FieldOwner, fieldOwners } from '../../../src/kube/field-owners.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const deployment = (replicas: number): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { replicas },
});
const configMap: KubeObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'c', namespace: 'shop' },
};
const mark: DriftMark = {
  desired: desiredDigest(deployment(1)),
  uid: 'u-1',
  resourceVersion: '100',
  generation: 1,
};
const copy = (
  meta: { uid?: string; resourceVersion?: string; generation?: number },
  owners?: FieldOwner[],
): CachedCopy => ({ metadata: meta, ...(owners ? { owners } : {}) });

// Managed fields a 1.37.2 server wrote (test/fixtures/managed-fields/README.md).
const fixtures = new URL('../../fixtures/managed-fields/', import.meta.url);
const web = parse(readFileSync(new URL('web.yaml', fixtures), 'utf8')) as KubeObject;
const raw = (name: string): unknown => JSON.parse(readFileSync(new URL(name, fixtures), 'utf8'));
const owners = (name: string) => fieldOwners(raw(name)) ?? [];
const none: Baseline = { gone: [], added: [] };
const webMark: DriftMark = { desired: desiredDigest(web), uid: 'w', resourceVersion: '10', generation: 1 };
const env = 'spec.template.spec.containers[name=web].env';

describe('judgeCopy: what a drift pass does with an object, from its mark and its cached copy', () => {
  const cases: [string, DriftMark | undefined, KubeObject, CachedCopy, string][] = [
    ['same resourceVersion', mark, deployment(1), copy({ uid: 'u-1', resourceVersion: '100' }), 'quiet'],
    // No managed fields kept: the Deployment controller writes status after every apply, which moves the
    // resourceVersion, not the generation.
    [
      'status written since, no managed fields',
      mark,
      deployment(1),
      copy({ uid: 'u-1', resourceVersion: '107', generation: 1 }),
      'quiet',
    ],
    [
      'spec changed, no managed fields',
      mark,
      deployment(1),
      copy({ uid: 'u-1', resourceVersion: '108', generation: 2 }),
      'check',
    ],
    [
      'deleted and created again',
      mark,
      deployment(1),
      copy({ uid: 'u-2', resourceVersion: '100', generation: 1 }),
      'check',
    ],
    ['gone from the cache', mark, deployment(1), undefined, 'check'],
    ['the cache cannot tell', mark, deployment(1), 'unknown', 'check'],
    [
      'never written by this agent',
      undefined,
      deployment(1),
      copy({ uid: 'u-1', resourceVersion: '100' }),
      'check',
    ],
    [
      'the manifest changed since',
      mark,
      deployment(2),
      copy({ uid: 'u-1', resourceVersion: '100', generation: 1 }),
      'check',
    ],
    [
      // A ConfigMap has no generation: without managed fields any write moves it.
      'no generation, another resourceVersion',
      { desired: desiredDigest(configMap), uid: 'c-1', resourceVersion: '5', generation: undefined },
      configMap,
      copy({ uid: 'c-1', resourceVersion: '9' }),
      'check',
    ],
    [
      'no generation, same resourceVersion',
      { desired: desiredDigest(configMap), uid: 'c-1', resourceVersion: '5', generation: undefined },
      configMap,
      copy({ uid: 'c-1', resourceVersion: '5' }),
      'quiet',
    ],
    // With the managed fields of the copy: the generation is no longer what decides.
    [
      'moved, mooring still owns all it sets',
      { ...webMark, baseline: none },
      web,
      copy({ uid: 'w', resourceVersion: '11', generation: 2 }, owners('web-applied.json')),
      'clean',
    ],
    [
      'scaled with kubectl (no baseline needed: taken is drift)',
      webMark,
      web,
      copy({ uid: 'w', resourceVersion: '11', generation: 2 }, owners('web-scaled.json')),
      'drifted',
    ],
    [
      // A label edit moves no generation: the managed fields show it all the same.
      'a label and an env entry edited',
      { ...webMark, baseline: none },
      web,
      copy({ uid: 'w', resourceVersion: '12', generation: 1 }, owners('web-edited.json')),
      'drifted',
    ],
    [
      'an entry others held already at mooring’s write',
      { ...webMark, baseline: { gone: [], added: [`${env}[name=DEBUG]`] } },
      web,
      copy({ uid: 'w', resourceVersion: '13', generation: 3 }, owners('web-reapplied-after-edit.json')),
      'clean',
    ],
    [
      'an entry added by another manager, what others held at the write not known',
      webMark,
      web,
      copy({ uid: 'w', resourceVersion: '13', generation: 3 }, owners('web-reapplied-after-edit.json')),
      'check',
    ],
    [
      'mooring owns nothing in the copy',
      webMark,
      web,
      copy({ uid: 'w', resourceVersion: '13', generation: 3 }, owners('web-scaled.json').slice(1)),
      'check',
    ],
  ];
  it.each(cases)('%s', (_, m, manifest, cached, verdict) => {
    expect(judgeCopy(m, manifest, cached, 'mooring').verdict).toBe(verdict);
  });

  it('names the fields, what was added and who wrote them', () => {
    const edited = copy({ uid: 'w', resourceVersion: '12', generation: 2 }, owners('web-env-removed.json'));
    expect(judgeCopy({ ...webMark, baseline: none }, web, edited, 'mooring')).toEqual({
      verdict: 'drifted',
      why: 'its managed fields show fields of the manifest changed by another manager',
      fields: [`${env}[name=LEVEL].value`, `${env}[name=MODE]`],
      added: [`${env}[name=DEBUG]`],
      by: ['kubectl-edit'],
    });
    const scaled = copy({ uid: 'w', resourceVersion: '11', generation: 2 }, owners('web-scaled.json'));
    expect(judgeCopy(webMark, web, scaled, 'mooring')).toMatchObject({
      fields: ['spec.replicas'],
      added: [],
      by: ['kubectl'],
    });
  });

  it('a baseline is what the managed fields held besides mooring’s own', () => {
    expect(baselineFrom(web, raw('web-applied.json'), 'mooring')).toEqual(none);
    expect(baselineFrom(web, raw('web-reapplied-after-edit.json'), 'mooring')).toEqual({
      gone: [],
      added: [`${env}[name=DEBUG]`],
    });
    expect(baselineFrom(web, undefined, 'mooring')).toBeUndefined();
  });
});

describe('drift marks', () => {
  it('keep nothing until the agent runs drift passes', () => {
    const marks = new DriftMarks();
    marks.record('web', deployment(1), { uid: 'u-1', resourceVersion: '1', generation: 1 });
    expect(marks.size).toBe(0);
  });

  it('are kept per deployment and trimmed to the objects it renders now', () => {
    const marks = new DriftMarks();
    marks.enabled = true;
    const v0: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg-v000', namespace: 'shop' },
    };
    const v1: KubeObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg-v001', namespace: 'shop' },
    };
    marks.record('web', v0, { uid: 'a', resourceVersion: '1' });
    marks.record('web', v1, { uid: 'b', resourceVersion: '2' });
    marks.record('other', v0, { uid: 'a', resourceVersion: '1' });
    marks.retain('web', [v1]);
    expect(marks.get('web', v0)).toBeUndefined();
    expect(marks.get('web', v1)).toMatchObject({
      uid: 'b',
      resourceVersion: '2',
      desired: desiredDigest(v1),
    });
    expect(marks.get('other', v0)).toBeDefined();
    // A write whose answer says nothing (a dry run, an object not created) leaves no mark.
    marks.record('web', v1, undefined);
    expect(marks.get('web', v1)).toBeUndefined();
  });

  it('a write of the same manifest does not take a field another manager added into the baseline', () => {
    const marks = new DriftMarks();
    marks.enabled = true;
    const live = { uid: 'w', resourceVersion: '10', generation: 1 };
    marks.recordWrite('web', web, live, none);
    // An env var set by hand lands between a pass's judgement (replicas scaled) and its write: the answer of the
    // correcting apply shows it owned by kubectl-set.
    const merged = { gone: [], added: [`${env}[name=DEBUG]`] };
    marks.recordWrite('web', web, { uid: 'w', resourceVersion: '14', generation: 3 }, merged);
    const after = marks.get('web', web);
    expect(after).toMatchObject({ uid: 'w', resourceVersion: undefined, baseline: none });
    // So the next pass reads the copy's managed fields, and finds the env var as drift.
    const copyNow = copy(
      { uid: 'w', resourceVersion: '14', generation: 3 },
      owners('web-reapplied-after-edit.json'),
    );
    expect(judgeCopy(after, web, copyNow, 'mooring')).toMatchObject({
      verdict: 'drifted',
      added: [`${env}[name=DEBUG]`],
    });
    // The first write of an object, or of a changed manifest, takes what it finds (as a sync always has).
    const fresh = new DriftMarks();
    fresh.enabled = true;
    fresh.recordWrite('web', web, live, merged);
    expect(fresh.get('web', web)).toMatchObject({ resourceVersion: '10', baseline: merged });
  });

  it('hold no content: a digest keyed per process, the same for the same object', () => {
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'shop' },
      data: { token: 'c2VjcmV0' },
    };
    expect(desiredDigest(secret)).toBe(desiredDigest(structuredClone(secret)));
    expect(desiredDigest(secret)).not.toContain('c2VjcmV0');
  });

  it('read only identity and versions from metadata', () => {
    expect(
      liveMetadata({ name: 'x', uid: 'u', resourceVersion: '3', generation: 2, labels: { a: 'b' } }),
    ).toEqual({
      uid: 'u',
      resourceVersion: '3',
      generation: 2,
    });
  });
});

describe('drift passes', () => {
  it('count reads, dry runs and writes apart', () => {
    const tally = noRequests();
    countRequest(tally, 'GET', undefined);
    countRequest(tally, 'PATCH', { query: { dryRun: 'All', fieldManager: 'mooring' } });
    countRequest(tally, 'PUT', { query: { dryRun: 'All' } });
    countRequest(tally, 'PATCH', { query: { fieldManager: 'mooring' } });
    expect(tally).toEqual({ reads: 1, dryRuns: 2, writes: 1 });
  });

  it('log one line when every deployment of the pass is checked', () => {
    const lines: { fields: Record<string, unknown>; message: string }[] = [];
    const log = { info: (fields: object, message: string) => lines.push({ fields: { ...fields }, message }) };
    const passes = new DriftPasses();
    passes.begin(['a', 'b'], log, 1000);
    const check = {
      objects: 4,
      moved: 1,
      byDryRun: 1,
      drifted: 1,
      requests: { reads: 1, dryRuns: 2, writes: 1 },
      elapsedMs: 5,
    };
    passes.checked('a', check, 1100);
    expect(lines).toEqual([]);
    passes.checked('a', check, 1150); // once per deployment
    passes.checked('b', { ...check, moved: 0, byDryRun: 0, drifted: 0, requests: noRequests() }, 1200);
    expect(lines).toEqual([
      {
        message: 'drift pass ended',
        fields: {
          deployments: 2,
          unchecked: 0,
          objects: 8,
          moved: 1,
          byDryRun: 1,
          drifted: 1,
          requests: 4,
          reads: 1,
          dryRuns: 2,
          writes: 1,
          elapsedMs: 200,
        },
      },
    ]);
  });

  it('sum up a pass still open when the next begins, with what it did not check', () => {
    const lines: Record<string, unknown>[] = [];
    const log = { info: (fields: object) => lines.push({ ...fields }) };
    const passes = new DriftPasses();
    passes.begin(['a', 'b'], log, 0);
    passes.checked(
      'a',
      { objects: 4, moved: 0, byDryRun: 0, drifted: 0, requests: noRequests(), elapsedMs: 1 },
      10,
    );
    passes.begin(['a', 'b'], log, 60_000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ deployments: 2, unchecked: 1, objects: 4, elapsedMs: 60_000 });
  });
});

describe('drift marks saved in the ledger and taken back', () => {
  const key = Buffer.alloc(32, 7);
  const keyed = () => {
    const marks = new DriftMarks();
    marks.enabled = true;
    marks.useKey(key);
    return marks;
  };

  it('an agent started again takes back what the previous one saved, and judges from it', () => {
    const before = keyed();
    before.record('web', web, { uid: 'w', resourceVersion: '10', generation: 1 }, none);
    before.record('web', configMap, { uid: 'c', resourceVersion: '11' });
    // A mark without a resourceVersion (a write the next pass must check) is not worth saving.
    const other: KubeObject = { ...configMap, metadata: { name: 'other', namespace: 'shop' } };
    before.record('web', other, { uid: 'o' });
    const saved = before.saved('web');
    expect(Object.keys(saved ?? {})).toHaveLength(2);
    // Saved as JSON in a ConfigMap, read back as such.
    const after = keyed();
    expect(after.restore('web', JSON.parse(JSON.stringify(saved)))).toBe(2);
    const mark = after.get('web', web);
    expect(mark).toMatchObject({ uid: 'w', resourceVersion: '10', generation: 1, baseline: none });
    expect(
      judgeCopy(mark, web, copy({ uid: 'w', resourceVersion: '10' }), 'mooring', after.digest(web)),
    ).toMatchObject({ verdict: 'quiet' });
    // A manifest that changed since matches no saved digest.
    expect(
      judgeCopy(
        after.get('web', deployment(1)),
        deployment(1),
        copy({ uid: 'd' }),
        'mooring',
        after.digest(deployment(1)),
      ).verdict,
    ).toBe('check');
  });

  it('saves nothing under a key of the process, and takes nothing back under another key', () => {
    const process = new DriftMarks();
    process.enabled = true;
    process.record('web', web, { uid: 'w', resourceVersion: '10' });
    expect(process.saved('web')).toBeUndefined();
    const saved = keyed();
    saved.record('web', web, { uid: 'w', resourceVersion: '10' });
    const other = new DriftMarks();
    other.enabled = true;
    other.useKey(Buffer.alloc(32, 8));
    expect(other.restore('web', saved.saved('web'))).toBe(1);
    // Taken, but its digest is another key's: it matches no manifest, and the object is checked.
    expect(
      judgeCopy(
        other.get('web', web),
        web,
        copy({ uid: 'w', resourceVersion: '10' }),
        'mooring',
        other.digest(web),
      ).verdict,
    ).toBe('check');
  });

  it('marks the agent made since it started win over saved ones', () => {
    const marks = keyed();
    marks.record('web', web, { uid: 'w', resourceVersion: '12' });
    expect(marks.restore('web', { x: { d: marks.digest(web), u: 'w', r: '10' } })).toBe(0);
    expect(marks.get('web', web)?.resourceVersion).toBe('12');
  });

  it('takes back only what reads as a mark: the ledger is a ConfigMap others may edit', () => {
    const marks = keyed();
    const good = { d: marks.digest(configMap), u: 'c', r: '5' };
    // As JSON text: "__proto__" is then a key of its own, not the object's prototype.
    const hostile = `{
      "/ConfigMap/shop/c": ${JSON.stringify(good)},
      "__proto__": ${JSON.stringify(good)},
      "constructor": {"d": "x", "u": "y", "r": "z", "g": "not a number"},
      "long": {"d": "${'x'.repeat(100_000)}", "u": "y", "r": "z"},
      "paths": {"d": "x", "u": "y", "r": "z", "b": {"gone": ${JSON.stringify(Array(1000).fill('a'))}, "added": []}},
      "nested": {"d": {"toString": "x"}, "u": "y", "r": "z"},
      "nothing": null
    }`;
    expect(marks.restore('web', JSON.parse(hostile))).toBe(2);
    expect(Object.getPrototypeOf(marks)).toBe(DriftMarks.prototype);
    expect(marks.get('web', configMap)).toMatchObject({ uid: 'c', resourceVersion: '5' });
    for (const value of [null, 'text', 42, [good], undefined]) expect(keyed().restore('web', value)).toBe(0);
    // Bounded however many entries it holds.
    const many = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, good]));
    const bounded = keyed();
    expect(bounded.restore('web', many)).toBe(300);
    expect(bounded.size).toBe(300);
  });
});
