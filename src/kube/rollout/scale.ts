// Scale: sets the replicas of a Deployment, ReplicaSet or StatefulSet through its scale subresource, as
// `kubectl scale` does. Scaling a paused StatefulSet up raises its partition with it (see pause.ts).
import type { KubeApi } from '../api.ts';
import {
  check,
  MERGE_PATCH,
  patchWorkload,
  readWorkload,
  retryOnConflict,
  stalled,
  type WorkloadRef,
} from './common.ts';
import { holdPausedPartition } from './pause.ts';
import type { Scale } from './types.ts';

export interface ScaleResult {
  from: number;
  to: number;
}

/** The kinds with a scale subresource that mooring scales. */
const SCALABLE = new Set(['Deployment', 'ReplicaSet', 'StatefulSet']);

export async function scale(api: KubeApi, ref: WorkloadRef, replicas: number): Promise<ScaleResult> {
  check(ref, 'scale');
  if (!Number.isInteger(replicas) || replicas < 0) {
    throw stalled(ref, `replicas must be a whole number of at least 0, not ${replicas}`);
  }
  if (!SCALABLE.has(ref.kind)) throw stalled(ref, 'mooring cannot scale this kind');
  const current = await readWorkload<Scale>(api, ref, 'cannot read the scale', 'scale');
  const from = current.spec?.replicas ?? 0;
  if (ref.kind === 'StatefulSet') await retryOnConflict(() => holdPausedPartition(api, ref, replicas));
  await patchWorkload<Scale>(
    api,
    ref,
    'cannot scale',
    { type: MERGE_PATCH, body: { spec: { replicas } } },
    'scale',
  );
  return { from, to: replicas };
}
