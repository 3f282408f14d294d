// Pause and resume. A Deployment has spec.paused (as `kubectl rollout pause`). StatefulSets and DaemonSets
// have no pause, so mooring builds one from their update strategies and remembers what it changed:
// - StatefulSet (RollingUpdate): spec.updateStrategy.rollingUpdate.partition is raised to spec.replicas, so no
//   pod is replaced by a new template; the previous partition is kept as JSON in the annotation
//   `mooring.io/paused-partition` ("null" when there was none). Resume restores it, or removes the partition.
//   Scaling a paused StatefulSet up through scale() raises the partition with it (holdPausedPartition), since
//   pods created beyond the partition would start from the new template.
// - DaemonSet: spec.updateStrategy becomes OnDelete (no pod is replaced until it is deleted); the previous
//   strategy is kept as JSON in `mooring.io/paused-update-strategy` and restored exactly on resume.
import { z } from 'zod';
import { parseJson } from '../../json.ts';
import type { KubeApi } from '../api.ts';
import {
  check,
  JSON_PATCH,
  MERGE_PATCH,
  PAUSED_PARTITION,
  PAUSED_UPDATE_STRATEGY,
  patchWorkload,
  precondition,
  readWorkload,
  retryOnConflict,
  stalled,
  unchangedSince,
  type WorkloadRef,
} from './common.ts';
import type { Workload } from './types.ts';

export type PauseResult =
  | { mechanism: 'paused' }
  | { mechanism: 'partition'; partition: number; previous: number | null }
  | { mechanism: 'on-delete'; previous: Record<string, unknown> };

export type ResumeResult =
  | { mechanism: 'paused' }
  | { mechanism: 'partition'; partition: number | null }
  | { mechanism: 'on-delete'; updateStrategy: Record<string, unknown> };

const savedPartition = z.union([z.int().nonnegative(), z.null()]);
const savedStrategy = z.looseObject({ type: z.string().min(1) });

export async function pause(api: KubeApi, ref: WorkloadRef): Promise<PauseResult> {
  check(ref, 'pause-rollout');
  switch (ref.kind) {
    case 'Deployment':
      return setDeploymentPaused(api, ref, true);
    case 'StatefulSet':
      return retryOnConflict(() => pauseStatefulSet(api, ref));
    case 'DaemonSet':
      return retryOnConflict(() => pauseDaemonSet(api, ref));
    default:
      throw stalled(ref, 'mooring cannot pause this kind');
  }
}

export async function resume(api: KubeApi, ref: WorkloadRef): Promise<ResumeResult> {
  check(ref, 'resume-rollout');
  switch (ref.kind) {
    case 'Deployment':
      return setDeploymentPaused(api, ref, false);
    case 'StatefulSet':
      return retryOnConflict(() => resumeStatefulSet(api, ref));
    case 'DaemonSet':
      return retryOnConflict(() => resumeDaemonSet(api, ref));
    default:
      throw stalled(ref, 'mooring cannot resume this kind');
  }
}

async function setDeploymentPaused(
  api: KubeApi,
  ref: WorkloadRef,
  paused: boolean,
): Promise<{ mechanism: 'paused' }> {
  const live = await readWorkload<Workload>(api, ref, 'cannot read');
  if ((live.spec?.paused ?? false) === paused) throw stalled(ref, paused ? 'already paused' : 'not paused');
  await patchWorkload(api, ref, paused ? 'cannot pause' : 'cannot resume', {
    type: MERGE_PATCH,
    body: { spec: { paused } },
  });
  return { mechanism: 'paused' };
}

async function pauseStatefulSet(api: KubeApi, ref: WorkloadRef): Promise<PauseResult> {
  const live = await readWorkload<Workload>(api, ref, 'cannot read');
  const strategy = live.spec?.updateStrategy;
  if (live.metadata?.annotations?.[PAUSED_PARTITION] !== undefined) {
    throw stalled(ref, `already paused (partition ${strategy?.rollingUpdate?.partition ?? 'none'})`);
  }
  const type = strategy?.type ?? 'RollingUpdate';
  if (type !== 'RollingUpdate') {
    throw stalled(
      ref,
      `updateStrategy is ${type}: pods are replaced only when deleted, there is no rollout to pause`,
    );
  }
  const previous = strategy?.rollingUpdate?.partition ?? null;
  // A partition at or above the replica count updates no pod; never lower one that is already higher.
  const partition = Math.max(live.spec?.replicas ?? 1, previous ?? 0);
  await patchWorkload(api, ref, 'cannot pause', {
    type: MERGE_PATCH,
    body: {
      metadata: {
        ...precondition(live.metadata),
        annotations: { [PAUSED_PARTITION]: JSON.stringify(previous) },
      },
      spec: { updateStrategy: { rollingUpdate: { partition } } },
    },
  });
  return { mechanism: 'partition', partition, previous };
}

async function resumeStatefulSet(api: KubeApi, ref: WorkloadRef): Promise<ResumeResult> {
  const live = await readWorkload<Workload>(api, ref, 'cannot read');
  const saved = live.metadata?.annotations?.[PAUSED_PARTITION];
  if (saved === undefined) throw stalled(ref, 'not paused');
  const previous = parseAnnotation(ref, PAUSED_PARTITION, saved, savedPartition);
  const rollingUpdate = live.spec?.updateStrategy?.rollingUpdate ?? {};
  const othersThanPartition = Object.keys(rollingUpdate).some((key) => key !== 'partition');
  // With no partition before the pause, rollingUpdate goes too unless it holds other settings.
  const restore =
    previous !== null ? { partition: previous } : othersThanPartition ? { partition: null } : null;
  await patchWorkload(api, ref, 'cannot resume', {
    type: MERGE_PATCH,
    body: {
      metadata: { ...precondition(live.metadata), annotations: { [PAUSED_PARTITION]: null } },
      spec: { updateStrategy: { rollingUpdate: restore } },
    },
  });
  return { mechanism: 'partition', partition: previous };
}

async function pauseDaemonSet(api: KubeApi, ref: WorkloadRef): Promise<PauseResult> {
  const live = await readWorkload<Workload>(api, ref, 'cannot read');
  if (live.metadata?.annotations?.[PAUSED_UPDATE_STRATEGY] !== undefined) {
    throw stalled(ref, 'already paused (updateStrategy OnDelete)');
  }
  const previous: Record<string, unknown> = live.spec?.updateStrategy ?? { type: 'RollingUpdate' };
  if (previous.type === 'OnDelete') {
    throw stalled(
      ref,
      'updateStrategy is OnDelete: pods are replaced only when deleted, there is no rollout to pause',
    );
  }
  await patchWorkload(api, ref, 'cannot pause', {
    type: MERGE_PATCH,
    body: {
      metadata: {
        ...precondition(live.metadata),
        annotations: { [PAUSED_UPDATE_STRATEGY]: JSON.stringify(previous) },
      },
      spec: { updateStrategy: { type: 'OnDelete', rollingUpdate: null } },
    },
  });
  return { mechanism: 'on-delete', previous };
}

async function resumeDaemonSet(api: KubeApi, ref: WorkloadRef): Promise<ResumeResult> {
  const live = await readWorkload<Workload>(api, ref, 'cannot read');
  const saved = live.metadata?.annotations?.[PAUSED_UPDATE_STRATEGY];
  if (saved === undefined) throw stalled(ref, 'not paused');
  const updateStrategy = parseAnnotation(ref, PAUSED_UPDATE_STRATEGY, saved, savedStrategy);
  // A JSON patch replaces the whole strategy, so the restored one is exactly the saved one, with no field
  // left over from OnDelete; unchangedSince makes it conditional on what was read.
  const body = [
    ...unchangedSince(live.metadata),
    { op: 'replace', path: '/spec/updateStrategy', value: updateStrategy },
    { op: 'remove', path: `/metadata/annotations/${pointerToken(PAUSED_UPDATE_STRATEGY)}` },
  ];
  await patchWorkload(api, ref, 'cannot resume', { type: JSON_PATCH, body });
  return { mechanism: 'on-delete', updateStrategy };
}

/** Scaling a paused StatefulSet up: pods at or beyond the partition would start from the new template. */
export async function holdPausedPartition(api: KubeApi, ref: WorkloadRef, replicas: number): Promise<void> {
  const live = await readWorkload<Workload>(api, ref, 'cannot read');
  if (live.metadata?.annotations?.[PAUSED_PARTITION] === undefined) return;
  if ((live.spec?.updateStrategy?.rollingUpdate?.partition ?? 0) >= replicas) return;
  await patchWorkload(api, ref, 'cannot raise the partition of the paused StatefulSet', {
    type: MERGE_PATCH,
    body: {
      metadata: precondition(live.metadata),
      spec: { updateStrategy: { rollingUpdate: { partition: replicas } } },
    },
  });
}

function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

function parseAnnotation<T>(ref: WorkloadRef, key: string, text: string, schema: z.ZodType<T>): T {
  let value: unknown;
  try {
    value = parseJson(text);
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw stalled(ref, `annotation ${key} holds ${JSON.stringify(text)}, which mooring did not write`);
  return parsed.data;
}
