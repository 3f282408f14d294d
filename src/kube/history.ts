// Version history (strategy.spinnaker.io/max-version-history): after a stable deploy, keep the N newest versions
// of a versioned object (by creationTimestamp, as Spinnaker does) and delete the rest, except versions that a live
// object still refers to (a workload's pod template, a ReplicaSet kept for rollback, a StatefulSet or DaemonSet
// ControllerRevision, a Pod, a CronJob; a ServiceAccount's or an Ingress's Secrets), the version this release
// deploys, and versions that a release in the ledger names: those stay, and are reported, so that
// an undo rollout and a rollback always find their configuration. Without the annotation, the deployment's default
// history applies (10 versions).
import { byCodeUnit } from '../arrays.ts';
import { ARTIFACT } from '../render/annotations.ts';
import { groupOf, isObject, type JsonValue, type KubeObject } from '../render/manifest.ts';
import { select } from '../render/path.ts';
import type { PlanEntry } from '../render/render.ts';
import { REFERENCE_RULES, type ReferenceRule } from '../render/tables.ts';
import { byArtifact, parseVersionedName } from '../render/versioning.ts';
import { type KubeApi, METADATA_LIST } from './api.ts';
import type { Discovery } from './discovery.ts';
import { type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { FreshReads } from './fresh-reads.ts';
import { eachListPage, listAll } from './list-pages.ts';
import { settleLimit } from './pool.ts';
import type { CachedList } from './snapshot.ts';

export interface HistoryResult {
  deleted: string[];
  kept: { object: string; reason: string }[];
}

/** Old versions deleted at once. */
const HISTORY_DELETES = 8;

const REFERRING: readonly { apiVersion: string; kind: string; asKind: string }[] = [
  { apiVersion: 'apps/v1', kind: 'Deployment', asKind: 'Deployment' },
  { apiVersion: 'apps/v1', kind: 'ReplicaSet', asKind: 'ReplicaSet' },
  { apiVersion: 'apps/v1', kind: 'StatefulSet', asKind: 'StatefulSet' },
  { apiVersion: 'apps/v1', kind: 'DaemonSet', asKind: 'DaemonSet' },
  // A ControllerRevision's data is a patch holding spec.template: read it as a StatefulSet's.
  { apiVersion: 'apps/v1', kind: 'ControllerRevision', asKind: 'StatefulSet' },
  { apiVersion: 'batch/v1', kind: 'Job', asKind: 'Job' },
  { apiVersion: 'batch/v1', kind: 'CronJob', asKind: 'CronJob' },
  { apiVersion: 'v1', kind: 'Pod', asKind: 'Pod' },
  { apiVersion: 'v1', kind: 'ReplicationController', asKind: 'ReplicationController' },
  { apiVersion: 'v1', kind: 'PodTemplate', asKind: 'PodTemplate' },
  // Not workloads, but what they name goes with them: a ServiceAccount's pull Secrets, an Ingress's certificates.
  { apiVersion: 'v1', kind: 'ServiceAccount', asKind: 'ServiceAccount' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', asKind: 'Ingress' },
];

/**
 * Objects per page of a referring kind: these are whole objects (the references are in their pod templates), and a
 * namespace may hold thousands of them, as large as whoever writes them makes them (pages are bounded in bytes too).
 */
const REFERRING_PAGES = {
  pageSize: 250,
  // A list slow enough for its place to expire goes on as the namespace is now: a reference is kept either way.
  inconsistent: true,
  restart: () => undefined,
};

/** A kind listed to learn who refers to a version, and the rules that find its references. */
interface Referrer {
  /** Where it is served; undefined when the cluster serves no such kind. */
  info: ResourceInfo | undefined;
  kind: string;
  rules: readonly ReferenceRule[];
  /** A ControllerRevision: its `data` holds the template. */
  revision: boolean;
}

/**
 * The kinds that may refer to a ConfigMap or Secret, with their rules: the built-in ones (REFERRING) with the
 * built-in rules and those of `render.referencePaths` for the same kind, then every other kind those name (a
 * custom resource whose controller keeps copies of it, as Knative keeps Revisions): what render rewrites a
 * reference in, prune and the history must see referring. A custom kind the cluster does not serve refers to
 * nothing; one whose discovery cannot be read is an error, so that nothing is deleted on an unread answer.
 */
async function referrers(discovery: Discovery, extra: readonly ReferenceRule[]): Promise<Referrer[]> {
  const named = extra.filter((r) => r.target !== '*');
  const ofKind = (group: string, kind: string) =>
    [...REFERENCE_RULES, ...named].filter((r) => r.target !== '*' && r.kind === kind && r.group === group);
  const list: Referrer[] = [];
  const builtIn = new Set<string>();
  for (const source of REFERRING) {
    const revision = source.kind === 'ControllerRevision';
    const group = revision ? 'apps' : groupOf(source.apiVersion);
    builtIn.add(`${groupOf(source.apiVersion)}/${source.kind}`);
    list.push({
      info: await discovery.resource(source.apiVersion, source.kind),
      kind: source.kind,
      rules: ofKind(group, source.asKind),
      revision,
    });
  }
  for (const key of new Set(named.map((r) => `${r.group}/${r.kind}`))) {
    if (builtIn.has(key)) continue;
    const slash = key.lastIndexOf('/');
    const [group, kind] = [key.slice(0, slash), key.slice(slash + 1)];
    const info = await discovery.served(group, kind).catch((error: unknown) => {
      throw describeKubeError(error, `discover ${kind}${group ? `.${group}` : ''}`);
    });
    // A cluster-scoped kind names no ConfigMap of a namespace.
    if (info && !info.namespaced) continue;
    list.push({ info, kind, rules: ofKind(group, kind), revision: false });
  }
  return list;
}

/**
 * Names of ConfigMaps/Secrets that live objects in `namespace` refer to, with who refers to them, by the built-in
 * reference rules and `extra` (render.referencePaths). Read a page at a time, keeping only the references: memory
 * is a page's, not the namespace's.
 */
export async function liveReferences(
  api: KubeApi,
  discovery: Discovery,
  namespace: string,
  extra: readonly ReferenceRule[] = [],
): Promise<Map<string, string>> {
  const refs = new Map<string, string>();
  for (const source of await referrers(discovery, extra)) {
    const { info, rules } = source;
    if (!info) continue;
    const page = (items: KubeObject[]) => {
      for (const item of items) {
        const root = (source.revision ? item.data : item) as JsonValue;
        if (!isObject(root)) continue;
        for (const rule of rules) {
          for (const selected of select(root, rule.path)) {
            if (typeof selected.value === 'string') {
              refs.set(
                `${rule.target}/${selected.value}`,
                `${source.kind} ${namespace}/${item.metadata.name}`,
              );
            }
          }
        }
      }
    };
    try {
      await eachListPage(api, resourcePath(info, namespace), REFERRING_PAGES, page);
    } catch (error) {
      throw describeKubeError(error, `list ${source.kind}s in namespace ${namespace}`);
    }
  }
  return refs;
}

/**
 * The live references of a namespace as a read started no sooner than this call gives them, one read at a time per
 * cluster client, namespace and set of extra rules: the syncs of a fleet that reach their history collection
 * together share it.
 */
const referenceReads = new WeakMap<KubeApi, FreshReads<Map<string, string>>>();

export function currentReferences(
  api: KubeApi,
  discovery: Discovery,
  namespace: string,
  extra: readonly ReferenceRule[] = [],
): Promise<Map<string, string>> {
  let reads = referenceReads.get(api);
  if (!reads) {
    reads = new FreshReads();
    referenceReads.set(api, reads);
  }
  const key = extra.length === 0 ? namespace : `${namespace}\0${JSON.stringify(extra)}`;
  return reads.read(key, () => liveReferences(api, discovery, namespace, extra));
}

export async function collectVersionHistory(
  api: KubeApi,
  discovery: Discovery,
  plan: readonly PlanEntry[],
  objects: readonly KubeObject[],
  options: {
    /** Versions kept of an object that sets no max-version-history; none given: such objects are not collected. */
    defaultLimit?: number | undefined;
    /** Versions a recorded release names (`ConfigMap app-config-v003`): kept whatever their age. */
    keep?: ReadonlySet<string> | undefined;
    /**
     * The agent's watch cache (ClusterCache.listedObjects): a collection it holds listed, with every write of the
     * agent there of an object `concerns` accepts shown (the sync's own new versions), is read there instead.
     */
    cached?: CachedList | undefined;
    /** render.referencePaths: the live objects of those kinds refer to versions too. */
    referenceRules?: readonly ReferenceRule[] | undefined;
  } = {},
): Promise<HistoryResult> {
  const result: HistoryResult = { deleted: [], kept: [] };
  // The cache's list answers once it has shown this sync's own writes of versions; those of other syncs in the same
  // namespace (other artifacts) do not hold it up.
  const bases = new Set(plan.flatMap((e) => (e.version ? [e.version.base] : [])));
  const ours = (name: string) => {
    const parsed = parseVersionedName(name);
    return parsed !== undefined && bases.has(parsed.base);
  };
  // Who refers to each ConfigMap and Secret of a namespace; an error when that could not be read (a Role that may not
  // list CronJobs): then every version there is kept, and said, rather than deleted without knowing.
  const references = new Map<string, Map<string, string> | Error>();
  // One metadata-only list per resource and namespace, grouped by artifact: a list per versioned object made a
  // deploy of 1,000 ConfigMaps and Secrets read the namespace's 1,000 names a thousand times (quadratic in time
  // and in memory).
  const lists = new Map<string, Promise<Map<string, KubeObject[]>>>();
  const versionsOf = (
    info: ResourceInfo,
    namespace: string,
    kind: string,
  ): Promise<Map<string, KubeObject[]>> => {
    const path = resourcePath(info, namespace);
    let grouped = lists.get(path);
    if (!grouped) {
      // From the cache, only this sync's artifacts (by the annotation they are grouped by below).
      const held = options.cached?.(info, namespace, ours, { annotation: ARTIFACT.name, values: bases });
      grouped = (
        held
          ? Promise.resolve({ items: held })
          : listAll(api, path, { accept: METADATA_LIST }).then((items) => ({ items }))
      )
        .catch((error: unknown) => {
          throw describeKubeError(error, `list ${kind}s in namespace ${namespace}`);
        })
        .then((list) => byArtifact(list.items ?? []));
      lists.set(path, grouped);
    }
    return grouped;
  };
  const doomed: { name: string; path: string }[] = [];
  for (const [index, entry] of plan.entries()) {
    const object = objects[index];
    const limit = entry.strategy.maxVersionHistory ?? options.defaultLimit;
    if (!object || !entry.version || limit === undefined || entry.strategy.ignored) continue;
    const namespace = object.metadata.namespace ?? 'default';
    const info = await discovery.resource(object.apiVersion, object.kind);
    const versions = [
      ...((await versionsOf(info, namespace, object.kind)).get(entry.version.base) ?? []),
    ].sort(
      (a, b) =>
        byCodeUnit(String(b.metadata.creationTimestamp), String(a.metadata.creationTimestamp)) ||
        byCodeUnit(b.metadata.name, a.metadata.name),
    );
    // The version this release deploys is kept whatever its age: one reused (the content went back to what an
    // old version holds) keeps that version's creation time, and a limit of 0 would leave it last.
    const current = object.metadata.name;
    const surplus = versions.slice(limit).filter((v) => v.metadata.name !== current);
    if (surplus.length === 0) continue;
    let refs = references.get(namespace);
    if (!refs) {
      refs = await currentReferences(api, discovery, namespace, options.referenceRules).catch(
        (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
      );
      references.set(namespace, refs);
    }
    for (const old of surplus) {
      // Items of a metadata-only list are PartialObjectMetadata: the kind is the one listed.
      const name = `${object.kind} ${namespace}/${old.metadata.name}`;
      if (refs instanceof Error) {
        result.kept.push({
          object: name,
          reason: `not known whether a live object refers to it (${refs.message})`,
        });
        continue;
      }
      const user = refs.get(`${object.kind}/${old.metadata.name}`);
      if (user) {
        result.kept.push({ object: name, reason: `still referenced by ${user}` });
        continue;
      }
      if (options.keep?.has(`${object.kind} ${old.metadata.name}`)) {
        result.kept.push({ object: name, reason: 'named by a release in the ledger (rollback needs it)' });
        continue;
      }
      doomed.push({ name, path: resourcePath(info, namespace, old.metadata.name) });
    }
  }
  // A few at once (lowering a limit, or a set of a thousand versioned objects, collects as many); every delete is
  // tried, then the first failure is the sync's.
  const settled = await settleLimit(doomed, HISTORY_DELETES, async ({ name, path }) => {
    try {
      await api.request('DELETE', path);
    } catch (error) {
      if (statusCode(error) !== 404) throw describeKubeError(error, `delete ${name}`);
    }
  });
  for (const [index, outcome] of settled.entries()) {
    if (outcome.status === 'fulfilled') result.deleted.push(doomed[index]?.name as string);
  }
  const failed = settled.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return result;
}
