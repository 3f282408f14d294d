// Versioning (seeds 001, 002, 004): a versioned object is deployed as `<name>-vNNN`. An object whose content
// equals an existing version reuses that version; otherwise it gets the highest version plus one. Every
// reference to it in the render set is rewritten to the versioned name, so that rolling a workload back rolls
// its configuration back too. References to a versioned object outside the render set bind to its newest version.
// The content hash of a Secret is keyed (HMAC-SHA256 with the installation's key, passed in by the caller): a plain
// hash of a Secret would let anyone who reads the annotation confirm a guessed value. Other kinds keep a plain
// SHA-256: their content is no secret, and people may check it.
import { maxOf } from '../arrays.ts';
import { ARTIFACT, artifactType, CONTENT_HASH, MONIKER, STRATEGY } from './annotations.ts';
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
import { select, setSelected } from './path.ts';
import { type ReferenceRule, VERSIONED_BY_DEFAULT } from './tables.ts';

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

/** Splits `app-config-v012` into `app-config` and 12; undefined for a name without a version suffix. */
export function parseVersionedName(name: string): { base: string; version: number } | undefined {
  const match = /^(.+)-v(\d{3,})$/.exec(name);
  if (!match?.[1] || !match[2]) return undefined;
  return { base: match[1], version: Number(match[2]) };
}

export function isVersioned(
  item: SourcedObject,
  defaults: Readonly<Record<string, boolean>>,
  errors: RenderError[],
): boolean {
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
  const configured = defaults[object.kind];
  if (configured !== undefined) return configured;
  return VERSIONED_BY_DEFAULT.has(`${groupOf(object.apiVersion)}/${object.kind}`);
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

/** Whether rendering these objects needs the hash key: some Secret among them is versioned. */
export function needsHashKey(
  items: readonly SourcedObject[],
  defaults: Readonly<Record<string, boolean>>,
): boolean {
  return items.some((item) => isSecret(item.object) && isVersioned(item, defaults, []));
}

/** The content hash of a versioned object: keyed for a Secret (undefined without a key), plain for the rest. */
export function versionHash(object: KubeObject, key: Uint8Array | undefined): string | undefined {
  const content = versionContent(object);
  if (!isSecret(object)) return contentHash(content);
  return key ? keyedContentHash(content, key) : undefined;
}

export class Versioner {
  private readonly existing = new Map<string, ExistingVersion[]>();
  private readonly hashKey: Uint8Array | undefined;

  /** `hashKey`: the installation's key for the content hash of Secrets (src/kube/hash-key.ts). */
  constructor(existing: readonly ExistingVersion[], hashKey?: Uint8Array) {
    this.hashKey = hashKey;
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
    const version = same ? same.version : known.reduce((max, e) => Math.max(max, e.version + 1), 0);
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
  rules: (group: string, kind: string) => readonly ReferenceRule[],
  names: ReadonlyMap<string, string>,
): { object: string; path: string; from: string; to: string }[] {
  const changes: { object: string; path: string; from: string; to: string }[] = [];
  for (const { object } of objects) {
    for (const rule of rules(groupOf(object.apiVersion), object.kind)) {
      for (const selected of select(object as unknown as JsonValue, rule.path)) {
        if (typeof selected.value !== 'string') continue;
        let target = rule.target;
        if (target === '*') {
          const kind = isObject(selected.parent) ? selected.parent.kind : undefined;
          if (typeof kind !== 'string') continue;
          target = kind;
        }
        const to = names.get(refKey(target, object.metadata.namespace, selected.value));
        if (to === undefined || to === selected.value) continue;
        changes.push({ object: describeObject(object), path: selected.path, from: selected.value, to });
        setSelected(selected, to);
      }
    }
  }
  return changes;
}

export { refKey };
