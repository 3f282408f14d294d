// Deterministic form of manifests: the same input gives the same bytes. Top-level fields come in the order
// people read them (apiVersion, kind, metadata, then the rest); every mapping below is sorted by key.
import { createHash, createHmac } from 'node:crypto';
import { type KeyOrder, stringifyYaml, writeData } from '../yaml/write.ts';
import { isObject, type JsonValue, type KubeObject } from './manifest.ts';

const TOP = ['apiVersion', 'kind', 'metadata'];
const METADATA = ['name', 'namespace'];

const NONE: readonly string[] = [];

/**
 * The keys of a mapping in canonical order: those of `first` in its order, then the rest sorted by UTF-16 code
 * units (the default sort). Mappings usually come sorted already (a second pass, or sorted sources): checked in
 * one pass before any sort.
 */
function sortedKeys(value: { [key: string]: JsonValue }, first: readonly string[]): string[] {
  const keys = Object.keys(value);
  if (first.length > 0) {
    const head = first.filter((k) => keys.includes(k));
    return head.length === 0
      ? sortedKeys(value, NONE)
      : [...head, ...keys.filter((k) => !first.includes(k)).sort()];
  }
  for (let i = 1; i < keys.length; i++) if ((keys[i - 1] as string) > (keys[i] as string)) return keys.sort();
  return keys;
}

function sortedCopy(value: JsonValue, first: readonly string[] = NONE): JsonValue {
  if (Array.isArray(value)) return value.map((v) => sortedCopy(v));
  if (!isObject(value)) return value;
  const keys = sortedKeys(value, first);
  const out: { [key: string]: JsonValue } = {};
  for (const key of keys) {
    const v = value[key];
    if (v === undefined) continue;
    out[key] = sortedCopy(v, key === 'metadata' && first === TOP ? METADATA : NONE);
  }
  return out;
}

/**
 * `value` in canonical order, sharing each part that already is: a mapping whose keys come in canonical order and
 * whose values are kept is returned as it is, not copied. A part met a second time (a YAML alias gives the same value
 * at two places) is copied there, so that the result never holds one value at two places.
 */
function sortedShared(value: JsonValue, first: readonly string[], seen: Set<object>): JsonValue {
  if (value === null || typeof value !== 'object') return value;
  const again = seen.has(value);
  seen.add(value);
  if (Array.isArray(value)) {
    let out: JsonValue[] | undefined = again ? [] : undefined;
    for (let i = 0; i < value.length; i++) {
      const item = value[i] as JsonValue;
      const kept = sortedShared(item, NONE, seen);
      if (out === undefined && kept !== item) out = value.slice(0, i);
      out?.push(kept);
    }
    return out ?? value;
  }
  const own = Object.keys(value);
  const keys = first.length > 0 ? sortedKeys(value, first) : inOrder(own) ? own : [...own].sort();
  let out: { [key: string]: JsonValue } | undefined;
  if (again || (keys !== own && keys.some((k, i) => k !== own[i]))) out = {};
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const v = value[key];
    if (v === undefined) {
      out ??= copyBefore(value, keys, i);
      continue;
    }
    const kept = sortedShared(v, key === 'metadata' && first === TOP ? METADATA : NONE, seen);
    if (out === undefined && kept !== v) out = copyBefore(value, keys, i);
    if (out !== undefined) out[key] = kept;
  }
  return out ?? value;
}

function inOrder(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if ((keys[i - 1] as string) > (keys[i] as string)) return false;
  return true;
}

function copyBefore(
  value: { [key: string]: JsonValue },
  keys: readonly string[],
  end: number,
): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  for (let i = 0; i < end; i++) {
    const key = keys[i] as string;
    const v = value[key];
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/**
 * The object in canonical order. Parts already in that order are shared with `obj`, not copied (render's objects
 * are its own: nothing else holds them once it returns).
 */
export function canonical(obj: KubeObject): KubeObject {
  return sortedShared(obj as unknown as JsonValue, TOP, new Set()) as unknown as KubeObject;
}

/** A deep copy through JSON: manifests are JSON data, and the input must never be changed in place. */
export function cloneObject<T>(value: T): T {
  return structuredClone(value);
}

/** `sha256:<hex>` of the canonical JSON of a value. */
export function contentHash(value: JsonValue): string {
  return `sha256:${createHash('sha256')
    .update(JSON.stringify(sortedCopy(value)))
    .digest('hex')}`;
}

/**
 * `hmac-sha256:<hex>` of the canonical JSON of a value under `key`: equal content gives equal hashes for whoever
 * holds the key, and nobody without it can confirm a guess of the content from the hash.
 */
export function keyedContentHash(value: JsonValue, key: Uint8Array): string {
  return `hmac-sha256:${createHmac('sha256', key)
    .update(JSON.stringify(sortedCopy(value)))
    .digest('hex')}`;
}

// canonical()'s order as the writer's: written in it, an object needs no sorted copy first.
const SORTED: KeyOrder = {
  keys: (map) => sortedKeys(map as { [key: string]: JsonValue }, NONE),
  child: () => SORTED,
};
const METADATA_ORDER: KeyOrder = {
  keys: (map) => sortedKeys(map as { [key: string]: JsonValue }, METADATA),
  child: () => SORTED,
};
const TOP_ORDER: KeyOrder = {
  keys: (map) => sortedKeys(map as { [key: string]: JsonValue }, TOP),
  child: (key) => (key === 'metadata' ? METADATA_ORDER : SORTED),
};

/** The objects as YAML documents in canonical form (`---` between them): what `render -o yaml` prints. */
export function toYaml(objects: readonly KubeObject[]): string {
  return objects.map((o) => writeData(o, TOP_ORDER) ?? stringifyYaml(canonical(o))).join('---\n');
}
