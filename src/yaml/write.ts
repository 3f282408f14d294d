// The one way mooring writes YAML for people and tools (`render -o yaml`, diff text, values handed to helm, files
// handed to kustomize): with the tags it reads with (schema.ts), so that a number, a boolean and null are written as
// Kubernetes reads them, and a string that any YAML 1.1 reader could take for something else (`no`, `on`, `y`,
// `0755`, `1:20`, `2001-12-14`, `<<`) is quoted. What this writes, parse.ts reads back as the same value.
//
// JSON data (what manifests are) is written by a writer of its own, byte for byte what the yaml package writes
// with the same options (test/unit/yaml/write.test.ts holds them to it): the package builds a node per value and
// tests every string against every tag, which was a fifth of `mooring render`'s time. The writer decides only what
// is plain: a string with anything to quote or a line break is written as the package writes it in the same place,
// and a value of another shape (a key that is not plain, an object met twice, undefined, a class) is the package's
// whole.
import { Document, stringify, type Tags } from 'yaml';
import { schemaOptions, surelyString, WRITE_COMPAT } from './schema.ts';

const OPTIONS = { ...schemaOptions('kubernetes'), compat: WRITE_COMPAT, lineWidth: 0 } as const;

/** `value` as YAML (one document), long lines unfolded. */
export function stringifyYaml(value: unknown): string {
  return writeData(value) ?? stringify(value, OPTIONS);
}

/** Thrown inside the writer: the value is the yaml package's to write. */
const NOT_DATA = Symbol('not data');

/**
 * The order a mapping's keys are written in: `keys` of a mapping, and the order of what a key holds (`child`; a
 * sequence's items take `child('')`). Canonical manifests (render/canonical.ts) are written in their order without a
 * sorted copy of every object first.
 */
export interface KeyOrder {
  keys(map: Record<string, unknown>): string[];
  child(key: string): KeyOrder;
}

/** The keys as they are. */
const AS_GIVEN: KeyOrder = { keys: (map) => Object.keys(map), child: () => AS_GIVEN };

/** `value` written by the data writer, or undefined for a value it leaves to the yaml package. */
export function writeData(value: unknown, order: KeyOrder = AS_GIVEN): string | undefined {
  if (!isRecord(value) && !Array.isArray(value)) return undefined;
  const out: string[] = [];
  const seen = new Set<object>();
  try {
    if (Array.isArray(value)) {
      if (value.length === 0) return '[]\n';
      sequence(value, '', '', out, seen, order);
    } else {
      if (Object.keys(value).length === 0) return '{}\n';
      mapping(value, '', '', out, seen, order);
    }
  } catch (error) {
    if (error === NOT_DATA) return undefined;
    throw error;
  }
  return out.join('');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** An object or array that is not empty, written as a block; an object met before is the package's (aliases). */
function enter(value: object, seen: Set<object>): void {
  if (seen.has(value)) throw NOT_DATA;
  seen.add(value);
}

function mapping(
  map: Record<string, unknown>,
  indent: string,
  first: string,
  out: string[],
  seen: Set<object>,
  order: KeyOrder,
): void {
  enter(map, seen);
  let lead = first;
  for (const key of order.keys(map)) {
    const key$ = plainKey(key);
    out.push(lead, key$, ':');
    lead = indent;
    value(map[key], indent, out, seen, order.child(key));
  }
}

function sequence(
  list: readonly unknown[],
  indent: string,
  first: string,
  out: string[],
  seen: Set<object>,
  order: KeyOrder,
): void {
  enter(list, seen);
  const items = order.child('');
  let lead = first;
  for (let i = 0; i < list.length; i++) {
    const item: unknown = i in list ? list[i] : NOT_DATA;
    out.push(lead, '-');
    lead = indent;
    if (isRecord(item) && Object.keys(item).length > 0) {
      out.push(' ');
      mapping(item, `${indent}  `, '', out, seen, items);
    } else if (Array.isArray(item) && item.length > 0) {
      out.push(' ');
      sequence(item, `${indent}  `, '', out, seen, items);
    } else value(item, indent, out, seen, items);
  }
}

/** A value after `key:` or `-` of an entry at `indent`, to the end of its line (and its block below). */
function value(v: unknown, indent: string, out: string[], seen: Set<object>, order: KeyOrder): void {
  switch (typeof v) {
    case 'string':
      out.push(' ', stringValue(v, indent), '\n');
      return;
    case 'number':
      if (!Number.isFinite(v)) throw NOT_DATA;
      out.push(' ', JSON.stringify(v), '\n');
      return;
    case 'boolean':
      out.push(v ? ' true\n' : ' false\n');
      return;
    case 'object':
      if (v === null) {
        out.push(' null\n');
        return;
      }
      if (Array.isArray(v)) {
        if (v.length === 0) out.push(' []\n');
        else {
          out.push('\n');
          sequence(v, `${indent}  `, `${indent}  `, out, seen, order);
        }
        return;
      }
      if (!isRecord(v)) throw NOT_DATA;
      if (Object.keys(v).length === 0) out.push(' {}\n');
      else {
        out.push('\n');
        mapping(v, `${indent}  `, `${indent}  `, out, seen, order);
      }
      return;
    default:
      throw NOT_DATA;
  }
}

// What the yaml package's plain strings may not be (its stringifyString): an indicator first, `: ` or ` #` inside,
// a space or `:` last, a control character, a line break; or text a tag of the schema (or of YAML 1.1) would read.
const NOT_PLAIN = /^[\n\t ,[\]{}#&*!|>'"%@`]|^[?-]$|^[?-][ \t]|[\n:][ \t]|[ \t]\n|[\n\t ]#|[\n\t :]$/;
// The characters the package writes double-quoted (C0 and C1 controls but tab and line feed, lone surrogates).
// biome-ignore lint/suspicious/noControlCharactersInRegex: these characters are what it finds
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u{D800}-\u{DFFF}]/u;
const DOCUMENT_MARKER = /^(%|---|\.\.\.)/m;

let tests: ((text: string) => boolean) | undefined;

/** Whether a plain `text` would be read as something other than a string (by the schema or by YAML 1.1). */
function readAsOther(text: string): boolean {
  if (!tests) {
    const { schema } = new Document(null, { ...schemaOptions('kubernetes'), compat: WRITE_COMPAT });
    const { tags, compat } = schema as unknown as { tags: Tags; compat: Tags | null };
    const checks = [...tags, ...(compat ?? [])].flatMap((tag) =>
      typeof tag === 'object' &&
      tag.default &&
      tag.tag !== 'tag:yaml.org,2002:str' &&
      'test' in tag &&
      tag.test
        ? [tag.test]
        : [],
    );
    tests = (t) => checks.some((re) => re.test(t));
  }
  return tests(text);
}

/** Whether `text` is written plain (unquoted) where a string goes. */
export function plain(text: string): boolean {
  // Names, labels and kinds (most texts) are decided without every tag's test (schema.ts).
  return surelyString(text) || plainSlowly(text);
}

/** plain() by every rule: the yaml package's and every tag's test. */
export function plainSlowly(text: string): boolean {
  return (
    text !== '' &&
    !text.includes('\n') &&
    !NOT_PLAIN.test(text) &&
    !CONTROL.test(text) &&
    !DOCUMENT_MARKER.test(text) &&
    !readAsOther(text)
  );
}

/** A key as the package writes it when it is plain; any other key is the package's. */
function plainKey(key: string): string {
  if (key.length > 1024 || !plain(key)) throw NOT_DATA;
  return key;
}

/** The package's own writing of strings it quotes or writes as blocks, by text (many repeat across documents). */
const written = new Map<string, string>();
const WRITTEN_MAX = 2000;
/** Only short strings are kept (the ones that repeat: `"yes"`, `"*"`, `"8080"`); a long one is written each time. */
const WRITTEN_LENGTH = 200;

/**
 * A string value after `key:` or `-` at `indent`. Plain when it may be; else as the package writes it as a
 * mapping's value at the top (a block's lines indented two from their parent), indented by the parent's indent.
 */
function stringValue(text: string, indent: string): string {
  if (plain(text)) return text;
  let own = written.get(text) ?? quotedOrBlock(text);
  if (own === undefined) {
    own = stringify({ k: text }, OPTIONS).slice(3, -1);
    if (text.length <= WRITTEN_LENGTH) {
      if (written.size >= WRITTEN_MAX) written.clear();
      written.set(text, own);
    }
  }
  if (indent === '' || !own.includes('\n')) return own;
  return own.replace(/\n(?=[^\n])/g, `\n${indent}`);
}

/** Printable ASCII, and line feeds: the texts whose writing quotedOrBlock knows to the character. */
const SIMPLE_TEXT = /^[\x20-\x7e\n]*$/;

/**
 * A text that is not plain as the yaml package writes it as a mapping's value at the top (its stringifyString, under
 * OPTIONS: no line width, blocks allowed, no quote preferred), for the two shapes most texts that are not plain have
 * (descriptions, scripts, configuration files): one line of printable ASCII, quoted (single quotes when it holds a
 * double quote and no single one, else JSON's double quotes, which escape only `"` and `\` here); several lines that
 * start with neither a space nor a line break and end without spaces or empty lines, a literal block (`|-`, or `|`
 * for one last line break) indented two. Anything else (other characters, a leading space, kept line breaks, ...) is
 * undefined: the package writes it. test/unit/yaml/write.test.ts holds both to the package's writing.
 */
function quotedOrBlock(text: string): string | undefined {
  if (text === '' || !SIMPLE_TEXT.test(text)) return undefined;
  const line = text.indexOf('\n');
  if (line === -1) {
    if (!NOT_PLAIN.test(text) && !readAsOther(text)) return undefined;
    return text.includes('"') && !text.includes("'") ? `'${text}'` : JSON.stringify(text);
  }
  const first = text.charCodeAt(0);
  if (first === 32 || first === 10) return undefined;
  const clip = text.endsWith('\n');
  const body = clip ? text.slice(0, -1) : text;
  const last = body.charCodeAt(body.length - 1);
  if (last === 32 || last === 10) return undefined;
  return `|${clip ? '' : '-'}\n  ${body.replace(/\n+/g, '$&  ')}`;
}
