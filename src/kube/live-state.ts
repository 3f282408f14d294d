// Reading what the cluster holds before a write: one object by GET, many objects of one kind and namespace by one
// LIST, whether a namespace exists, and which part of an object is compared to decide "unchanged". A deploy keeps
// a summary of each object (identity, resourceVersion, a digest of its comparable content), never the object
// itself: a set of thousands would otherwise hold every live object and every dry-run answer until it ends.
import { StalledError } from '../errors.ts';
import { reconcileDisabled } from '../render/annotations.ts';
import { contentHash } from '../render/canonical.ts';
import { describeObject, type JsonValue, type KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { eachListPage } from './list-pages.ts';
import { mapLimit } from './pool.ts';

/** From this many objects of one kind in one namespace, their live state is read with one LIST. */
const LIST_THRESHOLD = 5;

/** What a deploy keeps of an object the server holds: enough to write over it and to compare, not the object. */
export interface LiveSummary {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    /** Flux's reconcile is disabled on it (render/annotations.ts, FLUX_RECONCILE): it is left as it is. */
    reconcileDisabled?: true;
  };
  /**
   * Digest of the comparable content: two summaries with the same digest hold the same object. Only where a
   * comparison follows (live objects before a write, dry-run answers), not for what a write answers.
   */
  digest: string | undefined;
}

/** The summary of `obj` (apiVersion and kind from `as` when the server left them out, as in list items). */
export function summarize(
  obj: KubeObject,
  as?: { apiVersion: string; kind: string },
  withDigest = true,
): LiveSummary {
  const { name, namespace, uid, resourceVersion, generation } = obj.metadata;
  const whole = as && !obj.apiVersion ? { ...obj, apiVersion: as.apiVersion, kind: as.kind } : obj;
  return {
    apiVersion: whole.apiVersion,
    kind: whole.kind,
    metadata: {
      name,
      ...(namespace !== undefined ? { namespace } : {}),
      ...(typeof uid === 'string' ? { uid } : {}),
      ...(typeof resourceVersion === 'string' ? { resourceVersion } : {}),
      ...(typeof generation === 'number' ? { generation } : {}),
      ...(reconcileDisabled(obj.metadata.annotations) ? { reconcileDisabled: true as const } : {}),
    },
    digest: withDigest ? comparableDigest(whole) : undefined,
  };
}

/** The summary of the object as the server holds it, or undefined when there is none. */
export async function readObject(
  api: KubeApi,
  info: ResourceInfo,
  obj: KubeObject,
  /** Shown the object as read, before it is summarized (it may refuse it by throwing). */
  inspect?: (live: KubeObject) => void,
): Promise<LiveSummary | undefined> {
  let live: KubeObject;
  try {
    live = await api.request<KubeObject>(
      'GET',
      resourcePath(info, obj.metadata.namespace, obj.metadata.name),
      { about: { object: obj } },
    );
  } catch (error) {
    if (statusCode(error) === 404) return undefined;
    throw describeKubeError(error, `read ${describeObject(obj)}`);
  }
  requireIdentity(live, { ...obj, kind: info.kind, apiVersion: info.apiVersion }, info.namespaced);
  inspect?.(live);
  return summarize(live);
}

/**
 * Refuses an answer that is not the object asked for (another kind, name or namespace): what is written over or
 * deleted next must be the object that was meant, whatever a name made of the request's path. Answers read as
 * metadata only name their kind PartialObjectMetadata; their name and namespace are still compared.
 */
export function requireIdentity(
  live: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>,
  wanted: Pick<KubeObject, 'apiVersion' | 'kind' | 'metadata'>,
  namespaced: boolean,
): void {
  const metadataOnly = live.kind === 'PartialObjectMetadata';
  const sameKind = metadataOnly || live.kind === undefined || live.kind === wanted.kind;
  const sameName = live.metadata?.name === wanted.metadata.name;
  const sameNamespace = !namespaced || (live.metadata?.namespace ?? '') === (wanted.metadata.namespace ?? '');
  if (sameKind && sameName && sameNamespace) return;
  const got = `${live.kind ?? '?'} ${live.metadata?.namespace ? `${live.metadata.namespace}/` : ''}${live.metadata?.name ?? '?'}`;
  throw new StalledError(
    `${describeObject(wanted as KubeObject)}: the API server answered with ${got}; refusing to act on another object`,
  );
}

/**
 * The live state of every target: one LIST per kind and namespace where several objects share them (one
 * request instead of hundreds), a GET otherwise.
 */
export async function readLive<T extends { object: KubeObject }>(
  api: KubeApi,
  targets: readonly T[],
  resources: ReadonlyMap<T, ResourceInfo>,
  concurrency: number,
  /** Shown each object that exists, as read, before it is summarized (it may refuse it by throwing). */
  inspect?: (target: T, live: KubeObject) => void,
): Promise<Map<T, LiveSummary | undefined>> {
  const groups = new Map<string, T[]>();
  for (const t of targets) {
    const info = resources.get(t) as ResourceInfo;
    const key = `${info.apiVersion}|${info.plural}|${info.namespaced ? (t.object.metadata.namespace ?? '') : ''}`;
    const group = groups.get(key);
    if (group) group.push(t);
    else groups.set(key, [t]);
  }
  const live = new Map<T, LiveSummary | undefined>();
  await mapLimit([...groups.values()], concurrency, async (members) => {
    const first = members[0] as T;
    const info = resources.get(first) as ResourceInfo;
    if (members.length < LIST_THRESHOLD) {
      for (const t of members)
        live.set(t, await readObject(api, info, t.object, inspect && ((o) => inspect(t, o))));
      return;
    }
    // Only the members are kept of each page: the namespace may hold many more of the kind.
    const names = new Set(members.map((t) => t.object.metadata.name));
    const byName = new Map<string, KubeObject>();
    const path = resourcePath(info, first.object.metadata.namespace);
    await eachListPage(api, path, { restart: () => byName.clear() }, (items) => {
      for (const o of items) if (names.has(o.metadata.name)) byName.set(o.metadata.name, o);
    });
    for (const t of members) {
      const found = byName.get(t.object.metadata.name);
      if (found) inspect?.(t, found);
      // Items of a list carry no apiVersion and kind; the comparison with a dry run needs them.
      live.set(t, found ? summarize(found, t.object) : undefined);
    }
  });
  return live;
}

export async function namespaceExists(api: KubeApi, name: string): Promise<boolean> {
  try {
    await api.request('GET', `/api/v1/namespaces/${encodeURIComponent(name)}`);
    return true;
  } catch (error) {
    if (statusCode(error) === 404) return false;
    throw describeKubeError(error, `read Namespace ${name}`);
  }
}

/** What is compared to decide "unchanged": the object without bookkeeping the server changes on every write. */
export function comparable(obj: KubeObject): JsonValue {
  const { metadata, ...rest } = obj;
  const { managedFields: _m, resourceVersion: _r, ...meta } = metadata;
  return { ...rest, metadata: meta } as JsonValue;
}

/** Digest of comparable(obj), independent of key order (a dry run's answer and a list item order keys apart). */
export function comparableDigest(obj: KubeObject): string {
  return contentHash(comparable(obj));
}
