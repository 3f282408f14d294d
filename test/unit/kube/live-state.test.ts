import { describe, expect, it } from 'vitest';
import { summarize } from '../../../src/kube/live-state.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';

const dryRunAnswer = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'app',
    namespace: 'prod',
    uid: 'u-1',
    resourceVersion: '42',
    managedFields: [{ manager: 'mooring', time: '2024-01-01T00:00:00Z' }],
    labels: { b: '2', a: '1' },
  },
  data: { X: '1' },
} as unknown as KubeObject;

describe('live summaries', () => {
  it('keep identity and bookkeeping, not the object', () => {
    const s = summarize(dryRunAnswer);
    expect(s.metadata).toEqual({ name: 'app', namespace: 'prod', uid: 'u-1', resourceVersion: '42' });
    expect(JSON.stringify(s)).not.toContain('"X"');
  });

  it('digest a list item (no apiVersion or kind, keys in another order) the same as a dry run of it', () => {
    const listItem = {
      data: { X: '1' },
      metadata: {
        labels: { a: '1', b: '2' },
        resourceVersion: '41',
        managedFields: [{ manager: 'kubectl', time: '2023-01-01T00:00:00Z' }],
        namespace: 'prod',
        uid: 'u-1',
        name: 'app',
      },
    } as unknown as KubeObject;
    expect(summarize(listItem, { apiVersion: 'v1', kind: 'ConfigMap' }).digest).toBe(
      summarize(dryRunAnswer).digest,
    );
  });

  it('digest a change of content differently', () => {
    const changed = { ...dryRunAnswer, data: { X: '2' } } as KubeObject;
    expect(summarize(changed).digest).not.toBe(summarize(dryRunAnswer).digest);
  });
});
