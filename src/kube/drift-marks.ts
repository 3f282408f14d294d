// Drift marks: what mooring last wrote to each object of a deployment and what the server answered (uid,
// resourceVersion, generation), so that a drift pass tells from the watch cache alone which objects moved since.
// An object whose cached copy still carries the resourceVersion of mooring's own write (or, for kinds whose
// controllers write status, the same generation: status moves the resourceVersion, never the generation) has
// not moved and costs the pass no request; only the others get the dry runs of drift.ts.
// Kept in memory beside the agent's watch cache, one set per deployment, trimmed to the deployment's current
// objects on every drift pass. An agent that starts has none: its first drift pass checks every object, and the
// checks that find nothing record what they read.
import { createHmac, randomBytes } from 'node:crypto';
import { type KubeObject, objectKey } from '../render/manifest.ts';
import type { LiveSummary } from './live-state.ts';

export interface DriftMark {
  /** Digest of the object mooring wrote (keyed per process: no content is recoverable from it). */
  desired: string;
  uid: string | undefined;
  resourceVersion: string | undefined;
  generation: number | undefined;
}

/** The parts of a live object (a cached copy, a read, an apply's answer) a mark is compared with. */
export type LiveMetadata = Pick<LiveSummary['metadata'], 'uid' | 'resourceVersion' | 'generation'>;

/**
 * What the watch cache holds of an object: its copy (undefined: it does not exist), or `unknown` when the cache
 * cannot tell (its type is not listed yet, or its stream failed).
 */
export type CachedCopy = { metadata: LiveMetadata } | undefined | 'unknown';

/** The identity and versions of an object's metadata as the server sent it. */
export function liveMetadata(metadata: KubeObject['metadata']): LiveMetadata {
  const { uid, resourceVersion, generation } = metadata;
  return {
    ...(typeof uid === 'string' ? { uid } : {}),
    ...(typeof resourceVersion === 'string' ? { resourceVersion } : {}),
    ...(typeof generation === 'number' ? { generation } : {}),
  };
}

export type MoveVerdict = { moved: false; why: string } | { moved: true; why: string };

/** Whether an object moved since mooring's last write of it, from its mark and its cached copy. Pure. */
export function movedSince(mark: DriftMark | undefined, desired: string, cached: CachedCopy): MoveVerdict {
  if (!mark) return { moved: true, why: 'no write of it seen since the agent started' };
  if (mark.desired !== desired) return { moved: true, why: 'its manifest changed since mooring wrote it' };
  if (cached === 'unknown') return { moved: true, why: 'the watch cache cannot tell' };
  if (cached === undefined) return { moved: true, why: 'not in the watch cache (deleted?)' };
  const live = cached.metadata;
  if (mark.uid !== undefined && live.uid !== mark.uid)
    return { moved: true, why: 'deleted and created again' };
  if (mark.resourceVersion !== undefined && live.resourceVersion === mark.resourceVersion)
    return { moved: false, why: 'unchanged since mooring wrote it' };
  // Controllers write status, which moves the resourceVersion; any change of the spec (a `kubectl scale` through
  // /scale included) moves the generation of kinds that have one.
  if (typeof mark.generation === 'number' && live.generation === mark.generation)
    return { moved: false, why: 'only its status changed' };
  return { moved: true, why: 'changed since mooring wrote it' };
}

const KEY = randomBytes(32);

/** The digest a mark holds of an object as rendered (canonical key order: the same render gives the same bytes). */
export function desiredDigest(object: KubeObject): string {
  return createHmac('sha256', KEY).update(JSON.stringify(object)).digest('base64url').slice(0, 22);
}

export class DriftMarks {
  /** By deployment (the inventory's owner), then by object key. */
  private readonly owners = new Map<string, Map<string, DriftMark>>();
  /** Off until the agent runs drift passes: without them, marks would only cost memory. */
  enabled = false;

  get(owner: string, object: KubeObject): DriftMark | undefined {
    return this.owners.get(owner)?.get(objectKey(object));
  }

  /** Notes that mooring wrote `object` (or found it as written) and the server holds it as `live`. */
  record(owner: string, object: KubeObject, live: LiveMetadata | undefined): void {
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
      desired: desiredDigest(object),
      uid: live.uid,
      resourceVersion: live.resourceVersion,
      generation: live.generation,
    });
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
