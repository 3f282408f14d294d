// `mooring render` against the real API server: existing versions come from the cluster (metadata only), so a
// changed ConfigMap gets the next version and a change back reuses the old one; live Services feed traffic.
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../../src/cli/program.ts';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { readSnapshot } from '../../src/kube/snapshot.ts';
import type { KubeObject } from '../../src/render/manifest.ts';
import { clusterConfig, kubeConfig, runTool, testbed, useNamespace } from './helpers.ts';

const app = (value: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {FOO: ${value}}
---
apiVersion: v1
kind: Secret
metadata: {name: app-secret}
stringData: {token: canary-${value}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: my-app
  annotations: {traffic.spinnaker.io/load-balancers: '["service frontend"]'}
spec:
  selector: {matchLabels: {app: my-app}}
  template:
    metadata: {labels: {app: my-app}}
    spec:
      containers:
        - name: app
          image: my-application:1.0.0
          envFrom: [{configMapRef: {name: app-config}}, {secretRef: {name: app-secret}}]
`;

async function renderOnline(file: string, namespace: string, ...extra: string[]) {
  const env = testbed();
  let stdout = '';
  let stderr = '';
  const code = await runCli(
    ['render', file, '--kubeconfig', env.kube.kubeconfig, '-n', namespace, ...extra],
    {
      stdout: (t) => (stdout += `${t}\n`),
      stderr: (t) => (stderr += `${t}\n`),
    },
  );
  return { code, stdout, stderr };
}

describe('mooring render against the cluster', () => {
  const ns = useNamespace('render');

  it('versions against what the cluster holds and binds traffic to live Services', async () => {
    const env = testbed();
    const core = kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespacedService({
      namespace: ns(),
      body: {
        metadata: { name: 'frontend' },
        spec: { selector: { tier: 'frontend' }, ports: [{ port: 80 }] },
      },
    });
    const dir = await mkdtemp(join(tmpdir(), 'mooring-render-'));
    const file = join(dir, 'app.yaml');
    const kubectlApply = async (yaml: string) => {
      const out = join(dir, 'out.yaml');
      await writeFile(out, yaml);
      const r = await runTool(env.tools.kubectl, [
        '--kubeconfig',
        env.kube.kubeconfig,
        '-n',
        ns(),
        'apply',
        '-f',
        out,
      ]);
      expect(r.code, r.stderr).toBe(0);
    };
    const names = (yaml: string) =>
      parseAllDocuments(yaml).map((d) => (d.toJS() as { metadata: { name: string } }).metadata.name);

    // Secrets' content hash is keyed: rendering for kubectl apply takes the installation's key, or the Secret's
    // versions could not be recognised (docs/render.md).
    const key = join(dir, 'hash-key');
    await writeFile(key, randomBytes(32));
    await writeFile(file, app('one'));
    const first = await renderOnline(file, ns(), '--show-secrets', '--hash-key-file', key);
    expect(first.code, first.stderr).toBe(0);
    expect(names(first.stdout)).toEqual(['app-config-v000', 'app-secret-v000', 'my-app']);
    expect(first.stdout).toContain('tier: frontend');
    await kubectlApply(first.stdout);

    await writeFile(file, app('two'));
    const second = await renderOnline(file, ns(), '--show-secrets', '--hash-key-file', key);
    expect(names(second.stdout)).toEqual(['app-config-v001', 'app-secret-v001', 'my-app']);
    await kubectlApply(second.stdout);

    await writeFile(file, app('one'));
    const back = await renderOnline(file, ns(), '--hash-key-file', key);
    expect(back.code, back.stderr).toBe(0);
    expect(names(back.stdout)).toEqual(['app-config-v000', 'app-secret-v000', 'my-app']);
    expect(back.stdout).toContain('name: app-config-v000');
    // Without --show-secrets the values are redacted.
    expect(back.stdout).not.toContain('canary-one');
    expect(back.stdout).toContain('token: <redacted>');
  });

  it('keeps the live capacity of a Deployment and of the newest version of a ReplicaSet', async () => {
    const env = testbed();
    const dir = await mkdtemp(join(tmpdir(), 'mooring-render-'));
    const file = join(dir, 'capacity.yaml');
    const workload = (kind: string, name: string, image: string) => `apiVersion: apps/v1
kind: ${kind}
metadata:
  name: ${name}
  annotations: {strategy.spinnaker.io/use-source-capacity: "true"}
spec:
  replicas: 1
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec: {containers: [{name: app, image: "${image}"}]}
`;
    const workloads = (tag: string) =>
      `${workload('Deployment', 'cap-web', `registry.example/web:${tag}`)}---\n${workload('ReplicaSet', 'cap-rs', `registry.example/rs:${tag}`)}`;
    const kubectl = async (...args: string[]) => {
      const r = await runTool(env.tools.kubectl, ['--kubeconfig', env.kube.kubeconfig, '-n', ns(), ...args]);
      expect(r.code, r.stderr).toBe(0);
    };
    const replicas = (yaml: string) =>
      parseAllDocuments(yaml).map((d) => {
        const o = d.toJS() as { metadata: { name: string }; spec: { replicas: number } };
        return `${o.metadata.name}=${o.spec.replicas}`;
      });

    await writeFile(file, workloads('1'));
    const first = await renderOnline(file, ns());
    expect(first.code, first.stderr).toBe(0);
    expect(replicas(first.stdout)).toEqual(['cap-web=1', 'cap-rs-v000=1']);
    await writeFile(join(dir, 'out.yaml'), first.stdout);
    await kubectl('apply', '-f', join(dir, 'out.yaml'));
    await kubectl('scale', 'deployment/cap-web', '--replicas=3');
    await kubectl('scale', 'replicaset/cap-rs-v000', '--replicas=2');

    // A new template: the Deployment keeps its live replicas, the next ReplicaSet version those of the last.
    await writeFile(file, workloads('2'));
    const next = await renderOnline(file, ns());
    expect(next.code, next.stderr).toBe(0);
    expect(replicas(next.stdout)).toEqual(['cap-web=3', 'cap-rs-v001=2']);
  });

  it("keeps only the versions the set can use: its own and those it refers to, not the namespace's others", async () => {
    // A namespace shared by many deployments holds their versions too: a render of one set needs its own (to number
    // or reuse them) and those its references name (bound to the newest), never the rest.
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const versioned = (base: string, version: number) => ({
      metadata: {
        name: `${base}-v${String(version).padStart(3, '0')}`,
        annotations: {
          'artifact.spinnaker.io/name': base,
          'artifact.spinnaker.io/type': 'kubernetes/configMap',
          'artifact.spinnaker.io/version': `v${String(version).padStart(3, '0')}`,
        },
      },
      data: { n: String(version) },
    });
    const held: [string, number][] = [
      ['own-config', 0],
      ['own-config', 1],
      ['common-config', 0],
      ['common-config', 1],
      ['common-config', 2],
    ];
    for (let i = 0; i < 40; i++) held.push([`other-${i}-config`, 0], [`other-${i}-config`, 1]);
    for (const [base, version] of held)
      await core.createNamespacedConfigMap({ namespace: ns(), body: versioned(base, version) });

    const set: KubeObject[] = [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'own-config', namespace: ns() },
        data: { n: 'x' },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'keeper', namespace: ns() },
        spec: {
          selector: { matchLabels: { app: 'keeper' } },
          template: {
            metadata: { labels: { app: 'keeper' } },
            spec: {
              containers: [
                {
                  name: 'keeper',
                  image: 'web:1',
                  envFrom: [
                    { configMapRef: { name: 'own-config' } },
                    { configMapRef: { name: 'common-config' } },
                  ],
                },
              ],
            },
          },
        },
      },
    ];
    const api = new KubeApi(clusterConfig());
    const snapshot = await readSnapshot(
      api,
      set.map((object) => ({ object, origin: { file: 'set.yaml', line: 1, column: 1 } })),
      new Discovery(api),
    );
    const seen = snapshot.versions.map((v) => `${v.name}@${v.version}`).sort();
    expect(seen).toEqual([
      'common-config@0',
      'common-config@1',
      'common-config@2',
      'own-config@0',
      'own-config@1',
    ]);

    // The render binds the reference outside the set to its newest version and numbers the set's own after its last.
    const dir = await mkdtemp(join(tmpdir(), 'mooring-render-'));
    const file = join(dir, 'set.yaml');
    await writeFile(
      file,
      set.map((o) => JSON.stringify({ ...o, metadata: { name: o.metadata.name } })).join('\n---\n'),
    );
    const result = await renderOnline(file, ns());
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('name: own-config-v002');
    expect(result.stdout).toContain('name: common-config-v002');
  });

  it('fails with exit 2 naming the place when a traffic Service exists nowhere', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mooring-render-'));
    const file = join(dir, 'app.yaml');
    await writeFile(file, app('x').replace('service frontend', 'service missing'));
    const result = await renderOnline(file, ns());
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${file}:15:`);
    expect(result.stderr).toContain(`Service ${ns()}/missing is neither in the manifests nor in the cluster`);
  });
});
