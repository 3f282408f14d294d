// What a kustomization may reach, checked before kustomize runs: every file-bearing field (kustomize-fields.ts) of
// the kustomization built and of every local kustomization it reaches (bases, components, folders of generators,
// transformers and validators), recursively, and the plugin configurations in files those fields name.
//
// The boundary is the repository: for a Git commit the checkout's root; for a local source its folder; for the
// CLI's paths the Git work tree holding the kustomization (the nearest folder above it with `.git`), and when
// there is none, no boundary beyond kustomize's own (files under their kustomization's folder). Refused, naming the
// kustomization file and the field: a URL (resources, bases and components only with
// render.kustomize.allowRemoteBases, never `file:`), an absolute path, a path that leaves the boundary, and a
// path whose real location (symlinks resolved) leaves it. Checkouts never write symlinks; local trees may hold
// them.
import { realpath, stat } from 'node:fs/promises';
import { posix, relative, resolve, sep } from 'node:path';
import { StalledError } from '../../errors.ts';
import { isObject } from '../../render/manifest.ts';
import { parseYaml, parseYamlDocuments, toValue } from '../../yaml/parse.ts';
import { readBounded } from '../local/bounded-read.ts';
import { workTreeOf } from '../local/symlinks.ts';
import {
  classifyPath,
  type FieldEntry,
  kustomizationEntries,
  kustomizeClones,
  leavesRoot,
  pluginConfigEntries,
} from './kustomize-fields.ts';

export const KUSTOMIZATION_NAMES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'] as const;
const MAX_KUSTOMIZATIONS = 1000;
const MAX_PLUGIN_DOCUMENTS = 1000;

/** Where the tree lies on disk: file labels are joined to `root` ('' when labels are paths on disk already). */
export interface KustomizeTree {
  root: string;
  /** `root` is the repository (a Git checkout): nothing may leave it. Otherwise the enclosing work tree. */
  insideRoot: boolean;
  /** For local paths: the folder nothing may leave (a local source's folder) instead of the work tree. */
  boundary?: string | undefined;
}

export interface Kustomization {
  /** The kustomization file, as named in messages. */
  label: string;
  folder: string;
  doc: unknown;
  /** resources, bases and components entries. */
  entries: string[];
}

export function onDisk(tree: KustomizeTree, label: string): string {
  return tree.root === '' ? label : posix.join(tree.root, label);
}

/** The URL without credentials or query, for messages. */
export function safeUrl(url: string): string {
  return url.replace(/\/\/[^/@]*@/, '//').replace(/\?.*$/, '');
}

export async function readKustomization(tree: KustomizeTree, label: string): Promise<Kustomization> {
  let text: string;
  try {
    text = await readBounded(onDisk(tree, label));
  } catch (error) {
    throw new StalledError(`${label}: cannot be read`, { cause: error });
  }
  let doc: unknown;
  try {
    doc = parseYaml(text, { file: label });
  } catch (error) {
    throw new StalledError(`${label}: ${(error as Error).message.split('\n')[0]}`, { cause: error });
  }
  const entries = kustomizationEntries(doc)
    .filter((e) => e.kind === 'base')
    .map((e) => e.value);
  return { label, folder: posix.dirname(label), doc, entries };
}

/** The kustomization file of a folder, if it holds one. */
export async function kustomizationIn(tree: KustomizeTree, folder: string): Promise<string | undefined> {
  for (const name of KUSTOMIZATION_NAMES) {
    const label = posix.join(folder, name);
    if ((await stat(onDisk(tree, label)).catch(() => undefined))?.isFile()) return label;
  }
  return undefined;
}

export type Judgement =
  | { result: 'local'; path: string }
  | { result: 'remote' }
  | { result: 'skip' }
  | { result: 'refused'; why: string };

export interface JudgeOptions {
  allowRemoteBases: boolean;
  /** Whether nothing may leave the root (`folder` is then relative to it). */
  bounded: boolean;
  /** Whether a `host.tld/…` path names something on disk (kustomize reads it as a local path first). */
  existsLocally?: ((path: string) => boolean) | undefined;
}

/** The decision on one entry of a kustomization in `folder`; pure (the refusal lacks the file's name). */
export function judgeEntry(entry: FieldEntry, folder: string, options: JudgeOptions): Judgement {
  const shown = entry.written ?? entry.value;
  const asUrl = (): Judgement => {
    const url = safeUrl(shown.trim());
    if (entry.kind === 'chart-repo')
      return options.allowRemoteBases
        ? { result: 'remote' }
        : {
            result: 'refused',
            why: `${entry.field} "${url}": kustomize would pull a chart from it (render.kustomize.allowRemoteBases is false; --allow-remote-bases for the CLI)`,
          };
    if (entry.kind === 'base') {
      if (/^\s*file:/i.test(shown))
        return {
          result: 'refused',
          why: `${entry.field} "${url}" is a file URL: only files in the repository may be read`,
        };
      return options.allowRemoteBases
        ? { result: 'remote' }
        : {
            result: 'refused',
            why: `${entry.field} remote base "${url}" is not allowed (render.kustomize.allowRemoteBases is false; --allow-remote-bases for the CLI)`,
          };
    }
    return {
      result: 'refused',
      why: `${entry.field} "${url}" is a URL: only files in the repository may be read`,
    };
  };
  if (entry.kind === 'unreadable')
    return {
      result: 'refused',
      why: `${entry.field} cannot be read as plugin configurations: ${entry.value}`,
    };
  if (entry.written !== undefined && classifyPath(entry.written).type === 'url') return asUrl();
  const kind = classifyPath(entry.value).type;
  if (kind === 'empty') return { result: 'skip' };
  if (kind === 'url') return asUrl();
  if (entry.kind === 'chart-repo') return asUrl();
  if (kind === 'absolute')
    return {
      result: 'refused',
      why: `${entry.field} "${shown}" is an absolute path: only files in the repository may be read`,
    };
  const path = posix.normalize(posix.join(folder, entry.value));
  // kustomize clones what reads as a repository before it looks for a folder of that name.
  if ((entry.kind === 'base' || entry.kind === 'plugin') && kustomizeClones(entry.value.trim()))
    return asUrl();
  if (kind === 'remote-like' && !options.existsLocally?.(path)) return asUrl();
  if (options.bounded && leavesRoot(folder, entry.value))
    return { result: 'refused', why: `${entry.field} "${shown}" leads outside the repository` };
  return { result: 'local', path };
}

function inside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : `${folder}${sep}`);
}

interface Walking {
  k: Kustomization;
  /** Reached as a generator, transformer or validator: its resource files are plugin configurations. */
  plugins: boolean;
}

/** What a build of one kustomization reaches. */
export interface Reach {
  /** The folders of the kustomizations reached (what a decrypted copy must hold). */
  folders: string[];
  /**
   * Whether the build's own output may hold kustomize's origin annotations: a kustomization reached asks for
   * `buildMetadata`, or a remote base (unread here) is among the entries.
   */
  buildMetadata: boolean;
}

/** Checks everything `start` may make kustomize read (see the top of this file). */
export async function checkReach(
  tree: KustomizeTree,
  start: Kustomization,
  options: { allowRemoteBases?: boolean | undefined },
): Promise<Reach> {
  const boundary = tree.insideRoot
    ? resolve(tree.root)
    : tree.boundary !== undefined
      ? resolve(tree.boundary)
      : await workTreeOf(onDisk(tree, start.folder));
  const boundaryReal = boundary === undefined ? undefined : await realpath(boundary);
  const seen = new Map<string, boolean>([[start.label, false]]);
  const queue: Walking[] = [{ k: start, plugins: false }];
  let buildMetadata = false;

  const check = async (
    label: string,
    folderLabel: string,
    entry: FieldEntry,
  ): Promise<{ path: string; isDir: boolean } | undefined> => {
    const folderDisk = resolve(onDisk(tree, folderLabel));
    const rel =
      boundary === undefined ? folderLabel : relative(boundary, folderDisk).split(sep).join('/') || '.';
    const candidates = new Map<string, boolean>();
    const remoteLike = classifyPath(entry.value).type === 'remote-like';
    if (remoteLike) {
      const disk = resolve(folderDisk, entry.value);
      candidates.set(
        posix.normalize(posix.join(rel, entry.value)),
        Boolean(await stat(disk).catch(() => undefined)),
      );
    }
    const judged = judgeEntry(entry, rel, {
      allowRemoteBases: options.allowRemoteBases ?? false,
      bounded: boundary !== undefined,
      existsLocally: (p) => candidates.get(p) ?? false,
    });
    if (judged.result === 'refused') throw new StalledError(`${label}: ${judged.why}`);
    if (judged.result === 'remote') buildMetadata = true;
    if (judged.result !== 'local') return undefined;
    const disk = resolve(folderDisk, entry.value);
    const info = await stat(disk).catch(() => undefined);
    if (!info) return undefined;
    if (boundaryReal !== undefined && !inside(await realpath(disk), boundaryReal))
      throw new StalledError(
        `${label}: ${entry.field} "${entry.written ?? entry.value}" leads outside the repository through a symlink`,
      );
    return { path: posix.normalize(posix.join(folderLabel, entry.value)), isDir: info.isDirectory() };
  };

  /** The plugin configurations of a file: their paths are read from the kustomization's folder. */
  const checkPluginFile = async (file: string, folderLabel: string): Promise<void> => {
    let docs: unknown[];
    try {
      const text = await readBounded(onDisk(tree, file));
      const all = parseYamlDocuments(text, { file });
      const invalid = all.find((d) => d.errors.length > 0)?.errors[0];
      if (invalid) throw invalid;
      if (all.length > MAX_PLUGIN_DOCUMENTS)
        throw new StalledError(`${file}: more than ${MAX_PLUGIN_DOCUMENTS} documents`);
      docs = all.map((d) => toValue(d, {}));
    } catch (error) {
      if (error instanceof StalledError) throw error;
      throw new StalledError(`${file}: ${(error as Error).message.split('\n')[0]}`, { cause: error });
    }
    for (const [i, doc] of docs.entries()) {
      for (const entry of pluginConfigEntries(doc, docs.length > 1 ? `[${i}]` : ''))
        await check(file, folderLabel, entry);
    }
  };

  while (queue.length > 0) {
    const { k, plugins } = queue.shift() as Walking;
    if (isObject(k.doc) && k.doc.buildMetadata !== undefined) buildMetadata = true;
    for (const entry of kustomizationEntries(k.doc)) {
      const found = await check(k.label, k.folder, entry);
      if (!found || (entry.kind !== 'base' && entry.kind !== 'plugin')) continue;
      const asPlugins = plugins || entry.kind === 'plugin';
      if (!found.isDir) {
        if (asPlugins) await checkPluginFile(found.path, k.folder);
        continue;
      }
      const nested = await kustomizationIn(tree, found.path);
      if (!nested || seen.get(nested) === true || (seen.has(nested) && !asPlugins)) continue;
      if (seen.size >= MAX_KUSTOMIZATIONS)
        throw new StalledError(`${start.label}: more than ${MAX_KUSTOMIZATIONS} kustomizations`);
      seen.set(nested, asPlugins);
      queue.push({ k: await readKustomization(tree, nested), plugins: asPlugins });
    }
  }
  return { folders: [...seen.keys()].map((label) => posix.dirname(label)), buildMetadata };
}
