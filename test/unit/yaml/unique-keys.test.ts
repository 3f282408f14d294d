// Repeated keys found in linear time (src/yaml/unique-keys.ts) give the errors the yaml package's own check gives:
// the same code, message, offsets and readable form, in the same order among the package's other errors, for
// generated texts of block and flow mappings, nested and repeated at every depth, with keys the schema reads as the
// same value written differently (1 and 0x1, `yes` and `true`), keys that never repeat (.nan), anchors and tags.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineCounter, parseAllDocuments, parseDocument } from 'yaml';
import { composeCounted, parseYaml, parseYamlDocument, parseYamlDocuments } from '../../../src/yaml/parse.ts';
import { schemaOptions } from '../../../src/yaml/schema.ts';

const PACKAGE = { ...schemaOptions('kubernetes'), uniqueKeys: true, prettyErrors: true } as const;

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
        const ours = parseYamlDocuments(text, { file: 't.yaml' });
        expect(Array.isArray(theirs)).toBe(true);
        if (!Array.isArray(theirs)) return;
        expect(ours.map((d) => said(d.errors))).toEqual(theirs.map((d) => said(d.errors)));
        // One document: the same through the single-document path.
        const first = parseDocument(text, PACKAGE);
        expect(said(parseYamlDocument(text, { file: 't.yaml' }).errors)).toEqual(said(first.errors));
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
