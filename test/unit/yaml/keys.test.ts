// Keys as Kubernetes reads them (src/yaml/keys.ts): the texts Go gives keys that are not strings, the keys and numbers
// it refuses, at their place, through every path (parseYaml, the direct reader, a file of documents); and repeated
// keys found in linear time, which give the errors the yaml package's own check gives:
// the same code, message, offsets and readable form, in the same order among the package's other errors, for
// generated texts of block and flow mappings, nested and repeated at every depth, with keys the schema reads as the
// same value written differently (1 and 0x1, `yes` and `true`), keys that never repeat (.nan), anchors and tags.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineCounter, parseAllDocuments, parseDocument } from 'yaml';
import { readDocuments } from '../../../src/yaml/documents.ts';
import { goFloat32Text } from '../../../src/yaml/go-scalars.ts';
import { composeCounted, parseYaml, parseYamlDocument, parseYamlDocuments } from '../../../src/yaml/parse.ts';
import { schemaOptions } from '../../../src/yaml/schema.ts';

const FIXTURES = join(import.meta.dirname, '../../fixtures/yaml');

// Compared with the package under YAML 1.2's core schema (mooring's own configuration), where keys are compared as
// the package compares them; under Kubernetes' rules they are compared as Go's texts (below).
const PACKAGE = { ...schemaOptions('core'), uniqueKeys: true, prettyErrors: true } as const;

/**
 * What errors say, for comparison, in the order of the text: the package reports a repeated key of a flow mapping
 * after the errors of its value, mooring's in text order.
 */
function said(
  errors: readonly { code: string; message: string; pos: [number, number]; linePos?: unknown }[],
) {
  return errors
    .map(({ code, message, pos, linePos }) => ({ code, message, pos, linePos }))
    .sort((a, b) => a.pos[0] - b.pos[0]);
}

const KEYS = [
  'a',
  'b',
  'name',
  '1',
  '0x1',
  '01',
  '1.0',
  'yes',
  'true',
  'on',
  '"a"',
  "'b'",
  '.nan',
  '~',
  'null',
  '<<',
];

/** A YAML text of nested mappings whose keys are drawn from KEYS, so that repeats are frequent. */
const mapping: fc.Memo<string[]> = fc.memo((depth) =>
  fc
    .array(
      fc.tuple(
        fc.constantFrom(...KEYS),
        fc.constantFrom('', '&k ', '!!str '),
        depth > 1 ? fc.oneof(fc.constant(['x']), mapping(depth - 1)) : fc.constant(['x']),
        fc.boolean(),
      ),
      { minLength: 1, maxLength: 6 },
    )
    .map((pairs) =>
      pairs.flatMap(([key, props, value, flow], i) => {
        const anchor = props === '&k ' ? `&k${depth}${i} ` : props;
        if (value.length === 1) return [`${anchor}${key}: ${value[0]}`];
        if (flow) return [`${anchor}${key}: {${value.map((l) => l.trim()).join(', ')}}`];
        return [`${anchor}${key}:`, ...value.map((line) => `  ${line}`)];
      }),
    ),
);

describe('repeated keys', () => {
  it('give the errors the package gives, in place, in the order of the text', () => {
    fc.assert(
      fc.property(fc.array(mapping(3), { minLength: 1, maxLength: 3 }), fc.boolean(), (docs, broken) => {
        // Now and then a syntax error after the mappings, so that both kinds of error are ordered together.
        const text = `${docs.map((lines) => lines.join('\n')).join('\n---\n')}\n${broken ? 'z: [\n' : ''}`;
        const theirs = parseAllDocuments(text, PACKAGE);
        const ours = parseYamlDocuments(text, { file: 't.yaml', rules: 'core' });
        expect(Array.isArray(theirs)).toBe(true);
        if (!Array.isArray(theirs)) return;
        expect(ours.map((d) => said(d.errors))).toEqual(theirs.map((d) => said(d.errors)));
        // One document: the same through the single-document path.
        const first = parseDocument(text, PACKAGE);
        expect(said(parseYamlDocument(text, { file: 't.yaml', rules: 'core' }).errors)).toEqual(
          said(first.errors),
        );
      }),
      { numRuns: 400 },
    );
  });

  it('are found as documents are composed one at a time, unformatted as the composer leaves them', () => {
    const text = 'a: 1\nb:\n  c: 2\n  c: 3\n---\nx: {y: 1, y: 2}\n';
    const lines = new LineCounter();
    const docs = [...composeCounted(text, { file: 't.yaml', lineCounter: lines }).documents];
    expect(docs.map((d) => d.errors.map((e) => [e.code, e.message, e.pos]))).toEqual([
      [['DUPLICATE_KEY', 'Map keys must be unique', [17, 18]]],
      [['DUPLICATE_KEY', 'Map keys must be unique', [36, 37]]],
    ]);
  });

  it("are placed with the caller's own line counter as the package places them (the configuration's path)", () => {
    const text = 'a: 1\nb:\n  c: 2\n  c: 3\nd: {x: 1, x: 2}\n';
    const ours = parseYamlDocument(text, { file: 't.yaml', lineCounter: new LineCounter(), rules: 'core' });
    const theirs = parseDocument(text, {
      ...schemaOptions('core'),
      uniqueKeys: true,
      prettyErrors: true,
      lineCounter: new LineCounter(),
    });
    expect(said(ours.errors)).toEqual(said(theirs.errors));
    expect(ours.errors).toHaveLength(2);
  });

  it('are allowed when the caller allows them, the last one winning', () => {
    expect(parseYaml('a: 1\na: 2\n', { file: 'x.yaml', uniqueKeys: false })).toEqual({ a: 2 });
    expect(() => parseYaml('a: 1\n"a": 2\n', { file: 'x.yaml' })).toThrow(
      'Map keys must be unique at line 2, column 1',
    );
  });

  it('in a mapping of 60,000 keys, the last one repeated, are found (each key asked once, not of every other)', () => {
    const keys = Array.from({ length: 60_000 }, (_, i) => `k${i}: ${i}`);
    const text = `big:\n${[...keys, 'k7: again'].map((l) => `  ${l}`).join('\n')}\n`;
    const doc = parseYamlDocument(text, { file: 'big.yaml' });
    expect(doc.errors.map((e) => [e.code, e.linePos?.[0]])).toEqual([
      ['DUPLICATE_KEY', { line: 60_002, col: 3 }],
    ]);
  });
});

/** The errors of a one-document text as code, line and column, by the composed path. */
function errorsOf(text: string, options: Partial<Parameters<typeof parseYamlDocument>[1]> = {}) {
  return parseYamlDocument(text, { file: 'k.yaml', ...options }).errors.map((e) => [
    e.code,
    e.linePos?.[0].line,
    e.linePos?.[0].col,
  ]);
}

/** What the manifests' reading (the direct reader first) makes of a text: values, or the first error's place and message. */
function read(text: string) {
  return [...readDocuments(text, { file: 'k.yaml', maxDocuments: 100 })].map((d) =>
    'errors' in d ? { error: d.errors[0] } : 'value' in d ? d.value : d,
  );
}

describe("keys as Kubernetes reads them (sigs.k8s.io/yaml's JSON keys)", () => {
  it('gives a key that is not a string the text Go gives it', () => {
    const text = [
      '1e6: a',
      '0x1F: b',
      'yes: c',
      '.inf: d',
      '-.Inf: e',
      '.nan: f',
      '3.14159265358979: g',
      '1.0: h',
      '9223372036854775807: i',
      '-0.0: j',
      '1_000: k',
      '"null": l',
      "'': m",
      '',
    ].join('\n');
    const want = {
      '1e+06': 'a',
      '31': 'b',
      true: 'c',
      '.inf': 'd',
      '-.inf': 'e',
      '.nan': 'f',
      '3.1415927': 'g',
      '1': 'h',
      '9223372036854775807': 'i',
      '-0': 'j',
      '1000': 'k',
      null: 'l',
      '': 'm',
    };
    expect(parseYaml(text, { file: 'k.yaml' })).toEqual(want);
    expect(read(text)).toEqual([want]);
    // In a flow mapping, by the direct reader and by the package.
    expect(read('{1e6: a, .nan: b}\n')).toEqual([{ '1e+06': 'a', '.nan': 'b' }]);
    expect(read('&m {1e6: a}\n')).toEqual([{ '1e+06': 'a' }]);
  });

  it('reads a float key as Go formats a float32, over a table Go made (strconv.FormatFloat(f, g, -1, 32))', () => {
    const cases = JSON.parse(readFileSync(join(FIXTURES, 'go-float32-keys.json'), 'utf8')) as [
      string,
      string,
    ][];
    expect(cases.length).toBeGreaterThan(300);
    for (const [text, go] of cases) {
      const want = go === '+Inf' ? '.inf' : go === '-Inf' ? '-.inf' : go;
      expect(goFloat32Text(Number(text)), text).toBe(want);
    }
  });

  it('refuses a key Go refuses, naming the line and column: null, empty, a collection, past int64', () => {
    expect(errorsOf('a: 1\n~: x\n')).toEqual([['NON_STRING_KEY', 2, 1]]);
    expect(errorsOf('a: 1\nb:\n  null: x\n')).toEqual([['NON_STRING_KEY', 3, 3]]);
    expect(errorsOf('a: 1\n: x\n')).toEqual([['NON_STRING_KEY', 2, 1]]);
    expect(errorsOf('{a: 1, ~: 2}\n')).toEqual([['NON_STRING_KEY', 1, 8]]);
    expect(errorsOf('? [a, b]\n: x\n')).toEqual([['NON_STRING_KEY', 1, 3]]);
    expect(errorsOf('9223372036854775808: x\n')).toEqual([['NON_STRING_KEY', 1, 1]]);
    expect(() => parseYaml('spec:\n  ~: x\n', { file: 'k.yaml' })).toThrow(
      /^a mapping key is null \("~"\): Kubernetes takes only a string, a number or a boolean as a key; quote it for a string at line 2, column 3/,
    );
    expect(read('kind: A\n---\nkind: B\nnull: x\n')[1]).toEqual({
      error: expect.objectContaining({
        line: 4,
        column: 1,
        message: expect.stringMatching(/^a mapping key is null/),
      }),
    });
  });

  it('refuses a number JSON cannot hold where it is a value, at its place, whichever reader read the rest', () => {
    expect(errorsOf('spec:\n  replicas: .nan\n')).toEqual([['TAG_RESOLVE_FAILED', 2, 13]]);
    expect(errorsOf('a: [1, -.inf]\n')).toEqual([['TAG_RESOLVE_FAILED', 1, 8]]);
    expect(errorsOf('a:\n  - .Inf\n')).toEqual([['TAG_RESOLVE_FAILED', 2, 5]]);
    expect(() => parseYaml('replicas: .nan\n', { file: 'k.yaml' })).toThrow(
      /^\.nan is not a number Kubernetes can read \(JSON has no infinity or NaN\); quote it for a string at line 1, column 11/,
    );
    expect(read('kind: A\n---\nkind: Deployment\nspec: {replicas: .inf}\n')).toEqual([
      { kind: 'A' },
      { error: expect.objectContaining({ line: 4, column: 18 }) },
    ]);
    // Quoted, and as a key, it is text; a number too large for a float is a string already (1e400), as in Go.
    expect(parseYaml('a: ".nan"\n.inf: 1e400\n', { file: 'k.yaml' })).toEqual({ a: '.nan', '.inf': '1e400' });
  });

  it('compares keys as those texts: 1 and 1.0, two .nan, yes and true are one key to Kubernetes', () => {
    expect(errorsOf('1: a\n1.0: b\n')).toEqual([['DUPLICATE_KEY', 2, 1]]);
    expect(errorsOf('.nan: a\n.NaN: b\n')).toEqual([['DUPLICATE_KEY', 2, 1]]);
    expect(errorsOf('yes: a\n"true": b\n')).toEqual([['DUPLICATE_KEY', 2, 1]]);
    expect(errorsOf('1e6: a\n1000000: b\n')).toEqual([]);
  });

  it('holds when repeated keys are allowed, and not under mooring’s own rules', () => {
    expect(() => parseYaml('a: .inf\n', { file: 'k.yaml', uniqueKeys: false })).toThrow(/is not a number/);
    expect(() => parseYaml('~: 1\n', { file: 'k.yaml', uniqueKeys: false })).toThrow(/mapping key is null/);
    expect(parseYaml('a: .inf\n~: 1\n1e6: 2\n', { file: 'k.yaml', rules: 'core' })).toEqual({
      a: Number.POSITIVE_INFINITY,
      '': 1,
      '1000000': 2,
    });
  });
});
