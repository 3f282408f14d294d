// Taking over what a client-side `kubectl apply` owns, as kubectl does on its first server-side apply (client-go's
// util/csaupgrade, called by kubectl's migrateToSSAIfNecessary). Fields a client-side apply set are owned by
// `kubectl-client-side-apply` with an Update operation; an object whose managed fields were empty when it was first
// applied server-side has them under `before-first-apply`. Server-side apply removes only what its own manager
// owned, so without this a field later removed from Git would stay on the live object forever.
// The rewrite of metadata.managedFields is sent as one JSON patch guarded by the resourceVersion it was computed
// from. Only those two managers are merged (by exact name, main resource, Update): fields another manager changed
// since are that manager's and stay so. kubectl's last-applied-configuration annotation goes in the same patch, as
// Flux's ssa package removes it: nothing keeps it up to date any more, and a later client-side apply would compute
// its three-way merge from a stale base (for a Secret, it also holds every value in clear).
// Pure: what the patch is; src/kube/apply.ts sends it.
import type { JsonValue, KubeObject } from '../render/manifest.ts';

/** The Update managers whose fields mooring's field manager takes over, in the order they are merged. */
export const CLIENT_SIDE_MANAGERS = ['kubectl-client-side-apply', 'before-first-apply'] as const;

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** A FieldsV1 trie: `{"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}`. */
export interface FieldsTrie {
  [key: string]: FieldsTrie;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: FieldsTrie;
  subresource?: string;
}

/** What taking over changes on one object: the managers merged, and whether the annotation went. */
export interface TakeOver {
  managers: string[];
  lastApplied: boolean;
}

export interface TakeOverPatch extends TakeOver {
  /** RFC 6902 operations: managed fields, then the resourceVersion guard, then the annotations. */
  patch: JsonValue[];
}

/** The union of two field sets (fieldpath.Set.Union): a key is in the result if it is in either. */
export function unionFields(a: FieldsTrie | undefined, b: FieldsTrie | undefined): FieldsTrie {
  const out: FieldsTrie = {};
  for (const key of [...new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])].sort())
    out[key] = unionFields(a?.[key], b?.[key]);
  return out;
}

function isUpdateOf(entry: ManagedFieldsEntry, manager: string): boolean {
  return entry.manager === manager && entry.operation === 'Update' && !entry.subresource;
}

/**
 * The managed fields with `csaManager`'s entries merged into `ssaManager`'s Apply entry, as csaupgrade's
 * upgradedManagedFields does: the Apply entry (or, when there is none, the newest `csaManager` entry renamed to it)
 * gets the union with the `csaManager` entry of its apiVersion; every `csaManager` entry then goes. Entries of other
 * managers are returned as they were. Undefined when `csaManager` has no entry.
 */
export function mergeManager(
  entries: readonly ManagedFieldsEntry[],
  csaManager: string,
  ssaManager: string,
): ManagedFieldsEntry[] | undefined {
  const firstCsa = entries.findIndex((e) => isUpdateOf(e, csaManager));
  if (firstCsa === -1) return undefined;
  const copy = entries.map((e) => ({ ...e }));
  let target = copy.findIndex((e) => e.manager === ssaManager && e.operation === 'Apply' && !e.subresource);
  if (target === -1) {
    // The list is newest first: the newest client-side entry becomes the Apply entry.
    target = firstCsa;
    copy[target] = { ...copy[target], manager: ssaManager, operation: 'Apply' };
  }
  const into = copy[target] as ManagedFieldsEntry;
  // Field sets of other versions are not comparable with this one's: csaupgrade drops them, and so does this.
  const same = entries.find((e) => isUpdateOf(e, csaManager) && e.apiVersion === into.apiVersion);
  copy[target] = { ...into, fieldsType: 'FieldsV1', fieldsV1: unionFields(into.fieldsV1, same?.fieldsV1) };
  return copy.filter((e) => !isUpdateOf(e, csaManager));
}

/** What taking over would change on `live` (read as it is) for `wanted` (the manifest); undefined when nothing. */
export function pendingTakeOver(
  live: Pick<KubeObject, 'metadata'>,
  wanted: KubeObject,
): TakeOver | undefined {
  const entries = (live.metadata.managedFields ?? []) as ManagedFieldsEntry[];
  const managers = CLIENT_SIDE_MANAGERS.filter((m) => entries.some((e) => isUpdateOf(e, m)));
  const lastApplied = dropsLastApplied(live, wanted);
  return managers.length > 0 || lastApplied ? { managers, lastApplied } : undefined;
}

function dropsLastApplied(live: Pick<KubeObject, 'metadata'>, wanted: KubeObject): boolean {
  return (
    live.metadata.annotations?.[LAST_APPLIED] !== undefined &&
    wanted.metadata.annotations?.[LAST_APPLIED] === undefined
  );
}

/**
 * The JSON patch that gives `ssaManager` the fields of the client-side managers of `live` and drops the
 * last-applied-configuration annotation (unless the manifest sets it), or undefined when there is nothing to do.
 * `add` replaces a member whether or not it is there, so a patch computed from a stale read fails only on its
 * resourceVersion (409, re-read and computed again), never on a path that went (422).
 */
export function takeOverPatch(
  live: Pick<KubeObject, 'metadata'>,
  wanted: KubeObject,
  ssaManager: string,
): TakeOverPatch | undefined {
  let entries = (live.metadata.managedFields ?? []) as ManagedFieldsEntry[];
  const managers: string[] = [];
  for (const manager of CLIENT_SIDE_MANAGERS) {
    const merged = mergeManager(entries, manager, ssaManager);
    if (!merged) continue;
    entries = merged;
    managers.push(manager);
  }
  const lastApplied = dropsLastApplied(live, wanted);
  if (managers.length === 0 && !lastApplied) return undefined;
  const resourceVersion = live.metadata.resourceVersion;
  if (typeof resourceVersion !== 'string' || resourceVersion === '')
    throw new Error('no resourceVersion to guard the take-over of client-side fields with');
  const patch: JsonValue[] = [];
  if (managers.length > 0)
    patch.push({ op: 'add', path: '/metadata/managedFields', value: entries as unknown as JsonValue });
  // `replace`, not `test`: a changed object is then refused by storage with 409 rather than by the patch with 422.
  patch.push({ op: 'replace', path: '/metadata/resourceVersion', value: resourceVersion });
  if (lastApplied) {
    const { [LAST_APPLIED]: _dropped, ...rest } = live.metadata.annotations ?? {};
    patch.push({ op: 'add', path: '/metadata/annotations', value: rest });
  }
  return { patch, managers, lastApplied };
}

/** `fields of kubectl-client-side-apply taken over, kubectl.kubernetes.io/last-applied-configuration dropped`. */
export function describeTakeOver(t: TakeOver): string {
  return [
    ...(t.managers.length > 0 ? [`fields of ${t.managers.join(' and ')} taken over`] : []),
    ...(t.lastApplied ? [`${LAST_APPLIED} dropped`] : []),
  ].join(', ');
}

/**
 * Whether an apply was refused (409) only for fields the client-side managers own: the take-over before the write
 * gives them to mooring, so the dry run of an apply that does not force conflicts may force them.
 */
export function onlyClientSideConflicts(body: unknown): boolean {
  const causes = (body as { details?: { causes?: unknown } } | undefined)?.details?.causes;
  if (!Array.isArray(causes) || causes.length === 0) return false;
  // A StatusCause's type is serialized as `reason`.
  return causes.every((c: { reason?: unknown; message?: unknown }) => {
    const message = typeof c?.message === 'string' ? c.message : '';
    return (
      c?.reason === 'FieldManagerConflict' &&
      CLIENT_SIDE_MANAGERS.some((m) => message.startsWith(`conflict with "${m}"`))
    );
  });
}
