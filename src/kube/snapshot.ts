// The read-only lookup that render needs: existing versions of versioned objects, the Services that traffic
// annotations name, and the live workloads whose capacity is kept. Versions are listed as metadata only
// (PartialObjectMetadataList), so that no Secret data is ever read for this.
import { MooringError, StalledError } from '../errors.ts';
import { parseJson } from '../json.ts';
import {
  ARTIFACT,
  CONTENT_HASH,
  LABEL_MANAGED_BY,
  MANAGED_BY,
  POD_TEMPLATE_LABELS,
  STRATEGY,
  TRAFFIC_LOAD_BALANCERS,
} from '../render/annotations.ts';
import { groupOf, type KubeObject, type SourcedObject } from '../render/manifest.ts';
import { workloadKey } from '../render/moniker.ts';
import type { ClusterSnapshot, ExistingVersion } from '../render/render.ts';
import { indexRules, POD_TEMPLATE_RULES, REFERENCE_RULES, type ReferenceRule } from '../render/tables.ts';
import {
  parseVersionedName,
  referencedKinds,
  type VersionsConcerning,
  versionsConcerning,
} from '../render/versioning.ts';
import { type KubeApi, METADATA_LIST } from './api.ts';
import type { ListSelection } from './cache.ts';
import { Discovery, type ResourceInfo, resourcePath } from './discovery.ts';
import { describeKubeError, statusCode } from './errors.ts';
import { listAll } from './list-pages.ts';

/** Discovery's own errors (an unknown kind) are already classified; a failed request is classified here. */
function described(error: unknown, action: string): MooringError {
  return error instanceof MooringError ? error : describeKubeError(error, action);
}

/** The fields of an object's metadata that versions are read from. */
export interface VersionedMeta {
  name?: string;
  namespace?: string;
  annotations?: Record<string, string>;
}

interface ObjectList<T> {
  /** A metadata list of nothing comes back with `items: null`. */
  items?: T[] | null;
}

/** The kinds whose versions render reuses, and where their collections are. */
const VERSIONED_COLLECTIONS: readonly { kind: string; group: string; plural: string }[] = [
  { kind: 'ConfigMap', group: 'v1', plural: 'configmaps' },
  { kind: 'Secret', group: 'v1', plural: 'secrets' },
  { kind: 'Pod', group: 'v1', plural: 'pods' },
  { kind: 'ReplicaSet', group: 'apps/v1', plural: 'replicasets' },
];

/** The version an object records in its annotations (or, failing that, in its name). */
export function versionOf(kind: string, meta: VersionedMeta): ExistingVersion | undefined {
  const base = meta.annotations?.[ARTIFACT.name];
  if (!base || !meta.name || !meta.namespace) return undefined;
  const fromAnnotation = /^v(\d+)$/.exec(meta.annotations?.[ARTIFACT.version] ?? '');
  const version =
    fromAnnotation?.[1] !== undefined ? Number(fromAnnotation[1]) : parseVersionedName(meta.name)?.version;
  if (version === undefined) return undefined;
  return { kind, namespace: meta.namespace, name: base, version, hash: meta.annotations?.[CONTENT_HASH] };
}

/**
 * The versioned collections a set needs listed in one namespace: the kinds it holds there, and the kinds its
 * objects there refer to (a pod template naming a ConfigMap, an HPA's target), by the built-in reference rules and
 * the configuration's: the references their fields hold, not every kind a rule allows. A fleet of Deployments that
 * read ConfigMaps lists no Secrets, Pods or ReplicaSets, the namespace's largest collections, on every sync.
 */
export function versionedKindsNeeded(
  objects: readonly KubeObject[],
  extraRules: readonly ReferenceRule[] = [],
): Set<string> {
  const all = new Set(VERSIONED_COLLECTIONS.map((c) => c.kind));
  const needed = new Set(objects.map((o) => o.kind).filter((k) => all.has(k)));
  for (const kind of referencedKinds(objects, indexRules(REFERENCE_RULES, extraRules)))
    if (all.has(kind)) needed.add(kind);
  return needed;
}

/**
 * The objects of a type in a namespace as the agent's watch cache holds them, when it can answer for them: when it
 * has shown every write the agent made there, or (with `concerns`) every write of an object `concerns` accepts.
 * With `select`, only the objects it names (by name, or by an annotation's value).
 */
export type CachedList = (
  info: ResourceInfo,
  namespace: string,
  concerns?: (name: string) => boolean,
  select?: ListSelection,
) => KubeObject[] | undefined;

/** What the watch cache answers for a type in a namespace (its metadata), or undefined: ask the server. */
async function fromCache(
  discovery: Discovery,
  cached: CachedList | undefined,
  apiVersion: string,
  kind: string,
  namespace: string,
  concerns?: (name: string) => boolean,
  select?: ListSelection,
): Promise<KubeObject[] | undefined> {
  if (!cached) return undefined;
  const info = await discovery.resource(apiVersion, kind).catch(() => undefined);
  return info && cached(info, namespace, concerns, select);
}

async function listVersions(
  api: KubeApi,
  namespace: string,
  kinds: ReadonlySet<string>,
  discovery: Discovery,
  cached: CachedList | undefined,
  /** The set's own objects of the namespace, by name: their versions are `<name>-vNNN`. */
  own: ReadonlySet<string>,
  /** The versions render can use (versionsConcerning): the others are not kept. */
  concerning: VersionsConcerning,
): Promise<ExistingVersion[]> {
  // A version this set numbers or reuses is one of its own objects': the cache answers once it has shown the
  // agent's writes of those (another sync's new version of its own objects races as a list just before it would).
  const concerns = (name: string) => {
    const parsed = parseVersionedName(name);
    return parsed !== undefined && own.has(parsed.base);
  };
  // All at once; Promise.all observes every request, so a second failure is never an unhandled rejection.
  const lists = await Promise.all(
    VERSIONED_COLLECTIONS.filter(({ kind }) => kinds.has(kind)).map(async ({ kind, group, plural }) => {
      // The cache answers with those versions alone, by their artifact annotation (versionOf reads the same).
      const held = await fromCache(discovery, cached, group, kind, namespace, concerns, {
        annotation: ARTIFACT.name,
        values: concerning.names(kind, namespace),
      });
      if (held) return { kind, items: held as { metadata?: VersionedMeta }[] };
      const base = group.includes('/') ? `/apis/${group}` : `/api/${group}`;
      const path = `${base}/namespaces/${encodeURIComponent(namespace)}/${plural}`;
      try {
        const items = await listAll<{ metadata?: VersionedMeta }>(api, path, { accept: METADATA_LIST });
        return { kind, items };
      } catch (error) {
        throw describeKubeError(error, `list ${kind}s in namespace ${namespace}`);
      }
    }),
  );
  return lists.flatMap(({ kind, items }) =>
    items.flatMap((item) => {
      const version = item.metadata ? versionOf(kind, item.metadata) : undefined;
      return version && concerning.has(kind, version.namespace, version.name) ? [version] : [];
    }),
  );
}

function trafficServices(object: KubeObject): string[] {
  const value = object.metadata.annotations?.[TRAFFIC_LOAD_BALANCERS];
  if (!value) return [];
  try {
    const parsed: unknown = parseJson(value);
    if (!Array.isArray(parsed)) return [];
    return parsed.flatMap((e) =>
      typeof e === 'string' ? (/^\s*service\s+(\S+)\s*$/i.exec(e)?.[1] ?? []) : [],
    );
  } catch {
    return []; // render reports the malformed annotation with its position
  }
}

/** Whether a kind holds pod templates (a Pod is its own: its labels change without a restart). */
function hasPodTemplate(apiVersion: string, kind: string): boolean {
  const group = groupOf(apiVersion);
  return POD_TEMPLATE_RULES.some((r) => r.kind === kind && r.group === group && r.path !== '');
}

/**
 * Whether a live workload's pod templates are left without mooring's labels: applied by another tool (its own
 * labels do not say mooring manages it), or adopted by mooring earlier, which said so in an annotation.
 */
function keepsTemplates(meta: VersionedMeta & { labels?: Record<string, string> }): boolean {
  return (
    meta.labels?.[LABEL_MANAGED_BY] !== MANAGED_BY || meta.annotations?.[POD_TEMPLATE_LABELS] === 'false'
  );
}

export interface SnapshotOptions {
  /**
   * Find the workloads whose live pod templates are left without mooring's labels (render.podTemplateLabels
   * `auto`): one metadata-only list per kind and namespace of the workloads among the objects.
   */
  adopted?: boolean | undefined;
  /** The configuration's reference rules (render.referencePaths), beside the built-in ones. */
  referenceRules?: readonly ReferenceRule[] | undefined;
  /**
   * The agent's watch cache (ClusterCache.listedObjects): a list it holds listed, with every write of the agent
   * there shown, is read from it instead of the server (versions, adopted workloads).
   */
  cached?: CachedList | undefined;
}

/** Reads what render needs to know of the cluster for these objects (already placed in namespaces). */
export async function readSnapshot(
  api: KubeApi,
  objects: readonly SourcedObject[],
  /** The caller's discovery, so its cached REST mappings serve the apply that follows. */
  discovery: Discovery = new Discovery(api),
  options: SnapshotOptions = {},
): Promise<ClusterSnapshot> {
  const namespaces = [
    ...new Set(objects.map((o) => o.object.metadata.namespace).filter((n): n is string => !!n)),
  ];

  /** One live object, or nothing when it does not exist. */
  const read = async (apiVersion: string, kind: string, namespace: string, name: string) => {
    try {
      const info = await discovery.resource(apiVersion, kind);
      return [await api.request<KubeObject>('GET', resourcePath(info, namespace, name))];
    } catch (error) {
      if (statusCode(error) === 404) return [];
      throw described(error, `read ${kind} ${namespace}/${name}`);
    }
  };
  /** Every object of a kind in a namespace; list items carry no kind, so it is set as render matches on it. */
  const list = async (apiVersion: string, kind: string, namespace: string) => {
    try {
      const info = await discovery.resource(apiVersion, kind);
      const items = await listAll(api, resourcePath(info, namespace));
      return items.map((item) => ({ ...item, apiVersion, kind }));
    } catch (error) {
      throw described(error, `list ${kind}s in namespace ${namespace}`);
    }
  };

  const reads: Promise<KubeObject[]>[] = [];
  for (const { object } of objects) {
    const ns = object.metadata.namespace;
    if (!ns) continue;
    for (const name of trafficServices(object)) reads.push(read('v1', 'Service', ns, name));
    if (object.metadata.annotations?.[STRATEGY.useSourceCapacity] === 'true') {
      // A versioned ReplicaSet's live capacity is that of its newest version: list them all.
      if (object.kind === 'ReplicaSet') reads.push(list(object.apiVersion, object.kind, ns));
      else reads.push(read(object.apiVersion, object.kind, ns, object.metadata.name));
    }
  }
  // The workloads among the objects, by kind and namespace: each collection is listed once.
  const workloads = new Map<
    string,
    { apiVersion: string; kind: string; namespace: string; names: Set<string> }
  >();
  if (options.adopted) {
    for (const { object } of objects) {
      const ns = object.metadata.namespace;
      if (!ns || !hasPodTemplate(object.apiVersion, object.kind)) continue;
      const key = `${object.apiVersion}/${object.kind}/${ns}`;
      const entry = workloads.get(key) ?? {
        apiVersion: object.apiVersion,
        kind: object.kind,
        namespace: ns,
        names: new Set(),
      };
      entry.names.add(object.metadata.name);
      workloads.set(key, entry);
    }
  }
  const adopted = Promise.all(
    [...workloads.values()].map(async ({ apiVersion, kind, namespace, names }) => {
      // A kind not served yet (its CRD comes with this set) has no live objects to adopt.
      const info = await discovery.resource(apiVersion, kind).catch((error: unknown) => {
        if (error instanceof StalledError) return undefined;
        throw error;
      });
      if (!info) return [];
      let list: ObjectList<{ metadata?: VersionedMeta & { labels?: Record<string, string> } }> | undefined;
      // Only these workloads' own writes matter: other syncs' writes in the namespace do not send it to the server.
      const held = options.cached?.(info, namespace, (name) => names.has(name), { names });
      if (held) list = { items: held as { metadata?: VersionedMeta }[] };
      else
        try {
          // Metadata only: whether mooring manages each workload, not its whole spec.
          list = { items: await listAll(api, resourcePath(info, namespace), { accept: METADATA_LIST }) };
        } catch (error) {
          throw described(error, `list ${kind}s in namespace ${namespace}`);
        }
      return (list?.items ?? []).flatMap(({ metadata }) =>
        metadata?.name && names.has(metadata.name) && keepsTemplates(metadata)
          ? [workloadKey(kind, namespace, metadata.name)]
          : [],
      );
    }),
  );
  const concerning = versionsConcerning(
    objects.map(({ object }) => object),
    indexRules(REFERENCE_RULES, options.referenceRules ?? []),
  );
  // Started together and awaited together: whichever fails first is reported, none is left unobserved.
  const [versions, live, unlabelled] = await Promise.all([
    Promise.all(
      namespaces.map((ns) => {
        const here = objects.flatMap(({ object }) => (object.metadata.namespace === ns ? [object] : []));
        return listVersions(
          api,
          ns,
          versionedKindsNeeded(here, options.referenceRules),
          discovery,
          options.cached,
          new Set(here.map((o) => o.metadata.name)),
          concerning,
        );
      }),
    ),
    Promise.all(reads),
    adopted,
  ]);
  return { versions: versions.flat(), live: live.flat(), adopted: unlabelled.flat() };
}
