// Symlinks in a folder of the user's (a CLI path, a local source), before a tool that follows them reads it: helm
// loads every file of a chart folder and follows symlinks wherever they lead (it only warns), so a chart holding
// `files/t -> /var/run/secrets/kubernetes.io/serviceaccount/token` and `{{ .Files.Get "files/t" }}` put the file
// into the rendered objects, the diff and the audit log. The boundary is the repository, as for kustomizations
// (kustomize-check.ts): a local source's folder, or for the CLI's paths the Git work tree holding the folder, or
// the folder itself outside any. Checkouts and extracted archives hold no symlinks (they are refused there).
import type { Dirent } from 'node:fs';
import { cp, lstat, readdir, readlink, realpath, rm, stat, symlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { StalledError } from '../../errors.ts';

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

function inside(path: string, folder: string): boolean {
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

/**
 * Copies the folder `from` to `to` with each symlink in it pointing where it points from `from` (its real target,
 * absolute), not where its text leads from `to`: a relative link checked inside the repository
 * (`../../../../x`) would climb out of a copy made in a shallower folder (the temporary one), to a file of the
 * machine's. A `charts` folder of the chart that is a symlink is copied as a folder: what is written there (the
 * dependencies) must not land in the user's tree.
 */
export async function copyWithLinksPinned(from: string, to: string): Promise<void> {
  await cp(from, to, { recursive: true, verbatimSymlinks: true });
  await pinLinks(from, to);
  const charts = join(to, 'charts');
  const info = await lstat(charts).catch(() => undefined);
  if (info?.isSymbolicLink()) {
    const real = await readlink(charts);
    await rm(charts);
    if ((await stat(real)).isDirectory()) await copyWithLinksPinned(real, charts);
    else await symlink(real, charts);
  }
}

/** Points each symlink under `copy` at the real target of its counterpart under `original`. */
async function pinLinks(original: string, copy: string): Promise<void> {
  for (const entry of await readdir(copy, { withFileTypes: true })) {
    const at = join(copy, entry.name);
    if (entry.isSymbolicLink()) {
      const target = await realpath(join(original, entry.name));
      await rm(at);
      await symlink(target, at);
    } else if (entry.isDirectory()) await pinLinks(join(original, entry.name), at);
  }
}
