// Counting the Kubernetes API's requests (src/http/request-counter.ts, KubeApi.requestStats): by the API server's
// verbs and the status code, with the time held back by the request budget; and the metrics made of them.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { MAX_RESOURCES, RequestCounter } from '../../../src/http/request-counter.ts';
import type { Clock } from '../../../src/http/token-bucket.ts';
import { KubeApi, kubeResource, kubeVerb } from '../../../src/kube/api.ts';
import type { ClusterConfig } from '../../../src/kube/kubeconfig.ts';
import { AgentMetrics } from '../../../src/server/metrics.ts';

describe('RequestCounter', () => {
  it('counts by verb, resource and code, sorted, and sums throttled waits', () => {
    const counter = new RequestCounter();
    counter.count('list', 200, 'configmaps');
    counter.count('get', 404, 'configmaps');
    counter.count('get', 200, 'configmaps');
    counter.count('get', 200, 'configmaps');
    counter.count('get', 200, 'deployments.apps');
    counter.count('patch', 'error', 'configmaps');
    counter.throttled(1500);
    counter.throttled(0);
    counter.throttled(500);
    expect(counter.stats).toEqual({
      requests: [
        { verb: 'get', resource: 'configmaps', code: '200', count: 2 },
        { verb: 'get', resource: 'configmaps', code: '404', count: 1 },
        { verb: 'get', resource: 'deployments.apps', code: '200', count: 1 },
        { verb: 'list', resource: 'configmaps', code: '200', count: 1 },
        { verb: 'patch', resource: 'configmaps', code: 'error', count: 1 },
      ],
      throttledSeconds: 2,
      throttledWaits: 2,
    });
  });

  it('counts the resources past the first MAX_RESOURCES as other (a CRD author names them)', () => {
    const counter = new RequestCounter();
    for (let i = 0; i < MAX_RESOURCES + 50; i++) counter.count('get', 200, `kind${i}s.example.com`);
    counter.count('get', 200, 'kind0s.example.com');
    const resources = counter.stats.requests.map((r) => r.resource);
    expect(new Set(resources).size).toBe(MAX_RESOURCES + 1);
    expect(counter.stats.requests.find((r) => r.resource === 'other')?.count).toBe(50);
    expect(counter.stats.requests.find((r) => r.resource === 'kind0s.example.com')?.count).toBe(2);
  });

  it('hands out a copy: later counts do not change what was read', () => {
    const counter = new RequestCounter();
    counter.count('get', 200);
    const before = counter.stats;
    counter.count('get', 200);
    expect(before.requests[0]?.count).toBe(1);
    expect(counter.stats.requests[0]?.count).toBe(2);
  });
});

describe('kubeResource', () => {
  it.each([
    ['/api/v1/namespaces/apps/configmaps', 'configmaps'],
    ['/api/v1/namespaces/apps/configmaps/web?fieldManager=mooring', 'configmaps'],
    ['/apis/apps/v1/namespaces/apps/deployments/web/status', 'deployments.apps/status'],
    ['/apis/apps/v1/namespaces/apps/deployments/web/scale', 'deployments.apps/scale'],
    ['/apis/apps/v1/deployments', 'deployments.apps'],
    ['/api/v1/namespaces', 'namespaces'],
    ['/api/v1/namespaces/apps', 'namespaces'],
    ['/api/v1/namespaces/apps/status', 'namespaces/status'],
    ['/api/v1/namespaces/apps/finalize', 'namespaces/finalize'],
    ['/api/v1/nodes/n1', 'nodes'],
    ['/apis/widgets.example.com/v1/namespaces/a/gadgets/g', 'gadgets.widgets.example.com'],
    ['/apis', 'discovery'],
    ['/apis/apps/v1', 'discovery'],
    ['/api/v1', 'discovery'],
    ['/version', 'discovery'],
    ['/openapi/v3', 'discovery'],
    ['/api/v1/namespaces/a/Config%20Maps', 'other'],
  ])('%s is %s', (path, resource) => {
    expect(kubeResource(path)).toBe(resource);
  });
});

describe('kubeVerb', () => {
  it.each([
    ['GET', '/api/v1/namespaces/apps/configmaps', 'list'],
    ['GET', '/api/v1/namespaces/apps/configmaps?labelSelector=a%3Db', 'list'],
    ['GET', '/api/v1/namespaces/apps/configmaps/web', 'get'],
    ['GET', '/apis/apps/v1/namespaces/apps/deployments/web/status', 'get'],
    ['GET', '/apis/apps/v1/deployments', 'list'],
    ['GET', '/api/v1/namespaces', 'list'],
    ['GET', '/api/v1/namespaces/apps', 'get'],
    ['GET', '/api/v1/nodes/n1', 'get'],
    ['GET', '/apis', 'get'],
    ['GET', '/apis/apps/v1', 'get'],
    ['GET', '/version', 'get'],
    ['POST', '/api/v1/namespaces/apps/configmaps', 'create'],
    ['PUT', '/api/v1/namespaces/apps/configmaps/web', 'update'],
    ['PATCH', '/apis/apps/v1/namespaces/apps/deployments/web?fieldManager=mooring', 'patch'],
    ['DELETE', '/api/v1/namespaces/apps/configmaps/web', 'delete'],
    ['DELETE', '/api/v1/namespaces/apps/configmaps', 'deletecollection'],
  ])('%s %s is %s', (method, path, verb) => {
    expect(kubeVerb(method, path)).toBe(verb);
  });
});

/** A port nothing listens on: the request fails without an answer, and without a server of our own making. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function config(port: number): ClusterConfig {
  return {
    server: `http://127.0.0.1:${port}`,
    namespace: undefined,
    contextName: 'test',
    describe: 'test',
    applyTo: async () => undefined,
  };
}

describe('KubeApi request budget and counts', () => {
  it('counts a request with no answer as error, and takes every request from the budget', async () => {
    let now = 0;
    const slept: number[] = [];
    const clock: Clock = {
      now: () => now,
      sleep: async (ms) => {
        slept.push(ms);
        now += ms;
      },
    };
    const api = new KubeApi(config(await closedPort()), { qps: 2, burst: 2, clock });
    try {
      for (let i = 0; i < 4; i++) {
        await expect(api.request('GET', '/api/v1/namespaces/apps/configmaps/web')).rejects.toThrow();
      }
      // Two at once (the burst), then one every 500 ms.
      expect(slept).toEqual([500, 500]);
      expect(api.requestStats).toEqual({
        requests: [{ verb: 'get', resource: 'configmaps', code: 'error', count: 4 }],
        throttledSeconds: 1,
        throttledWaits: 2,
        budgetRate: 2,
      });
    } finally {
      api.close();
    }
  });

  it('an aborted request stops waiting for the budget', async () => {
    const clock: Clock = {
      now: () => 0,
      sleep: (_ms, signal) =>
        new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    };
    const api = new KubeApi(config(await closedPort()), { qps: 1, burst: 1, clock });
    try {
      await expect(api.request('GET', '/api/v1/namespaces')).rejects.toThrow();
      const stop = new AbortController();
      const waiting = api.request('GET', '/api/v1/namespaces', { signal: stop.signal });
      stop.abort();
      await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
      expect(api.requestStats.requests).toEqual([
        { verb: 'list', resource: 'namespaces', code: 'error', count: 1 },
      ]);
    } finally {
      api.close();
    }
  });
});

describe('metrics of the Kubernetes API requests', () => {
  it('exports the counts as counters that follow the client', () => {
    const metrics = new AgentMetrics();
    metrics.kubeRequests({
      requests: [
        { verb: 'get', resource: 'configmaps', code: '200', count: 3 },
        { verb: 'patch', resource: 'deployments.apps', code: '429', count: 1 },
      ],
      throttledSeconds: 1.5,
      throttledWaits: 2,
    });
    metrics.kubeRequests({
      requests: [
        { verb: 'get', resource: 'configmaps', code: '200', count: 5 },
        { verb: 'patch', resource: 'deployments.apps', code: '429', count: 1 },
      ],
      throttledSeconds: 2,
      throttledWaits: 3,
      budgetRate: 312.5,
    });
    const text = metrics.text();
    // The budget's rate as it adapted.
    expect(text).toMatch(/^mooring_kube_request_budget 312\.5$/m);
    expect(text).toContain('# TYPE mooring_kube_requests_total counter');
    expect(text).toMatch(/^mooring_kube_requests_total\{verb="get",code="200",resource="configmaps"\} 5$/m);
    expect(text).toMatch(
      /^mooring_kube_requests_total\{verb="patch",code="429",resource="deployments.apps"\} 1$/m,
    );
    expect(text).toMatch(/^mooring_kube_throttled_seconds_total 2$/m);
  });
});
