// Seed 004's story end to end, with each render's output fed back as the cluster's state: a config change gets
// the next version, a change back reuses the first one, and the Deployment always names the right version.
import { describe, expect, it } from 'vitest';
import { CONTENT_HASH } from '../../../src/render/annotations.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { type ExistingVersion, render } from '../../../src/render/render.ts';
import { parseVersionedName } from '../../../src/render/versioning.ts';

const manifests = (data: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {${data}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: my-app}
spec:
  template:
    spec:
      containers:
        - name: app
          image: my-application:1.0.0
          envFrom: [{configMapRef: {name: app-config}}]
`;

function deploy(data: string, cluster: ExistingVersion[]): { names: string[]; deployed: ExistingVersion[] } {
  const result = render({
    files: [{ path: 'app.yaml', text: manifests(data) }],
    namespace: 'prod',
    application: 'my-app',
    snapshot: { versions: cluster, live: [] },
  });
  const [configMap, deployment] = result.objects as [KubeObject, KubeObject];
  const ref = JSON.stringify(deployment.spec).match(/"name":"(app-config[^"]*)"/)?.[1];
  const parsed = parseVersionedName(configMap.metadata.name);
  if (!parsed) throw new Error('not versioned');
  const existing = cluster.some((v) => v.version === parsed.version);
  const deployed = existing
    ? cluster
    : [
        ...cluster,
        {
          kind: 'ConfigMap',
          namespace: 'prod',
          name: parsed.base,
          version: parsed.version,
          hash: configMap.metadata.annotations?.[CONTENT_HASH],
        },
      ];
  return { names: [configMap.metadata.name, ref ?? 'no reference'], deployed };
}

describe('versioned configuration across changes (seed 004)', () => {
  it('creates v000, then v001 and v002 for changes, and reuses a version when content returns to it', () => {
    let cluster: ExistingVersion[] = [];
    const steps: [string, string][] = [
      ['FOO: bar', 'app-config-v000'],
      ['BAR: baz', 'app-config-v001'],
      ['FOO: bar', 'app-config-v000'],
      ['BAR: qux', 'app-config-v002'],
      ['BAR: baz', 'app-config-v001'],
    ];
    for (const [data, expected] of steps) {
      const { names, deployed } = deploy(data, cluster);
      expect(names).toEqual([expected, expected]);
      cluster = deployed;
    }
    expect(cluster.map((v) => v.version)).toEqual([0, 1, 2]);
  });

  it('does not let a key order or formatting change make a new version', () => {
    const first = deploy('A: "1", B: "2"', []);
    const reordered = deploy('B: "2",   A: "1"', first.deployed);
    expect(reordered.names[0]).toBe('app-config-v000');
  });
});
