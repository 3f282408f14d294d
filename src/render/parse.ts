// Parsing manifest files: multi-document YAML (and JSON, a subset of YAML 1.2), Lists flattened, empty
// documents skipped. Bounded in file size, documents per file and alias expansion, so that a hostile file
// (a "billion laughs") is rejected fast. Every object keeps the file:line:column it was defined at.
import { isMap, isNode, isScalar, isSeq, LineCounter, type Node, parseAllDocuments } from 'yaml';
import { RenderError } from './errors.ts';
import { isObject, type JsonValue, type KubeObject, type Origin, type SourcedObject } from './manifest.ts';

export interface ManifestFile {
  path: string;
  text: string;
}

export interface ParseLimits {
  maxFileBytes: number;
  maxDocumentsPerFile: number;
  /** How many alias expansions one document may make. */
  maxAliasCount: number;
}

export const DEFAULT_LIMITS: ParseLimits = {
  maxFileBytes: 4 * 1024 * 1024,
  maxDocumentsPerFile: 1000,
  maxAliasCount: 100,
};

/** Parses every file; returns the objects, or throws nothing and reports problems through `errors`. */
export function parseManifestFiles(
  files: readonly ManifestFile[],
  limits: ParseLimits = DEFAULT_LIMITS,
): { objects: SourcedObject[]; errors: RenderError[] } {
  const objects: SourcedObject[] = [];
  const errors: RenderError[] = [];
  for (const file of files) parseFile(file, limits, objects, errors);
  return { objects, errors };
}

function parseFile(
  file: ManifestFile,
  limits: ParseLimits,
  objects: SourcedObject[],
  errors: RenderError[],
): void {
  const start: Origin = { file: file.path, line: 1, column: 1 };
  const bytes = Buffer.byteLength(file.text, 'utf8');
  if (bytes > limits.maxFileBytes) {
    errors.push(
      new RenderError(`file is ${bytes} bytes, more than the limit of ${limits.maxFileBytes}`, {
        origin: start,
      }),
    );
    return;
  }
  const lines = new LineCounter();
  const docs = parseAllDocuments(file.text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  if (!Array.isArray(docs)) return; // an empty stream
  if (docs.length > limits.maxDocumentsPerFile) {
    errors.push(
      new RenderError(
        `${docs.length} documents, more than the limit of ${limits.maxDocumentsPerFile} per file`,
        {
          origin: start,
        },
      ),
    );
    return;
  }
  const at = (offset: number | undefined): Origin => {
    const pos = lines.linePos(offset ?? 0);
    return { file: file.path, line: pos.line, column: pos.col };
  };
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        const pos = e.linePos?.[0];
        const origin = pos ? { file: file.path, line: pos.line, column: pos.col } : at(e.pos[0]);
        errors.push(new RenderError(yamlMessage(e.message), { origin }));
      }
      continue;
    }
    if (doc.contents === null) continue; // an empty document
    const origin = at(doc.contents.range?.[0]);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: limits.maxAliasCount });
    } catch (error) {
      errors.push(new RenderError(yamlMessage((error as Error).message), { origin }));
      continue;
    }
    if (value === null || value === undefined) continue;
    collect(value, origin, doc.contents, at, objects, errors);
  }
}

function collect(
  value: unknown,
  origin: Origin,
  node: unknown,
  at: (offset: number | undefined) => Origin,
  objects: SourcedObject[],
  errors: RenderError[],
): void {
  if (!isObject(value)) {
    const what = Array.isArray(value) ? 'a sequence' : `a ${typeof value}`;
    errors.push(new RenderError(`a manifest must be a mapping, found ${what}`, { origin }));
    return;
  }
  const kind = value.kind;
  if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(value.items)) {
    const itemNodes = isMap(node) ? (node.get('items', true) as Node | undefined) : undefined;
    value.items.forEach((item, index) => {
      const itemNode = isSeq(itemNodes) ? itemNodes.items[index] : undefined;
      const itemOrigin = at((itemNode as Node | undefined)?.range?.[0]) ?? origin;
      collect(item, itemOrigin, itemNode, at, objects, errors);
    });
    return;
  }
  const problem = shapeProblem(value);
  if (problem) {
    errors.push(new RenderError(problem, { origin }));
    return;
  }
  const locate = (path: readonly (string | number)[]): Origin => {
    let current: unknown = node;
    let found: Node | undefined = isNode(node) ? node : undefined;
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
    return found?.range ? at(found.range[0]) : origin;
  };
  objects.push({ object: value as unknown as KubeObject, origin, locate });
}

function shapeProblem(value: { [key: string]: JsonValue }): string | undefined {
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
  if (isObject(metadata) && metadata.generateName !== undefined) {
    return 'metadata.generateName is not supported: a GitOps object needs a stable name';
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
