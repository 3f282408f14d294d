// kustomize's `config.kubernetes.io/origin` annotations (kustomize.ts asks for them with
// `buildMetadata: [originAnnotations]`): read from an annotated build into a table from object identity to origin,
// and taken out of its text again (withoutOrigins), so that the manifests are those of the plain build, byte for
// byte, from one run of kustomize. Where each origin leads in the user's files is origins.ts's.
//
// The annotations come from a commit's files and could be forged: each is bounded in size and read with no aliases.
import { isDeepStrictEqual } from 'node:util';
import { type ReadDocument, readDocuments } from '../../yaml/documents.ts';
import { YamlLimitError } from '../../yaml/errors.ts';
import { yamlLimits } from '../../yaml/limits.ts';
import { parseYaml } from '../../yaml/parse.ts';

const MAX_ANNOTATION_CHARS = 4096;
export const ORIGIN_ANNOTATION = 'config.kubernetes.io/origin';

/** What kustomize's origin annotation says of an object (paths relative to the kustomization built). */
export interface KustomizeOrigin {
  /** The resource file. */
  path?: string | undefined;
  /** A remote base's repository and ref, when the file is in one. */
  repo?: string | undefined;
  ref?: string | undefined;
  /** The kustomization whose generator made the object, and the generator's kind. */
  configuredIn?: string | undefined;
  generator?: string | undefined;
}

interface Identity {
  apiVersion?: unknown;
  kind?: unknown;
  metadata?: { name?: unknown; namespace?: unknown } | unknown;
}

/** The identity kustomize keeps unique in a build: apiVersion, kind, namespace, name. */
export function identityKey(object: unknown): string | undefined {
  if (typeof object !== 'object' || object === null) return undefined;
  const o = object as Identity;
  const metadata = (typeof o.metadata === 'object' && o.metadata !== null ? o.metadata : {}) as {
    name?: unknown;
    namespace?: unknown;
  };
  if (typeof o.kind !== 'string' || typeof metadata.name !== 'string') return undefined;
  const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : '';
  return JSON.stringify([String(o.apiVersion ?? ''), o.kind, namespace, metadata.name]);
}

const nonEmpty = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The origin annotation's value, read. */
export function readOriginAnnotation(value: unknown): KustomizeOrigin | undefined {
  if (typeof value !== 'string' || value.length > MAX_ANNOTATION_CHARS) return undefined;
  let doc: unknown;
  try {
    doc = parseYaml(value, { file: ORIGIN_ANNOTATION, limits: { ...yamlLimits(), maxAliasCount: 0 } });
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null) return undefined;
  const d = doc as Record<string, unknown>;
  const by = (typeof d.configuredBy === 'object' && d.configuredBy !== null ? d.configuredBy : {}) as Record<
    string,
    unknown
  >;
  const origin: KustomizeOrigin = {
    path: nonEmpty(d.path),
    repo: nonEmpty(d.repo),
    ref: nonEmpty(d.ref),
    configuredIn: nonEmpty(d.configuredIn),
    generator: nonEmpty(by.kind),
  };
  return origin.path || origin.configuredIn ? origin : undefined;
}

/** The origins of a build made with `buildMetadata: [originAnnotations]`, by identityKey of each object. */
export function readOrigins(annotated: string): Map<string, KustomizeOrigin> {
  return annotatedBuild(annotated, false).origins;
}

/**
 * A build made with `buildMetadata: [originAnnotations]`, read once (values only, the direct reader's: no syntax
 * tree of the build is made): its origins, and with `withText` its text without them (withoutOrigins).
 */
export function annotatedBuild(
  annotated: string,
  withText: boolean,
): { origins: Map<string, KustomizeOrigin>; text: string | undefined } {
  const origins = new Map<string, KustomizeOrigin>();
  const docs = readBuild(annotated);
  // Past a limit: no origins; render refuses the same text, naming it.
  for (const doc of docs ?? []) if ('value' in doc) readOrigin(doc.value, origins);
  return { origins, text: withText && docs ? withoutOrigins(annotated, docs) : undefined };
}

function readBuild(text: string): ReadDocument[] | undefined {
  try {
    return [...readDocuments(text, { file: 'the kustomize build', maxDocuments: Number.POSITIVE_INFINITY })];
  } catch (error) {
    if (!(error instanceof YamlLimitError)) throw error;
    return undefined;
  }
}

/**
 * The text of a build made with `buildMetadata: [originAnnotations]` as the same build without it prints it: each
 * `config.kubernetes.io/origin` annotation taken out, with its `annotations:` when it was the only one. Undefined
 * when the result cannot be shown to hold exactly the annotated build's objects less those annotations (read both
 * and compared): a block scalar of the user's that looks like the annotation is never cut.
 */
export function withoutOrigins(
  annotated: string,
  before: ReadDocument[] | undefined = readBuild(annotated),
): string | undefined {
  const lines = annotated.split('\n');
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const m = ORIGIN_LINE.exec(line);
    if (!m) {
      kept.push(line);
      continue;
    }
    const indent = (m[1] as string).length;
    while (i + 1 < lines.length && indentOf(lines[i + 1] as string) > indent) i++;
    // `annotations:` left with nothing under it was made for the origin alone.
    const previous = kept[kept.length - 1] ?? '';
    const next = lines[i + 1] ?? '';
    if (previous.trim() === 'annotations:' && indentOf(previous) < indent && indentOf(next) < indent)
      kept.pop();
  }
  const plain = kept.join('\n');
  let after: ReadDocument[] | undefined;
  try {
    after = readBuild(plain);
  } catch {
    return undefined;
  }
  if (!before || !after || before.length !== after.length) return undefined;
  for (const [i, doc] of before.entries()) {
    const other = after[i] as ReadDocument;
    if ('value' in doc !== 'value' in other) return undefined;
    const expected = 'value' in doc ? unannotated(doc.value) : undefined;
    if ('value' in other && !isDeepStrictEqual(other.value, expected)) return undefined;
  }
  return plain;
}

const ORIGIN_LINE = /^( +)config\.kubernetes\.io\/origin: [|>][-+]?$/;

/** A line's indentation; an empty line's counts as deeper than any (it continues a block). */
function indentOf(line: string): number {
  const text = line.trimStart();
  return text === '' ? Number.POSITIVE_INFINITY : line.length - text.length;
}

/** An object as the build without origin annotations has it. */
function unannotated(value: unknown): unknown {
  const metadata = (value as { metadata?: { annotations?: Record<string, unknown> } } | null)?.metadata;
  const annotations = metadata?.annotations;
  if (typeof annotations !== 'object' || annotations === null || !(ORIGIN_ANNOTATION in annotations))
    return value;
  const { [ORIGIN_ANNOTATION]: _, ...rest } = annotations;
  const { annotations: __, ...others } = metadata as Record<string, unknown>;
  return {
    ...(value as object),
    metadata: Object.keys(rest).length > 0 ? { ...others, annotations: rest } : others,
  };
}

function readOrigin(object: unknown, origins: Map<string, KustomizeOrigin>): void {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) return;
  const key = identityKey(object);
  const annotations = (object as { metadata?: { annotations?: Record<string, unknown> } }).metadata
    ?.annotations;
  const origin = readOriginAnnotation(annotations?.[ORIGIN_ANNOTATION]);
  if (key && origin) origins.set(key, origin);
}
