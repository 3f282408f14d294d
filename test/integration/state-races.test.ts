// Writers racing on mooring's state ConfigMaps, against the real API server: each writer has its own client and
// its own store, as the CLI and the agent (or two agents around a change of leader) do. A rollback's fence and a
// sync's releases written at once, two writers of one inventory, two outboxes and two control-map writers: every
// change of every writer is in the ConfigMap at the end. The store's retry loop itself is driven into real
// conflicts (a write between its read and its write) and to its bound.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Release } from '../../src/contract.ts';
import { TransientError } from '../../src/errors.ts';
import { KubeApi, type RequestSpec } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import { ControlMap, RECONCILE_PREFIX, SUSPEND_PREFIX } from '../../src/kube/control-map.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { statusCode } from '../../src/kube/errors.ts';
import { type InventoryEntry, InventoryStore, inventoryName, unionOf } from '../../src/kube/inventory.ts';
import { StateStore } from '../../src/kube/state-store.ts';
import { type Fence, Ledger, ledgerName } from '../../src/report/ledger.ts';
import { StatusOutbox } from '../../src/report/outbox.ts';
import { ConfigMapOutboxStore, OUTBOX_NAME } from '../../src/report/outbox-store.ts';
import { type DeployRequest, deploy } from '../../src/sync/deploy.ts';
import { outboxEntries } from '../unit/report/outbox-entries.ts';
import { clusterConfig, eventually, useNamespace } from './helpers.ts';

/**
 * The real client, counting the conflicts (409) the API server answered, so a test knows a race took place; and
 * able to let another writer in just before its next write is sent (`beforeWrite`, once per call).
 */
class CountingApi extends KubeApi {
  conflicts = 0;
  gets = 0;
  beforeWrite: (() => Promise<void>) | undefined;
  /** Which write `beforeWrite` waits for (any but a read when unset). */
  writeIs: ((method: string, spec?: RequestSpec) => boolean) | undefined;
  override async request<T = unknown>(method: string, path: string, spec?: RequestSpec): Promise<T> {
    if (method === 'GET') this.gets++;
    if (method !== 'GET' && this.beforeWrite && (this.writeIs?.(method, spec) ?? true)) {
      const hook = this.beforeWrite;
      this.beforeWrite = undefined;
      await hook();
    }
    try {
      return await super.request<T>(method, path, spec);
    } catch (error) {
      if (statusCode(error) === 409) this.conflicts++;
      throw error;
    }
  }
}

const CONFIGMAP_INFO = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  plural: 'configmaps',
  namespaced: true,
} as const;

/** Reads until the store answers `n` (the watch catches up within a moment). */
async function eventuallyRead(store: StateStore, n: string, name = 'watched'): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await store.read(name, 'read'))?.data.n === n) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never read n=${n}`);
}

/**
 * Two clients, and on the first, as the agent has it, a metadata watch of the namespace's ConfigMaps that tells its
 * stores which version of each is current (StateStore.watchVersions).
 */
function watchedClients(namespace: string) {
  const [a, b] = clients();
  const cache = new ClusterCache(a);
  const controller = new AbortController();
  void cache.subscribe(CONFIGMAP_INFO, namespace, 'any', () => undefined, controller.signal, {
    metadataOnly: true,
  }).done;
  StateStore.watchVersions(a, namespace, (name) => cache.watchedVersion(CONFIGMAP_INFO, namespace, name));
  const close = () => {
    controller.abort();
    cache.close();
  };
  return { a, b, namespace, cache, close };
}

function clients(): [CountingApi, CountingApi] {
  return [new CountingApi(clusterConfig()), new CountingApi(clusterConfig())];
}

async function configMap(api: KubeApi, namespace: string, name: string) {
  return api.request<{
    metadata: {
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      resourceVersion?: string;
    };
    data?: Record<string, string>;
  }>('GET', `/api/v1/namespaces/${namespace}/configmaps/${name}`);
}

function release(deployment: string, n: number): Omit<Release, 'id'> {
  return {
    deployment,
    time: new Date().toISOString(),
    trigger: 'commit',
    commit: `c${n}`,
    images: {},
    revision: `rev-${n}`,
    versions: [],
    objects: [],
    result: 'stable',
    durationMs: n,
    messages: [],
  };
}

describe('state ConfigMaps with concurrent writers', () => {
  const ns = useNamespace('state-races');

  it('a rollback fence racing 20 ledger appends from another client loses no release and no fence', async () => {
    const [a, b] = clients();
    const agent = new Ledger(a, ns());
    const cli = new Ledger(b, ns());
    const fence: Fence = { release: 3, since: new Date().toISOString(), heads: { commit: 'c3', images: {} } };
    const writes: Promise<unknown>[] = [];
    for (let n = 1; n <= 20; n++) {
      writes.push((n % 2 ? agent : cli).append(release('web', n)));
      if (n === 7) writes.push(cli.setFence('web', fence));
      if (n === 13) writes.push(agent.setWaiting('web', { message: 'waiting for crds', since: 'now' }));
    }
    const results = await Promise.all(writes);
    const appended = results.filter((r): r is Release => typeof r === 'object' && r !== null);

    const stored = await new Ledger(new KubeApi(clusterConfig()), ns()).read('web');
    expect(stored.releases.map((r) => r.revision).sort()).toEqual(
      Array.from({ length: 20 }, (_, i) => `rev-${i + 1}`).sort(),
    );
    // Ids are dense and newest first: each append numbered from what was stored when it was written.
    expect(stored.releases.map((r) => r.id)).toEqual(Array.from({ length: 20 }, (_, i) => 20 - i));
    // What each append returned is what was stored.
    for (const r of appended) expect(stored.releases.find((s) => s.revision === r.revision)?.id).toBe(r.id);
    expect(stored.fence).toEqual(fence);
    expect(stored.waiting).toEqual({ message: 'waiting for crds', since: 'now' });
    // The writers did collide: the API server refused stale writes, which were made again.
    expect(a.conflicts + b.conflicts).toBeGreaterThan(0);

    const cm = await configMap(a, ns(), ledgerName('web'));
    expect(cm.metadata.labels).toMatchObject({
      'app.kubernetes.io/component': 'ledger',
      'mooring.io/deployment': 'web',
    });
    // Lifting the fence removes it (the ledger's keys are replaced, not merged).
    await cli.setFence('web', undefined);
    expect((await agent.read('web')).fence).toBeUndefined();
    expect((await agent.read('web')).releases).toHaveLength(20);
  });

  it('a ledger of releases of 300 objects each stays within a ConfigMap: every release is recorded, the fence kept', async () => {
    const [a] = clients();
    const ledger = new Ledger(a, ns(), 50);
    const long = 'x'.repeat(60);
    const big = (n: number, result: Release['result']): Omit<Release, 'id'> => ({
      ...release('crowded', n),
      result,
      objects: Array.from({ length: 300 }, (_, i) => ({
        object: `Deployment ${ns()}/monitoring-${long}-${i}`,
        action: 'configured',
      })),
      versions: Array.from(
        { length: 200 },
        (_, i) => `ConfigMap dashboards-${long}-${i}-v${String(n).padStart(3, '0')}`,
      ),
      messages: ['Deployment monitoring: 1 of 1 replicas available'],
    });
    const heads = { commit: 'c3', images: {} };
    let fenced = 0;
    for (let n = 1; n <= 70; n++) {
      // Release 3 is a rollback that sets the fence; after 60 every release fails: the newest stable must stay.
      const result = n > 60 ? 'failed' : 'stable';
      const recorded =
        n === 3
          ? await ledger.append({ ...big(n, result), trigger: 'rollback' }, { since: 'then', heads })
          : await ledger.append(big(n, result));
      if (n === 3) fenced = recorded.id;
      expect(recorded.id).toBe(n);
    }
    // Read back by another client: the newest release whole, the fence's and the newest stable one's still there.
    const stored = await new Ledger(new KubeApi(clusterConfig()), ns()).read('crowded');
    const ids = stored.releases.map((r) => r.id);
    expect(ids[0]).toBe(70);
    expect(stored.releases[0]?.objects).toHaveLength(300);
    expect(ids).toContain(fenced);
    expect(ids).toContain(60);
    expect(stored.fence?.release).toBe(fenced);
    expect(stored.releases.find((r) => r.id === 60)?.versions).toHaveLength(200);
    expect(ids.length).toBeLessThan(50);
    expect(ids.length).toBeGreaterThan(5);
  });

  it('lifting a fence lifts only the fence it was decided on: one a rollback wrote since stays', async () => {
    const [a, b] = clients();
    const agent = new Ledger(a, ns());
    const cli = new Ledger(b, ns());
    const heads = { commit: 'c1', images: {} };
    await agent.append({ ...release('lifted', 1), trigger: 'rollback' }, { since: 'then', heads });
    const decided = (await agent.read('lifted')).fence;
    expect(decided?.release).toBe(1);
    // Meanwhile a rollback from the CLI sets a fence of its own.
    const rolled = await cli.append(
      { ...release('lifted', 2), trigger: 'rollback' },
      { since: 'now', heads },
    );
    // The agent lifts the fence it saw: the newer one stays.
    await agent.setFence('lifted', undefined, decided?.release);
    expect((await cli.read('lifted')).fence?.release).toBe(rolled.id);
    // Lifting the fence that is there lifts it.
    await agent.setFence('lifted', undefined, rolled.id);
    expect((await cli.read('lifted')).fence).toBeUndefined();
  });

  it('a stable rollback release and its fence are one write; a failed one sets no fence', async () => {
    const [a] = clients();
    const ledger = new Ledger(a, ns());
    await ledger.append(release('fenced', 1));
    const heads = { commit: 'c1', images: { web: 'sha256:aaaa' } };
    const since = new Date().toISOString();
    // Watched from a second client: no version of the ConfigMap holds the rollback's release without its fence.
    const versions: { releases: number; fence: boolean }[] = [];
    const controller = new AbortController();
    const watching = (async () => {
      const b = new KubeApi(clusterConfig());
      try {
        for (let i = 0; i < 200 && !controller.signal.aborted; i++) {
          const stored = await new Ledger(b, ns()).read('fenced');
          versions.push({ releases: stored.releases.length, fence: stored.fence !== undefined });
        }
      } finally {
        b.close();
      }
    })();
    const failed = await ledger.append({ ...release('fenced', 2), result: 'failed' }, { since, heads });
    expect((await ledger.read('fenced')).fence).toBeUndefined();
    const rolled = await ledger.append({ ...release('fenced', 3), trigger: 'rollback' }, { since, heads });
    controller.abort();
    await watching;
    expect(failed.id).toBe(2);
    expect((await ledger.read('fenced')).fence).toEqual({ release: rolled.id, since, heads });
    expect(versions.filter((v) => v.releases === 3 && !v.fence)).toEqual([]);
  });

  it('two writers of one inventory, 15 rounds each at once, lose no entry', async () => {
    const [a, b] = clients();
    const entry = (writer: string, n: number): InventoryEntry => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'shop',
      name: `${writer}-${n}`,
    });
    // As a sync does: read the inventory, then record what it applied with what it read.
    const writer = async (store: InventoryStore, name: string) => {
      for (let n = 0; n < 15; n++) {
        const previous = (await store.read('web')) ?? [];
        await store.record('web', unionOf([entry(name, n)], previous), previous);
      }
    };
    await Promise.all([writer(new InventoryStore(a, ns()), 'a'), writer(new InventoryStore(b, ns()), 'b')]);

    const stored = (await new InventoryStore(new KubeApi(clusterConfig()), ns()).read('web')) ?? [];
    const names = stored.map((e) => e.name).sort();
    const expected = ['a', 'b'].flatMap((w) => Array.from({ length: 15 }, (_, n) => `${w}-${n}`)).sort();
    expect(names).toEqual(expected);
    expect(a.conflicts + b.conflicts).toBeGreaterThan(0);
    const cm = await configMap(a, ns(), inventoryName('web'));
    expect(cm.metadata.labels?.['app.kubernetes.io/component']).toBe('inventory');
    expect(cm.metadata.annotations?.['mooring.io/owner']).toBe('web');
  });

  it('a single writer of an inventory gets exactly what it records: entries it dropped leave', async () => {
    const store = new InventoryStore(new KubeApi(clusterConfig()), ns());
    const e = (name: string): InventoryEntry => ({
      apiVersion: 'v1',
      kind: 'Service',
      namespace: 'shop',
      name,
    });
    await store.write('single', [e('one'), e('two')]);
    // Prune recorded what stays, knowing what it read: `two` is gone, not kept as another writer's.
    await store.record('single', [e('one')], [e('one'), e('two')]);
    expect((await store.read('single'))?.map((x) => x.name)).toEqual(['one']);
    // An entry another writer added since (`three`, not in what this writer knew) stays.
    await store.write('single', [e('one'), e('three')]);
    await store.record('single', [e('four')], [e('one')]);
    expect((await store.read('single'))?.map((x) => x.name).sort()).toEqual(['four', 'three']);
  });

  it("a sync's note goes with its inventory write, even of unchanged entries, stays through other writes, and leaves only by its own clear", async () => {
    const kube = new KubeApi(clusterConfig());
    const store = new InventoryStore(kube, ns());
    const e = (name: string): InventoryEntry => ({
      apiVersion: 'v1',
      kind: 'Service',
      namespace: 'shop',
      name,
    });
    const first = { id: 'aaaa0001', text: '{"id":"aaaa0001"}' };
    const second = { id: 'bbbb0002', text: '{"id":"bbbb0002"}' };
    // The agent's metadata watch of the namespace tells the note's id without a read (src/sync/attempts.ts).
    const watched = watchedClients(ns());
    const annotated = (id: string | undefined) =>
      eventually(`the watch shows the note ${id}`, async () =>
        watched.cache.annotations(CONFIGMAP_INFO, ns(), inventoryName('noted'))?.['mooring.io/attempt'] === id
          ? true
          : undefined,
      );
    await store.write('noted', [e('one')]);
    await annotated(undefined);
    const version = async () =>
      (await configMap(kube, ns(), inventoryName('noted'))).metadata.resourceVersion;
    const before = await version();
    // The same entries, with a note: one write, of the note.
    await store.record('noted', [e('one')], [e('one')], first);
    expect(await version()).not.toBe(before);
    expect((await store.readWithNote('noted'))?.note).toBe(first.text);
    await annotated(first.id);
    // The same entries and the same note: nothing written.
    const noted = await version();
    await store.record('noted', [e('one')], [e('one')], first);
    expect(await version()).toBe(noted);
    // Another writer's entries (a prune, a cut wave) keep the note.
    await store.record('noted', [e('one'), e('two')], [e('one')]);
    expect(await store.readWithNote('noted')).toEqual({
      entries: [e('one'), e('two')],
      note: first.text,
    });
    // A clear of another note changes nothing; its own takes it out, with its id, and keeps the entries.
    await store.clearNote('noted', second);
    expect((await store.readWithNote('noted'))?.note).toBe(first.text);
    await store.clearNote('noted', first);
    expect(await store.readWithNote('noted')).toEqual({ entries: [e('one'), e('two')], note: undefined });
    await annotated(undefined);
    expect(watched.cache.annotations(CONFIGMAP_INFO, ns(), 'mooring-inventory-none')).toBeNull();
    watched.close();
    kube.close();
  });

  it('two outboxes keeping and delivering at once keep both agents’ statuses', async () => {
    const [a, b] = clients();
    const quiet = pino({ level: 'silent' });
    const timers = { set: () => 0, clear: () => undefined };
    const delivered: string[] = [];
    const outbox = (api: KubeApi) =>
      new StatusOutbox({
        store: new ConfigMapOutboxStore(api, ns()),
        log: quiet,
        timers,
        deliver: async (e) => {
          delivered.push(e.commit);
          return true;
        },
      });
    const entry = outboxEntries('mooring/web', 3_600_000);
    const status = (commit: string, at: number) => entry(commit, at, { expiresAt: Date.now() + 3_600_000 });
    const first = outbox(a);
    const second = outbox(b);
    // Loaded (nothing stored yet), with the API's gate closed so that nothing is delivered while they keep.
    await Promise.all([first.start(), second.start()]);
    const failure = new TransientError('status API unreachable');
    first.failed('api', failure);
    second.failed('api', failure);
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => first.keep(status(`a${i}`, i))),
      ...Array.from({ length: 6 }, (_, i) => second.keep(status(`b${i}`, 100 + i))),
    ]);
    const store = new ConfigMapOutboxStore(new KubeApi(clusterConfig()), ns());
    expect((await store.read()).map((e) => e.commit).sort()).toEqual(
      ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'b0', 'b1', 'b2', 'b3', 'b4', 'b5'].sort(),
    );
    expect(a.conflicts + b.conflicts).toBeGreaterThan(0);

    // The first agent's API answers again: it delivers what it kept and drops just that from the ConfigMap, while
    // the second keeps one more.
    await first.posted('api');
    await Promise.all([first.flush(), second.keep(status('b6', 106))]);
    expect(delivered.sort()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5']);
    expect((await store.read()).map((e) => e.commit).sort()).toEqual([
      'b0',
      'b1',
      'b2',
      'b3',
      'b4',
      'b5',
      'b6',
    ]);
    await Promise.all([first.close(), second.close()]);
    const cm = await configMap(a, ns(), OUTBOX_NAME);
    expect(cm.metadata.labels?.['app.kubernetes.io/component']).toBe('status-outbox');
  });

  it('two control-map writers annotating at once keep every key', async () => {
    const [a, b] = clients();
    const cliA = new ControlMap(a, ns());
    const cliB = new ControlMap(b, ns());
    await Promise.all([
      ...Array.from({ length: 8 }, (_, i) =>
        cliA.annotate({ [`${SUSPEND_PREFIX}app-${i}`]: JSON.stringify({ since: 'now', by: 'alice' }) }),
      ),
      ...Array.from({ length: 8 }, (_, i) =>
        cliB.annotate({ [`${RECONCILE_PREFIX}app-${i}`]: `token-${i}` }),
      ),
    ]);
    const state = await new ControlMap(new KubeApi(clusterConfig()), ns()).read();
    expect([...state.suspended.keys()].sort()).toEqual(Array.from({ length: 8 }, (_, i) => `app-${i}`));
    expect(Object.fromEntries(state.requested)).toEqual(
      Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`app-${i}`, `token-${i}`])),
    );
    expect(a.conflicts + b.conflicts).toBeGreaterThan(0);
    // Removing keys at once with setting others: only the removed ones go.
    await Promise.all([
      cliA.annotate({ [`${SUSPEND_PREFIX}app-0`]: null, [`${SUSPEND_PREFIX}app-1`]: null }),
      cliB.annotate({ [`${RECONCILE_PREFIX}app-9`]: 'token-9' }),
    ]);
    const after = await cliA.read();
    expect([...after.suspended.keys()].sort()).toEqual(Array.from({ length: 6 }, (_, i) => `app-${i + 2}`));
    expect(after.requested.get('app-9')).toBe('token-9');
  });
});

describe('StateStore retry on conflict', () => {
  const ns = useNamespace('state-store');
  const labels = { 'app.kubernetes.io/managed-by': 'mooring', 'app.kubernetes.io/component': 'test' };
  const increment = (seen: string[]) => (current: { data: Record<string, string> } | undefined) => {
    seen.push(current?.data.n ?? 'absent');
    return { data: { ...current?.data, n: String(Number(current?.data.n ?? 0) + 1) }, annotations: {} };
  };

  it('re-reads and re-applies its change after another write came between its read and its write', async () => {
    const [a, b] = clients();
    const store = new StateStore(a, ns());
    const other = new StateStore(b, ns());
    const seen: string[] = [];
    expect((await store.update('counter', increment(seen), { action: 'count', labels }))?.data).toEqual({
      n: '1',
    });
    expect(seen).toEqual(['absent']);

    seen.length = 0;
    a.beforeWrite = async () => {
      await other.update('counter', (c) => ({ data: { ...c?.data, other: 'yes' }, annotations: {} }), {
        action: 'interfere',
        labels,
      });
    };
    const written = await store.update('counter', increment(seen), { action: 'count', labels });
    // Applied to what it read first, refused (409), applied again to what the other writer left.
    expect(seen).toEqual(['1', '1']);
    expect(a.conflicts).toBe(1);
    expect(written?.data).toEqual({ n: '2', other: 'yes' });
    const cm = await configMap(b, ns(), 'counter');
    expect(cm.data).toEqual({ n: '2', other: 'yes' });
    expect(cm.metadata.labels).toMatchObject(labels);
  });

  it('writes a ConfigMap it wrote last without reading it first, and a copy another writer made stale is refused', async () => {
    const [a, b] = clients();
    const store = new StateStore(a, ns());
    const other = new StateStore(b, ns());
    const seen: string[] = [];
    await store.update('remembered', increment(seen), { action: 'count', labels });
    const gets = a.gets;
    await store.update('remembered', increment(seen), { action: 'count', labels });
    await store.update('remembered', increment(seen), { action: 'count', labels });
    // Two writes, no read: each started from what the server answered to the write before.
    expect(a.gets).toBe(gets);
    expect(seen).toEqual(['absent', '1', '2']);
    // Another writer comes between: the remembered copy is stale, its write refused, the change made again.
    await other.update('remembered', (c) => ({ data: { ...c?.data, other: 'yes' }, annotations: {} }), {
      action: 'interfere',
      labels,
    });
    const written = await store.update('remembered', increment(seen), { action: 'count', labels });
    expect(a.conflicts).toBe(1);
    expect(seen).toEqual(['absent', '1', '2', '3', '3']);
    expect(written?.data).toEqual({ n: '4', other: 'yes' });
    // A change that writes nothing is not judged on a remembered copy: it reads what is stored.
    await other.update('remembered', (c) => ({ data: { ...c?.data, n: '9' }, annotations: {} }), {
      action: 'interfere',
      labels,
    });
    const unchanged = await store.update('remembered', () => undefined, { action: 'none', labels });
    expect(unchanged?.data).toEqual({ n: '9', other: 'yes' });
  });

  it('answers a read from its copy only while a watch holds that version; another writer’s change is read', async () => {
    const { a, b, namespace, close } = watchedClients(ns());
    try {
      const store = new StateStore(a, namespace);
      const other = new StateStore(b, namespace);
      await store.update('watched', () => ({ data: { n: '1' }, annotations: {} }), {
        action: 'seed',
        labels,
      });
      // Once the watch has seen the write, reads of any store on this client send no request.
      const watched = async (n: string) => {
        for (let i = 0; i < 100; i++) {
          const gets = a.gets;
          const read = await new StateStore(a, namespace).read('watched', 'read');
          if (a.gets === gets && read?.data.n === n) return;
          await new Promise((r) => setTimeout(r, 50));
        }
        throw new Error(`reads of n=${n} still sent requests`);
      };
      await watched('1');
      for (let i = 0; i < 5; i++) expect((await store.read('watched', 'read'))?.data).toEqual({ n: '1' });
      // Another client writes: as soon as the watch holds the new version, the old copy is never answered.
      await other.update('watched', () => ({ data: { n: '2' }, annotations: {} }), {
        action: 'other',
        labels,
      });
      await eventuallyRead(store, '2');
      const gets = a.gets;
      expect((await store.read('watched', 'read'))?.data).toEqual({ n: '2' });
      await watched('2');
      expect(a.gets - gets).toBeLessThanOrEqual(1);
    } finally {
      close();
    }
  });

  it('reads what it wrote and what the watch knows absent without a request; another writer is still read', async () => {
    const { a, b, namespace, cache, close } = watchedClients(ns());
    try {
      const store = new StateStore(a, namespace);
      const other = new StateStore(b, namespace);
      for (let i = 0; i < 100 && cache.watchedVersion(CONFIGMAP_INFO, namespace, 'missing') !== null; i++)
        await new Promise((r) => setTimeout(r, 50));
      // Listed and not there: read and created with no read first.
      let gets = a.gets;
      expect(await store.read('missing', 'read')).toBeUndefined();
      await store.update('fresh', () => ({ data: { n: '1' }, annotations: {} }), {
        action: 'create',
        labels,
      });
      // Its own writes, read back at once (the watch may not have seen them yet): the copy, with no request once the
      // watch has seen it exist (a create is read once if read before that).
      expect((await store.read('fresh', 'read'))?.data).toEqual({ n: '1' });
      await store.update('fresh', (now) => ({ data: { n: `${Number(now?.data.n) + 1}` }, annotations: {} }), {
        action: 'again',
        labels,
      });
      expect((await store.read('fresh', 'read'))?.data).toEqual({ n: '2' });
      expect((await store.read('fresh', 'read'))?.data).toEqual({ n: '2' });
      expect(a.gets - gets).toBeLessThanOrEqual(1);
      // Another client creates one and changes this one: once the watch holds them, each is read as written.
      await other.update('theirs', () => ({ data: { n: 'b' }, annotations: {} }), {
        action: 'theirs',
        labels,
      });
      await other.update('fresh', () => ({ data: { n: 'b' }, annotations: {} }), {
        action: 'theirs',
        labels,
      });
      await eventuallyRead(store, 'b', 'fresh');
      await eventuallyRead(store, 'b', 'theirs');
      // What another client deleted reads as gone once the watch says so.
      await b.request('DELETE', `/api/v1/namespaces/${namespace}/configmaps/theirs`);
      for (let i = 0; i < 100 && cache.watchedVersion(CONFIGMAP_INFO, namespace, 'theirs') !== null; i++)
        await new Promise((r) => setTimeout(r, 50));
      gets = a.gets;
      expect(await store.read('theirs', 'read')).toBeUndefined();
      expect(a.gets - gets).toBeLessThanOrEqual(1);
    } finally {
      close();
    }
  });

  it('a create that lost to another creator (409 AlreadyExists) is made again over what that one wrote', async () => {
    const [a, b] = clients();
    const store = new StateStore(a, ns());
    const other = new StateStore(b, ns());
    a.beforeWrite = async () => {
      await other.update('created-twice', () => ({ data: { other: 'yes' }, annotations: {} }), {
        action: 'interfere',
        labels,
      });
    };
    const seen: string[] = [];
    const written = await store.update('created-twice', increment(seen), { action: 'create', labels });
    expect(seen).toEqual(['absent', 'absent']);
    expect(a.conflicts).toBe(1);
    expect(written?.data).toEqual({ n: '1', other: 'yes' });
    expect((await configMap(a, ns(), 'created-twice')).data).toEqual({ n: '1', other: 'yes' });
  });

  it('a change that returns nothing writes nothing', async () => {
    const [a] = clients();
    const store = new StateStore(a, ns());
    await store.update('unchanged', () => ({ data: { n: '7' }, annotations: {} }), {
      action: 'seed',
      labels,
    });
    const before = await configMap(a, ns(), 'unchanged');
    const result = await store.update('unchanged', () => undefined, { action: 'none', labels });
    expect(result?.data).toEqual({ n: '7' });
    expect((await configMap(a, ns(), 'unchanged')).metadata).toEqual(before.metadata);
    expect(await store.update('never-created', () => undefined, { action: 'none', labels })).toBeUndefined();
    expect(await store.read('never-created', 'read')).toBeUndefined();
  });

  it('gives up after its bound of conflicting writes with a transient error that names the write', async () => {
    const [a, b] = clients();
    const store = new StateStore(a, ns(), { attempts: 3 });
    const other = new StateStore(b, ns());
    await store.update('contended', () => ({ data: { n: '0' }, annotations: {} }), {
      action: 'seed',
      labels,
    });
    let calls = 0;
    const failure = await store
      .update(
        'contended',
        (current) => {
          calls++;
          // Every attempt is overtaken by another writer before it is sent.
          a.beforeWrite = async () => {
            await other.update('contended', (c) => ({ data: { n: `${c?.data.n}+` }, annotations: {} }), {
              action: 'interfere',
              labels,
            });
          };
          return { data: { n: 'mine' }, annotations: current?.annotations ?? {} };
        },
        { action: 'write ConfigMap contended', labels },
      )
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TransientError);
    expect((failure as Error).message).toMatch(
      /^write ConfigMap contended \(3 conflicting writes in a row\): 409 /,
    );
    expect(calls).toBe(3);
    expect(a.conflicts).toBe(3);
    expect((await configMap(a, ns(), 'contended')).data).toEqual({ n: '0+++' });
  });
});

describe('a replace racing another writer', () => {
  const ns = useNamespace('replace-race');

  it('reads again and replaces again when a write lands between its read and its replace (409)', async () => {
    const [a, b] = clients();
    const discovery = new Discovery(a);
    const manifest = (value: string) => ({
      path: 'cm.yaml',
      text: `apiVersion: v1
kind: ConfigMap
metadata:
  name: replaced
  annotations: {strategy.spinnaker.io/replace: "true", strategy.spinnaker.io/versioned: "false"}
data: {a: "${value}"}
`,
    });
    const request = (value: string): DeployRequest => ({
      files: [manifest(value)],
      namespace: ns(),
      application: 'replaced',
      images: [],
      timeoutMs: 60_000,
      dryRun: false,
      fieldManager: 'mooring',
      concurrency: 4,
    });
    const first = await deploy({ api: a, discovery }, request('1'));
    expect(first.outcome, first.summary).toBe('stable');
    // Someone edits the object after mooring read it and before its replace is sent: the replace's
    // resourceVersion is stale, and the server says so.
    a.writeIs = (method, spec) => method === 'PUT' && spec?.query?.dryRun === undefined;
    a.beforeWrite = async () => {
      await b.request('PATCH', `/api/v1/namespaces/${ns()}/configmaps/replaced`, {
        body: { data: { byHand: 'yes' } },
        contentType: 'application/merge-patch+json',
      });
    };
    const second = await deploy({ api: a, discovery }, request('2'));
    expect(second.outcome, second.summary).toBe('stable');
    expect(a.conflicts).toBe(1);
    expect(second.applied.map((x) => x.action)).toEqual(['replaced']);
    // The replace that won is the whole manifest: the hand edit is gone, nothing of it merged.
    expect((await configMap(b, ns(), 'replaced')).data).toEqual({ a: '2' });

    // A burst of writes (a rollout's controllers write a Deployment's status several times in a row) overtakes
    // six replaces in a row: the replace is tried again, with pauses between, until it gets through.
    const overtake = (times: number) => {
      let left = times;
      const hook = async () => {
        await b.request('PATCH', `/api/v1/namespaces/${ns()}/configmaps/replaced`, {
          body: { metadata: { annotations: { burst: String(left) } } },
          contentType: 'application/merge-patch+json',
        });
        if (--left > 0) a.beforeWrite = hook;
      };
      a.conflicts = 0;
      a.beforeWrite = hook;
    };
    overtake(6);
    const third = await deploy({ api: a, discovery }, request('3'));
    expect(third.outcome, third.summary).toBe('stable');
    expect(a.conflicts).toBe(6);
    expect((await configMap(b, ns(), 'replaced')).data).toEqual({ a: '3' });

    // A writer that never stops: the deploy fails, transient, naming the object, after its bound of tries.
    overtake(1000);
    const fourth = await deploy({ api: a, discovery }, request('4'));
    a.beforeWrite = undefined;
    expect(fourth.outcome).toBe('error');
    expect(fourth.summary).toMatch(/transient.*cm\.yaml:1:1: ConfigMap \S+\/replaced: 409 /);
    expect(a.conflicts).toBe(8);
    expect((await configMap(b, ns(), 'replaced')).data).toEqual({ a: '3' });
  });
});
