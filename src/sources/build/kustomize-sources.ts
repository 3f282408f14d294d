// Kustomize for each kind of source (kustomize.ts builds): manifests read from local paths (the CLI, a local
// source) are built where they lie; a Git commit's are built from a checkout of the commit's whole tree into a
// temporary folder (checkout.ts; a base may lie outside the deployment's paths), removed after the build. No
// checkout happens unless a kustomization is among the deployment's files.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import type { ManifestFile } from '../../render/parse.ts';
import { checkoutTree, findTreeFiles } from '../git/checkout.ts';
import { createPathFilter } from '../git/paths.ts';
import type { GitRepository } from '../git/repository.ts';
import {
  buildKustomizations,
  isKustomizationFile,
  KUSTOMIZATION_NAMES,
  type KustomizeOptions,
} from './kustomize.ts';

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
}

/**
 * Local paths (as given to readManifestFiles, and the files it read from them) with their kustomizations built.
 * A folder given, or one under it holding a manifest, is built when it holds a kustomization; a file given by
 * itself is read as it is unless it is the kustomization.
 */
export async function kustomizeLocal(
  paths: readonly string[],
  files: readonly ManifestFile[],
  options: KustomizeOptions = {},
): Promise<ManifestFile[]> {
  const folders = new Set<string>();
  const given: string[] = [];
  for (const path of paths) {
    const normal = posix.normalize(path).replace(/(.)\/$/, '$1');
    if (await isDirectory(path)) {
      folders.add(normal);
      given.push(normal);
    }
  }
  for (const file of files) {
    if (isKustomizationFile(file.path)) folders.add(posix.dirname(file.path));
    else if (given.some((g) => g === '.' || file.path.startsWith(`${g}/`)))
      folders.add(posix.dirname(file.path));
  }
  const kustomizations: string[] = [];
  for (const folder of folders) {
    for (const name of KUSTOMIZATION_NAMES) {
      const label = posix.join(folder, name);
      if (await exists(label)) {
        kustomizations.push(label);
        break;
      }
    }
  }
  return buildKustomizations(files, kustomizations, { root: '', insideRoot: false }, options);
}

/** A Git commit's files of a deployment (`paths` minus `exclude`) with their kustomizations built. */
export async function kustomizeGit(
  repo: GitRepository,
  commit: string,
  paths: readonly string[],
  exclude: readonly string[],
  files: readonly ManifestFile[],
  options: KustomizeOptions = {},
): Promise<ManifestFile[]> {
  const kustomizations = await kustomizationsAt(repo, commit, paths, exclude);
  if (kustomizations.length === 0) return [...files];
  const dir = await mkdtemp(join(tmpdir(), 'mooring-kustomize-'));
  try {
    await checkoutTree(repo, commit, dir);
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
): Promise<string[]> {
  const filter = createPathFilter(paths, exclude);
  return findTreeFiles(repo, commit, {
    include: (path) => isKustomizationFile(path) && filter.includes(path),
    mayContain: (folder) => filter.mayContain(folder),
  });
}
