// Reading what the cluster holds before a write: one object by GET, many objects of one kind and namespace by one
// LIST, whether a namespace exists, and which part of an object is compared to decide "unchanged".
import { describeObject, type KubeObject } from '../render/manifest.ts';
import type { KubeApi } from './api.ts';
import { type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { mapLimit } from './pool.ts';

/** From this many objects of one kind in one namespace, their live state is read with one LIST. */
const LIST_THRESHOLD = 5;

/** The object as the server holds it, or undefined when there is none. */
export async function readObject(
  api: KubeApi,
  info: ResourceInfo,
  obj: KubeObject,
): Promise<KubeObject | undefined> {
  try {
    return await api.request<KubeObject>(
      'GET',
      resourcePath(info, obj.metadata.namespace, obj.metadata.name),
    );
  } catch (error) {
    if (statusCode(error) === 404) return undefined;
    throw describeKubeError(error, `read ${describeObject(obj)}`);
  }
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
): Promise<Map<T, KubeObject | undefined>> {
  const groups = new Map<string, T[]>();
  for (const t of targets) {
    const info = resources.get(t) as ResourceInfo;
    const key = `${info.apiVersion}|${info.plural}|${info.namespaced ? (t.object.metadata.namespace ?? '') : ''}`;
    groups.set(key, [...(groups.get(key) ?? []), t]);
  }
  const live = new Map<T, KubeObject | undefined>();
  await mapLimit([...groups.values()], concurrency, async (members) => {
    const first = members[0] as T;
    const info = resources.get(first) as ResourceInfo;
    if (members.length < LIST_THRESHOLD) {
      for (const t of members) live.set(t, await readObject(api, info, t.object));
      return;
    }
    const list = await api.request<{ items: KubeObject[] | null }>(
      'GET',
      resourcePath(info, first.object.metadata.namespace),
    );
    const byName = new Map((list.items ?? []).map((o) => [o.metadata.name, o]));
    for (const t of members) {
      const found = byName.get(t.object.metadata.name);
      // Items of a list carry no apiVersion and kind; the comparison with a dry run needs them.
      live.set(t, found ? { ...found, apiVersion: t.object.apiVersion, kind: t.object.kind } : undefined);
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
export function comparable(obj: KubeObject | undefined): string {
  if (!obj) return '';
  const { metadata, ...rest } = obj;
  const { managedFields: _m, resourceVersion: _r, ...meta } = metadata as Record<string, unknown>;
  return JSON.stringify({ ...rest, metadata: meta });
}
