// The render engine: manifests + image artifacts + a snapshot of the relevant cluster state in, hydrated
// manifests and an apply plan out. Pure: no I/O, no Kubernetes client. Stages run in a fixed order, and the
// problems of a stage are reported together so that a user fixes them in one go.

import { append, byCodeUnit } from '../arrays.ts';
import { ARTIFACT } from './annotations.ts';
import { canonical } from './canonical.ts';
import { RenderError, throwIfAny } from './errors.ts';
import { hookRole, isHookObject } from './hooks.ts';
import { bindImages, type ImageArtifact, type ImageBinding, type ImageMatch } from './images.ts';
import {
  clusterScopedByDefinition,
  describeObject,
  describeOrigin,
  groupOf,
  isClusterScoped,
  isObject,
  type KubeObject,
  type Origin,
  objectKey,
  type SourcedObject,
} from './manifest.ts';
import { applyMoniker, workloadKey } from './moniker.ts';
import { boundaryErrors, type NamespaceBoundary } from './namespace-boundary.ts';
import { DEFAULT_LIMITS, type ManifestFile, type ParseLimits, parseManifestFiles } from './parse.ts';
import { checkSecretValues } from './secret-values.ts';
import { parseStrategy, type Strategy } from './strategy.ts';
import { checkStringValues } from './string-values.ts';
import {
  IMAGE_RULES,
  indexRules,
  type KindRule,
  POD_TEMPLATE_RULES,
  REFERENCE_RULES,
  type ReferenceRule,
} from './tables.ts';
import { applyTraffic } from './traffic.ts';
import {
  type ExistingVersion,
  isVersioned,
  refKey,
  rewriteReferences,
  type UsedVersion,
  Versioner,
  type VersionInfo,
  type VersioningMode,
  versioningPolicy,
} from './versioning.ts';

/** What render knows of the cluster, read beforehand by src/kube (or empty, offline). */
export interface ClusterSnapshot {
  versions: readonly ExistingVersion[];
  /** Live objects render may consult: Services (traffic) and workloads (use-source-capacity). */
  live: readonly KubeObject[];
  /**
   * Live workloads whose pod templates lack mooring's labels (applied by another tool, or by mooring without
   * them), as `workloadKey`: with podTemplateLabels `auto` their pod templates are left as they are.
   */
  adopted?: readonly string[] | undefined;
  /** Versions the deployment's recorded releases name, live or not: new versions are numbered above them. */
  used?: readonly UsedVersion[] | undefined;
  /**
   * A rollback's: the versions its release recorded. A version no live object holds comes back under that number
   * (its name in the history), not above `used`.
   */
  restore?: readonly UsedVersion[] | undefined;
}

export interface RenderOptions {
  limits: ParseLimits;
  imageMatch: ImageMatch;
  requireDigests: boolean;
  /** Per-kind versioning default, e.g. `{ConfigMap: false}`; the annotation wins. */
  versioned: Readonly<Record<string, boolean>>;
  /** What is versioned where neither decides: referenced ConfigMaps and Secrets (default), all, or none. */
  versioning: VersioningMode;
  applyAppLabels: boolean;
  /**
   * With applyAppLabels, whether pod templates get the labels too: always (true), never (false), or except on the
   * workloads the snapshot lists as adopted ('auto').
   */
  podTemplateLabels: boolean | 'auto';
  /** Extra image places for custom resources (absolute paths). */
  imageRules: readonly KindRule[];
  /** Extra ConfigMap/Secret reference places for custom resources (absolute paths). */
  referenceRules: readonly ReferenceRule[];
  /** Extra cluster-scoped kinds as `group/Kind` (from discovery). */
  clusterScoped: readonly string[];
  /** Where objects may go (namespaces, cluster-scoped kinds); none: anywhere, as for a plain render of files. */
  boundary?: NamespaceBoundary | undefined;
  /** The installation's key for the content hash of versioned Secrets; without it they carry no hash. */
  hashKey?: Uint8Array | undefined;
}

export const DEFAULT_OPTIONS: RenderOptions = {
  limits: DEFAULT_LIMITS,
  imageMatch: 'match-name-and-tag',
  requireDigests: false,
  versioned: {},
  versioning: 'referenced',
  applyAppLabels: true,
  podTemplateLabels: 'auto',
  imageRules: [],
  referenceRules: [],
  clusterScoped: [],
};

export interface RenderInput {
  files: readonly ManifestFile[];
  /**
   * The files already parsed (by parseManifestFiles with the same limits), when the caller needed them first, so
   * that they are not parsed twice. Render changes these objects in place.
   */
  parsed?: ReturnType<typeof parseManifestFiles>;
  /** The deployment's namespace: namespaced objects without one get it. */
  namespace: string;
  application: string;
  images?: readonly ImageArtifact[];
  snapshot?: ClusterSnapshot;
  options?: Partial<RenderOptions>;
}

export interface PlanEntry {
  /** `Deployment prod/web`, with the final (versioned) name. */
  object: string;
  key: string;
  origin: Origin;
  strategy: Strategy;
  version: VersionInfo | undefined;
}

export interface RenderResult {
  /** Hydrated objects in canonical key order, in the order they were defined. */
  objects: KubeObject[];
  /** One entry per object, same order. */
  plan: PlanEntry[];
  images: ImageBinding;
  references: { object: string; path: string; from: string; to: string }[];
}

export function render(input: RenderInput): RenderResult {
  const options: RenderOptions = { ...DEFAULT_OPTIONS, ...input.options };
  const snapshot: ClusterSnapshot = input.snapshot ?? { versions: [], live: [] };
  const imageRules = indexRules(IMAGE_RULES, options.imageRules);
  const referenceRules = indexRules(REFERENCE_RULES, options.referenceRules);
  const podTemplates = indexRules(POD_TEMPLATE_RULES);
  const errors: RenderError[] = [];

  // 1. Parse, place in namespaces, keep inside the boundary, refuse duplicates.
  const parsed = input.parsed ?? parseManifestFiles(input.files, options.limits);
  append(errors, parsed.errors);
  throwIfAny(errors);
  const items = parsed.objects;
  const clusterScoped = new Set([
    ...options.clusterScoped,
    ...clusterScopedByDefinition(items.map(({ object }) => object)),
  ]);
  for (const { object } of items) {
    if (isClusterScoped(object.apiVersion, object.kind, clusterScoped)) delete object.metadata.namespace;
    else object.metadata.namespace ??= input.namespace;
  }
  if (options.boundary) append(errors, boundaryErrors(items, options.boundary, clusterScoped));
  throwIfAny(errors);
  const seen = new Map<string, Origin>();
  for (const { object, origin } of items) {
    const key = objectKey(object);
    const first = seen.get(key);
    if (first) {
      errors.push(
        new RenderError(`defined twice: first at ${describeOrigin(first)}`, {
          origin,
          object: describeObject(object),
        }),
      );
    } else seen.set(key, origin);
  }
  for (const item of items) {
    checkSecretValues(item, errors);
    checkStringValues(item, errors);
  }
  throwIfAny(errors);

  // 2. Read the strategy annotations into the plan; hook annotations are checked here too (src/sync/hooks.ts runs
  // the hooks).
  const strategies = items.map((item) => parseStrategy(item, errors));
  for (const item of items)
    if (isHookObject(item.object.metadata.annotations)) hookRole(item, 'upgrade', errors);
  // Hooks run once per sync under their own names: never versioned. Which ConfigMaps and Secrets are referenced is
  // decided on the set as written, before any name changes.
  const policy = versioningPolicy(
    items.map(({ object }) => object),
    { versioned: options.versioned, mode: options.versioning, rules: referenceRules },
  );
  const versioned = items.map(
    (item) => isVersioned(item, policy, errors) && !isHookObject(item.object.metadata.annotations),
  );
  throwIfAny(errors);

  // 3. Content: images by digest, traffic labels, monikers. Before versioning, so the content hash covers them.
  const images = bindImages(
    items,
    input.images ?? [],
    { match: options.imageMatch, requireDigests: options.requireDigests, rules: imageRules },
    errors,
  );
  const renderedServices = new Map<string, KubeObject>();
  for (const { object } of items) {
    if (object.kind === 'Service' && groupOf(object.apiVersion) === '') {
      renderedServices.set(refKey('Service', object.metadata.namespace, object.metadata.name), object);
    }
  }
  const liveByKey = new Map(
    snapshot.live.map((o) => [refKey(o.kind, o.metadata.namespace, o.metadata.name), o]),
  );
  const service = (namespace: string | undefined, name: string) =>
    renderedServices.get(refKey('Service', namespace, name)) ??
    liveByKey.get(refKey('Service', namespace, name));
  for (const item of items) applyTraffic(item, service, podTemplates, errors);
  const adopted = new Set(snapshot.adopted ?? []);
  for (const { object } of items) {
    applyMoniker(object, object.metadata.name, {
      application: input.application,
      applyAppLabels: options.applyAppLabels,
      podTemplates,
      templates:
        options.podTemplateLabels === 'auto'
          ? !adopted.has(workloadKey(object.kind, object.metadata.namespace, object.metadata.name))
          : options.podTemplateLabels,
    });
  }
  throwIfAny(errors);

  // 4. Versions. Objects that refer to nothing (ConfigMaps, Secrets) first, then references to them are
  // rewritten, then the versioned objects that hold references (ReplicaSets, Pods) get versions of content that
  // already names the right configuration, then references to those (an HPA's target) are rewritten.
  const versioner = new Versioner(snapshot.versions, options.hashKey, snapshot.used, snapshot.restore);
  const versions: (VersionInfo | undefined)[] = items.map(() => undefined);
  const inRenderSet = new Set(
    items.map(({ object }) => refKey(object.kind, object.metadata.namespace, object.metadata.name)),
  );
  const holdsReferences = (o: KubeObject) => referenceRules(groupOf(o.apiVersion), o.kind).length > 0;
  const references: RenderResult['references'] = [];
  for (const phase of [false, true]) {
    const names = new Map<string, string>();
    items.forEach((item, i) => {
      if (!versioned[i] || holdsReferences(item.object) !== phase) return;
      const key = refKey(item.object.kind, item.object.metadata.namespace, item.object.metadata.name);
      const info = versioner.assign(item, errors);
      versions[i] = info;
      if (info) names.set(key, item.object.metadata.name);
    });
    if (!phase) {
      // References to versioned objects outside the render set bind to their newest existing version.
      for (const v of snapshot.versions) {
        const key = refKey(v.kind, v.namespace, v.name);
        if (inRenderSet.has(key) || names.has(key)) continue;
        const newest = versioner.newest(v.kind, v.namespace, v.name);
        if (newest) names.set(key, newest);
      }
    }
    append(references, rewriteReferences(items, referenceRules, names));
  }
  throwIfAny(errors);

  // 5. Capacity from the live object, where asked for.
  items.forEach((item, i) => {
    if (strategies[i]?.useSourceCapacity) takeSourceCapacity(item, versions[i], snapshot.live);
  });

  const plan: PlanEntry[] = items.map((item, i) => {
    const strategy = strategies[i] as Strategy;
    const version = versions[i];
    // Seed 001: recreate of a versioned object only when the same version is redeployed.
    const recreate = strategy.recreate && (version === undefined || version.reused);
    return {
      object: describeObject(item.object),
      key: objectKey(item.object),
      origin: item.origin,
      strategy: { ...strategy, recreate },
      version,
    };
  });
  return { objects: items.map(({ object }) => canonical(object)), plan, images, references };
}

function takeSourceCapacity(
  item: SourcedObject,
  version: VersionInfo | undefined,
  live: readonly KubeObject[],
): void {
  const { object } = item;
  const sameKind = live.filter(
    (o) => o.kind === object.kind && o.metadata.namespace === object.metadata.namespace,
  );
  const current =
    sameKind.find((o) => o.metadata.name === object.metadata.name) ??
    (version
      ? sameKind
          .filter((o) => o.metadata.annotations?.[ARTIFACT.name] === version.base)
          .sort((a, b) =>
            byCodeUnit(String(b.metadata.creationTimestamp), String(a.metadata.creationTimestamp)),
          )[0]
      : undefined);
  const replicas = isObject(current?.spec) ? current.spec.replicas : undefined;
  if (typeof replicas === 'number' && isObject(object.spec)) object.spec.replicas = replicas;
}

export type { ExistingVersion, ImageArtifact, ManifestFile, Strategy, VersionInfo };
