// The record a deploy without the agent's watch cache (the CLI's) keeps with its inventory of what it last wrote to
// each object: the object's digest as rendered, keyed by the installation's key, and the uid and resourceVersion
// the server answered (src/kube/drift-marks.ts, the marks an agent keeps with its ledger). A later deploy reads the
// live objects as before; one whose uid and resourceVersion are still the recorded ones, and whose rendered digest is
// the recorded one, is left as it is: no dry run, no write (ApplyOptions.unmovedLive). Anything else (no record, a
// record under another key, an object touched since, by a controller or by hand, a changed manifest) takes the dry
// run and write of every object.
//
// The record is untrusted input (a ConfigMap others may edit): its digests are keyed by the installation's key,
// which a writer of ConfigMaps cannot read, so no edit can make a changed manifest look recorded; it is read with
// the marks' own bounds (DriftMarks.restore), and a record that does not parse is no record.

import { parseJson } from '../../json.ts';
import type { ApplyTarget } from '../../kube/apply.ts';
import { DriftMarks, liveMetadata, type SavedMark } from '../../kube/drift-marks.ts';
import type { LiveSummary } from '../../kube/live-state.ts';
import type { KubeObject } from '../../render/manifest.ts';

/** How many objects a record keeps (about 110 bytes each, stored beside the inventory in its ConfigMap). */
export const RECORD_OBJECTS = 4_000;
/** A record longer than this is not written (the ConfigMap holds the inventory too, within the API's 1 MiB). */
export const RECORD_MAX_BYTES = 512 * 1024;

export class AppliedRecord {
  private readonly marks = new DriftMarks();
  private readonly owner: string;
  /** The record as read, to write it only when it changed. */
  private readonly stored: string | undefined;

  constructor(owner: string, key: Buffer, stored: string | undefined) {
    this.owner = owner;
    this.stored = stored;
    this.marks.enabled = true;
    this.marks.useKey(key);
    if (stored === undefined || stored.length > RECORD_MAX_BYTES) return;
    let saved: unknown;
    try {
      saved = parseJson(stored);
    } catch {
      return;
    }
    this.marks.restore(owner, expand(saved), RECORD_OBJECTS);
  }

  /** Forgets what the set no longer holds. */
  retain(objects: readonly KubeObject[]): void {
    this.marks.retain(this.owner, objects);
  }

  /** Whether `live` is the object exactly as this record says the same manifest was last written to it. */
  unmoved(target: ApplyTarget, live: LiveSummary): boolean {
    const mark = this.marks.get(this.owner, target.object);
    const { uid, resourceVersion } = live.metadata;
    return (
      mark !== undefined &&
      resourceVersion !== undefined &&
      mark.resourceVersion === resourceVersion &&
      sameUid(uid, mark.uid) &&
      mark.desired === this.marks.digest(target.object)
    );
  }

  /** Notes that `object` was written and the server holds it as `answer` (or, undefined, holds none of it). */
  written(object: KubeObject, answer: Pick<KubeObject, 'metadata'> | undefined): void {
    this.marks.record(this.owner, object, answer && liveMetadata(answer.metadata));
  }

  /** Notes an object found as `object` renders it (its dry run changed nothing): as if written just now. */
  found(object: KubeObject, live: LiveSummary | undefined): void {
    this.marks.record(
      this.owner,
      object,
      live && {
        uid: live.metadata.uid,
        resourceVersion: live.metadata.resourceVersion,
        generation: live.metadata.generation,
      },
    );
  }

  /**
   * Renews the record of `object` from `copy`, the object as a stable wait last saw it, when it moved since the
   * write only as its controller moves it: the same uid and generation (no change to its spec), and every label and
   * annotation the manifest sets still as it sets them. A workload's status writes then cost the next deploy no dry
   * run. An object without a generation, or moved in anything the manifest sets, keeps its record as written.
   */
  renew(object: KubeObject, copy: Pick<KubeObject, 'metadata'>): void {
    const mark = this.marks.get(this.owner, object);
    const { resourceVersion, generation } = copy.metadata;
    const uid = typeof copy.metadata.uid === 'string' ? copy.metadata.uid : undefined;
    if (
      !mark ||
      typeof resourceVersion !== 'string' ||
      resourceVersion === mark.resourceVersion ||
      !sameUid(uid, mark.uid) ||
      typeof generation !== 'number' ||
      generation !== mark.generation ||
      !holds(copy.metadata.labels, object.metadata.labels) ||
      !holds(copy.metadata.annotations, object.metadata.annotations)
    )
      return;
    this.marks.record(this.owner, object, { uid, resourceVersion, generation });
  }

  /** The record to store, or undefined when it is what was read, or too long to keep. */
  changed(): string | undefined {
    const saved = this.marks.saved(this.owner, RECORD_OBJECTS);
    const text = saved ? JSON.stringify(compact(saved)) : '';
    if (text === (this.stored ?? '') || text.length > RECORD_MAX_BYTES) return undefined;
    return text;
  }
}

/** Whether `live` holds every entry of `set` with the same value. */
function holds(live: Record<string, string> | undefined, set: Record<string, string> | undefined): boolean {
  for (const [key, value] of Object.entries(set ?? {})) if (live?.[key] !== value) return false;
  return true;
}

/** How much of an object's uid a record keeps: enough to tell an object created again under the same name. */
const UID_KEPT = 12;

function sameUid(live: string | undefined, recorded: string | undefined): boolean {
  return (
    live !== undefined && recorded !== undefined && recorded.length >= UID_KEPT && live.startsWith(recorded)
  );
}

/**
 * The record as stored: objects grouped by `group/Kind/namespace/`, each name giving its digest, the start of its
 * uid, its resourceVersion and its generation in one string (about 50 bytes an object, where the ledger's marks
 * take about 150), so that a set of thousands of objects keeps its record beside its inventory.
 */
interface StoredRecord {
  v: 1;
  o: Record<string, Record<string, string>>;
}

function compact(saved: Record<string, SavedMark>): StoredRecord {
  const o: Record<string, Record<string, string>> = {};
  for (const [key, mark] of Object.entries(saved)) {
    const cut = key.lastIndexOf('/') + 1;
    const group = key.slice(0, cut);
    o[group] ??= {};
    o[group][key.slice(cut)] = [
      mark.d,
      mark.u.slice(0, UID_KEPT),
      mark.r,
      ...(mark.g === undefined ? [] : [mark.g]),
    ].join(' ');
  }
  return { v: 1, o };
}

/** The marks of a stored record, as DriftMarks.restore reads them (it checks each); nothing when it is not one. */
function expand(stored: unknown): Record<string, SavedMark> {
  const marks: Record<string, SavedMark> = {};
  if (typeof stored !== 'object' || stored === null || (stored as StoredRecord).v !== 1) return marks;
  const groups = (stored as StoredRecord).o;
  if (typeof groups !== 'object' || groups === null || Array.isArray(groups)) return marks;
  let count = 0;
  for (const [group, names] of Object.entries(groups)) {
    if (typeof names !== 'object' || names === null || Array.isArray(names)) continue;
    for (const [name, value] of Object.entries(names)) {
      if (count === RECORD_OBJECTS) return marks;
      if (typeof value !== 'string') continue;
      const [d = '', u = '', r = '', g, ...rest] = value.split(' ');
      if (rest.length > 0) continue;
      const generation = g === undefined ? undefined : Number(g);
      marks[`${group}${name}`] = { d, u, r, ...(generation === undefined ? {} : { g: generation }) };
      count++;
    }
  }
  return marks;
}
