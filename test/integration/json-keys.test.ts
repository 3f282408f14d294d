// Keys that JSON writes with escapes, read back from the real API server. Node 24's JSON.parse, once it has read a
// key that ends in a backslash, reads a later escaped key at the same place of an object of the same shape as that
// earlier key (nodejs/node issue 63785); Go's encoder escapes `<`, `>` and `&`. One custom resource whose spec
// holds such a key (its author chooses the spec's keys) made mooring's reader of the API server give every later
// resource of its shape that key instead of its own (the list and the reads below fail so with JSON.parse). A diff
// and a redeploy compared two reads misread alike and stayed quiet; they are run here to stay so.
import { describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import {
  clusterConfig,
  crdManifest,
  kubectl,
  manifestDir,
  mooring,
  testbed,
  useNamespace,
} from './helpers.ts';

const GROUP = 'keys.mooring.test';
const resource = (name: string, key: string) => `apiVersion: ${GROUP}/v1
kind: Thing
metadata: {name: ${name}}
spec:
  a: 1
  ${JSON.stringify(key)}: 2
`;

describe('JSON keys with escapes from the API server', () => {
  const ns = useNamespace('json-keys');

  it('reads a key that ends in a backslash and the escaped keys after it as written', async () => {
    const files: Record<string, string> = {
      'crd.yaml': crdManifest(GROUP, 'things', 'Thing'),
      'a-first.yaml': resource('a-first', 'x\\'),
    };
    // Read after a-first in a list (names in order) and one by one alike.
    for (let i = 0; i < 12; i++)
      files[`b-${i}.yaml`] = resource(`b-${i}`, ['x<', 'x>', 'x&'][i % 3] as string);
    const dir = await manifestDir(files);
    const flags = ['--kubeconfig', testbed().kube.kubeconfig, '-n', ns(), '--application', 'keys'];
    const first = await mooring('deploy', dir, ...flags, '--timeout', '60s');
    expect(first.code, first.stderr).toBe(0);
    const live = await kubectl('get', 'things', '-n', ns(), '-o', 'jsonpath={.items[*].spec}');
    expect(live.stdout).toContain('"x\\\\":2');
    // kubectl writes `<` as Go does.
    expect(live.stdout).toContain('"x\\u003c":2');

    // mooring's one reader of the API server's answers, in one process: a list, then each object alone.
    const api = new KubeApi(clusterConfig());
    try {
      const path = `/apis/${GROUP}/v1/namespaces/${ns()}/things`;
      const list = await api.request<{ items: { metadata: { name: string }; spec: object }[] }>('GET', path);
      const keys = (spec: object) => Object.keys(spec).filter((k) => k !== 'a');
      expect(list.items.map((o) => [o.metadata.name, keys(o.spec)])).toStrictEqual([
        ['a-first', ['x\\']],
        ...Array.from({ length: 12 }, (_, i) => [`b-${i}`, [['x<', 'x>', 'x&'][i % 3]]]).sort(),
      ]);
      for (let i = 0; i < 12; i++) {
        const one = await api.request<{ spec: object }>('GET', `${path}/b-${i}`);
        expect(keys(one.spec)).toStrictEqual([['x<', 'x>', 'x&'][i % 3]]);
      }
    } finally {
      api.close();
    }

    const diff = await mooring('diff', dir, ...flags);
    expect(diff.stdout + diff.stderr).not.toContain('x\\\\');
    expect(diff.code, diff.stdout + diff.stderr).toBe(0);
    const again = await mooring('deploy', dir, ...flags, '--timeout', '60s');
    expect(again.code, again.stderr).toBe(0);
    for (let i = 0; i < 12; i++) expect(again.stdout).toContain(`thing.${GROUP}/b-${i} unchanged`);
  });
});
