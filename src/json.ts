// Every JSON text from outside the process is read here (the API server's answers and watch events, registries,
// forges, webhooks, the state mooring keeps in ConfigMaps and Secrets, exec credentials, schemas). Node 24's V8 has
// a bug in JSON.parse (nodejs/node issue 63785): an object's key written with an escape (`"x\u003c"`,
// `"k:{\"port\":81,...}"`) is read as the key an earlier object of the process had at that place of the same shape
// (the one way on from there) when that key has the escaped key's length and the escaped key's raw text begins with
// it: after `x\`, `"x\u003c"` is read as `x\`; after `k:{\"port\":81,\"protocol\":\"` (30 characters, no
// backslash at the end), `k:{"port":81,"protocol":"TCP"}` is read as that. The earlier object need not come from
// JSON: an object literal with a computed key makes such a shape, and so did objects a property test generated. A
// custom resource's spec holds keys its author chose; Go's encoder (the API server's) escapes `<`, `>`, `&` and `"`
// in keys, and managedFields names each item of a keyed list with such a key: one resource could make mooring read
// the keys, or the field owners, of later objects wrong (test/integration/json-keys.test.ts and
// json-key-owners.test.ts). A key whose raw text holds no backslash cannot be misread (its raw text is the key
// itself), and a misread key holds a backslash (the raw text it was matched with reaches the escape). So JSON.parse
// reads every text, and the value of one holding an escaped key (the managedFields of most workloads hold some) is
// looked through for a key holding a backslash: none, and it was read right (a third of JSON.parse's time more);
// any, and the plain reader below reads the text again, to the same values and the same errors, never misled (it
// builds its objects one key at a time).

/**
 * The value of the JSON text `text`, as JSON.parse gives it. Throws a SyntaxError for a text that is not JSON; the
 * message names a position, never the text around it (it may hold a credential).
 */
export function parseJson(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text; the plain reader refuses the same texts and names a position only.
    return parseJsonPlainly(text);
  }
  return holdsEscapedKey(text) && holdsKeyWithBackslash(value) ? parseJsonPlainly(text) : value;
}

/**
 * Whether any object in `value` has a key holding a backslash. A misread key is an earlier key that the raw text of
 * an escaped key begins with, and as long as the escaped key's decoded text: so it reaches at least the escape's
 * backslash, and holds it. A value without such a key was read right; one with it (a misread, or a key written with
 * `\\`, rare) is read again by the plain reader. Iterative, as deep as the value.
 */
function holdsKeyWithBackslash(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next !== 'object' || next === null) continue;
    if (Array.isArray(next)) {
      for (const item of next) if (typeof item === 'object' && item !== null) pending.push(item);
      continue;
    }
    for (const key in next) {
      if (key.includes('\\')) return true;
      const item = (next as Record<string, unknown>)[key];
      if (typeof item === 'object' && item !== null) pending.push(item);
    }
  }
  return false;
}

const BACKSLASH = 92;
const QUOTE = 34;
const COLON = 58;

/**
 * Whether `text` holds a key written with an escape: a string holding a backslash, followed by a colon. JSON holds
 * backslashes only in strings, so the first backslash after a string begins an escape inside the next string that
 * has one; that string's end is its first quote after an even run of backslashes. Strings without a backslash are
 * skipped by indexOf, each string with one is walked once, quote to quote: linear, whatever the text. (A text that
 * is not JSON may be judged either way; both readers refuse it.)
 */
export function holdsEscapedKey(text: string): boolean {
  const n = text.length;
  for (let at = text.indexOf('\\'); at !== -1; ) {
    let quote = text.indexOf('"', at);
    for (;;) {
      if (quote === -1) return false;
      let run = 0;
      while (text.charCodeAt(quote - run - 1) === BACKSLASH) run++;
      if (run % 2 === 0) break;
      quote = text.indexOf('"', quote + 1);
    }
    let next = quote + 1;
    while (next < n && isSpace(text.charCodeAt(next))) next++;
    if (text.charCodeAt(next) === COLON) return true;
    at = text.indexOf('\\', quote + 1);
  }
  return false;
}

function isSpace(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}

type Frame = { array: unknown[] } | { object: Record<string, unknown>; key: string };

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;
const ESCAPES: Record<number, string> = {
  34: '"',
  92: '\\',
  47: '/',
  98: '\b',
  102: '\f',
  110: '\n',
  114: '\r',
  116: '\t',
};

/**
 * JSON read without JSON.parse, to the same values (a repeated key keeps its first place and its last value;
 * `__proto__` is an own key, never the prototype) and the same refusals. Iterative: nesting as deep as the text
 * allows costs memory, not stack. Exported for its tests; the reader to call is parseJson.
 */
export function parseJsonPlainly(text: string): unknown {
  const n = text.length;
  let i = 0;
  const stack: Frame[] = [];
  const fail = (): never => {
    throw new SyntaxError(
      i >= n ? 'Unexpected end of JSON input' : `Unexpected character at position ${i} of the JSON text`,
    );
  };
  const skipSpace = () => {
    while (i < n && isSpace(text.charCodeAt(i))) i++;
  };
  const expect = (code: number) => {
    if (text.charCodeAt(i) !== code) fail();
    i++;
  };
  const string = (): string => {
    expect(QUOTE);
    let out = '';
    let from = i;
    for (;;) {
      if (i >= n) fail();
      const code = text.charCodeAt(i);
      if (code === QUOTE) {
        out += text.slice(from, i);
        i++;
        return out;
      }
      if (code < 0x20) fail();
      if (code !== BACKSLASH) {
        i++;
        continue;
      }
      out += text.slice(from, i);
      i++;
      const escaped = text.charCodeAt(i);
      if (escaped === 117) {
        const hex = text.slice(i + 1, i + 5);
        if (!HEX4.test(hex)) fail();
        out += String.fromCharCode(Number.parseInt(hex, 16));
        i += 5;
      } else {
        const plain = ESCAPES[escaped];
        if (plain === undefined) fail();
        out += plain;
        i++;
      }
      from = i;
    }
  };
  const key = (): string => {
    skipSpace();
    const name = string();
    skipSpace();
    expect(COLON);
    return name;
  };
  const literal = (word: string, value: unknown): unknown => {
    let k = 0;
    while (k < word.length && text.charCodeAt(i + k) === word.charCodeAt(k)) k++;
    i += k;
    if (k < word.length) fail();
    return value;
  };
  for (;;) {
    skipSpace();
    let value: unknown;
    const code = text.charCodeAt(i);
    if (code === 123) {
      i++;
      skipSpace();
      if (text.charCodeAt(i) === 125) {
        i++;
        value = {};
      } else {
        stack.push({ object: {}, key: key() });
        continue;
      }
    } else if (code === 91) {
      i++;
      skipSpace();
      if (text.charCodeAt(i) === 93) {
        i++;
        value = [];
      } else {
        stack.push({ array: [] });
        continue;
      }
    } else if (code === QUOTE) value = string();
    else if (code === 116) value = literal('true', true);
    else if (code === 102) value = literal('false', false);
    else if (code === 110) value = literal('null', null);
    else {
      NUMBER.lastIndex = i;
      const number = NUMBER.exec(text);
      if (!number) {
        if (code === 45) i++;
        fail();
      }
      value = Number((number as RegExpExecArray)[0]);
      i = NUMBER.lastIndex;
    }
    // The value goes into the container it closes; each container it completes goes into the one around it.
    for (;;) {
      const top = stack.at(-1);
      if (top === undefined) {
        skipSpace();
        if (i < n) fail();
        return value;
      }
      if ('array' in top) top.array.push(value);
      else if (top.key === '__proto__')
        Object.defineProperty(top.object, top.key, {
          value,
          writable: true,
          enumerable: true,
          configurable: true,
        });
      else top.object[top.key] = value;
      skipSpace();
      const next = text.charCodeAt(i);
      if (next === 44) {
        i++;
        if (!('array' in top)) top.key = key();
        break;
      }
      if (next === ('array' in top ? 93 : 125)) {
        i++;
        stack.pop();
        value = 'array' in top ? top.array : top.object;
        continue;
      }
      fail();
    }
  }
}
