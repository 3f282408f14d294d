// Symlinks in a folder of the user's (a CLI path, a local source), before a tool that follows them reads it: helm
// loads every file of a chart folder and follows symlinks wherever they lead (it only warns), so a chart holding
// `files/t -> /var/run/secrets/kubernetes.io/serviceaccount/token` and `{{ .Files.Get "files/t" }}` put the file
// into the rendered objects, the diff and the audit log. The boundary is the repository, as for kustomizations
// (kustomize-check.ts): a local source's folder, or for the CLI's paths the Git work tree holding the folder, or
// the folder itself outside any. Checkouts and extracted archives hold no symlinks (they are refused there).
import type { Dirent, Stats } from 'node:fs';
import { mkdir, readdir, realpath, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { StalledError } from '../../errors.ts';
import {
  FileTooLargeError,
  NotRegularFileError,
  OutsideFolderError,
  readBoundedBytes,
} from './bounded-read.ts';

/** Entries a check reads before it refuses the folder (a chart of more is not one helm loads either). */
export const MAX_CHECKED_ENTRIES = 100_000;

/** The Git work tree above a local folder (the nearest folder holding `.git`), if any. */
export async function workTreeOf(folder: string): Promise<string | undefined> {
  let dir = resolve(folder);
  for (;;) {
    if (
      await stat(resolve(dir, '.git')).then(
        () => true,
        () => false,
      )
    )
      return dir;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** Whether `path` is `folder` or lies under it (both real paths). */
export function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
}

/**
 * Refuses `folder` when a symlink in it (or in a folder a symlink in it leads to) leads outside `boundary`, or
 * nowhere; `label` names the folder in messages. Folders are walked as a tool following symlinks walks them, each
 * real folder once, `.git` folders too: helm loads `.git/**` of a chart folder as any other file of it.
 */
export async function refuseSymlinksOutside(folder: string, boundary: string, label: string): Promise<void> {
  const bound = await realpath(boundary);
  const seen = new Set<string>();
  let entries = 0;
  const walk = async (disk: string, shown: string): Promise<void> => {
    const real = await realpath(disk);
    if (seen.has(real)) return;
    seen.add(real);
    let list: Dirent[];
    try {
      list = await readdir(disk, { withFileTypes: true });
    } catch {
      return; // not a folder helm can read either: helm says so
    }
    for (const entry of list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (++entries > MAX_CHECKED_ENTRIES)
        throw new StalledError(`${label}: more than ${MAX_CHECKED_ENTRIES} files and folders`);
      const path = join(disk, entry.name);
      const named = `${shown}/${entry.name}`;
      if (entry.isSymbolicLink()) {
        const target = await realpath(path).catch(() => undefined);
        if (target === undefined) throw new StalledError(`${named}: a symlink that leads nowhere`);
        if (!inside(target, bound))
          throw new StalledError(
            `${named}: a symlink that leads outside ${relative(process.cwd(), bound) || '.'}; symlinks may lead only within the repository`,
          );
        if ((await stat(target)).isDirectory()) await walk(target, named);
      } else if (entry.isDirectory()) await walk(path, named);
    }
  };
  await walk(folder, label.replace(/\/+$/, ''));
}

/** Refuses one path whose real location (symlinks resolved) lies outside `boundary`; a missing path is the tool's to report. */
export async function refuseLeadingOutside(path: string, boundary: string, label: string): Promise<void> {
  const target = await realpath(path).catch(() => undefined);
  if (target === undefined) return;
  const bound = await realpath(boundary);
  if (!inside(target, bound))
    throw new StalledError(
      `${label}: leads outside ${relative(process.cwd(), bound) || '.'} through a symlink; symlinks may lead only within the repository`,
    );
}

/** A file copied into a private folder is at most this large (helm refuses chart files past 5 MiB). */
export const MAX_COPIED_FILE_BYTES = 64 * 1024 * 1024;

/**
 * A private copy holds at most this much in all: links make a folder's files count once per path that reaches them
 * (ten links to a folder of ten links to a folder of a large file), which no single file's bound stops.
 */
export const MAX_COPIED_TOTAL_BYTES = 256 * 1024 * 1024;

/** What a private copy may still write, shared by the files of one copy. */
export interface CopyBudget {
  bytes: number;
}

export function copyBudget(): CopyBudget {
  return { bytes: MAX_COPIED_TOTAL_BYTES };
}

/** A file or folder a walk reached: a path that reaches it on disk (through links) and how messages name it. */
export interface Reached {
  disk: string;
  label: string;
}

export interface LinkedWalk {
  /** The real folder every link must lead within (else refused, naming it); undefined: not checked. */
  bound: string | undefined;
  /** A link that leads nowhere: refused naming it, or passed over for the tool to report. */
  nowhere: 'refuse' | 'skip';
  /** Entries still allowed, shared by the walks of one job (MAX_CHECKED_ENTRIES for a job). */
  budget: { entries: number };
  /** Each folder, before its entries (a copy makes it, empty or not). */
  folder?: (folder: Reached) => Promise<void>;
  /**
   * Each entry that is not a folder, under the name it has below the walk's root (a linked file under the link's),
   * with what it is (a regular file, or a named pipe, socket or device).
   */
  file: (file: Reached, info: Stats) => Promise<void>;
}

/**
 * Walks `root` as helm and kustomize read a folder: symlinks followed (a linked file visited under the link's name,
 * a linked folder walked under it), each within `walk.bound`; a folder that leads back to one it lies in (a cycle of
 * links) is not entered again, while one reached through two links side by side is walked under both names, as
 * the tools load it under both. Entries in name order. A root that is a file is visited alone; a missing one is
 * the tool's to report. The one walk of the private copies (copyResolved, sops/tree.ts).
 */
export async function walkLinked(root: Reached, walk: LinkedWalk): Promise<void> {
  const enter = async (place: Reached, ancestors: readonly string[]): Promise<void> => {
    const info = await stat(place.disk).catch(() => undefined);
    if (!info) return;
    if (!info.isDirectory()) return walk.file(place, info);
    const real = await realpath(place.disk);
    if (ancestors.includes(real)) return;
    await walk.folder?.(place);
    const list = await readdir(place.disk, { withFileTypes: true });
    for (const entry of list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (--walk.budget.entries < 0)
        throw new StalledError(`${root.label}: more than ${MAX_CHECKED_ENTRIES} files and folders`);
      const disk = join(place.disk, entry.name);
      const label = place.label === '.' ? entry.name : `${place.label}/${entry.name}`;
      if (entry.isSymbolicLink() && walk.bound !== undefined) {
        const leads = await realpath(disk).catch(() => undefined);
        if (leads === undefined) {
          if (walk.nowhere === 'skip') continue;
          throw new StalledError(`${label}: a symlink that leads nowhere`);
        }
        if (!inside(leads, walk.bound))
          throw new StalledError(`${label}: a symlink that leads outside the repository`);
      }
      await enter({ disk, label }, [...ancestors, real]);
    }
  };
  await enter(root, []);
}

/**
 * Copies the folder `from` (checked by refuseSymlinksOutside) to `to` as helm would read it, with every symlink
 * replaced by what it leads to: a linked file by its bytes, a linked folder by a copy of it.
 * helm then reads only the private copy. Kept as links, pointing at their real targets, they let helm read the
 * user's folder again later, where a file swapped for a link after the check (or a relative link's text read from
 * the shallower copy, `../../../../x`) led elsewhere. Every file is read from the file opened, whose real place must
 * lie within `boundary`, regular files only, each within a bound; `label` names the folder in messages.
 */
export async function copyResolved(from: string, to: string, boundary: string, label: string): Promise<void> {
  const bound = await realpath(boundary);
  const budget = copyBudget();
  const at = (disk: string) => join(to, relative(from, disk));
  await walkLinked(
    { disk: from, label: label.replace(/\/+$/, '') },
    {
      bound,
      nowhere: 'refuse',
      budget: { entries: MAX_CHECKED_ENTRIES },
      folder: async (folder) => {
        await mkdir(at(folder.disk), { recursive: true, mode: 0o700 });
      },
      file: async (file, info) => {
        if (!info.isFile())
          throw new StalledError(`${file.label}: not a regular file (a named pipe, socket or device)`);
        await writeFile(at(file.disk), await copiedBytes(file.disk, bound, file.label, budget), {
          mode: 0o600,
        });
      },
    },
  );
}

/**
 * The bytes of one file for a private copy, read from the file opened (bounded-read.ts): a file swapped for a link
 * leading outside `bound`, or for a named pipe, after a walk looked at it is refused, not followed or waited on.
 */
export async function copiedBytes(
  path: string,
  bound: string,
  named: string,
  budget: CopyBudget,
): Promise<Buffer> {
  try {
    const bytes = await readBoundedBytes(path, Math.min(MAX_COPIED_FILE_BYTES, budget.bytes), {
      within: bound,
    });
    budget.bytes -= bytes.length;
    return bytes;
  } catch (error) {
    if (error instanceof FileTooLargeError && budget.bytes < MAX_COPIED_FILE_BYTES)
      throw new StalledError(
        `${named}: the copy made to build the folder would hold more than ${MAX_COPIED_TOTAL_BYTES} bytes (files reached through several links count once for each)`,
      );
    if (error instanceof OutsideFolderError)
      throw new StalledError(
        `${named}: became a symlink that leads outside the repository while it was read`,
      );
    if (error instanceof NotRegularFileError)
      throw new StalledError(`${named}: not a regular file (a named pipe, socket or device)`);
    if (error instanceof FileTooLargeError)
      throw new StalledError(`${named}: more than ${MAX_COPIED_FILE_BYTES} bytes`);
    throw error;
  }
}
