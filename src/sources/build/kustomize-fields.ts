// What a kustomization may make kustomize read, as data: every field that names a file, a folder or a URL, with
// the field's path for messages (`configMapGenerator[0].files[1]`), and what kind of entry it is. Pure: reading
// the files and deciding what lies where is kustomize.ts's.
//
// - `base`: resources, bases, components: a local file or folder, or (render.kustomize.allowRemoteBases) a URL.
// - `file`: every other path kustomize reads (generator files and env files, patches, replacements, values files,
//   the chart home, openapi, crds, configurations): only a file in the repository, never a URL (kustomize's
//   loader fetches http(s) URLs in these fields with a plain GET from wherever the agent runs).
// - `plugin`: generators, transformers, validators given as paths: a file of plugin configurations or a folder
//   holding a kustomization of them, whose own fields are checked in turn.
// - `chart-repo`: a helmCharts repository kustomize would pull a chart from (with --enable-helm).
// - `unreadable`: inline plugin configurations that are not YAML (`value` says why): refused, as unchecked.

import { posix } from 'node:path';
import { append } from '../../arrays.ts';
import { parseYamlDocuments, toValue } from '../../yaml/parse.ts';

export type EntryKind = 'base' | 'file' | 'plugin' | 'chart-repo' | 'unreadable';

export interface FieldEntry {
  /** `patches[0].path`. */
  field: string;
  /** The path to check: for a `files` entry `key=path`, the part after the `=`. */
  value: string;
  /** The entry as written, when it differs from `value` (`key=path`): a URL as a whole is refused as one. */
  written?: string | undefined;
  kind: EntryKind;
}

type Doc = Record<string, unknown>;

function isDoc(value: unknown): value is Doc {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function strings(out: FieldEntry[], doc: Doc, key: string, kind: EntryKind, prefix = ''): void {
  const value = doc[key];
  if (typeof value === 'string') out.push({ field: `${prefix}${key}`, value, kind });
  else
    list(value).forEach((entry, i) => {
      if (typeof entry === 'string') out.push({ field: `${prefix}${key}[${i}]`, value: entry, kind });
    });
}

/** `files:` entries are `path` or `key=path` (kustomize cuts at the first `=`). */
function generatorFiles(out: FieldEntry[], doc: Doc, prefix: string): void {
  list(doc.files).forEach((entry, i) => {
    if (typeof entry !== 'string') return;
    const cut = entry.indexOf('=');
    const field = `${prefix}files[${i}]`;
    if (cut < 0) out.push({ field, value: entry, kind: 'file' });
    else out.push({ field, value: entry.slice(cut + 1), written: entry, kind: 'file' });
  });
  strings(out, doc, 'envs', 'file', prefix);
  strings(out, doc, 'env', 'file', prefix);
}

function helmChart(out: FieldEntry[], chart: Doc, prefix: string): void {
  strings(out, chart, 'chartHome', 'file', prefix);
  strings(out, chart, 'valuesFile', 'file', prefix);
  strings(out, chart, 'additionalValuesFiles', 'file', prefix);
  strings(out, chart, 'repo', 'chart-repo', prefix);
  strings(out, chart, 'chartRepoUrl', 'chart-repo', prefix);
}

/** A patchesStrategicMerge or PatchStrategicMergeTransformer entry is a path unless it is an inline patch. */
function isInlinePatch(entry: string): boolean {
  return entry.includes('\n') || /^\s*[{[]/.test(entry);
}

/**
 * The fields of a builtin plugin's configuration (an entry of generators/transformers/validators, or a document
 * of a file named there). The fields of every builtin kind are checked whatever the kind says: a kind kustomize
 * does not know is refused by kustomize itself (mooring enables no plugins).
 */
export function pluginConfigEntries(config: unknown, prefix: string): FieldEntry[] {
  const out: FieldEntry[] = [];
  if (!isDoc(config)) return out;
  const p = prefix === '' ? '' : `${prefix}.`;
  generatorFiles(out, config, p);
  strings(out, config, 'path', 'file', p);
  list(config.paths).forEach((entry, i) => {
    if (typeof entry === 'string' && !isInlinePatch(entry))
      out.push({ field: `${p}paths[${i}]`, value: entry, kind: 'file' });
  });
  helmChart(out, config, p);
  list(config.replacements).forEach((r, i) => {
    if (isDoc(r)) strings(out, r, 'path', 'file', `${p}replacements[${i}].`);
  });
  return out;
}

/**
 * The fields of plugin configurations written inline as YAML text (kustomize reads a multi-line entry of
 * generators/transformers/validators as configurations, not as a path).
 */
function inlineConfigEntries(text: string, prefix: string): FieldEntry[] {
  let docs: unknown[];
  try {
    const all = parseYamlDocuments(text, { file: prefix || 'an inline plugin configuration' });
    const invalid = all.find((d) => d.errors.length > 0)?.errors[0];
    if (invalid) throw invalid;
    docs = all.map((d) => toValue(d, {}));
  } catch (error) {
    // What cannot be read here cannot be checked: refused rather than left to kustomize's own parser.
    return [{ field: prefix, value: (error as Error).message.split('\n')[0] ?? '', kind: 'unreadable' }];
  }
  return docs.flatMap((doc, i) => pluginConfigEntries(doc, docs.length > 1 ? `${prefix}[${i}]` : prefix));
}

/** Every entry of a kustomization that names something to read, in the order of the fields. */
export function kustomizationEntries(doc: unknown): FieldEntry[] {
  const out: FieldEntry[] = [];
  if (!isDoc(doc)) return out;
  for (const key of ['resources', 'bases', 'components']) strings(out, doc, key, 'base');
  for (const key of ['configMapGenerator', 'secretGenerator'])
    list(doc[key]).forEach((g, i) => {
      if (isDoc(g)) generatorFiles(out, g, `${key}[${i}].`);
    });
  if (isDoc(doc.helmGlobals)) {
    strings(out, doc.helmGlobals, 'chartHome', 'file', 'helmGlobals.');
    strings(out, doc.helmGlobals, 'configHome', 'file', 'helmGlobals.');
  }
  for (const key of ['helmCharts', 'helmChartInflationGenerator'])
    list(doc[key]).forEach((c, i) => {
      if (isDoc(c)) helmChart(out, c, `${key}[${i}].`);
    });
  for (const key of ['patches', 'patchesJson6902', 'replacements'])
    list(doc[key]).forEach((p, i) => {
      if (isDoc(p)) strings(out, p, 'path', 'file', `${key}[${i}].`);
    });
  list(doc.patchesStrategicMerge).forEach((entry, i) => {
    if (typeof entry === 'string' && !isInlinePatch(entry))
      out.push({ field: `patchesStrategicMerge[${i}]`, value: entry, kind: 'file' });
  });
  for (const key of ['generators', 'transformers', 'validators'])
    list(doc[key]).forEach((entry, i) => {
      if (typeof entry !== 'string') append(out, pluginConfigEntries(entry, `${key}[${i}]`));
      else if (!isInlinePatch(entry)) out.push({ field: `${key}[${i}]`, value: entry, kind: 'plugin' });
      else append(out, inlineConfigEntries(entry, `${key}[${i}]`));
    });
  if (isDoc(doc.openapi)) strings(out, doc.openapi, 'path', 'file', 'openapi.');
  strings(out, doc, 'crds', 'file');
  strings(out, doc, 'configurations', 'file');
  return out;
}

export type PathClass =
  /** Fetched by kustomize or git: a scheme (`https:`, `git::`, `file:`), or `user@host:path`. */
  | { type: 'url' }
  /** `host.tld/path`: kustomize tries it as a local path first, then as a Git repository. */
  | { type: 'remote-like' }
  | { type: 'absolute' }
  | { type: 'empty' }
  | { type: 'relative' };

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
const SCP_LIKE = /^[^/\s]+@[^/\s]+:/;
const HOST_PATH = /^[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d+)?\//i;

export function classifyPath(value: string): PathClass {
  const text = value.trim();
  if (text === '') return { type: 'empty' };
  if (SCHEME.test(text) || SCP_LIKE.test(text)) return { type: 'url' };
  if (text.startsWith('/') || text.startsWith('\\')) return { type: 'absolute' };
  if (HOST_PATH.test(text)) return { type: 'remote-like' };
  return { type: 'relative' };
}

/**
 * Whether kustomize takes a base (`resources`, `components`, `bases` entry) for a Git repository to clone, as its
 * loader decides it: it asks that first, before looking on disk, so `github.com/org/repo` or `user@host/org/repo`
 * is cloned even when a folder of that name is in the repository (users write `./github.com/…` for the folder).
 * A model of kustomize 5's repository-URL parser: a scheme it knows, or none with a `github.com` host or a
 * `user@` prefix, then a repository path it can split off (a `_git/`, `//` or `.git` marker, or two segments).
 */
export function kustomizeClones(value: string): boolean {
  let n = value;
  if (n.startsWith('/')) return false;
  n = n.split('?')[0] ?? '';
  if (n.toLowerCase().startsWith('git::')) n = n.slice(5);
  let scheme = '';
  for (const prefix of ['ssh://', 'https://', 'http://', 'file://'])
    if (n.toLowerCase().startsWith(prefix)) {
      scheme = prefix;
      n = n.slice(prefix.length);
      break;
    }
  const user = /^[a-zA-Z][a-zA-Z0-9-]*@/.exec(n)?.[0] ?? '';
  n = n.slice(user.length);
  const github = /^github\.com[/:]/i.test(n);
  const scp = scheme === '' && (user !== '' || github);
  if (scheme === '' && !scp) return false;
  let rest: string;
  if (scheme === 'file://') rest = user + n;
  else {
    let at = n.indexOf('/');
    if (scp) {
      const colon = n.indexOf(':');
      if (at === -1 || (colon > 0 && colon < at)) at = colon;
    }
    const host = at >= 0 ? n.slice(0, at + 1) : n;
    rest = at >= 0 ? n.slice(at + 1) : '';
    if (host === '' && !github) return false;
  }
  let repo: string;
  let root: string;
  const gitRoot = rest.indexOf('_git/');
  const doubled = rest.indexOf('//');
  const suffix = rest.indexOf('.git');
  if (gitRoot >= 0) {
    const after = rest.slice(gitRoot + 5).split('/');
    repo = rest.slice(0, gitRoot + 5) + after[0];
    root = after.slice(1).join('/');
  } else if (doubled >= 0) {
    repo = rest.slice(0, doubled);
    root = rest.slice(doubled + 2);
  } else if (suffix >= 0) {
    repo = rest.slice(0, suffix + 4);
    root = rest.slice(suffix + 4);
  } else if (scheme === 'file://') {
    repo = rest;
    root = '';
  } else {
    const segments = rest.split('/');
    if (segments.length < 2) return false;
    repo = segments.slice(0, 2).join('/');
    root = segments.slice(2).join('/');
  }
  if (repo === '') return false;
  return posix.normalize(root.replace(/^\/+/, '') || '.').split('/')[0] !== '..';
}

/** Whether a relative `path` from `folder` (both relative to the root) ends outside the root. */
export function leavesRoot(folder: string, path: string): boolean {
  const joined = posix.normalize(posix.join(folder, path));
  return joined === '..' || joined.startsWith('../');
}
