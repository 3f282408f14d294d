// The YAML limits, checked on the lexer's tokens before anything is composed: what counts, where a refusal
// points (file and line) and which limit it names.
import { describe, expect, it } from 'vitest';
import { StalledError } from '../../../src/errors.ts';
import {
  checkYaml,
  DEFAULT_YAML_LIMITS,
  parseYaml,
  parseYamlAll,
  YamlLimitError,
  type YamlLimits,
} from '../../../src/yaml/index.ts';

const LIMITS: YamlLimits = { maxNodes: 20, maxDepth: 8, maxAliasCount: 3 };

function refusal(text: string, limits = LIMITS): string {
  try {
    checkYaml(text, 'apps/x.yaml', limits);
  } catch (error) {
    expect(error).toBeInstanceOf(YamlLimitError);
    expect(error).toBeInstanceOf(StalledError);
    return (error as Error).message;
  }
  return 'accepted';
}

describe('checkYaml', () => {
  it.each([
    ['a block mapping', 'a: 1\nb: two\n', { nodes: 6, depth: 2 }],
    ['a block sequence of flow collections', '- []\n- {}\n', { nodes: 4, depth: 2 }],
    ['nested block mappings', 'a:\n  b:\n    c: 1\n', { nodes: 7, depth: 4 }],
    ['compact nested sequences', '- - - x\n', { nodes: 4, depth: 4 }],
    ['flow collections in a mapping', 'a: [1, {b: c}]\n', { nodes: 8, depth: 3 }],
    ['quoted and block scalars', 'a: "q"\nb: |\n  text\n  more\nc: \'s\'\n', { nodes: 9, depth: 2 }],
    ['an anchor and an alias', 'a: &x 1\nb: *x\n', { nodes: 6, depth: 2 }],
    ['scalars that look like indicators', 'a: -x\nb: "[not"\nc: ?q\n', { nodes: 9, depth: 2 }],
  ])('counts %s', (_, text, expected) => {
    const counts = checkYaml(text, 'x.yaml', DEFAULT_YAML_LIMITS);
    expect({ nodes: counts.nodes, depth: counts.depth }).toEqual(expected);
  });

  it('counts each document on its own', () => {
    const doc = 'a: [1, 2, 3, 4, 5, 6]\n';
    expect(checkYaml(`${doc}---\n${doc}---\n${doc}`, 'x.yaml', LIMITS)).toMatchObject({
      documents: 3,
      nodes: 9,
    });
  });

  it.each([
    [
      'too many nodes',
      `${'- []\n'.repeat(11)}`,
      'apps/x.yaml:11: more than 20 YAML nodes in one document (limit render.maxYamlNodes)',
    ],
    [
      'too many nodes on one line',
      `[${'a,'.repeat(30)}]`,
      'apps/x.yaml:1: more than 20 YAML nodes in one document (limit render.maxYamlNodes)',
    ],
    [
      'flow nested too deep',
      `${'['.repeat(9)}${']'.repeat(9)}`,
      'apps/x.yaml:1: YAML nested more than 8 levels deep (limit render.maxYamlDepth)',
    ],
    [
      'blocks nested too deep',
      Array.from({ length: 9 }, (_, i) => `${' '.repeat(i)}k:`).join('\n'),
      'apps/x.yaml:9: YAML nested more than 8 levels deep (limit render.maxYamlDepth)',
    ],
    [
      'compact sequences nested too deep',
      `${'- '.repeat(9)}x`,
      'apps/x.yaml:1: YAML nested more than 8 levels deep (limit render.maxYamlDepth)',
    ],
    [
      'too many aliases',
      'a: &a 1\nb: [*a, *a]\nc: [*a, *a]\n',
      'apps/x.yaml:3: more than 3 YAML aliases in one document (limit render.maxAliasCount)',
    ],
  ])('refuses %s, naming the file, line and limit', (_, text, message) => {
    expect(refusal(text)).toBe(message);
  });

  it('names another configuration key when told to', () => {
    expect(
      refusal('- []\n'.repeat(11), { ...LIMITS, keys: { maxNodes: 'maxIndexNodes of the chart source' } }),
    ).toBe(
      'apps/x.yaml:11: more than 20 YAML nodes in one document (limit maxIndexNodes of the chart source)',
    );
  });

  it('refuses 1 MB of `- []` after reading only as far as the limit', () => {
    const text = '- []\n'.repeat(200_000);
    expect(refusal(text, DEFAULT_YAML_LIMITS)).toBe(
      'apps/x.yaml:125001: more than 250000 YAML nodes in one document (limit render.maxYamlNodes)',
    );
  });

  it('accepts what is under the limits, as it is', () => {
    expect(refusal('- []\n'.repeat(10))).toBe('accepted');
    expect(refusal(`${'['.repeat(8)}${']'.repeat(8)}`)).toBe('accepted');
  });
});

describe('parseYaml', () => {
  it('reads values as Kubernetes does (YAML 1.1: 0400 is octal)', () => {
    expect(parseYaml('a: 1\nb: [x, null, true]\nc: 0400\n', { file: 'x.yaml' })).toEqual({
      a: 1,
      b: ['x', null, true],
      c: 256,
    });
    expect(parseYamlAll('a: 1\n---\nb: 2\n', { file: 'x.yaml' })).toEqual([{ a: 1 }, { b: 2 }]);
  });

  it('throws the limit before the yaml package sees the text', () => {
    expect(() => parseYaml('- []\n'.repeat(300_000), { file: 'big.yaml' })).toThrow(
      'big.yaml:125001: more than 250000 YAML nodes in one document (limit render.maxYamlNodes)',
    );
  });

  it('keeps the alias expansion limit when the value is made', () => {
    const text = `a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [${Array(10).fill('*a').join(', ')}]\nc: [${Array(10).fill('*b').join(', ')}]\n`;
    expect(() => parseYaml(text, { file: 'x.yaml' })).toThrow('Excessive alias count');
  });

  it('refuses duplicate keys unless asked not to', () => {
    expect(() => parseYaml('a: 1\na: 2\n', { file: 'x.yaml' })).toThrow('Map keys must be unique');
    expect(parseYaml('a: 1\na: 2\n', { file: 'x.yaml', uniqueKeys: false })).toEqual({ a: 2 });
  });
});
