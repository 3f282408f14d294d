// A chart built on a library chart (test/fixtures/corpus/ledgerdb), synced from the test bed's Git server by one
// agent as a platform team would run it: the first sync (the library's named templates rendered, a mode from
// values and a mode written in octal in the template both read as Kubernetes reads them), a commit that changes
// nothing rendered (every object unchanged, no new version, no rollout), a values change (a new ConfigMap version
// and a rollout of the StatefulSet onto it) and a rollback to the first release (the first version back).
import { afterAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/render/manifest.ts';
import { pushImage } from '../testbed/oci-push.ts';
import { agentOnFile, corpusFiles, live } from './build-helpers.ts';
import { ledgerOf } from './faults-support.ts';
import {
  agentConfig,
  bareRepo,
  eventually,
  kubectl,
  mooring,
  type PostedStatus,
  startStatusReceiver,
  testbed,
  useNamespace,
} from './helpers.ts';

interface StatefulSet extends KubeObject {
  metadata: KubeObject['metadata'] & { generation?: number };
  spec: {
    template: {
      spec: { volumes: { name: string; configMap: { name: string; defaultMode: number } }[] };
    };
  };
}

async function configMaps(namespace: string): Promise<string[]> {
  const out = await kubectl('-n', namespace, 'get', 'configmaps', '-o', 'name');
  if (out.code !== 0) throw new Error(out.stderr);
  return out.stdout
    .split('\n')
    .filter((n) => n.startsWith('configmap/ledgerdb-'))
    .sort();
}

describe('a chart built on a library chart', () => {
  const ns = useNamespace('charts-library');
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('deploys, redeploys as a no-op, takes a values change and rolls back', async () => {
    const env = testbed();
    process.env.MOORING_HELM = env.tools.helm;
    const suffix = Date.now().toString(36);
    await pushImage({ registry: env.registry.url, repository: 'ledger/db', tag: '16.4' });
    const files = await corpusFiles('ledgerdb', env.registry.host);
    const repo = await bareRepo(`charts-library-${suffix}/apps`);
    const receiver = await startStatusReceiver();
    const agentNamespace = `mooring-charts-library-${suffix}`;
    cleanups.push(() => kubectl('delete', 'namespace', agentNamespace, '--wait=false'));
    const config = await agentConfig({
      cluster: { name: 'charts-library', namespace: agentNamespace },
      git: [{ name: 'apps', repo }],
      deployments: [
        {
          name: 'ledgerdb',
          namespace: ns(),
          source: 'apps',
          paths: ['ledgerdb'],
          helm: { chart: 'ledgerdb/chart', valuesFiles: ['ledgerdb/values-production.yaml'] },
          prune: true,
        },
      ],
      statuses: receiver,
    });
    const { configFile, kube } = await agentOnFile(config, cleanups);
    const ended = (sha: string) =>
      eventually(`an ended status on ${sha}`, async () => receiver.ended(sha, '/ledgerdb'), 180_000);
    const expectSuccess = (status: PostedStatus) => expect(status.state, status.description).toBe('success');
    const releaseOf = (sha: string) =>
      eventually(`the release of ${sha}`, async () =>
        (await ledgerOf(kube, agentNamespace, 'ledgerdb')).releases.find((r) => r.commit === sha),
      );

    // 1. The first sync: the library's names and labels, both modes as Kubernetes reads them (0400 from values:
    // 256; 0755 written in the template: 493, not 755, which the API server would refuse).
    const first = await repo.commit(files, { message: 'the ledger database' });
    expectSuccess(await ended(first));
    const set = await live<StatefulSet>(ns(), 'statefulset', 'ledgerdb');
    expect(set.metadata.labels).toMatchObject({
      'app.kubernetes.io/instance': 'ledgerdb',
      'helm.sh/chart': 'ledgerdb-3.2.0',
    });
    const volumes = set.spec.template.spec.volumes;
    expect(volumes.map((v) => [v.name, v.configMap.name, v.configMap.defaultMode])).toEqual([
      ['configuration', 'ledgerdb-configuration-v000', 0o400],
      ['scripts', 'ledgerdb-configuration-v000', 0o755],
    ]);
    const generation = set.metadata.generation;
    expect(await configMaps(ns())).toEqual(['configmap/ledgerdb-configuration-v000']);

    // 2. A commit that changes nothing rendered (a comment in the values): every object unchanged, no new version,
    // no rollout.
    const values = files['ledgerdb/values-production.yaml'] as string;
    const second = await repo.commit(
      { 'ledgerdb/values-production.yaml': `${values}# reviewed by the database team\n` },
      { message: 'a comment' },
    );
    expectSuccess(await ended(second));
    const quiet = await releaseOf(second);
    for (const o of quiet.objects) expect(o.action, o.object).toBe('unchanged');
    expect((await live<StatefulSet>(ns(), 'statefulset', 'ledgerdb')).metadata.generation).toBe(generation);
    expect(await configMaps(ns())).toEqual(['configmap/ledgerdb-configuration-v000']);

    // 3. A values change: a new version of the ConfigMap, and the StatefulSet rolled onto it.
    const third = await repo.commit(
      { 'ledgerdb/values-production.yaml': values.replace('maxConnections: 100', 'maxConnections: 200') },
      { message: 'more connections' },
    );
    expectSuccess(await ended(third));
    const rolled = await live<StatefulSet>(ns(), 'statefulset', 'ledgerdb');
    expect(rolled.spec.template.spec.volumes.map((v) => v.configMap.name)).toEqual([
      'ledgerdb-configuration-v001',
      'ledgerdb-configuration-v001',
    ]);
    expect(rolled.metadata.generation).toBeGreaterThan(generation ?? 0);
    const v1 = await live(ns(), 'configmap', 'ledgerdb-configuration-v001');
    expect((v1.data as Record<string, string>)['ledger.conf']).toContain('max_connections = 200');

    // 4. A rollback to the first release: the first version back under the StatefulSet, the second kept.
    const releaseOne = (await releaseOf(first)).id;
    const back = await mooring('rollback', 'ledgerdb', '--to', String(releaseOne), '--config', configFile);
    expect(back.code, back.stderr + back.stdout).toBe(0);
    const restored = await live<StatefulSet>(ns(), 'statefulset', 'ledgerdb');
    expect(restored.spec.template.spec.volumes.map((v) => v.configMap.name)).toEqual([
      'ledgerdb-configuration-v000',
      'ledgerdb-configuration-v000',
    ]);
    expect(await configMaps(ns())).toEqual([
      'configmap/ledgerdb-configuration-v000',
      'configmap/ledgerdb-configuration-v001',
    ]);
  }, 420_000);
});
