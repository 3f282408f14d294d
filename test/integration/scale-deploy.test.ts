// Deploys at the scale users have, on the real control plane: 100 applications (300 objects) deployed and waited
// on to the end, a verdict per object paired with its own object, an ordinary request answered while hundreds
// of objects are being waited on through a small connection pool, and streams that grow with kinds times
// namespaces, never with objects.
import { describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { deploy } from '../../src/sync/deploy.ts';
import { deployTo, kubectl, manifestDir, testbed, useNamespace } from './helpers.ts';
import { apps } from './scale-fixtures.ts';

/** LISTs of ConfigMaps the API server has answered since it started (apiserver_request_total). */
async function configMapLists(): Promise<number> {
  const raw = await kubectl('get', '--raw', '/metrics');
  expect(raw.code, raw.stderr).toBe(0);
  let total = 0;
  for (const line of raw.stdout.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (
      line.includes('resource="configmaps"') &&
      line.includes('verb="LIST"') &&
      line.includes('subresource=""')
    )
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  expect(total).toBeGreaterThan(0);
  return total;
}

interface JsonReport {
  outcome: string;
  summary: string;
  objects: {
    kind: string;
    namespace: string;
    name: string;
    action: string;
    stability?: { state: string; message: string };
  }[];
}

describe('deploys at scale', () => {
  const ns = useNamespace('scale');
  const ns2 = useNamespace('scale-pool');

  it('deploys 100 applications (300 objects), waits for all of them, and pairs each verdict with its object', async () => {
    const dir = await manifestDir({ 'apps.yaml': apps(100) });
    const listsBefore = await configMapLists();
    const first = await deployTo(ns(), dir, '--timeout', '5m');
    expect(first.code, first.stdout.slice(-2000) + first.stderr).toBe(0);
    expect(first.stdout).toMatch(/300\/300 stable in/);
    // The API server's own count: the live state, the versions render reuses and version history each list
    // the namespace's ConfigMaps once, not once per ConfigMap (which made a deploy quadratic in time and memory:
    // 100 lists here). The bound leaves room for other clients of the test bed relisting meanwhile.
    expect((await configMapLists()) - listsBefore).toBeLessThanOrEqual(20);

    // kubectl agrees: every Deployment is available.
    const listed = await kubectl(
      '-n',
      ns(),
      'get',
      'deployments',
      '-o',
      'jsonpath={range .items[*]}{.status.availableReplicas}{"\\n"}{end}',
    );
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.trim().split('\n')).toEqual(Array(100).fill('1'));

    // Again, unchanged: still waited on, and each verdict belongs to its own object (a Service and a Deployment
    // share every name here).
    const again = await deployTo(ns(), dir, '--timeout', '5m', '-o', 'json');
    expect(again.code, again.stderr).toBe(0);
    const report = JSON.parse(again.stdout) as JsonReport;
    expect(report.outcome).toBe('stable');
    expect(report.objects).toHaveLength(300);
    for (const o of report.objects) {
      expect(o.action).toBe('unchanged');
      expect(o.stability?.state, `${o.kind} ${o.name}`).toBe('stable');
      expect(o.stability?.message.startsWith(`${o.kind} ${ns()}/${o.name}: `), o.stability?.message).toBe(
        true,
      );
    }
  });

  it('answers an ordinary request while 240 objects are waited on through a pool of 4 connections', async () => {
    const api = new KubeApi(loadKubeConfig({ kubeconfig: testbed().kube.kubeconfig }), { maxSockets: 4 });
    const cache = new ClusterCache(api);
    const answered: string[] = [];
    let deployEnded = false;
    let probe: Promise<void> | undefined;
    try {
      const report = await deploy(
        {
          api,
          discovery: new Discovery(api),
          cache,
          onEvent: (event) => {
            // Once the wait has begun: 20 ordinary requests through the same client.
            if (event.type !== 'progress' || probe) return;
            probe = (async () => {
              for (let i = 0; i < 20; i++) {
                const version = await api.request<{ gitVersion: string }>('GET', '/version');
                answered.push(`${deployEnded ? 'after' : 'during'} ${version.gitVersion}`);
              }
            })();
          },
        },
        {
          files: [{ path: 'pool.yaml', text: apps(80, 'pool') }],
          namespace: ns2(),
          application: 'pool',
          images: [],
          timeoutMs: 300_000,
          dryRun: false,
          concurrency: 2,
        },
      );
      deployEnded = true;
      await probe;
      expect(report.outcome, report.summary).toBe('stable');
      expect(report.summary).toMatch(/^240\/240 stable/);
      // Requests made during the wait were answered during it, not after the streams let go.
      expect(answered).toHaveLength(20);
      expect(answered.every((a) => a.startsWith('during'))).toBe(true);
      // Three kinds in one namespace: three streams however many objects; a handful of requests in all.
      expect(cache.watched).toBe(0); // released at the end of the wait (the CLI's cache does not linger)
      expect(api.streams).toBe(0);
    } finally {
      cache.close();
      api.close();
    }
  });

  it('watches one stream per kind and namespace for 200 objects, and lingers for the next sync', async () => {
    const api = new KubeApi(loadKubeConfig({ kubeconfig: testbed().kube.kubeconfig }));
    const discovery = new Discovery(api);
    const cache = new ClusterCache(api, { lingerMs: 60_000 });
    try {
      const deployment = await discovery.resource('apps/v1', 'Deployment');
      const service = await discovery.resource('v1', 'Service');
      const controller = new AbortController();
      const seen = new Map<string, string>();
      for (let i = 0; i < 100; i++) {
        const name = `app-${String(i).padStart(3, '0')}`;
        for (const info of [deployment, service]) {
          void cache.subscribe(
            info,
            ns(),
            name,
            (o) => o && seen.set(`${info.kind}/${name}`, o.metadata.uid as string),
            controller.signal,
          ).done;
        }
      }
      await expect.poll(() => seen.size, { timeout: 30_000 }).toBe(200);
      expect(cache.watched).toBe(2);
      // Two streaming lists, each going on as the watch, for 200 objects (two lists and two watches where the
      // server has no streaming lists).
      expect(cache.requests).toBe(2);
      expect(cache.lists).toBe(2);
      expect(cache.streamedLists).toBe(2);
      await expect.poll(() => api.streams, { timeout: 10_000 }).toBe(2);

      controller.abort();
      // Lingering: still watched for the next sync.
      expect(cache.watched).toBe(2);
    } finally {
      cache.close();
      api.close();
    }
  });
});
