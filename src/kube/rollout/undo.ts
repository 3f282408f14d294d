// Undo follows kubectl's polymorphichelpers/rollback.go: a Deployment gets the pod template (and the
// annotations) of the ReplicaSet of the chosen revision; a StatefulSet or DaemonSet gets the strategic-merge
// patch stored in the ControllerRevision of the chosen revision. A paused workload is refused: resume first.
import { isDeepStrictEqual } from 'node:util';
import {
  AppsV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1DaemonSet,
  type V1LabelSelector,
  type V1ObjectMeta,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import {
  call,
  check,
  jsonPatch,
  PAUSED_PARTITION,
  PAUSED_UPDATE_STRATEGY,
  plain,
  precondition,
  retryOnConflict,
  stalled,
  type WorkloadRef,
} from './common.ts';

export interface UndoResult {
  /** The revision whose template was restored (it becomes the newest revision under a new number). */
  revision: number;
  /** False when the live template already matched that revision (kubectl's "skipped rollback"). */
  changed: boolean;
}

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

const strategicPatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

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
