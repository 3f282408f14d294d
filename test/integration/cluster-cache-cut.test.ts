// A streaming list cut short, on the real kube-apiserver behind the test bed's fault proxy: 300 ConfigMaps in one
// namespace, and the proxy cuts the stream that carries them after a fixed number of bytes, before its
// `k8s.io/initial-events-end` bookmark (the connection reset, or the answer ended properly as a restarting server
// ends it). What a user relies on: the cache never takes the objects that arrived before the cut as the whole
// state, so no object is reported absent (a stability verdict of "not found", a drift of "deleted") because of it;
// it asks again, by a streaming list still, and holds all 300; a re-list after 410 Gone that is cut keeps what was
// held; and the agent, whose sync waits on that cache, lives and records a stable release. The same holds when
// kube-apiserver itself is killed (SIGKILL) with a streaming list half sent, and started again. And after a re-list
// whose list was held while the namespace changed, the cache's index by annotation answers as the server does.
import { afterEach, describe, expect, it } from 'vitest';
import { type KubeApi, METADATA_OBJECT } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import type { Discovery } from '../../src/kube/discovery.ts';
import { INITIAL_EVENTS_END, STREAMING_LIST_QUERY } from '../../src/kube/watch-list.ts';
import type { Fault, FaultProxy, RequestInfo } from '../testbed/fault-proxy.ts';
import {
  assertAlive,
  folderAgentConfig,
  killApiServer,
  proxiedServer,
  restartApiServer,
  stopping,
} from './fault-helpers.ts';
import { newestStable, useCleanups } from './faults-support.ts';
import { deploymentYaml, eventually, manifestDir, startAgent, useNamespace } from './helpers.ts';

const COUNT = 300;
/** Bytes of each ConfigMap's data: 300 of them make a stream of some 300 KB in full. */
const PAD = 'x'.repeat(700);
const names = Array.from({ length: COUNT }, (_, i) => `cm-${String(i).padStart(3, '0')}`);

const streaming = (r: RequestInfo) => r.path.includes('sendInitialEvents=true');
/** The test's own probe of a stream (the cache's streams ask a timeout of 300 s or more). */
const probing = (r: RequestInfo) => /[?&]timeoutSeconds=7(&|$)/.test(r.path);
/** The cache's streaming lists of the namespace's ConfigMaps. */
const streamsOf = (ns: string) => (r: RequestInfo) =>
  r.path.startsWith(`/api/v1/namespaces/${ns}/configmaps?`) && streaming(r) && !probing(r);

/**
 * The server's answer to a watch from version 1 of the namespace's ConfigMaps, as kube-apiserver words it when it no
 * longer holds that version (410 in an ERROR event), once: a control plane started for this file alone still serves
 * version 1 from its watch cache (the window starts at its first list).
 */
function expireWatchFromOne(proxy: FaultProxy, ns: string): void {
  proxy.add(
    {
      kind: 'status',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: `${JSON.stringify({
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'too old resource version: 1 (1464)',
          reason: 'Expired',
          code: 410,
        },
      })}\n`,
    },
    {
      match: (r) =>
        r.path.startsWith(`/api/v1/namespaces/${ns}/configmaps?`) &&
        /[?&]resourceVersion=1(&|$)/.test(r.path),
      times: 1,
    },
  );
}

/** What one subscriber heard: its object's name (or undefined) and the note, if any, that came with it. */
interface Heard {
  present: boolean;
  note: string | undefined;
}

describe('the cluster cache when a streaming list is cut before its end', () => {
  const nsReset = useNamespace('cache-cut');
  const nsEnd = useNamespace('cache-cut-end');
  const nsAgent = useNamespace('cache-cut-agent');
  const nsKilled = useNamespace('cache-cut-killed');
  const nsIndex = useNamespace('cache-cut-index');
  const cleanup = useCleanups(afterEach);

  async function setUp() {
    const bed = await proxiedServer(cleanup);
    const cache = new ClusterCache(bed.api);
    cleanup(() => cache.close());
    return { ...bed, cache };
  }

  async function createConfigMaps(api: KubeApi, ns: string): Promise<void> {
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    for (let i = 0; i < COUNT; i += 30)
      await Promise.all(
        names
          .slice(i, i + 30)
          .map((name) => api.request('POST', path, { body: { metadata: { name }, data: { pad: PAD } } })),
      );
  }

  /**
   * One streaming list sent through the proxy with `fault` on it: how many objects arrived before the stream
   * ended, and whether its end mark did. Shows that the fault cuts the stream mid-way.
   */
  async function streamOnce(api: KubeApi, ns: string, fault: Fault, proxy: FaultProxy, accept?: string) {
    proxy.add(fault, { match: probing, times: 1 });
    let added = 0;
    let ended = false;
    const outcome = await api
      .watch(
        `/api/v1/namespaces/${ns}/configmaps`,
        { ...STREAMING_LIST_QUERY, timeoutSeconds: 7 },
        (event) => {
          if (event.type === 'ADDED') added++;
          const annotations = (event.object as { metadata?: { annotations?: Record<string, string> } })
            .metadata?.annotations;
          if (event.type === 'BOOKMARK' && annotations?.[INITIAL_EVENTS_END] === 'true') ended = true;
          return !ended;
        },
        { accept },
      )
      .then(
        () => 'ended',
        (error: unknown) => `failed: ${String(error)}`,
      );
    return { added, ended, outcome };
  }

  /** Subscribes to every ConfigMap of the namespace, in full, recording all that each one hears. */
  async function subscribeAll(cache: ClusterCache, discovery: Discovery, ns: string) {
    const info = await discovery.resource('v1', 'ConfigMap');
    const heard = new Map<string, Heard[]>(names.map((n) => [n, []]));
    const controller = new AbortController();
    cleanup(() => controller.abort());
    for (const name of names)
      void cache
        .subscribe(
          info,
          ns,
          name,
          (o, note) => heard.get(name)?.push({ present: o !== undefined, note }),
          controller.signal,
        )
        .done.catch(() => undefined);
    const present = () => names.filter((n) => heard.get(n)?.at(-1)?.present).length;
    /** Heard "this object does not exist": no object, and no note saying the state is unknown. */
    const absent = () => names.filter((n) => heard.get(n)?.some((h) => !h.present && h.note === undefined));
    return { heard, present, absent };
  }

  it('streams again after a connection reset mid-stream, reports no object absent, and holds all 300', async () => {
    const { proxy, api, discovery, cache, direct } = await setUp();
    const ns = nsReset();
    await createConfigMaps(direct, ns);
    const cut: Fault = { kind: 'reset', when: 'response', afterBytes: 90_000 };

    // The cut lands mid-stream: some of the objects came, not all, and no end mark.
    const probe = await streamOnce(api, ns, cut, proxy);
    expect(probe.ended).toBe(false);
    expect(probe.added).toBeGreaterThan(30);
    expect(probe.added).toBeLessThan(COUNT / 2);
    expect(probe.outcome).toMatch(/^failed: /);

    // The cache's own stream is cut so twice running, then passes.
    const mine = streamsOf(ns);
    proxy.set(cut, { match: mine, times: 2 });
    const { heard, present, absent } = await subscribeAll(cache, discovery, ns);
    await expect.poll(present, { timeout: 60_000 }).toBe(COUNT);

    expect(absent()).toEqual([]);
    // Until the whole state came, a subscriber heard only that nothing is known yet, and why.
    const notes = [...heard.values()].flat().filter((h) => h.note !== undefined);
    for (const h of notes) expect(h.note).toMatch(/^cannot list ConfigMaps in namespace /);
    expect(proxy.requests.filter(mine).map((r) => r.fault)).toEqual(['reset', 'reset', 'pass']);
    // One state taken, by a streaming list: the two cut short were not, and the type still streams.
    expect(cache.lists).toBe(1);
    expect(cache.streamedLists).toBe(1);
    expect(cache.streamingRefusals.size).toBe(0);

    // A re-list (the watched version compacted away: 410 Gone) whose stream is cut keeps what was held.
    for (const list of heard.values()) list.length = 0;
    proxy.set(cut, { match: mine, times: 2 });
    expireWatchFromOne(proxy, ns);
    cache.rewatch('1');
    await expect.poll(() => cache.lists, { timeout: 60_000 }).toBe(2);
    expect(proxy.count('status')).toBe(1);
    expect(proxy.requests.filter(mine).map((r) => r.fault)).toEqual([
      'reset',
      'reset',
      'pass',
      'reset',
      'reset',
      'pass',
    ]);
    expect(cache.streamedLists).toBe(2);
    expect([...heard.values()].flat().filter((h) => !h.present)).toEqual([]);
    expect(present()).toBe(COUNT);

    // What the cache does say absent, it says when an object is deleted: the check above can see it.
    await direct.request('DELETE', `/api/v1/namespaces/${ns}/configmaps/cm-150`);
    await expect.poll(absent, { timeout: 20_000 }).toEqual(['cm-150']);
    expect(present()).toBe(COUNT - 1);
  });

  it('streams again after the answer ends properly mid-stream, as a restarting server ends it', async () => {
    const { proxy, api, discovery, cache, direct } = await setUp();
    const ns = nsEnd();
    await createConfigMaps(direct, ns);
    const cut: Fault = { kind: 'truncate', afterBytes: 90_000 };
    const probe = await streamOnce(api, ns, cut, proxy);
    expect(probe).toMatchObject({ ended: false, outcome: 'ended' });
    expect(probe.added).toBeGreaterThan(30);
    expect(probe.added).toBeLessThan(COUNT / 2);

    const mine = streamsOf(ns);
    proxy.set(cut, { match: mine, times: 1 });
    const { present, absent } = await subscribeAll(cache, discovery, ns);
    await expect.poll(present, { timeout: 60_000 }).toBe(COUNT);
    expect(absent()).toEqual([]);
    expect(cache.lists).toBe(1);
    // The server that ended one stream early serves streaming lists: it is asked again, not taken for one that
    // ignores the ask.
    expect(cache.streamingRefusals.size).toBe(0);
    expect(cache.streamedLists).toBe(1);
    expect(proxy.requests.filter(mine).map((r) => r.fault)).toEqual(['truncate', 'pass']);
  });

  it('answers a selection from an index made again after a re-list, with what changed while no watch ran', async () => {
    const { proxy, cache, discovery, direct } = await setUp();
    const ns = nsIndex();
    const key = 'artifact.spinnaker.io/name';
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    for (let i = 0; i < 30; i++)
      await direct.request('POST', path, {
        body: { metadata: { name: `cm-${i}`, annotations: { [key]: `app-${i % 3}` } } },
      });
    const info = await discovery.resource('v1', 'ConfigMap');
    const controller = new AbortController();
    cleanup(() => controller.abort());
    void cache
      .subscribe(info, ns, 'cm-0', () => {}, controller.signal, { metadataOnly: true })
      .done.catch(() => undefined);
    const selected = (value: string) =>
      cache
        .listedObjects(info, ns, undefined, { annotation: key, values: [value] })
        ?.map((o) => o.metadata.name)
        .sort();
    const serverSays = async (value: string) =>
      (
        await direct.request<{
          items: { metadata: { name: string; annotations?: Record<string, string> } }[];
        }>('GET', path)
      ).items
        .filter((o) => o.metadata.annotations?.[key] === value)
        .map((o) => o.metadata.name)
        .sort();
    await expect.poll(() => selected('app-1')?.length, { timeout: 20_000 }).toBe(10);
    expect(cache.lists).toBe(1);

    // The watch ends (its version expired: 410), and the list that follows is held at the proxy while the namespace
    // changes: no watch sees these changes, only the new list does.
    const lists = streamsOf(ns);
    proxy.set({ kind: 'hang' }, { match: lists, times: 1 });
    expireWatchFromOne(proxy, ns);
    cache.rewatch('1');
    await expect.poll(() => proxy.hanging, { timeout: 20_000 }).toBe(1);
    await direct.request('PATCH', `${path}/cm-1`, {
      body: { metadata: { annotations: { [key]: 'app-2' } } },
      contentType: 'application/merge-patch+json',
    });
    await direct.request('DELETE', `${path}/cm-4`);
    await direct.request('POST', path, {
      body: { metadata: { name: 'cm-new', annotations: { [key]: 'app-1' } } },
    });
    proxy.pass();
    await expect.poll(() => cache.lists, { timeout: 30_000 }).toBe(2);

    const want = await serverSays('app-1');
    expect(want).toContain('cm-new');
    expect(want).not.toContain('cm-1');
    expect(want).not.toContain('cm-4');
    expect(selected('app-1')).toEqual(want);
    expect(selected('app-2')).toEqual(await serverSays('app-2'));
  });

  it('the agent lives through its wait’s streaming lists being cut, and records a stable release', async () => {
    const bed = await proxiedServer(cleanup);
    const kube = bed.direct;
    const ns = nsAgent();
    const docs = names.map(
      (name) => `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ${name}}\ndata: {pad: ${PAD}}\n`,
    );
    docs.push(deploymentYaml({ image: 'web:1', behavior: 'ready', configMap: 'cm-000' }));
    const dir = await manifestDir({ 'app.yaml': docs.join('---\n') });
    // The wait's ConfigMaps are watched as metadata only (some 100 KB for 300): cut a third of the way, twice.
    const mine = streamsOf(ns);
    const cut: Fault = { kind: 'reset', when: 'response', afterBytes: 30_000 };
    bed.proxy.set(cut, { match: mine, times: 2 });
    const agentNs = `mooring-cache-cut-${Date.now().toString(36)}`;
    const agent = startAgent(
      await folderAgentConfig({
        agentNs,
        kubeconfig: bed.kubeconfig,
        namespace: ns,
        dir,
        deployment: { stability: { timeout: '3m' } },
      }),
      { process: true },
    );
    cleanup(stopping(agent, agentNs));
    const release = await eventually(
      'a stable release of web',
      async () => {
        assertAlive(agent);
        return newestStable(kube, agentNs, 'web');
      },
      180_000,
    );
    expect(release.result).toBe('stable');
    expect(bed.proxy.requests.filter(mine).map((r) => r.fault)).toEqual(['reset', 'reset', 'pass']);
    expect(agent.logged('streaming list refused by the API server; listing and watching instead')).toEqual(
      [],
    );
    assertAlive(agent);
    await agent.ready();
    const listed = await kube.request<{ items: unknown[] }>('GET', `/api/v1/namespaces/${ns}/configmaps`);
    expect(listed.items.length).toBeGreaterThanOrEqual(COUNT);
    // The same cut, on the same objects as metadata, lands mid-stream: some came, not all, and no end mark.
    const probe = await streamOnce(bed.api, ns, cut, bed.proxy, METADATA_OBJECT);
    expect(probe.ended).toBe(false);
    expect(probe.added).toBeGreaterThan(30);
    expect(probe.added).toBeLessThan(COUNT);
  });

  it('streams again after kube-apiserver is killed mid-stream and restarted, reports no object absent, and holds all 300', async () => {
    const { proxy, discovery, cache, direct } = await setUp();
    const ns = nsKilled();
    await createConfigMaps(direct, ns);
    // The cache's stream passes a third of the objects, then is left open and silent: the server is killed then.
    let stalled: () => void = () => undefined;
    const midStream = new Promise<void>((resolve) => {
      stalled = resolve;
    });
    const mine = streamsOf(ns);
    proxy.set({ kind: 'stall', afterBytes: 90_000, stalled }, { match: mine, times: 1 });
    const { heard, present, absent } = await subscribeAll(cache, discovery, ns);
    await midStream;
    expect(present()).toBe(0);
    await killApiServer();
    try {
      // While the server is gone, nothing is known: no subscriber hears an object absent.
      await new Promise((r) => setTimeout(r, 3000));
      expect(absent()).toEqual([]);
    } finally {
      await restartApiServer();
    }
    await expect.poll(present, { timeout: 90_000 }).toBe(COUNT);
    expect(absent()).toEqual([]);
    const notes = [...heard.values()].flat().filter((h) => h.note !== undefined);
    for (const h of notes) expect(h.note).toMatch(/^cannot list ConfigMaps in namespace /);
    expect(proxy.requests.filter(mine)[0]?.fault).toBe('stall');
    // One state taken. Whether by a streaming list again or by LIST+WATCH is the restarting server's doing (one
    // whose watch cache is not ready yet ends streams early, and three early ends in a row read as "ignored");
    // either way nothing was taken from the half-sent stream.
    expect(cache.lists).toBe(1);
  }, 240_000);
});
