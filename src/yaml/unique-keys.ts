// Repeated keys in a mapping, found in linear time. The yaml package checks each key against every key before it
// in its mapping (`items.some`), so one mapping of n keys costs n²/2 comparisons: 60,000 keys took 40 s, and the
// node limit allows 125,000 in one document. mooring composes with the package's check off and runs this one: a
// Set per mapping, the same equality (scalar values compared with `===`, so NaN keys never repeat, and 1 and 1.0 do),
// the same error (DUPLICATE_KEY, "Map keys must be unique", at the key), and, where the package would have made its
// errors readable, the same wording: the line and column, and the line with a pointer under the key.
import { type Document, isScalar, LineCounter, type Node, visit, YAMLParseError } from 'yaml';

/** The message the yaml package gives a repeated key. */
const DUPLICATE_MESSAGE = 'Map keys must be unique';

/** Where errors are placed in words: the whole text the document came from. */
export interface ErrorPlacing {
  text: string;
  /** Line starts of `text`, when the caller counts them already. */
  lineCounter?: LineCounter | undefined;
}

/**
 * Adds an error for each key that repeats one before it in its mapping, in the document's errors in text order.
 * With `placing`, each message names its line and column and quotes the line (prettyErrors).
 */
export function checkUniqueKeys(doc: Document, placing?: ErrorPlacing): void {
  if (!doc.contents) return;
  const found: YAMLParseError[] = [];
  visit(doc, {
    Map(_key, map) {
      if (map.items.length < 2) return;
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        if (!isScalar(key)) continue;
        const value = key.value;
        if (typeof value === 'number' && Number.isNaN(value)) continue;
        if (!seen.has(value)) {
          seen.add(value);
          continue;
        }
        const start = keyStart(key);
        found.push(new YAMLParseError([start, start + 1], 'DUPLICATE_KEY', DUPLICATE_MESSAGE));
      }
    },
  });
  if (found.length === 0) return;
  if (placing) {
    const lines = placing.lineCounter ?? countLines(placing.text);
    for (const error of found) describePlace(error, placing.text, lines);
  }
  doc.errors.push(...found);
  // Stable: the package's own errors keep their order, and each repeated key takes its place among them.
  doc.errors.sort((a, b) => a.pos[0] - b.pos[0]);
}

function keyStart(key: Node): number {
  return key.range?.[0] ?? -1;
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
