// Undo follows kubectl's polymorphichelpers/rollback.go: a Deployment gets the pod template (and the
// annotations) of the ReplicaSet of the chosen revision; a StatefulSet or DaemonSet gets the strategic-merge
// patch stored in the ControllerRevision of the chosen revision. A paused workload is refused: resume first.
import { isDeepStrictEqual } from 'node:util';
import { errorMessage } from '../../errors.ts';
import { isObject } from '../../render/manifest.ts';
import type { KubeApi } from '../api.ts';
import { listAll } from '../list-pages.ts';
import {
  call,
  check,
  JSON_PATCH,
  PAUSED_PARTITION,
  PAUSED_UPDATE_STRATEGY,
  patchWorkload,
  readWorkload,
  retryOnConflict,
  stalled,
  unchangedSince,
  type WorkloadRef,
} from './common.ts';
import { appsCollectionPath, selectorString } from './paths.ts';
import type { ControllerRevision, LabelSelector, ObjectMeta, Workload } from './types.ts';

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

/** Rolls back to `toRevision`, or (when absent or 0, as in kubectl) to the revision before the newest. */
export async function undo(api: KubeApi, ref: WorkloadRef, toRevision?: number): Promise<UndoResult> {
  check(ref, 'undo-rollout');
  if (toRevision !== undefined && (!Number.isInteger(toRevision) || toRevision < 0)) {
    throw stalled(
      ref,
      `the revision to roll back to must be a whole number of at least 1, not ${toRevision}`,
    );
  }
  const wanted = toRevision || undefined;
  switch (ref.kind) {
    case 'Deployment':
      return retryOnConflict(() => undoDeployment(api, ref, wanted));
    case 'StatefulSet':
    case 'DaemonSet':
      return retryOnConflict(() => undoFromControllerRevisions(api, ref, wanted));
    default:
      throw stalled(ref, 'mooring cannot undo a rollout of this kind');
  }
}

async function undoDeployment(api: KubeApi, ref: WorkloadRef, toRevision?: number): Promise<UndoResult> {
  const live = await readWorkload<Workload>(api, ref, 'cannot read');
  if (live.spec?.paused) {
    // As kubectl: the rolled-back template would not roll out while paused.
    throw stalled(ref, 'paused: resume it first, then undo');
  }
  const uid = live.metadata?.uid;
  const listed = await listOwned<Workload>(api, ref, 'ReplicaSet', live.spec?.selector);
  const history = new Map<number, Workload>();
  for (const rs of listed) {
    if (!controlledBy(rs.metadata, uid)) continue;
    const revision = Number(rs.metadata?.annotations?.[REVISION]);
    if (Number.isInteger(revision) && revision > 0) history.set(revision, rs);
  }
  const revision = pickRevision(ref, [...history.keys()], toRevision);
  const replicaSet = history.get(revision);
  const template = replicaSet?.spec?.template ?? {};
  const currentTemplate = live.spec?.template ?? {};
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
    // The annotations are rewritten from what was read: the API server raises a Deployment's generation when
    // its annotations change too (they are copied to its ReplicaSets), so a change to them since is a conflict.
    ...unchangedSince(live.metadata),
    { op: 'replace', path: '/spec/template', value: withoutHash(template) },
    // `add` rather than kubectl's `replace`: it also works on a Deployment without annotations.
    { op: 'add', path: '/metadata/annotations', value: annotations },
  ];
  await patchWorkload(api, ref, `cannot restore revision ${revision}`, { type: JSON_PATCH, body });
  return { revision, changed: true };
}

async function undoFromControllerRevisions(
  api: KubeApi,
  ref: WorkloadRef,
  toRevision?: number,
): Promise<UndoResult> {
  const isStatefulSet = ref.kind === 'StatefulSet';
  const live = await readWorkload<Workload>(api, ref, 'cannot read');
  const pausedBy = isStatefulSet ? PAUSED_PARTITION : PAUSED_UPDATE_STRATEGY;
  if (live.metadata?.annotations?.[pausedBy] !== undefined) {
    throw stalled(ref, 'paused: resume it first, then undo');
  }
  const listed = await listOwned<ControllerRevision>(api, ref, 'ControllerRevision', live.spec?.selector);
  const history = new Map<number, unknown>();
  for (const cr of listed) {
    if (controlledBy(cr.metadata, live.metadata?.uid)) history.set(cr.revision, cr.data);
  }
  const revision = pickRevision(ref, [...history.keys()], toRevision);
  const template = podTemplateOf(history.get(revision));
  if (!template) throw stalled(ref, `ControllerRevision of revision ${revision} holds no pod template patch`);
  // The revision's data is the controller's strategic-merge patch {"spec":{"template":{"$patch":"replace",…}}},
  // which kubectl applies as is. It is applied here as the JSON patch that does the same (replace the template),
  // so that it can be conditional on the generation read: an unchanged generation after the patch means the
  // template already matched.
  const patched = await patchWorkload<Workload>(api, ref, `cannot restore revision ${revision}`, {
    type: JSON_PATCH,
    body: [...unchangedSince(live.metadata), { op: 'replace', path: '/spec/template', value: template }],
  });
  return { revision, changed: patched.metadata?.generation !== live.metadata?.generation };
}

/** The pod template a ControllerRevision's data replaces the live one with, without the patch directive. */
function podTemplateOf(data: unknown): Record<string, unknown> | undefined {
  const template = (data as { spec?: { template?: unknown } } | null | undefined)?.spec?.template;
  if (!isObject(data) || !isObject(template)) return undefined;
  const { $patch, ...rest } = template;
  if ($patch !== undefined && $patch !== 'replace') return undefined;
  return rest;
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

/** The objects of `kind` that the workload's selector matches (ownership is checked by the caller). */
async function listOwned<T>(
  api: KubeApi,
  ref: WorkloadRef,
  kind: string,
  selector: LabelSelector | undefined,
): Promise<T[]> {
  let labelSelector: string;
  try {
    labelSelector = selectorString(selector);
  } catch (error) {
    throw stalled(ref, errorMessage(error));
  }
  return await call(ref, `cannot list its ${kind}s`, () =>
    listAll<T>(api, appsCollectionPath(kind, ref.namespace), { query: { labelSelector } }),
  );
}

function controlledBy(meta: ObjectMeta | undefined, uid: string | undefined): boolean {
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
