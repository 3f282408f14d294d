// Scale: sets the replicas of a Deployment, ReplicaSet or StatefulSet through its scale subresource, as
// `kubectl scale` does. Scaling a paused StatefulSet up raises its partition with it (see pause.ts).
import { AppsV1Api, type KubeConfig, type V1Scale } from '@kubernetes/client-node';
import { call, check, mergePatch, retryOnConflict, stalled, type WorkloadRef } from './common.ts';
import { holdPausedPartition } from './pause.ts';

export interface ScaleResult {
  from: number;
  to: number;
}

export async function scale(kc: KubeConfig, ref: WorkloadRef, replicas: number): Promise<ScaleResult> {
  check(ref, 'scale');
  if (!Number.isInteger(replicas) || replicas < 0) {
    throw stalled(ref, `replicas must be a whole number of at least 0, not ${replicas}`);
  }
  const apps = kc.makeApiClient(AppsV1Api);
  const { name, namespace } = ref;
  const body = { spec: { replicas } };
  const subresources: Record<string, { read: () => Promise<V1Scale>; patch: () => Promise<V1Scale> }> = {
    Deployment: {
      read: () => apps.readNamespacedDeploymentScale({ name, namespace }),
      patch: () => apps.patchNamespacedDeploymentScale({ name, namespace, body }, mergePatch),
    },
    ReplicaSet: {
      read: () => apps.readNamespacedReplicaSetScale({ name, namespace }),
      patch: () => apps.patchNamespacedReplicaSetScale({ name, namespace, body }, mergePatch),
    },
    StatefulSet: {
      read: () => apps.readNamespacedStatefulSetScale({ name, namespace }),
      patch: () => apps.patchNamespacedStatefulSetScale({ name, namespace, body }, mergePatch),
    },
  };
  const subresource = subresources[ref.kind];
  if (!subresource) throw stalled(ref, 'mooring cannot scale this kind');
  const current = await call(ref, 'cannot read the scale', subresource.read);
  const from = current.spec?.replicas ?? 0;
  if (ref.kind === 'StatefulSet') await retryOnConflict(() => holdPausedPartition(apps, ref, replicas));
  await call(ref, 'cannot scale', subresource.patch);
  return { from, to: replicas };
}
