// A small path language for the data tables: `spec.template.spec.containers[*].image` selects every image of a
// pod template. Keys are separated by dots; `[*]` walks every element of an array. Missing parts select nothing.
import { isObject, type JsonObject, type JsonValue } from './manifest.ts';

export interface Selected {
  /** The object or array holding the value, so that the value can be rewritten in place. */
  parent: JsonObject | JsonValue[];
  key: string | number;
  value: JsonValue;
  /** The concrete path, e.g. `spec.template.spec.containers[1].image`. */
  path: string;
}

type Segment = { key: string } | { each: true };

const cache = new Map<string, Segment[]>();

export function parsePath(path: string): Segment[] {
  const cached = cache.get(path);
  if (cached) return cached;
  const segments: Segment[] = [];
  for (const part of path.split('.')) {
    const match = /^([^[\]]*)((?:\[\*\])*)$/.exec(part);
    if (!match || (match[1] === '' && match[2] === ''))
      throw new Error(`invalid path "${path}" at "${part}"`);
    if (match[1]) segments.push({ key: match[1] });
    for (let i = 0; i < (match[2] ?? '').length / 3; i++) segments.push({ each: true });
  }
  cache.set(path, segments);
  return segments;
}

export function select(root: JsonValue, path: string): Selected[] {
  const out: Selected[] = [];
  walk(root, parsePath(path), 0, '', undefined, out);
  return out;
}

function walk(
  value: JsonValue,
  segments: Segment[],
  index: number,
  at: string,
  holder: { parent: JsonObject | JsonValue[]; key: string | number } | undefined,
  out: Selected[],
): void {
  const segment = segments[index];
  if (!segment) {
    if (holder) out.push({ ...holder, value, path: at });
    return;
  }
  if ('each' in segment) {
    if (!Array.isArray(value)) return;
    value.forEach((item, i) => {
      walk(item, segments, index + 1, `${at}[${i}]`, { parent: value, key: i }, out);
    });
    return;
  }
  if (!isObject(value)) return;
  const next = value[segment.key];
  if (next === undefined) return;
  walk(
    next,
    segments,
    index + 1,
    at ? `${at}.${segment.key}` : segment.key,
    { parent: value, key: segment.key },
    out,
  );
}

export function setSelected(selected: Selected, value: JsonValue): void {
  if (Array.isArray(selected.parent)) selected.parent[selected.key as number] = value;
  else selected.parent[selected.key as string] = value;
}
