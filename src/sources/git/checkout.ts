// Materializing a fetched commit's whole tree into a folder on disk, for the tools that need real files
// (`kubectl kustomize`, `helm template`): everything else reads straight from the object store (tree.ts).
//
//   checkoutTree(repo, commit, into, limits?) writes every regular file of `commit` under `into` (created if
//   missing; the caller owns it and removes it after use). The commit must have been fetched (repo.fetch()).
//
// The tree is bounded like a source's reads: at most `maxFiles` files (10,000), none over `maxFileBytes` (the
// source's maxFileBytes), `maxTotalBytes` in all (256 MiB); past a bound the checkout is refused, naming it.
// Sizes are read from the objects' headers and checked for every file before any file is inflated or written.
// Entry names were checked when the tree was read (tree.ts), so no path leaves `into`. Symlinks are not written
// (a link could lead out of the tree, and mooring never follows them elsewhere either); submodules are not files.
// Executable files keep their mode (100755), so a chart's or kustomization's scripts look as in a clone.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { StalledError, TransientError } from '../../errors.ts';
import { exclusive } from './lock.ts';
import type { GitRepository } from './repository.ts';
import {
  blobSizes,
  listFiles,
  type ObjectStore,
  readBlobs,
  readCommit,
  SYMLINK_MODE,
  type TreeFile,
} from './tree.ts';

export interface CheckoutLimits {
  /** Most files written; 10,000 when absent. */
  maxFiles?: number | undefined;
  /** Largest file; the source's maxFileBytes when absent. */
  maxFileBytes?: number | undefined;
  /** Largest sum of file sizes; 256 MiB when absent. */
  maxTotalBytes?: number | undefined;
}

const everyFile = {
  includes: (f: TreeFile) => f.mode !== SYMLINK_MODE,
  mayContain: () => true,
};

/**
 * The paths of the regular files of a fetched commit that `include` selects (folders `mayContain` refuses are not
 * read), sorted; at most `limit`. For finding a few files (kustomizations) without reading or writing any.
 */
export async function findTreeFiles(
  repo: GitRepository,
  commit: string,
  selection: {
    include(path: string): boolean;
    mayContain(folder: string): boolean;
    /** Every included path is one of these or lies under one (tree.ts TreeSelection.roots). */
    roots?: readonly string[] | undefined;
  },
  limit = 10_000,
): Promise<string[]> {
  return exclusive(repo.gitdir, async () => {
    const store = storeOf(repo);
    const files = await listFiles(
      store,
      commit,
      {
        includes: (f) => f.mode !== SYMLINK_MODE && selection.include(f.path),
        mayContain: (folder) => selection.mayContain(folder),
        roots: selection.roots,
      },
      limit,
    );
    return files.map((f) => f.path);
  });
}

/** Writes the regular files of a fetched commit's tree under `into`. */
export async function checkoutTree(
  repo: GitRepository,
  commit: string,
  into: string,
  limits: CheckoutLimits = {},
): Promise<void> {
  const subject = { describe: `${repo.url}@${commit.slice(0, 7)}` };
  const maxFiles = limits.maxFiles ?? 10_000;
  const maxFileBytes = limits.maxFileBytes ?? repo.source.maxFileBytes;
  const maxTotalBytes = limits.maxTotalBytes ?? 256 * 1024 * 1024;
  await exclusive(repo.gitdir, async () => {
    const store = storeOf(repo);
    try {
      await readCommit(store, commit);
    } catch (error) {
      if (error instanceof StalledError) throw new StalledError(`checkout: ${error.message}`, { subject });
      throw new TransientError('commit is not in the cache: fetch it first', { subject, cause: error });
    }
    // What helm and kustomize read is checked as every other read of a commit is (a source with `verify`).
    await repo.requireSigned(store, commit);
    let files: TreeFile[];
    const made = new Set<string>();
    try {
      files = await listFiles(store, commit, everyFile, maxFiles);
      let total = 0;
      for (const size of await blobSizes(store, files, maxFileBytes)) {
        total += size;
        if (total > maxTotalBytes) throw new StalledError(`the tree holds more than ${maxTotalBytes} bytes`);
      }
    } catch (error) {
      if (error instanceof StalledError && !error.subject)
        throw new StalledError(`checkout: ${error.message}`, { subject, cause: error.cause });
      throw error;
    }
    await mkdir(into, { recursive: true });
    for await (const { file, bytes } of readBlobs(store, files, maxFileBytes)) {
      const target = join(into, file.path);
      const folder = dirname(target);
      if (!made.has(folder)) {
        await mkdir(folder, { recursive: true });
        made.add(folder);
      }
      await writeFile(target, bytes, { mode: file.mode === '100755' ? 0o755 : 0o644 });
    }
  });
}

function storeOf(repo: GitRepository): ObjectStore {
  return {
    gitdir: repo.gitdir,
    cache: {},
    maxObjectBytes: repo.source.maxObjectBytes,
  };
}
