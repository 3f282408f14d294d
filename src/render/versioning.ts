// Versioning (seeds 001, 002, 004): a versioned object is deployed as `<name>-vNNN`. Which objects are versioned:
// the strategy.spinnaker.io/versioned annotation, else the deployment's per-kind setting, else the mode (by default
// only the ConfigMaps and Secrets a reference in the set points at; docs/render.md, "Which objects are versioned"). An object whose content
// equals an existing version reuses that version; otherwise it gets the highest version plus one. Every
// reference to it in the render set is rewritten to the versioned name, so that rolling a workload back rolls
// its configuration back too. References to a versioned object outside the render set bind to its newest version.
// The content hash of a Secret is keyed (HMAC-SHA256 with the installation's key, passed in by the caller): a plain
// hash of a Secret would let anyone who reads the annotation confirm a guessed value. Other kinds keep a plain
// SHA-256: their content is no secret, and people may check it.
import { maxOf } from '../arrays.ts';
import { ARTIFACT, artifactType, CONTENT_HASH, MONIKER, STRATEGY, writeOnceBy } from './annotations.ts';
import { contentHash, keyedContentHash } from './canonical.ts';
import { RenderError } from './errors.ts';
import {
  describeObject,
  fieldOrigin,
  groupOf,
  isObject,
  type JsonValue,
  type KubeObject,
  type SourcedObject,
} from './manifest.ts';
import { type Selected, select, setSelected } from './path.ts';
import { apiReadable } from './rbac-reads.ts';
import {
  indexRules,
  REFERENCE_RULES,
  type ReferenceRule,
  VERSIONED_BY_DEFAULT,
  VERSIONED_WHEN_REFERENCED,
} from './tables.ts';

/** A version of a versioned object that exists in the cluster (read by src/kube, passed in). */
export interface ExistingVersion {
  kind: string;
  namespace: string;
  /** The name without its version suffix. */
  name: string;
  version: number;
  /** The content hash recorded on it, when it was deployed by mooring. */
  hash?: string | undefined;
}

export interface VersionInfo {
  base: string;
  version: number;
  /** True when the content equals an existing version, which is reused rather than created anew. */
  reused: boolean;
  /** Undefined for a Secret rendered without the hash key: it has no hash, and no version to reuse. */
  hash: string | undefined;
}

const MAX_NAME = 253;

export function versionSuffix(version: number): string {
  return `-v${String(version).padStart(3, '0')}`;
}

/** Live versions by the artifact they are versions of (`artifact.spinnaker.io/name`); objects without it are left out. */
export function byArtifact<T extends Pick<KubeObject, 'metadata'>>(items: Iterable<T>): Map<string, T[]> {
  const grouped = new Map<string, T[]>();
  for (const item of items) {
    const artifact = item.metadata.annotations?.[ARTIFACT.name];
    if (artifact === undefined) continue;
    const group = grouped.get(artifact);
    if (group) group.push(item);
    else grouped.set(artifact, [item]);
  }
  return grouped;
}

/** Splits `app-config-v012` into `app-config` and 12; undefined for a name without a version suffix. */
export function parseVersionedName(name: string): { base: string; version: number } | undefined {
  const match = /^(.+)-v(\d{3,})$/.exec(name);
  if (!match?.[1] || !match[2]) return undefined;
  return { base: match[1], version: Number(match[2]) };
}

/**
 * What is versioned besides what an annotation or the per-kind setting decides: only the ConfigMaps and Secrets a
 * reference in the render set points at (`referenced`, the default), every object of a versioned kind (`all`, as
 * Spinnaker does), or nothing (`none`).
 */
export const VERSIONING_MODES = ['referenced', 'all', 'none'] as const;
export type VersioningMode = (typeof VERSIONING_MODES)[number];

export interface VersioningPolicy {
  /** The deployment's per-kind setting (`versioned: {ConfigMap: false}`): after the annotation, before the mode. */
  versioned: Readonly<Record<string, boolean>>;
  mode: VersioningMode;
  /** Whether a reference in the render set points at the object (asked in mode `referenced` only). */
  referenced: (object: KubeObject) => boolean;
  /**
   * Whether a program of the set may read the object through the API, by the set's RBAC (rbac-reads.ts): then it may
   * read it by name, and under `referenced` it keeps that name though a workload refers to it. None: never.
   */
  readable?: ((object: KubeObject) => boolean) | undefined;
}

/**
 * Whether an object is versioned. In order: its strategy.spinnaker.io/versioned annotation, the deployment's
 * per-kind setting, then the mode for the kinds versioned by default (a ConfigMap or Secret that nothing in the set
 * refers to keeps its name under `referenced`: some program reads it by that name).
 */
export function isVersioned(item: SourcedObject, policy: VersioningPolicy, errors: RenderError[]): boolean {
  const { object } = item;
  const value = object.metadata.annotations?.[STRATEGY.versioned];
  if (value !== undefined) {
    if (value === 'true') return true;
    if (value === 'false') return false;
    errors.push(
      new RenderError(`${STRATEGY.versioned} must be "true" or "false", not "${value}"`, {
        origin: fieldOrigin(item, ['metadata', 'annotations', STRATEGY.versioned]),
        object: describeObject(object),
      }),
    );
    return false;
  }
  // Written once under its own name (Flux's ssa: IfNotPresent or Ignore): a new version would be a write.
  if (writeOnceBy(object.metadata.annotations)) return false;
  const configured = policy.versioned[object.kind];
  if (configured !== undefined) return configured;
  const kind = `${groupOf(object.apiVersion)}/${object.kind}`;
  if (!VERSIONED_BY_DEFAULT.has(kind) || policy.mode === 'none') return false;
  if (policy.mode === 'all' || !VERSIONED_WHEN_REFERENCED.has(kind)) return true;
  return policy.referenced(object) && !(policy.readable?.(object) ?? false);
}

type Rules = (group: string, kind: string) => readonly ReferenceRule[];

/** Each reference `object` holds, by the rules: the selected name and the kind it refers to. */
function* referencesOf(object: KubeObject, rules: Rules): Generator<{ selected: Selected; target: string }> {
  for (const rule of rules(groupOf(object.apiVersion), object.kind)) {
    for (const selected of select(object as unknown as JsonValue, rule.path)) {
      if (typeof selected.value !== 'string') continue;
      let target = rule.target;
      if (target === '*') {
        const kind = isObject(selected.parent) ? selected.parent.kind : undefined;
        if (typeof kind !== 'string') continue;
        target = kind;
      }
      yield { selected, target };
    }
  }
}

/** The kinds the references of `objects` point at (only those their fields name, not every kind a rule allows). */
export function referencedKinds(objects: readonly KubeObject[], rules: Rules): Set<string> {
  const kinds = new Set<string>();
  for (const object of objects) for (const { target } of referencesOf(object, rules)) kinds.add(target);
  return kinds;
}

/**
 * What the references of `objects` point at, as refKey; with `anyNamespace` by kind and name alone (for objects
 * not yet placed in their namespaces: a guess that errs towards "referenced").
 */
export function referencedKeys(
  objects: readonly KubeObject[],
  rules: Rules,
  anyNamespace = false,
): Set<string> {
  const keys = new Set<string>();
  for (const object of objects) {
    for (const { selected, target } of referencesOf(object, rules)) {
      keys.add(
        refKey(target, anyNamespace ? undefined : object.metadata.namespace, selected.value as string),
      );
    }
  }
  return keys;
}

/**
 * Which existing versions a render of `objects` (placed in their namespaces) can use: those of its own objects (it
 * numbers or reuses them) and those its references name (a reference to a versioned object outside the set binds to
 * its newest version). Any other version in the namespace (another deployment's) changes nothing in the render, and
 * a namespace may hold tens of thousands: readSnapshot keeps only these.
 */
export function versionsConcerning(objects: readonly KubeObject[], rules: Rules): VersionsConcerning {
  const keys = referencedKeys(objects, rules);
  for (const o of objects) keys.add(refKey(o.kind, o.metadata.namespace, o.metadata.name));
  let byPlace: Map<string, Set<string>> | undefined;
  return {
    has: (kind, namespace, name) => keys.has(refKey(kind, namespace, name)),
    names: (kind, namespace) => {
      if (!byPlace) {
        byPlace = new Map();
        for (const o of objects) placeName(byPlace, o.kind, o.metadata.namespace, o.metadata.name);
        for (const object of objects)
          for (const { selected, target } of referencesOf(object, rules))
            placeName(byPlace, target, object.metadata.namespace, selected.value as string);
      }
      return byPlace.get(refKey(kind, namespace, '')) ?? EMPTY;
    },
  };
}

/** The versions a render set can use (versionsConcerning). */
export interface VersionsConcerning {
  /** Whether the version of this base name can serve the set. */
  has(kind: string, namespace: string, name: string): boolean;
  /** The base names of a kind in a namespace whose versions can serve it (each once). */
  names(kind: string, namespace: string): ReadonlySet<string>;
}

const EMPTY: ReadonlySet<string> = new Set();

function placeName(
  byPlace: Map<string, Set<string>>,
  kind: string,
  namespace: string | undefined,
  name: string,
): void {
  const place = refKey(kind, namespace, '');
  const names = byPlace.get(place);
  if (names) names.add(name);
  else byPlace.set(place, new Set([name]));
}

/** The versioning policy of a render set (namespaces placed, unless `anyNamespace`). */
export function versioningPolicy(
  objects: readonly KubeObject[],
  settings: { versioned: Readonly<Record<string, boolean>>; mode: VersioningMode; rules: Rules },
  anyNamespace = false,
): VersioningPolicy {
  let keys: Set<string> | undefined;
  let readable: ((object: KubeObject) => boolean) | undefined;
  return {
    versioned: settings.versioned,
    mode: settings.mode,
    referenced: (o) => {
      keys ??= referencedKeys(objects, settings.rules, anyNamespace);
      return keys.has(refKey(o.kind, anyNamespace ? undefined : o.metadata.namespace, o.metadata.name));
    },
    // Before the objects are placed (anyNamespace: whether a hash key is needed), what RBAC grants is not asked: the
    // answer may then say versioned where the render will not, never the other way.
    ...(anyNamespace
      ? {}
      : {
          readable: (o: KubeObject) => {
            readable ??= apiReadable(objects);
            return readable(o);
          },
        }),
  };
}

const GENERATED_ANNOTATIONS = new Set<string>([...Object.values(ARTIFACT), MONIKER.sequence, CONTENT_HASH]);

/** The content that decides whether two versions are the same: everything but identity, status and our notes. */
export function versionContent(object: KubeObject): JsonValue {
  const { metadata, status: _status, ...rest } = object;
  const annotations = Object.fromEntries(
    Object.entries(metadata.annotations ?? {}).filter(([k]) => !GENERATED_ANNOTATIONS.has(k)),
  );
  return {
    ...(rest as { [key: string]: JsonValue }),
    metadata: { labels: metadata.labels ?? {}, annotations },
  };
}

function refKey(kind: string, namespace: string | undefined, name: string): string {
  return `${kind}/${namespace ?? ''}/${name}`;
}

function isSecret(object: KubeObject): boolean {
  return object.apiVersion === 'v1' && object.kind === 'Secret';
}

/**
 * Whether rendering these objects needs the hash key: some Secret among them is versioned. Asked before the objects
 * are placed in namespaces, so a reference counts by kind and name alone.
 */
export function needsHashKey(
  items: readonly SourcedObject[],
  settings: {
    versioned: Readonly<Record<string, boolean>>;
    versioning?: VersioningMode | undefined;
    referenceRules?: readonly ReferenceRule[] | undefined;
  },
): boolean {
  const secrets = items.filter((item) => isSecret(item.object));
  if (secrets.length === 0) return false;
  const policy = versioningPolicy(
    items.map(({ object }) => object),
    {
      versioned: settings.versioned,
      mode: settings.versioning ?? 'referenced',
      rules: indexRules(REFERENCE_RULES, settings.referenceRules ?? []),
    },
    true,
  );
  return secrets.some((item) => isVersioned(item, policy, []));
}

/** The content hash of a versioned object: keyed for a Secret (undefined without a key), plain for the rest. */
export function versionHash(object: KubeObject, key: Uint8Array | undefined): string | undefined {
  const content = versionContent(object);
  if (!isSecret(object)) return contentHash(content);
  return key ? keyedContentHash(content, key) : undefined;
}

/** A version a recorded release used (`ConfigMap app-config-v003`), which may no longer exist. */
export interface UsedVersion {
  kind: string;
  /** The name without its version suffix. */
  name: string;
  version: number;
}

/** The versions named by recorded releases' `versions` (`ConfigMap app-config-v003`); other entries are passed over. */
export function usedVersions(names: Iterable<string>): UsedVersion[] {
  const used: UsedVersion[] = [];
  for (const entry of names) {
    const match = /^(\S+) (\S+)-v(\d{3,9})$/.exec(entry);
    if (match) used.push({ kind: match[1] as string, name: match[2] as string, version: Number(match[3]) });
  }
  return used;
}

export class Versioner {
  private readonly existing = new Map<string, ExistingVersion[]>();
  private readonly hashKey: Uint8Array | undefined;
  /** The highest version recorded releases used, by kind and name: a new version is numbered above it. */
  private readonly used = new Map<string, number>();
  /** A rollback's recorded version by kind and name (undefined where the release names two of one name). */
  private readonly restore = new Map<string, number | undefined>();

  /**
   * `hashKey`: the installation's key for the content hash of Secrets (src/kube/hash-key.ts). `used`: the versions
   * the deployment's recorded releases name, which may be gone from the cluster (pruned with their workload): a new
   * version is numbered above them, so that a versioned name never stands for two contents in the history.
   * `restore`: a rollback's, the versions its release recorded: one no live object holds comes back under its
   * recorded number (the name that content had), where `used` alone would number it above the rest.
   */
  constructor(
    existing: readonly ExistingVersion[],
    hashKey?: Uint8Array,
    used: readonly UsedVersion[] = [],
    restore: readonly UsedVersion[] = [],
  ) {
    this.hashKey = hashKey;
    for (const r of restore) {
      const key = `${r.kind}/${r.name}`;
      // The record does not say a version's namespace: two of one name and kind are no answer.
      this.restore.set(key, this.restore.has(key) ? undefined : r.version);
    }
    for (const u of used) {
      const key = `${u.kind}/${u.name}`;
      this.used.set(key, Math.max(this.used.get(key) ?? -1, u.version));
    }
    for (const e of existing) {
      const key = refKey(e.kind, e.namespace, e.name);
      // Pushed, not copied: a copy per version is quadratic in the versions a namespace holds.
      const known = this.existing.get(key);
      if (known) known.push(e);
      else this.existing.set(key, [e]);
    }
  }

  /** Gives `item` its version: renames it and writes the artifact annotations. */
  assign(item: SourcedObject, errors: RenderError[]): VersionInfo | undefined {
    const { object, origin } = item;
    const base = object.metadata.name;
    const hash = versionHash(object, this.hashKey);
    const known = this.existing.get(refKey(object.kind, object.metadata.namespace, base)) ?? [];
    const same =
      hash === undefined
        ? undefined
        : known.filter((e) => e.hash === hash).sort((a, b) => b.version - a.version)[0];
    const floor = (this.used.get(`${object.kind}/${base}`) ?? -1) + 1;
    const recorded = this.restore.get(`${object.kind}/${base}`);
    const version = same
      ? same.version
      : recorded !== undefined && !known.some((e) => e.version === recorded)
        ? recorded
        : known.reduce((max, e) => Math.max(max, e.version + 1), floor);
    const name = `${base}${versionSuffix(version)}`;
    if (name.length > MAX_NAME) {
      errors.push(
        new RenderError(`versioned name "${name}" is longer than ${MAX_NAME} characters`, {
          origin,
          object: describeObject(object),
        }),
      );
      return undefined;
    }
    object.metadata.name = name;
    object.metadata.annotations = {
      ...object.metadata.annotations,
      [ARTIFACT.name]: base,
      [ARTIFACT.type]: artifactType(object.kind),
      [ARTIFACT.location]: object.metadata.namespace ?? '',
      [ARTIFACT.version]: versionSuffix(version).slice(1),
      [MONIKER.sequence]: String(version),
      ...(hash === undefined ? {} : { [CONTENT_HASH]: hash }),
    };
    return { base, version, reused: same !== undefined, hash };
  }

  /** The name of the newest existing version of an object, for references to objects outside the render set. */
  newest(kind: string, namespace: string | undefined, base: string): string | undefined {
    const known = this.existing.get(refKey(kind, namespace, base));
    if (!known || known.length === 0) return undefined;
    const version = maxOf(known.map((e) => e.version));
    return `${base}${versionSuffix(version)}`;
  }
}

/**
 * Rewrites references by name: `names` maps `kind/namespace/base` to the name to use. Returns what changed,
 * for the render report.
 */
export function rewriteReferences(
  objects: readonly SourcedObject[],
  rules: Rules,
  names: ReadonlyMap<string, string>,
): { object: string; path: string; from: string; to: string }[] {
  const changes: { object: string; path: string; from: string; to: string }[] = [];
  for (const { object } of objects) {
    for (const { selected, target } of referencesOf(object, rules)) {
      const from = selected.value as string;
      const to = names.get(refKey(target, object.metadata.namespace, from));
      if (to === undefined || to === from) continue;
      changes.push({ object: describeObject(object), path: selected.path, from, to });
      setSelected(selected, to);
    }
  }
  return changes;
}

export { refKey };
