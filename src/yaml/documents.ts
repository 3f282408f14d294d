// The documents of a manifest file, read one at a time into plain data: each document's value (or its errors),
// where its contents start and, for a `kind: *List`, where each item starts. What render needs of a file, and no
// syntax tree: a document's tree is garbage once its value is made. The same reading runs on the event loop for
// a small text (render/parse.ts) and in a worker for a large one (parse-async.ts), so both give the same objects,
// errors and origins; the worker's answer crosses threads as it is (structured clone).
import { type Document, isMap, isSeq, LineCounter, type Node } from 'yaml';
import { YamlLimitError } from './errors.ts';
import { fastDocument, UNREAD } from './fast-read.ts';
import { composeCounted, composeYaml, limitsOf, toValue, type YamlOptions } from './parse.ts';

/** A place in the text, 1-based. */
export interface Place {
  line: number;
  column: number;
}

/** Where a List's items start (each may be a List again). */
export interface ItemPlaces extends Place {
  items?: ItemPlaces[] | undefined;
}

export type ReadDocument =
  /** Past `maxDocuments`: only counted, not composed into a value. */
  | { skipped: true }
  /** Invalid YAML: the yaml package's messages and where each is. */
  | { errors: (Place & { message: string })[] }
  /** No contents (`---` alone, comments). */
  | { empty: true }
  /** The value could not be made (an alias expanded past the limit): the message, at the contents. */
  | { at: Place; valueError: string }
  /** Past `maxDocumentBytes`: its size in UTF-8 bytes and, when it says, `Kind namespace/name`; not made a value. */
  | { at: Place; tooLarge: number; object?: string | undefined }
  | { at: Place; value: unknown; items?: ItemPlaces[] | undefined };

export interface ReadOptions extends YamlOptions {
  /** Documents past this many are only counted (the file is refused with their number). */
  maxDocuments: number;
  /**
   * Documents larger than this many UTF-8 bytes are not made values (the text is a tool's output, bounded whole by
   * its own limit, and held to the file limit one document at a time). None when absent.
   */
  maxDocumentBytes?: number | undefined;
}

/**
 * The documents of `text`, one at a time. Counted against the limits first: throws YamlLimitError before the first
 * document is composed.
 */
export function readDocuments(text: string, options: ReadOptions): IterableIterator<ReadDocument> {
  const fast = (options.rules ?? 'kubernetes') === 'kubernetes' ? readFast(text, options) : undefined;
  if (fast) return fast.values();
  return readComposed(text, options);
}

/** readDocuments by the yaml package alone: the text counted whole, then each document composed in turn. */
export function readComposed(text: string, options: ReadOptions): Generator<ReadDocument> {
  const lines = new LineCounter();
  return documentsOf(withFirst(composeYaml(text, { ...options, lineCounter: lines })), lines, text, options);
}

/**
 * readDocuments by the direct reader (fast-read.ts), document by document, each one it declines composed by the yaml
 * package alone (its places moved to where its text is in the whole). Undefined when the text is left whole to the
 * yaml package: for what it does not read at all, and for any limit passed, so that the refusal is the one the yaml
 * path gives, at the same place.
 */
function readFast(text: string, options: ReadOptions): ReadDocument[] | undefined {
  if (UNREAD.test(text)) return undefined;
  const limits = limitsOf(options);
  const maxFileNodes = Math.max(limits.maxFileNodes ?? Number.POSITIVE_INFINITY, limits.maxNodes);
  const docs: ReadDocument[] = [];
  let total = 0;
  let line = 1;
  let counted = 0;
  const lineOf = (offset: number): number => {
    for (let i = text.indexOf('\n', counted); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
    counted = offset;
    return line;
  };
  // Every `---` line starts a document; what comes before the first, when anything does, is one too.
  let start = 0;
  while (start <= text.length) {
    const marked = text.startsWith('---', start);
    const next = text.indexOf('\n---', start + (marked ? 3 : 0));
    const end = next === -1 ? text.length : next + 1;
    const first = lineOf(start);
    const from = marked ? Math.min(end, start + 4) : start;
    const doc = fastDocument(text, from, end, marked ? first + 1 : first, limits.maxDepth);
    if (doc === undefined) {
      const read = composedPart(text.slice(start, end), first, options);
      if (read === undefined) return undefined;
      // A part is one document (the first, before any `---`, may be none): anything else is left to the whole. So
      // is a part with errors: an unclosed quote, for one, runs on past a `---` in the yaml package's reading.
      if (marked ? read.documents.length !== 1 : read.documents.length > 1) return undefined;
      if (read.documents.some((d) => 'errors' in d || 'valueError' in d)) return undefined;
      total += read.nodes;
      docs.push(...read.documents);
    } else if (doc === null) {
      // A `---` with nothing after it is a null document placed just past the marker, as the yaml package has it.
      if (marked) docs.push({ at: { line: first, column: 4 }, value: null, items: undefined });
    } else {
      if (doc.nodes > limits.maxNodes) return undefined;
      total += doc.nodes;
      // A document past maxDocumentBytes is refused by the yaml path, at its place: measured here only when it may be
      // (a character is at most 3 UTF-8 bytes), from its contents to the part's end, which holds whatever the yaml
      // package measures of it. A CRD of 400 KB in a tool's output is well under, and read here.
      const limit = options.maxDocumentBytes;
      if (
        limit !== undefined &&
        (end - doc.offset) * 3 > limit &&
        Buffer.byteLength(text.slice(doc.offset, end), 'utf8') > limit
      )
        return undefined;
      docs.push({ at: { line: doc.line, column: doc.column }, value: doc.value, items: undefined });
    }
    if (total > maxFileNodes || docs.length > options.maxDocuments) return undefined;
    if (end >= text.length) break;
    start = end;
  }
  return docs;
}

/**
 * The documents of `part` (a document of a larger text starting on line `line`), composed by the yaml package, with
 * their places in the whole text, and the nodes counted in them. Undefined when it is past a limit.
 */
function composedPart(
  part: string,
  line: number,
  options: ReadOptions,
): { documents: ReadDocument[]; nodes: number } | undefined {
  const lines = new LineCounter();
  let read: ReturnType<typeof composeCounted>;
  try {
    read = composeCounted(part, { ...options, lineCounter: lines });
  } catch (error) {
    if (error instanceof YamlLimitError) return undefined;
    throw error;
  }
  const shift = line - 1;
  const moved = (place: ItemPlaces): ItemPlaces => ({
    ...place,
    line: place.line + shift,
    ...(place.items ? { items: place.items.map(moved) } : {}),
  });
  const documents = [
    ...documentsOf(read.documents, lines, part, { ...options, maxDocuments: Number.POSITIVE_INFINITY }),
  ].map((doc): ReadDocument => {
    if ('errors' in doc) return { errors: doc.errors.map((e) => ({ ...e, line: e.line + shift })) };
    if (!('at' in doc)) return doc;
    const at = { line: doc.at.line + shift, column: doc.at.column };
    if ('value' in doc && doc.items) return { ...doc, at, items: doc.items.map(moved) };
    return { ...doc, at };
  });
  return { documents, nodes: read.counts.total };
}

function* documentsOf(
  docs: Generator<Document.Parsed>,
  lines: LineCounter,
  text: string,
  options: ReadOptions,
): Generator<ReadDocument> {
  const at = (offset: number | undefined): Place => {
    const pos = lines.linePos(offset ?? 0);
    return { line: pos.line, column: pos.col };
  };
  let index = -1;
  for (const doc of docs) {
    index++;
    if (index >= options.maxDocuments) {
      yield { skipped: true };
      continue;
    }
    // The position from the line counter: what parseAllDocuments' prettyErrors would set as linePos.
    if (doc.errors.length > 0) {
      yield { errors: doc.errors.map((e) => ({ ...at(e.pos[0]), message: e.message })) };
      continue;
    }
    if (doc.contents === null) {
      yield { empty: true };
      continue;
    }
    const start = at(doc.contents.range?.[0]);
    const bytes = documentBytes(text, doc, options.maxDocumentBytes);
    if (bytes !== undefined) {
      yield { at: start, tooLarge: bytes, object: describeObject(doc) };
      continue;
    }
    let value: unknown;
    try {
      value = toValue(doc, options);
    } catch (error) {
      yield { at: start, valueError: error instanceof Error ? error.message : String(error) };
      continue;
    }
    yield { at: start, value, items: itemPlaces(value, doc.contents, at) };
  }
}

/** The document's size in UTF-8 bytes when it is over `limit`; undefined within it (or without one). */
function documentBytes(text: string, doc: Document.Parsed, limit: number | undefined): number | undefined {
  if (limit === undefined) return undefined;
  // From its contents (not the `---` or comments before them) to its end.
  const start = doc.contents?.range?.[0] ?? doc.range[0];
  const end = doc.range[2];
  // A character is at most 3 UTF-8 bytes (a surrogate pair, 2 characters, is 4): counted only when it may matter.
  if ((end - start) * 3 <= limit) return undefined;
  const bytes = Buffer.byteLength(text.slice(start, end), 'utf8');
  return bytes > limit ? bytes : undefined;
}

/** `ConfigMap web/big`, from a composed document's own fields, when they are plain strings. */
function describeObject(doc: Document.Parsed): string | undefined {
  const field = (...path: string[]) => {
    const v = isMap(doc.contents) ? doc.getIn(path) : undefined;
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  const kind = field('kind');
  const name = field('metadata', 'name');
  if (!kind || !name) return undefined;
  const namespace = field('metadata', 'namespace');
  return `${kind} ${namespace ? `${namespace}/` : ''}${name}`;
}

/** Where the items of a `kind: *List` start, as render flattens them (render/parse.ts). */
function itemPlaces(
  value: unknown,
  node: unknown,
  at: (offset: number | undefined) => Place,
): ItemPlaces[] | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { kind, items } = value as { kind?: unknown; items?: unknown };
  if (typeof kind !== 'string' || !kind.endsWith('List') || !Array.isArray(items)) return undefined;
  const itemNodes = isMap(node) ? (node.get('items', true) as Node | undefined) : undefined;
  return items.map((item, index) => {
    const itemNode = isSeq(itemNodes) ? (itemNodes.items[index] as Node | undefined) : undefined;
    const place: ItemPlaces = at(itemNode?.range?.[0]);
    const nested = itemPlaces(item, itemNode, at);
    if (nested) place.items = nested;
    return place;
  });
}

/** The generator with its first step taken now, so that the count before composing throws here. */
function withFirst<T>(gen: Generator<T>): Generator<T> {
  const first = gen.next();
  return (function* () {
    if (first.done) return;
    yield first.value;
    yield* gen;
  })();
}
