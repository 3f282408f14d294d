import { describe, expect, it } from 'vitest';
import { type JsonValue, pathSegments } from '../../../src/render/manifest.ts';
import { DEFAULT_LIMITS, parseManifestFiles } from '../../../src/render/parse.ts';
import { select } from '../../../src/render/path.ts';

describe('manifest parsing', () => {
  it('records where each object, list item and field was written', () => {
    const text = `# leading comment
---
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: a}
    data:
      key: value
  - apiVersion: v1
    kind: Secret
    metadata: {name: b}
`;
    const { objects, errors } = parseManifestFiles([{ path: 'x.yaml', text }]);
    expect(errors).toEqual([]);
    expect(objects.map((o) => [o.object.metadata.name, o.origin.line, o.origin.column])).toEqual([
      ['a', 6, 5],
      ['b', 11, 5],
    ]);
    expect(objects[0]?.locate?.(['data', 'key'])).toEqual({ file: 'x.yaml', line: 10, column: 12 });
    // A field that is not written points at the nearest one that is.
    expect(objects[0]?.locate?.(['data', 'missing', 0])).toEqual({ file: 'x.yaml', line: 10, column: 7 });
  });

  it('parses JSON with positions too', () => {
    const text = '{\n  "apiVersion": "v1",\n  "kind": "ConfigMap",\n  "metadata": {"name": "j"}\n}\n';
    const { objects } = parseManifestFiles([{ path: 'j.json', text }]);
    expect(objects[0]?.origin).toEqual({ file: 'j.json', line: 1, column: 1 });
    expect(objects[0]?.locate?.(['metadata', 'name'])).toEqual({ file: 'j.json', line: 4, column: 24 });
  });

  it('rejects a billion-laughs document without expanding it', () => {
    const levels = Array.from({ length: 12 }, (_, i) =>
      i === 0
        ? 'l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]'
        : `l${i}: &l${i} [${Array(10)
            .fill(`*l${i - 1}`)
            .join(', ')}]`,
    );
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n${levels.map((l) => `  ${l}`).join('\n')}\n`;
    const { objects, errors } = parseManifestFiles([{ path: 'lol.yaml', text }], DEFAULT_LIMITS);
    expect(objects).toEqual([]);
    // Refused while counting, before a node is composed: the 101st alias is on the last line.
    expect(errors.map((e) => e.message)).toEqual([
      'lol.yaml:16:14: more than 100 YAML aliases in one document (limit render.maxAliasCount)',
    ]);
  });

  it('rejects a document whose few aliases expand past the limit', () => {
    // 30 aliases (under the count) that expand 1,000-fold: refused when the value is made.
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [${Array(10).fill('*a').join(', ')}]\n  c: &c [${Array(10).fill('*b').join(', ')}]\n  d: [${Array(10).fill('*c').join(', ')}]\n`;
    const { objects, errors } = parseManifestFiles([{ path: 'lol.yaml', text }], DEFAULT_LIMITS);
    expect(objects).toEqual([]);
    expect(errors.map((e) => e.message)).toEqual([
      'lol.yaml:1:1: Excessive alias count indicates a resource exhaustion attack',
    ]);
  });

  it('rejects duplicate keys in a mapping', () => {
    const { errors } = parseManifestFiles([
      { path: 'd.yaml', text: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\nkind: Secret\n' },
    ]);
    expect(errors[0]?.message).toBe('d.yaml:4:1: Map keys must be unique');
  });
});

describe('table paths', () => {
  it('selects through arrays and reports concrete paths', () => {
    const obj: JsonValue = { spec: { containers: [{ image: 'a' }, { name: 'no-image' }, { image: 'b' }] } };
    expect(select(obj, 'spec.containers[*].image').map((s) => [s.path, s.value])).toEqual([
      ['spec.containers[0].image', 'a'],
      ['spec.containers[2].image', 'b'],
    ]);
    expect(select(obj, 'spec.missing[*].image')).toEqual([]);
    expect(pathSegments('spec.template.spec.containers[12].image')).toEqual([
      'spec',
      'template',
      'spec',
      'containers',
      12,
      'image',
    ]);
  });

  it('refuses a file whose later document passes a YAML limit whole: that refusal alone, none of its objects', () => {
    const good = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fine}\ndata: {a: "1"}\n';
    // A broken first document and a good one, then one of 200 list entries against a limit of 100 nodes.
    const text = `a: [\n---\n${good}---\nitems:\n${'  - x\n'.repeat(200)}`;
    const limits = { ...DEFAULT_LIMITS, yaml: { ...DEFAULT_LIMITS.yaml, maxNodes: 100 } };
    const { objects, errors } = parseManifestFiles(
      [
        { path: 'before.yaml', text: good.replace('fine', 'kept') },
        { path: 'big.yaml', text },
      ],
      limits,
    );
    expect(objects.map((o) => o.object.metadata.name)).toEqual(['kept']);
    expect(errors.map((e) => e.message)).toEqual([
      'big.yaml:58:3: more than 100 YAML nodes in one document (limit render.maxYamlNodes)',
    ]);
  });
});
