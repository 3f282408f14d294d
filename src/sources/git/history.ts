// Ancestry in a shallow object store. The cache holds only what shallow fetches brought, so a walk from a
// commit down its parents can reach a commit whose parents were never fetched: then the answer is "unknown",
// not "no", and the caller may deepen the history and ask again.
import { StalledError } from '../../errors.ts';
import { type ObjectStore, readCommit } from './tree.ts';

export type Ancestry = 'ancestor' | 'not-ancestor' | 'unknown';

/** Whether `ancestor` is reachable from `commit` through parents (a commit is its own ancestor). */
export async function ancestry(
  store: ObjectStore,
  ancestor: string,
  commit: string,
  maxCommits: number,
): Promise<Ancestry> {
  if (ancestor === commit) return 'ancestor';
  const seen = new Set<string>([commit]);
  let queue = [commit];
  let cutOff = false;
  while (queue.length > 0) {
    const next: string[] = [];
    for (const oid of queue) {
      const parents = await parentsOf(store, oid);
      if (parents === undefined) {
        // Not in the store: the shallow boundary (or a history never fetched) lies here.
        cutOff = true;
        continue;
      }
      for (const parent of parents) {
        if (parent === ancestor) return 'ancestor';
        if (seen.has(parent)) continue;
        if (seen.size >= maxCommits) return 'unknown';
        seen.add(parent);
        next.push(parent);
      }
    }
    queue = next;
  }
  return cutOff ? 'unknown' : 'not-ancestor';
}

async function parentsOf(store: ObjectStore, oid: string): Promise<string[] | undefined> {
  try {
    return (await readCommit(store, oid)).parent;
  } catch (error) {
    if (error instanceof StalledError) throw error;
    return undefined;
  }
}

/**
 * The commits reachable from `commit` through parents, not counting it, up to the first verified one on each line
 * of history (`verified`) or a root: what `verify.mode: all` checks since the last verified commit. `cut-off`: the
 * shallow boundary hides part of that history; `too-many`: more than `maxCommits` of them.
 */
export async function commitsSince(
  store: ObjectStore,
  commit: string,
  verified: (oid: string) => boolean,
  maxCommits: number,
): Promise<{ outcome: 'complete' | 'cut-off' | 'too-many'; commits: string[] }> {
  const seen = new Set<string>([commit]);
  const commits: string[] = [];
  let queue = [commit];
  while (queue.length > 0) {
    const next: string[] = [];
    for (const oid of queue) {
      const parents = await parentsOf(store, oid);
      if (parents === undefined) return { outcome: 'cut-off', commits };
      for (const parent of parents) {
        if (seen.has(parent) || verified(parent)) continue;
        if (commits.length >= maxCommits) return { outcome: 'too-many', commits };
        seen.add(parent);
        commits.push(parent);
        next.push(parent);
      }
    }
    queue = next;
  }
  return { outcome: 'complete', commits };
}
