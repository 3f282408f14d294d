// The record a CLI deploy keeps of what it wrote (src/sync/deploy/applied-record.ts): what it calls unmoved, what
// renews it, and what it makes of a stored record that is not its own.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ApplyTarget } from '../../../src/kube/apply.ts';
import type { LiveSummary } from '../../../src/kube/live-state.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { AppliedRecord, RECORD_MAX_BYTES, RECORD_OBJECTS } from '../../../src/sync/deploy/applied-record.ts';

const OWNER = 'cli:shop/web';
const U1 = '6f1c2a9e-3b7d-4c55-9a10-2d3e4f5a6b7c';
const U2 = '0b9d8c7e-6f5a-4b3c-8d2e-1f0a9b8c7d6e';
const key = randomBytes(32);

function deployment(replicas = 2, labels: Record<string, string> = { app: 'web' }): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'web',
      namespace: 'shop',
      labels,
      annotations: { 'moniker.spinnaker.io/application': 'shop' },
    },
    spec: { replicas },
  } as KubeObject;
}

const target = (object: KubeObject) => ({ object }) as ApplyTarget;
const live = (resourceVersion: string, uid = U1, generation = 1): LiveSummary => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'shop', uid, resourceVersion, generation },
  digest: undefined,
});
const copy = (
  resourceVersion: string,
  meta: Partial<KubeObject['metadata']> = {},
): Pick<KubeObject, 'metadata'> => ({
  metadata: {
    name: 'web',
    namespace: 'shop',
    uid: U1,
    resourceVersion,
    generation: 1,
    labels: { app: 'web', 'pod-template-hash': 'x' },
    annotations: { 'moniker.spinnaker.io/application': 'shop', 'deployment.kubernetes.io/revision': '1' },
    ...meta,
  },
});

/** A record of `object` written at resourceVersion 10, stored and read back as the next deploy reads it. */
function recorded(object = deployment(), withKey = key): AppliedRecord {
  const first = new AppliedRecord(OWNER, key, undefined);
  first.written(object, { metadata: { name: 'web', uid: U1, resourceVersion: '10', generation: 1 } });
  return new AppliedRecord(OWNER, withKey, first.changed());
}

describe('the record of what a deploy wrote', () => {
  it('calls unmoved only the same manifest on the same object at the same resourceVersion', () => {
    const record = recorded();
    expect(record.unmoved(target(deployment()), live('10'))).toBe(true);
    expect(record.unmoved(target(deployment(3)), live('10'))).toBe(false);
    expect(record.unmoved(target(deployment()), live('11'))).toBe(false);
    expect(record.unmoved(target(deployment()), live('10', U2))).toBe(false);
  });

  it('is no record under another key, or when it does not parse or is too long', () => {
    expect(recorded(deployment(), randomBytes(32)).unmoved(target(deployment()), live('10'))).toBe(false);
    for (const stored of ['{"not": json', '[]', 'null', `"${'x'.repeat(RECORD_MAX_BYTES)}"`])
      expect(new AppliedRecord(OWNER, key, stored).unmoved(target(deployment()), live('10'))).toBe(false);
  });

  it('renews from a stable copy moved only in its status, and from nothing else', () => {
    const renewed = recorded();
    renewed.renew(deployment(), copy('14'));
    expect(renewed.unmoved(target(deployment()), live('14'))).toBe(true);

    const cases: [string, Pick<KubeObject, 'metadata'>][] = [
      ['its spec changed', copy('14', { generation: 2 })],
      ['a label set by the manifest changed', copy('14', { labels: { app: 'other' } })],
      ['an annotation set by the manifest removed', copy('14', { annotations: {} })],
      ['another object of that name', copy('14', { uid: U2 })],
      ['no generation', copy('14', { generation: undefined })],
    ];
    for (const [why, moved] of cases) {
      const record = recorded();
      record.renew(deployment(), moved);
      expect(record.unmoved(target(deployment()), live('14', String(moved.metadata.uid ?? U1), 2)), why).toBe(
        false,
      );
      expect(record.unmoved(target(deployment()), live('10')), `${why}: the record as written`).toBe(true);
    }
  });

  it('is written only when it changed, and keeps at most RECORD_OBJECTS objects', () => {
    const first = new AppliedRecord(OWNER, key, undefined);
    first.written(deployment(), { metadata: { name: 'web', uid: U1, resourceVersion: '10' } });
    const text = first.changed();
    expect(text).toBeDefined();
    expect(new AppliedRecord(OWNER, key, text).changed()).toBeUndefined();

    const many = new AppliedRecord(OWNER, key, undefined);
    for (let i = 0; i < RECORD_OBJECTS + 10; i++) {
      const object = { ...deployment(), metadata: { ...deployment().metadata, name: `web-${i}` } };
      many.written(object, {
        metadata: { name: object.metadata.name, uid: `${i}-${U1}`, resourceVersion: '1' },
      });
    }
    const stored = JSON.parse(many.changed() ?? '{}') as { o: Record<string, Record<string, string>> };
    expect(Object.values(stored.o).reduce((n, names) => n + Object.keys(names).length, 0)).toBe(
      RECORD_OBJECTS,
    );
  });
});
