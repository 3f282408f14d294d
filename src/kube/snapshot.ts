// The read-only lookup that render needs: existing versions of versioned objects, the Services that traffic
// annotations name, and the live workloads whose capacity is kept. Versions are listed as metadata only
// (PartialObjectMetadataList), so that no Secret data is ever read for this.
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  setHeaderOptions,
  type V1ObjectMeta,
} from '@kubernetes/client-node';
import { ARTIFACT, CONTENT_HASH, STRATEGY, TRAFFIC_LOAD_BALANCERS } from '../render/annotations.ts';
import type { KubeObject, SourcedObject } from '../render/manifest.ts';
import type { ClusterSnapshot, ExistingVersion } from '../render/render.ts';
import { parseVersionedName } from '../render/versioning.ts';
import { describeKubeError } from './errors.ts';

const METADATA_ONLY = setHeaderOptions(
  'Accept',
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
);

/** The version an object records in its annotations (or, failing that, in its name). */
export function versionOf(kind: string, meta: V1ObjectMeta): ExistingVersion | undefined {
  const base = meta.annotations?.[ARTIFACT.name];
  if (!base || !meta.name || !meta.namespace) return undefined;
  const fromAnnotation = /^v(\d+)$/.exec(meta.annotations?.[ARTIFACT.version] ?? '');
  const version =
    fromAnnotation?.[1] !== undefined ? Number(fromAnnotation[1]) : parseVersionedName(meta.name)?.version;
  if (version === undefined) return undefined;
  return { kind, namespace: meta.namespace, name: base, version, hash: meta.annotations?.[CONTENT_HASH] };
}

async function listVersions(kc: KubeConfig, namespace: string): Promise<ExistingVersion[]> {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const lists: [string, Promise<{ items: { metadata?: V1ObjectMeta }[] | null }>][] = [
    ['ConfigMap', core.listNamespacedConfigMap({ namespace }, METADATA_ONLY)],
    ['Secret', core.listNamespacedSecret({ namespace }, METADATA_ONLY)],
    ['Pod', core.listNamespacedPod({ namespace }, METADATA_ONLY)],
    ['ReplicaSet', apps.listNamespacedReplicaSet({ namespace }, METADATA_ONLY)],
  ];
  const versions: ExistingVersion[] = [];
  for (const [kind, list] of lists) {
    const result = await list.catch((error: unknown) => {
      throw describeKubeError(error, `list ${kind}s in namespace ${namespace}`);
    });
    // A metadata list of nothing comes back with `items: null`.
    for (const item of result.items ?? []) {
      const v = item.metadata ? versionOf(kind, item.metadata) : undefined;
      if (v) versions.push(v);
    }
  }
  return versions;
}

function trafficServices(object: KubeObject): string[] {
  const value = object.metadata.annotations?.[TRAFFIC_LOAD_BALANCERS];
  if (!value) return [];
  try {
    const parsed: unknown = JSON.parse(value);
    if (!Array.isArray(parsed)) return [];
    return parsed.flatMap((e) =>
      typeof e === 'string' ? (/^\s*service\s+(\S+)\s*$/i.exec(e)?.[1] ?? []) : [],
    );
  } catch {
    return []; // render reports the malformed annotation with its position
  }
}

/** Reads what render needs to know of the cluster for these objects (already placed in namespaces). */
export async function readSnapshot(
  kc: KubeConfig,
  objects: readonly SourcedObject[],
): Promise<ClusterSnapshot> {
  const generic = KubernetesObjectApi.makeApiClient(kc);
  const namespaces = [
    ...new Set(objects.map((o) => o.object.metadata.namespace).filter((n): n is string => !!n)),
  ];
  const versions = (await Promise.all(namespaces.map((ns) => listVersions(kc, ns)))).flat();

  const live: KubeObject[] = [];
  const read = async (apiVersion: string, kind: string, namespace: string, name: string) => {
    try {
      const obj = await generic.read({ apiVersion, kind, metadata: { name, namespace } });
      live.push(obj as unknown as KubeObject);
    } catch (error) {
      if ((error as { code?: number }).code !== 404)
        throw describeKubeError(error, `read ${kind} ${namespace}/${name}`);
    }
  };
  const reads: Promise<void>[] = [];
  for (const { object } of objects) {
    const ns = object.metadata.namespace;
    if (!ns) continue;
    for (const name of trafficServices(object)) reads.push(read('v1', 'Service', ns, name));
    if (object.metadata.annotations?.[STRATEGY.useSourceCapacity] === 'true') {
      if (object.kind === 'ReplicaSet') {
        // A versioned ReplicaSet's live capacity is that of its newest version: list them all.
        const list = await generic
          .list<KubernetesObject>(object.apiVersion, object.kind, ns)
          .catch((error: unknown) => {
            throw describeKubeError(error, `list ReplicaSets in namespace ${ns}`);
          });
        live.push(...(list.items as unknown as KubeObject[]));
      } else {
        reads.push(read(object.apiVersion, object.kind, ns, object.metadata.name));
      }
    }
  }
  await Promise.all(reads);
  return { versions, live };
}
