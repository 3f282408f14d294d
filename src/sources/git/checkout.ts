// Materializing a fetched commit's whole tree into a folder on disk, for the tools that need real files
// (`kubectl kustomize`, `helm template`): everything else reads straight from the object store (tree.ts).
//
//   checkoutTree(repo, commit, into, limits?) writes every regular file of `commit` under `into` (created if
//   missing; the caller owns it and removes it after use). The commit must have been fetched (repo.fetch()).
//
// The tree is bounded like a source's reads: at most `maxFiles` files (10,000), none over `maxFileBytes` (the
// source's maxFileBytes), `maxTotalBytes` in all (256 MiB); past a bound the checkout is refused, naming it.
// Sizes are read from the objects' headers and checked for every file before any file is inflated or written.
// Entry names were checked when the tree was read (tree.ts), so no path leaves `into`. No symlink is written: one
// that leads within the repository is written as what it leads to (tree-links.ts; a chart's shared `_helpers.tpl`
// or values file), one that leads outside or nowhere is left out and returned, for the caller to refuse where its
// tool reads (a chart's values file missing would render the chart with other values, silently); submodules are
// not files.
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
import {
  type LinkLookup,
  linkTarget,
  realPathOf,
  resolveTreeLinks,
  type SkippedLink,
  TreeTooLargeError,
} from './tree-links.ts';

export interface CheckoutLimits {
  /** Most files written; 10,000 when absent. */
  maxFiles?: number | undefined;
  /** Largest file; the source's maxFileBytes when absent. */
  maxFileBytes?: number | undefined;
  /** Largest sum of file sizes; 256 MiB when absent. */
  maxTotalBytes?: number | undefined;
}

const everyEntry = {
  includes: () => true,
  mayContain: () => true,
};

/**
 * The paths of the files of a fetched commit that `include` selects (folders `mayContain` refuses are not read),
 * symlinks among them (a checkout writes what they lead to), sorted; at most `limit`. For finding a few files
 * (kustomizations) without reading or writing any.
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
        includes: (f) => selection.include(f.path),
        mayContain: (folder) => selection.mayContain(folder),
        roots: selection.roots,
      },
      limit,
    );
    return files.map((f) => f.path);
  });
}

/** `folder` is `path` or lies above it ('' is the repository's top). */
function holds(folder: string, path: string): boolean {
  return folder === '' || path === folder || path.startsWith(`${folder}/`);
}

/** A path of the tree as given in a deployment (`./apps/`, `apps`), in the tree's own spelling (`apps`). */
function treePath(path: string): string {
  return path
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .join('/');
}

/**
 * The symlinks of a fetched commit that lie at or under `roots` (folders or files of the tree, '' for all): a chart
 * whose folder holds one reads files elsewhere in the repository (checkoutTree writes what it leads to).
 */
export async function treeLinksUnder(
  repo: GitRepository,
  commit: string,
  roots: readonly string[],
  limit = 10_000,
): Promise<TreeFile[]> {
  const clean = roots.map(treePath);
  return exclusive(repo.gitdir, () =>
    listFiles(
      storeOf(repo),
      commit,
      {
        includes: (f) => f.mode === SYMLINK_MODE && clean.some((root) => holds(root, f.path)),
        mayContain: (folder) => clean.some((root) => holds(root, folder) || holds(folder, root)),
        roots: clean,
      },
      limit,
    ),
  );
}

/** The most links linkReads follows for one question (a linked folder's links followed too). */
const MAX_LINKS_READ = 10_000;

/**
 * The paths of a commit's tree that what lies at or under `roots` reads through its symlinks (`links`: every link of
 * the commit, treeLinksUnder(['']), whose blobs hold their targets): each link's own path, every link passed on the
 * way, and where it leads (a file, or a folder whose every file is read), the links in a linked folder followed too,
 * as the checkout and the manifest read resolve them (realPathOf). A commit that changes nothing at, under or above
 * any of them changes nothing the links read. A link that leads outside or round a loop gives the paths it passed
 * through (a commit that mends it changes one of them). Undefined past MAX_LINKS_READ links.
 */
export async function linkReads(
  repo: GitRepository,
  links: readonly TreeFile[],
  roots: readonly string[],
): Promise<string[] | undefined> {
  const clean = roots.map(treePath);
  const byPath = new Map(links.map((l) => [l.path, l]));
  const sorted = [...byPath.keys()].sort();
  const queue = sorted.filter((path) => clean.some((root) => holds(root, path)));
  // No link under the roots (most deployments): nothing to read, no wait for the repository's lock.
  if (queue.length === 0) return [];
  return exclusive(repo.gitdir, async () => {
    const store = storeOf(repo);
    const targets = new Map<string, string>();
    const reads = new Set<string>();
    const lookup: LinkLookup = {
      linkAt: async (path) => {
        const link = byPath.get(path);
        if (link === undefined) return undefined;
        reads.add(path);
        let target = targets.get(path);
        if (target === undefined) {
          target = await linkTarget(store, link);
          targets.set(path, target);
        }
        return target;
      },
    };
    const followed = new Set<string>();
    for (let path = queue.pop(); path !== undefined; path = queue.pop()) {
      if (followed.has(path)) continue;
      followed.add(path);
      if (followed.size > MAX_LINKS_READ) return undefined;
      reads.add(path);
      const end = await realPathOf(path, lookup);
      if (typeof end !== 'string') continue;
      reads.add(end);
      // A folder's links are read too (a link in a linked folder leads on from there).
      for (const other of sorted) if (other !== end && holds(end, other)) queue.push(other);
    }
    return [...reads];
  });
}

/**
 * Writes the files of a fetched commit's tree under `into`, each symlink that leads within the repository as what it
 * leads to (tree-links.ts). Returns the links not written, and why: the caller refuses those its tool would read.
 */
export async function checkoutTree(
  repo: GitRepository,
  commit: string,
  into: string,
  limits: CheckoutLimits = {},
): Promise<SkippedLink[]> {
  const subject = { describe: `${repo.url}@${commit.slice(0, 7)}` };
  const maxFiles = limits.maxFiles ?? 10_000;
  const maxFileBytes = limits.maxFileBytes ?? repo.source.maxFileBytes;
  const maxTotalBytes = limits.maxTotalBytes ?? 256 * 1024 * 1024;
  return exclusive(repo.gitdir, async () => {
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
    let skipped: SkippedLink[];
    const made = new Set<string>();
    try {
      const entries = await listFiles(store, commit, everyEntry, maxFiles);
      const targets = new Map<string, string>();
      for (const link of entries.filter((f) => f.mode === SYMLINK_MODE)) {
        targets.set(link.path, await linkTarget(store, link));
      }
      try {
        ({ files, skipped } = await resolveTreeLinks(entries, targets, maxFiles));
      } catch (error) {
        if (error instanceof TreeTooLargeError) throw new StalledError(`the tree holds ${error.message}`);
        throw error;
      }
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
    return skipped;
  });
}

/**
 * Refuses a checkout whose skipped links (checkoutTree's) lie where a tool reads: under one of `paths` (a chart's
 * folder, its values files), naming the link and why it was not written.
 */
export function refuseSkippedLinks(
  skipped: readonly SkippedLink[],
  paths: readonly string[],
  subject: string,
): void {
  const clean = paths.map((p) =>
    p
      .split('/')
      .filter((part) => part !== '' && part !== '.')
      .join('/'),
  );
  const hit = skipped.find((link) =>
    clean.some((p) => p === '' || link.path === p || link.path.startsWith(`${p}/`)),
  );
  if (hit)
    throw new StalledError(
      `${hit.path}: a symlink that ${hit.why}; a symlink ${subject} reads must lead to a file or folder within the repository`,
    );
}

function storeOf(repo: GitRepository): ObjectStore {
  return {
    gitdir: repo.gitdir,
    cache: {},
    maxObjectBytes: repo.source.maxObjectBytes,
  };
}
