// Deterministic form of manifests: the same input gives the same bytes. Top-level fields come in the order
// people read them (apiVersion, kind, metadata, then the rest); every mapping below is sorted by key.
import { createHash, createHmac } from 'node:crypto';
import { stringifyYaml } from '../yaml/write.ts';
import { isObject, type JsonValue, type KubeObject } from './manifest.ts';

const TOP = ['apiVersion', 'kind', 'metadata'];
const METADATA = ['name', 'namespace'];

function sortedCopy(value: JsonValue, first: readonly string[] = []): JsonValue {
  if (Array.isArray(value)) return value.map((v) => sortedCopy(v));
  if (!isObject(value)) return value;
  const keys = Object.keys(value).sort((a, b) => {
    const ia = first.indexOf(a);
    const ib = first.indexOf(b);
    if (ia !== -1 || ib !== -1) return (ia === -1 ? first.length : ia) - (ib === -1 ? first.length : ib);
    return a < b ? -1 : a > b ? 1 : 0;
  });
  const out: { [key: string]: JsonValue } = {};
  for (const key of keys) {
    const v = value[key];
    if (v === undefined) continue;
    out[key] = sortedCopy(v, key === 'metadata' && first === TOP ? METADATA : []);
  }
  return out;
}

export function canonical(obj: KubeObject): KubeObject {
  return sortedCopy(obj as unknown as JsonValue, TOP) as unknown as KubeObject;
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

export function toYaml(objects: readonly KubeObject[]): string {
  return objects.map((o) => stringifyYaml(canonical(o))).join('---\n');
}
