// Prune: deleting the objects an owner applied before and no longer renders. What is deleted is decided from the
// inventories (src/kube/inventory.ts) and the live objects: an object another owner's inventory holds stays, as
// does one annotated `mooring.io/prune: disabled`; every version of a versioned artifact that is gone is deleted.
// Deletion runs in reverse apply order (workloads before the Services and configuration they use, namespaces
// last), with foreground propagation for workloads, so that their Pods are gone before their configuration is.
import { byCodeUnit } from '../arrays.ts';
import { errorMessage } from '../errors.ts';
import {
  ARGO_SYNC_OPTIONS,
  argoSyncOptions,
  FLUX_RECONCILE,
  reconcileDisabled,
  SYNC_WAVE,
} from '../render/annotations.ts';
import type { KubeObject } from '../render/manifest.ts';
import { isSafeSegment } from '../render/names.ts';
import {
  clusterScopedAllowed,
  type NamespaceBoundary,
  namespaceAllowed,
} from '../render/namespace-boundary.ts';
import { byArtifact } from '../render/versioning.ts';
import { type KubeApi, METADATA_LIST, METADATA_OBJECT } from './api.ts';
import { phaseOf } from './apply-order.ts';
import { currentDeadline, pause } from './deadline.ts';
import type { Discovery, ResourceInfo } from './discovery.ts';
import { resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { entryId, entryName, type InventoryEntry } from './inventory.ts';
import { listAll } from './list-pages.ts';
import { requireIdentity } from './live-state.ts';
import { mapLimit, settleLimit } from './pool.ts';

/** The annotation that keeps an object from ever being pruned (set in the manifest or by hand on the live object). */
export const PRUNE_ANNOTATION = 'mooring.io/prune';

export interface PruneTarget {
  /** `Deployment shop/web`. */
  object: string;
  entry: InventoryEntry;
  resource: ResourceInfo;
  /** The uid of the live object read: the delete is conditional on it (never another object in its place). */
  uid?: string | undefined;
  /** The live object's sync wave: higher waves are pruned first, as Argo CD prunes (0 when none or not a number). */
  wave?: number;
}

/** An object prune leaves in place, and why. */
export interface KeptObject {
  object: string;
  reason: string;
  /** Its namespace, for one kept by an annotation that asks to keep it (a removal leaves that namespace in place). */
  markedIn?: string | undefined;
}

export interface PrunePlan {
  /** In the order they are to be deleted. */
  targets: PruneTarget[];
  kept: KeptObject[];
}

export interface PruneInput {
  owner: string;
  /** The owner's inventory before this sync. */
  previous: readonly InventoryEntry[];
  /** What this sync renders. */
  desired: readonly InventoryEntry[];
  /**
   * Every other owner's inventory, by owner: read only when the owner's inventory holds something the render no
   * longer has. A sync that prunes nothing (most of them) reads no other inventory, so a fleet's syncs do not each
   * read all of the fleet's inventories.
   */
  others: () => Promise<ReadonlyMap<string, readonly InventoryEntry[]>>;
  /**
   * mooring's field manager (`apply.fieldManager`): an object whose managed fields do not name it was never
   * applied by mooring, whatever an inventory says, and is kept.
   */
  fieldManager?: string | undefined;
  /**
   * The namespaces and cluster-scoped kinds the deployment may write (its render is held to them): an inventory
   * entry outside them is never deleted, whatever wrote it (the inventory is a ConfigMap of the agent's namespace:
   * a line naming another namespace's Secret must not make a sync delete it), and is said.
   */
  boundary?: NamespaceBoundary | undefined;
  /**
   * The owner itself is going (a deployment leaving its set): what Argo CD keeps when an Application is deleted,
   * `Delete=false` (and `Delete=confirm`), is kept too, where a sync would prune it.
   */
  removal?: boolean | undefined;
}

/** Whether the live object's managed fields name the manager (objects without managed fields are not judged). */
export function appliedBy(object: Pick<KubeObject, 'metadata'>, manager: string): boolean {
  const managed = object.metadata.managedFields;
  if (!Array.isArray(managed) || managed.length === 0) return true;
  return managed.some(
    (m) => typeof m === 'object' && m !== null && (m as { manager?: unknown }).manager === manager,
  );
}

/** Entries of an inventory examined at once (each may be a read of the object). */
const PRUNE_READS = 8;

/** Deletes sent at once within a phase. */
const PRUNE_DELETES = 8;

/** Workloads whose dependents (ReplicaSets, Pods) must be gone before the workload is. */
const FOREGROUND = new Set([
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  'ReplicaSet',
  'ReplicationController',
  'Job',
  'CronJob',
]);

const HELM_RESOURCE_POLICY = 'helm.sh/resource-policy';
const FLUX_PRUNE = 'kustomize.toolkit.fluxcd.io/prune';

/**
 * The annotation, with its value, that keeps an object from being pruned, or undefined. mooring's own, and what
 * the tools whose manifests mooring deploys mean by it (each tool deletes nothing so marked when it leaves the
 * source): Helm's `helm.sh/resource-policy: keep` (a chart's CRDs, a database's claims and generated Secrets),
 * Flux's `kustomize.toolkit.fluxcd.io/prune: disabled` (and `kustomize.toolkit.fluxcd.io/reconcile: disabled`, under
 * which Flux neither writes nor prunes an object), Argo CD's `argocd.argoproj.io/sync-options: Prune=false`
 * (and `Prune=confirm`, which Argo CD prunes only once a person confirms). When the owner itself is going
 * (`removal`), also Argo CD's `Delete=false` and `Delete=confirm`, which keep an object when its Application is deleted
 * and let a sync prune it.
 */
export function keptBy(object: Pick<KubeObject, 'metadata'>, removal = false): string | undefined {
  const annotations = object.metadata.annotations ?? {};
  const value = (name: string): string | undefined => {
    const v: unknown = annotations[name];
    return typeof v === 'string' ? v.trim() : undefined;
  };
  if (value(PRUNE_ANNOTATION) === 'disabled') return `${PRUNE_ANNOTATION}: disabled`;
  if (value(HELM_RESOURCE_POLICY)?.toLowerCase() === 'keep') return `${HELM_RESOURCE_POLICY}: keep`;
  if (value(FLUX_PRUNE) === 'disabled') return `${FLUX_PRUNE}: disabled`;
  if (reconcileDisabled(annotations)) return `${FLUX_RECONCILE}: disabled`;
  const option = [...argoSyncOptions(value(ARGO_SYNC_OPTIONS))].find(
    (o) =>
      o === 'Prune=false' ||
      o === 'Prune=confirm' ||
      (removal && (o === 'Delete=false' || o === 'Delete=confirm')),
  );
  return option ? `${ARGO_SYNC_OPTIONS}: ${option}` : undefined;
}

/** Why an entry lies outside what the deployment may write, or undefined when it lies inside. */
function outsideBoundary(
  boundary: NamespaceBoundary,
  resource: ResourceInfo,
  entry: InventoryEntry,
): string | undefined {
  if (resource.namespaced)
    return namespaceAllowed(boundary, entry.namespace ?? '')
      ? undefined
      : `outside the deployment's namespaces (${boundary.namespaces.join(', ')})`;
  return clusterScopedAllowed(boundary, entry.apiVersion, entry.kind)
    ? undefined
    : `a cluster-scoped ${entry.kind}, which the deployment may not write`;
}

export async function pruneTargets(
  api: KubeApi,
  discovery: Discovery,
  input: PruneInput,
): Promise<PrunePlan> {
  const plan: PrunePlan = { targets: [], kept: [] };
  const wanted = new Set(input.desired.map(entryId));
  if (input.previous.every((entry) => wanted.has(entryId(entry)))) return plan;
  // A custom kind not served when the set was rendered (SkipDryRunOnMissingResource) was placed in the deployment's
  // namespace; once its kind is served cluster-scoped, the entry with and the one without a namespace are one object.
  const wantedAnywhere = new Set(input.desired.map((e) => entryId({ ...e, namespace: undefined })));
  const heldBy = new Map<string, string>();
  for (const [owner, entries] of await input.others()) {
    if (owner === input.owner) continue;
    for (const e of entries) if (!heldBy.has(entryId(e))) heldBy.set(entryId(e), owner);
  }
  // The versions of each kind and namespace, listed once (metadata only) and grouped by artifact: a list per
  // versioned entry made removing an application of 300 versioned ConfigMaps read the namespace 300 times.
  const lists = new Map<string, Promise<Map<string, KubeObject[]>>>();
  const versionsOf = (resource: ResourceInfo, namespace: string | undefined, kind: string) => {
    const path = resourcePath(resource, namespace);
    let grouped = lists.get(path);
    if (!grouped) {
      grouped = listAll(api, path, { accept: METADATA_LIST }).then(
        (items) => byArtifact(items),
        (error: unknown) => {
          throw describeKubeError(error, `list ${kind}s in namespace ${namespace ?? ''}`);
        },
      );
      lists.set(path, grouped);
    }
    return grouped;
  };
  // Each entry examined apart, a few at once (a removed application may be a thousand objects, each read), the plan
  // kept in the inventory's order.
  const examined = await mapLimit(input.previous, PRUNE_READS, async (entry): Promise<PrunePlan> => {
    const found: PrunePlan = { targets: [], kept: [] };
    const id = entryId(entry);
    if (wanted.has(id)) return found;
    const name = entry.artifact
      ? `${entry.kind} ${entry.namespace ? `${entry.namespace}/` : ''}${entry.artifact} (every version)`
      : entryName(entry);
    const other = heldBy.get(id);
    if (other) {
      found.kept.push({ object: name, reason: `also applied by ${describeOwner(other)}` });
      return found;
    }
    // An inventory written before names were validated may hold one that is no object's path: never deleted.
    if (!isSafeSegment(entry.name) || (entry.namespace && !isSafeSegment(entry.namespace))) {
      found.kept.push({ object: name, reason: 'its name is not a valid path segment' });
      return found;
    }
    let resource: ResourceInfo;
    try {
      resource = await discovery.resource(entry.apiVersion, entry.kind);
    } catch {
      // The kind is no longer served (its CRD is gone): so are its objects.
      return found;
    }
    const namespace = resource.namespaced ? entry.namespace : undefined;
    if (!resource.namespaced && wantedAnywhere.has(entryId({ ...entry, namespace: undefined }))) return found;
    const outside = input.boundary && outsideBoundary(input.boundary, resource, entry);
    if (outside) {
      found.kept.push({ object: name, reason: outside });
      return found;
    }
    const live: KubeObject[] = [];
    if (entry.artifact) {
      const versions = await versionsOf(resource, namespace, entry.kind);
      live.push(
        ...[...(versions.get(entry.artifact) ?? [])].sort((a, b) =>
          byCodeUnit(a.metadata.name, b.metadata.name),
        ),
      );
    } else {
      try {
        live.push(
          await api.request<KubeObject>('GET', resourcePath(resource, namespace, entry.name), {
            accept: METADATA_OBJECT,
          }),
        );
      } catch (error) {
        if (statusCode(error) === 404) return found; // deleted already
        throw describeKubeError(error, `read ${entryName(entry)}`);
      }
    }
    for (const object of live) {
      const one: InventoryEntry = { ...entry, name: object.metadata.name };
      // What is deleted is what the inventory names, in its namespace: an answer for anything else is kept.
      try {
        requireIdentity(
          object,
          {
            apiVersion: entry.apiVersion,
            kind: entry.kind,
            metadata: { name: one.name, ...(namespace ? { namespace } : {}) },
          },
          resource.namespaced,
        );
      } catch (error) {
        found.kept.push({ object: entryName(one), reason: errorMessage(error) });
        continue;
      }
      if (object.metadata.deletionTimestamp) continue; // on its way out
      const manager = input.fieldManager ?? 'mooring';
      if (!appliedBy(object, manager)) {
        found.kept.push({
          object: entryName(one),
          reason: `not applied by mooring (no field manager ${manager})`,
        });
        continue;
      }
      const kept = keptBy(object, input.removal);
      if (kept) {
        found.kept.push({ object: entryName(one), reason: kept, markedIn: namespace });
        continue;
      }
      found.targets.push({
        object: entryName(one),
        entry: one,
        resource,
        uid: typeof object.metadata.uid === 'string' ? object.metadata.uid : undefined,
        wave: liveWave(object),
      });
    }
    return found;
  });
  for (const found of examined) {
    plan.targets.push(...found.targets);
    plan.kept.push(...found.kept);
  }
  // Reverse apply order: the highest sync wave first (as Argo CD prunes), and within a wave the reverse of the kind
  // phases; a stable sort keeps the inventory's order within a phase.
  plan.targets.sort((a, b) => (b.wave ?? 0) - (a.wave ?? 0) || phaseOf(b.entry.kind) - phaseOf(a.entry.kind));
  return plan;
}

export interface PruneResult {
  deleted: string[];
  failed: { target: PruneTarget; error: unknown }[];
  /** Versions of an artifact that is gone, kept while a live object refers to them (they stay in the inventory). */
  held?: { target: PruneTarget; reason: string }[];
  /** Workloads deleted but not yet gone when the wait for them ended (the next phase went on). */
  lingering?: string[];
}

/** How long prune waits for a phase's workloads to be gone, outside a sync's deadline. */
const GONE_WAIT_MS = 5 * 60_000;

/**
 * Deletes the plan's targets phase after phase in its order (workloads before the configuration they use,
 * namespaces last); within a phase, `PRUNE_DELETES` at once: removing an application of a thousand objects was a
 * thousand requests one after another. A phase starts once every delete of the one before has been answered. An
 * object already gone counts as deleted; a failure stops nothing else.
 */
export async function executePrune(
  api: KubeApi,
  plan: PrunePlan,
  options: {
    /**
     * Who refers to each ConfigMap and Secret of a namespace now (history.ts's currentReferences): a version of an
     * artifact that left the render (a ConfigMap no longer versioned) that a ReplicaSet kept for `kubectl rollout
     * undo` still uses is kept. Read when its phase comes, after the workloads pruned before it are gone, so an
     * application removed whole does not keep its versions through its own ReplicaSets.
     */
    references?: (namespace: string) => Promise<Map<string, string>>;
  } = {},
): Promise<PruneResult> {
  const result: PruneResult = { deleted: [], failed: [] };
  const until = currentDeadline()?.until ?? Date.now() + GONE_WAIT_MS;
  // Who refers to what, read once per namespace until a run deletes something that may refer (anything but a
  // ConfigMap or Secret): the waves a commit chooses for its ConfigMaps do not each read the namespace again.
  const read = new Map<string, Promise<Map<string, string>>>();
  const references =
    options.references &&
    ((namespace: string) => {
      let found = read.get(namespace);
      if (!found) {
        found = (options.references as NonNullable<typeof options.references>)(namespace);
        read.set(namespace, found);
        found.catch(() => read.delete(namespace));
      }
      return found;
    });
  for (const run of runsOfPhase(plan.targets)) {
    const batch = references ? await unreferenced(run, references, result) : run;
    const settled = await settleLimit(batch, PRUNE_DELETES, (target) => deleteTarget(api, target));
    const going: PruneTarget[] = [];
    for (const [index, outcome] of settled.entries()) {
      const target = batch[index] as PruneTarget;
      if (outcome.status === 'fulfilled') {
        result.deleted.push(target.object);
        if (FOREGROUND.has(target.entry.kind)) going.push(target);
        if (target.entry.kind !== 'ConfigMap' && target.entry.kind !== 'Secret') read.clear();
      } else result.failed.push({ target, error: outcome.reason });
    }
    // A workload deleted in the foreground is answered for as soon as it is marked: it is gone once its Pods are.
    // The next phase (the ConfigMaps and Secrets those Pods mount, the Namespace) waits for that, as kapp waits, so
    // that no Pod runs on without its configuration; a wait past the sync's deadline ends and the phase goes on.
    const lingering = (
      await settleLimit(going, PRUNE_DELETES, (target) => untilGone(api, target, until))
    ).flatMap((outcome, index) =>
      outcome.status === 'fulfilled' && outcome.value ? [] : [(going[index] as PruneTarget).object],
    );
    if (lingering.length > 0) result.lingering = [...(result.lingering ?? []), ...lingering];
  }
  return result;
}

/** The targets of `run` no live object refers to; the versions others refer to are `held` in `result`. */
async function unreferenced(
  run: readonly PruneTarget[],
  references: (namespace: string) => Promise<Map<string, string>>,
  result: PruneResult,
): Promise<PruneTarget[]> {
  const versions = run.filter((t) => t.entry.artifact !== undefined && t.entry.namespace);
  if (versions.length === 0) return [...run];
  // A namespace whose referring kinds cannot be read (a Role that may not list CronJobs, the API server down) keeps
  // every version there: not knowing who uses one is no reason to delete it. The next sync looks again.
  const byNamespace = new Map<string, Map<string, string> | Error>();
  for (const namespace of new Set(versions.map((t) => t.entry.namespace as string))) {
    byNamespace.set(
      namespace,
      await references(namespace).catch((error: unknown) =>
        error instanceof Error ? error : new Error(String(error)),
      ),
    );
  }
  return run.filter((target) => {
    const { artifact, namespace, kind, name } = target.entry;
    if (artifact === undefined || !namespace) return true;
    const refs = byNamespace.get(namespace);
    const reason =
      refs instanceof Error
        ? `not known whether a live object refers to it (${refs.message})`
        : refs?.has(`${kind}/${name}`)
          ? `still referenced by ${refs.get(`${kind}/${name}`)}`
          : undefined;
    if (reason === undefined) return true;
    result.held = [...(result.held ?? []), { target, reason }];
    return false;
  });
}

/** Whether `target` is gone (or another object took its name) before `until`; reads its metadata every moment. */
async function untilGone(api: KubeApi, target: PruneTarget, until: number): Promise<boolean> {
  const { resource, entry } = target;
  const path = resourcePath(resource, resource.namespaced ? entry.namespace : undefined, entry.name);
  for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
    try {
      const live = await api.request<KubeObject>('GET', path, { accept: METADATA_OBJECT });
      if (target.uid !== undefined && live.metadata.uid !== target.uid) return true;
    } catch (error) {
      if (statusCode(error) === 404) return true;
      throw describeKubeError(error, `read ${target.object}`);
    }
    if (Date.now() + wait > until) return false;
    await pause(wait);
  }
}

async function deleteTarget(api: KubeApi, target: PruneTarget): Promise<void> {
  const { resource, entry } = target;
  const namespace = resource.namespaced ? entry.namespace : undefined;
  try {
    await api.request('DELETE', resourcePath(resource, namespace, entry.name), {
      body: {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        propagationPolicy: FOREGROUND.has(entry.kind) ? 'Foreground' : 'Background',
        ...(target.uid ? { preconditions: { uid: target.uid } } : {}),
      },
    });
  } catch (error) {
    if (statusCode(error) !== 404) throw describeKubeError(error, `prune ${target.object}`);
  }
}

/** The targets cut where their wave or the phase of their kind changes (the plan is in that order already). */
function runsOfPhase(targets: readonly PruneTarget[]): PruneTarget[][] {
  const runs: PruneTarget[][] = [];
  let phase: string | undefined;
  for (const target of targets) {
    const next = `${target.wave ?? 0}/${phaseOf(target.entry.kind)}`;
    if (next !== phase || runs.length === 0) runs.push([]);
    phase = next;
    runs[runs.length - 1]?.push(target);
  }
  return runs;
}

/** A live object's sync wave as its annotations give it (the first of the names that is an integer), else 0. */
function liveWave(object: Pick<KubeObject, 'metadata'>): number {
  for (const name of SYNC_WAVE) {
    const value: unknown = object.metadata.annotations?.[name];
    if (typeof value === 'string' && /^[-+]?\d{1,9}$/.test(value.trim())) return Number(value.trim());
  }
  return 0;
}

/** `deployment shop-web` or `mooring deploy of shop/web`, for the reason an object is kept. */
export function describeOwner(owner: string): string {
  const cli = /^cli\.([^.]+)\.(.+)$/.exec(owner);
  return cli ? `mooring deploy of application ${cli[2]} in namespace ${cli[1]}` : `deployment ${owner}`;
}
