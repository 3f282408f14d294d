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
// What a kustomization may reach: before kubectl runs, each built kustomization and the local bases it names
// (recursively) are read: a remote base (a URL, `git@…`, `host.tld/…` that is not a local path) is refused
// unless `render.kustomize.allowRemoteBases` is set, naming the kustomization file and the URL, and with
// `insideRoot` a local base outside the tree (a Git checkout) is refused too. kubectl runs with
// `--load-restrictor LoadRestrictionsRootOnly`, so patches and generator files stay under their kustomization.
import { readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { parse } from 'yaml';
import { StalledError } from '../../errors.ts';
import type { ManifestFile } from '../../render/parse.ts';
import { loadAgeIdentities } from '../sops/age-keys.ts';
import type { IdentitySource } from '../sops/decrypt.ts';
import { type Place, type Staged, sopsFilesUnder, stageDecrypted } from '../sops/tree.ts';
import { runTool } from './tool.ts';

export const KUSTOMIZATION_NAMES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'] as const;

export interface KustomizeOptions {
  /** The kubectl binary: `render.kubectl`, else `MOORING_KUBECTL`, else `kubectl` on PATH. */
  kubectl?: string | undefined;
  /** Whether resources and bases may be URLs (fetched by kustomize); false by default. */
  allowRemoteBases?: boolean | undefined;
  timeoutMs?: number | undefined;
  maxOutputBytes?: number | undefined;
  /**
   * The age identities for SOPS files under the folders a build reads: with them, such files are decrypted in a
   * private copy that kustomize builds (sops/tree.ts); without them, kustomize reads the files as they are.
   */
  identities?: IdentitySource | undefined;
}

/** Where the tree lies on disk: file labels are joined to `root` ('' when labels are paths on disk already). */
export interface KustomizeTree {
  root: string;
  /** Refuse local bases whose path leaves the tree (a label starting with `..`): for Git checkouts. */
  insideRoot: boolean;
}

/** The options of the configuration's render and decryption sections. */
export function kustomizeOptions(config: {
  render: { kubectl?: string | undefined; kustomize: { allowRemoteBases: boolean } };
  decryption?: { ageKeyFile?: string | undefined } | undefined;
}): KustomizeOptions {
  return {
    kubectl: config.render.kubectl,
    allowRemoteBases: config.render.kustomize.allowRemoteBases,
    // Read at each build (a rotated key Secret is used at once), and only when a file is encrypted.
    identities: () => loadAgeIdentities(config.decryption?.ageKeyFile),
  };
}

const MAX_KUSTOMIZATIONS = 1000;
const REMOTE = /^(?:[a-z][a-z0-9+.-]*:\/\/|git@|git::|[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d+)?\/)/i;

export function isKustomizationFile(path: string): boolean {
  return (KUSTOMIZATION_NAMES as readonly string[]).includes(posix.basename(path));
}

function onDisk(tree: KustomizeTree, label: string): string {
  return tree.root === '' ? label : posix.join(tree.root, label);
}

function isUnder(path: string, folder: string): boolean {
  return folder === '.' || path.startsWith(`${folder}/`);
}

/** The URL without credentials or query, for messages. */
function safeUrl(url: string): string {
  return url.replace(/\/\/[^/@]*@/, '//').replace(/\?.*$/, '');
}

interface Kustomization {
  /** The kustomization file, as named in messages. */
  label: string;
  folder: string;
  /** resources, bases and components entries. */
  entries: string[];
}

async function readKustomization(tree: KustomizeTree, label: string): Promise<Kustomization> {
  let text: string;
  try {
    text = await readFile(onDisk(tree, label), 'utf8');
  } catch (error) {
    throw new StalledError(`${label}: cannot be read`, { cause: error });
  }
  let doc: unknown;
  try {
    doc = parse(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new StalledError(`${label}: ${(error as Error).message.split('\n')[0]}`, { cause: error });
  }
  const entries: string[] = [];
  if (doc && typeof doc === 'object') {
    for (const key of ['resources', 'bases', 'components']) {
      const list = (doc as Record<string, unknown>)[key];
      if (Array.isArray(list)) for (const e of list) if (typeof e === 'string') entries.push(e);
    }
  }
  return { label, folder: posix.dirname(label), entries };
}

/** The kustomization file of a folder, if it holds one. */
async function kustomizationIn(tree: KustomizeTree, folder: string): Promise<string | undefined> {
  for (const name of KUSTOMIZATION_NAMES) {
    const label = posix.join(folder, name);
    const found = await readFile(onDisk(tree, label)).then(
      () => true,
      () => false,
    );
    if (found) return label;
  }
  return undefined;
}

async function isLocal(tree: KustomizeTree, label: string): Promise<boolean> {
  return readFile(onDisk(tree, label)).then(
    () => true,
    (error: NodeJS.ErrnoException) => error.code === 'EISDIR',
  );
}

/**
 * Refuses remote bases (unless allowed) and bases outside the tree, in `k` and the local bases it names; the
 * folders of `k` and of those bases (what the build reads: LoadRestrictionsRootOnly keeps each one's files under it).
 */
async function checkBases(
  tree: KustomizeTree,
  k: Kustomization,
  options: KustomizeOptions,
): Promise<string[]> {
  const seen = new Set<string>([k.label]);
  const queue = [k];
  while (queue.length > 0) {
    const current = queue.shift() as Kustomization;
    for (const entry of current.entries) {
      const local = posix.normalize(posix.join(current.folder, entry));
      if (await isLocal(tree, local)) {
        if (tree.insideRoot && (local === '..' || local.startsWith('../')))
          throw new StalledError(`${current.label}: resource ${entry} leads outside the repository`);
        const nested = await kustomizationIn(tree, local);
        if (nested && !seen.has(nested)) {
          if (seen.size >= MAX_KUSTOMIZATIONS)
            throw new StalledError(`${k.label}: more than ${MAX_KUSTOMIZATIONS} kustomizations`);
          seen.add(nested);
          queue.push(await readKustomization(tree, nested));
        }
        continue;
      }
      if (REMOTE.test(entry) && !options.allowRemoteBases)
        throw new StalledError(
          `${current.label}: remote base ${safeUrl(entry)} is not allowed (render.kustomize.allowRemoteBases is false)`,
        );
    }
  }
  return [...seen].map((label) => posix.dirname(label));
}

/** `kubectl kustomize` of one kustomization, as one manifest file named after it. */
async function build(
  tree: KustomizeTree,
  k: Kustomization,
  options: KustomizeOptions,
  staged?: Staged,
): Promise<ManifestFile> {
  const kubectl = options.kubectl ?? process.env.MOORING_KUBECTL ?? 'kubectl';
  const folder = staged ? staged.at(onDisk(tree, k.folder)) : onDisk(tree, k.folder);
  const args = ['kustomize', folder, '--load-restrictor', 'LoadRestrictionsRootOnly'];
  const text = await runTool({
    binary: kubectl,
    configuredBy: 'render.kubectl or MOORING_KUBECTL',
    args,
    label: k.label,
    step: 'kustomize build',
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes,
    clean: (why) => {
      // A checkout's or a decrypted copy's temporary folder means nothing to the reader: name files as the user does.
      let text = staged ? staged.clean(why) : why;
      if (tree.root !== '') text = text.split(`${tree.root}/`).join('').split(tree.root).join('.');
      // kustomize and git repeat remote bases' URLs with their credentials: never pass those on.
      text = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/\s@'"]*@/gi, '$1');
      return text;
    },
  });
  return { path: `${k.label} (built)`, text };
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
    const read = await checkBases(tree, k, options);
    built.push(await buildDecrypted(tree, k, read, options));
  }
  return [...plain, ...built];
}

/** The build of `k`, from a decrypted copy of the folders it reads when SOPS files lie among them. */
async function buildDecrypted(
  tree: KustomizeTree,
  k: Kustomization,
  folders: readonly string[],
  options: KustomizeOptions,
): Promise<ManifestFile> {
  if (!options.identities) return build(tree, k, options);
  const places: Place[] = folders.map((folder) => ({ disk: onDisk(tree, folder), label: folder }));
  const encrypted = await sopsFilesUnder(places);
  if (encrypted.length === 0) return build(tree, k, options);
  const staged = await stageDecrypted(places, encrypted, options.identities, tree.root);
  try {
    return await build(tree, k, options, staged);
  } finally {
    await staged.remove();
  }
}
