// What the rollout operations (scale, pause, undo) share: the workload they act on and how it is named, the
// operation-table check, request error mapping, and the retry of read-modify-write operations on a conflict.
// Every operation is checked against the seed's operation table first, so an unsupported kind is refused
// before anything is sent to the cluster. Read-modify-write operations carry the resourceVersion they read and
// are retried on a conflict, so a concurrent change is never overwritten with stale state.
// Design note: docs/rollout-operations.md.
import { fullJitter } from '../../backoff.ts';
import { errorMessage, StalledError, type Subject } from '../../errors.ts';
import type { KubeApi } from '../api.ts';
import { describeKubeError, statusCode } from '../errors.ts';
import { type Operation, requireOperation } from '../operations.ts';
import { workloadPath } from './paths.ts';
import type { ObjectMeta } from './types.ts';

export interface WorkloadRef {
  kind: string;
  name: string;
  namespace: string;
}

/** Where pause keeps a StatefulSet's previous partition; undo refuses a workload that carries it. */
export const PAUSED_PARTITION = 'mooring.io/paused-partition';
/** Where pause keeps a DaemonSet's previous update strategy; undo refuses a workload that carries it. */
export const PAUSED_UPDATE_STRATEGY = 'mooring.io/paused-update-strategy';
const CONFLICT_ATTEMPTS = 8;

/** The patch types of the API server, named by their content types. */
export const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';
export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';
export type PatchType = typeof MERGE_PATCH | typeof JSON_PATCH | typeof STRATEGIC_MERGE_PATCH;

export function describeRef(ref: WorkloadRef): string {
  return `${ref.kind} ${ref.namespace}/${ref.name}`;
}

export function precondition(meta: ObjectMeta | undefined): { resourceVersion?: string } {
  return meta?.resourceVersion ? { resourceVersion: meta.resourceVersion } : {};
}

function subject(ref: WorkloadRef): Subject {
  return { describe: describeRef(ref) };
}

export function stalled(ref: WorkloadRef, message: string): StalledError {
  return new StalledError(message, { subject: subject(ref) });
}

export function check(ref: WorkloadRef, operation: Operation): void {
  try {
    requireOperation(ref.kind, operation);
  } catch (error) {
    throw stalled(ref, errorMessage(error));
  }
}

export async function call<T>(ref: WorkloadRef, action: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw describeKubeError(error, `${describeRef(ref)}: ${action}`);
  }
}

/** Reads the workload (or its scale subresource); a failure is described with `action`. */
export function readWorkload<T>(
  api: KubeApi,
  ref: WorkloadRef,
  action: string,
  subresource?: 'scale',
): Promise<T> {
  return call(ref, action, () => api.request<T>('GET', workloadPath(ref, subresource)));
}

/** Patches the workload (or its scale subresource) and returns what the server made of it. */
export function patchWorkload<T>(
  api: KubeApi,
  ref: WorkloadRef,
  action: string,
  patch: { type: PatchType; body: unknown },
  subresource?: 'scale',
): Promise<T> {
  return call(ref, action, () =>
    api.request<T>('PATCH', workloadPath(ref, subresource), { body: patch.body, contentType: patch.type }),
  );
}

/** Re-reads and retries a read-modify-write operation whose resourceVersion precondition failed. */
export async function retryOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      const conflict = error instanceof Error && statusCode(error.cause) === 409;
      if (!conflict || tries >= CONFLICT_ATTEMPTS) throw error;
      // The controller writes the object's status as it rolls: give it a moment, jittered, before reading again.
      await new Promise((r) => setTimeout(r, fullJitter(tries, { baseMs: 50, maxMs: 400 })));
    }
  }
}
