// The reader's fast path (schema.ts surelyString): a plain text of a letter, then letters, digits and -_./, is read
// as the string it is without the tags' tests, and that answer is the tests' own for every such text, every casing
// of YAML 1.1's words among them.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { plainScalar, plainScalarSlowly, surelyString } from '../../../src/yaml/schema.ts';
import { simpleText } from './simple-text.ts';

const WORDS = [
  'y',
  'n',
  'yes',
  'no',
  'on',
  'off',
  'true',
  'false',
  'null',
  'inf',
  'nan',
  'infinity',
  'e1',
  'e-5',
];

function casings(word: string): string[] {
  return Array.from({ length: 1 << word.length }, (_, bits) =>
    [...word].map((c, i) => (bits & (1 << i) ? c.toUpperCase() : c)).join(''),
  );
}

describe('reading a plain scalar', () => {
  it('reads every casing of every word as the tags do', () => {
    for (const word of WORDS)
      for (const text of casings(word)) expect(plainScalar(text), text).toEqual(plainScalarSlowly(text));
  });

  it('reads names of the fast alphabet as the tags do', () => {
    fc.assert(
      fc.property(simpleText, (text) => {
        expect(plainScalar(text), text).toEqual(plainScalarSlowly(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('takes the fast path for names and labels, and not for words, exponents or other alphabets', () => {
    for (const text of ['app.kubernetes.io/name', 'nginx', 'bench-bench-component0', 'apps/v1', 'ON_CALL'])
      expect(surelyString(text), text).toBe(true);
    for (const text of ['yes', 'Off', 'NULL', 'e1', 'E5', '1.0', '0755', '.inf', 'a b', 'a:b', '', '~'])
      expect(surelyString(text), text).toBe(false);
  });
});
