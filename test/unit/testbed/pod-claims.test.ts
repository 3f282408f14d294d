import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  claimNames,
  claimProblem,
  STORAGE_CLASS,
  unschedulableStatus,
  volumeFor,
  volumeToDelete,
} from '../../../test/testbed/pod-claims.ts';

const pod = (volumes: NonNullable<V1Pod['spec']>['volumes']): V1Pod => ({
  metadata: { name: 'db-0', namespace: 'shop', uid: 'p1' },
  spec: { containers: [{ name: 'db', image: 'db:1' }], volumes },
});
const claim = (
  name: string,
  phase?: string,
  extra: Partial<V1PersistentVolumeClaim> = {},
): V1PersistentVolumeClaim => ({
  metadata: { name, namespace: 'shop', uid: `u-${name}` },
  spec: {
    storageClassName: STORAGE_CLASS,
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '2Gi' } },
  },
  ...(phase ? { status: { phase } } : {}),
  ...extra,
});

describe("the bed scheduler's check of a Pod's claims", () => {
  it('reads persistentVolumeClaim volumes and the claims of generic ephemeral volumes, not others', () => {
    expect(
      claimNames(
        pod([
          { name: 'data', persistentVolumeClaim: { claimName: 'data-db-0' } },
          { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: {} } } },
          { name: 'conf', configMap: { name: 'c' } },
          { name: 'again', persistentVolumeClaim: { claimName: 'data-db-0' } },
        ]),
      ),
    ).toEqual(['data-db-0', 'db-0-scratch']);
  });

  it('names a missing claim first, then says an unbound one as kube-scheduler does', () => {
    const p = pod([
      { name: 'a', persistentVolumeClaim: { claimName: 'a' } },
      { name: 'b', persistentVolumeClaim: { claimName: 'b' } },
    ]);
    const claims = new Map([['a', claim('a', 'Pending')]]);
    expect(claimProblem(p, (n) => claims.get(n))?.message).toMatch(
      /^0\/1 nodes are available: persistentvolumeclaim "b" not found\. preemption: /,
    );
    claims.set('b', claim('b', 'Bound'));
    expect(claimProblem(p, (n) => claims.get(n))?.message).toMatch(
      /^0\/1 nodes are available: pod has unbound immediate PersistentVolumeClaims\. /,
    );
    claims.set('a', claim('a', 'Bound'));
    expect(claimProblem(p, (n) => claims.get(n))).toBeUndefined();
    expect(claimProblem(pod([]), () => undefined)).toBeUndefined();
  });

  it('leaves an unschedulable Pod Pending with PodScheduled False (Unschedulable)', () => {
    const status = unschedulableStatus(
      pod([]),
      { stage: 'schedule', reason: 'FailedScheduling', message: 'm' },
      new Date(0),
    );
    expect(status.phase).toBe('Pending');
    expect(status.conditions).toEqual([
      expect.objectContaining({
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message: 'm',
      }),
    ]);
  });
});

describe("the bed's provisioner", () => {
  it('makes a volume reserved for a pending claim of its class, of the size and modes asked', () => {
    const volume = volumeFor(claim('data'));
    expect(volume?.metadata?.name).toBe('pvc-u-data');
    expect(volume?.spec).toMatchObject({
      capacity: { storage: '2Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: STORAGE_CLASS,
      persistentVolumeReclaimPolicy: 'Delete',
      claimRef: { namespace: 'shop', name: 'data', uid: 'u-data' },
    });
  });

  it('makes none for another class, a bound claim, a claim that names its volume, or one being deleted', () => {
    expect(volumeFor(claim('x', undefined, { spec: { storageClassName: 'fast' } }))).toBeUndefined();
    expect(volumeFor(claim('x', 'Bound'))).toBeUndefined();
    expect(
      volumeFor(claim('x', undefined, { spec: { storageClassName: STORAGE_CLASS, volumeName: 'pv1' } })),
    ).toBeUndefined();
    expect(
      volumeFor(claim('x', undefined, { metadata: { name: 'x', uid: 'u', deletionTimestamp: new Date() } })),
    ).toBeUndefined();
  });

  it('deletes only the volumes it made, once released', () => {
    const made = volumeFor(claim('data'));
    if (!made) throw new Error('no volume');
    expect(volumeToDelete({ ...made, status: { phase: 'Bound' } })).toBe(false);
    expect(volumeToDelete({ ...made, status: { phase: 'Released' } })).toBe(true);
    expect(volumeToDelete({ ...made, metadata: { name: 'by-hand' }, status: { phase: 'Released' } })).toBe(
      false,
    );
  });
});
