// Drift marks: what mooring last wrote to each object of a deployment and what the server answered (uid,
// resourceVersion, generation, and what the object's managed fields held apart from mooring's own fields), so
// that a drift pass tells from the watch cache alone which objects moved since, and, from the managed fields of
// the cached copy, whether another manager changed, removed or added a field of what mooring applied
// (ownership-drift.ts). Only what the managed fields cannot tell gets the dry runs of drift.ts.
// Kept in memory beside the agent's watch cache, one set per deployment, trimmed to the deployment's current
// objects on every sync and drift pass, and saved with each release in the deployment's ledger (`saved`), so that an
// agent started again judges from them (`restore`) instead of checking every object. Their digests are keyed by the
// installation's key (`useKey`): a saved mark names no content, and one written by hand matches no manifest.
import { createHmac, randomBytes } from 'node:crypto';
import { FLUX_RECONCILE, reconcileDisabled } from '../render/annotations.ts';
import { type KubeObject, objectKey } from '../render/manifest.ts';
import { type FieldOwner, fieldOwners } from './field-owners.ts';
import type { LiveSummary } from './live-state.ts';
import { type OwnershipReading, readOwnership } from './ownership-drift.ts';

/**
 * What the managed fields held at mooring's write that was not mooring's: fields of the manifest nobody owned
 * (a field the server drops), fields others owned outside it (a controller's). Only what comes after is drift.
 */
export interface Baseline {
  gone: readonly string[];
  added: readonly string[];
}

/** Most marks: nothing but mooring's own (one shared object, so a mark costs no more for it). */
const NOTHING_ELSE: Baseline = Object.freeze({ gone: Object.freeze([]), added: Object.freeze([]) });

export interface DriftMark {
  /** Digest of the object mooring wrote (keyed per process: no content is recoverable from it). */
  desired: string;
  uid: string | undefined;
  resourceVersion: string | undefined;
  generation: number | undefined;
  /** Undefined when the answer carried no managed fields (an object found unchanged, not written). */
  baseline?: Baseline | undefined;
}

/** The parts of a live object (a cached copy, a read, an apply's answer) a mark is compared with. */
export type LiveMetadata = Pick<
  LiveSummary['metadata'],
  'uid' | 'resourceVersion' | 'generation' | 'reconcileDisabled'
>;

/**
 * What the watch cache holds of an object: its copy (undefined: it does not exist), or `unknown` when the cache
 * cannot tell (its type is not listed yet, or its stream failed). `owners` are its managed fields, when the
 * cache keeps them (src/kube/field-owners.ts).
 */
export type CachedCopy =
  | { metadata: LiveMetadata; owners?: FieldOwner[] | undefined }
  | undefined
  | 'unknown';

/** The identity and versions of an object's metadata as the server sent it. */
export function liveMetadata(metadata: KubeObject['metadata']): LiveMetadata {
  const { uid, resourceVersion, generation } = metadata;
  return {
    ...(typeof uid === 'string' ? { uid } : {}),
    ...(typeof resourceVersion === 'string' ? { resourceVersion } : {}),
    ...(typeof generation === 'number' ? { generation } : {}),
    ...(reconcileDisabled(metadata.annotations) ? { reconcileDisabled: true as const } : {}),
  };
}

function baselineOf(reading: OwnershipReading): Baseline {
  if (reading.gone.length === 0 && reading.added.length === 0) return NOTHING_ELSE;
  return { gone: reading.gone, added: reading.added.map((a) => a.path) };
}

/** The baseline of an object as the server answered or holds it (its managed fields), if it has any. */
export function baselineFrom(
  manifest: KubeObject,
  managedFields: unknown,
  fieldManager: string,
): Baseline | undefined {
  const owners = fieldOwners(managedFields);
  const reading = owners && readOwnership(manifest, owners, fieldManager);
  return reading && baselineOf(reading);
}

/**
 * What a drift pass does with an object: nothing (`quiet`: it did not move; `clean`: it moved, and its managed
 * fields say nothing of the manifest's was touched: it is marked anew), put it back (`drifted`, from the managed
 * fields alone), or `check` it with the dry runs of drift.ts, where neither the mark nor the copy can tell.
 */
export type Judgement =
  | { verdict: 'quiet'; why: string }
  | { verdict: 'check'; why: string }
  | { verdict: 'clean'; why: string; baseline: Baseline }
  | { verdict: 'drifted'; why: string; fields: string[]; added: string[]; by: string[] };

/** Judges an object of the manifest from its mark and its cached copy. Pure. */
export function judgeCopy(
  mark: DriftMark | undefined,
  manifest: KubeObject,
  cached: CachedCopy,
  fieldManager: string,
  /** The manifest's digest under the marks' key (DriftMarks.digest). */
  desired = desiredDigest(manifest),
): Judgement {
  if (!mark) return { verdict: 'check', why: 'no write of it seen since the agent started' };
  if (mark.desired !== desired)
    return { verdict: 'check', why: 'its manifest changed since mooring wrote it' };
  if (cached === 'unknown') return { verdict: 'check', why: 'the watch cache cannot tell' };
  if (cached === undefined) return { verdict: 'check', why: 'not in the watch cache (deleted?)' };
  const live = cached.metadata;
  if (live.reconcileDisabled) return { verdict: 'quiet', why: `${FLUX_RECONCILE}: disabled on it` };
  if (mark.uid !== undefined && live.uid !== mark.uid)
    return { verdict: 'check', why: 'deleted and created again' };
  if (mark.resourceVersion !== undefined && live.resourceVersion === mark.resourceVersion)
    return { verdict: 'quiet', why: 'unchanged since mooring wrote it' };
  const reading = cached.owners && readOwnership(manifest, cached.owners, fieldManager);
  if (!reading) {
    // No managed fields to read (or none of mooring's): controllers write status, which moves the
    // resourceVersion; a change of the spec moves the generation of kinds that have one.
    if (typeof mark.generation === 'number' && live.generation === mark.generation)
      return { verdict: 'quiet', why: 'only its status changed' };
    return { verdict: 'check', why: 'changed since mooring wrote it' };
  }
  const { baseline } = mark;
  const knownGone = baseline && new Set(baseline.gone);
  const knownAdded = baseline && new Set(baseline.added);
  const gone = knownGone ? reading.gone.filter((p) => !knownGone.has(p)) : reading.gone;
  const added = knownAdded ? reading.added.filter((a) => !knownAdded.has(a.path)) : reading.added;
  // Fields nobody owns, or others own outside the manifest, may have been so at mooring's write already.
  if (!baseline && (gone.length > 0 || added.length > 0))
    return { verdict: 'check', why: 'what its managed fields held at mooring’s write is not known' };
  const fields = [...reading.taken.map((t) => t.path), ...gone];
  if (fields.length === 0 && added.length === 0)
    return {
      verdict: 'clean',
      why: 'changed, but none of the fields the manifest sets',
      baseline: baselineOf(reading),
    };
  const by = [...new Set([...reading.taken, ...added].flatMap((t) => t.by))].sort();
  return {
    verdict: 'drifted',
    why: 'its managed fields show fields of the manifest changed by another manager',
    fields,
    added: added.map((a) => a.path),
    by,
  };
}

const KEY = randomBytes(32);

/**
 * The digest a mark holds of an object as rendered (canonical key order: the same render gives the same bytes),
 * keyed by `key` (by default one of the process's own).
 */
export function desiredDigest(object: KubeObject, key: Buffer = KEY): string {
  return createHmac('sha256', key).update(JSON.stringify(object)).digest('base64url').slice(0, 22);
}

/** A mark as the ledger keeps it (src/report/ledger.ts): short names, as a deployment may hold hundreds. */
export interface SavedMark {
  /** DriftMark.desired */
  d: string;
  u: string;
  r: string;
  g?: number;
  b?: Baseline;
}

/** How many marks of one deployment are saved (the ledger's bound on the objects a release names). */
export const SAVED_MARKS = 300;
const SAVED_FIELD_PATHS = 50;
const SAVED_TEXT = 512;

const text = (value: unknown, max = SAVED_TEXT): value is string =>
  typeof value === 'string' && value.length > 0 && value.length <= max;
const paths = (value: unknown): value is string[] =>
  Array.isArray(value) && value.length <= SAVED_FIELD_PATHS && value.every((p) => text(p));

/** A saved mark read back, or undefined when it is not one (the ledger is a ConfigMap anyone allowed may edit). */
function savedMark(value: unknown): DriftMark | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { d, u, r, g, b } = value as Record<string, unknown>;
  if (!text(d, 64) || !text(u, 64) || !text(r, 64)) return undefined;
  if (g !== undefined && !Number.isSafeInteger(g)) return undefined;
  let baseline: Baseline | undefined;
  if (b !== undefined) {
    const { gone, added } = (typeof b === 'object' && b !== null ? b : {}) as Record<string, unknown>;
    if (!paths(gone) || !paths(added)) return undefined;
    baseline = gone.length === 0 && added.length === 0 ? NOTHING_ELSE : { gone, added };
  }
  return { desired: d, uid: u, resourceVersion: r, generation: g as number | undefined, baseline };
}

export class DriftMarks {
  /** By deployment (the inventory's owner), then by object key. */
  private readonly owners = new Map<string, Map<string, DriftMark>>();
  /** Off until an agent turns them on (keepDriftMarks): a CLI's deploy marks nothing. */
  enabled = false;
  private key: Buffer = KEY;
  /** Whether the key is the installation's (useKey): only then are marks worth saving. */
  private keyed = false;

  /**
   * Keys the marks' digests by the installation's key (the content hash key, src/kube/hash-key.ts; a key derived
   * from it, so the two uses never share one), so that saved marks still match after a restart. Marks made under
   * another key are forgotten.
   */
  useKey(installationKey: Buffer): void {
    const key = createHmac('sha256', installationKey).update('mooring drift marks').digest();
    if (this.keyed && key.equals(this.key)) return;
    this.key = key;
    this.keyed = true;
    this.owners.clear();
  }

  /** The digest of `object` as rendered, under the marks' key. */
  digest(object: KubeObject): string {
    return desiredDigest(object, this.key);
  }

  /**
   * The owner's marks as the ledger keeps them: those that name a uid and a resourceVersion, at most `limit`
   * (SAVED_MARKS for a ledger); undefined when there are none, or when the marks are not under the installation's key.
   */
  saved(owner: string, limit = SAVED_MARKS): Record<string, SavedMark> | undefined {
    const marks = this.owners.get(owner);
    if (!this.enabled || !this.keyed || !marks) return undefined;
    const saved: Record<string, SavedMark> = {};
    let count = 0;
    for (const [key, mark] of marks) {
      if (count === limit) break;
      if (mark.uid === undefined || mark.resourceVersion === undefined) continue;
      const { gone, added } = mark.baseline ?? { gone: [], added: [] };
      saved[key] = {
        d: mark.desired,
        u: mark.uid,
        r: mark.resourceVersion,
        ...(mark.generation !== undefined ? { g: mark.generation } : {}),
        ...(mark.baseline
          ? { b: { gone: gone.slice(0, SAVED_FIELD_PATHS), added: added.slice(0, SAVED_FIELD_PATHS) } }
          : {}),
      };
      count++;
    }
    return count > 0 ? saved : undefined;
  }

  /**
   * Takes back the owner's marks from its ledger (an agent that starts): only under the installation's key, only
   * when this agent holds none of its own for the owner yet (they are newer), and only what reads as a mark (at
   * most `limit`; anything else is left out, and that object is checked). The number taken.
   */
  restore(owner: string, saved: unknown, limit = SAVED_MARKS): number {
    if (!this.enabled || !this.keyed || this.owners.has(owner)) return 0;
    if (typeof saved !== 'object' || saved === null || Array.isArray(saved)) return 0;
    const marks = new Map<string, DriftMark>();
    for (const [key, value] of Object.entries(saved)) {
      if (marks.size === limit) break;
      const mark = text(key, 1024) ? savedMark(value) : undefined;
      if (mark) marks.set(key, mark);
    }
    if (marks.size > 0) this.owners.set(owner, marks);
    return marks.size;
  }

  get(owner: string, object: KubeObject): DriftMark | undefined {
    return this.owners.get(owner)?.get(objectKey(object));
  }

  /**
   * Notes that mooring wrote `object` (or found it as written) and the server holds it as `live`, with what its
   * managed fields held besides mooring's own (`baseline`, when they were read).
   */
  record(
    owner: string,
    object: KubeObject,
    live: LiveMetadata | undefined,
    baseline?: Baseline,
    /** The object's digest, when the caller has it already. */
    desired?: string,
  ): void {
    if (!this.enabled) return;
    let marks = this.owners.get(owner);
    if (!marks) {
      marks = new Map();
      this.owners.set(owner, marks);
    }
    if (!live) {
      marks.delete(objectKey(object));
      return;
    }
    marks.set(objectKey(object), {
      desired: desired ?? this.digest(object),
      uid: live.uid,
      resourceVersion: live.resourceVersion,
      generation: live.generation,
      baseline,
    });
  }

  /**
   * Notes mooring's write of `object`, as `record` does, with one difference: a write of the same manifest to the
   * same object (a drift correction, a sync of an unchanged commit) cannot make a field others added part of the
   * baseline. A hand edit that lands between a pass's judgement and its write is merged into the write by a
   * server-side apply, so the answer shows it; it is still drift. Such a mark keeps only the fields its previous
   * baseline knew and holds no resourceVersion, so the next pass reads the managed fields and puts it back.
   */
  recordWrite(owner: string, object: KubeObject, live: LiveMetadata | undefined, baseline?: Baseline): void {
    const previous = this.get(owner, object);
    // The digest is made once (a large object's JSON is hashed whole).
    let desired: string | undefined;
    if (live && baseline && previous?.baseline && previous.uid === live.uid) {
      desired = this.digest(object);
      const known = new Set(previous.baseline.added);
      if (previous.desired === desired && baseline.added.some((path) => !known.has(path))) {
        const added = baseline.added.filter((path) => known.has(path));
        const { resourceVersion: _, ...rest } = live;
        this.record(owner, object, rest, { gone: baseline.gone, added }, desired);
        return;
      }
    }
    this.record(owner, object, live, baseline, desired);
  }

  /** Forgets the owner's marks of objects it no longer renders (older versions, pruned objects). */
  retain(owner: string, objects: readonly KubeObject[]): void {
    const marks = this.owners.get(owner);
    if (!marks) return;
    const keep = new Set(objects.map(objectKey));
    for (const key of marks.keys()) if (!keep.has(key)) marks.delete(key);
  }

  /** Marks held, for tests and the benchmark. */
  get size(): number {
    let total = 0;
    for (const marks of this.owners.values()) total += marks.size;
    return total;
  }
}
