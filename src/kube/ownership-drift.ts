// What an object's managed fields say about drift, read without asking the server. Pure.
// mooring applies with server-side apply, so right after its write its field manager owns every field its
// manifest sets. A later write by anyone else moves ownership of what it changed: `kubectl scale` takes
// `spec.replicas` (an Update of subresource `scale`), `kubectl edit` takes the label or env value it changed and
// owns the env entry it added (an Update of `kubectl-edit`); a field removed by hand leaves every owner. So:
// - taken: a field the manifest sets that mooring no longer owns and another manager does: changed by hand;
// - gone: a field the manifest sets that no manager owns any more: removed by hand;
// - added: a field outside metadata the manifest does not set that another manager owns: added by hand, unless
//   the table below says whose it is (an autoscaler's replicas when the manifest leaves them out).
// Controllers' status (the `status` subresource, and `status` itself) and fields nobody wrote (defaults) are
// never read. Paths are named as src/render/changed-fields.ts names them: `spec.template.spec.containers[name=web]`.
import { byCodeUnit } from '../arrays.ts';
import { parseJson } from '../json.ts';
import { isObject, type JsonValue, type KubeObject } from '../render/manifest.ts';
import type { FieldOwner, FieldsV1 } from './field-owners.ts';
import { withApplyDefaults } from './normalize.ts';

export interface OwnedPath {
  path: string;
  /** The managers that own it now. */
  by: string[];
}

export interface OwnershipReading {
  taken: OwnedPath[];
  gone: string[];
  added: OwnedPath[];
}

/** Fields other managers own that the manifest does not set and that are theirs, not drift. */
const NOT_DRIFT: { kind?: string; path: RegExp; why: string }[] = [
  // Only ever reached when the manifest leaves spec.replicas out (else it would be taken, not added).
  { path: /^spec\.replicas$/, why: "an autoscaler's Pod count" },
  { kind: 'ServiceAccount', path: /^secrets(\[|$)/, why: "the token controller's" },
];

type Step = { field: string } | { item: JsonValue; index: number };

const keyCache = new Map<string, Record<string, JsonValue>>();

function parsedKey(step: string): Record<string, JsonValue> | undefined {
  let key = keyCache.get(step);
  if (!key) {
    try {
      const parsed: unknown = parseJson(step.slice(2));
      if (!isObject(parsed)) return undefined;
      key = parsed;
    } catch {
      return undefined;
    }
    if (keyCache.size > 10_000) keyCache.clear();
    keyCache.set(step, key);
  }
  return key;
}

const same = (a: JsonValue | undefined, b: JsonValue | undefined) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Whether a list item is the one a `k:` step names. A key field the item leaves out counts as matching: the
 * server fills some in (a port's protocol) and keys the item by the value it filled in.
 */
function matchesKey(item: JsonValue, key: Record<string, JsonValue>, exact: boolean): boolean {
  if (!isObject(item)) return false;
  return Object.entries(key).every(([field, value]) =>
    item[field] === undefined ? !exact : same(item[field], value),
  );
}

/** The child of a list's node that stands for `item`, and its step. */
function childFor(node: FieldsV1, item: JsonValue, index: number): [string, FieldsV1] | undefined {
  if (!isObject(item)) {
    const step = `v:${JSON.stringify(item)}`;
    return node[step] ? [step, node[step]] : undefined;
  }
  const keys = keyedSteps(node);
  // An item with every field of a key: found by their values, the first such step as a scan would find it.
  let found: string | undefined;
  for (const group of keys.groups) {
    const values = keyValues(item, group.names);
    const step = values === undefined ? undefined : group.steps.get(values);
    if (step !== undefined && (found === undefined || keys.order(step) < keys.order(found))) found = step;
  }
  if (found !== undefined) return [found, node[found] as FieldsV1];
  // One that leaves a key field out (the server fills some in): the first step whose other fields it matches.
  for (const step of keys.steps) {
    const key = parsedKey(step);
    if (key && matchesKey(item, key, false)) return [step, node[step] as FieldsV1];
  }
  const step = `i:${index}`;
  return node[step] ? [step, node[step]] : undefined;
}

/**
 * The values of an item's fields `names` as one text (JSON of the list of them), undefined when one is absent: two
 * items (or an item and a key) give the same text exactly when each of those fields is the same JSON.
 */
function keyValues(
  item: Record<string, JsonValue | undefined>,
  names: readonly string[],
): string | undefined {
  const values: JsonValue[] = [];
  for (const name of names) {
    const value = item[name];
    if (value === undefined) return undefined;
    values.push(value);
  }
  return JSON.stringify(values);
}

/** The names of a key's fields, in one order whatever order the step writes them in. */
const fieldNames = (key: Record<string, JsonValue>): string[] => Object.keys(key).sort(byCodeUnit);

/**
 * The `k:` steps of a list's node, made once per node: in order, and by the values of their key fields for each set
 * of field names (a list of n items asked each of its n steps for each item: 3,000 env entries, 1.2 s).
 */
interface KeyedSteps {
  steps: string[];
  groups: { names: string[]; steps: Map<string, string> }[];
  order: (step: string) => number;
}
let keyedOf = new WeakMap<FieldsV1, KeyedSteps>();
function keyedSteps(node: FieldsV1): KeyedSteps {
  let keyed = keyedOf.get(node);
  if (keyed) return keyed;
  const steps = Object.keys(node).filter((s) => s.startsWith('k:'));
  const groups = new Map<string, { names: string[]; steps: Map<string, string> }>();
  const position = new Map<string, number>();
  steps.forEach((step, i) => {
    position.set(step, i);
    const key = parsedKey(step);
    if (!key) return;
    const names = fieldNames(key);
    const id = JSON.stringify(names);
    let group = groups.get(id);
    if (!group) {
      group = { names, steps: new Map() };
      groups.set(id, group);
    }
    const values = keyValues(key, names) as string;
    if (!group.steps.has(values)) group.steps.set(values, step);
  });
  keyed = { steps, groups: [...groups.values()], order: (step) => position.get(step) ?? steps.length };
  keyedOf.set(node, keyed);
  return keyed;
}

/** A list's items by the values of a set of key fields (the first item for each), made once per list and set. */
let itemsByKey = new WeakMap<JsonValue[], Map<string, Map<string, JsonValue>>>();
function itemByKey(list: JsonValue[], key: Record<string, JsonValue>): JsonValue | undefined {
  const names = fieldNames(key);
  const id = JSON.stringify(names);
  let sets = itemsByKey.get(list);
  if (!sets) {
    sets = new Map();
    itemsByKey.set(list, sets);
  }
  let items = sets.get(id);
  if (!items) {
    items = new Map();
    for (const item of list) {
      if (!isObject(item)) continue;
      const values = keyValues(item, names);
      if (values !== undefined && !items.has(values)) items.set(values, item);
    }
    sets.set(id, items);
  }
  return items.get(keyValues(key, names) as string);
}

/** A set list's items by their `v:` step (the first item for each), made once per list. */
let itemsByValue = new WeakMap<JsonValue[], Map<string, JsonValue>>();
function itemByValue(list: JsonValue[], step: string): JsonValue | undefined {
  let items = itemsByValue.get(list);
  if (!items) {
    items = new Map();
    for (const item of list) {
      const at = `v:${JSON.stringify(item)}`;
      if (!items.has(at)) items.set(at, item);
    }
    itemsByValue.set(list, items);
  }
  return items.get(step);
}

function scalar(value: JsonValue | undefined): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** `[name=web]`, `[containerPort=8080,protocol=TCP]`, `[finalizer]`, `[2]`. */
function stepLabel(step: string): string {
  if (step.startsWith('f:')) return `.${step.slice(2)}`;
  if (step.startsWith('k:')) {
    const key = parsedKey(step) ?? {};
    return `[${Object.entries(key)
      .map(([f, v]) => `${f}=${scalar(v)}`)
      .join(',')}]`;
  }
  if (step.startsWith('v:')) {
    try {
      return `[${scalar(parseJson(step.slice(2)) as JsonValue)}]`;
    } catch {
      return `[${step.slice(2)}]`;
    }
  }
  return `[${step.slice(2)}]`;
}

/** The label of an item no owner's node stands for: by the key fields its siblings are keyed by, or its name. */
function itemLabel(node: FieldsV1, item: JsonValue, index: number): string {
  if (!isObject(item)) return `[${scalar(item)}]`;
  const sibling = Object.keys(node).find((s) => s.startsWith('k:'));
  const fields = sibling ? Object.keys(parsedKey(sibling) ?? {}) : ['name'];
  if (fields.length > 0 && fields.every((f) => item[f] !== undefined))
    return `[${fields.map((f) => `${f}=${scalar(item[f])}`).join(',')}]`;
  return `[${index}]`;
}

const join = (path: string, label: string) => (path === '' ? label.replace(/^\./, '') : `${path}${label}`);
/** Whether a node owns nothing below it (no step in it), without listing its steps. */
function isLeaf(node: FieldsV1): boolean {
  for (const _ in node) return false;
  return true;
}

/** Whether `tree` owns the field the steps lead to (or all of something that holds it). */
function owns(tree: FieldsV1, steps: readonly Step[]): boolean {
  if (isLeaf(tree)) return false; // an entry that owns nothing
  let node = tree;
  for (const step of steps) {
    if (isLeaf(node)) return true;
    const next = 'field' in step ? node[`f:${step.field}`] : childFor(node, step.item, step.index)?.[1];
    if (!next) return false;
    node = next;
  }
  return true;
}

/** The parts of the manifest walked: what is outside metadata, and its labels and annotations. */
function walked(object: KubeObject): [string, JsonValue][] {
  const parts: [string, JsonValue][] = [];
  for (const [key, value] of Object.entries(object)) {
    if (key === 'apiVersion' || key === 'kind' || key === 'status' || value === undefined) continue;
    if (key !== 'metadata') parts.push([key, value as JsonValue]);
  }
  const { labels, annotations } = object.metadata;
  const metadata: Record<string, JsonValue> = {
    ...(labels ? { labels } : {}),
    ...(annotations ? { annotations } : {}),
  };
  if (Object.keys(metadata).length > 0) parts.push(['metadata', metadata]);
  return parts.sort(([a], [b]) => byCodeUnit(a, b));
}

/**
 * What the manifest sets and `own` does not own: [name, steps] of each such field, outermost. The walk keeps one
 * stack of steps and one of labels and copies them only for a field it reports: a ConfigMap of 20,000 keys, all
 * owned, made no array or string per key (it made several, a third of a second of the agent's event loop).
 */
function unowned(object: KubeObject, own: FieldsV1): [string, Step[]][] {
  const found: [string, Step[]][] = [];
  const steps: Step[] = [];
  const labels: string[] = [];
  const here = (last?: string): string => {
    const path = last === undefined ? labels.join('') : labels.join('') + last;
    return path.startsWith('.') ? path.slice(1) : path;
  };
  const report = (label: string, step?: Step): void => {
    found.push([here(label), step ? [...steps, step] : [...steps]]);
  };
  const walk = (value: JsonValue, node: FieldsV1): void => {
    if (isLeaf(node)) return; // owned whole (an atomic map or list)
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) {
        const item = value[index] as JsonValue;
        const child = childFor(node, item, index);
        const step = { item, index };
        if (!child) {
          report(itemLabel(node, item, index), step);
          continue;
        }
        steps.push(step);
        labels.push(stepLabel(child[0]));
        walk(item, child[1]);
        steps.pop();
        labels.pop();
      }
      return;
    }
    if (!isObject(value)) return;
    const keys = Object.keys(value);
    if (!inOrder(keys)) keys.sort();
    for (const key of keys) {
      const field = value[key];
      if (field === null || field === undefined) continue; // null unsets: nothing to own
      const child = node[`f:${key}`];
      steps.push({ field: key });
      labels.push(`.${key}`);
      if (child) walk(field, child);
      // A list not owned at all is named by its items, as changed-fields.ts names a list added or removed whole.
      else if (Array.isArray(field) && field.length > 0)
        field.forEach((item, index) => {
          report(itemLabel({}, item, index), { item, index });
        });
      else found.push([here(), [...steps]]);
      steps.pop();
      labels.pop();
    }
  };
  // The root is no atomic map: an entry that owns nothing there owns none of it.
  walk(Object.fromEntries(walked(object)), isLeaf(own) ? { '.': {} } : own);
  return found;
}

/** Whether keys come sorted already (the default sort's order), as a rendered manifest's do. */
function inOrder(keys: readonly string[]): boolean {
  for (let i = 1; i < keys.length; i++) if ((keys[i - 1] as string) > (keys[i] as string)) return false;
  return true;
}

/** What a step leads to in the manifest, undefined when it sets nothing there. */
function follow(value: JsonValue | undefined, step: string): JsonValue | undefined {
  if (step.startsWith('f:')) {
    const field = isObject(value) ? value[step.slice(2)] : undefined;
    return field === null ? undefined : field;
  }
  if (!Array.isArray(value)) return undefined;
  if (step.startsWith('k:')) {
    const key = parsedKey(step);
    if (!key) return undefined;
    return itemByKey(value, key) ?? value.find((i) => matchesKey(i, key, false));
  }
  if (step.startsWith('v:')) return itemByValue(value, step);
  if (step.startsWith('i:')) return value[Number(step.slice(2))];
  return undefined;
}

/** What `tree` owns outside metadata and status that the manifest does not set: the outermost such paths. */
function beyond(object: KubeObject, tree: FieldsV1): string[] {
  const found: string[] = [];
  const walk = (node: FieldsV1, value: JsonValue | undefined, path: string): void => {
    for (const [step, child] of Object.entries(node)) {
      if (step === '.') continue;
      if (path === '' && (step === 'f:metadata' || step === 'f:status')) continue;
      const next = follow(value, step);
      const at = join(path, stepLabel(step));
      if (next !== undefined) {
        walk(child, next, at);
        continue;
      }
      // A field added whole is named by its items or keys, one level down, as changed-fields.ts names it (an env
      // list added by `kubectl set env`: `env[name=DEBUG]`); an item of a list, whole.
      const inside = step.startsWith('f:') ? Object.keys(child).filter((s) => s !== '.') : [];
      for (const p of inside.length > 0 ? inside.map((s) => `${at}${stepLabel(s)}`) : [at])
        if (!NOT_DRIFT.some((r) => (r.kind === undefined || r.kind === object.kind) && r.path.test(p)))
          found.push(p);
    }
  };
  walk(tree, object as unknown as JsonValue, '');
  return found;
}

/**
 * Reads the owners of a live object against the manifest mooring applied (`manager`: mooring's field manager);
 * undefined when mooring owns nothing there (it never applied it, or only replaced it by another path): then
 * the managed fields cannot tell.
 */
export function readOwnership(
  manifest: KubeObject,
  owners: readonly FieldOwner[],
  manager: string,
): OwnershipReading | undefined {
  // The indexes of lists and nodes hold for one reading: nothing is changed while it reads, anything may be after.
  keyedOf = new WeakMap();
  itemsByKey = new WeakMap();
  itemsByValue = new WeakMap();
  const own = owners.filter((o) => o.manager === manager);
  if (own.length === 0) return undefined;
  const others = owners.filter((o) => o.manager !== manager);
  // As it was sent: with the defaults the server keys items by (a port's protocol).
  const applied = withApplyDefaults(manifest);
  const reading: OwnershipReading = { taken: [], gone: [], added: [] };
  for (const [path, steps] of unowned(applied, merged(own))) {
    const by = managers(others.filter((o) => owns(o.fields, steps)));
    if (by.length > 0) reading.taken.push({ path, by });
    else reading.gone.push(path);
  }
  const added = new Map<string, Set<string>>();
  for (const other of others)
    for (const path of beyond(applied, other.fields)) {
      const by = added.get(path) ?? new Set();
      by.add(other.manager);
      added.set(path, by);
    }
  for (const [path, by] of [...added].sort(([a], [b]) => byCodeUnit(a, b)))
    reading.added.push({ path, by: [...by].sort() });
  return reading;
}

function managers(owners: readonly FieldOwner[]): string[] {
  return [...new Set(owners.map((o) => o.manager))].sort();
}

/** One tree of what several entries own (an Apply and an Update of the same manager). */
function merged(owners: readonly FieldOwner[]): FieldsV1 {
  if (owners.length === 1) return (owners[0] as FieldOwner).fields;
  const into = (a: FieldsV1, b: FieldsV1): FieldsV1 => {
    // A leaf owns all below it: it stays a leaf.
    if (isLeaf(a) || isLeaf(b)) return {};
    const out: FieldsV1 = { ...a };
    for (const [step, child] of Object.entries(b)) out[step] = out[step] ? into(out[step], child) : child;
    return out;
  };
  return owners.map((o) => o.fields).reduce(into);
}
