// Kustomize for each kind of source (kustomize.ts builds): manifests read from local paths (the CLI, a local
// source) are built where they lie; a Git commit's are built from a checkout of the commit's whole tree into a
// temporary folder (checkout.ts; a base may lie outside the deployment's paths), removed after the build. No
// checkout happens unless a kustomization is among the deployment's files.

import type { Dirent } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { byCodeUnit } from '../../arrays.ts';
import { StalledError } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { checkoutTree, findTreeFiles, refuseSkippedLinks } from '../git/checkout.ts';
import { createPathFilter } from '../git/paths.ts';
import type { GitRepository } from '../git/repository.ts';
import { buildKustomizations, isKustomizationFile, type KustomizeOptions } from './kustomize.ts';

const MAX_ENTRIES = 100_000;

/** The kustomization files under a folder (hidden entries skipped, symlinks not followed), as paths under it. */
async function findKustomizations(dir: string, found: string[], budget: { entries: number }): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries.sort((a, b) => byCodeUnit(a.name, b.name))) {
    if (entry.name.startsWith('.')) continue;
    if (--budget.entries < 0)
      throw new StalledError(`more than ${MAX_ENTRIES} entries`, { subject: { describe: dir } });
    const path = posix.join(dir, entry.name);
    if (entry.isDirectory()) await findKustomizations(path, found, budget);
    else if (entry.isFile() && isKustomizationFile(path)) found.push(path);
  }
}

/**
 * Local paths (as given to readManifestFiles, and the files it read from them) with their kustomizations built:
 * those under a folder given, or a kustomization file given by itself. Another file given by itself is read as
 * it is.
 */
export async function kustomizeLocal(
  paths: readonly string[],
  files: readonly ManifestFile[],
  options: KustomizeOptions = {},
  /** The folder nothing may leave (a local source's); the work tree holding each kustomization by default. */
  boundary?: string,
): Promise<ManifestFile[]> {
  const kustomizations: string[] = [];
  const budget = { entries: MAX_ENTRIES };
  for (const path of paths) {
    const info = await stat(path).catch(() => undefined);
    const normal = posix.normalize(path);
    if (info?.isDirectory()) await findKustomizations(normal, kustomizations, budget);
    else if (info?.isFile() && isKustomizationFile(normal)) kustomizations.push(normal);
  }
  return buildKustomizations(files, kustomizations, { root: '', insideRoot: false, boundary }, options);
}

/** A Git commit's files of a deployment (`paths` minus `exclude`) with their kustomizations built. */
export async function kustomizeGit(
  repo: GitRepository,
  commit: string,
  paths: readonly string[],
  exclude: readonly string[],
  files: readonly ManifestFile[],
  options: KustomizeOptions = {},
  /** Whether kustomizations in subfolders of `paths` are built (a deployment's `recursive`). */
  recursive = true,
): Promise<ManifestFile[]> {
  const kustomizations = await kustomizationsAt(repo, commit, paths, exclude, recursive);
  if (kustomizations.length === 0) return [...files];
  const dir = await mkdtemp(join(tmpdir(), 'mooring-kustomize-'));
  try {
    const skipped = await checkoutTree(repo, commit, dir);
    // A link the build would read that was not written fails it naming the link, not a file kustomize cannot find.
    refuseSkippedLinks(
      skipped,
      kustomizations.map((k) => posix.dirname(k)),
      'a kustomization',
    );
    return await buildKustomizations(files, kustomizations, { root: dir, insideRoot: true }, options);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The kustomization files among a deployment's paths at a fetched commit. */
export function kustomizationsAt(
  repo: GitRepository,
  commit: string,
  paths: readonly string[],
  exclude: readonly string[],
  recursive = true,
): Promise<string[]> {
  const filter = createPathFilter(paths, exclude, { recursive });
  return findTreeFiles(repo, commit, {
    include: (path) => isKustomizationFile(path) && filter.includes(path),
    mayContain: (folder) => filter.mayContain(folder),
    roots: filter.roots,
  });
}
