// The cluster cache on a current API server (1.37): its initial state comes from a streaming list (a watch with
// sendInitialEvents, WatchList) in full and as metadata only, asserted from the requests the agent sends through
// the test bed's fault proxy in front of the real kube-apiserver. With the proxy playing a server without the
// feature (422, as 1.27 to 1.31 answer with the feature gate off and older servers answer resourceVersionMatch on
// a watch) or a proxy that strips the parameter, the cache lists and watches instead, remembers it per type, and
// a deploy still converges. A 429 with Retry-After (API Priority and Fairness's answer when a priority level's
// queue is full) on the cache's streams is waited out in full, as it is on every other request.
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeApi } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import type { Discovery } from '../../src/kube/discovery.ts';
import type { KubeObject } from '../../src/render/manifest.ts';
import { deploy } from '../../src/sync/deploy.ts';
import type { RequestInfo } from '../testbed/fault-proxy.ts';
import { STREAMING_LIST_REFUSED, throughProxy } from './fault-helpers.ts';
import { settings, useCleanups } from './faults-support.ts';
import { deploymentYaml, useNamespace } from './helpers.ts';

const streaming = (r: RequestInfo) => r.path.includes('sendInitialEvents=true');
const watching = (r: RequestInfo) => r.path.includes('watch=true');
const listing = (r: RequestInfo) => r.method === 'GET' && r.path.includes('limit=') && !watching(r);
const ofNamespace = (ns: string) => (r: RequestInfo) => r.path.includes(`/namespaces/${ns}/`);

const app = `${settings('{colour: blue}')}---
${deploymentYaml({ image: 'web:1', behavior: 'ready' })}`;

describe('the cluster cache on a server with streaming lists', () => {
  const ns = useNamespace('cache-stream');
  const cleanup = useCleanups(afterEach);

  async function setUp(options: ConstructorParameters<typeof ClusterCache>[1] = {}) {
    const bed = await throughProxy();
    const cache = new ClusterCache(bed.api, options);
    cleanup(
      () => bed.proxy.close(),
      () => bed.api.close(),
      () => cache.close(),
    );
    return { ...bed, cache };
  }

  /**
   * Follows object `name` of the test's namespace through `cache` until the test ends: the list it returns gets
   * what `tell` says of each state the object is in.
   */
  async function follow(
    cache: ClusterCache,
    discovery: Discovery,
    type: [apiVersion: string, kind: string],
    name: string,
    tell: (object: KubeObject) => string,
    options: { metadataOnly?: boolean } = {},
  ): Promise<string[]> {
    const controller = new AbortController();
    cleanup(() => controller.abort());
    const seen: string[] = [];
    void cache.subscribe(
      await discovery.resource(...type),
      ns(),
      name,
      (o) => o && seen.push(tell(o)),
      controller.signal,
      options,
    ).done;
    return seen;
  }

  const deployApp = (api: KubeApi, discovery: Discovery, cache: ClusterCache) =>
    deploy(
      { api, discovery, cache },
      {
        files: [{ path: 'app.yaml', text: app }],
        namespace: ns(),
        application: 'web',
        images: [],
        timeoutMs: 60_000,
        dryRun: false,
      },
    );

  it('lists by streaming, in full and as metadata only, and goes on watching on the same stream', async () => {
    const { proxy, api, discovery, cache } = await setUp();
    const path = `/api/v1/namespaces/${ns()}/configmaps`;
    await api.request('POST', path, { body: { metadata: { name: 'watched', labels: { v: '1' } } } });
    await api.request('POST', `/api/v1/namespaces/${ns()}/secrets`, {
      body: { metadata: { name: 'quiet' }, stringData: { pin: 'do-not-read' } },
    });
    const full = await follow(cache, discovery, ['v1', 'ConfigMap'], 'watched', (o) =>
      String(o.metadata.labels?.v),
    );
    const meta = await follow(cache, discovery, ['v1', 'Secret'], 'quiet', (o) => JSON.stringify(o), {
      metadataOnly: true,
    });
    await expect.poll(() => full.at(-1), { timeout: 20_000 }).toBe('1');
    await expect.poll(() => meta.length, { timeout: 20_000 }).toBeGreaterThan(0);
    expect(meta.join()).not.toContain(Buffer.from('do-not-read').toString('base64'));
    // One request per type and namespace, the list being the first part of the watch: no LIST was sent.
    expect(cache.streamedLists).toBe(2);
    expect(cache.lists).toBe(2);
    expect(cache.requests).toBe(2);
    const sent = proxy.requests.filter(ofNamespace(ns())).filter((r) => r.method === 'GET');
    expect(sent.filter(listing)).toEqual([]);
    expect(sent.filter(streaming)).toHaveLength(2);
    for (const r of sent.filter(streaming)) {
      expect(r.path).toContain('resourceVersionMatch=NotOlderThan');
      expect(r.path).toContain('allowWatchBookmarks=true');
      expect(r.path).not.toMatch(/[?&]resourceVersion=/);
    }
    expect(cache.streamingRefusals.size).toBe(0);

    await api.request('PATCH', `${path}/watched`, {
      body: { metadata: { labels: { v: '2' } } },
      contentType: 'application/merge-patch+json',
    });
    await expect.poll(() => full.at(-1), { timeout: 20_000 }).toBe('2');
    expect(cache.requests).toBe(2);
  });

  it('reads consistently unless a read says it may be stale', async () => {
    const { proxy, api } = await setUp();
    const path = `/api/v1/namespaces/${ns()}/configmaps`;
    await api.request('POST', path, { body: { metadata: { name: 'current' } } });
    const consistent = await api.request<{ items: { metadata: { name: string } }[] }>('GET', path);
    expect(consistent.items.map((i) => i.metadata.name)).toContain('current');
    await api.request('GET', path, { stale: true });
    const reads = proxy.requests.filter((r) => r.method === 'GET' && r.path.startsWith(path));
    expect(reads.map((r) => r.path)).toEqual([path, `${path}?resourceVersion=0`]);
  });

  it('lists and watches where the server refuses streaming lists (422), once per type, and the deploy converges', async () => {
    const { proxy, api, discovery, cache } = await setUp();
    proxy.set(STREAMING_LIST_REFUSED, { match: streaming });
    const report = await deployApp(api, discovery, cache);
    expect(report.outcome).toBe('stable');
    const refusals = [...cache.streamingRefusals.entries()];
    expect(refusals.length).toBeGreaterThan(0);
    for (const [, reason] of refusals) expect(reason).toContain('422 ListOptions.meta.k8s.io');
    // Each type asked once, then listed: a second deploy of the same types asks no more. The types are the
    // namespace's and the Namespaces (whose watch answers whether the deploy's namespace exists).
    const ours = (r: RequestInfo) => ofNamespace(ns())(r) || r.path.startsWith('/api/v1/namespaces?');
    const asked = proxy.count('status', ours);
    expect(asked).toBe(refusals.length);
    expect(proxy.requests.filter(ofNamespace(ns())).some(listing)).toBe(true);
    cache.close();
    const again = new ClusterCache(api);
    cleanup(() => again.close());
    expect((await deployApp(api, discovery, again)).outcome).toBe('stable');
    expect(proxy.count('status', ours)).toBe(asked);
  });

  it('lists and watches where a proxy strips sendInitialEvents, after a bounded silence', async () => {
    const { proxy, api, discovery, cache } = await setUp({ initialEventsTimeoutMs: 1500 });
    // A server that ignores sendInitialEvents sends the objects as ADDED events (a watch from "now" always did)
    // and no end mark. 1.37 marks the end of those even unasked, when bookmarks are allowed: the proxy strips that
    // too, so the server answers as one from before WatchList does.
    const strip = (path: string) => {
      const url = new URL(path, 'http://x');
      for (const name of ['sendInitialEvents', 'resourceVersionMatch', 'allowWatchBookmarks'])
        url.searchParams.delete(name);
      return `${url.pathname}${url.search}`;
    };
    proxy.set({ kind: 'rewrite', path: strip }, { match: streaming });
    const report = await deployApp(api, discovery, cache);
    expect(report.outcome).toBe('stable');
    // The stream of the deployed Deployment, as the next sync's wait opens it: its state arrives by a LIST.
    const seen = await follow(cache, discovery, ['apps/v1', 'Deployment'], 'web', (o) =>
      String(o.metadata.name),
    );
    await expect.poll(() => seen.length, { timeout: 20_000 }).toBeGreaterThan(0);
    expect(cache.streamingRefusals.size).toBeGreaterThan(0);
    for (const reason of cache.streamingRefusals.values())
      expect(reason).toMatch(
        /the server ignored sendInitialEvents \((no k8s.io\/initial-events-end within 1500 ms|the stream ended before it)\)/,
      );
    expect(proxy.requests.filter(ofNamespace(ns())).some(listing)).toBe(true);
    expect(cache.streamedLists).toBe(0);
  });

  it('waits out a 429 Retry-After on its streams before asking again, and the deploy converges', async () => {
    const { proxy, api, discovery, cache } = await setUp();
    const path = `/api/v1/namespaces/${ns()}/configmaps`;
    await api.request('POST', path, { body: { metadata: { name: 'limited', labels: { v: '1' } } } });
    // The namespace's lists and streams are refused as a full priority level's queue refuses them: the stream
    // twice, a list once (where one is sent).
    const mine = ofNamespace(ns());
    proxy.set(
      { kind: 'rate-limit', retryAfterSeconds: 2 },
      { match: (r) => mine(r) && watching(r), times: 2 },
    );
    proxy.add(
      { kind: 'rate-limit', retryAfterSeconds: 2 },
      { match: (r) => mine(r) && listing(r), times: 1 },
    );
    const seen = await follow(cache, discovery, ['v1', 'ConfigMap'], 'limited', (o) =>
      String(o.metadata.labels?.v),
    );
    await expect.poll(() => seen.at(-1), { timeout: 30_000 }).toBe('1');
    await api.request('PATCH', `${path}/limited`, {
      body: { metadata: { labels: { v: '2' } } },
      contentType: 'application/merge-patch+json',
    });
    await expect.poll(() => seen.at(-1), { timeout: 30_000 }).toBe('2');
    const collection = (r: RequestInfo) => mine(r) && r.method === 'GET' && (watching(r) || listing(r));
    const sent = proxy.requests.filter(collection);
    const limited = sent.filter((r) => r.fault === 'rate-limit');
    expect(limited.filter(watching)).toHaveLength(2);
    for (const refused of limited) {
      const next = sent.find((r) => r.at > refused.at);
      expect(next, `a request after the 429 to ${refused.path}`).toBeDefined();
      expect((next?.at ?? 0) - refused.at).toBeGreaterThanOrEqual(2000);
    }
    expect(api.requestStats.throttledSeconds).toBeGreaterThanOrEqual(2 * limited.length);

    proxy.set(
      { kind: 'rate-limit', retryAfterSeconds: 2 },
      { match: (r) => mine(r) && r.method !== 'GET', times: 2 },
    );
    expect((await deployApp(api, discovery, cache)).outcome).toBe('stable');
    expect(proxy.count('rate-limit')).toBe(limited.length + 2);
  });
});
