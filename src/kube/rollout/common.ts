// What the rollout operations (scale, pause, undo) share: the workload they act on and how it is named, the
// operation-table check, request error mapping, and the retry of read-modify-write operations on a conflict.
// Every operation is checked against the seed's operation table first, so an unsupported kind is refused
// before anything is sent to the cluster. Read-modify-write operations carry the resourceVersion they read and
// are retried on a conflict, so a concurrent change is never overwritten with stale state.
// Design note: docs/rollout-operations.md.
import { fullJitter } from '../../backoff.ts';
import { errorMessage, StalledError, type Subject } from '../../errors.ts';
import type { KubeApi } from '../api.ts';
import { bodyOf, describeKubeError, serverMessage, statusCode } from '../errors.ts';
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

export type JsonPatchOperation =
  | { op: 'test' | 'add' | 'replace'; path: string; value: unknown }
  | { op: 'remove'; path: string };

/**
 * The precondition of a JSON patch that rewrites what it read of the spec: a test of the generation, which every
 * change to the spec raises (and, for a Deployment, every change to its annotations) and no status write does.
 * A resourceVersion precondition also fails on each status write, and a controller writes the status of a
 * rolling workload many times a second; the API server applies a patch without a resourceVersion to the newest
 * object, so the test holds against the state the patch lands on.
 */
export function unchangedSince(meta: ObjectMeta | undefined): JsonPatchOperation[] {
  if (meta?.generation === undefined) {
    return [{ op: 'replace', path: '/metadata/resourceVersion', value: meta?.resourceVersion }];
  }
  return [{ op: 'test', path: '/metadata/generation', value: meta.generation }];
}

/**
 * The API server's answer when a JSON patch does not apply (a failed test among others): a bare 422 that says
 * nothing more (apimachinery's NewGenericServerResponse), unlike a refused object, whose 422 names it and the
 * fields at fault. The patches here only fail that way when a test of unchangedSince fails or what was read to
 * build them has gone since, so the operation starts again from a new read.
 */
const PATCH_NOT_APPLIED = 'the server rejected our request due to an error in our request';

/** Whether a patch lost a race: its resourceVersion was stale (409), or it did not apply to the newest object. */
export function isConflict(error: unknown): boolean {
  const code = statusCode(error);
  if (code === 409) return true;
  if (code !== 422 || serverMessage(error) !== PATCH_NOT_APPLIED) return false;
  const details = (bodyOf(error) as { details?: { name?: unknown; causes?: unknown[] } } | undefined)
    ?.details;
  return !details?.name && !details?.causes?.length;
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

/** Re-reads and retries a read-modify-write operation whose precondition failed (isConflict). */
export async function retryOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      const conflict = error instanceof Error && isConflict(error.cause);
      if (!conflict || tries >= CONFLICT_ATTEMPTS) throw error;
      // The controller writes the object's status as it rolls: give it a moment, jittered, before reading again.
      await new Promise((r) => setTimeout(r, fullJitter(tries, { baseMs: 50, maxMs: 400 })));
    }
  }
}
