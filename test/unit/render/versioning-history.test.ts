// Seed 004's story end to end, with each render's output fed back as the cluster's state: a config change gets
// the next version, a change back reuses the first one, and the Deployment always names the right version.
import { describe, expect, it } from 'vitest';
import { CONTENT_HASH } from '../../../src/render/annotations.ts';
import type { KubeObject } from '../../../src/render/manifest.ts';
import { type ExistingVersion, render } from '../../../src/render/render.ts';
import { parseVersionedName, usedVersions } from '../../../src/render/versioning.ts';

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

function deploy(
  data: string,
  cluster: ExistingVersion[],
  recorded: readonly string[] = [],
  restored?: readonly string[],
): { names: string[]; deployed: ExistingVersion[] } {
  const result = render({
    files: [{ path: 'app.yaml', text: manifests(data) }],
    namespace: 'prod',
    application: 'my-app',
    snapshot: {
      versions: cluster,
      live: [],
      used: usedVersions(recorded),
      ...(restored ? { restore: usedVersions(restored) } : {}),
    },
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

  it('numbers a new version above those recorded releases used, when every live one is gone', () => {
    // The workload and its versions were pruned; the ledger still names v000..v004 (and another kind's v007).
    const recorded = [
      'ConfigMap app-config-v003',
      'ConfigMap app-config-v004',
      'Secret app-config-v007',
      'Deployment my-app',
    ];
    expect(deploy('FOO: new', [], recorded).names).toEqual(['app-config-v005', 'app-config-v005']);
    // A live version with the same content is still reused, and a higher live one still counts.
    const live = deploy('FOO: new', [], []).deployed;
    expect(deploy('FOO: new', live, recorded).names[0]).toBe('app-config-v000');
    const high = live.map((v) => ({ ...v, version: 9, hash: 'other' }));
    expect(deploy('FOO: newer', high, recorded).names[0]).toBe('app-config-v010');
    expect(usedVersions(['ConfigMap a-v001', 'ConfigMap b', 'x y-v1', 'Secret s-v012'])).toEqual([
      { kind: 'ConfigMap', name: 'a', version: 1 },
      { kind: 'Secret', name: 's', version: 12 },
    ]);
  });

  it('gives a rolled-back version the name its release recorded, when no live object holds that name', () => {
    const recorded = ['ConfigMap app-config-v000', 'ConfigMap app-config-v001', 'ConfigMap app-config-v002'];
    // Release 2 (v001) is restored after its version was pruned: v001 again, not v003.
    expect(
      deploy('FOO: one', [], recorded, ['ConfigMap app-config-v001', 'Deployment my-app']).names[0],
    ).toBe('app-config-v001');
    // v001 is live with other content: the recorded name is taken, so the version goes above every recorded one.
    const other = deploy('FOO: other', [], []).deployed.map((v) => ({ ...v, version: 1 }));
    expect(deploy('FOO: one', other, recorded, ['ConfigMap app-config-v001']).names[0]).toBe(
      'app-config-v003',
    );
    // The same content live under another number is reused, as in any sync.
    const live = deploy('FOO: one', [], []).deployed.map((v) => ({ ...v, version: 2 }));
    expect(deploy('FOO: one', live, recorded, ['ConfigMap app-config-v001']).names[0]).toBe(
      'app-config-v002',
    );
    // A release that names two of one name (two namespaces) gives no answer: numbered above the recorded ones.
    expect(
      deploy('FOO: one', [], recorded, ['ConfigMap app-config-v000', 'ConfigMap app-config-v001']).names[0],
    ).toBe('app-config-v003');
  });
});
