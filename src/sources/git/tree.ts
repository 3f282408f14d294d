// Reading trees straight from the object store of the cache repository: listing the files of a commit and
// comparing two commits. Nothing is checked out, so a symlink or a path like `../../etc` in a repository can
// never touch the agent's file system: entries are names in Git objects, not files on disk.
//
// Objects are read from their packs by offset (object-read.ts), each after its size was read from its header: a
// blob over the reader's limit, or a tree or commit over maxObjectBytes, is refused by name without being inflated.
import { byCodeUnit, lowerBound } from '../../arrays.ts';
import { StalledError } from '../../errors.ts';
import { clearedWhenQuiet } from '../../quiet-caches.ts';
import {
  type Commit,
  type GitObject,
  parseCommit,
  parseTree,
  readObject,
  type TreeEntry,
} from './object-read.ts';
import { objectSizes } from './object-size.ts';

export interface ObjectStore {
  gitdir: string;
  /** Per operation: the parsed pack indexes and recent delta bases, so a long-lived agent does not hoard them. */
  cache: object;
  /** The largest object read (the source's maxObjectBytes); 64 MiB when absent. */
  maxObjectBytes?: number | undefined;
}

export const DEFAULT_MAX_OBJECT_BYTES = 64 * 1024 * 1024;

export const SYMLINK_MODE = '120000';

/** A file of a tree: a regular file (100644, 100755) or a symlink (120000). Submodules are not files. */
export interface TreeFile {
  path: string;
  oid: string;
  mode: string;
}

export interface FileChange {
  path: string;
  /** The file in the older commit; absent when it was added. */
  before?: TreeFile | undefined;
  /** The file in the newer commit; absent when it was deleted. */
  after?: TreeFile | undefined;
}

export interface TreeSelection {
  includes(file: TreeFile): boolean;
  /** False lets the walk skip a folder without reading it. */
  mayContain(folder: string): boolean;
  /** Every included file is one of these paths or lies under one (`''`: anywhere); absent, anywhere. */
  roots?: readonly string[] | undefined;
}

/**
 * The names of a folder's entries that are roots or lie on the way to one, or undefined when the folder is a root
 * or lies under one (all of its entries count). A walk of a monorepo then looks up the one name it needs in a folder
 * of a thousand instead of making a path for each of them (every deployment of the fleet walked `apps/` whole).
 */
function namesTowardRoots(folder: string, roots: readonly string[]): ReadonlySet<string> | undefined {
  const names = new Set<string>();
  const here = folder === '' ? '' : `${folder}/`;
  for (const root of roots) {
    if (root === '' || root === folder || (here !== '' && here.startsWith(`${root}/`))) return undefined;
    if (!root.startsWith(here)) continue;
    const slash = root.indexOf('/', here.length);
    names.add(slash === -1 ? root.slice(here.length) : root.slice(here.length, slash));
  }
  return names;
}

// The changes of a diff in path order, each with its place in the diff: made once per list of changes (a diff is
// kept and shared by every deployment of its repository), so that each deployment finds its own changes by binary
// search instead of asking its filter about every change of the commit (a fleet of a thousand deployments in one
// repository, all changed by one commit, made a million such questions).
const sortedChanges = new WeakMap<readonly FileChange[], { path: string; at: number }[]>();

/** The changes whose path is one of `roots` or lies under one, in the order of `changes`. */
export function changesUnder(changes: readonly FileChange[], roots: readonly string[]): FileChange[] {
  if (roots.includes('')) return [...changes];
  let sorted = sortedChanges.get(changes);
  if (!sorted) {
    sorted = changes.map((c, at) => ({ path: c.path, at })).sort((a, b) => byCodeUnit(a.path, b.path));
    sortedChanges.set(changes, sorted);
  }
  const list = sorted;
  const from = (path: string): number =>
    lowerBound(0, list.length, (i) => byCodeUnit((list[i] as { path: string }).path, path) < 0);
  const found = new Set<number>();
  for (const root of roots) {
    const exact = list[from(root)];
    if (exact?.path === root) found.add(exact.at);
    const below = `${root}/`;
    for (let i = from(below); i < list.length; i++) {
      const entry = list[i] as { path: string; at: number };
      if (!entry.path.startsWith(below)) break;
      found.add(entry.at);
    }
  }
  return [...found].sort((a, b) => a - b).map((at) => changes[at] as FileChange);
}

/**
 * Tree entries one walk (a listing or a diff) may read, whatever its selection. A tree can name one subtree many
 * times and that subtree again, so a commit of a few KiB can hold millions of paths (a "git bomb": ten entries
 * nested six deep are ten million files): without a bound, a walk of it filled the agent's memory, and one served
 * from the tree cache never gave the event loop a turn (health checks, webhooks and every other sync stalled).
 */
export const MAX_WALK_ENTRIES = 1_000_000;

/** Changes a diff holds at most; past it, the two commits count as changing everything (as after a force-push). */
export const MAX_DIFF_CHANGES = 100_000;

/** A walk lets the event loop turn after this many trees read (most are in the cache, read without waiting). */
const TREES_BETWEEN_TURNS = 256;

class WalkTooLarge extends StalledError {}

/** What one walk has read: trees are read through it, and it refuses past MAX_WALK_ENTRIES. */
class Walk {
  #entries = 0;
  #trees = 0;
  readonly #store: ObjectStore;
  readonly #limit: number;
  constructor(store: ObjectStore, limit = MAX_WALK_ENTRIES) {
    this.#store = store;
    this.#limit = limit;
  }

  async entries(treeOid: string): Promise<TreeEntry[]> {
    const list = await entries(this.#store, treeOid);
    this.#entries += list.length;
    if (this.#entries > this.#limit)
      throw new WalkTooLarge(
        `more than ${this.#limit} tree entries to read (a tree that names its subtrees many times over?)`,
      );
    if (++this.#trees % TREES_BETWEEN_TURNS === 0) await new Promise((resolve) => setImmediate(resolve));
    return list;
  }
}

/** The files of a commit (or tree) that the selection includes, sorted by path; at most `limit` of them. */
export async function listFiles(
  store: ObjectStore,
  oid: string,
  selection: TreeSelection,
  limit: number,
): Promise<TreeFile[]> {
  const files: TreeFile[] = [];
  const roots = selection.roots;
  const walk = new Walk(store);
  const visit = async (treeOid: string, prefix: string): Promise<void> => {
    const all = await walk.entries(treeOid);
    const toward = roots && namesTowardRoots(prefix, roots);
    for (const entry of toward ? all.filter((e) => toward.has(e.path)) : all) {
      const path = join(prefix, entry.path);
      if (entry.type === 'tree') {
        if (selection.mayContain(path)) await visit(entry.oid, path);
        continue;
      }
      if (entry.type !== 'blob') continue; // a submodule: a commit of another repository, not a file
      const file = { path, oid: entry.oid, mode: entry.mode };
      if (!selection.includes(file)) continue;
      if (files.length >= limit) throw new StalledError(`more than ${limit} files selected by the paths`);
      files.push(file);
    }
  };
  await visit(await treeOf(store, oid), '');
  return files.sort((a, b) => byCodeUnit(a.path, b.path));
}

/** Which folders a walk takes (`matches`) and which it looks into (`mayContain`). */
export interface FolderSelection {
  matches(folder: string): boolean;
  mayContain(folder: string): boolean;
}

/**
 * The folders of a commit (or tree) that the selection matches, sorted by path; more than `limit` is refused. Only
 * trees are read, never a blob.
 */
export async function listFolders(
  store: ObjectStore,
  oid: string,
  selection: FolderSelection,
  limit: number,
): Promise<string[]> {
  const folders: string[] = [];
  let visited = 0;
  const walk = new Walk(store);
  const visit = async (treeOid: string, prefix: string): Promise<void> => {
    for (const entry of await walk.entries(treeOid)) {
      if (entry.type !== 'tree') continue;
      const path = join(prefix, entry.path);
      if (selection.matches(path)) {
        if (folders.length >= limit) throw new StalledError(`more than ${limit} folders match`);
        folders.push(path);
      }
      // A bound on the trees read, whatever the globs: a repository of a million folders is not walked whole.
      if (++visited > 100_000) throw new StalledError('more than 100,000 folders to look through');
      if (selection.mayContain(path)) await visit(entry.oid, path);
    }
  };
  await visit(await treeOf(store, oid), '');
  return folders.sort(byCodeUnit);
}

/**
 * The files that differ between two commits (or trees): added, deleted, changed content or changed mode.
 * Subtrees with equal ids are skipped without being read, so the cost follows the size of the change, not of
 * the repository. A change past MAX_DIFF_CHANGES files, or MAX_WALK_ENTRIES entries read, is not listed:
 * `tooLarge` says so, and the caller counts everything as changed.
 */
export async function diffTrees(
  store: ObjectStore,
  fromOid: string,
  toOid: string,
  limits: { maxChanges?: number; maxEntries?: number } = {},
): Promise<{ changes: FileChange[] } | { tooLarge: string }> {
  const maxChanges = limits.maxChanges ?? MAX_DIFF_CHANGES;
  const walk = new Walk(store, limits.maxEntries);
  const changes: FileChange[] = [];
  const visit = async (
    before: string | undefined,
    after: string | undefined,
    prefix: string,
  ): Promise<void> => {
    if (before === after) return;
    const older = before ? byName(await walk.entries(before)) : new Map<string, TreeEntry>();
    const newer = after ? byName(await walk.entries(after)) : new Map<string, TreeEntry>();
    const names = [...new Set([...older.keys(), ...newer.keys()])].sort();
    for (const name of names) {
      const a = older.get(name);
      const b = newer.get(name);
      const path = join(prefix, name);
      const aTree = a?.type === 'tree' ? a.oid : undefined;
      const bTree = b?.type === 'tree' ? b.oid : undefined;
      if (aTree || bTree) await visit(aTree, bTree, path);
      const aFile = a?.type === 'blob' ? { path, oid: a.oid, mode: a.mode } : undefined;
      const bFile = b?.type === 'blob' ? { path, oid: b.oid, mode: b.mode } : undefined;
      if (aFile?.oid === bFile?.oid && aFile?.mode === bFile?.mode) continue;
      if (changes.length >= maxChanges) throw new WalkTooLarge(`more than ${maxChanges} files changed`);
      changes.push({ path, before: aFile, after: bFile });
    }
  };
  try {
    await visit(await treeOf(store, fromOid), await treeOf(store, toOid), '');
  } catch (error) {
    if (error instanceof WalkTooLarge) return { tooLarge: error.message };
    throw error;
  }
  return { changes: changes.sort((a, b) => byCodeUnit(a.path, b.path)) };
}

/**
 * The sizes of files' blobs, read from their headers: a blob over `maxFileBytes` (or over the store's
 * maxObjectBytes, when that is smaller) is refused naming the file, its size and the limit.
 */
export async function blobSizes(
  store: ObjectStore,
  files: readonly Pick<TreeFile, 'path' | 'oid'>[],
  maxFileBytes: number,
): Promise<number[]> {
  const maxObjectBytes = store.maxObjectBytes ?? DEFAULT_MAX_OBJECT_BYTES;
  const [limit, setting] =
    maxFileBytes <= maxObjectBytes ? [maxFileBytes, 'maxFileBytes'] : [maxObjectBytes, 'maxObjectBytes'];
  const sizes = await objectSizes(
    store,
    files.map((f) => f.oid),
  );
  return files.map((file, i) => {
    const size = sizes[i];
    if (size === undefined) {
      throw new StalledError(
        `${file.path} (${file.oid}) is not in the cache; a delta whose base or result is over maxObjectBytes (${maxObjectBytes}) is not kept`,
      );
    }
    if (size > limit)
      throw new StalledError(`${file.path} is ${size} bytes, more than ${setting} (${limit})`);
    return size;
  });
}

/** A file's bytes, refused by size (see blobSizes) before anything is inflated. */
export async function readBlob(
  store: ObjectStore,
  file: Pick<TreeFile, 'path' | 'oid'>,
  maxFileBytes: number,
): Promise<Uint8Array> {
  await blobSizes(store, [file], maxFileBytes);
  return (await readTyped(store, file.oid, 'blob')).data;
}

/** The files' bytes, one at a time, once every file's size was checked (see blobSizes): none is read if any is refused. */
export async function* readBlobs<F extends Pick<TreeFile, 'path' | 'oid'>>(
  store: ObjectStore,
  files: readonly F[],
  maxFileBytes: number,
): AsyncGenerator<{ file: F; bytes: Uint8Array }> {
  await blobSizes(store, files, maxFileBytes);
  for (const file of files) yield { file, bytes: (await readTyped(store, file.oid, 'blob')).data };
}

/** What lies at a path of a commit's tree: a file or a link (a blob and its mode), a folder, or nothing. */
export type PathEntry = { type: 'blob'; oid: string; mode: string } | { type: 'tree' } | undefined;

/** The entry at `path` (`a/b/c.yaml`, '' for the top) of a commit's (or tree's) tree; links on the way not followed. */
export async function entryAt(store: ObjectStore, oid: string, path: string): Promise<PathEntry> {
  let tree = await treeOf(store, oid);
  const parts = path.split('/').filter((part) => part !== '');
  for (let i = 0; i < parts.length; i++) {
    const found = (await entries(store, tree)).find((e) => e.path === parts[i]);
    if (!found) return undefined;
    if (i === parts.length - 1)
      return found.type === 'tree'
        ? { type: 'tree' }
        : found.type === 'blob'
          ? { type: 'blob', oid: found.oid, mode: found.mode }
          : undefined;
    if (found.type !== 'tree') return undefined;
    tree = found.oid;
  }
  return { type: 'tree' };
}

/** A commit's tree, parents, author and message; its size checked first (a pushed commit can be of any size). */
export async function readCommit(store: ObjectStore, oid: string): Promise<Commit> {
  return parseCommit(oid, (await readTyped(store, oid, 'commit')).data);
}

/** The object, refused by size before it is inflated; an Error (not a StalledError) when it is not of `type`. */
async function readTyped(store: ObjectStore, oid: string, type: GitObject['type']): Promise<GitObject> {
  const object = await readObject(store, oid, store.maxObjectBytes ?? DEFAULT_MAX_OBJECT_BYTES);
  if (object.type !== type) {
    throw Object.assign(new Error(`object ${oid} is a ${object.type}, not a ${type}`), {
      code: 'ObjectTypeError',
    });
  }
  return object;
}

/** The tree of a commit (or of an annotated tag, or the tree itself). */
async function treeOf(store: ObjectStore, oid: string): Promise<string> {
  let at = oid;
  for (let depth = 0; depth < 10; depth++) {
    const object = await readObject(store, at, store.maxObjectBytes ?? DEFAULT_MAX_OBJECT_BYTES);
    if (object.type === 'tree') return at;
    if (object.type === 'commit') return parseCommit(at, object.data).tree;
    const target = /^object ([0-9a-f]{40})$/m.exec(object.data.toString('latin1'));
    if (object.type !== 'tag' || !target?.[1]) break;
    at = target[1];
  }
  throw Object.assign(new Error(`${oid} does not lead to a tree`), { code: 'ObjectTypeError' });
}

// Trees read and checked, most recently used last. A tree's id names its content, so an entry stays true for as long
// as it is kept; the key holds the repository's folder and the size limit the tree was read under. Every deployment
// of a monorepo walks the same few trees (the root, `apps/` with a thousand folders): read, parsed and checked once,
// not once per deployment. Bounded by the entries kept (about 1.5 MiB at most); a larger tree is not kept.
const TREES_KEPT_ENTRIES = 8192;
const treesKept = new Map<string, TreeEntry[]>();
let entriesKept = 0;
// Emptied when the syncs are quiet (quiet-caches.ts); referenced here for as long as the module lives.
const treeCache = {
  clear() {
    treesKept.clear();
    entriesKept = 0;
  },
};
clearedWhenQuiet(treeCache);

async function entries(store: ObjectStore, treeOid: string): Promise<TreeEntry[]> {
  const key = `${store.gitdir}\0${store.maxObjectBytes ?? DEFAULT_MAX_OBJECT_BYTES}\0${treeOid}`;
  const kept = treesKept.get(key);
  if (kept) {
    treesKept.delete(key);
    treesKept.set(key, kept);
    return kept;
  }
  const tree = checkedTree(treeOid, await readTyped(store, treeOid, 'tree'));
  if (tree.length <= TREES_KEPT_ENTRIES / 4) {
    treesKept.set(key, tree);
    entriesKept += tree.length;
    for (const [oldest, list] of treesKept) {
      if (entriesKept <= TREES_KEPT_ENTRIES) break;
      treesKept.delete(oldest);
      entriesKept -= list.length;
    }
  }
  return tree;
}

/** The entries of a tree object, refused when one has a name that could leave its folder. */
function checkedTree(treeOid: string, object: GitObject): TreeEntry[] {
  const tree = parseTree(treeOid, object.data);
  // Git itself refuses such names (fsck), but a crafted object could carry them; they are never made into paths.
  const bad = tree.find(
    (e) => e.path === '' || e.path === '.' || e.path === '..' || /[/\\\0]/.test(e.path) || isDotGit(e.path),
  );
  if (bad)
    throw new StalledError(`tree ${treeOid} holds an entry with an invalid name ${JSON.stringify(bad.path)}`);
  return tree;
}

/** `.git` in any of the spellings file systems fold to it (case, trailing dots and spaces, 8.3 names). */
function isDotGit(name: string): boolean {
  const folded =
    name
      .split(':')[0]
      ?.toLowerCase()
      .replace(/[. ]+$/, '') ?? '';
  return folded === '.git' || /^\.?git~[1-9]$/.test(folded);
}

function byName(list: TreeEntry[]): Map<string, TreeEntry> {
  return new Map(list.map((e) => [e.path, e]));
}

function join(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}/${name}`;
}
