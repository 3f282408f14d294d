// Symlinks of a commit's tree, for a checkout (checkout.ts): a monorepo's charts share a `_helpers.tpl` or a values
// file through a link, and helm and kustomize follow links. A checkout holds no link on disk: each link that leads
// within the repository is written as what it leads to (a file's bytes under the link's name, a folder's files under
// the link's folder), resolved here on the tree's paths alone, as the kernel would resolve them in a clone (a link
// in the middle of a path followed too, `..` taken after it). A link that leads outside the repository, nowhere, or
// round a loop is not written, and the caller learns which and why (a tool reading it would find the file missing).

import { posix } from 'node:path';
import { StalledError, type Subject } from '../../errors.ts';
import { blobSizes, type ObjectStore, readBlob, SYMLINK_MODE, type TreeFile } from './tree.ts';

/** How many links one path may pass through (Linux's own bound, ELOOP). */
export const MAX_LINK_HOPS = 40;
/** The longest target a link may name (PATH_MAX). */
export const MAX_LINK_TARGET_BYTES = 4096;

/**
 * The target a link's blob names: its size read from the object's header and refused over MAX_LINK_TARGET_BYTES
 * before anything is inflated (the one read of a link's target, for the checkout and the manifest read).
 */
export async function linkTarget(
  store: ObjectStore,
  link: Pick<TreeFile, 'path' | 'oid'>,
  subject?: Subject,
): Promise<string> {
  const [size = 0] = await blobSizes(store, [link], Number.MAX_SAFE_INTEGER);
  if (size > MAX_LINK_TARGET_BYTES)
    throw new StalledError(
      `${link.path}: a symlink whose target is longer than ${MAX_LINK_TARGET_BYTES} bytes`,
      subject ? { subject } : undefined,
    );
  return Buffer.from(await readBlob(store, link, MAX_LINK_TARGET_BYTES)).toString('utf8');
}

export interface SkippedLink {
  path: string;
  why: string;
}

export interface LinkedTree {
  /** What a checkout writes: the regular files, and each link's target under the link's name. */
  files: TreeFile[];
  /** Links not written. */
  skipped: SkippedLink[];
}

const OUTSIDE = { why: 'leads outside the repository' } as const;
const LOOP = { why: `passes through more than ${MAX_LINK_HOPS} symlinks (a loop)` } as const;
/** A path that no file or folder of the repository is at the end of, and why. */
export type Unresolved = typeof OUTSIDE | typeof LOOP;

/** Where the links of a tree lead: the target a link at `path` holds, or undefined when no link is there. */
export interface LinkLookup {
  linkAt(path: string): Promise<string | undefined>;
}

/**
 * The path of the tree that `path` leads to, every link on the way followed (`..` after a link taken from where the
 * link led, as the kernel does in a clone); `hops` counts links across one resolution.
 */
export async function realPathOf(
  path: string,
  lookup: LinkLookup,
  hops: { n: number } = { n: 0 },
): Promise<string | Unresolved> {
  const cur: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (cur.length === 0) return OUTSIDE;
      cur.pop();
      continue;
    }
    cur.push(part);
    const here = cur.join('/');
    const target = await lookup.linkAt(here);
    if (target === undefined) continue;
    if (++hops.n > MAX_LINK_HOPS) return LOOP;
    if (target.startsWith('/')) return OUTSIDE;
    const resolved = await realPathOf(`${posix.dirname(here)}/${target}`, lookup, hops);
    if (typeof resolved !== 'string') return resolved;
    cur.length = 0;
    if (resolved !== '') cur.push(...resolved.split('/'));
  }
  return cur.join('/');
}

/** `folder` is `path` or lies above it ('' is the repository's top). */
function holds(folder: string, path: string): boolean {
  return folder === '' || path === folder || path.startsWith(`${folder}/`);
}

/**
 * The files a checkout of `files` writes, links resolved. `targets` gives each link's target as its blob holds it.
 * At most `maxFiles` written: a folder reached through several links is written once per link, so a tree of ten
 * links to a folder of ten links multiplies; past the bound the tree is refused (the caller says how).
 */
export async function resolveTreeLinks(
  files: readonly TreeFile[],
  targets: ReadonlyMap<string, string>,
  maxFiles: number,
): Promise<LinkedTree> {
  const byPath = new Map<string, TreeFile>();
  for (const f of files) byPath.set(f.path, f);
  // Every entry's path, sorted, to find what lies under a folder by binary search.
  const sorted = files.map((f) => f.path).sort();
  const under = (folder: string): TreeFile[] => {
    if (folder === '') return sorted.map((p) => byPath.get(p) as TreeFile);
    const prefix = `${folder}/`;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((sorted[mid] as string) < prefix) lo = mid + 1;
      else hi = mid;
    }
    const found: TreeFile[] = [];
    for (let i = lo; i < sorted.length && (sorted[i] as string).startsWith(prefix); i++)
      found.push(byPath.get(sorted[i] as string) as TreeFile);
    return found;
  };
  const isFolder = (path: string) => path === '' || under(path).length > 0;

  const lookup: LinkLookup = { linkAt: async (path) => targets.get(path) };
  const realPath = (path: string) => realPathOf(path, lookup);

  const out: TreeFile[] = [];
  const skipped: SkippedLink[] = [];
  const add = (file: TreeFile) => {
    out.push(file);
    if (out.length > maxFiles)
      throw new TreeTooLargeError(
        `more than ${maxFiles} files with what its symlinks lead to (a folder reached through several links counts once for each)`,
      );
  };
  /**
   * Writes at `at` what the entry `real` (a path of the tree) is: a file as it is, a link as what it leads to.
   * `expanding`: the folders being written through links above, to stop a folder that holds a link back to itself.
   */
  const place = async (at: string, entry: TreeFile, expanding: readonly string[]): Promise<void> => {
    if (entry.mode !== SYMLINK_MODE) {
      add({ path: at, oid: entry.oid, mode: entry.mode });
      return;
    }
    const target = await realPath(entry.path);
    if (typeof target !== 'string') {
      skipped.push({ path: at, why: target.why });
      return;
    }
    const file = byPath.get(target);
    if (file && file.mode !== SYMLINK_MODE) {
      add({ path: at, oid: file.oid, mode: file.mode });
      return;
    }
    if (!isFolder(target)) {
      skipped.push({ path: at, why: 'leads nowhere in the repository' });
      return;
    }
    if (holds(target, entry.path) || expanding.some((folder) => folder === target)) {
      skipped.push({ path: at, why: 'leads to a folder that holds it (a loop)' });
      return;
    }
    const prefix = target === '' ? 0 : target.length + 1;
    for (const inner of under(target))
      await place(`${at}/${inner.path.slice(prefix)}`, inner, [...expanding, target]);
  };
  for (const f of files) await place(f.path, f, []);
  return { files: out, skipped };
}

export class TreeTooLargeError extends Error {}
