// Large texts are counted and parsed in a worker thread: the same values and the same refusals as on the calling
// thread, and only the shape asked for comes back.
import { describe, expect, it } from 'vitest';
import { checkYamlAsync, parseYamlAllAsync, type Shape, YamlLimitError } from '../../../src/yaml/index.ts';

const LIMITS = { maxNodes: 1000, maxDepth: 16, maxAliasCount: 5 };

describe.each([
  ['in a worker', 0],
  ['on the calling thread', Number.POSITIVE_INFINITY],
])('parsing %s', (_, threshold) => {
  it('gives the values of every document, cut to the shape asked for', async () => {
    const text =
      'entries:\n  web:\n    - version: 1.0.0\n      digest: abc\n      description: long\n---\nx: 1\n';
    const shape: Shape = { entries: { '*': [{ version: true, digest: true }] } };
    expect(await parseYamlAllAsync(text, { file: 'index.yaml', limits: LIMITS, shape, threshold })).toEqual([
      { entries: { web: [{ version: '1.0.0', digest: 'abc' }] } },
      {},
    ]);
  });

  it('refuses a text past a limit with the limit named', async () => {
    const text = '- []\n'.repeat(600);
    const options = {
      file: 'repo: index.yaml',
      limits: { ...LIMITS, keys: { maxNodes: 'maxIndexNodes' } },
      threshold,
    };
    await expect(parseYamlAllAsync(text, options)).rejects.toThrow(
      new YamlLimitError(
        { file: 'repo: index.yaml', line: 501, column: 1 },
        'maxNodes',
        1000,
        'maxIndexNodes',
      ),
    );
    await expect(checkYamlAsync(text, options)).rejects.toBeInstanceOf(YamlLimitError);
    await expect(checkYamlAsync('a: 1\n', options)).resolves.toBeUndefined();
  });

  it("passes the yaml package's errors on", async () => {
    await expect(parseYamlAllAsync('a: [\n', { file: 'x.yaml', limits: LIMITS, threshold })).rejects.toThrow(
      /Flow sequence|flow collection/,
    );
  });
});
