// The corpus's applications of today (test/fixtures/corpus/storefront and ratelimits) synced from the test bed's Git
// server by one agent onto its Kubernetes 1.37: a Helm chart asking for `kubeVersion: >=1.25.0-0` with an
// autoscaling/v2 HPA (Resource metrics, behavior), a policy/v1 PDB, a batch/v1 CronJob in a time zone, a Service
// with internalTrafficPolicy and trafficDistribution, and an EndpointSlice of an external database; beside it a
// CRD with CEL rules and a selectable field, and a policy it accepts. Each object is judged by mooring's stability
// rule as its controller left it. Then a policy that breaks a CEL rule, committed with changes to the others,
// fails the sync naming it, and nothing of that set is applied; a chart asking for `<1.25.0-0` is refused with
// helm's message naming the chart.
import { afterAll, describe, expect, it } from 'vitest';
import { stabilityOf } from '../../src/stability/rules.ts';
import { agentOnFile, corpusFiles, edit, live } from './build-helpers.ts';
import { ledgerOf } from './faults-support.ts';
import {
  agentConfig,
  bareRepo,
  eventually,
  kubectl,
  type PostedStatus,
  startStatusReceiver,
  testbed,
  useNamespace,
} from './helpers.ts';

const CRD = 'ratelimitpolicies.storefront.corpus.example';

async function names(namespace: string, kind: string, ...selector: string[]): Promise<string[]> {
  const out = await kubectl('-n', namespace, 'get', kind, ...selector, '-o', 'name');
  if (out.code !== 0) throw new Error(out.stderr);
  return out.stdout.split('\n').filter(Boolean).sort();
}

describe('the corpus on a current cluster', () => {
  const shop = useNamespace('corpus-storefront');
  const limits = useNamespace('corpus-ratelimits');
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('deploys the shapes of today, refuses a custom resource a CEL rule forbids, and a chart asking for an older cluster', async () => {
    const env = testbed();
    process.env.MOORING_HELM = env.tools.helm;
    const suffix = Date.now().toString(36);
    const files = { ...(await corpusFiles('storefront')), ...(await corpusFiles('ratelimits')) };
    const repo = await bareRepo(`corpus-current-${suffix}/apps`);
    const receiver = await startStatusReceiver();
    const agentNamespace = `mooring-corpus-current-${suffix}`;
    cleanups.push(() => kubectl('delete', 'namespace', agentNamespace, '--wait=false'));
    cleanups.push(() => kubectl('delete', 'crd', CRD, '--wait=false'));
    const config = await agentConfig({
      cluster: { name: 'corpus-current', namespace: agentNamespace },
      git: [{ name: 'corpus', repo }],
      deployments: [
        {
          name: 'storefront',
          namespace: shop(),
          source: 'corpus',
          paths: ['storefront'],
          helm: { chart: 'storefront/chart', valuesFiles: ['storefront/values-production.yaml'] },
          prune: true,
        },
        {
          name: 'ratelimits',
          namespace: limits(),
          source: 'corpus',
          paths: ['ratelimits'],
          allowClusterScoped: ['apiextensions.k8s.io/CustomResourceDefinition'],
          prune: true,
        },
      ],
      statuses: receiver,
    });
    const { kube } = await agentOnFile(config, cleanups);

    const ended = (sha: string, deployment: string) =>
      eventually(
        `${deployment}: an ended status on ${sha}`,
        async () => receiver.ended(sha, `/${deployment}`),
        120_000,
      );
    const expectSuccess = (status: PostedStatus) => expect(status.state, status.description).toBe('success');

    // 1. The first commit: both applications synced, every object stable by its rule.
    const first = await repo.commit(files, { message: 'a shop of today' });
    expectSuccess(await ended(first, 'storefront'));
    expectSuccess(await ended(first, 'ratelimits'));

    // The autoscaler has read its target, and (no metrics server on the test bed) cannot read its metrics:
    // stable, and said so. Its minimum is already applied to the Deployment it scales.
    const hpa = await live(shop(), 'horizontalpodautoscalers.v2.autoscaling', 'storefront');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec).toMatchObject({
      minReplicas: 2,
      maxReplicas: 8,
      behavior: { scaleDown: { stabilizationWindowSeconds: 300 }, scaleUp: { selectPolicy: 'Max' } },
    });
    expect((hpa.spec as { metrics: unknown[] }).metrics).toHaveLength(2);
    expect(stabilityOf(hpa)).toMatchObject({ state: 'stable' });
    expect(stabilityOf(hpa).message).toMatch(/able to scale/);
    await eventually('the autoscaler scaled the Deployment to its minimum', async () => {
      const replicas = ((await live(shop(), 'deployment', 'storefront')).spec as { replicas?: number })
        .replicas;
      return replicas === 2 ? true : undefined;
    });

    // The disruption budget counted its pods: met, and stable by the rule.
    const pdb = await live(shop(), 'poddisruptionbudgets.v1.policy', 'storefront');
    const counts = pdb.status as { currentHealthy: number; desiredHealthy: number };
    expect(counts.currentHealthy).toBeGreaterThanOrEqual(counts.desiredHealthy);
    expect(counts.desiredHealthy).toBe(1);
    expect(stabilityOf(pdb)).toMatchObject({ state: 'stable' });
    expect(stabilityOf(pdb).message).toMatch(/of 1 required pods healthy/);

    const cronJob = await live(shop(), 'cronjobs.v1.batch', 'storefront-backup');
    expect(cronJob.spec).toMatchObject({ timeZone: 'Europe/Lisbon', concurrencyPolicy: 'Forbid' });
    expect(stabilityOf(cronJob)).toMatchObject({
      state: 'stable',
      message: expect.stringContaining('"30 2 * * *" (Europe/Lisbon)'),
    });

    const service = await live(shop(), 'service', 'storefront');
    expect(service.spec).toMatchObject({
      internalTrafficPolicy: 'Local',
      trafficDistribution: 'PreferSameZone',
    });
    const slice = await live(shop(), 'endpointslices.v1.discovery.k8s.io', 'storefront-db-1');
    expect(slice.metadata.labels?.['kubernetes.io/service-name']).toBe('storefront-db');
    expect(slice).toMatchObject({ addressType: 'IPv4', endpoints: [{ addresses: ['192.0.2.40'] }] });

    // The CRD's selectable field is served: policies are listed by their target.
    expect(
      await names(limits(), 'ratelimitpolicies', '--field-selector', 'spec.targetRef.name=storefront'),
    ).toEqual(['ratelimitpolicy.storefront.corpus.example/checkout']);
    expect((await ledgerOf(kube, agentNamespace, 'storefront')).releases.at(-1)?.result).toBe('stable');

    // 2. A policy that breaks a CEL rule (burst below the rate), committed with a change to the accepted policy and
    // to a ConfigMap: the sync fails naming the object, its file and the rule's message; nothing is applied.
    const search = edit(files, 'ratelimits/checkout.yaml', 'name: checkout', 'name: search')
      .replace('requestsPerSecond: 50', 'requestsPerSecond: 200')
      .replace('burst: 100', 'burst: 20');
    const second = await repo.commit(
      {
        'ratelimits/search.yaml': search,
        'ratelimits/checkout.yaml': edit(
          files,
          'ratelimits/checkout.yaml',
          'requestsPerSecond: 50',
          'requestsPerSecond: 80',
        ),
        'ratelimits/settings.yaml': edit(files, 'ratelimits/settings.yaml', 'MODE: enforce', 'MODE: observe'),
      },
      { message: 'a policy for search' },
    );
    const refused = await ended(second, 'ratelimits');
    expect(refused.state).toBe('failure');
    const failure = await eventually('the refusal in the ledger', async () =>
      (await ledgerOf(kube, agentNamespace, 'ratelimits')).releases.find((r) => r.commit === second),
    );
    const said = failure.messages.join('\n');
    expect(said).toContain('nothing was applied');
    expect(said).toMatch(/ratelimits\/search\.yaml:\d+(:\d+)?: RateLimitPolicy [a-z0-9-]+\/search/);
    expect(said).toContain('burst must be at least requestsPerSecond');
    const checkout = await live(limits(), 'ratelimitpolicies', 'checkout');
    expect((checkout.spec as { requestsPerSecond: number }).requestsPerSecond).toBe(50);
    expect(await names(limits(), 'ratelimitpolicies')).toEqual([
      'ratelimitpolicy.storefront.corpus.example/checkout',
    ]);
    // Nothing refers to the settings (a program reads them by name): under their name, unchanged.
    expect((await live(limits(), 'configmap', 'ratelimit-settings')).data).toMatchObject({ MODE: 'enforce' });

    // 3. The policy mended, and the chart asking for a cluster older than 1.25: the policies are applied, the chart
    // is refused by helm, naming it, and the shop stays as it was.
    const third = await repo.commit(
      {
        'ratelimits/search.yaml': search.replace('burst: 20', 'burst: 400'),
        'storefront/chart/Chart.yaml': edit(
          files,
          'storefront/chart/Chart.yaml',
          'kubeVersion: ">=1.25.0-0"',
          'kubeVersion: "<1.25.0-0"',
        ),
      },
      { message: 'mend the search policy; the chart for old clusters' },
    );
    expectSuccess(await ended(third, 'ratelimits'));
    expect(await names(limits(), 'ratelimitpolicies')).toEqual([
      'ratelimitpolicy.storefront.corpus.example/checkout',
      'ratelimitpolicy.storefront.corpus.example/search',
    ]);
    const old = await ended(third, 'storefront');
    expect(old.state).toBe('failure');
    const oldRelease = await eventually('the chart refusal in the ledger', async () =>
      (await ledgerOf(kube, agentNamespace, 'storefront')).releases.find((r) => r.commit === third),
    );
    const helmSaid = oldRelease.messages.join('\n');
    expect(helmSaid).toContain('storefront/chart');
    expect(helmSaid).toContain(
      `chart requires kubeVersion: <1.25.0-0 which is incompatible with Kubernetes v${env.kube.version}`,
    );
    expect(await names(shop(), 'horizontalpodautoscalers')).toEqual([
      'horizontalpodautoscaler.autoscaling/storefront',
    ]);
  }, 300_000);
});
