// Who owns which fields of an object: its metadata.managedFields, as a Kubernetes API server of 1.22 or later
// records them for every write (server-side apply, a plain update such as `kubectl edit`, and writes through the
// `/scale` subresource). Entries of the `status` subresource are dropped where they are read: controllers' status
// is never drift.
// The watch cache drops managedFields from its copies (most of an object's bytes); while the agent runs drift
// passes it keeps them, compact, on the copies of objects its own field manager wrote, and only those: Pods and
// ReplicaSets carry no entry of mooring's and keep nothing.

import { parseJson } from '../json.ts';
import { isObject, type KubeObject } from '../render/manifest.ts';

/** A FieldsV1 tree: `f:spec` -> `f:replicas` -> {}; `k:{"name":"web"}` for an item of a keyed list. */
export interface FieldsV1 {
  [step: string]: FieldsV1;
}

export interface FieldOwner {
  manager: string;
  /** `Apply` (server-side apply) or `Update` (any other write). */
  operation: string;
  /** `scale` for a write through /scale; absent for the object itself. */
  subresource?: string;
  fields: FieldsV1;
}

function isFieldsV1(value: unknown): value is FieldsV1 {
  if (!isObject(value)) return false;
  // Each node's steps walked in place: a list of their values per node was most of the time on 20,000 keys.
  for (const step in value) if (!isFieldsV1(value[step])) return false;
  return true;
}

/** The owners a managedFields list names, but those of status; undefined when it is not a list. */
export function fieldOwners(managedFields: unknown): FieldOwner[] | undefined {
  if (!Array.isArray(managedFields)) return undefined;
  const owners: FieldOwner[] = [];
  for (const entry of managedFields) {
    if (!isObject(entry) || typeof entry.manager !== 'string' || typeof entry.operation !== 'string')
      continue;
    if (entry.subresource === 'status') continue;
    if (entry.fieldsType !== undefined && entry.fieldsType !== 'FieldsV1') continue;
    if (!isFieldsV1(entry.fieldsV1)) continue;
    owners.push({
      manager: entry.manager,
      operation: entry.operation,
      ...(typeof entry.subresource === 'string' && entry.subresource !== ''
        ? { subresource: entry.subresource }
        : {}),
      fields: entry.fieldsV1,
    });
  }
  return owners;
}

/** Kept beside a cached copy, out of its enumerable fields: nothing that reads the copy as an object sees it. */
const KEPT = Symbol('fieldOwners');

type WithOwners = KubeObject & { [KEPT]?: string };

/**
 * Keeps the owners of `object` (as the server sent it, before its managedFields are dropped) when `manager` is
 * among them: as one JSON text, a fraction of the parsed tree's size in memory.
 */
export function keepFieldOwners(object: KubeObject, manager: string): void {
  const owners = fieldOwners(object.metadata.managedFields);
  if (!owners?.some((o) => o.manager === manager)) return;
  (object as WithOwners)[KEPT] = JSON.stringify(owners);
}

/** The owners kept with a cached copy, if any. */
export function keptFieldOwners(object: KubeObject): FieldOwner[] | undefined {
  const text = (object as WithOwners)[KEPT];
  // Written by keepFieldOwners from owners already checked.
  return text === undefined ? undefined : (parseJson(text) as FieldOwner[]);
}
