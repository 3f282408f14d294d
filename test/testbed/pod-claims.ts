// What the test bed's scheduler (the kubelet loop, kubelet.ts) checks before it binds a Pod to its node, as
// kube-scheduler's VolumeBinding plugin does: every PersistentVolumeClaim the Pod mounts must exist, and be bound
// when its StorageClass binds at once (`volumeBindingMode: Immediate`); otherwise the Pod stays Pending,
// unscheduled, with the scheduler's own words in its PodScheduled condition and a FailedScheduling Event. A claim
// of a class that binds on first consumer (`WaitForFirstConsumer`) is given the node (the selected-node
// annotation) and the Pod waits, without a word, until the claim is bound.
// And the bed's provisioner: the PersistentVolume it makes for a claim of one of its StorageClasses.
import type {
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodStatus,
  V1StorageClass,
} from '@kubernetes/client-node';

/** The bed's default StorageClass (binds at once), and the provisioner named in it. */
export const STORAGE_CLASS = 'standard';
/** The bed's StorageClass that binds on first consumer, as kind's, k3s's and most clouds' default classes do. */
export const FIRST_CONSUMER_CLASS = 'local-path';
export const PROVISIONER = 'testbed.mooring.io/host-path';
/** What the scheduler writes on a claim of a WaitForFirstConsumer class once it has placed a Pod that mounts it. */
export const SELECTED_NODE = 'volume.kubernetes.io/selected-node';

/** The bed's StorageClasses, as its kubelet registers them. */
export function storageClasses(): V1StorageClass[] {
  const of = (name: string, volumeBindingMode: string, isDefault: boolean): V1StorageClass => ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: {
      name,
      ...(isDefault ? { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } } : {}),
    },
    provisioner: PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode,
  });
  return [of(STORAGE_CLASS, 'Immediate', true), of(FIRST_CONSUMER_CLASS, 'WaitForFirstConsumer', false)];
}

/**
 * A Pod whose claims of a WaitForFirstConsumer class are not bound yet: the claims still to be given the node
 * (`select`); the Pod waits for their binding, unscheduled, and nothing is reported (kube-scheduler waits so in
 * its PreBind step).
 */
export interface VolumeBinding {
  stage: 'bind';
  select: string[];
  message: string;
}

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
 * Why the Pod cannot be scheduled, given each claim as read (undefined: not found) and the binding mode of each
 * StorageClass (undefined: no such class), or undefined when it can. The first missing claim is named, as the
 * scheduler names it; else an unbound one of a class that binds at once is said as the scheduler says it; else
 * unbound claims of classes that bind on first consumer make the Pod wait for their binding.
 */
export function claimProblem(
  pod: V1Pod,
  claimOf: (name: string) => V1PersistentVolumeClaim | undefined,
  bindingModeOf: (storageClass: string) => string | undefined = () => 'Immediate',
): ScheduleProblem | VolumeBinding | undefined {
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
    if (claim?.status?.phase !== 'Bound' && !waitsForConsumer(claim, bindingModeOf))
      return {
        stage: 'schedule',
        reason: 'FailedScheduling',
        message: `0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims. ${PREEMPTION}`,
      };
  }
  const delayed = names.filter((name) => claimOf(name)?.status?.phase !== 'Bound');
  if (delayed.length === 0) return undefined;
  return {
    stage: 'bind',
    select: delayed.filter((name) => !claimOf(name)?.metadata?.annotations?.[SELECTED_NODE]),
    message: `waiting for the volumes of ${delayed.join(', ')} to be bound`,
  };
}

/** A claim whose StorageClass binds on first consumer. */
function waitsForConsumer(
  claim: V1PersistentVolumeClaim | undefined,
  bindingModeOf: (storageClass: string) => string | undefined,
): boolean {
  const name = claim?.spec?.storageClassName;
  return name !== undefined && bindingModeOf(name) === 'WaitForFirstConsumer';
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
 * The PersistentVolume the bed's provisioner makes for a claim of a StorageClass of its own (`storageClass`, as
 * read; undefined: none) that has none: the size and access modes asked, reserved for that claim (claimRef with
 * its uid) so that the controller manager's persistentvolume-binder binds the two, as it binds an external
 * provisioner's volume; for a class that binds on first consumer, only once the scheduler selected a node.
 * Undefined for a claim it does not provision: another provisioner's class, one already bound or being deleted,
 * one that names its volume, one still waiting for its first consumer.
 */
export function volumeFor(
  claim: V1PersistentVolumeClaim,
  storageClass: V1StorageClass | undefined,
): V1PersistentVolume | undefined {
  const uid = claim.metadata?.uid;
  if (!uid || claim.metadata?.deletionTimestamp) return undefined;
  const className = claim.spec?.storageClassName;
  if (!className || storageClass?.metadata?.name !== className || storageClass.provisioner !== PROVISIONER)
    return undefined;
  const spec = claim.spec;
  if (!spec || spec.volumeName || claim.status?.phase === 'Bound') return undefined;
  if (
    storageClass.volumeBindingMode === 'WaitForFirstConsumer' &&
    !claim.metadata?.annotations?.[SELECTED_NODE]
  )
    return undefined;
  const storage = spec.resources?.requests?.storage ?? '1Gi';
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `pvc-${uid}`,
      annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER },
    },
    spec: {
      capacity: { storage },
      accessModes: spec.accessModes?.length ? spec.accessModes : ['ReadWriteOnce'],
      ...(spec.volumeMode ? { volumeMode: spec.volumeMode } : {}),
      persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? 'Delete',
      storageClassName: className,
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
