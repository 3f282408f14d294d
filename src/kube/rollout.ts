// Operations on live workloads: scale, pause, resume and undo, with kubectl's semantics where kubectl has them.
// Every operation is checked against the seed's operation table first, so an unsupported kind is refused
// before anything is sent to the cluster.
//
// Pause and resume. A Deployment has spec.paused (as `kubectl rollout pause`). StatefulSets and DaemonSets
// have no pause, so mooring builds one from their update strategies and remembers what it changed:
// - StatefulSet (RollingUpdate): spec.updateStrategy.rollingUpdate.partition is raised to spec.replicas, so no
//   pod is replaced by a new template; the previous partition is kept as JSON in the annotation
//   `mooring.io/paused-partition` ("null" when there was none). Resume restores it, or removes the partition.
//   Scaling a paused StatefulSet up through scale() raises the partition with it, since pods created beyond
//   the partition would start from the new template.
// - DaemonSet: spec.updateStrategy becomes OnDelete (no pod is replaced until it is deleted); the previous
//   strategy is kept as JSON in `mooring.io/paused-update-strategy` and restored exactly on resume.
// Read-modify-write operations carry the resourceVersion they read and are retried on a conflict, so a
// concurrent change is never overwritten with stale state. Design note: docs/rollout-operations.md.
//
// Undo follows kubectl's polymorphichelpers/rollback.go: a Deployment gets the pod template (and the
// annotations) of the ReplicaSet of the chosen revision; a StatefulSet or DaemonSet gets the strategic-merge
// patch stored in the ControllerRevision of the chosen revision.
import { isDeepStrictEqual } from 'node:util';
import {
  AppsV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1DaemonSet,
  type V1LabelSelector,
  type V1ObjectMeta,
  type V1Scale,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import { z } from 'zod';
import { errorMessage, StalledError, type Subject } from '../errors.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { type Operation, requireOperation } from './operations.ts';

export interface WorkloadRef {
  kind: string;
  name: string;
  namespace: string;
}

export interface ScaleResult {
  from: number;
  to: number;
}

export type PauseResult =
  | { mechanism: 'paused' }
  | { mechanism: 'partition'; partition: number; previous: number | null }
  | { mechanism: 'on-delete'; previous: Record<string, unknown> };

export type ResumeResult =
  | { mechanism: 'paused' }
  | { mechanism: 'partition'; partition: number | null }
  | { mechanism: 'on-delete'; updateStrategy: Record<string, unknown> };

export interface UndoResult {
  /** The revision whose template was restored (it becomes the newest revision under a new number). */
  revision: number;
  /** False when the live template already matched that revision (kubectl's "skipped rollback"). */
  changed: boolean;
}

export const PAUSED_PARTITION = 'mooring.io/paused-partition';
export const PAUSED_UPDATE_STRATEGY = 'mooring.io/paused-update-strategy';
const REVISION = 'deployment.kubernetes.io/revision';
const POD_TEMPLATE_HASH = 'pod-template-hash';
/** Deployment annotations kubectl keeps rather than copying them back from the ReplicaSet (rollback.go). */
const ANNOTATIONS_TO_SKIP = [
  'kubectl.kubernetes.io/last-applied-configuration',
  REVISION,
  'deployment.kubernetes.io/revision-history',
  'deployment.kubernetes.io/desired-replicas',
  'deployment.kubernetes.io/max-replicas',
  'deprecated.deployment.rollback.to',
];
const CONFLICT_ATTEMPTS = 5;

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
const strategicPatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

const savedPartition = z.union([z.int().nonnegative(), z.null()]);
const savedStrategy = z.looseObject({ type: z.string().min(1) });

export function describeRef(ref: WorkloadRef): string {
  return `${ref.kind} ${ref.namespace}/${ref.name}`;
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

export async function pause(kc: KubeConfig, ref: WorkloadRef): Promise<PauseResult> {
  check(ref, 'pause-rollout');
  const apps = kc.makeApiClient(AppsV1Api);
  switch (ref.kind) {
    case 'Deployment':
      return setDeploymentPaused(apps, ref, true);
    case 'StatefulSet':
      return retryOnConflict(() => pauseStatefulSet(apps, ref));
    case 'DaemonSet':
      return retryOnConflict(() => pauseDaemonSet(apps, ref));
    default:
      throw stalled(ref, 'mooring cannot pause this kind');
  }
}

export async function resume(kc: KubeConfig, ref: WorkloadRef): Promise<ResumeResult> {
  check(ref, 'resume-rollout');
  const apps = kc.makeApiClient(AppsV1Api);
  switch (ref.kind) {
    case 'Deployment':
      return setDeploymentPaused(apps, ref, false);
    case 'StatefulSet':
      return retryOnConflict(() => resumeStatefulSet(apps, ref));
    case 'DaemonSet':
      return retryOnConflict(() => resumeDaemonSet(apps, ref));
    default:
      throw stalled(ref, 'mooring cannot resume this kind');
  }
}

/** Rolls back to `toRevision`, or (when absent or 0, as in kubectl) to the revision before the newest. */
export async function undo(kc: KubeConfig, ref: WorkloadRef, toRevision?: number): Promise<UndoResult> {
  check(ref, 'undo-rollout');
  if (toRevision !== undefined && (!Number.isInteger(toRevision) || toRevision < 0)) {
    throw stalled(
      ref,
      `the revision to roll back to must be a whole number of at least 1, not ${toRevision}`,
    );
  }
  const apps = kc.makeApiClient(AppsV1Api);
  const wanted = toRevision || undefined;
  switch (ref.kind) {
    case 'Deployment':
      return retryOnConflict(() => undoDeployment(apps, ref, wanted));
    case 'StatefulSet':
    case 'DaemonSet':
      return retryOnConflict(() => undoFromControllerRevisions(apps, ref, wanted));
    default:
      throw stalled(ref, 'mooring cannot undo a rollout of this kind');
  }
}

async function setDeploymentPaused(
  apps: AppsV1Api,
  ref: WorkloadRef,
  paused: boolean,
): Promise<{ mechanism: 'paused' }> {
  const { name, namespace } = ref;
  const live = await call(ref, 'cannot read', () => apps.readNamespacedDeployment({ name, namespace }));
  if ((live.spec?.paused ?? false) === paused) throw stalled(ref, paused ? 'already paused' : 'not paused');
  await call(ref, paused ? 'cannot pause' : 'cannot resume', () =>
    apps.patchNamespacedDeployment({ name, namespace, body: { spec: { paused } } }, mergePatch),
  );
  return { mechanism: 'paused' };
}

async function pauseStatefulSet(apps: AppsV1Api, ref: WorkloadRef): Promise<PauseResult> {
  const { name, namespace } = ref;
  const live = await call(ref, 'cannot read', () => apps.readNamespacedStatefulSet({ name, namespace }));
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
  await call(ref, 'cannot pause', () =>
    apps.patchNamespacedStatefulSet(
      {
        name,
        namespace,
        body: {
          metadata: {
            ...precondition(live.metadata),
            annotations: { [PAUSED_PARTITION]: JSON.stringify(previous) },
          },
          spec: { updateStrategy: { rollingUpdate: { partition } } },
        },
      },
      mergePatch,
    ),
  );
  return { mechanism: 'partition', partition, previous };
}

async function resumeStatefulSet(apps: AppsV1Api, ref: WorkloadRef): Promise<ResumeResult> {
  const { name, namespace } = ref;
  const live = await call(ref, 'cannot read', () => apps.readNamespacedStatefulSet({ name, namespace }));
  const saved = live.metadata?.annotations?.[PAUSED_PARTITION];
  if (saved === undefined) throw stalled(ref, 'not paused');
  const previous = parseAnnotation(ref, PAUSED_PARTITION, saved, savedPartition);
  const rollingUpdate = plain(live.spec?.updateStrategy?.rollingUpdate ?? {});
  const othersThanPartition = Object.keys(rollingUpdate).some((key) => key !== 'partition');
  // With no partition before the pause, rollingUpdate goes too unless it holds other settings.
  const restore =
    previous !== null ? { partition: previous } : othersThanPartition ? { partition: null } : null;
  await call(ref, 'cannot resume', () =>
    apps.patchNamespacedStatefulSet(
      {
        name,
        namespace,
        body: {
          metadata: { ...precondition(live.metadata), annotations: { [PAUSED_PARTITION]: null } },
          spec: { updateStrategy: { rollingUpdate: restore } },
        },
      },
      mergePatch,
    ),
  );
  return { mechanism: 'partition', partition: previous };
}

async function pauseDaemonSet(apps: AppsV1Api, ref: WorkloadRef): Promise<PauseResult> {
  const { name, namespace } = ref;
  const live = await call(ref, 'cannot read', () => apps.readNamespacedDaemonSet({ name, namespace }));
  if (live.metadata?.annotations?.[PAUSED_UPDATE_STRATEGY] !== undefined) {
    throw stalled(ref, 'already paused (updateStrategy OnDelete)');
  }
  const previous = plain(live.spec?.updateStrategy ?? { type: 'RollingUpdate' });
  if (previous.type === 'OnDelete') {
    throw stalled(
      ref,
      'updateStrategy is OnDelete: pods are replaced only when deleted, there is no rollout to pause',
    );
  }
  await call(ref, 'cannot pause', () =>
    apps.patchNamespacedDaemonSet(
      {
        name,
        namespace,
        body: {
          metadata: {
            ...precondition(live.metadata),
            annotations: { [PAUSED_UPDATE_STRATEGY]: JSON.stringify(previous) },
          },
          spec: { updateStrategy: { type: 'OnDelete', rollingUpdate: null } },
        },
      },
      mergePatch,
    ),
  );
  return { mechanism: 'on-delete', previous };
}

async function resumeDaemonSet(apps: AppsV1Api, ref: WorkloadRef): Promise<ResumeResult> {
  const { name, namespace } = ref;
  const live = await call(ref, 'cannot read', () => apps.readNamespacedDaemonSet({ name, namespace }));
  const saved = live.metadata?.annotations?.[PAUSED_UPDATE_STRATEGY];
  if (saved === undefined) throw stalled(ref, 'not paused');
  const updateStrategy = parseAnnotation(ref, PAUSED_UPDATE_STRATEGY, saved, savedStrategy);
  // A JSON patch replaces the whole strategy, so the restored one is exactly the saved one, with no field
  // left over from OnDelete; the resourceVersion makes it conditional on what was read.
  const body = [
    { op: 'replace', path: '/metadata/resourceVersion', value: live.metadata?.resourceVersion },
    { op: 'replace', path: '/spec/updateStrategy', value: updateStrategy },
    { op: 'remove', path: `/metadata/annotations/${pointerToken(PAUSED_UPDATE_STRATEGY)}` },
  ];
  await call(ref, 'cannot resume', () => apps.patchNamespacedDaemonSet({ name, namespace, body }, jsonPatch));
  return { mechanism: 'on-delete', updateStrategy };
}

/** Scaling a paused StatefulSet up: pods at or beyond the partition would start from the new template. */
async function holdPausedPartition(apps: AppsV1Api, ref: WorkloadRef, replicas: number): Promise<void> {
  const { name, namespace } = ref;
  const live = await call(ref, 'cannot read', () => apps.readNamespacedStatefulSet({ name, namespace }));
  if (live.metadata?.annotations?.[PAUSED_PARTITION] === undefined) return;
  if ((live.spec?.updateStrategy?.rollingUpdate?.partition ?? 0) >= replicas) return;
  await call(ref, 'cannot raise the partition of the paused StatefulSet', () =>
    apps.patchNamespacedStatefulSet(
      {
        name,
        namespace,
        body: {
          metadata: precondition(live.metadata),
          spec: { updateStrategy: { rollingUpdate: { partition: replicas } } },
        },
      },
      mergePatch,
    ),
  );
}

async function undoDeployment(apps: AppsV1Api, ref: WorkloadRef, toRevision?: number): Promise<UndoResult> {
  const { name, namespace } = ref;
  const live = await call(ref, 'cannot read', () => apps.readNamespacedDeployment({ name, namespace }));
  if (live.spec?.paused) {
    // As kubectl: the rolled-back template would not roll out while paused.
    throw stalled(ref, 'paused: resume it first, then undo');
  }
  const uid = live.metadata?.uid;
  const listed = await call(ref, 'cannot list its ReplicaSets', () =>
    apps.listNamespacedReplicaSet({ namespace, labelSelector: selectorString(ref, live.spec?.selector) }),
  );
  const history = new Map<number, (typeof listed.items)[number]>();
  for (const rs of listed.items) {
    if (!controlledBy(rs.metadata, uid)) continue;
    const revision = Number(rs.metadata?.annotations?.[REVISION]);
    if (Number.isInteger(revision) && revision > 0) history.set(revision, rs);
  }
  const revision = pickRevision(ref, [...history.keys()], toRevision);
  const replicaSet = history.get(revision);
  const template = plain(replicaSet?.spec?.template ?? {});
  const currentTemplate = plain(live.spec?.template ?? {});
  if (isDeepStrictEqual(withoutHash(template), withoutHash(currentTemplate)))
    return { revision, changed: false };

  const annotations: Record<string, string> = {};
  for (const key of ANNOTATIONS_TO_SKIP) {
    const value = live.metadata?.annotations?.[key];
    if (value !== undefined) annotations[key] = value;
  }
  for (const [key, value] of Object.entries(replicaSet?.metadata?.annotations ?? {})) {
    if (!ANNOTATIONS_TO_SKIP.includes(key)) annotations[key] = value;
  }
  const body = [
    { op: 'replace', path: '/metadata/resourceVersion', value: live.metadata?.resourceVersion },
    { op: 'replace', path: '/spec/template', value: withoutHash(template) },
    // `add` rather than kubectl's `replace`: it also works on a Deployment without annotations.
    { op: 'add', path: '/metadata/annotations', value: annotations },
  ];
  await call(ref, `cannot restore revision ${revision}`, () =>
    apps.patchNamespacedDeployment({ name, namespace, body }, jsonPatch),
  );
  return { revision, changed: true };
}

async function undoFromControllerRevisions(
  apps: AppsV1Api,
  ref: WorkloadRef,
  toRevision?: number,
): Promise<UndoResult> {
  const { name, namespace } = ref;
  const isStatefulSet = ref.kind === 'StatefulSet';
  const live = await call<V1StatefulSet | V1DaemonSet>(ref, 'cannot read', () =>
    isStatefulSet
      ? apps.readNamespacedStatefulSet({ name, namespace })
      : apps.readNamespacedDaemonSet({ name, namespace }),
  );
  const pausedBy = isStatefulSet ? PAUSED_PARTITION : PAUSED_UPDATE_STRATEGY;
  if (live.metadata?.annotations?.[pausedBy] !== undefined) {
    throw stalled(ref, 'paused: resume it first, then undo');
  }
  const listed = await call(ref, 'cannot list its ControllerRevisions', () =>
    apps.listNamespacedControllerRevision({
      namespace,
      labelSelector: selectorString(ref, live.spec?.selector),
    }),
  );
  const history = new Map<number, unknown>();
  for (const cr of listed.items) {
    if (controlledBy(cr.metadata, live.metadata?.uid)) history.set(cr.revision, cr.data);
  }
  const revision = pickRevision(ref, [...history.keys()], toRevision);
  const data = history.get(revision);
  if (!data || typeof data !== 'object' || Array.isArray(data)) {
    throw stalled(ref, `ControllerRevision of revision ${revision} holds no patch`);
  }
  // The revision's data is a strategic-merge patch that replaces spec.template (kubectl applies it as is);
  // the resourceVersion makes it conditional, so an unchanged generation means the template already matched.
  const body = { ...(data as Record<string, unknown>), metadata: precondition(live.metadata) };
  const patched = await call<V1StatefulSet | V1DaemonSet>(ref, `cannot restore revision ${revision}`, () =>
    isStatefulSet
      ? apps.patchNamespacedStatefulSet({ name, namespace, body }, strategicPatch)
      : apps.patchNamespacedDaemonSet({ name, namespace, body }, strategicPatch),
  );
  return { revision, changed: patched.metadata?.generation !== live.metadata?.generation };
}

/** kubectl's choice: the given revision, or the newest but one. */
function pickRevision(ref: WorkloadRef, revisions: number[], toRevision?: number): number {
  const known = [...new Set(revisions)].sort((a, b) => a - b);
  if (toRevision === undefined) {
    const previous = known[known.length - 2];
    if (previous === undefined) throw stalled(ref, 'no rollout history');
    return previous;
  }
  if (!known.includes(toRevision)) {
    throw stalled(ref, `revision ${toRevision} not found (known revisions: ${known.join(', ') || 'none'})`);
  }
  return toRevision;
}

/** A label selector in the syntax of the list API's labelSelector parameter. */
function selectorString(ref: WorkloadRef, selector: V1LabelSelector | undefined): string {
  const terms = Object.entries(selector?.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const { key, operator, values = [] } of selector?.matchExpressions ?? []) {
    if (operator === 'In') terms.push(`${key} in (${values.join(',')})`);
    else if (operator === 'NotIn') terms.push(`${key} notin (${values.join(',')})`);
    else if (operator === 'Exists') terms.push(key);
    else if (operator === 'DoesNotExist') terms.push(`!${key}`);
    else throw stalled(ref, `selector operator ${operator} is not one of In, NotIn, Exists, DoesNotExist`);
  }
  // An empty selector would list every object of the namespace; ownership is checked anyway, but refuse it.
  if (terms.length === 0) throw stalled(ref, 'has an empty selector');
  return terms.join(',');
}

function controlledBy(meta: V1ObjectMeta | undefined, uid: string | undefined): boolean {
  return (
    uid !== undefined && (meta?.ownerReferences ?? []).some((o) => o.uid === uid && o.controller === true)
  );
}

/** The template as JSON (no undefined, no Date objects) without the ReplicaSet's pod-template-hash label. */
function withoutHash(template: Record<string, unknown>): Record<string, unknown> {
  const copy = structuredClone(template);
  const metadata = copy.metadata as { labels?: Record<string, string> } | undefined;
  if (metadata?.labels) {
    delete metadata.labels[POD_TEMPLATE_HASH];
    if (Object.keys(metadata.labels).length === 0) delete metadata.labels;
  }
  return copy;
}

/** A typed client object as the plain JSON the API server sent. */
function plain(value: object): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
}

function precondition(meta: V1ObjectMeta | undefined): { resourceVersion?: string } {
  return meta?.resourceVersion ? { resourceVersion: meta.resourceVersion } : {};
}

function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

function parseAnnotation<T>(ref: WorkloadRef, key: string, text: string, schema: z.ZodType<T>): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success)
    throw stalled(ref, `annotation ${key} holds ${JSON.stringify(text)}, which mooring did not write`);
  return parsed.data;
}

function subject(ref: WorkloadRef): Subject {
  return { describe: describeRef(ref) };
}

function stalled(ref: WorkloadRef, message: string): StalledError {
  return new StalledError(message, { subject: subject(ref) });
}

function check(ref: WorkloadRef, operation: Operation): void {
  try {
    requireOperation(ref.kind, operation);
  } catch (error) {
    throw stalled(ref, errorMessage(error));
  }
}

async function call<T>(ref: WorkloadRef, action: string, request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    throw describeKubeError(error, `${describeRef(ref)}: ${action}`);
  }
}

/** Re-reads and retries a read-modify-write operation whose resourceVersion precondition failed. */
async function retryOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      const conflict = error instanceof Error && statusCode(error.cause) === 409;
      if (!conflict || tries >= CONFLICT_ATTEMPTS) throw error;
    }
  }
}
