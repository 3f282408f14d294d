// Choosing and reading a deployment's manifest files from a commit in the object store: which entries count
// (paths.ts), the refusal of symlinks, and the size and encoding checks on each file read.
import { StalledError, type Subject } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { isManifestPath, type PathFilter, unmatchedPaths } from './paths.ts';
import {
  changesUnder,
  type FileChange,
  type ObjectStore,
  readBlobs,
  SYMLINK_MODE,
  type TreeFile,
  type TreeSelection,
} from './tree.ts';

const SYMLINKS_NAMED = 5;

/** Manifest files the filter includes, and every symlink it includes (so that it can be refused by name). */
export function manifestSelection(filter: PathFilter): TreeSelection {
  return {
    includes: (f) => filter.includes(f.path) && (f.mode === SYMLINK_MODE || isManifestPath(f.path)),
    mayContain: (folder) => filter.mayContain(folder),
    roots: filter.roots,
  };
}

/** The changed files that exist in the newer commit and that the selection includes. */
export function selectChanged(changes: readonly FileChange[], selection: TreeSelection): TreeFile[] {
  const near = selection.roots ? changesUnder(changes, selection.roots) : changes;
  return near.flatMap((c) => (c.after && selection.includes(c.after) ? [c.after] : []));
}

// A symlink is never followed: its target could lie outside the selected paths, or outside the repository.
// It is refused rather than skipped, since skipping a link to a folder of manifests would drop them silently.
export function refuseSymlinks(files: readonly TreeFile[], subject: Subject): void {
  const links = files.filter((f) => f.mode === SYMLINK_MODE).map((f) => f.path);
  if (links.length === 0) return;
  const named = links.slice(0, SYMLINKS_NAMED).join(', ') + (links.length > SYMLINKS_NAMED ? ', …' : '');
  const them = links.length > 1 ? 'them' : 'it';
  throw new StalledError(
    `symlinks are not followed: ${named} (replace ${them} with files, or exclude ${them})`,
    {
      subject,
    },
  );
}

/** Refuses a selection in which some path names no manifest file, naming those paths. */
export function requireEveryPath(
  paths: readonly string[],
  exclude: readonly string[],
  files: readonly TreeFile[],
  subject: Subject,
): void {
  const unmatched = unmatchedPaths(
    paths,
    exclude,
    files.map((f) => f.path),
  );
  if (unmatched.length === 0) return;
  const named = unmatched.map((p) => `"${p}"`).join(', ');
  const verb = unmatched.length === 1 ? `path ${named} selects` : `paths ${named} select`;
  throw new StalledError(`${verb} no manifest file (.yaml, .yml or .json) in the repository`, { subject });
}

/**
 * The files' text; a file over `maxBytes` (its size read from the object's header, before it is inflated) or not
 * UTF-8 is refused by name.
 */
export async function readManifests(
  store: ObjectStore,
  files: readonly TreeFile[],
  maxBytes: number,
  subject: Subject,
): Promise<ManifestFile[]> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const read: ManifestFile[] = [];
  try {
    for await (const { file, bytes } of readBlobs(store, files, maxBytes)) {
      try {
        read.push({ path: file.path, text: decoder.decode(bytes) });
      } catch (error) {
        throw new StalledError(`${file.path} is not UTF-8 text`, { subject, cause: error });
      }
    }
  } catch (error) {
    if (error instanceof StalledError && !error.subject) throw new StalledError(error.message, { subject });
    throw error;
  }
  return read;
}
