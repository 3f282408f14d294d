// The one JSON reader (src/json.ts). Node 24's JSON.parse reads a key written with an escape as the key an earlier
// object had at that place of the same shape, when that key has its length and its raw text begins with it
// (nodejs/node issue 63785): after `x\`, `"x\u003c"` is read as `x\`. parseJson reads a text again with its plain
// reader when JSON.parse gave a key holding a backslash to a text holding an escaped key. The first tests fail when
// parseJson is JSON.parse itself, or when it keeps from JSON.parse only keys that end in a backslash (the earlier
// key need not end in one, nor come from JSON). The others hold the plain reader to JSON.parse's values and
// refusals.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { holdsEscapedKey, parseJson, parseJsonPlainly } from '../../src/json.ts';

/** The value JSON gives back for `value`: -0 is written as 0. Built without JSON, which is what is under test. */
function asRead(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(asRead);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      Object.defineProperty(out, k, {
        value: asRead(v),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    return out;
  }
  return Object.is(value, -0) ? 0 : value;
}

/** Keys and strings with the characters that need escapes, backslashes at their ends among them. */
const awkward = fc.string({
  unit: fc.constantFrom('a', 'b', '\\', '"', '<', '&', '\n', '\u2028', '\ud800', '\u00e9', ' '),
  maxLength: 6,
});
const jsonish = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    awkward,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(awkward, tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('parseJson', () => {
  it('reads an escaped key as written after a key that ends in a backslash (the V8 bug)', () => {
    const first = parseJson('{"apiVersion":"v1","spec":{"a":1,"x\\\\":2}}') as { spec: object };
    expect(Object.keys(first.spec)).toStrictEqual(['a', 'x\\']);
    // The API server writes `<`, `>` and `&` in a key as \u003c, \u003e, \u0026.
    for (const [text, key] of [
      ['{"apiVersion":"v1","spec":{"a":1,"x\\u003c":2}}', 'x<'],
      ['{"apiVersion":"v1","spec":{"a":1,"x\\u0041":2}}', 'xA'],
      ['{"apiVersion":"v1","spec":{"a":1,"x\\n":2}}', 'x\n'],
    ] as const) {
      const later = parseJson(text) as { spec: object };
      expect(Object.keys(later.spec)).toStrictEqual(['a', key]);
    }
  });

  it('reads an escaped key as written after a key of its length that its raw text begins with', () => {
    // `a\nb`: four characters, a backslash inside and not at the end; `"a\nbc"` is four characters too.
    expect(Object.keys(parseJson('{"h":1,"a\\\\nb":2}') as object)).toStrictEqual(['h', 'a\\nb']);
    expect(Object.keys(parseJson('{"h":1,"a\\nbc":2}') as object)).toStrictEqual(['h', 'a\nbc']);
  });

  it('reads a key written with a backslash beside escaped keys, and escaped keys in a deep value', () => {
    const text = `{"a\\u003c":1,"b\\\\":2,"c":{"k:{\\"t\\":1}":{}}}`;
    expect(parseJson(text)).toStrictEqual({ 'a<': 1, 'b\\': 2, c: { 'k:{"t":1}': {} } });
    const deep = `${'['.repeat(100_000)}{"k\\"":{"a\\\\":1}}${']'.repeat(100_000)}`;
    let value = parseJson(deep);
    for (let level = 0; level < 100_000; level++) value = (value as unknown[])[0];
    expect(value).toStrictEqual({ 'k"': { 'a\\': 1 } });
  });

  it('reads escaped keys as written when the shape that misleads JSON.parse was made without JSON', () => {
    // An object literal with a computed key ending in a backslash, as code building objects from input makes them:
    // the shapes {a, x\} and {<<, b\} and {h, k:{\} are now in the process, and JSON.parse on Node 24 reads the
    // escaped keys below as those keys.
    const made = [
      { a: 1, [`x${'\\'}`]: 2 },
      { '<<': false, [`b${'\\'}`]: false },
      { h: 1, [`k:{${'\\'}`]: 0 },
    ];
    expect(made.map((object) => Object.keys(object)[1])).toStrictEqual(['x\\', 'b\\', 'k:{\\']);
    for (const [text, key] of [
      ['{"a":1,"x\\u003c":2}', 'x<'],
      ['{"a":1,"x\\n":2}', 'x\n'],
      // The shape of a failure once seen: a lone surrogate written as an escape.
      ['[1543387392,{"<<":false,"b\\ud800":false,"\\n<&":false},[],"a"]', 'b\ud800'],
      // managedFields names list entries so: the API server escapes their quotes.
      ['{"h":1,"k:{\\"type\\":\\"Ready\\"}":{}}', 'k:{"type":"Ready"}'],
    ] as const) {
      const value = parseJson(text) as object | unknown[];
      const object = (Array.isArray(value) ? value[1] : value) as object;
      expect(Object.keys(object)[1], text).toBe(key);
    }
  });

  it('tells a key written with an escape from escapes in values, escaped quotes and long runs', () => {
    expect(holdsEscapedKey('{"a\\\\":1}')).toBe(true);
    expect(holdsEscapedKey('{"a\\\\\\\\" \n: 1}')).toBe(true);
    expect(holdsEscapedKey('[{"k":"v"},{"\\\\":0}]')).toBe(true);
    expect(holdsEscapedKey('{"x\\u003c":1}')).toBe(true);
    expect(holdsEscapedKey('{"a\\"b":1}')).toBe(true);
    expect(holdsEscapedKey('{"a":"\\"","b\\n" :1}')).toBe(true);
    expect(holdsEscapedKey('{"f:spec":{"k:{\\"name\\":\\"app\\"}":{}}}')).toBe(true);
    expect(holdsEscapedKey('{"a":"x\\\\"}')).toBe(false);
    expect(holdsEscapedKey('{"a":"x\\\\","b":1}')).toBe(false);
    // A quote escaped inside a value, then what looks like a key's colon, still inside the value.
    expect(holdsEscapedKey('{"a":"\\" :","b":1}')).toBe(false);
    expect(holdsEscapedKey('{"a":"\\u0041\\n"}')).toBe(false);
    // kubectl's last-applied annotation: JSON inside a string, its escapes escaped again.
    expect(
      holdsEscapedKey('{"metadata":{"annotations":{"last":"{\\"data\\":{\\"k\\\\\\\\\\":\\"v\\"}}"}}}'),
    ).toBe(false);
    expect(holdsEscapedKey('{"a":1}')).toBe(false);
    expect(holdsEscapedKey('')).toBe(false);
    // Texts that are not JSON are judged either way, and never loop.
    expect(typeof holdsEscapedKey('"\\')).toBe('boolean');
    expect(typeof holdsEscapedKey('\\"')).toBe('boolean');
    // Linear: a million escaped quotes in one value, and a hundred thousand values with an escape each.
    expect(holdsEscapedKey(`{"a":"${'\\"'.repeat(1_000_000)}"}`)).toBe(false);
    expect(holdsEscapedKey(`[${Array.from({ length: 100_000 }, () => '"\\n"').join(',')}]`)).toBe(false);
    // A long run is counted once: a megabyte of backslashes is read in linear time.
    const run = `{"${'\\'.repeat(1_000_000)}":1}`;
    expect(holdsEscapedKey(run)).toBe(true);
    expect(Object.keys(parseJson(run) as object)[0]?.length).toBe(500_000);
  });

  it('reads every JSON value back as written, keys ending in backslashes among them', () => {
    fc.assert(
      fc.property(jsonish, fc.constantFrom(undefined, 1, '\t'), (value, indent) => {
        const text = JSON.stringify(value, null, indent);
        expect(parseJsonPlainly(text)).toStrictEqual(asRead(value));
        expect(parseJson(text)).toStrictEqual(asRead(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives what JSON.parse gives, and refuses what it refuses, for texts cut, grown or spliced', () => {
    const edit = fc.tuple(
      fc.nat(),
      fc.nat({ max: 3 }),
      fc.constantFrom(
        '',
        ',',
        ']',
        '}',
        '"',
        ':',
        '\\',
        '0',
        '-',
        '.',
        'e',
        ' ',
        'tru',
        'nul',
        '\u0001',
        '{"',
      ),
    );
    fc.assert(
      fc.property(jsonish, edit, (value, [at, cut, insert]) => {
        const text = JSON.stringify(value);
        const place = text.length === 0 ? 0 : at % (text.length + 1);
        const edited = text.slice(0, place) + insert + text.slice(place + cut);
        // JSON.parse says whether the text is JSON; the value of one holding an escaped key, which JSON.parse may
        // misread in this process (its generated objects have keys ending in backslashes), comes from the language's
        // own parser: JSON is an expression whose object literals give the same values (no `__proto__` key is
        // generated).
        let expected: { value: unknown } | 'refused';
        try {
          expected = { value: JSON.parse(edited) };
          if (holdsEscapedKey(edited)) expected = { value: new Function(`return (${edited});`)() };
        } catch {
          expected = 'refused';
        }
        let got: { value: unknown } | 'refused';
        try {
          got = { value: parseJsonPlainly(edited) };
        } catch (error) {
          expect(error).toBeInstanceOf(SyntaxError);
          got = 'refused';
        }
        expect(got).toStrictEqual(expected);
      }),
      { numRuns: 4000 },
    );
    for (const text of [
      '',
      ' ',
      '01',
      '-',
      '1.',
      '.5',
      '1e',
      '+1',
      '"\\x"',
      '"\\u12"',
      '[1,]',
      '{"a":1,}',
      '\ufeff1',
    ])
      expect(() => parseJsonPlainly(text), text).toThrow(SyntaxError);
    for (const text of ['-0', '1E+2', ' \n\t\r[] ', '"\\/\\b\\f"', '1e-7', '"\\ud800"'])
      expect(parseJsonPlainly(text), text).toStrictEqual(JSON.parse(text));
  });

  it('keeps JSON.parse`s object rules: a repeated key, __proto__ as an own key, numeric keys', () => {
    const value = parseJsonPlainly(
      '{"b\\\\":1,"a":2,"b\\\\":3,"__proto__":{"polluted":true},"2":0,"1":0}',
    ) as Record<string, unknown>;
    expect(Object.keys(value)).toStrictEqual(['1', '2', 'b\\', 'a', '__proto__']);
    expect(value['b\\']).toBe(3);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.hasOwn(value, '__proto__')).toBe(true);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('reads nesting of any depth without the stack, and names a position, not the text, when it refuses', () => {
    const depth = 200_000;
    let value = parseJsonPlainly(`${'['.repeat(depth)}{"k\\\\":1}${']'.repeat(depth)}`);
    for (let level = 0; level < depth; level++) value = (value as unknown[])[0];
    expect(value).toStrictEqual({ 'k\\': 1 });
    let message = '';
    try {
      parseJson('{"token\\\\":"s3cr3t-value" "more":1}');
    } catch (error) {
      expect(error).toBeInstanceOf(SyntaxError);
      message = (error as Error).message;
    }
    expect(message).toBe('Unexpected character at position 26 of the JSON text');
    // JSON.parse's own message would quote the text: parseJson's never does.
    expect(() => parseJson('{"token":"s3cr3t-value" "more":1}')).toThrow(
      /^Unexpected character at position 24 of the JSON text$/,
    );
    expect(() => parseJson('{"k\\\\":"unfinished')).toThrow('Unexpected end of JSON input');
  });
});
