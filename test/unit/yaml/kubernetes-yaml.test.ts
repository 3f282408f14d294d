// YAML as Kubernetes reads it (go-yaml v2 through sigs.k8s.io/yaml): a table of plain scalars and what kubectl sends
// for each (the integration test yaml-kubectl.test.ts checks the same table against kubectl itself), merge keys,
// explicit tags, keys, the same reading in the worker, SOPS's go-yaml v3 booleans, and the writer: what it writes
// reads back as the value it was given, however hostile the strings.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  parseYamlAll,
  parseYamlAllAsync,
  parseYamlDocuments,
  stringifyYaml,
} from '../../../src/yaml/index.ts';
import { NON_FINITE_CASES, SCALAR_CASES } from '../../fixtures/yaml/scalar-cases.ts';

const read = (text: string, rules?: 'sops') => parseYamlAll(text, { file: 'case.yaml', rules })[0];

describe('a plain scalar, read as kubectl reads it', () => {
  it.each(SCALAR_CASES)('%s', (text, expected) => {
    expect(read(`v: ${text}\n`)).toEqual({ v: expected });
  });

  it.each(NON_FINITE_CASES)('%s is refused as a value, naming its place, and is the key %s', (text, key) => {
    expect(() => read(`a: 1\nv: ${text}\n`)).toThrow(
      new RegExp(`^\\${text[0]}.* is not a number Kubernetes can read .* at line 2, column 4`),
    );
    expect(read(`${text}: v\n`)).toEqual({ [key]: 'v' });
  });

  it('reads a quoted scalar as the string it is', () => {
    expect(read(`a: "0755"\nb: 'no'\nc: "y"\n`)).toEqual({ a: '0755', b: 'no', c: 'y' });
  });

  it('reads keys by the same rules, as strings (an unquoted y is the key "true")', () => {
    expect(read('data:\n  y: a\n  0755: b\n  1e3: c\n  "on": d\n')).toEqual({
      data: { true: 'a', '493': 'b', '1000': 'c', on: 'd' },
    });
  });

  it('reads the same in the worker as on the calling thread', async () => {
    const text = `${SCALAR_CASES.map(([t], i) => `k${i}: ${t}`).join('\n')}\n`;
    const [inWorker] = await parseYamlAllAsync(text, { file: 'big.yaml', threshold: 1 });
    expect(inWorker).toEqual(read(text));
    expect(inWorker).toMatchObject({ k0: 256, k1: 493 });
    const [sops] = await parseYamlAllAsync('a: yes\n', { file: 'big.yaml', threshold: 1, rules: 'sops' });
    expect(sops).toEqual({ a: 'yes' });
  });
});

describe('merge keys, as go-yaml v2 merges', () => {
  it('sets the merged keys where the << is: a key before it is overwritten, one after it wins', () => {
    const text = 'base: &b {x: 1, z: 2}\nbefore: {x: 0, <<: *b}\nafter: {<<: *b, x: 0}\n';
    expect(read(text)).toEqual({ base: { x: 1, z: 2 }, before: { x: 1, z: 2 }, after: { x: 0, z: 2 } });
  });

  it('of a list of mappings, the earlier win', () => {
    expect(read('m: {<<: [{x: 1}, {x: 2, z: 3}]}\n')).toEqual({ m: { x: 1, z: 3 } });
  });

  it('takes a quoted "<<" as a key', () => {
    expect(read('m: {"<<": {x: 1}}\n')).toEqual({ m: { '<<': { x: 1 } } });
  });
});

describe('explicit tags', () => {
  it('reads !!str, !!int and !!float as go-yaml does', () => {
    expect(read('a: !!str 0755\nb: !!int 0755\nc: !!float 1\n')).toEqual({ a: '0755', b: 493, c: 1 });
  });

  it('decodes !!binary into the string of its bytes, as go-yaml gives it to kubectl', () => {
    expect(read('a: !!binary aGVsbG8=\nb: !!binary |\n  aGVs\n  bG8=\n')).toEqual({ a: 'hello', b: 'hello' });
  });

  it('keeps a timestamp, tagged or not, as its text', () => {
    expect(read('a: 2001-12-14\nb: !!timestamp 2001-12-14t21:59:43.10-05:00\n')).toEqual({
      a: '2001-12-14',
      b: '2001-12-14t21:59:43.10-05:00',
    });
  });
});

describe("a SOPS file's own tree (go-yaml v3, for its MAC)", () => {
  it('has only the YAML 1.2 booleans, and Go numbers', () => {
    expect(read('a: yes\nb: true\nc: 0755\nd: 1_000\n', 'sops')).toEqual({
      a: 'yes',
      b: true,
      c: 493,
      d: 1000,
    });
  });

  it('is written back (the decrypted text) with the strings kubectl would misread quoted, as sops writes them', () => {
    const [doc] = parseYamlDocuments('a: yes\nb: on\nc: 0755\nd: true\n', {
      file: 'secret.yaml',
      rules: 'sops',
    });
    const text = String(doc);
    expect(text).toBe('a: "yes"\nb: "on"\nc: 493\nd: true\n');
    expect(read(text)).toEqual({ a: 'yes', b: 'on', c: 493, d: true });
  });
});

describe('the writer', () => {
  it.each([
    ['no'],
    ['on'],
    ['y'],
    ['N'],
    ['0755'],
    ['0o17'],
    ['0b101'],
    ['1_000'],
    ['1e3'],
    ['.5'],
    ['1:20'],
    ['190:20:30.15'],
    ['2001-12-14'],
    ['<<'],
    ['~'],
    [''],
    ['.inf'],
  ])('quotes %j', (text) => {
    const written = stringifyYaml({ v: text, [text]: 'key' });
    expect(written).not.toMatch(new RegExp(`^v: ${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
    expect(read(written)).toEqual({ v: text, [text]: 'key' });
  });

  it('writes numbers, booleans and null as Kubernetes reads them', () => {
    expect(stringifyYaml({ a: 256, b: 0.5, c: false, d: null, e: 1e21 })).toBe(
      'a: 256\nb: 0.5\nc: false\nd: null\ne: 1e+21\n',
    );
  });

  const hostile = fc.oneof(
    fc.constantFrom(
      ...SCALAR_CASES.map(([t]) => t),
      'yes',
      'Off',
      '0x1F',
      '-0b1',
      '+.5',
      '1.',
      '_1',
      '+_1',
      '0_8',
    ),
    fc.stringMatching(/^[-+._0-9a-fA-FxXoObB:yYnN~<eE ]{0,8}$/),
    fc.string({ maxLength: 12 }),
  );
  const value = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      hostile,
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie('node'), { maxLength: 4 }),
      fc.dictionary(hostile, tie('node'), { maxKeys: 4 }),
    ),
  })).node;

  it('reads back what it wrote, for hostile strings in values and keys', () => {
    fc.assert(
      fc.property(value, (v) => {
        // JSON has no -0: kubectl sends 0, and so does mooring.
        const expected = JSON.parse(JSON.stringify(v));
        expect(JSON.parse(JSON.stringify(read(stringifyYaml(v)) ?? null))).toEqual(expected);
      }),
      { seed: 37_1, numRuns: 400 },
    );
  });
});
