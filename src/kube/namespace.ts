// Namespaces mooring creates: the agent's own (a `mooring deploy` or an agent run from a laptop before any
// installation keeps its records there), and a deployment's target namespace when createNamespace is set. Both
// carry mooring's labels; neither is ever pruned (no inventory records them).

import { byCodeUnit } from '../arrays.ts';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../render/annotations.ts';
import { type KubeApi, METADATA_LIST } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { type Discovery, type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { eachListPage } from './list-pages.ts';
import { namespaceExists } from './live-state.ts';
import { mapLimit } from './pool.ts';
import { appliedBy, keptBy } from './prune.ts';

export { namespaceExists } from './live-state.ts';

/** Creates namespace `name` with mooring's labels; one that exists already (a racing creator) is fine. */
export async function createNamespace(
  api: KubeApi,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  try {
    await api.request('POST', '/api/v1/namespaces', {
      body: {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name, labels: { ...labels, [LABEL_MANAGED_BY]: MANAGED_BY } },
      },
    });
  } catch (error) {
    if (statusCode(error) !== 409) throw describeKubeError(error, `create Namespace ${name}`);
  }
}

/** A live object that an annotation marks to be kept when its deployment goes (prune.ts, keptBy). */
export interface MarkedObject {
  /** `ConfigMap previews-3/claims` */
  object: string;
  /** The annotation and its value. */
  reason: string;
}

/** Kinds listed at once when a namespace is looked through. */
const NAMESPACE_LISTS = 4;

/**
 * The objects in namespace `namespace` that `fieldManager` applied and an annotation marks to be kept when their
 * deployment goes (`helm.sh/resource-policy: keep`, `Delete=false`, ...: keptBy with the removal's rules), looked
 * up live: one metadata-only list per namespaced kind the cluster serves. Live, not from an inventory: an object
 * kept by an earlier sync (it left the manifests) is in no inventory any more, nor is one kept by a removing sync
 * whose agent stopped before the namespace went. A kind the identity may not list (403), or that cannot be listed
 * (404, 405), is passed over; any other failure is thrown (the namespace is not deleted then).
 */
export async function markedToKeep(
  api: KubeApi,
  discovery: Discovery,
  namespace: string,
  fieldManager: string,
): Promise<MarkedObject[]> {
  const marked: MarkedObject[] = [];
  await mapLimit(await discovery.namespacedKinds(), NAMESPACE_LISTS, async (info) => {
    try {
      await eachListPage(api, resourcePath(info, namespace), { accept: METADATA_LIST }, (items) => {
        for (const item of items) {
          if (item.metadata?.deletionTimestamp || !appliedBy(item, fieldManager)) continue;
          const reason = keptBy(item, true);
          if (reason) marked.push({ object: `${info.kind} ${namespace}/${item.metadata.name}`, reason });
        }
      });
    } catch (error) {
      const code = statusCode(error);
      if (code === 403 || code === 404 || code === 405) return;
      throw describeKubeError(error, `list ${info.kind}s in namespace ${namespace}`);
    }
  });
  return marked.sort((a, b) => byCodeUnit(a.object, b.object));
}

/**
 * Deletes namespace `name` if mooring created it (its managed-by label says so): a pull request's environment
 * takes its namespace with it. One that is gone already is fine; one mooring did not make is left, and said so.
 * With `keep`, the namespace is looked through first (markedToKeep): one that holds an object marked to be kept
 * stays, since deleting it would delete the object.
 */
export async function deleteCreatedNamespace(
  api: KubeApi,
  name: string,
  keep?: { discovery: Discovery; fieldManager: string },
): Promise<{ done: 'deleted' | 'not ours' } | { done: 'kept'; marked: MarkedObject[] }> {
  let labels: Record<string, string> | undefined;
  try {
    const ns = await api.request<{ metadata?: { labels?: Record<string, string> } }>(
      'GET',
      `/api/v1/namespaces/${name}`,
    );
    labels = ns.metadata?.labels;
  } catch (error) {
    if (statusCode(error) === 404) return { done: 'deleted' };
    throw describeKubeError(error, `read Namespace ${name}`);
  }
  if (labels?.[LABEL_MANAGED_BY] !== MANAGED_BY) return { done: 'not ours' };
  if (keep) {
    const marked = await markedToKeep(api, keep.discovery, name, keep.fieldManager);
    if (marked.length > 0) return { done: 'kept', marked };
  }
  try {
    await api.request('DELETE', `/api/v1/namespaces/${name}`);
  } catch (error) {
    if (statusCode(error) !== 404) throw describeKubeError(error, `delete Namespace ${name}`);
  }
  return { done: 'deleted' };
}

/** The agent keeps its records in its own namespace; run from a laptop, it may not exist yet. Read first: an agent
 * allowed only into its own namespace may not create namespaces. */
export async function ensureNamespace(api: KubeApi, name: string): Promise<void> {
  if (!(await namespaceExists(api, name))) await createNamespace(api, name);
}

const NAMESPACES: ResourceInfo = {
  apiVersion: 'v1',
  kind: 'Namespace',
  plural: 'namespaces',
  namespaced: false,
};
/** How long the cache may take to list the Namespaces before the question goes to the API server. */
const CACHE_ANSWER_MS = 10_000;
/** Caches whose identity may not watch Namespaces: asked with a GET from then on. */
const unwatchable = new WeakSet<ClusterCache>();

/**
 * Whether namespace `name` exists, answered by the cluster cache's watch of Namespaces (their metadata; one list
 * and one stream for every sync of the cluster, kept while syncs ask) instead of a GET per sync. An identity that
 * may not watch Namespaces, or a cache that does not answer in time, asks the API server.
 */
export async function namespaceKnown(
  api: KubeApi,
  cache: ClusterCache | undefined,
  name: string,
): Promise<boolean> {
  if (!cache || unwatchable.has(cache)) return namespaceExists(api, name);
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), CACHE_ANSWER_MS);
  try {
    const seen = await new Promise<boolean | undefined>((resolve) => {
      // A cache closed meanwhile (the agent stopping or reloading) throws here: the server answers instead.
      if (cache.isClosed) return resolve(undefined);
      cache
        .subscribe(
          NAMESPACES,
          undefined,
          name,
          // A note says the stream is in trouble: the answer waits for the next listing (or the time-out).
          (object, note) => note === undefined && resolve(object !== undefined),
          stop.signal,
          { metadataOnly: true },
        )
        .done.then(
          () => resolve(undefined),
          () => {
            unwatchable.add(cache);
            resolve(undefined);
          },
        );
    });
    return seen ?? (await namespaceExists(api, name));
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
}
