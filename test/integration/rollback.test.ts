// Rollback with the agent running: `mooring rollback` restores the previous release's ConfigMap version and image
// digest, the agent's next polls leave it there (the fence), history and status show it, and `mooring resume`
// lets the agent deploy the newest revision again.

import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { pushImage } from '../testbed/oci-push.ts';
import { admissionPolicy } from './admission-policy.ts';
import {
  configMapManifest,
  deleteNamespace,
  deploymentManifest,
  eventually,
  kubeConfig,
  kubectl,
  ledgerHistory,
  manifestDir,
  mooring,
  mooringShell,
  stableImageSource,
  startGitAgent,
  stopsAfterAll,
  testbed,
  useNamespace,
  yamlDocuments,
} from './helpers.ts';

describe('mooring rollback', () => {
  const ns = useNamespace('rollback');
  const stops = stopsAfterAll();

  it('restores a release, holds it against the next polls, and resumes', async () => {
    const env = testbed();
    const suffix = Date.now().toString(36);
    const image = `${env.registry.host}/rollback-${suffix}/web`;
    const app = (greeting: string) =>
      yamlDocuments(
        configMapManifest('web-config', { GREETING: greeting }),
        deploymentManifest({ image: `${image}:stable`, configMap: 'web-config' }),
      );
    const first = await pushImage({
      registry: env.registry.url,
      repository: `rollback-${suffix}/web`,
      tag: 'stable',
    });
    const { repo, configFile, agent } = await startGitAgent({
      repo: `rollback-${suffix}`,
      files: { 'app.yaml': app('one') },
      cluster: { namespace: `mooring-${suffix}` },
      deployments: [{ name: 'web', namespace: ns(), images: ['web-image'] }],
      statuses: false,
      extra: {
        sources: {
          registry: [stableImageSource(image, '1s')],
        },
      },
    });
    const lines = agent.lines;
    const heldGauge = async () =>
      /^mooring_deployment_held_since_seconds\{deployment="web"\} (\d+)$/m.exec(
        await (await fetch(`http://127.0.0.1:${agent.port()}/metrics`)).text(),
      )?.[1];
    stops.push(() => agent.stop());

    const apps = kubeConfig().makeApiClient(AppsV1Api);
    const state = async () => {
      const d = await apps.readNamespacedDeployment({ name: 'web', namespace: ns() }).catch(() => undefined);
      const c = d?.spec?.template.spec?.containers[0];
      return `${c?.envFrom?.[0]?.configMapRef?.name} ${c?.image}`;
    };
    const at = (config: string, digest: string) => `${config} ${image}:stable@${digest}`;
    await eventually('release 1', async () =>
      (await state()) === at('web-config-v000', first.digest) ? true : undefined,
    );
    // The commit and the image below are polled independently, so one or two releases may come between; the
    // rollback names release 1 instead of relying on which one is "previous".
    const releaseOne = await eventually(
      'release 1 recorded',
      async () =>
        (await ledgerHistory<{ id: number; result: string }>('web', configFile)).find(
          (r) => r.result === 'stable',
        )?.id,
    );

    await repo.commit({ 'app.yaml': app('two') });
    const second = await pushImage({
      registry: env.registry.url,
      repository: `rollback-${suffix}/web`,
      tag: 'stable',
      content: 'v2',
    });
    await eventually('the new release', async () =>
      (await state()) === at('web-config-v001', second.digest) ? true : undefined,
    );
    await eventually('the new release recorded', async () => {
      const [newest] = await ledgerHistory<{ result: string; images: Record<string, { digest: string }> }>(
        'web',
        configFile,
      );
      return newest?.result === 'stable' && newest.images['web-image']?.digest === second.digest
        ? true
        : undefined;
    });

    const back = await mooring('rollback', 'web', '--to', String(releaseOne), '--config', configFile);
    expect(back.code, back.stdout + back.stderr).toBe(0);
    expect(back.stdout).toMatch(/rolled back to release \d+/);
    expect(await state()).toBe(at('web-config-v000', first.digest));
    // Several polls later, the agent has held the rollback instead of redeploying the newest revision.
    await eventually('held by the fence', async () =>
      lines.some((l) => l.includes('held at a rolled-back release')) ? true : undefined,
    );
    await agent.morePolls(2);
    expect(await state()).toBe(at('web-config-v000', first.digest));
    // The hold is a metric (the chart's alert on deployments held too long reads it): since the rollback.
    const since = Number(await heldGauge());
    expect(Math.abs(since - Date.now() / 1000)).toBeLessThan(120);

    const status = await mooring('status', 'web', '--config', configFile);
    expect(status.stdout).toMatch(/held at release \d+ \(rollback\)/);
    const history = await mooring('history', 'web', '--config', configFile, '-o', 'json');
    const ledger = JSON.parse(history.stdout) as {
      items: { trigger: string; result: string }[];
      fence?: unknown;
    };
    expect(ledger.items[0]).toMatchObject({ trigger: 'rollback', result: 'stable' });
    expect(ledger.fence).toBeDefined();

    const resumed = await mooring('resume', 'web', '--config', configFile);
    expect(resumed.code, resumed.stderr).toBe(0);
    await eventually('the newest revision again', async () =>
      (await state()) === at('web-config-v001', second.digest) ? true : undefined,
    );
    expect(await heldGauge()).toBeUndefined();
    await deleteNamespace(`mooring-${suffix}`);
  });
});

describe('mooring rollback of Kustomize and Helm deployments', () => {
  const kzNs = useNamespace('rollback-kz');
  const chartNs = useNamespace('rollback-chart');
  const stops = stopsAfterAll();

  it('rebuilds the recorded commit as its sync did: the kustomization built, the chart rendered with its values', async () => {
    const env = testbed();
    process.env.MOORING_HELM = env.tools.helm;
    process.env.MOORING_KUBECTL = env.tools.kubectl;
    const suffix = Date.now().toString(36);
    const round = (n: number) => ({
      'kz/base/kustomization.yaml': 'resources: [settings.yaml]\n',
      'kz/base/settings.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base-settings}\ndata: {ROUND: "${n}"}\n`,
      'kz/overlay/kustomization.yaml': `resources: [../base]\nnamePrefix: shop-\nconfigMapGenerator:\n  - name: generated\n    literals: [ROUND=${n}]\ngeneratorOptions: {disableNameSuffixHash: true}\n`,
      'chart/Chart.yaml': 'apiVersion: v2\nname: web\nversion: 1.0.0\n',
      'chart/values.yaml': `round: ${n}\n`,
      'chart/templates/settings.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-settings}\ndata: {ROUND: "{{ .Values.round }}"}\n',
    });
    const { repo, configFile, agent } = await startGitAgent({
      repo: `rollback-formats-${suffix}`,
      files: round(1),
      cluster: { namespace: `mooring-formats-${suffix}` },
      deployments: [
        {
          name: 'kz',
          namespace: kzNs(),
          paths: ['kz/overlay'],
          stability: { timeout: '1m' },
          // Nothing refers to these ConfigMaps: every one versioned, so that each round is a version.
          versioning: 'all',
        },
        {
          name: 'chart',
          namespace: chartNs(),
          paths: ['chart'],
          helm: { chart: 'chart', valuesFiles: ['chart/values.yaml'] },
          stability: { timeout: '1m' },
          versioning: 'all',
        },
      ],
      statuses: false,
    });
    stops.push(async () => {
      await agent.stop();
      await deleteNamespace(`mooring-formats-${suffix}`);
    });
    // The rounds of the versioned ConfigMaps in a namespace, by artifact name.
    const rounds = async (namespace: string) => {
      const out = await kubectl('-n', namespace, 'get', 'configmaps', '-o', 'json');
      const items = (
        JSON.parse(out.stdout) as { items: { metadata: { name: string }; data?: { ROUND?: string } }[] }
      ).items;
      return items
        .filter((i) => /-v\d{3}$/.test(i.metadata.name))
        .map((i) => `${i.metadata.name}=${i.data?.ROUND}`)
        .sort();
    };
    const stableReleases = async (deployment: string) => {
      const out = await mooring('history', deployment, '--config', configFile, '-o', 'json');
      if (out.code !== 0) return [];
      const data = JSON.parse(out.stdout) as { items: { id: number; result: string }[] };
      return data.items.filter((r) => r.result === 'stable').map((r) => r.id);
    };
    const first = await eventually(
      'both deployments at round 1',
      async () => {
        const [kz, chart] = [await stableReleases('kz'), await stableReleases('chart')];
        return kz.length === 1 && chart.length === 1 ? { kz: kz[0], chart: chart[0] } : undefined;
      },
      90_000,
    );
    expect(await rounds(kzNs())).toEqual(['shop-base-settings-v000=1', 'shop-generated-v000=1']);
    expect(await rounds(chartNs())).toEqual(['chart-settings-v000=1']);

    await repo.commit(round(2));
    await eventually(
      'both deployments at round 2',
      async () =>
        (await stableReleases('kz')).length === 2 && (await stableReleases('chart')).length === 2
          ? true
          : undefined,
      90_000,
    );

    for (const [deployment, namespace, expected] of [
      ['kz', kzNs(), 'shop-generated-v000=1'],
      ['chart', chartNs(), 'chart-settings-v000=1'],
    ] as const) {
      const back = await mooring(
        'rollback',
        deployment,
        '--to',
        String(first[deployment]),
        '--config',
        configFile,
      );
      expect(back.code, back.stdout + back.stderr).toBe(0);
      expect(back.stdout).toMatch(/rolled back to release \d+/);
      expect(back.stdout.length).toBeLessThan(5000);
      // The workloads' configuration is the round-1 version again (versions are reused, not made anew).
      expect(await rounds(namespace)).toContain(expected);
      const items = await ledgerHistory<{ trigger: string; result: string }>(deployment, configFile);
      expect(items[0]).toMatchObject({ trigger: 'rollback', result: 'stable' });
    }
    // No Kustomization object was ever sent to the cluster.
    const sent = await kubectl('-n', kzNs(), 'get', 'all');
    expect(sent.stdout).not.toMatch(/Kustomization/i);
  }, 240_000);
});

describe('a rollback that does not end stable', () => {
  const ns = useNamespace('rollback-fails');
  const stops = stopsAfterAll();

  it('says why on stderr with exit 1, prints no success on stdout, and sets no fence', async () => {
    const suffix = Date.now().toString(36);
    const app = (greeting: string) =>
      yamlDocuments(
        configMapManifest('web-config', { GREETING: greeting }),
        deploymentManifest({ configMap: 'web-config' }),
      );
    const { repo, configFile, agent } = await startGitAgent({
      repo: `rollback-fails-${suffix}`,
      files: { 'app.yaml': app('one') },
      cluster: { namespace: `mooring-fails-${suffix}` },
      deployments: [{ name: 'web', namespace: ns(), stability: { timeout: '10s' } }],
      statuses: false,
    });
    stops.push(async () => {
      await agent.stop();
      await deleteNamespace(`mooring-fails-${suffix}`);
    });
    const stable = async () =>
      (await ledgerHistory<{ id: number; result: string }>('web', configFile))
        .filter((r) => r.result === 'stable')
        .map((r) => r.id);
    const [first] = await eventually('release 1', async () =>
      (await stable()).length === 1 ? stable() : undefined,
    );
    await repo.commit({ 'app.yaml': app('two') });
    await eventually('release 2', async () => ((await stable()).length === 2 ? true : undefined));
    await agent.stop();

    // A platform team's policy now refuses every new Pod here: the rolled-back template's ReplicaSet cannot scale up.
    const policy = `no-new-pods-${suffix}`;
    const dir = await manifestDir({
      'policy.yaml': admissionPolicy({
        name: policy,
        resource: { group: '', version: 'v1', resource: 'pods', operations: ['CREATE'] },
        expression: 'false',
        message: 'no new Pods in this namespace',
        namespaces: [ns()],
      }),
    });
    const installed = await kubectl('apply', '-f', join(dir, 'policy.yaml'));
    expect(installed.code, installed.stderr).toBe(0);
    stops.push(async () => {
      await kubectl('delete', '--wait=false', '-f', join(dir, 'policy.yaml'));
    });
    // Enforced once the API server has compiled it: a Pod's dry run is refused.
    await eventually('the policy enforced', async () => {
      const probe = await kubectl('-n', ns(), 'run', 'probe', '--image=example/web:1', '--dry-run=server');
      return probe.stderr.includes('no new Pods in this namespace') ? true : undefined;
    });
    // Run as a user's shell runs it: everything it prints on either stream is read.
    const back = await mooringShell({}, 'rollback', 'web', '--to', String(first), '--config', configFile);
    expect(back.code, back.stdout + back.stderr).toBe(1);
    // One line for people, not the agent's JSON records as well.
    expect(back.stderr.trimEnd().split('\n'), back.stderr).toHaveLength(1);
    expect(back.stdout).not.toMatch(/rolled back to release/);
    expect(back.stderr).toMatch(
      new RegExp(
        `^error: deployment web rolled back to release ${first} \\(commit [0-9a-f]{12}\\): .*timed out`,
        'm',
      ),
    );
    // The reason the cluster gave is named: the policy refused the Pods.
    expect(back.stderr).toMatch(/FailedCreate.*no new Pods in this namespace/);
    const history = await mooring('history', 'web', '--config', configFile, '-o', 'json');
    const ledger = JSON.parse(history.stdout) as {
      items: { trigger: string; result: string }[];
      fence?: unknown;
    };
    expect(ledger.items[0]).toMatchObject({ trigger: 'rollback', result: 'timed-out' });
    expect(ledger.fence).toBeUndefined();
  }, 180_000);
});
