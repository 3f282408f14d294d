// A composed document's mapping keys as Kubernetes reads them, and its repeated keys, found in one walk, in linear
// time.
//
// Kubernetes' rules (rules `kubernetes`): sigs.k8s.io/yaml turns every key into a JSON string, so a key that is not
// a string is given the text Go gives it (goKeyText: `1e6` is `1e+06`, `.inf` is `.inf`), and a key Go refuses is an
// error at the key (a null key, an empty one, a collection, an integer past int64: "unsupported map key"). A number
// that JSON cannot hold (`.inf`, `-.inf`, `.nan`) is an error where it is a value ("json: unsupported value"):
// kubectl refuses the file, and mooring would otherwise send null. Keys are then compared as those texts: `1` and
// `1.0`, or two `.nan`, are one key to Kubernetes, and repeated.
//
// Repeated keys: the yaml package checks each key against every key before it in its mapping (`items.some`), so one
// mapping of n keys costs n²/2 comparisons: 60,000 keys took 40 s, and the node limit allows 125,000 in one document.
// mooring composes with the package's check off and runs this one: a Set per mapping, the same error (DUPLICATE_KEY,
// "Map keys must be unique", at the key) and, where the package would have made its errors readable, the same
// wording: the line and column, and the line with a pointer under the key. Under other rules keys are compared as
// the package compares them (scalar values with `===`, so NaN keys never repeat, and 1 and 1.0 do).
import {
  type Document,
  type ErrorCode,
  isAlias,
  isScalar,
  LineCounter,
  type Node,
  type Pair,
  visit,
  YAMLParseError,
} from 'yaml';
import { goKeyText } from './go-scalars.ts';

/** The message the yaml package gives a repeated key. */
const DUPLICATE_MESSAGE = 'Map keys must be unique';

/** Where errors are placed in words: the whole text the document came from. */
export interface ErrorPlacing {
  text: string;
  /** Line starts of `text`, when the caller counts them already. */
  lineCounter?: LineCounter | undefined;
}

/** What is checked: repeated keys, and Kubernetes' reading of keys and numbers. */
export interface KeyRules {
  unique: boolean;
  kubernetes: boolean;
}

/**
 * Adds an error for each key that repeats one before it in its mapping (rules.unique) and, under Kubernetes' rules,
 * for each key and number Kubernetes refuses, giving the other keys that are not strings Go's text. The errors join
 * the document's, in text order. With `placing`, each message names its line and column and quotes the line.
 */
export function checkKeys(doc: Document, rules: KeyRules, placing?: ErrorPlacing): void {
  if (!doc.contents || (!rules.unique && !rules.kubernetes)) return;
  const found: YAMLParseError[] = [];
  const refuse: Refuse = (
    node: Node | null | undefined,
    fallback: number,
    code: ErrorCode,
    message: string,
  ) => {
    const start = node?.range?.[0] ?? fallback;
    found.push(new YAMLParseError([start, start + 1], code, message));
  };
  visit(doc, {
    Map(_key, map) {
      const seen = rules.unique && map.items.length > 1 ? new Set<unknown>() : undefined;
      for (const pair of map.items) {
        const compared = rules.kubernetes
          ? kubernetesKey(pair, map.range?.[0] ?? -1, refuse)
          : packageKey(pair);
        if (compared === SKIP || seen === undefined) continue;
        if (!seen.has(compared)) {
          seen.add(compared);
          continue;
        }
        refuse(pair.key as Node, -1, 'DUPLICATE_KEY', DUPLICATE_MESSAGE);
      }
    },
    Scalar(key, node) {
      if (!rules.kubernetes || key === 'key') return;
      const value = node.value;
      if (typeof value === 'number' && !Number.isFinite(value)) {
        const text = node.source ?? String(value);
        refuse(
          node,
          -1,
          'TAG_RESOLVE_FAILED',
          `${text} is not a number Kubernetes can read (JSON has no infinity or NaN); quote it for a string`,
        );
      }
    },
  });
  if (found.length === 0) return;
  if (placing) {
    const lines = placing.lineCounter ?? countLines(placing.text);
    for (const error of found) describePlace(error, placing.text, lines);
  }
  doc.errors.push(...found);
  // Stable: the package's own errors keep their order, and each of these takes its place among them.
  doc.errors.sort((a, b) => a.pos[0] - b.pos[0]);
}

type Refuse = (node: Node | null | undefined, fallback: number, code: ErrorCode, message: string) => void;

/** Not compared: a key of no value the package would compare (a collection, NaN), or one already refused. */
const SKIP = Symbol('skip');

/** The key as the package compares it (its scalar value). */
function packageKey(pair: Pair): unknown {
  const key = pair.key;
  if (!isScalar(key)) return SKIP;
  const value = key.value;
  return typeof value === 'number' && Number.isNaN(value) ? SKIP : value;
}

/**
 * The key as Kubernetes reads it: a string is itself, another scalar becomes Go's text of it (the node's value is set
 * to it, for the value made of the document), anything Go refuses is an error. A merge key (`<<`) and an alias are
 * left to the schema.
 */
function kubernetesKey(pair: Pair, mapStart: number, refuse: Refuse): unknown {
  const key = pair.key as Node | null;
  if (isAlias(key)) return SKIP;
  const at = (pair.value as Node | null)?.range?.[0] ?? mapStart;
  if (!isScalar(key)) {
    const what = key === null || key === undefined ? 'empty' : 'a collection';
    refuse(
      key,
      at,
      'NON_STRING_KEY',
      `a mapping key is ${what}: Kubernetes takes only a string, a number or a boolean as a key`,
    );
    return SKIP;
  }
  const value = key.value;
  if (typeof value === 'string' || typeof value === 'symbol') return value;
  const text = goKeyText(
    key.type === 'PLAIN' && key.source !== undefined ? key.source : String(value),
    value,
  );
  if (text === undefined) {
    const what =
      value === null
        ? `null (${JSON.stringify(key.source ?? '')})`
        : `${key.source ?? String(value)}, past a 64-bit integer`;
    refuse(
      key,
      at,
      'NON_STRING_KEY',
      `a mapping key is ${what}: Kubernetes takes only a string, a number or a boolean as a key; quote it for a string`,
    );
    return SKIP;
  }
  key.value = text;
  return text;
}

function countLines(text: string): LineCounter {
  const lines = new LineCounter();
  lines.addNewLine(0);
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines.addNewLine(at + 1);
  return lines;
}

/** The message in the package's readable form: where, then the line (and the one before, at an indent) and a pointer. */
function describePlace(error: YAMLParseError, text: string, lines: LineCounter): void {
  if (error.pos[0] === -1) return;
  const from = lines.linePos(error.pos[0]);
  const to = lines.linePos(error.pos[1]);
  error.linePos = [from, to];
  error.message += ` at line ${from.line}, column ${from.col}`;
  const starts = lines.lineStarts;
  let column = from.col - 1;
  let shown = text
    .substring(starts[from.line - 1] ?? 0, starts[from.line] ?? text.length)
    .replace(/[\n\r]+$/, '');
  if (column >= 60 && shown.length > 80) {
    const cut = Math.min(column - 39, shown.length - 79);
    shown = `…${shown.substring(cut)}`;
    column -= cut - 1;
  }
  if (shown.length > 80) shown = `${shown.substring(0, 79)}…`;
  if (from.line > 1 && /^ *$/.test(shown.substring(0, column))) {
    let before = text.substring(starts[from.line - 2] ?? 0, starts[from.line - 1] ?? 0);
    if (before.length > 80) before = `${before.substring(0, 79)}…\n`;
    shown = before + shown;
  }
  if (!/[^ ]/.test(shown)) return;
  const width =
    to.line === from.line && to.col > from.col ? Math.max(1, Math.min(to.col - from.col, 80 - column)) : 1;
  error.message += `:\n\n${shown}\n${' '.repeat(column)}${'^'.repeat(width)}\n`;
}
