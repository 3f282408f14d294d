// The one way YAML is parsed in mooring: every text is counted against the limits first (count.ts), then
// composed by the yaml package, and its values made with the alias limit; a one-document text the direct reader
// takes (fast-read.ts: Kubernetes' rules, within the node and depth limits it counts as count.ts does) is read by it
// instead, with the same value. Large texts can be parsed off the event loop (worker.ts). How values are read is decided here too, for every caller at once: with the YAML 1.1
// rules of the Go libraries Kubernetes reads YAML with (schema.ts), so that `0400` is the 256 kubectl sends.
import {
  Composer,
  type Document,
  type DocumentOptions,
  type LineCounter,
  type ParseOptions,
  Parser,
  parseAllDocuments,
  parseDocument,
  type SchemaOptions,
} from 'yaml';
import { checkYaml, type YamlCounts } from './count.ts';
import { fastDocument, UNREAD } from './fast-read.ts';
import { checkKeys } from './keys.ts';
import { type YamlLimits, yamlLimits } from './limits.ts';
import { schemaOptions, WRITE_COMPAT, type YamlRules } from './schema.ts';

export interface YamlOptions {
  /** The file (or URL, or label) the text came from, named when it is refused. */
  file: string;
  /** The limits; the process's configured ones (limits.ts) when absent. */
  limits?: YamlLimits | undefined;
  /** Whether a mapping may repeat a key (false: an error, as for manifests). Default true: refused. */
  uniqueKeys?: boolean | undefined;
  /** Positions for error messages and callers that name lines. */
  lineCounter?: LineCounter | undefined;
  prettyErrors?: boolean | undefined;
  /** Whose reading of scalars (schema.ts): Kubernetes' unless the text is a SOPS file's own tree. */
  rules?: YamlRules | undefined;
}

/** The options every parse passes to the yaml package: one schema for every caller. */
function packageOptions(options: YamlOptions): ParseOptions & DocumentOptions & SchemaOptions {
  const rules = options.rules ?? 'kubernetes';
  return {
    ...schemaOptions(rules),
    // A SOPS file's tree is written back as text (sops/decrypt.ts) that Kubernetes' rules read next: strings any
    // YAML 1.1 reader could take otherwise are quoted, as sops's own writer does.
    ...(rules === 'sops' ? { compat: WRITE_COMPAT } : {}),
    // Repeated keys are found after composing, in linear time (keys.ts): the package's check is quadratic.
    uniqueKeys: false,
    prettyErrors: options.prettyErrors ?? true,
    ...(options.lineCounter ? { lineCounter: options.lineCounter } : {}),
  };
}

export function limitsOf(options: YamlOptions): YamlLimits {
  return options.limits ?? yamlLimits();
}

/**
 * The value of the first document of `text` (as yaml's `parse`): throws YamlLimitError past a limit, or the yaml
 * package's error for invalid YAML.
 */
export function parseYaml(text: string, options: YamlOptions): unknown {
  const direct = directValue(text, options);
  if (direct) return direct.value;
  const doc = parseYamlDocument(text, options);
  if (doc.errors.length > 0) throw doc.errors[0];
  return toValue(doc, options);
}

/**
 * parseYaml by the direct reader (fast-read.ts), when it takes the whole text as one document under Kubernetes' rules
 * with repeated keys refused: the same value, held to the same limits (a text past one, or one it declines, is left
 * to the yaml package, which refuses it as before). No syntax tree is made, and a command that reads only such small
 * texts (a Chart.yaml, a kustomization, an origin annotation per object) never runs the yaml package's composer.
 */
function directValue(text: string, options: YamlOptions): { value: unknown } | undefined {
  if ((options.rules ?? 'kubernetes') !== 'kubernetes' || options.uniqueKeys === false || options.lineCounter)
    return undefined;
  if (UNREAD.test(text) || text.startsWith('---') || text.includes('\n---')) return undefined;
  const limits = limitsOf(options);
  const doc = fastDocument(text, 0, text.length, 1, limits.maxDepth);
  if (doc === undefined) return undefined;
  if (doc === null) return { value: null };
  // maxFileNodes is never below maxNodes: one document within maxNodes is within both.
  if (doc.nodes > limits.maxNodes) return undefined;
  return { value: doc.value };
}

/** The first document of `text`, composed (errors in `doc.errors`, as yaml's `parseDocument`). */
export function parseYamlDocument(text: string, options: YamlOptions): Document.Parsed {
  const limits = limitsOf(options);
  checkYaml(text, options.file, limits);
  const doc = parseDocument(text, packageOptions(options));
  keysChecked(doc, text, options);
  return doc;
}

/**
 * A composed document's keys checked (keys.ts): repeated keys added to its errors unless the caller allows them, and
 * under Kubernetes' rules the keys and numbers Kubernetes refuses, the other keys given Go's text.
 */
function keysChecked(
  doc: Document.Parsed,
  text: string,
  options: YamlOptions,
  pretty = true,
): Document.Parsed {
  const rules = {
    unique: options.uniqueKeys !== false,
    kubernetes: (options.rules ?? 'kubernetes') === 'kubernetes',
  };
  const placing =
    pretty && (options.prettyErrors ?? true) ? { text, lineCounter: options.lineCounter } : undefined;
  checkKeys(doc, rules, placing);
  return doc;
}

/** Every document of `text`, composed (as yaml's `parseAllDocuments`). */
export function parseYamlDocuments(text: string, options: YamlOptions): Document.Parsed[] {
  checkYaml(text, options.file, limitsOf(options));
  const docs = parseAllDocuments(text, packageOptions(options));
  return (Array.isArray(docs) ? docs : [docs as unknown as Document.Parsed]).map((doc) =>
    keysChecked(doc, text, options),
  );
}

/** The values of every document of `text`; throws the first document's error. */
export function parseYamlAll(text: string, options: YamlOptions): unknown[] {
  return parseYamlDocuments(text, options).map((doc) => {
    if (doc.errors.length > 0) throw doc.errors[0];
    return toValue(doc, options);
  });
}

/**
 * The documents of `text` one at a time, each composed only when the previous one is done with, so that a file of
 * many documents never holds all their trees at once. `lineCounter` is fed as the text is read.
 */
export function* composeYaml(text: string, options: YamlOptions): Generator<Document.Parsed> {
  yield* composeCounted(text, options).documents;
}

/** composeYaml's documents, with the counts of the whole text: counted now (throws YamlLimitError), composed as read. */
export function composeCounted(
  text: string,
  options: YamlOptions,
): { counts: YamlCounts; documents: Generator<Document.Parsed> } {
  // Counted whole first: a file of documents each under the limit but past the file's total must be refused
  // before the first of them is composed (a document near the node limit is a few hundred MiB of syntax tree).
  const counts = checkYaml(text, options.file, limitsOf(options));
  const composer = new Composer(packageOptions({ ...options, lineCounter: undefined }));
  const composed = composer.compose(
    new Parser(options.lineCounter?.addNewLine).parse(text),
  ) as Generator<Document.Parsed>;
  // As composed, no readable form: the composer makes none (the callers place errors themselves).
  function* documents(): Generator<Document.Parsed> {
    for (const doc of composed) yield keysChecked(doc, text, options, false);
  }
  return { counts, documents: documents() };
}

/** A composed document's value, with the alias limit. */
export function toValue(doc: Document, options: Pick<YamlOptions, 'limits'>): unknown {
  return doc.toJS({ maxAliasCount: limitsOf({ file: '', ...options }).maxAliasCount });
}
