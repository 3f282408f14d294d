// The scalars of the direct reader (fast-read.ts): the characters it looks for, a double-quoted scalar's escapes and
// a block scalar's text, each as the yaml package makes them (the differential tests of fast-read.test.ts).

export const SPACE = 32;
export const HASH = 35;
export const DASH = 45;
export const COLON = 58;
export const DQUOTE = 34;
export const SQUOTE = 39;
export const LBRACKET = 91;
export const RBRACKET = 93;
export const LBRACE = 123;
export const RBRACE = 125;
export const COMMA = 44;
export const PIPE = 124;
export const GT = 62;
export const TAB = 9;
export const BACKSLASH = 92;
export const QUESTION = 63;

/** Characters a plain scalar may not start with (c-indicator), `-`, `?` and `:` aside (taken when not followed by a space). */
export const INDICATOR_START = new Set([...',[]{}#&*!|>\'"%@`'].map((c) => c.charCodeAt(0)));
export const FLOW_STOP = new Set([COMMA, LBRACKET, RBRACKET, LBRACE, RBRACE]);

export const ESCAPES: Record<string, string> = {
  '0': '\0',
  a: '\x07',
  b: '\b',
  e: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  N: '\u0085',
  _: '\u00a0',
  L: '\u2028',
  P: '\u2029',
  ' ': ' ',
  '"': '"',
  '/': '/',
  '\\': '\\',
};

/** The text of a double-quoted scalar's body (one line) with its escapes made; undefined for one it does not read. */
export function unescapeDouble(body: string): string | undefined {
  if (body.indexOf('\\') === -1) return body;
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const ch = body[i] as string;
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const next = body[++i];
    if (next === undefined) return undefined;
    const simple = ESCAPES[next];
    if (simple !== undefined) {
      out += simple;
      continue;
    }
    const width = next === 'x' ? 2 : next === 'u' ? 4 : next === 'U' ? 8 : 0;
    const hex = body.slice(i + 1, i + 1 + width);
    if (width === 0 || !/^[0-9a-fA-F]+$/.test(hex) || hex.length !== width) return undefined;
    const code = Number.parseInt(hex, 16);
    if (code > 0x10ffff) return undefined;
    out += String.fromCodePoint(code);
    i += width;
  }
  return out;
}

/**
 * A block scalar's text, line by line: literal (`|`) lines joined by newlines; folded (`>`) lines joined by spaces,
 * except around empty and more-indented lines, which keep their newlines.
 */
export class BlockText {
  readonly #folded: boolean;
  #out = '';
  #content = false;
  #moreIndented = false;

  constructor(folded: boolean) {
    this.#folded = folded;
  }

  /** A line of content (its block indentation off), after `empty` empty lines. */
  line(line: string, empty: number): void {
    if (!this.#folded) this.#out += '\n'.repeat(this.#content ? 1 + empty : empty);
    else if (line.charCodeAt(0) === SPACE) {
      this.#out += '\n'.repeat(this.#content ? 1 + empty : empty);
      this.#moreIndented = true;
    } else if (this.#moreIndented) {
      this.#out += '\n'.repeat(empty + 1);
      this.#moreIndented = false;
    } else if (empty === 0) {
      if (this.#content) this.#out += ' ';
    } else this.#out += '\n'.repeat(empty);
    this.#out += line;
    this.#content = true;
  }

  /** The text, with its last line break kept (clip) or not (`-`, strip). */
  text(strip: boolean): string {
    return this.#content && !strip ? `${this.#out}\n` : this.#out;
  }
}

/** Whether a plain scalar may be `raw`: not empty, not starting with an indicator (`-`, `?`, `:` with a space). */
export function plainTaken(raw: string): boolean {
  if (raw === '') return false;
  const c = raw.charCodeAt(0);
  if (INDICATOR_START.has(c)) return false;
  return !(
    (c === DASH || c === COLON || c === QUESTION) &&
    (raw.length === 1 || raw.charCodeAt(1) === SPACE)
  );
}

/** The offset just past the quoted scalar starting at `at`, or -1 when it does not close before `end`. */
export function quotedEnd(text: string, at: number, end: number): number {
  const q = text.charCodeAt(at);
  for (let i = at + 1; i < end; i++) {
    const ch = text.charCodeAt(i);
    if (q === DQUOTE) {
      if (ch === BACKSLASH) {
        i++;
        continue;
      }
      if (ch === DQUOTE) return i + 1;
    } else if (ch === SQUOTE) {
      if (i + 1 < end && text.charCodeAt(i + 1) === SQUOTE) {
        i++;
        continue;
      }
      return i + 1;
    }
  }
  return -1;
}

/** The value of the quoted scalar at `at`, closed before `end`; undefined for one the reader leaves (a tab in it). */
export function quotedText(text: string, at: number, end: number): string | undefined {
  const close = quotedEnd(text, at, end);
  if (close === -1) return undefined;
  const body = text.slice(at + 1, close - 1);
  if (body.indexOf('\t') !== -1) return undefined;
  if (text.charCodeAt(at) === SQUOTE) return body.replaceAll("''", "'");
  return unescapeDouble(body);
}

/** Whether an empty line between a block scalar's header and its first line (at `firstLine`) is deeper than `indent`. */
export function emptyBeforeTooDeep(text: string, firstLine: number, indent: number): boolean {
  let i = firstLine - 1;
  while (i > 0) {
    const ls = text.lastIndexOf('\n', i - 1) + 1;
    if (text.slice(ls, i).trim() !== '') return false;
    if (i - ls > indent) return true;
    i = ls - 1;
  }
  return false;
}
