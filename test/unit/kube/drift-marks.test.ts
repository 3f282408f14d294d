// The decision a drift pass makes from the watch cache alone: which objects moved since mooring's write (and get
// the dry runs), which did not (and cost no request); the marks it keeps per deployment; the pass's summary line.
import { describe, expect, it } from 'vitest';
import {
  type CachedCopy,
  type DriftMark,
  DriftMarks,
  desiredDigest,
  liveMetadata,
  movedSince,
} from '../../../src/kube/drift-marks.ts';
import { countRequest, DriftPasses, noRequests } from '../../../src/kube/drift-pass.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const deployment = (replicas: number): KubeObject => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { replicas },
});
const desired = desiredDigest(deployment(1));
const mark: DriftMark = { desired, uid: 'u-1', resourceVersion: '100', generation: 1 };
const copy = (meta: { uid?: string; resourceVersion?: string; generation?: number }): CachedCopy => ({
  metadata: meta,
});

describe('movedSince: has an object moved since mooring wrote it?', () => {
  const cases: [string, DriftMark | undefined, string, CachedCopy, boolean][] = [
    [
      'same resourceVersion',
      mark,
      desired,
      copy({ uid: 'u-1', resourceVersion: '100', generation: 1 }),
      false,
    ],
    // The Deployment controller writes status after every apply: the resourceVersion moves, the generation not.
    [
      'status written since',
      mark,
      desired,
      copy({ uid: 'u-1', resourceVersion: '107', generation: 1 }),
      false,
    ],
    // kubectl scale (through /scale: no managedFields on 1.20) moves the generation.
    [
      'spec changed (scaled)',
      mark,
      desired,
      copy({ uid: 'u-1', resourceVersion: '108', generation: 2 }),
      true,
    ],
    [
      'deleted and created again',
      mark,
      desired,
      copy({ uid: 'u-2', resourceVersion: '100', generation: 1 }),
      true,
    ],
    ['gone from the cache', mark, desired, undefined, true],
    ['the cache cannot tell', mark, desired, 'unknown', true],
    ['never written by this agent', undefined, desired, copy({ uid: 'u-1', resourceVersion: '100' }), true],
    [
      'the manifest changed since',
      mark,
      desiredDigest(deployment(2)),
      copy({ uid: 'u-1', resourceVersion: '100', generation: 1 }),
      true,
    ],
    [
      // A ConfigMap has no generation: any write moves it.
      'no generation, another resourceVersion',
      { desired, uid: 'c-1', resourceVersion: '5', generation: undefined },
      desired,
      copy({ uid: 'c-1', resourceVersion: '9' }),
      true,
    ],
    [
      'no generation, same resourceVersion',
      { desired, uid: 'c-1', resourceVersion: '5', generation: undefined },
      desired,
      copy({ uid: 'c-1', resourceVersion: '5' }),
      false,
    ],
  ];
  it.each(cases)('%s', (_, m, d, cached, moved) => {
    expect(movedSince(m, d, cached).moved).toBe(moved);
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
      drifted: 1,
      requests: { reads: 1, dryRuns: 2, writes: 1 },
      elapsedMs: 5,
    };
    passes.checked('a', check, 1100);
    expect(lines).toEqual([]);
    passes.checked('a', check, 1150); // once per deployment
    passes.checked('b', { ...check, moved: 0, drifted: 0, requests: noRequests() }, 1200);
    expect(lines).toEqual([
      {
        message: 'drift pass ended',
        fields: {
          deployments: 2,
          unchecked: 0,
          objects: 8,
          moved: 1,
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
    passes.checked('a', { objects: 4, moved: 0, drifted: 0, requests: noRequests(), elapsedMs: 1 }, 10);
    passes.begin(['a', 'b'], log, 60_000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ deployments: 2, unchecked: 1, objects: 4, elapsedMs: 60_000 });
  });
});
