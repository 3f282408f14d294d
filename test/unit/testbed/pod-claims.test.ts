import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  claimNames,
  claimProblem,
  FIRST_CONSUMER_CLASS,
  SELECTED_NODE,
  STORAGE_CLASS,
  storageClasses,
  unschedulableStatus,
  volumeFor,
  volumeToDelete,
} from '../../../test/testbed/pod-claims.ts';

const pod = (volumes: NonNullable<V1Pod['spec']>['volumes']): V1Pod => ({
  metadata: { name: 'db-0', namespace: 'shop', uid: 'p1' },
  spec: { containers: [{ name: 'db', image: 'db:1' }], volumes },
});
const [standard, firstConsumer] = storageClasses();
const classes = new Map(storageClasses().map((c) => [c.metadata?.name ?? '', c]));
const modeOf = (name: string) => classes.get(name)?.volumeBindingMode;
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

  it('gives the node to unbound claims of a first-consumer class and waits for them, saying nothing', () => {
    const p = pod([
      { name: 'a', persistentVolumeClaim: { claimName: 'a' } },
      { name: 'b', persistentVolumeClaim: { claimName: 'b' } },
      { name: 'c', persistentVolumeClaim: { claimName: 'c' } },
    ]);
    const late = (name: string, annotations?: Record<string, string>) =>
      claim(name, 'Pending', {
        metadata: { name, namespace: 'shop', uid: `u-${name}`, ...(annotations ? { annotations } : {}) },
        spec: { storageClassName: FIRST_CONSUMER_CLASS },
      });
    const claims = new Map([
      ['a', late('a')],
      ['b', late('b', { [SELECTED_NODE]: 'n1' })],
      ['c', claim('c', 'Bound')],
    ]);
    expect(claimProblem(p, (n) => claims.get(n), modeOf)).toEqual({
      stage: 'bind',
      select: ['a'],
      message: 'waiting for the volumes of a, b to be bound',
    });
    // An unbound claim of a class that binds at once is still the scheduler's refusal.
    claims.set('c', claim('c', 'Pending'));
    expect(claimProblem(p, (n) => claims.get(n), modeOf)).toMatchObject({ stage: 'schedule' });
    claims.set('c', claim('c', 'Bound'));
    claims.set('a', claim('a', 'Bound'));
    claims.set('b', claim('b', 'Bound'));
    expect(claimProblem(p, (n) => claims.get(n), modeOf)).toBeUndefined();
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
    const volume = volumeFor(claim('data'), standard);
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
    expect(
      volumeFor(claim('x', undefined, { spec: { storageClassName: 'fast' } }), undefined),
    ).toBeUndefined();
    expect(volumeFor(claim('x'), { ...standard, provisioner: 'ebs.csi.aws.com' })).toBeUndefined(); // another provisioner's class of the same name
    expect(volumeFor(claim('x', 'Bound'), standard)).toBeUndefined();
    expect(
      volumeFor(
        claim('x', undefined, { spec: { storageClassName: STORAGE_CLASS, volumeName: 'pv1' } }),
        standard,
      ),
    ).toBeUndefined();
    expect(
      volumeFor(
        claim('x', undefined, { metadata: { name: 'x', uid: 'u', deletionTimestamp: new Date() } }),
        standard,
      ),
    ).toBeUndefined();
  });

  it('makes one for a claim of its first-consumer class only once the scheduler selected a node', () => {
    const waiting = claim('logs', undefined, {
      spec: { storageClassName: FIRST_CONSUMER_CLASS, resources: { requests: { storage: '1Gi' } } },
    });
    expect(volumeFor(waiting, firstConsumer)).toBeUndefined();
    const placed = { ...waiting, metadata: { ...waiting.metadata, annotations: { [SELECTED_NODE]: 'n1' } } };
    expect(volumeFor(placed, firstConsumer)?.spec).toMatchObject({
      storageClassName: FIRST_CONSUMER_CLASS,
      claimRef: { name: 'logs', uid: 'u-logs' },
    });
  });

  it('deletes only the volumes it made, once released', () => {
    const made = volumeFor(claim('data'), standard);
    if (!made) throw new Error('no volume');
    expect(volumeToDelete({ ...made, status: { phase: 'Bound' } })).toBe(false);
    expect(volumeToDelete({ ...made, status: { phase: 'Released' } })).toBe(true);
    expect(volumeToDelete({ ...made, metadata: { name: 'by-hand' }, status: { phase: 'Released' } })).toBe(
      false,
    );
  });
});
