// What the rollout operations (scale, pause, undo) share: the workload they act on and how it is named, the
// operation-table check, request error mapping, and the retry of read-modify-write operations on a conflict.
// Every operation is checked against the seed's operation table first, so an unsupported kind is refused
// before anything is sent to the cluster. Read-modify-write operations carry the resourceVersion they read and
// are retried on a conflict, so a concurrent change is never overwritten with stale state.
// Design note: docs/rollout-operations.md.
import { PatchStrategy, setHeaderOptions, type V1ObjectMeta } from '@kubernetes/client-node';
import { errorMessage, StalledError, type Subject } from '../../errors.ts';
import { describeKubeError, statusCode } from '../errors.ts';
import { type Operation, requireOperation } from '../operations.ts';

export interface WorkloadRef {
  kind: string;
  name: string;
  namespace: string;
}

/** Where pause keeps a StatefulSet's previous partition; undo refuses a workload that carries it. */
export const PAUSED_PARTITION = 'mooring.io/paused-partition';
/** Where pause keeps a DaemonSet's previous update strategy; undo refuses a workload that carries it. */
export const PAUSED_UPDATE_STRATEGY = 'mooring.io/paused-update-strategy';
const CONFLICT_ATTEMPTS = 5;

export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

export function describeRef(ref: WorkloadRef): string {
  return `${ref.kind} ${ref.namespace}/${ref.name}`;
}

/** A typed client object as the plain JSON the API server sent. */
export function plain(value: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

export function precondition(meta: V1ObjectMeta | undefined): { resourceVersion?: string } {
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

/** Re-reads and retries a read-modify-write operation whose resourceVersion precondition failed. */
export async function retryOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      const conflict = error instanceof Error && statusCode(error.cause) === 409;
      if (!conflict || tries >= CONFLICT_ATTEMPTS) throw error;
    }
  }
}
