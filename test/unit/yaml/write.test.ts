// mooring's writer of JSON data gives, byte for byte, what the yaml package writes with the same options, for any
// value (generated, and the words and shapes that YAML quotes or writes as blocks), and leaves to the package what
// is not plain data; what it writes reads back as the same value with Kubernetes' rules.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseYamlAll } from '../../../src/yaml/parse.ts';
import { schemaOptions, WRITE_COMPAT } from '../../../src/yaml/schema.ts';
import { plain, plainSlowly, stringifyYaml, writeData } from '../../../src/yaml/write.ts';
import { simpleText } from './simple-text.ts';

const byPackage = (value: unknown) =>
  stringify(value, { ...schemaOptions('kubernetes'), compat: WRITE_COMPAT, lineWidth: 0 });

// Words and shapes each YAML reader or the package treats apart.
const TRICKY = [
  '',
  ' ',
  'a ',
  ' a',
  'yes',
  'Yes',
  'NO',
  'on',
  'Off',
  'y',
  'n',
  'N',
  'true',
  'False',
  'null',
  'Null',
  '~',
  '0755',
  '0o17',
  '0x1F',
  '0b101',
  '1_000',
  '1:20',
  '190:20:30',
  '2001-12-14',
  '2001-12-14t21:59:43.10-05:00',
  '.inf',
  '-.Inf',
  '.nan',
  'NaN',
  'inf',
  '1e3',
  '1E+3',
  '+1',
  '-1',
  '.5',
  '5.',
  '1.0',
  '<<',
  '=',
  '-',
  '?',
  ':',
  '- a',
  '? a',
  'a: b',
  'a:b',
  'a #b',
  'a#b',
  '#a',
  '&a',
  '*a',
  '!a',
  '|',
  '>',
  "'",
  '"',
  '%a',
  '@a',
  '`a',
  '[a]',
  '{a}',
  'a,b',
  '---',
  '--- a',
  '...',
  'a\nb',
  'a\n',
  'a\n\n',
  '\na',
  ' a\nb',
  'a \nb',
  'a\n b\n',
  'tab\there',
  '\t',
  'x\u0001y',
  'x\u0085y',
  '\ud800',
  'é',
  '日本',
  'http://example.com:80/x',
  'nginx:1.25',
  'sha256:abc',
  'a'.repeat(1100),
  `${'a'.repeat(100)} ${'b'.repeat(100)}`,
  'line\r\nnext',
  '0',
  '00',
  '-0',
  // Descriptions and scripts, as CRDs and charts hold them: quoted lines and literal blocks written directly.
  'Container name: required for volumes, optional for env vars',
  'say "hi" to the operator',
  'it\'s "quoted" both ways',
  "it's only single",
  'a\\backslash: here',
  'first line\nsecond: line\n\nafter an empty one',
  'ends with a break\n',
  'ends with two\n\n',
  'last line ends in a space\nb ',
  'space after the break\n ',
  'clip then space \n',
  ' leading space\nx',
  '\nleading break',
  'tab\tinside\nx',
  'non-ASCII \u00e9\nx',
  '#!/bin/sh\nset -e\nexec "$@"\n',
  'key: value\n  nested: more\n',
  '--- not a marker here\nx',
];

const text = fc.oneof(
  fc.constantFrom(...TRICKY),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
);
const data = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    text,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(text, tie('value'), { maxKeys: 4 }),
  ),
}));
const root = fc.oneof(
  fc.array(data.value, { maxLength: 5 }),
  fc.dictionary(text, data.value, { maxKeys: 6 }),
);

/** `value` as its YAML is read back: JSON data with -0 as 0. */
function asWritten(value: unknown): unknown {
  if (value === 0) return 0;
  if (Array.isArray(value)) return value.map(asWritten);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asWritten(v)]));
  return value;
}

describe('the YAML writer of JSON data', () => {
  it('writes what the yaml package writes, for any value', () => {
    fc.assert(
      fc.property(root, (value) => {
        expect(stringifyYaml(value)).toBe(byPackage(value));
      }),
      { numRuns: 3000 },
    );
  });

  it('writes what the yaml package writes for every tricky string, as a key, a value and an item, at every depth', () => {
    for (const s of TRICKY)
      for (const value of [
        { k: s },
        { [s]: 1 },
        [s],
        { a: { b: [s, { c: s }] } },
        [[s, [s]], { d: [s] }],
        { a: s, b: { c: s }, e: 1 },
      ])
        expect(stringifyYaml(value), JSON.stringify(value)).toBe(byPackage(value));
  });

  it('decides names, labels and words of letters, digits and -_./ as the package does (the fast path)', () => {
    // Every casing of every YAML 1.1 word, and names of the alphabet the writer decides without the tag tests.
    const words = ['y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null', 'inf', 'nan', 'e1', 'e-5'];
    const casings = (w: string): string[] =>
      Array.from({ length: 1 << w.length }, (_, bits) =>
        [...w].map((c, i) => (bits & (1 << i) ? c.toUpperCase() : c)).join(''),
      );
    const check = (s: string) => {
      for (const value of [{ k: s }, { [s]: s }, [s]]) expect(stringifyYaml(value), s).toBe(byPackage(value));
      expect(plain(s), s).toBe(plainSlowly(s));
    };
    for (const w of words) for (const c of casings(w)) check(c);
    fc.assert(fc.property(simpleText, check), { numRuns: 5000 });
  });

  it('writes what it reads back as the same value', () => {
    fc.assert(
      fc.property(root, (value) => {
        const written = stringifyYaml(value);
        const [read] = parseYamlAll(written, { file: 'written.yaml' });
        // -0 is written as 0, as JSON does. Not JSON.parse(JSON.stringify(value)): Node 24's JSON.parse reads a key
        // written with a \u escape as the key an earlier object of the same shape had there when that key ended in a
        // backslash (after `{"a":1,"x\\":2}`, the text `{"a":1,"x\u0041":2}` reads as a key `x\`, not `xA`), which
        // made this test fail now and then. A failure names the text written and both sides escaped (a lone
        // surrogate prints as U+FFFD in a diff).
        const expected = asWritten(value);
        expect(
          read,
          `${JSON.stringify(written)} read as ${JSON.stringify(read)}, not ${JSON.stringify(expected)}`,
        ).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('writes the manifests of every fixture as the package does', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.ya?ml$/.test(name)) files.push(path);
      }
    };
    walk(join(import.meta.dirname, '..', '..', 'fixtures'));
    let documents = 0;
    // How many the writer wrote itself (not left to the package).
    let own = 0;
    for (const file of files) {
      let values: unknown[];
      try {
        values = parseYamlAll(readFileSync(file, 'utf8'), { file });
      } catch {
        continue;
      }
      for (const value of values) {
        documents++;
        if (writeData(value) !== undefined) own++;
        expect(stringifyYaml(value), file).toBe(byPackage(value));
      }
    }
    expect(documents).toBeGreaterThan(100);
    expect(own / documents).toBeGreaterThan(0.9);
  });

  it('leaves to the package what is not plain data: an object met twice, undefined, a class, a key not plain', () => {
    const shared = { a: 1 };
    for (const value of [
      { x: shared, y: shared },
      { a: undefined },
      [undefined],
      { d: new Date(0) },
      { m: new Map([['a', 1]]) },
      { n: Number.NaN },
      { 'a: b': 1 },
      { '': 1 },
      'a string',
      7,
      null,
    ]) {
      expect(writeData(value), JSON.stringify(value)).toBeUndefined();
      expect(stringifyYaml(value)).toBe(byPackage(value));
    }
  });
});
