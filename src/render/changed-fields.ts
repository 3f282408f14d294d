// The fields in which two versions of one object differ, named as people read them: `spec.replicas`,
// `spec.template.spec.containers[name=web].env[name=DEBUG]`. Lists of named items are matched by name, other lists
// by position. Only names are returned, never values, so the result may be logged for a Secret too.
import { isObject, type JsonValue } from './manifest.ts';

/** Top-level parts that are the server's bookkeeping, not what a manifest says. */
const BOOKKEEPING = new Set(['metadata', 'status']);

/** Paths (at most `limit`) where `before` and `after` differ; metadata and status are not compared. */
export function changedFields(before: JsonValue, after: JsonValue, limit = 50): string[] {
  const paths: string[] = [];
  const walk = (a: JsonValue | undefined, b: JsonValue | undefined, path: string): void => {
    if (paths.length >= limit) return;
    if (isObject(a) && isObject(b)) {
      for (const key of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
        if (path === '' && BOOKKEEPING.has(key)) continue;
        walk(a[key], b[key], path ? `${path}.${key}` : key);
      }
      return;
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      const named = (list: JsonValue[]) =>
        list.every((item) => isObject(item) && typeof item.name === 'string')
          ? new Map(list.map((item) => [String((item as { name: string }).name), item]))
          : undefined;
      const na = named(a);
      const nb = named(b);
      if (na && nb) {
        for (const name of [...new Set([...na.keys(), ...nb.keys()])]) {
          const item = `${path}[name=${name}]`;
          // An item added or removed is named as a whole, not by its fields.
          if (!na.has(name) || !nb.has(name)) {
            if (paths.length < limit) paths.push(item);
          } else walk(na.get(name), nb.get(name), item);
        }
        return;
      }
      for (let i = 0; i < Math.max(a.length, b.length); i++) walk(a[i], b[i], `${path}[${i}]`);
      return;
    }
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    // Something added or removed whole: named by its items (`env[name=DEBUG]`) or keys, one level down.
    const whole = a === undefined ? b : b === undefined ? a : undefined;
    if (
      Array.isArray(whole) &&
      whole.length > 0 &&
      whole.every((i) => isObject(i) && typeof i.name === 'string')
    ) {
      for (const item of whole)
        if (paths.length < limit) paths.push(`${path}[name=${String((item as { name: string }).name)}]`);
      return;
    }
    if (isObject(whole) && Object.keys(whole).length > 0) {
      for (const key of Object.keys(whole).sort()) if (paths.length < limit) paths.push(`${path}.${key}`);
      return;
    }
    paths.push(path);
  };
  walk(before, after, '');
  return paths;
}
