// API Priority and Fairness on the real test bed: a FlowSchema puts one ServiceAccount's requests in a priority
// level of its own with the smallest share of the server's concurrency, nothing to borrow and no queue (Reject),
// so a burst of that user's lists is answered 429 with Retry-After, as a busy cluster answers a busy client.
// Every request waits at least the Retry-After and then succeeds, a deploy by that user converges, and the adaptive
// request budget (src/http/adaptive-rate.ts) has halved.
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { requestBudget } from '../../src/config/schema-deployment.ts';
import { CLI_BUDGET, KubeApi, type KubeApiOptions } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { deploy } from '../../src/sync/deploy.ts';
import { deploymentYaml, testbed, useNamespace, writeKubeconfig } from './helpers.ts';

const FLOWCONTROL = '/apis/flowcontrol.apiserver.k8s.io/v1';

describe('API Priority and Fairness', () => {
  const ns = useNamespace('apf');
  const admin = new KubeApi(loadKubeConfig({ kubeconfig: testbed().kube.kubeconfig }));
  const name = () => `mooring-test-${ns()}`;
  afterAll(async () => {
    await admin.request('DELETE', `${FLOWCONTROL}/flowschemas/${name()}`).catch(() => undefined);
    await admin
      .request('DELETE', `${FLOWCONTROL}/prioritylevelconfigurations/${name()}`)
      .catch(() => undefined);
    admin.close();
  });

  /** The kubeconfig of a ServiceAccount that may do anything in the namespace, throttled by a level of its own. */
  async function throttledUser(): Promise<string> {
    const base = `/api/v1/namespaces/${ns()}`;
    await admin.request('POST', `${base}/serviceaccounts`, { body: { metadata: { name: 'busy' } } });
    const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns()}`;
    await admin.request('POST', `${rbac}/roles`, {
      body: { metadata: { name: 'all' }, rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] },
    });
    await admin.request('POST', `${rbac}/rolebindings`, {
      body: {
        metadata: { name: 'all' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'all' },
        subjects: [{ kind: 'ServiceAccount', name: 'busy', namespace: ns() }],
      },
    });
    await admin.request('POST', `${FLOWCONTROL}/prioritylevelconfigurations`, {
      body: {
        metadata: { name: name() },
        spec: {
          type: 'Limited',
          limited: {
            nominalConcurrencyShares: 1,
            lendablePercent: 0,
            borrowingLimitPercent: 0,
            limitResponse: { type: 'Reject' },
          },
        },
      },
    });
    await admin.request('POST', `${FLOWCONTROL}/flowschemas`, {
      body: {
        metadata: { name: name() },
        spec: {
          priorityLevelConfiguration: { name: name() },
          matchingPrecedence: 100,
          distinguisherMethod: { type: 'ByUser' },
          rules: [
            {
              subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: 'busy', namespace: ns() } }],
              resourceRules: [
                { verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true },
              ],
              nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
            },
          ],
        },
      },
    });
    const token = await admin.request<{ status: { token: string } }>(
      'POST',
      `${base}/serviceaccounts/busy/token`,
      { body: { spec: { expirationSeconds: 3600 } } },
    );
    const known = parse(await readFile(testbed().kube.kubeconfig, 'utf8')) as {
      clusters: { cluster: Record<string, unknown> }[];
    };
    const cluster = known.clusters[0]?.cluster;
    if (!cluster) throw new Error('the test bed kubeconfig has no cluster');
    return writeKubeconfig(cluster, { token: token.status.token });
  }

  /** Retries for as long as a busy machine's level stays full: each 429 is waited out, none given up on. */
  function client(kubeconfig: string, budget: Partial<KubeApiOptions>): KubeApi {
    return new KubeApi(loadKubeConfig({ kubeconfig }), {
      maxSockets: 64,
      retryForMs: 240_000,
      ...budget,
    });
  }

  const refusals = (api: KubeApi) =>
    api.requestStats.requests.filter((r) => r.code === '429').reduce((n, r) => n + r.count, 0);

  it('waits out the 429s of a full priority level, and the sync converges', async () => {
    const kubeconfig = await throttledUser();
    // An adaptive budget (cluster.qpsMax), from 200 requests a second.
    const api = client(kubeconfig, requestBudget({ qpsMax: 2000, burst: 400 }));
    const cache = new ClusterCache(api);
    try {
      const path = `/api/v1/namespaces/${ns()}/configmaps`;
      // Objects enough that a list is worth more seats than the level has (APF counts a list as wide as the objects
      // of its type in the whole cluster): one list at a time, as on a cluster with thousands of ConfigMaps.
      for (let i = 0; i < 600; i += 20)
        await Promise.all(
          Array.from({ length: 20 }, (_, j) =>
            admin.request('POST', path, {
              body: { metadata: { name: `filler-${i + j}` }, data: { n: 'x' } },
            }),
          ),
        );
      // The FlowSchema is seen by the server's APF controller within a moment: until a burst meets 429s.
      const started = Date.now();
      while (refusals(api) === 0 && Date.now() - started < 30_000)
        await Promise.all(Array.from({ length: 40 }, () => api.request('GET', path)));
      const refused = refusals(api);
      expect(refused).toBeGreaterThan(0);
      // Every 429 was waited out at least as long as its Retry-After (the API server says 1 s), then answered.
      const { throttledSeconds, throttledWaits } = api.requestStats;
      expect(throttledWaits).toBeGreaterThanOrEqual(refused);
      expect(throttledSeconds).toBeGreaterThanOrEqual(refused * 1);

      // A deploy by the same user while its level stays full of its own lists.
      const busy = Array.from({ length: 10 }, () => api.request('GET', path));
      const report = await deploy(
        { api, discovery: new Discovery(api), cache },
        {
          files: [
            {
              path: 'app.yaml',
              text: deploymentYaml({ image: 'web:1', behavior: 'ready' }),
            },
          ],
          namespace: ns(),
          application: 'web',
          images: [],
          timeoutMs: 90_000,
          dryRun: false,
        },
      );
      await Promise.all(busy);
      expect(report.outcome).toBe('stable');
      // The 429s halved the adaptive budget: the agent asks less of a server that says it is full.
      expect(api.requestStats.budgetRate).toBeLessThan(200);

      // The command line's budget starts at the top and follows the same server down: every request of a burst
      // answered, the rate halved by the 429s.
      const cli = client(kubeconfig, CLI_BUDGET);
      try {
        expect(cli.requestStats.budgetRate).toBe(CLI_BUDGET.qpsMax);
        const answered = await Promise.all(
          Array.from({ length: 40 }, () => cli.request<{ items: unknown[] }>('GET', path)),
        );
        expect(answered.every((list) => list.items.length >= 600)).toBe(true);
        expect(refusals(cli)).toBeGreaterThan(0);
        expect(cli.requestStats.budgetRate).toBeLessThanOrEqual((CLI_BUDGET.qpsMax ?? 0) / 2);
      } finally {
        cli.close();
      }
    } finally {
      cache.close();
      api.close();
    }
  }, 300_000);
});
