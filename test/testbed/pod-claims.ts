// What the test bed's scheduler (the kubelet loop, kubelet.ts) checks before it binds a Pod to its node, as
// kube-scheduler's VolumeBinding plugin does: every PersistentVolumeClaim the Pod mounts must exist and be bound
// (the bed's StorageClass binds at once, as `volumeBindingMode: Immediate`). Otherwise the Pod stays Pending,
// unscheduled, with the scheduler's own words in its PodScheduled condition and a FailedScheduling Event.
// And the bed's provisioner: the PersistentVolume it makes for a claim of its StorageClass.
import type {
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodStatus,
} from '@kubernetes/client-node';

/** The bed's default StorageClass, and the provisioner named in it. */
export const STORAGE_CLASS = 'standard';
export const PROVISIONER = 'testbed.mooring.io/host-path';

/** What keeps a Pod from being scheduled: the Event's reason and message, as kube-scheduler writes them. */
export interface ScheduleProblem {
  stage: 'schedule';
  reason: 'FailedScheduling';
  message: string;
}

/** The claims a Pod mounts: its `persistentVolumeClaim` volumes and the claims of its generic ephemeral volumes. */
export function claimNames(pod: V1Pod): string[] {
  const names = new Set<string>();
  for (const volume of pod.spec?.volumes ?? []) {
    if (volume.persistentVolumeClaim?.claimName) names.add(volume.persistentVolumeClaim.claimName);
    else if (volume.ephemeral) names.add(`${pod.metadata?.name ?? ''}-${volume.name}`);
  }
  return [...names];
}

const PREEMPTION = 'preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.';

/**
 * Why the Pod cannot be scheduled, given each claim as read (undefined: not found), or undefined when it can. The
 * first missing claim is named, as the scheduler names it; else an unbound one is said as the scheduler says it.
 */
export function claimProblem(
  pod: V1Pod,
  claimOf: (name: string) => V1PersistentVolumeClaim | undefined,
): ScheduleProblem | undefined {
  const names = claimNames(pod);
  for (const name of names)
    if (!claimOf(name))
      return {
        stage: 'schedule',
        reason: 'FailedScheduling',
        message: `0/1 nodes are available: persistentvolumeclaim "${name}" not found. ${PREEMPTION}`,
      };
  for (const name of names) {
    const claim = claimOf(name);
    if (claim?.metadata?.deletionTimestamp)
      return {
        stage: 'schedule',
        reason: 'FailedScheduling',
        message: `0/1 nodes are available: persistentvolumeclaim "${name}" is being deleted. ${PREEMPTION}`,
      };
    if (claim?.status?.phase !== 'Bound')
      return {
        stage: 'schedule',
        reason: 'FailedScheduling',
        message: `0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. ${PREEMPTION}`,
      };
  }
  return undefined;
}

/** An unscheduled Pod's status: Pending, PodScheduled False (Unschedulable) with the scheduler's message. */
export function unschedulableStatus(pod: V1Pod, problem: ScheduleProblem, now: Date): V1PodStatus {
  const generation = pod.metadata?.generation;
  const observed = generation === undefined ? {} : { observedGeneration: generation };
  return {
    ...observed,
    phase: 'Pending',
    conditions: [
      {
        type: 'PodScheduled',
        ...observed,
        status: 'False',
        reason: 'Unschedulable',
        message: problem.message,
        lastTransitionTime: now,
      },
    ],
  } as V1PodStatus;
}

/**
 * The PersistentVolume the bed's provisioner makes for a claim of its StorageClass that has none: the size and
 * access modes asked, reserved for that claim (claimRef with its uid) so that the controller manager's
 * persistentvolume-binder binds the two, as it binds an external provisioner's volume. Undefined for a claim it
 * does not provision: another class, one already bound or being deleted, one that names its volume.
 */
export function volumeFor(claim: V1PersistentVolumeClaim): V1PersistentVolume | undefined {
  const uid = claim.metadata?.uid;
  if (!uid || claim.metadata?.deletionTimestamp) return undefined;
  if (claim.spec?.storageClassName !== STORAGE_CLASS) return undefined;
  if (claim.spec.volumeName || claim.status?.phase === 'Bound') return undefined;
  const storage = claim.spec.resources?.requests?.storage ?? '1Gi';
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `pvc-${uid}`,
      annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER },
    },
    spec: {
      capacity: { storage },
      accessModes: claim.spec.accessModes?.length ? claim.spec.accessModes : ['ReadWriteOnce'],
      ...(claim.spec.volumeMode ? { volumeMode: claim.spec.volumeMode } : {}),
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: STORAGE_CLASS,
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: claim.metadata?.namespace ?? 'default',
        name: claim.metadata?.name ?? '',
        uid,
      },
      hostPath: { path: `/var/lib/testbed/volumes/pvc-${uid}`, type: 'DirectoryOrCreate' },
    },
  };
}

/** Whether the provisioner deletes this volume: one it made, released by its claim, to be deleted. */
export function volumeToDelete(volume: V1PersistentVolume): boolean {
  return (
    volume.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'] === PROVISIONER &&
    volume.spec?.persistentVolumeReclaimPolicy === 'Delete' &&
    (volume.status?.phase === 'Released' || volume.status?.phase === 'Failed') &&
    !volume.metadata?.deletionTimestamp
  );
}
