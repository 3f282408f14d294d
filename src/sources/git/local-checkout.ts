// The Git checkout a command runs in (CI's working copy): its `.git` folder, and revisions named as `git rev-parse`
// takes them (HEAD, a branch, `origin/main`, a tag, a full or abbreviated commit id), resolved with isomorphic-git
// from the checkout's own refs. Nothing is fetched or written; objects are then read by GitRepository with
// `localGitdir` (the same bounded reader, checkout and limits as for a source's cache).
import fs from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import git from 'isomorphic-git';
import { StalledError } from '../../errors.ts';

export interface LocalCheckout {
  /** The checkout's root folder. */
  dir: string;
  /** Its `.git` folder (for a linked worktree, the folder its `.git` file names). */
  gitdir: string;
  /** The commit a revision names. */
  resolve(revision: string): Promise<string>;
}

/** The checkout holding `start` (a folder inside it). */
export async function openCheckout(start: string): Promise<LocalCheckout> {
  let dir: string;
  try {
    dir = await git.findRoot({ fs, filepath: resolve(start) });
  } catch {
    throw new StalledError(`${resolve(start)} is not inside a Git checkout (no .git found above it)`);
  }
  const dotGit = join(dir, '.git');
  let gitdir = dotGit;
  if ((await stat(dotGit)).isFile()) {
    // A linked worktree or a submodule: `.git` is a file saying `gitdir: PATH`.
    const named = /^gitdir:\s*(.+)$/m.exec(await readFile(dotGit, 'utf8'))?.[1]?.trim();
    if (!named) throw new StalledError(`${dotGit} names no gitdir`);
    gitdir = isAbsolute(named) ? named : resolve(dir, named);
  }
  return {
    dir,
    gitdir,
    resolve: (revision) => resolveRevision(gitdir, revision),
  };
}

async function resolveRevision(gitdir: string, revision: string): Promise<string> {
  if (revision.trim() === '' || revision.startsWith('-'))
    throw new StalledError(`"${revision}" is not a revision`);
  // As git rev-parse: a ref of that name first (a branch called `feed` is not the commit feed…), then a commit id.
  let oid: string | undefined;
  try {
    const ref = await git.expandRef({ fs, gitdir, ref: revision });
    oid = await git.resolveRef({ fs, gitdir, ref });
  } catch {
    if (/^[0-9a-f]{4,40}$/i.test(revision))
      oid = await git.expandOid({ fs, gitdir, oid: revision.toLowerCase() }).catch(() => undefined);
  }
  if (oid === undefined)
    throw new StalledError(
      `revision ${revision} is not in the checkout at ${gitdir}: no branch, tag or commit of that name (fetch it first)`,
    );
  // An annotated tag names a tag object: the commit is what it points to.
  for (let hops = 0; hops < 8; hops++) {
    const current: string = oid;
    const object: { type: string; object: unknown } | undefined = await git
      .readObject({ fs, gitdir, oid: current, format: 'parsed' })
      .catch(() => undefined);
    if (object?.type !== 'tag') break;
    oid = (object.object as { object: string }).object;
  }
  const kind = await git
    .readObject({ fs, gitdir, oid, format: 'parsed' })
    .then((o) => o.type)
    .catch(() => undefined);
  if (kind !== 'commit')
    throw new StalledError(`revision ${revision} names a ${kind ?? 'missing object'}, not a commit`);
  return oid;
}
