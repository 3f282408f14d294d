// What prune reads to find the versions of the versioned objects an application no longer renders: each kind and
// namespace listed once (metadata only), not once per versioned object. Removing an application of 200 versioned
// ConfigMaps from a namespace that holds them read the namespace's ConfigMaps 200 times. And the objects it may
// delete are read a few at once, not one after the other, the plan in the inventory's order still; and deleted a
// few at once within a phase, a phase after the one before has been answered.
import { afterEach, describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import type { InventoryEntry } from '../../src/kube/inventory.ts';
import { executePrune, pruneTargets } from '../../src/kube/prune.ts';
import { proxiedServer } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
import { clusterConfig, useNamespace } from './helpers.ts';

const COUNT = 200;

describe('prune of many versioned objects', () => {
  const ns = useNamespace('prune-reads');
  const cleanup = useCleanups(afterEach);

  it('lists each kind and namespace once, and plans every version of every artifact', async () => {
    const api = new KubeApi(clusterConfig());
    try {
      const path = `/api/v1/namespaces/${ns()}/configmaps`;
      // Two versions of each artifact, applied by mooring's field manager; and objects of others beside them.
      const artifacts = Array.from({ length: COUNT }, (_, i) => `cfg-${String(i).padStart(3, '0')}`);
      const objects = artifacts.flatMap((artifact) =>
        ['v000', 'v001'].map((v) => ({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: {
            name: `${artifact}-${v}`,
            annotations: { 'artifact.spinnaker.io/name': artifact, 'artifact.spinnaker.io/version': v },
          },
          data: { v },
        })),
      );
      for (let i = 0; i < objects.length; i += 40)
        await Promise.all(
          objects.slice(i, i + 40).map((body) =>
            api.request('PATCH', `${path}/${body.metadata.name}`, {
              query: { fieldManager: 'mooring', force: true },
              contentType: 'application/apply-patch+yaml',
              body,
            }),
          ),
        );
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          api.request('POST', path, { body: { metadata: { name: `other-${i}` }, data: { x: '1' } } }),
        ),
      );
      const previous: InventoryEntry[] = artifacts.map((artifact) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: ns(),
        name: `${artifact}-v001`,
        artifact,
      }));
      const lists = () =>
        api.requestStats.requests
          .filter((r) => r.verb === 'list' && r.resource === 'configmaps')
          .reduce((n, r) => n + r.count, 0);
      const discovery = new Discovery(api);
      await discovery.resource('v1', 'ConfigMap');
      const before = lists();
      const plan = await pruneTargets(api, discovery, {
        owner: 'gone',
        previous,
        desired: [],
        others: async () => new Map(),
        fieldManager: 'mooring',
      });
      // 450 ConfigMaps: one page.
      expect(lists() - before).toBe(1);
      expect(plan.kept).toEqual([]);
      expect(plan.targets.map((t) => t.object).sort()).toEqual(
        artifacts.flatMap((a) => [`ConfigMap ${ns()}/${a}-v000`, `ConfigMap ${ns()}/${a}-v001`]).sort(),
      );
    } finally {
      api.close();
    }
  }, 180_000);

  it('reads the objects it may delete a few at once, and plans them in the inventory order', async () => {
    const { proxy, api, direct } = await proxiedServer(cleanup);
    const path = `/api/v1/namespaces/${ns()}/configmaps`;
    const names = Array.from({ length: 40 }, (_, i) => `plain-${String(39 - i).padStart(2, '0')}`);
    await Promise.all(
      names.map((name) =>
        direct.request('PATCH', `${path}/${name}`, {
          query: { fieldManager: 'mooring', force: true },
          contentType: 'application/apply-patch+yaml',
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { x: '1' } },
        }),
      ),
    );
    const previous: InventoryEntry[] = names.map((name) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: ns(),
      name,
    }));
    const discovery = new Discovery(api);
    await discovery.resource('v1', 'ConfigMap');
    // Every read of one of them is held at the proxy: how many are held at once is how many prune sends at once.
    proxy.set({ kind: 'hang' }, { match: (r) => r.method === 'GET' && r.path.startsWith(`${path}/plain-`) });
    const planning = pruneTargets(api, discovery, {
      owner: 'gone',
      previous,
      desired: [],
      others: async () => new Map(),
      fieldManager: 'mooring',
    });
    await expect.poll(() => proxy.hanging, { timeout: 20_000 }).toBe(8);
    proxy.pass();
    const plan = await planning;
    expect(plan.kept).toEqual([]);
    expect(plan.targets.map((t) => t.object)).toEqual(names.map((name) => `ConfigMap ${ns()}/${name}`));
  }, 120_000);

  it('deletes a few at once within a phase, phase after phase, and a refused delete stops nothing', async () => {
    const { proxy, api, direct } = await proxiedServer(cleanup);
    const apply = (path: string, body: { kind: string; metadata: { name: string } }) =>
      direct.request('PATCH', `${path}/${body.metadata.name}`, {
        query: { fieldManager: 'mooring', force: true },
        contentType: 'application/apply-patch+yaml',
        body: { apiVersion: 'v1', ...body },
      });
    const cms = `/api/v1/namespaces/${ns()}/configmaps`;
    const svcs = `/api/v1/namespaces/${ns()}/services`;
    const configs = Array.from({ length: 20 }, (_, i) => `cfg-${String(i).padStart(2, '0')}`);
    const services = Array.from({ length: 12 }, (_, i) => `svc-${String(i).padStart(2, '0')}`);
    await Promise.all([
      ...configs.map((name) =>
        apply(cms, { kind: 'ConfigMap', metadata: { name }, data: { x: '1' } } as never),
      ),
      ...services.map((name) =>
        apply(svcs, {
          kind: 'Service',
          metadata: { name },
          spec: { ports: [{ port: 80, protocol: 'TCP' }] },
        } as never),
      ),
    ]);
    // The inventory lists the ConfigMaps first: the plan deletes the Services (a later phase) first.
    const previous: InventoryEntry[] = [
      ...configs.map((name) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns(), name })),
      ...services.map((name) => ({ apiVersion: 'v1', kind: 'Service', namespace: ns(), name })),
    ];
    const discovery = new Discovery(api);
    const plan = await pruneTargets(api, discovery, {
      owner: 'gone',
      previous,
      desired: [],
      others: async () => new Map(),
      fieldManager: 'mooring',
    });
    const planned = [
      ...services.map((name) => `Service ${ns()}/${name}`),
      ...configs.map((name) => `ConfigMap ${ns()}/${name}`),
    ];
    expect(plan.targets.map((t) => t.object)).toEqual(planned);
    const deletes = () => proxy.requests.filter((r) => r.method === 'DELETE');
    proxy.set({ kind: 'hang' }, { match: (r) => r.method === 'DELETE' });
    const pruning = executePrune(api, plan);
    await expect.poll(() => proxy.hanging, { timeout: 20_000 }).toBe(8);
    // Held: eight Services, and no ConfigMap while a Service's delete is unanswered.
    expect(deletes().every((r) => r.path.startsWith(`${svcs}/`))).toBe(true);
    // The rest pass, but one ConfigMap's delete is refused (403 is not retried).
    proxy.set(
      {
        kind: 'status',
        status: 403,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'Forbidden',
          code: 403,
          message: 'configmaps "cfg-07" is forbidden',
        }),
      },
      { match: (r) => r.method === 'DELETE' && r.path.startsWith(`${cms}/cfg-07`) },
    );
    const result = await pruning;
    const order = deletes().map((r) => (r.path.startsWith(`${svcs}/`) ? 'Service' : 'ConfigMap'));
    expect(order.lastIndexOf('Service')).toBeLessThan(order.indexOf('ConfigMap'));
    expect(order.filter((kind) => kind === 'ConfigMap')).toHaveLength(20);
    expect(result.deleted).toEqual(planned.filter((o) => !o.endsWith('/cfg-07')));
    expect(result.failed.map((f) => f.target.object)).toEqual([`ConfigMap ${ns()}/cfg-07`]);
    expect(String(result.failed[0]?.error)).toContain('cfg-07');
    const left = (await direct.request<{ items: { metadata: { name: string } }[] }>('GET', cms)).items.map(
      (o) => o.metadata.name,
    );
    expect(left.filter((name) => configs.includes(name))).toEqual(['cfg-07']);
  }, 120_000);
});
