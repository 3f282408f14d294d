// Namespaces mooring creates: the agent's own (a `mooring deploy` or an agent run from a laptop before any
// installation keeps its records there), and a deployment's target namespace when createNamespace is set. Both
// carry mooring's labels; neither is ever pruned (no inventory records them).
import { LABEL_MANAGED_BY, MANAGED_BY } from '../render/annotations.ts';
import type { KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import type { ResourceInfo } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { namespaceExists } from './live-state.ts';

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

/**
 * Deletes namespace `name` if mooring created it (its managed-by label says so): a pull request's environment
 * takes its namespace with it. One that is gone already is fine; one mooring did not make is left, and said so.
 */
export async function deleteCreatedNamespace(api: KubeApi, name: string): Promise<'deleted' | 'not ours'> {
  let labels: Record<string, string> | undefined;
  try {
    const ns = await api.request<{ metadata?: { labels?: Record<string, string> } }>(
      'GET',
      `/api/v1/namespaces/${name}`,
    );
    labels = ns.metadata?.labels;
  } catch (error) {
    if (statusCode(error) === 404) return 'deleted';
    throw describeKubeError(error, `read Namespace ${name}`);
  }
  if (labels?.[LABEL_MANAGED_BY] !== MANAGED_BY) return 'not ours';
  try {
    await api.request('DELETE', `/api/v1/namespaces/${name}`);
  } catch (error) {
    if (statusCode(error) !== 404) throw describeKubeError(error, `delete Namespace ${name}`);
  }
  return 'deleted';
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
