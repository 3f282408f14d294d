// Lists of namespaces whose objects are many and large (src/kube/list-pages.ts): read in pages bounded in bytes, a
// page past its bound asked again for fewer objects, so that neither the version history's references (whole
// objects: the references are in their pod templates) nor any other list fails or fills memory when whoever can
// write in the namespace made its objects large. ControllerRevisions carry up to what etcd stores in `data`, and
// the version history reads them as a StatefulSet's template.
import { describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { ResponseTooLargeError } from '../../src/kube/api-errors.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { currentReferences, liveReferences } from '../../src/kube/history.ts';
import { eachListPage } from '../../src/kube/list-pages.ts';
import { compactEtcd } from './fault-helpers.ts';
import { clusterConfig, deployTo, manifestDir, useNamespace } from './helpers.ts';

const MiB = 1024 * 1024;

/** A ControllerRevision of about `bytes`, whose template refers to `config` when given. */
function revision(name: string, bytes: number, config?: string) {
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: { name },
    revision: 1,
    data: {
      spec: {
        template: {
          spec: {
            containers: [{ name: 'app', image: 'app:1' }],
            ...(config ? { volumes: [{ name: 'config', configMap: { name: config } }] } : {}),
          },
        },
      },
      filler: 'x'.repeat(bytes),
    },
  };
}

async function createRevisions(api: KubeApi, namespace: string, revisions: object[]): Promise<void> {
  const path = `/apis/apps/v1/namespaces/${namespace}/controllerrevisions`;
  // A few at a time: each is a write of up to a MiB and more.
  for (let i = 0; i < revisions.length; i += 4)
    await Promise.all(revisions.slice(i, i + 4).map((body) => api.request('POST', path, { body })));
}

describe('lists read in pages bounded in bytes', () => {
  const ns = useNamespace('large-lists');

  it('asks a page past its bound again for fewer objects, and keeps every object once, in order', async () => {
    const api = new KubeApi(clusterConfig());
    try {
      const names = Array.from({ length: 12 }, (_, i) => `big-${String(i).padStart(2, '0')}`);
      await createRevisions(
        api,
        ns(),
        names.map((name) => revision(name, MiB)),
      );
      const path = `/apis/apps/v1/namespaces/${ns()}/controllerrevisions`;
      const seen: string[] = [];
      const sizes: number[] = [];
      let requests = 0;
      const end = await eachListPage(
        api,
        path,
        { pageSize: 8, maxPageBytes: 3 * MiB, onRequest: () => requests++ },
        (items) => {
          sizes.push(items.length);
          for (const item of items) seen.push(item.metadata.name);
        },
      );
      expect(seen).toEqual(names);
      // 3 MiB holds two of these: each page is at most two, and pages past the bound were asked again.
      expect(Math.max(...sizes)).toBeLessThanOrEqual(2);
      expect(requests).toBeGreaterThan(sizes.length);
      expect(end.cut).toBe(false);
      expect(end.resourceVersion).toMatch(/^\d+$/);

      // A bound below one object: refused, naming the request, not read.
      await expect(
        eachListPage(api, path, { pageSize: 4, maxPageBytes: MiB / 2 }, () => undefined),
      ).rejects.toBeInstanceOf(ResponseTooLargeError);

      // maxPages: the list is cut, and says so.
      const cut: string[] = [];
      const partial = await eachListPage(api, path, { pageSize: 2, maxPages: 2 }, (items) => {
        for (const item of items) cut.push(item.metadata.name);
      });
      expect(partial.cut).toBe(true);
      expect(cut).toEqual(names.slice(0, 4));
    } finally {
      api.close();
    }
  }, 120_000);
});

describe('a list whose place expires before its end (410 Gone)', () => {
  const ns = useNamespace('expired-list');

  it('starts again, or goes on with the token for the rest, or fails, as the caller asks', async () => {
    const api = new KubeApi(clusterConfig());
    // Events are not held in the API server's watch cache: their lists are read from etcd, whose compaction is real.
    const path = `/api/v1/namespaces/${ns()}/events`;
    const event = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name },
      involvedObject: { kind: 'ConfigMap', name: 'anything', namespace: ns() },
      reason: 'Test',
      message: name,
      type: 'Normal',
    });
    try {
      const names = Array.from({ length: 30 }, (_, i) => `e-${String(i).padStart(2, '0')}`);
      for (const name of names) await api.request('POST', path, { body: event(name) });
      let added = 0;
      /** After the first page: a change, then etcd compacted past the version the list is read at. */
      const expire = async (pageNumber: number) => {
        if (pageNumber !== 1) return;
        await api.request('POST', path, { body: event(`z-${added++}`) });
        await compactEtcd();
      };

      let restarts = 0;
      let seen: string[] = [];
      let pageNumber = 0;
      await eachListPage(
        api,
        path,
        {
          pageSize: 10,
          restart: () => {
            restarts++;
            seen = [];
          },
        },
        async (items) => {
          for (const item of items) seen.push(item.metadata.name);
          await expire(++pageNumber);
        },
      );
      expect(restarts).toBe(1);
      // Started again after the change: one consistent list, each object once.
      expect(seen).toEqual([...names, 'z-0']);

      const rest: string[] = [];
      pageNumber = 0;
      await eachListPage(api, path, { pageSize: 10, inconsistent: true }, async (items) => {
        for (const item of items) rest.push(item.metadata.name);
        await expire(++pageNumber);
      });
      // Gone on from its place, as the namespace is now: no object twice, the one added meanwhile at its place.
      expect(rest).toEqual([...names, 'z-0', 'z-1']);

      pageNumber = 0;
      await expect(
        eachListPage(api, path, { pageSize: 10 }, async () => {
          await expire(++pageNumber);
        }),
      ).rejects.toMatchObject({ code: 410 });
    } finally {
      api.close();
    }
  }, 120_000);
});

describe('version history in a namespace of large objects', () => {
  const ns = useNamespace('large-history');
  const app = (n: number) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  annotations: {strategy.spinnaker.io/max-version-history: "1", strategy.spinnaker.io/versioned: "true"}
data: {N: "${n}"}
`;

  it('finds the one reference among 70 MiB of objects, keeps that version and collects the other', async () => {
    const api = new KubeApi(clusterConfig());
    try {
      // More than a single answer may be (64 MiB): read whole, the list failed and so did every deploy's history.
      const revisions = Array.from({ length: 56 }, (_, i) =>
        revision(`rev-${String(i).padStart(2, '0')}`, 1.25 * MiB, i === 41 ? 'app-config-v000' : undefined),
      );
      await createRevisions(api, ns(), revisions);
      const refs = await liveReferences(api, new Discovery(api), ns());
      expect(refs.get('ConfigMap/app-config-v000')).toBe(`ControllerRevision ${ns()}/rev-41`);

      for (const n of [0, 1, 2]) {
        const result = await deployTo(ns(), await manifestDir({ 'app.yaml': app(n) }));
        expect(result.code, result.stdout + result.stderr).toBe(0);
        if (n === 2) {
          expect(result.stdout).toContain(
            `ConfigMap ${ns()}/app-config-v000 kept: still referenced by ControllerRevision ${ns()}/rev-41`,
          );
          expect(result.stdout).toContain(`ConfigMap ${ns()}/app-config-v001 deleted (version history)`);
        }
      }

      // Syncs that ask together share reads: twelve at once are answered by at most two rounds of lists (one
      // begun by the first question, one for all that asked while it ran), not twelve.
      // The namespace has no Pods: each round lists them in one page.
      const lists = () =>
        api.requestStats.requests
          .filter((r) => r.verb === 'list' && r.resource === 'pods')
          .reduce((n, r) => n + r.count, 0);
      const before = lists();
      const discovery = new Discovery(api);
      const answers = await Promise.all(
        Array.from({ length: 12 }, () => currentReferences(api, discovery, ns())),
      );
      for (const answer of answers)
        expect(answer.get('ConfigMap/app-config-v000')).toBe(`ControllerRevision ${ns()}/rev-41`);
      const rounds = lists() - before;
      expect(rounds).toBeGreaterThanOrEqual(1);
      expect(rounds).toBeLessThanOrEqual(2);
    } finally {
      api.close();
    }
  }, 300_000);
});
