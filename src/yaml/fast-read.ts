// A direct reader for the YAML that tools and people write for Kubernetes: block mappings and sequences, plain
// and quoted scalars (one or more lines) and block scalars (`|`, `>`, with `-`), flow collections on one line, and
// comments. It makes a document's value, its place and its node count in one pass over the text, with no syntax
// tree, and declines (returns undefined) anything else, for the yaml package to read as before (documents.ts). What
// it does read, it reads exactly as the yaml package does under schema.ts's rules, and counts exactly as count.ts
// does: both are held by differential tests (test/unit/yaml/fast-read.test.ts), so that a text gives the same
// values, places, errors and limits whichever reader took it.
//
// Declined: anchors, aliases, tags, directives, explicit keys (`?`), merge keys, multi-line flow collections, `|+`
// and indentation indicators, tabs outside block scalars, carriage returns, duplicate keys, `__proto__`, Lists (their
// items are placed from the tree), deep nesting, keys and numbers Kubernetes refuses (keys.ts), and whatever the yaml
// package calls an error.
import {
  BACKSLASH,
  BlockText,
  COLON,
  COMMA,
  DASH,
  DQUOTE,
  emptyBeforeTooDeep,
  FLOW_STOP,
  GT,
  HASH,
  LBRACE,
  LBRACKET,
  PIPE,
  plainTaken,
  QUESTION,
  quotedEnd,
  quotedText,
  RBRACE,
  RBRACKET,
  SPACE,
  SQUOTE,
  TAB,
  unescapeDouble,
} from './fast-scalars.ts';
import { goKeyText } from './go-scalars.ts';
import { plainScalar } from './schema.ts';

/**
 * What stops the direct reader from taking a text at all: carriage returns, control characters and a byte order mark,
 * directives, document end markers, and a `---` with more on its line.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these characters are what it finds
export const UNREAD = /[\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff]|^(?:%|\.\.\.|---[^\n])/m;

/** One document the reader took: its value, where its contents start (1-based), and its count.ts node count. */
export interface FastDocument {
  value: unknown;
  line: number;
  column: number;
  /** The offset its contents start at. */
  offset: number;
  nodes: number;
  /** How deep its collections nest. */
  depth: number;
}

/** The deepest a document it takes may nest (real manifests: under 60); deeper ones are the yaml package's. */
const MAX_DIRECT_DEPTH = 128;
class Decline {}
const DECLINE = new Decline();
const decline = (): never => {
  throw DECLINE;
};

/** A plain key's text as Kubernetes reads it (keys.ts); a key it refuses is the yaml package's, which says so. */
function keyText(raw: string): string {
  const resolved = plainScalar(raw);
  return typeof resolved === 'string' ? resolved : (goKeyText(raw, resolved) ?? decline());
}

/** A plain value; a number JSON cannot hold is the yaml package's, which refuses it (keys.ts). */
function plainValue(raw: string): unknown {
  const value = plainScalar(raw);
  return typeof value === 'number' && !Number.isFinite(value) ? decline() : value;
}

/**
 * The document in `text` from `start` (a line start) to `end` (a line start, or the text's end), whose first line is
 * `line`: null when it has no contents (only comments), undefined when declined. `maxDepth` bounds how deep it may nest
 * before it is declined (count.ts then decides whether it is past the limit).
 */
export function fastDocument(
  text: string,
  start: number,
  end: number,
  line: number,
  maxDepth: number,
): FastDocument | null | undefined {
  const reader = new Reader(text, end, maxDepth);
  try {
    return reader.document(start, line);
  } catch (error) {
    if (error === DECLINE) return undefined;
    throw error;
  }
}

class Reader {
  /** The current line: its start, its end (the newline's offset or `end`), its number, its indentation. */
  private ls = 0;
  private le = 0;
  private ln = 0;
  private ind = 0;
  private eof = false;
  /** The line peek looked at. */
  private pls = 0;
  private ple = 0;
  private pfirst = 0;
  nodes = 0;
  deepest = 0;

  private readonly text: string;
  private readonly end: number;
  private readonly maxDepth: number;

  constructor(text: string, end: number, maxDepth: number) {
    this.text = text;
    this.end = end;
    this.maxDepth = maxDepth;
  }

  document(start: number, line: number): FastDocument | null {
    this.le = start - 1;
    this.ln = line - 1;
    this.nextContent();
    if (this.eof) return null;
    const at = this.ls + this.ind;
    const docLine = this.ln;
    const column = this.ind + 1;
    const c = this.text.charCodeAt(at);
    // A root scalar or flow collection (a JSON file) is left to the yaml package.
    if (c === LBRACE || c === LBRACKET) decline();
    const value = this.node(at, -1, 0);
    if (!this.eof || (typeof value !== 'object' && value !== null)) decline();
    if (value !== null && !Array.isArray(value)) {
      const { kind, items } = value as { kind?: unknown; items?: unknown };
      // A List's items are placed from the syntax tree.
      if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(items)) decline();
    }
    return { value, line: docLine, column, offset: at, nodes: this.nodes, depth: this.deepest };
  }

  /** Moves to the next line holding something other than spaces and a comment; sets `eof` past the last. */
  private nextContent(): void {
    for (;;) {
      if (!this.peek()) {
        this.eof = true;
        this.ls = this.le = this.end;
        this.ind = 0;
        return;
      }
      this.advance();
      const i = this.pfirst;
      if (i === this.le) continue;
      const c = this.text.charCodeAt(i);
      if (c === HASH) continue;
      if (c === TAB) decline();
      this.ind = i - this.ls;
      return;
    }
  }

  /** Looks at the line after the current one (pls, ple, and pfirst: its first character not a space); false past the end. */
  private peek(): boolean {
    const ls = this.le + 1;
    if (ls >= this.end) return false;
    let le = this.text.indexOf('\n', ls);
    if (le === -1 || le > this.end) le = this.end;
    let first = ls;
    while (first < le && this.text.charCodeAt(first) === SPACE) first++;
    this.pls = ls;
    this.ple = le;
    this.pfirst = first;
    return true;
  }

  /** Moves onto the line peek looked at. */
  private advance(): void {
    this.ls = this.pls;
    this.le = this.ple;
    this.ln++;
  }

  private count(): void {
    this.nodes++;
  }

  /** A node starting at `at` on the current line, in a block indented `parent` (its content is indented further). */
  private node(at: number, parent: number, depth: number): unknown {
    const text = this.text;
    const c = text.charCodeAt(at);
    if (c === DASH && this.blankAfter(at + 1)) return this.seq(at - this.ls, depth + 1);
    if (c === PIPE || c === GT) return this.blockScalar(at, parent);
    if (c === LBRACKET || c === LBRACE) return this.inlineValue(at, parent, depth);
    if (this.keyEnd(at) !== -1) return this.map(at - this.ls, depth + 1);
    return this.inlineValue(at, parent, depth);
  }

  /** Whether `i` is the line's end or a space (after an indicator). */
  private blankAfter(i: number): boolean {
    return i >= this.le || this.text.charCodeAt(i) === SPACE;
  }

  /**
   * Where the `:` of a mapping key starting at `at` is, or -1 when the line holds no key there. Declines what could be
   * a key the yaml package reads differently (a `#` after a space before it, a tab).
   */
  private keyEnd(at: number): number {
    const text = this.text;
    const c = text.charCodeAt(at);
    if (c === DQUOTE || c === SQUOTE) {
      const close = quotedEnd(text, at, this.le);
      // Not closed on its line: a scalar over several lines, which no key is.
      if (close === -1) return -1;
      let i = close;
      while (i < this.le && text.charCodeAt(i) === SPACE) i++;
      return i < this.le && text.charCodeAt(i) === COLON && this.blankAfter(i + 1) ? i : -1;
    }
    for (let i = at; i < this.le; i++) {
      const ch = text.charCodeAt(i);
      if (ch === COLON && this.blankAfter(i + 1)) return i;
      if (ch === HASH && i > at && text.charCodeAt(i - 1) === SPACE) return -1;
      if (ch === TAB) decline();
    }
    return -1;
  }

  private depthCheck(depth: number): void {
    if (depth > this.deepest) this.deepest = depth;
    // Half the limit (count.ts holds it), and a bound of its own: the reader recurses, whatever the limit is set to.
    if (2 * depth + 2 > this.maxDepth || depth > MAX_DIRECT_DEPTH) decline();
  }

  private map(col: number, depth: number): Record<string, unknown> {
    this.depthCheck(depth);
    const text = this.text;
    const map: Record<string, unknown> = {};
    for (;;) {
      const at = this.ls + col;
      const colon = this.keyEnd(at);
      if (colon === -1) decline();
      const key = this.key(at, colon);
      if (Object.hasOwn(map, key)) decline();
      this.count(); // the key
      this.count(); // the `:`
      let i = colon + 1;
      while (i < this.le && text.charCodeAt(i) === SPACE) i++;
      let value: unknown = null;
      if (i >= this.le || text.charCodeAt(i) === HASH) {
        this.nextContent();
        if (!this.eof) {
          if (this.ind > col) value = this.node(this.ls + this.ind, col, depth);
          else if (this.ind === col && this.isEntry()) value = this.seq(col, depth + 1);
        }
      } else {
        const c = text.charCodeAt(i);
        if (c === DASH && this.blankAfter(i + 1)) decline();
        if (c === PIPE || c === GT) value = this.blockScalar(i, col);
        else value = this.inlineValue(i, col, depth);
      }
      map[key] = value;
      if (this.eof || this.ind < col) return map;
      if (this.ind > col || this.isEntry()) decline();
    }
  }

  /** Whether the current line, at its indentation, is a sequence entry (`- `). */
  private isEntry(): boolean {
    const at = this.ls + this.ind;
    return this.text.charCodeAt(at) === DASH && this.blankAfter(at + 1);
  }

  private key(at: number, colon: number): string {
    const text = this.text;
    const c = text.charCodeAt(at);
    let key: string;
    if (c === DQUOTE || c === SQUOTE) {
      key = this.quoted(at);
    } else {
      let e = colon;
      while (e > at && text.charCodeAt(e - 1) === SPACE) e--;
      const raw = text.slice(at, e);
      if (!plainTaken(raw)) decline();
      if (raw === '<<') decline();
      key = keyText(raw);
    }
    if (key === '__proto__') decline();
    return key;
  }

  private seq(col: number, depth: number): unknown[] {
    this.depthCheck(depth);
    const text = this.text;
    const items: unknown[] = [];
    for (;;) {
      this.count(); // the `-`
      let i = this.ls + col + 1;
      while (i < this.le && text.charCodeAt(i) === SPACE) i++;
      if (i >= this.le || text.charCodeAt(i) === HASH) {
        this.nextContent();
        if (!this.eof && this.ind > col) items.push(this.node(this.ls + this.ind, col, depth));
        else items.push(null);
      } else {
        items.push(this.node(i, col, depth));
      }
      if (this.eof || this.ind < col) return items;
      if (this.ind > col) decline();
      if (!this.isEntry()) return items;
    }
  }

  /**
   * A value that starts on the current line and is not a block collection: a quoted scalar, a flow collection, a
   * plain scalar (with its continuation lines). Leaves the reader on the next line with contents.
   */
  private inlineValue(at: number, parent: number, depth: number): unknown {
    const text = this.text;
    const c = text.charCodeAt(at);
    let value: unknown;
    let after: number;
    if (c === DQUOTE || c === SQUOTE) {
      after = quotedEnd(text, at, this.le);
      if (after === -1) [value, after] = this.quotedLines(at, parent);
      else value = this.quoted(at);
      this.count();
    } else if (c === LBRACKET || c === LBRACE) {
      const [v, e] = this.flow(at, depth + 1);
      value = v;
      after = e;
    } else {
      return this.plain(at, parent);
    }
    // Only spaces and a comment may follow on the line.
    let i = after;
    while (i < this.le && text.charCodeAt(i) === SPACE) i++;
    if (i < this.le && !(text.charCodeAt(i) === HASH && i > after)) decline();
    this.nextContent();
    return value;
  }

  /** A plain scalar in a block, over as many lines as it continues on (each more indented than `parent`). */
  private plain(at: number, parent: number): unknown {
    const text = this.text;
    let e = this.plainLineEnd(at);
    const first = text.slice(at, e);
    if (!plainTaken(first)) decline();
    this.count();
    // Continuation lines: more indented than the block, not a comment.
    let folded: string | undefined;
    let blank = 0;
    while (this.peek()) {
      const { pls: ls, ple: le, pfirst: i } = this;
      if (i === le) {
        // An empty line: folded into a newline if more text follows.
        this.advance();
        blank++;
        continue;
      }
      if (i - ls <= parent) break;
      const c = text.charCodeAt(i);
      // A comment ends the scalar; a line that could start a collection entry or a key is the yaml package's. The
      // other indicators (quotes, brackets, a backtick…) only cannot start a scalar: here they continue one.
      // `--dry-run` or `-o` in a wrapped description is text: only `-`, `?` or `:` followed by a space, a tab or the
      // line's end can be an indicator.
      if (c === HASH || c === TAB) decline();
      const after = i + 1 < le ? text.charCodeAt(i + 1) : SPACE;
      if ((c === DASH || c === COLON || c === QUESTION) && (after === SPACE || after === TAB)) decline();
      this.advance();
      e = this.plainLineEnd(i);
      const part = text.slice(i, e);
      folded = `${folded ?? first}${blank === 0 ? ' ' : '\n'.repeat(blank)}${part}`;
      blank = 0;
    }
    // The reader stands on the last line read; move on to the next with contents.
    this.nextContent();
    return folded === undefined ? plainValue(first) : folded;
  }

  /**
   * Where a plain scalar's text on this line ends (trailing spaces off): at a comment or the line's end. Declines a
   * `: ` or a trailing `:` within it (a mapping where a scalar must be), and a tab.
   */
  private plainLineEnd(at: number): number {
    const text = this.text;
    let e = this.le;
    for (let i = at; i < this.le; i++) {
      const ch = text.charCodeAt(i);
      if (ch === HASH && i > at && text.charCodeAt(i - 1) === SPACE) {
        e = i;
        break;
      }
      if (ch === COLON && this.blankAfter(i + 1)) decline();
      if (ch === TAB) decline();
    }
    while (e > at && text.charCodeAt(e - 1) === SPACE) e--;
    return e;
  }

  /** The quoted scalar at `at` (closed on this line), its escapes made. */
  private quoted(at: number): string {
    return quotedText(this.text, at, this.le) ?? decline();
  }

  /**
   * A quoted scalar that goes on past its first line (generators such as controller-gen wrap long descriptions so):
   * its value and the offset past its closing quote, on the line the reader is left on. Each line break is folded
   * into a space, or into one newline per empty line after it; the spaces around a line break are not part of the
   * text, and a double-quoted line ending in `\` joins the next with nothing between. Its lines must be indented past
   * `parent`. Declined: a tab, an escape the reader does not make, an escaped space at a line's end, empty lines after
   * an escaped line break, a scalar not closed before the document ends.
   */
  private quotedLines(at: number, parent: number): [string, number] {
    const text = this.text;
    const q = text.charCodeAt(at);
    let value = '';
    let joined = true;
    let empty = 0;
    let from = at + 1;
    for (;;) {
      const close = quoteClose(text, q, from, this.le);
      const to = close === -1 ? this.trimmedEnd(from, this.le) : close;
      let raw = text.slice(from, to);
      if (raw.indexOf('\t') !== -1) decline();
      let escapedBreak = false;
      if (q === DQUOTE && close === -1) {
        let slashes = 0;
        while (slashes < raw.length && raw.charCodeAt(raw.length - 1 - slashes) === BACKSLASH) slashes++;
        if (slashes % 2 === 1) {
          // `\` and the line break: joined with nothing; `\ ` with the space cut off would be misread.
          if (to !== this.le) decline();
          escapedBreak = true;
          raw = raw.slice(0, -1);
        }
      }
      const line = q === SQUOTE ? raw.replaceAll("''", "'") : (unescapeDouble(raw) ?? decline());
      value += `${joined ? '' : empty === 0 ? ' ' : '\n'.repeat(empty)}${line}`;
      if (close !== -1) return [value, close + 1];
      joined = escapedBreak;
      empty = 0;
      for (;;) {
        if (!this.peek()) decline();
        this.advance();
        if (this.pfirst !== this.le) break;
        if (escapedBreak) decline();
        empty++;
      }
      if (this.pfirst - this.ls <= parent) decline();
      from = this.pfirst;
    }
  }

  /** Where the text from `at` to `le` ends with its trailing spaces off. */
  private trimmedEnd(at: number, le: number): number {
    let e = le;
    while (e > at && this.text.charCodeAt(e - 1) === SPACE) e--;
    return e;
  }

  /** A flow collection closed on this line: its value and the offset past it. */
  private flow(at: number, depth: number): [unknown, number] {
    this.depthCheck(depth);
    const text = this.text;
    this.count();
    const open = text.charCodeAt(at);
    const close = open === LBRACKET ? RBRACKET : RBRACE;
    const seq: unknown[] | undefined = open === LBRACKET ? [] : undefined;
    const map: Record<string, unknown> | undefined = open === LBRACE ? {} : undefined;
    let i = this.skipSpaces(at + 1);
    if (text.charCodeAt(i) === close && i < this.le) return [seq ?? map, i + 1];
    for (;;) {
      if (map) {
        const [key, afterKey] = this.flowScalar(i, true);
        if (key === '<<' || key === '__proto__' || Object.hasOwn(map, key as string)) decline();
        i = this.skipSpaces(afterKey);
        if (text.charCodeAt(i) !== COLON || !this.blankAfter(i + 1)) decline();
        this.count(); // the `:`
        const [value, afterValue] = this.flowNode(this.skipSpaces(i + 1), depth);
        map[key as string] = value;
        i = this.skipSpaces(afterValue);
      } else {
        const [value, afterValue] = this.flowNode(i, depth);
        (seq as unknown[]).push(value);
        i = this.skipSpaces(afterValue);
      }
      if (i >= this.le) decline();
      const c = text.charCodeAt(i);
      if (c === close) return [seq ?? map, i + 1];
      if (c !== COMMA) decline();
      i = this.skipSpaces(i + 1);
      if (i >= this.le || text.charCodeAt(i) === close) decline();
    }
  }

  private skipSpaces(i: number): number {
    while (i < this.le && this.text.charCodeAt(i) === SPACE) i++;
    return i;
  }

  private flowNode(at: number, depth: number): [unknown, number] {
    if (at >= this.le) decline();
    const c = this.text.charCodeAt(at);
    if (c === LBRACKET || c === LBRACE) return this.flow(at, depth + 1);
    return this.flowScalar(at, false);
  }

  /** A scalar in a flow collection (a key as its string): its value and the offset past it. */
  private flowScalar(at: number, asKey: boolean): [unknown, number] {
    const text = this.text;
    if (at >= this.le) decline();
    const c = text.charCodeAt(at);
    this.count();
    if (c === DQUOTE || c === SQUOTE) return [this.quoted(at), quotedEnd(text, at, this.le)];
    let e = at;
    for (; e < this.le; e++) {
      const ch = text.charCodeAt(e);
      if (FLOW_STOP.has(ch)) break;
      if (ch === COLON) {
        const next = e + 1 < this.le ? text.charCodeAt(e + 1) : SPACE;
        if (next === SPACE || FLOW_STOP.has(next)) break;
      }
      if (ch === HASH && text.charCodeAt(e - 1) === SPACE) decline();
      if (ch === TAB) decline();
    }
    let t = e;
    while (t > at && text.charCodeAt(t - 1) === SPACE) t--;
    const raw = text.slice(at, t);
    if (!plainTaken(raw)) decline();
    return [asKey ? keyText(raw) : plainValue(raw), e];
  }

  /**
   * A block scalar whose header (`|`, `>`, with `-`) is at `at`, in a block indented `parent`: its text, the reader
   * left on the next line with contents.
   */
  private blockScalar(at: number, parent: number): string {
    const text = this.text;
    const folded = text.charCodeAt(at) === GT;
    let i = at + 1;
    let strip = false;
    if (text.charCodeAt(i) === DASH && i < this.le) {
      strip = true;
      i++;
    }
    // `+` and an indentation indicator are left to the yaml package.
    const after = i;
    i = this.skipSpaces(i);
    if (i < this.le && !(text.charCodeAt(i) === HASH && i > after)) decline();
    this.count();
    let indent = -1;
    let empty = 0;
    const block = new BlockText(folded);
    while (this.peek()) {
      const { pls: ls, ple: le, pfirst: s } = this;
      if (s === le) {
        // Only spaces: an empty line, unless it reaches past the indentation (then its spaces are text).
        if (indent !== -1 && s - ls > indent) decline();
        this.advance();
        empty++;
        continue;
      }
      const lineIndent = s - ls;
      if (indent === -1) {
        if (lineIndent <= parent) break;
        indent = lineIndent;
        // An empty line before the first may not be more indented than it.
        if (empty > 0 && emptyBeforeTooDeep(text, ls, indent)) decline();
      }
      if (lineIndent < indent) break;
      this.advance();
      const line = text.slice(ls + indent, le);
      if (folded && line.charCodeAt(0) === TAB) decline();
      block.line(line, empty);
      empty = 0;
    }
    this.nextContent();
    return block.text(strip);
  }
}

/**
 * The offset of the quote `q` that closes a quoted scalar on the line from `from` to `le` (a single quote doubled is
 * an escaped one, as is a character after a backslash in a double-quoted one), or -1 when it goes on.
 */
function quoteClose(text: string, q: number, from: number, le: number): number {
  for (let i = from; i < le; i++) {
    const ch = text.charCodeAt(i);
    if (q === DQUOTE && ch === BACKSLASH) {
      i++;
      continue;
    }
    if (ch !== q) continue;
    if (q === SQUOTE && i + 1 < le && text.charCodeAt(i + 1) === SQUOTE) {
      i++;
      continue;
    }
    return i;
  }
  return -1;
}
