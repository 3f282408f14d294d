// Parsing manifest files: multi-document YAML (and JSON, a subset of YAML 1.2), Lists flattened, empty
// documents skipped. Bounded in file size, documents per file and alias expansion, so that a hostile file
// (a "billion laughs") is rejected fast. Every object keeps the file:line:column it was defined at: for text a
// tool built (kustomize, helm template), the place the user wrote it, as the build says (`writtenAt`).
import { randomBytes } from 'node:crypto';
import { isMap, isNode, isScalar, isSeq, LineCounter, type Node } from 'yaml';
import { type ItemPlaces, type Place, type ReadDocument, readDocuments } from '../yaml/documents.ts';
import { YamlLimitError } from '../yaml/errors.ts';
import { DEFAULT_YAML_LIMITS, type YamlLimits } from '../yaml/limits.ts';
import { parseYamlDocuments } from '../yaml/parse.ts';
import { RenderError } from './errors.ts';
import { isHookObject } from './hooks.ts';
import { isObject, type JsonValue, type KubeObject, type Origin, type SourcedObject } from './manifest.ts';
import { nameProblem, namespaceProblem } from './names.ts';
import { sizeOverLimit } from './size-limits.ts';

export interface ManifestFile {
  path: string;
  text: string;
  /**
   * The values decrypted into `text` (SOPS), to be redacted from whatever shows text built from it (render/redact.ts).
   * Never shown, logged or stored.
   */
  secrets?: readonly string[] | undefined;
  /**
   * What the tool that built `text` printed as warnings (kustomize's deprecations, helm's notices), each naming
   * what was built: for the CLI to print and the agent to log. Never part of the manifests.
   */
  warnings?: readonly string[] | undefined;
  /**
   * For text a tool built: where the object at `at` in `text` (or, without an object, the line of `at`) was
   * written, so that problems name the user's file rather than the tool's output; undefined when not known.
   */
  writtenAt?: ((at: Origin, object?: unknown) => WrittenAt | undefined) | undefined;
  /**
   * The documents of `text`, already read (src/yaml/documents.ts): filled in by the reader of a deployment's files
   * (sources/deployment-manifests.ts) for a large text, read in a worker so that the event loop never composes it.
   */
  documents?: readonly ReadDocument[] | undefined;
  /**
   * The text is a stream of documents rather than a file (a tool's output, standard input): `maxFileBytes` holds
   * each document and `maxDocumentsPerFile` does not apply; the whole was bounded where it was read
   * (render.toolMaxOutputBytes).
   */
  perDocument?: boolean | undefined;
  /** For a chart's output: the dependencies fetched for it from allowed repositories, which its release records. */
  dependencies?: readonly { name: string; version: string; repository: string; digest: string }[] | undefined;
  /** Who signed the commit it was read at, when its Git source verifies signatures (`openpgp FPR (Alice <…>)`). */
  signedBy?: string | undefined;
  /** Who signed each followed artifact's digest, by source name, when its source verifies signatures (`cosign SHA256:…`). */
  artifactsSignedBy?: Readonly<Record<string, string>> | undefined;
}

/** Where an object of built text was written (sources/build/origins.ts). */
export interface WrittenAt {
  /** The object's place: in a file of the user's (`base/web.yaml:3:1`), or a template's rendered document. */
  origin: Origin;
  /** A field's place, given where it is in the built text. */
  locate(path: readonly (string | number)[], built: Origin): Origin;
}

export interface ParseLimits {
  maxFileBytes: number;
  maxDocumentsPerFile: number;
  /** The YAML limits of each document (src/yaml/limits.ts): nodes, depth, aliases. */
  yaml: YamlLimits;
}

export const DEFAULT_LIMITS: ParseLimits = {
  maxFileBytes: 4 * 1024 * 1024,
  maxDocumentsPerFile: 1000,
  yaml: DEFAULT_YAML_LIMITS,
};

/** Parses every file; returns the objects, or throws nothing and reports problems through `errors`. */
export function parseManifestFiles(
  files: readonly ManifestFile[],
  limits: ParseLimits = DEFAULT_LIMITS,
): { objects: SourcedObject[]; errors: RenderError[] } {
  const objects: SourcedObject[] = [];
  const errors: RenderError[] = [];
  const charts = chartFolders(files);
  for (const folder of charts) {
    const at = folder === '' ? 'Chart.yaml' : `${folder}/Chart.yaml`;
    errors.push(
      new RenderError(
        `this folder holds a Helm chart, which is not read as plain manifests: deploy it as a chart (a deployment's helm: {chart: ${folder || '.'}}; mooring render/deploy of the folder renders it)`,
        { origin: { file: at, line: 1, column: 1 } },
      ),
    );
  }
  for (const file of files) {
    // A chart's own files would each be one more problem (templates are not YAML): one line says it all.
    if (charts.some((folder) => inChart(file.path, folder))) continue;
    parseFile(file, limits, objects, errors);
  }
  return { objects, errors };
}

/** The folders among the files that hold a chart: a `Chart.yaml` beside a `templates/` folder of files. */
function chartFolders(files: readonly ManifestFile[]): string[] {
  const folders: string[] = [];
  for (const file of files) {
    const m = /^(?:(.*)\/)?Chart\.yaml$/.exec(file.path);
    if (!m) continue;
    const folder = m[1] ?? '';
    const templates = folder === '' ? 'templates/' : `${folder}/templates/`;
    if (files.some((f) => f.path.startsWith(templates))) folders.push(folder);
  }
  return folders;
}

function inChart(path: string, folder: string): boolean {
  return folder === '' || path.startsWith(`${folder}/`);
}

function parseFile(
  file: ManifestFile,
  limits: ParseLimits,
  objects: SourcedObject[],
  errors: RenderError[],
): void {
  const start: Origin = { file: file.path, line: 1, column: 1 };
  // A tool's output (or standard input) is held to the limits one document at a time (documentLimits).
  const bytes = file.perDocument ? 0 : Buffer.byteLength(file.text, 'utf8');
  if (bytes > limits.maxFileBytes) {
    errors.push(
      new RenderError(`file ${sizeOverLimit(bytes, 'maxFileBytes', limits.maxFileBytes)}`, {
        origin: start,
      }),
    );
    return;
  }
  const written = (origin: Origin, object?: unknown): WrittenAt | undefined =>
    file.writtenAt?.(origin, object);
  const origin = (place: Place): Origin => ({ file: file.path, line: place.line, column: place.column });
  // Fields are located in the syntax tree only to report a problem, which is rare. The trees are not kept for
  // that (a large set would hold all of them for the whole deploy): the file is parsed again the first time a
  // field of one of its objects is asked for. Not a large file read in a worker (file.documents): composing it
  // here would hold the event loop for seconds, so its fields are placed at their object.
  const lines = new LineCounter();
  let again: ReturnType<typeof parseYamlDocuments> | undefined;
  const reparse = file.documents
    ? undefined
    : (index: number): Node | undefined => {
        again ??= parseYamlDocuments(file.text, { file: file.path, limits: limits.yaml, lineCounter: lines });
        return again[index]?.contents ?? undefined;
      };
  const at = (offset: number): Origin => {
    const pos = lines.linePos(offset);
    return origin({ line: pos.line, column: pos.col });
  };
  const firstObject = objects.length;
  const firstError = errors.length;
  let count = 0;
  let docs: Iterable<ReadDocument>;
  try {
    // Counted against the YAML limits before anything is composed: a hostile file is refused here. A large file
    // was read in a worker already (file.documents), by the reader of a deployment's files.
    docs =
      file.documents ??
      readDocuments(file.text, { file: file.path, limits: limits.yaml, ...documentLimits(file, limits) });
  } catch (error) {
    refuseWhole(error);
    return;
  }
  try {
    readEach(docs);
  } catch (error) {
    refuseWhole(error);
  }
  /** A file past a YAML limit (counted as it is read) gives that refusal alone: none of its objects. */
  function refuseWhole(error: unknown): void {
    if (!(error instanceof YamlLimitError)) throw error;
    objects.length = firstObject;
    errors.length = firstError;
    const place = { file: file.path, line: error.line, column: error.column };
    errors.push(new RenderError(error.reason, { origin: written(place)?.origin ?? place }));
  }
  function readEach(docs: Iterable<ReadDocument>): void {
    for (const doc of docs) {
      const index = count++;
      // Past the limit, documents are only counted: the file is refused whole, with its number of documents.
      if ('skipped' in doc || 'empty' in doc) continue;
      if ('errors' in doc) {
        for (const e of doc.errors) {
          const built = origin(e);
          errors.push(new RenderError(yamlMessage(e.message), { origin: written(built)?.origin ?? built }));
        }
        continue;
      }
      const docOrigin = origin(doc.at);
      if ('tooLarge' in doc) {
        errors.push(
          new RenderError(`document ${sizeOverLimit(doc.tooLarge, 'maxFileBytes', limits.maxFileBytes)}`, {
            origin: written(docOrigin)?.origin ?? docOrigin,
            object: doc.object,
          }),
        );
        continue;
      }
      if ('valueError' in doc) {
        errors.push(
          new RenderError(yamlMessage(doc.valueError), { origin: written(docOrigin)?.origin ?? docOrigin }),
        );
        continue;
      }
      if (doc.value === null || doc.value === undefined) continue;
      // Objects are changed as they are rendered: each parse of a file read in advance gets values of its own.
      const value = file.documents ? structuredClone(doc.value) : doc.value;
      collect(value, docOrigin, doc.items, origin, objects, errors, {
        root: reparse ? () => reparse(index) : undefined,
        at,
        prefix: [],
        written,
      });
    }
  }
  if (count > documentLimits(file, limits).maxDocuments) {
    objects.length = firstObject;
    errors.length = firstError;
    errors.push(
      new RenderError(
        `${count} documents, more than the limit of ${limits.maxDocumentsPerFile} per file (render.maxDocumentsPerFile)`,
        { origin: start },
      ),
    );
  }
}

/**
 * How the documents of `file` are bounded: a file's by their number and its own size; a tool's output's (and standard
 * input's) each by the file size limit, their number by the bound of the whole.
 */
export function documentLimits(
  file: Pick<ManifestFile, 'perDocument'>,
  limits: Pick<ParseLimits, 'maxFileBytes' | 'maxDocumentsPerFile'>,
): { maxDocuments: number; maxDocumentBytes?: number | undefined } {
  return file.perDocument
    ? { maxDocuments: Number.POSITIVE_INFINITY, maxDocumentBytes: limits.maxFileBytes }
    : { maxDocuments: limits.maxDocumentsPerFile };
}

/** The node at exactly `path` from `start`, or undefined. */
function walkExactly(start: unknown, path: readonly (string | number)[]): Node | undefined {
  let current: unknown = start;
  for (const segment of path) {
    if (isMap(current))
      current = current.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment))?.value;
    else if (isSeq(current) && typeof segment === 'number') current = current.items[segment];
    else return undefined;
  }
  return isNode(current) ? current : undefined;
}

/** How to find an object's node again: its document's root, re-parsed on demand, and the path from there. */
interface NodeRef {
  /** Undefined for a file read in a worker: its fields are placed at their object. */
  root: (() => Node | undefined) | undefined;
  /** The place of an offset in the text, once `root` has parsed it. */
  at: (offset: number) => Origin;
  prefix: readonly (string | number)[];
  /** For built text: where an object was written (ManifestFile.writtenAt). */
  written: (origin: Origin, object?: unknown) => WrittenAt | undefined;
}

/** The node at `path` from `start`, or the nearest enclosing node that exists (undefined: not even `start`). */
function walk(start: unknown, path: readonly (string | number)[]): Node | undefined {
  let current: unknown = start;
  let found: Node | undefined = isNode(start) ? start : undefined;
  for (const segment of path) {
    if (isMap(current)) {
      const pair = current.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
      if (!pair) break;
      current = pair.value;
    } else if (isSeq(current) && typeof segment === 'number') {
      current = current.items[segment];
    } else break;
    if (!isNode(current)) break;
    found = current;
  }
  return found;
}

function collect(
  value: unknown,
  origin: Origin,
  items: readonly ItemPlaces[] | undefined,
  place: (at: Place) => Origin,
  objects: SourcedObject[],
  errors: RenderError[],
  ref: NodeRef,
): void {
  if (!isObject(value)) {
    const what = Array.isArray(value) ? 'a sequence' : `a ${typeof value}`;
    errors.push(
      new RenderError(`a manifest must be a mapping, found ${what}`, {
        origin: ref.written(origin)?.origin ?? origin,
      }),
    );
    return;
  }
  const kind = value.kind;
  if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(value.items)) {
    value.items.forEach((item, index) => {
      const itemPlace = items?.[index];
      collect(item, itemPlace ? place(itemPlace) : origin, itemPlace?.items, place, objects, errors, {
        ...ref,
        prefix: [...ref.prefix, 'items', index],
      });
    });
    return;
  }
  const written = ref.written(origin, value);
  const problem = shapeProblem(value);
  if (problem) {
    // Built text renames objects (kustomize's namePrefix) and holds many: the object as built says which one.
    errors.push(
      new RenderError(problem, written ? { origin: written.origin, object: builtObject(value) } : { origin }),
    );
    return;
  }
  const root = ref.root;
  const locateBuilt = (path: readonly (string | number)[]): Origin => {
    if (!root) return origin;
    // The object's own node, as it was during the first parse; then the field within it.
    const self = ref.prefix.length === 0 ? root() : walkExactly(root(), ref.prefix);
    const found = walk(self, path);
    return found?.range ? ref.at(found.range[0]) : origin;
  };
  const locate = written
    ? (path: readonly (string | number)[]) => written.locate(path, locateBuilt(path))
    : locateBuilt;
  objects.push({ object: value as unknown as KubeObject, origin: written?.origin ?? origin, locate });
}

/** `Deployment prod/web`, from what an object that may be malformed holds. */
function builtObject(value: { [key: string]: JsonValue }): string | undefined {
  const metadata = isObject(value.metadata) ? value.metadata : {};
  const name = typeof metadata.name === 'string' ? metadata.name : undefined;
  if (typeof value.kind !== 'string' || name === undefined) return undefined;
  const namespace =
    typeof metadata.namespace === 'string' && metadata.namespace !== '' ? `${metadata.namespace}/` : '';
  return `${value.kind} ${namespace}${name}`;
}

/** The characters the API server draws a generated name's suffix from (no vowels, no look-alikes). */
const SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

function shapeProblem(value: { [key: string]: JsonValue }): string | undefined {
  // A hook may be written with generateName (a fresh name per sync, as the API server would give it); any other
  // object needs a stable name. Said so, rather than that a name is missing.
  const metadata0 = isObject(value.metadata) ? value.metadata : undefined;
  if (metadata0 && metadata0.generateName !== undefined && metadata0.name === undefined) {
    const annotations = isObject(metadata0.annotations) ? metadata0.annotations : undefined;
    if (
      isHookObject(annotations) &&
      typeof metadata0.generateName === 'string' &&
      metadata0.generateName !== ''
    ) {
      const suffix = Array.from(randomBytes(5), (b) => SUFFIX_ALPHABET[b % SUFFIX_ALPHABET.length]).join('');
      metadata0.name = `${metadata0.generateName}${suffix}`;
      delete metadata0.generateName;
    } else {
      return `${typeof value.kind === 'string' ? `${value.kind} ` : ''}metadata.generateName is only for hooks (helm.sh/hook, argocd.argoproj.io/hook): any other object needs a stable name (metadata.name)`;
    }
  }
  const missing: string[] = [];
  if (typeof value.apiVersion !== 'string' || value.apiVersion === '') missing.push('apiVersion');
  if (typeof value.kind !== 'string' || value.kind === '') missing.push('kind');
  const metadata = value.metadata;
  if (!isObject(metadata) || typeof metadata.name !== 'string' || metadata.name === '')
    missing.push('metadata.name');
  if (missing.length > 0) {
    const kind = typeof value.kind === 'string' ? `${value.kind} ` : '';
    return `${kind}object is missing ${missing.join(', ')}`;
  }
  // Names become request paths: refused here, before any request, with the file and line (names.ts).
  const named = nameProblem(
    value.apiVersion as string,
    value.kind as string,
    (metadata as { name: string }).name,
  );
  if (named) return `${value.kind} ${named}`;
  const namespace = (metadata as { [key: string]: JsonValue }).namespace;
  if (namespace !== undefined && namespace !== null && namespace !== '') {
    if (typeof namespace !== 'string') return `${value.kind} metadata.namespace must be a string`;
    const problem = namespaceProblem(namespace);
    if (problem) return `${value.kind} ${problem}`;
  }
  for (const field of ['labels', 'annotations'] as const) {
    const map = (metadata as { [key: string]: JsonValue })[field];
    if (map === undefined || map === null) continue;
    if (!isObject(map)) return `metadata.${field} must be a mapping`;
    for (const [key, v] of Object.entries(map)) {
      if (typeof v !== 'string') return `metadata.${field}["${key}"] must be a string (quote it in YAML)`;
    }
  }
  return undefined;
}

/** The yaml package's message without its own position and code excerpt (we print file:line:column). */
function yamlMessage(message: string): string {
  return (message.split('\n')[0] ?? message).replace(/ at line \d+, column \d+:?$/, '');
}
