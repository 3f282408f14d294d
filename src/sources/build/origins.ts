// Where the objects of a build were written, so that a problem with one names the file the user wrote rather than
// a line of output they never see (ManifestFile.writtenAt, read by render/parse.ts).
//
// helm template: each document follows `# Source: <chart>/templates/<file>.yaml`; an object is named in that
// template, `charts/web/templates/deployment.yaml (rendered):12:3`, the line counted in the template's rendered
// document (the template itself holds `{{ }}` where the output has values).
//
// kustomize: the build asks kustomize for `config.kubernetes.io/origin` annotations, read into a table from object
// identity to origin by origin-annotations.ts (they never reach the manifests). Here each origin is followed into
// the user's files: an object from a resource file is found in that file by kind and name (the only one of its kind in the file, or the one whose name is the object's, or the longest one the built name
// holds: kustomize adds prefixes, suffixes and hashes), and its fields in its document there; a generated object
// is named at its entry of configMapGenerator or secretGenerator in the kustomization that generated it. When the
// object is not found, its file is named at line 1 (and the object, by parse.ts).
//
// The annotations come from a commit's files and could be forged: a source file is only read under the folders the
// build was allowed to read (kustomize-check.ts), as a regular file, bounded in size.
import { lstat, readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import { type Document, isMap, isNode, isScalar, isSeq, type Node } from 'yaml';
import { lowerBound, maxOf } from '../../arrays.ts';
import { isObject, type Origin } from '../../render/manifest.ts';
import type { WrittenAt } from '../../render/parse.ts';
import { type Place, type ReadDocument, readDocuments } from '../../yaml/documents.ts';
import { parseYamlDocuments } from '../../yaml/parse.ts';
import { safeUrl } from './kustomize-check.ts';
import { identityKey, type KustomizeOrigin } from './origin-annotations.ts';

type Path = readonly (string | number)[];
type WrittenAtFn = (at: Origin, object?: unknown) => WrittenAt | undefined;

const MAX_SOURCE_BYTES = 4 * 1024 * 1024;

// ---- helm template -------------------------------------------------------------------------------------------

/**
 * The places of `helm template` output: a document after `# Source: web/templates/x.yaml` is named
 * `<label>/templates/x.yaml (rendered)` (the chart's name replaced by its folder), lines counted from the line
 * after the comment.
 */
export function helmWrittenAt(text: string, label: string): WrittenAtFn | undefined {
  const starts: { line: number; file: string }[] = [];
  const marker = '# Source: ';
  // One pass: each line that is the marker (the first line, or one after a `---` line), numbered by the newlines
  // counted since the one before, so that a large output is never split into lines.
  let lineIndex = 0;
  let counted = 0;
  const lineOf = (position: number): number => {
    for (let nl = text.indexOf('\n', counted); nl !== -1 && nl < position; nl = text.indexOf('\n', nl + 1)) {
      lineIndex += 1;
      counted = nl + 1;
    }
    return lineIndex;
  };
  const next = (from: number): number => {
    const found = text.indexOf(`\n${marker}`, from);
    return found === -1 ? -1 : found + 1;
  };
  for (let begin = text.startsWith(marker) ? 0 : next(0); begin !== -1; begin = next(begin)) {
    const end = text.indexOf('\n', begin);
    const rest = text.slice(begin + marker.length, end === -1 ? text.length : end);
    const afterSeparator =
      begin === 0 ||
      (begin >= 4 && text.startsWith('---\n', begin - 4) && (begin === 4 || text[begin - 5] === '\n'));
    if (rest.length < 1 || rest.length > 500 || !afterSeparator) continue;
    const inChart = rest
      .trim()
      .replace(/[\p{Cc}]/gu, '')
      .split('/')
      .slice(1)
      .join('/');
    starts.push({ line: lineOf(begin) + 1, file: `${posix.join(label, inChart)} (rendered)` });
  }
  if (starts.length === 0) return undefined;
  // The last start before the line: a binary search, as each object and each of its errors is placed.
  const place = (built: Origin): Origin | undefined => {
    const found =
      starts[lowerBound(0, starts.length, (i) => (starts[i] as { line: number }).line < built.line) - 1];
    return found && { file: found.file, line: built.line - found.line, column: built.column };
  };
  return (at) => {
    const origin = place(at);
    if (!origin) return undefined;
    return { origin, locate: (_path, built) => place(built) ?? origin };
  };
}

/** The documents of a source file, or none past a YAML limit. */
function candidateDocs(source: string): Document.Parsed[] {
  try {
    return parseYamlDocuments(source, { file: 'a kustomization source' });
  } catch {
    return [];
  }
}

// ---- kustomize: the objects in their files -----------------------------------------------------------------------

/** An object's document in a source file: where it starts, and how to reach its node again. */
interface Found {
  at: Place;
  doc: number;
  prefix: Path;
}

/** Where an object lies in a file: a file label, and (when read) the file's text. */
export interface SourcePlace {
  file: string;
  text?: string | undefined;
  /** Made by this generator kind of the kustomization `file` (else `file` is a resource file). */
  generator?: string | undefined;
}

/** The one candidate that is reliably the object, by the rules at the top of this file. */
function pick<T extends { name: string }>(candidates: readonly T[], name: string): T | undefined {
  if (candidates.length === 1) return candidates[0];
  const exact = candidates.filter((c) => c.name === name);
  if (exact.length > 0) return exact.length === 1 ? exact[0] : undefined;
  const held = candidates.filter((c) => c.name !== '' && name.includes(c.name));
  const longest = maxOf(
    held.map((c) => c.name.length),
    0,
  );
  const best = held.filter((c) => c.name.length === longest);
  return best.length === 1 ? best[0] : undefined;
}

const scalar = (node: unknown, key: string): string =>
  isMap(node) && isScalar(node.get(key, true))
    ? String((node.get(key, true) as { value: unknown }).value)
    : '';

/** A document (or a List's item) of a file, or a generator's entry in a kustomization. */
interface Candidate extends Found {
  kind: string;
  name: string;
}

/**
 * The objects of a resource file, and the generator entries (kind `ConfigMapGenerator`…) if it is a kustomization:
 * read as values with their places (the direct reader's, src/yaml/documents.ts), and from the file's syntax tree
 * only where a place is not among them (a generator's entries, a List's items the direct reader did not place, a
 * document it could not read).
 */
export function candidatesIn(source: string): Candidate[] {
  let docs: ReadDocument[];
  try {
    docs = [
      ...readDocuments(source, { file: 'a kustomization source', maxDocuments: Number.POSITIVE_INFINITY }),
    ];
  } catch {
    return [];
  }
  const candidates: Candidate[] = [];
  for (const [index, doc] of docs.entries()) {
    if ('empty' in doc) continue;
    if (!('value' in doc)) return treeCandidates(source);
    const root = doc.value;
    if (!isObject(root)) continue;
    if (index === 0 && Object.values(GENERATOR_FIELDS).some((field) => Array.isArray(root[field])))
      return treeCandidates(source);
    const items = root.items;
    if (text(root.kind).endsWith('List') && Array.isArray(items)) {
      if (doc.items?.length !== items.length) return treeCandidates(source);
      for (const [i, item] of items.entries()) {
        const at = doc.items[i];
        if (isObject(item) && at)
          candidates.push({
            at: { line: at.line, column: at.column },
            doc: index,
            prefix: ['items', i],
            ...named(item),
          });
      }
    } else candidates.push({ at: doc.at, doc: index, prefix: [], ...named(root) });
  }
  return candidates;
}

/** A scalar as the syntax tree's `String(value)` gives it; '' for a collection or nothing. */
const text = (v: unknown): string =>
  v === null || ['string', 'number', 'boolean', 'bigint'].includes(typeof v) ? String(v) : '';

const named = (object: Record<string, unknown>): { kind: string; name: string } => ({
  kind: text(object.kind),
  name: isObject(object.metadata) ? text(object.metadata.name) : '',
});

/** candidatesIn from the file's syntax tree. */
export function treeCandidates(source: string): Candidate[] {
  const docs = candidateDocs(source);
  const lines = lineStarts(source);
  const candidates: Candidate[] = [];
  // A generator's entry is named by its `name`, an object by its `metadata.name`.
  const add = (node: unknown, doc: number, prefix: Path, generator?: string) => {
    if (!isMap(node)) return;
    const kind = generator ?? scalar(node, 'kind');
    const name = generator ? scalar(node, 'name') : scalar(node.get('metadata', true), 'name');
    candidates.push({ at: placeOf(lines, node.range?.[0] ?? 0), doc, prefix, kind, name });
  };
  for (const [index, doc] of docs.entries()) {
    const root = doc.contents;
    if (!isMap(root)) continue;
    const items = root.get('items', true);
    if (scalar(root, 'kind').endsWith('List') && isSeq(items))
      for (const [i, item] of items.items.entries()) add(item, index, ['items', i]);
    else add(root, index, []);
    for (const [generator, field] of Object.entries(GENERATOR_FIELDS)) {
      const entries = root.get(field, true);
      if (index === 0 && isSeq(entries))
        for (const [i, entry] of entries.items.entries()) add(entry, index, [field, i], generator);
    }
  }
  return candidates;
}

/** Where each line of `source` starts. */
function lineStarts(source: string): number[] {
  const starts = [0];
  for (let i = source.indexOf('\n'); i !== -1; i = source.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** The line and column (1-based) of `offset`: the last line starting at or before it. */
function placeOf(starts: readonly number[], offset: number): Place {
  let low = 0;
  let high = starts.length - 1;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if ((starts[mid] ?? 0) <= offset) low = mid;
    else high = mid - 1;
  }
  return { line: low + 1, column: offset - (starts[low] ?? 0) + 1 };
}

/** Where, among a file's candidates, the object of `kind` named (as built) `name` lies. */
export function findObject(candidates: readonly Candidate[], kind: string, name: string): Found | undefined {
  return pick(
    candidates.filter((c) => c.kind === kind),
    name,
  );
}

const GENERATOR_FIELDS: Record<string, string> = {
  ConfigMapGenerator: 'configMapGenerator',
  SecretGenerator: 'secretGenerator',
};

/** The node at `path` from `start`, or the nearest enclosing node that exists. */
function walk(start: unknown, path: Path): Node | undefined {
  let current: unknown = start;
  let found: Node | undefined = isNode(start) ? start : undefined;
  for (const segment of path) {
    if (isMap(current)) {
      const pair = current.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      current = pair.value;
    } else if (isSeq(current) && typeof segment === 'number') current = current.items[segment];
    else break;
    if (!isNode(current)) break;
    found = current;
  }
  return found;
}

/**
 * The places of a kustomize build's objects: `places` by identityKey. Source files are parsed when an object of
 * theirs is first placed (the place of each object is needed: it is its origin), once each; their trees are
 * parsed again only to locate a field of an object that has a problem.
 */
export function kustomizeWrittenAt(places: ReadonlyMap<string, SourcePlace>): WrittenAtFn {
  const found = new Map<string, Found | undefined>();
  const candidates = new Map<string, Candidate[]>();
  const starts = new Map<string, number[]>();
  const position = (place: SourcePlace, offset: number): Origin => {
    let lines = starts.get(place.file);
    if (!lines) {
      lines = lineStarts(place.text ?? '');
      starts.set(place.file, lines);
    }
    return { file: place.file, ...placeOf(lines, offset) };
  };
  return (_at, object) => {
    const key = identityKey(object);
    const place = key === undefined ? undefined : places.get(key);
    if (!place || key === undefined) return undefined;
    const o = object as { kind: string; metadata: { name: string } };
    if (!found.has(key)) {
      let inFile = candidates.get(place.file);
      if (!inFile) {
        try {
          inFile = place.text === undefined ? [] : candidatesIn(place.text);
        } catch {
          inFile = [];
        }
        candidates.set(place.file, inFile);
      }
      found.set(key, findObject(inFile, place.generator ?? o.kind, o.metadata.name));
    }
    const where = found.get(key);
    if (!where || place.text === undefined)
      return {
        origin: { file: place.file, line: 1, column: 1 },
        locate: () => ({ file: place.file, line: 1, column: 1 }),
      };
    const origin: Origin = { file: place.file, ...where.at };
    const source = place.text;
    return {
      origin,
      locate: (path) => {
        // A generated object's fields are not in the kustomization: its entry is the place.
        if (place.generator) return origin;
        const root = documentAt(candidateDocs(source), where, source)?.contents;
        const node = walk(walk(root, where.prefix), path);
        return node?.range ? position(place, node.range[0]) : origin;
      },
    };
  };
}

/**
 * The document of the tree that holds `where`: its index among the documents, checked by the place of its node (the
 * direct reader and the tree count documents alike; were they ever to differ, the place decides).
 */
function documentAt(docs: Document.Parsed[], where: Found, source: string): Document.Parsed | undefined {
  const lines = lineStarts(source);
  const holds = (doc: Document.Parsed | undefined) => {
    const node = walk(doc?.contents, where.prefix);
    const at = placeOf(lines, node?.range?.[0] ?? -1);
    return at.line === where.at.line && at.column === where.at.column;
  };
  return holds(docs[where.doc]) ? docs[where.doc] : (docs.find(holds) ?? docs[where.doc]);
}

// ---- kustomize: from origins to files ------------------------------------------------------------------------

/** How a build's origins are named and read: the built kustomization's folder, and where files may be read. */
export interface OriginTree {
  /** The built kustomization's folder, as labels name it (`overlays/prod`). */
  folder: string;
  /** A label's file on disk. */
  onDisk: (label: string) => string;
  /** The folders (labels) the build was allowed to read: only files under them are read. */
  readable: readonly string[];
}

function under(label: string, folder: string): boolean {
  return folder === '.' ? !label.startsWith('../') && label !== '..' : label.startsWith(`${folder}/`);
}

async function readSource(tree: OriginTree, label: string): Promise<string | undefined> {
  if (posix.isAbsolute(label) !== posix.isAbsolute(tree.folder)) return undefined;
  if (!tree.readable.some((folder) => under(label, folder))) return undefined;
  const disk = tree.onDisk(label);
  const info = await lstat(disk).catch(() => undefined);
  if (!info?.isFile() || info.size > MAX_SOURCE_BYTES) return undefined;
  return readFile(disk, 'utf8').catch(() => undefined);
}

/** Each origin as the user names its file (relative to the built folder's label), with the file's text. */
export async function placesOf(
  origins: ReadonlyMap<string, KustomizeOrigin>,
  tree: OriginTree,
): Promise<Map<string, SourcePlace>> {
  const texts = new Map<string, Promise<string | undefined>>();
  const read = (label: string) => {
    let pending = texts.get(label);
    if (!pending) {
      pending = readSource(tree, label);
      texts.set(label, pending);
    }
    return pending;
  };
  const places = new Map<string, SourcePlace>();
  for (const [key, origin] of origins) {
    if (origin.repo) {
      const ref = origin.ref ? `?ref=${origin.ref}` : '';
      places.set(key, { file: `${safeUrl(origin.repo)}//${origin.path ?? origin.configuredIn ?? ''}${ref}` });
      continue;
    }
    const relative = origin.path ?? origin.configuredIn ?? '';
    if (posix.isAbsolute(relative)) continue;
    const file = posix.normalize(posix.join(tree.folder, relative));
    const generator = origin.path ? undefined : origin.generator;
    places.set(key, { file, text: await read(file), ...(generator ? { generator } : {}) });
  }
  return places;
}
