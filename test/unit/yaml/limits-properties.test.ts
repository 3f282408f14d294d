// Properties of the YAML limits over generated documents: under the limits a text reads exactly as the yaml
// package reads it; the counts bound what the composer builds (nodes and depth), so a text that passes cannot
// grow past them; and a limit set below a text's count refuses it naming that limit.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify, parse as yamlParse } from 'yaml';
import { checkYaml, parseYamlAll, YamlLimitError } from '../../../src/yaml/index.ts';
import { schemaOptions } from '../../../src/yaml/schema.ts';
import { composed } from './composed.ts';

/** The yaml package with the tags mooring reads with: the limits change nothing else. */
const KUBE = schemaOptions('kubernetes');

const RUNS = { seed: 35_4, numRuns: 300 };
const WIDE = { maxNodes: 1_000_000, maxDepth: 512, maxAliasCount: 1000 };

const key = fc.oneof(
  fc.constantFrom('a', 'b', 'name', '- x', '[k]', 'k: v', '*x', '&y', '#c', ''),
  fc.string({ maxLength: 6 }),
);
const scalar = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    0.5,
    '',
    '-',
    '[]',
    '{}',
    '? q',
    ': v',
    '|',
    '> x',
    '*a',
    '&a',
    '!t',
    '---',
    '...',
    '0400',
    'yes',
    '"q"',
    "'s'",
    'a\nb',
    ' lead',
  ),
  fc.string({ maxLength: 12 }),
  fc.integer(),
);
const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(key, tie('v'), { maxKeys: 5 }),
  ),
})).v;
const style = fc.record({
  indent: fc.integer({ min: 1, max: 4 }),
  flowLevel: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  indentSeq: fc.boolean(),
  documents: fc.integer({ min: 1, max: 3 }),
});

function write(
  values: readonly unknown[],
  s: { indent: number; indentSeq: boolean; flowLevel?: number | undefined },
): string {
  return values
    .map((v) => {
      const text = stringify(v, { indent: s.indent, indentSeq: s.indentSeq });
      // Flow style below a level: the yaml package writes a whole value in flow with `flow: true` on a node.
      return s.flowLevel === 0 ? stringify(v, { indent: s.indent, collectionStyle: 'flow' }) : text;
    })
    .join('---\n');
}

/** The nodes the composer built of all documents of `text`, and how deep they nest. */
function built(text: string): { nodes: number; depth: number } {
  const { nodes, depth } = composed(text);
  return { nodes: nodes.reduce((sum, n) => sum + n, 0), depth };
}

describe('YAML limits, over generated documents', () => {
  it('reads a text under the limits as the yaml package does, and its counts bound what is composed', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 3, maxLength: 3 }), style, (values, s) => {
        const text = write(values.slice(0, s.documents), s);
        const counts = checkYaml(text, 'gen.yaml', WIDE);
        const expected = parseAllDocuments(text, KUBE).map((d) => d.toJS());
        expect(parseYamlAll(text, { file: 'gen.yaml', limits: WIDE })).toEqual(expected);
        const total = built(text);
        expect(total.nodes).toBeLessThanOrEqual(2 * counts.nodes * s.documents + 1);
        expect(total.depth).toBeLessThanOrEqual(counts.depth + 1);
        if (s.documents === 1)
          expect(parseYamlAll(text, { file: 'gen.yaml', limits: WIDE })[0]).toEqual(yamlParse(text, KUBE));
      }),
      RUNS,
    );
  }, 30_000);

  it('refuses a text past any limit, naming the limit, before composing it', () => {
    fc.assert(
      fc.property(value, style, fc.constantFrom('maxNodes', 'maxDepth'), (v, s, limit) => {
        const text = write([v], s);
        const counts = checkYaml(text, 'gen.yaml', WIDE);
        const measured = limit === 'maxNodes' ? counts.nodes : counts.depth;
        fc.pre(measured > 1);
        const limits = { ...WIDE, [limit]: measured - 1 };
        const key = limit === 'maxNodes' ? 'render.maxYamlNodes' : 'render.maxYamlDepth';
        try {
          parseYamlAll(text, { file: 'gen.yaml', limits });
          expect.unreachable(`accepted past ${limit}`);
        } catch (error) {
          expect(error).toBeInstanceOf(YamlLimitError);
          expect((error as Error).message).toMatch(
            new RegExp(`^gen\\.yaml:\\d+: .* \\(limit ${key.replace('.', '\\.')}\\)$`),
          );
        }
      }),
      RUNS,
    );
  }, 30_000);

  it('refuses hostile shapes of any size past the limits, after reading only as far as the limit', () => {
    const shapes = {
      'empty flow sequences': (n: number) => '- []\n'.repeat(n),
      'a flat flow sequence': (n: number) => `[${'a,'.repeat(n)}]`,
      'nested flow sequences': (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`,
      'nested block mappings': (n: number) =>
        Array.from({ length: n }, (_, i) => `${' '.repeat(i)}k:`).join('\n'),
      'compact sequences': (n: number) => `${'- '.repeat(n)}x`,
      aliases: (n: number) => `a: &a x\nb: [${'*a, '.repeat(n)}]`,
    };
    const limits = { maxNodes: 500, maxDepth: 40, maxAliasCount: 20 };
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(shapes)),
        fc.integer({ min: 501, max: 5_000 }),
        (shape, n) => {
          const text = shapes[shape as keyof typeof shapes](n);
          expect(() => parseYamlAll(text, { file: 'hostile.yaml', limits })).toThrow(
            /^hostile\.yaml:\d+: .* \(limit render\.(maxYamlNodes|maxYamlDepth|maxAliasCount)\)$/,
          );
        },
      ),
      { seed: 35_4, numRuns: 40 },
    );
  }, 30_000);
});
