// Kustomize trees as a source format: a folder holding a kustomization (kustomization.yaml, kustomization.yml or
// Kustomization) among a deployment's manifests is built with `kubectl kustomize` (the kustomize built into
// kubectl), and its output replaces the files under it as one manifest file named after the kustomization
// (`overlays/prod/kustomization.yaml (built)`); mooring's own render then applies to it as to any file.
//
// Which folders are built: every kustomization folder among the files that no other kustomization of them names
// in resources/bases/components (so a base next to its overlays is built once, through the overlays), and that
// does not lie under the folder of another one built. Files under any kustomization folder are never also read
// as plain manifests.
//
// What a kustomization may reach (kustomize-check.ts): before kubectl runs, every file-bearing field of each built
// kustomization and of every local kustomization it reaches is checked: URLs (remote bases only with
// `render.kustomize.allowRemoteBases`), absolute paths and paths leaving the repository are refused, naming the
// kustomization file and the field. kubectl runs with `--load-restrictor LoadRestrictionsRootOnly`, so patches
// and generator files stay under their kustomization, and through the one runner (tool.ts): a minimal
// environment, bounded time, output and memory.
//
// Where each built object was written (origins.ts): the folder is built through a throwaway kustomization that names
// it as its one resource and asks for `buildMetadata: [originAnnotations]` (the user's files are never written); the
// annotations say which file each object came from and are then taken out, so the manifests are those of the plain
// build, byte for byte (withoutOrigins compares the two readings, and kustomize runs once). When the user's own
// kustomizations ask for build metadata, or a remote base is among them (its own may), or the text without the
// annotations cannot be shown equal, the plain build runs beside it; when the annotated build fails, the plain build
// alone says why. Without origins, errors name the built text.
// What kustomize prints on standard error when it succeeds (deprecations) goes with the build as its warnings.
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix, relative, resolve, sep } from 'node:path';
import { StalledError } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { stringifyYaml } from '../../yaml/write.ts';
import { workTreeOf } from '../local/symlinks.ts';
import { loadAgeIdentities } from '../sops/age-keys.ts';
import type { IdentitySource } from '../sops/decrypt.ts';
import { type Place, type Staged, sopsFilesUnder, stageDecrypted } from '../sops/tree.ts';
import {
  checkReach,
  KUSTOMIZATION_NAMES,
  type Kustomization,
  type KustomizeTree,
  onDisk,
  type Reach,
  readKustomization,
} from './kustomize-check.ts';
import { annotatedBuild, type KustomizeOrigin } from './origin-annotations.ts';
import { kustomizeWrittenAt, placesOf, type SourcePlace } from './origins.ts';
import { runToolWithWarnings, type ToolLimits, type ToolRun, toolLimits } from './tool.ts';

export { KUSTOMIZATION_NAMES, type KustomizeTree };

export interface KustomizeOptions {
  /** The kubectl binary: `render.kubectl`, else `MOORING_KUBECTL`, else `kubectl` on PATH. */
  kubectl?: string | undefined;
  /** Whether resources and bases may be URLs (fetched by kustomize); false by default. */
  allowRemoteBases?: boolean | undefined;
  /** The bounds of each kubectl run (render.toolTimeout, toolMaxOutputBytes, toolMemoryBytes). */
  limits?: ToolLimits | undefined;
  /**
   * The age identities for SOPS files under the folders a build reads: with them, such files are decrypted in a
   * private copy that kustomize builds (sops/tree.ts); without them, kustomize reads the files as they are.
   */
  identities?: IdentitySource | undefined;
}

/** The options of the configuration's render and decryption sections; `signal` gives the build up (the sync stopped). */
export function kustomizeOptions(
  config: {
    render: {
      kubectl?: string | undefined;
      kustomize: { allowRemoteBases: boolean };
      toolTimeout?: number | undefined;
      toolMaxOutputBytes?: number | undefined;
      toolMemoryBytes?: number | undefined;
    };
    decryption?: { ageKeyFile?: string | undefined } | undefined;
  },
  signal?: AbortSignal,
): KustomizeOptions {
  return {
    kubectl: config.render.kubectl,
    allowRemoteBases: config.render.kustomize.allowRemoteBases,
    limits: toolLimits(config.render, signal),
    // Read at each build (a rotated key Secret is used at once), and only when a file is encrypted.
    identities: () => loadAgeIdentities(config.decryption?.ageKeyFile),
  };
}

export function isKustomizationFile(path: string): boolean {
  return (KUSTOMIZATION_NAMES as readonly string[]).includes(posix.basename(path));
}

function isUnder(path: string, folder: string): boolean {
  return folder === '.' || path.startsWith(`${folder}/`);
}

/**
 * What the git that kustomize runs may fetch: nothing unless remote bases are allowed (a second wall behind the
 * checks, should kustomize take for a repository something they read as a folder), and then only over the network
 * (https, http, ssh): never a path or `file://` URL of this machine, such as a remote base's submodule may name.
 */
export function kustomizeGitEnv(allowRemoteBases: boolean): Record<string, string> {
  return {
    GIT_ALLOW_PROTOCOL: allowRemoteBases ? 'https:http:ssh' : 'none',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
  };
}

/**
 * `kubectl kustomize` of one kustomization, as one manifest file named after it, with its warnings and where its
 * objects were written. `reach` is what the build may read (checkReach).
 */
async function build(
  tree: KustomizeTree,
  k: Kustomization,
  options: KustomizeOptions,
  reach: Reach,
  staged?: Staged,
): Promise<ManifestFile> {
  const folder = staged ? staged.at(onDisk(tree, k.folder)) : onDisk(tree, k.folder);
  const run = (target: string): ToolRun => ({
    binary: options.kubectl ?? process.env.MOORING_KUBECTL ?? 'kubectl',
    configuredBy: 'render.kubectl or MOORING_KUBECTL',
    args: ['kustomize', target, '--load-restrictor', 'LoadRestrictionsRootOnly'],
    label: k.label,
    step: 'kustomize build',
    env: kustomizeGitEnv(options.allowRemoteBases ?? false),
    ...options.limits,
    secrets: staged?.secrets,
    clean: (why) => {
      // A checkout's or a decrypted copy's temporary folder means nothing to the reader: name files as the user does.
      let text = staged ? staged.clean(why) : why;
      if (tree.root !== '') text = text.split(`${tree.root}/`).join('').split(tree.root).join('.');
      // kustomize and git repeat remote bases' URLs with their credentials: never pass those on.
      text = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@'"]*@/gi, '$1');
      return text;
    },
  });
  const placed = (origins: Map<string, KustomizeOrigin>) =>
    placesOf(origins, { folder: k.folder, onDisk: (label) => onDisk(tree, label), readable: reach.folders });
  // One build with origin annotations, taken out again, when the user's own build asks for none (kustomize runs
  // once). When the user's does, or that build cannot be shown to equal the plain one, the plain build runs too;
  // when it failed, the plain build alone says why (naming the user's folder, not a throwaway one).
  const annotated = reach.buildMetadata ? undefined : await originsOf(folder, run, true).catch(() => null);
  if (annotated?.text !== undefined)
    return builtFile(k, annotated.text, annotated.warnings, staged, await placed(annotated.origins));
  const [plain, origins] = await Promise.allSettled([
    runToolWithWarnings(run(folder)),
    annotated === undefined ? originsOf(folder, run, false) : Promise.resolve(annotated),
  ]);
  if (plain.status === 'rejected') throw plain.reason;
  const found = origins.status === 'fulfilled' ? origins.value : null;
  const places = found ? await placed(found.origins) : undefined;
  return builtFile(k, plain.value.stdout, plain.value.warnings, staged, places);
}

/** A build as one manifest file named after its kustomization. */
function builtFile(
  k: Kustomization,
  text: string,
  warnings: readonly string[],
  staged: Staged | undefined,
  places: Map<string, SourcePlace> | undefined,
): ManifestFile {
  // The values decrypted into the copy go with the build: whatever later quotes its objects redacts them.
  return {
    path: `${k.label} (built)`,
    text,
    perDocument: true,
    ...(staged ? { secrets: staged.secrets } : {}),
    ...(warnings.length > 0 ? { warnings } : {}),
    ...(places && places.size > 0 ? { writtenAt: kustomizeWrittenAt(places) } : {}),
  };
}

/**
 * The origins of the objects a build of `folder` makes (origins.ts), by object identity, their paths relative to
 * `folder`: from a build of a throwaway kustomization naming `folder` as its resource, with origin annotations.
 * With them, `withText`, the build's text without the annotations (withoutOrigins), and what kustomize warned of.
 */
async function originsOf(
  folder: string,
  run: (target: string) => ToolRun,
  withText: boolean,
): Promise<{ origins: Map<string, KustomizeOrigin>; text: string | undefined; warnings: string[] }> {
  const wrapper = await realpath(await mkdtemp(join(tmpdir(), 'mooring-origins-')));
  try {
    const target = await realpath(folder);
    // kustomize takes no absolute path as a resource.
    const resource = relative(wrapper, target).split(sep).join('/');
    await writeFile(
      join(wrapper, 'kustomization.yaml'),
      stringifyYaml({ resources: [resource], buildMetadata: ['originAnnotations'] }),
    );
    const { stdout, warnings } = await runToolWithWarnings(run(wrapper));
    const { origins, text } = annotatedBuild(stdout, withText);
    // Paths from the throwaway kustomization's folder, made relative to the folder built.
    const rebase = (path: string | undefined) =>
      path === undefined ? undefined : relative(target, resolve(wrapper, path)).split(sep).join('/');
    for (const origin of origins.values()) {
      if (origin.repo) continue; // a path within the remote base
      origin.path = rebase(origin.path);
      origin.configuredIn = rebase(origin.configuredIn);
    }
    return { origins, text, warnings };
  } finally {
    await rm(wrapper, { recursive: true, force: true });
  }
}

/**
 * The files with those under kustomization folders replaced by the builds of the kustomizations (see the top of
 * this file). `kustomizations` are the kustomization files among (or beside) the files, as labels.
 */
export async function buildKustomizations(
  files: readonly ManifestFile[],
  kustomizations: readonly string[],
  tree: KustomizeTree,
  options: KustomizeOptions = {},
): Promise<ManifestFile[]> {
  if (kustomizations.length === 0) return [...files];
  const all = await Promise.all([...new Set(kustomizations)].sort().map((l) => readKustomization(tree, l)));
  const folders = all.map((k) => k.folder);
  const named = new Set(
    all.flatMap((k) => k.entries.map((e) => posix.normalize(posix.join(k.folder, e)).replace(/\/$/, ''))),
  );
  const unnamed = all.filter((k) => !named.has(k.folder));
  const roots = unnamed.filter(
    (k) => !unnamed.some((other) => other.folder !== k.folder && isUnder(k.folder, other.folder)),
  );
  if (roots.length === 0)
    throw new StalledError(`${all[0]?.label}: every kustomization is a base of another one (a cycle)`);
  const plain = files.filter((f) => !folders.some((folder) => isUnder(f.path, folder)));
  const built: ManifestFile[] = [];
  for (const k of roots) {
    const read = await checkReach(tree, k, options);
    built.push(await buildDecrypted(tree, k, read, options));
  }
  return [...plain, ...built];
}

/** The build of `k`, from a decrypted copy of the folders it reads when SOPS files lie among them. */
async function buildDecrypted(
  tree: KustomizeTree,
  k: Kustomization,
  reach: Reach,
  options: KustomizeOptions,
): Promise<ManifestFile> {
  if (!options.identities) return build(tree, k, options, reach);
  const places: Place[] = reach.folders.map((folder) => ({ disk: onDisk(tree, folder), label: folder }));
  // The repository the folders' links stay in, as checkReach bounds the fields.
  const boundary = tree.insideRoot
    ? tree.root
    : (tree.boundary ?? (await workTreeOf(onDisk(tree, k.folder))));
  const encrypted = await sopsFilesUnder(places, boundary);
  if (encrypted.length === 0) return build(tree, k, options, reach);
  const staged = await stageDecrypted(places, encrypted, options.identities, tree.root, boundary);
  try {
    return await build(tree, k, options, reach, staged);
  } finally {
    await staged.remove();
  }
}
