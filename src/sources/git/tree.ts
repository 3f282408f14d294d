// Reading trees straight from the object store of the cache repository: listing the files of a commit and
// comparing two commits. Nothing is checked out, so a symlink or a path like `../../etc` in a repository can
// never touch the agent's file system: entries are names in Git objects, not files on disk.
//
// Every object is read only after its size was read from its header (object-size.ts): a blob over the reader's
// limit, or a tree over maxObjectBytes, is refused by name without being inflated.
import git, { type FsClient, type ReadCommitResult, type TreeEntry } from 'isomorphic-git';
import { StalledError } from '../../errors.ts';
import { objectSize, objectSizes } from './object-size.ts';

export interface ObjectStore {
  fs: FsClient;
  gitdir: string;
  /** isomorphic-git's cache of pack indexes: one per operation, so a long-lived agent does not hoard packs. */
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
}

/** The files of a commit (or tree) that the selection includes, sorted by path; at most `limit` of them. */
export async function listFiles(
  store: ObjectStore,
  oid: string,
  selection: TreeSelection,
  limit: number,
): Promise<TreeFile[]> {
  const files: TreeFile[] = [];
  const visit = async (treeOid: string, prefix: string): Promise<void> => {
    for (const entry of await entries(store, treeOid)) {
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
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The files that differ between two commits (or trees): added, deleted, changed content or changed mode.
 * Subtrees with equal ids are skipped without being read, so the cost follows the size of the change, not of
 * the repository.
 */
export async function diffTrees(store: ObjectStore, fromOid: string, toOid: string): Promise<FileChange[]> {
  const changes: FileChange[] = [];
  const visit = async (
    before: string | undefined,
    after: string | undefined,
    prefix: string,
  ): Promise<void> => {
    if (before === after) return;
    const older = before ? byName(await entries(store, before)) : new Map<string, TreeEntry>();
    const newer = after ? byName(await entries(store, after)) : new Map<string, TreeEntry>();
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
      changes.push({ path, before: aFile, after: bFile });
    }
  };
  await visit(await treeOf(store, fromOid), await treeOf(store, toOid), '');
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
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
  return (await git.readBlob({ ...store, oid: file.oid })).blob;
}

/** The files' bytes, one at a time, once every file's size was checked (see blobSizes): none is read if any is refused. */
export async function* readBlobs<F extends Pick<TreeFile, 'path' | 'oid'>>(
  store: ObjectStore,
  files: readonly F[],
  maxFileBytes: number,
): AsyncGenerator<{ file: F; bytes: Uint8Array }> {
  await blobSizes(store, files, maxFileBytes);
  for (const file of files) yield { file, bytes: (await git.readBlob({ ...store, oid: file.oid })).blob };
}

/** isomorphic-git's readCommit, the commit's size checked first (a pushed commit's message can be of any size). */
export async function readCommit(store: ObjectStore, oid: string): Promise<ReadCommitResult> {
  await requireWithin(store, oid);
  return git.readCommit({ ...store, oid });
}

/** The tree of a commit (or the tree itself), each object's size checked before it is read. */
async function treeOf(store: ObjectStore, oid: string): Promise<string> {
  let commit: ReadCommitResult;
  try {
    commit = await readCommit(store, oid);
  } catch (error) {
    if (error instanceof StalledError) throw error;
    return oid; // not a commit: a tree (or an error that reading it reports)
  }
  return commit.commit.tree;
}

/** Refuses an object over the store's maxObjectBytes, by the size in its header. */
async function requireWithin(store: ObjectStore, oid: string): Promise<void> {
  const limit = store.maxObjectBytes ?? DEFAULT_MAX_OBJECT_BYTES;
  const known = treeSizes.get(store.cache);
  const size = known?.has(oid) ? known.get(oid) : await objectSize(store, oid);
  if (size !== undefined && size > limit) {
    throw new StalledError(`object ${oid} is ${size} bytes, more than maxObjectBytes (${limit})`);
  }
}

// The sizes of the subtrees of the trees read, looked up together (one open of each pack per tree rather than
// per subtree), per store view; a subtree's size is checked only if the walk enters it.
const treeSizes = new WeakMap<object, Map<string, number | undefined>>();

async function entries(store: ObjectStore, treeOid: string): Promise<TreeEntry[]> {
  await requireWithin(store, treeOid);
  const { tree } = await git.readTree({ ...store, oid: treeOid });
  const subtrees = tree.filter((e) => e.type === 'tree').map((e) => e.oid);
  if (subtrees.length > 0) {
    let known = treeSizes.get(store.cache);
    if (!known) {
      known = new Map();
      treeSizes.set(store.cache, known);
    }
    const sizes = await objectSizes(store, subtrees);
    for (const [i, oid] of subtrees.entries()) known.set(oid, sizes[i]);
  }
  // Git itself refuses such names (fsck), but a crafted object could carry them; they are never made into paths.
  const bad = tree.find((e) => e.path === '' || e.path === '.' || e.path === '..' || /[/\0]/.test(e.path));
  if (bad)
    throw new StalledError(`tree ${treeOid} holds an entry with an invalid name ${JSON.stringify(bad.path)}`);
  return tree;
}

function byName(list: TreeEntry[]): Map<string, TreeEntry> {
  return new Map(list.map((e) => [e.path, e]));
}

function join(prefix: string, name: string): string {
  return prefix === '' ? name : `${prefix}/${name}`;
}
