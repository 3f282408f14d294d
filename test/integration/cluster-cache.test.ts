// The cluster cache against the real API server: a watch whose resourceVersion has been compacted away in
// etcd gets 410 Gone and the informer lists again without losing its subscribers; deletions reach them; a
// type that cannot be watched fails its subscribers at once instead of retrying forever; a stream the server
// stops answering on (frozen with SIGSTOP) is given up and replaced.

import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KubeApi, METADATA_LIST } from '../../src/kube/api.ts';
import { ClusterCache } from '../../src/kube/cache.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import type { KubeObject } from '../../src/render/manifest.ts';
import { deploy } from '../../src/sync/deploy.ts';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import { compactEtcd, freezeApiServer } from './fault-helpers.ts';
import { testbed, useNamespace, writeKubeconfig } from './helpers.ts';

function client() {
  const api = new KubeApi(loadKubeConfig({ kubeconfig: testbed().kube.kubeconfig }));
  return { api, discovery: new Discovery(api) };
}

describe('the cluster cache', () => {
  const ns = useNamespace('cache');

  it('re-lists after 410 Gone and keeps delivering changes and deletions', async () => {
    const { api, discovery } = client();
    const cache = new ClusterCache(api);
    // Events are not held in the API server's watch cache: their watches go to etcd, whose compaction is real.
    const info = await discovery.resource('v1', 'Event');
    const path = `/api/v1/namespaces/${ns()}/events`;
    const event = (name: string, message: string) => ({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: ns() },
      involvedObject: { kind: 'ConfigMap', name: 'anything', namespace: ns() },
      reason: 'Test',
      message,
      type: 'Normal',
    });
    const controller = new AbortController();
    try {
      await api.request('POST', path, { body: event('first', 'one') });
      const seen: (string | undefined)[] = [];
      const done = cache.subscribe(
        info,
        ns(),
        'first',
        (o: KubeObject | undefined) => seen.push(o ? String(o.message) : undefined),
        controller.signal,
      ).done;
      await expect.poll(() => seen.at(-1), { timeout: 20_000 }).toBe('one');
      expect(cache.lists).toBe(1);

      await compactEtcd();
      cache.rewatch('1');
      await expect.poll(() => cache.lists, { timeout: 30_000 }).toBe(2);

      await api.request('PATCH', `${path}/first`, {
        body: { message: 'two' },
        contentType: 'application/merge-patch+json',
      });
      await expect.poll(() => seen.at(-1), { timeout: 20_000 }).toBe('two');
      await api.request('DELETE', `${path}/first`);
      await expect.poll(() => seen.length > 0 && seen.at(-1) === undefined, { timeout: 20_000 }).toBe(true);
      controller.abort();
      await done;
      expect(cache.watched).toBe(0);
    } finally {
      controller.abort();
      cache.close();
      api.close();
    }
  });

  it('fails the subscribers of a type it may not watch, naming it, instead of retrying forever', async () => {
    const { api, discovery } = client();
    const info = await discovery.resource('v1', 'ConfigMap');
    // A token the API server does not know: 401 on the list.
    const { server } = testbed().kube;
    const known = parse(await readFile(testbed().kube.kubeconfig, 'utf8')) as {
      clusters: { cluster: Record<string, unknown> }[];
    };
    const kubeconfig = await writeKubeconfig(known.clusters[0]?.cluster ?? { server }, {
      token: 'not-a-valid-token',
    });
    const stranger = new KubeApi(loadKubeConfig({ kubeconfig }));
    const cache = new ClusterCache(stranger);
    const controller = new AbortController();
    try {
      const done = cache.subscribe(info, ns(), 'anything', () => {}, controller.signal).done;
      await expect(done).rejects.toThrow(/watch ConfigMaps in namespace .*: 401/);
    } finally {
      controller.abort();
      cache.close();
      stranger.close();
      api.close();
    }
  });

  it('gives up a stream the API server stopped answering on, and recovers when it answers again', async () => {
    const { api, discovery } = client();
    // Short server-side timeouts, so that "silent for too long" is seconds here, not minutes.
    const cache = new ClusterCache(api, { watchSeconds: 1, idleMarginSeconds: 2, maxBackoffMs: 1000 });
    const info = await discovery.resource('v1', 'ConfigMap');
    const path = `/api/v1/namespaces/${ns()}/configmaps`;
    const controller = new AbortController();
    try {
      await api.request('POST', path, { body: { metadata: { name: 'frozen', labels: { v: '1' } } } });
      const seen: string[] = [];
      void cache.subscribe(
        info,
        ns(),
        'frozen',
        (o) => o && seen.push(String(o.metadata.labels?.v)),
        controller.signal,
      ).done;
      await expect.poll(() => seen.at(-1), { timeout: 20_000 }).toBe('1');
      // Frozen for longer than a stream may stay silent (1 to 2 s of server timeout, plus 2 s).
      await freezeApiServer(6_000);
      await api.request('PATCH', `${path}/frozen`, {
        body: { metadata: { labels: { v: '2' } } },
        contentType: 'application/merge-patch+json',
      });
      await expect.poll(() => seen.at(-1), { timeout: 30_000 }).toBe('2');
      // The silent stream was given up (and replaced), not waited on until the server woke up.
      expect(cache.silentStreams).toBeGreaterThanOrEqual(1);
    } finally {
      controller.abort();
      cache.close();
      api.close();
    }
  });

  it('reads Secrets as metadata only, in version lookups and in stability watches', async () => {
    const { api, discovery } = client();
    const cache = new ClusterCache(api);
    const info = await discovery.resource('v1', 'Secret');
    const path = `/api/v1/namespaces/${ns()}/secrets`;
    const controller = new AbortController();
    try {
      await api.request('POST', path, {
        body: { metadata: { name: 'quiet' }, stringData: { pin: 'do-not-read' } },
      });
      // The list the version lookup makes: metadata only, although the same request without it has the data.
      const full = await api.request<{ items: { data?: unknown }[] }>('GET', path);
      expect(full.items.some((i) => i.data !== undefined)).toBe(true);
      const meta = await api.request<{ kind: string; items: { data?: unknown }[] }>('GET', path, {
        accept: METADATA_LIST,
      });
      expect(meta.kind).toBe('PartialObjectMetadataList');
      expect(meta.items.every((i) => i.data === undefined)).toBe(true);

      // The stability watch of a Secret: its verdict needs no content, and none arrives.
      const seen: KubeObject[] = [];
      void cache.subscribe(info, ns(), 'quiet', (o) => o && seen.push(o), controller.signal, {
        metadataOnly: true,
      }).done;
      await expect.poll(() => seen.length, { timeout: 20_000 }).toBeGreaterThan(0);
      expect(seen[0]?.kind).toBe('Secret');
      // A Secret read whole has `type: Opaque`; PartialObjectMetadata has no such field.
      expect((seen[0] as { type?: string }).type).toBeUndefined();
      expect(JSON.stringify(seen)).not.toContain('"data"');
      expect(JSON.stringify(seen)).not.toContain(Buffer.from('do-not-read').toString('base64'));
    } finally {
      controller.abort();
      cache.close();
      api.close();
    }
  });

  it("answers a type's list only once it has shown every write the agent made there (read your writes)", async () => {
    const { api, discovery } = client();
    const cache = new ClusterCache(api);
    const info = await discovery.resource('v1', 'ConfigMap');
    const path = `/api/v1/namespaces/${ns()}/configmaps`;
    const controller = new AbortController();
    try {
      // Not watched: nothing to answer from.
      expect(cache.listedObjects(info, ns())).toBeUndefined();
      let heard = 0;
      void cache.subscribe(info, ns(), 'anything', () => heard++, controller.signal, { metadataOnly: true })
        .done;
      await expect.poll(() => heard, { timeout: 20_000 }).toBeGreaterThan(0);
      const before = cache.listedObjects(info, ns());
      expect(before).toBeDefined();
      // Twenty versions written in a row, each noted as the agent notes its writes: every answer the cache gives
      // from then on holds every one written before it asked (or it gives none, and the server is asked).
      const written: string[] = [];
      for (let i = 0; i < 20; i++) {
        const name = `settings-v${String(i).padStart(3, '0')}`;
        const answer = await api.request<KubeObject>('POST', path, {
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { i: String(i) } },
        });
        cache.noteWrite({ ...answer, apiVersion: 'v1', kind: 'ConfigMap' });
        written.push(name);
        const held = cache.listedObjects(info, ns());
        if (held === undefined) continue;
        const names = new Set(held.map((o) => o.metadata.name));
        for (const w of written) expect(names.has(w), `${w} missing from the cache's answer`).toBe(true);
      }
      // Once the watch has shown them, the cache answers again, with all of them.
      await expect
        .poll(() => cache.listedObjects(info, ns())?.map((o) => o.metadata.name), { timeout: 20_000 })
        .toEqual(expect.arrayContaining(written));
      // A reader of one artifact's versions waits only for the writes of those: another artifact's write not yet
      // shown (noted here at a version the watch will never show) holds up the whole list, not that reader.
      cache.noteWrite({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'flags-v000', namespace: ns(), resourceVersion: '1' },
      });
      expect(cache.listedObjects(info, ns())).toBeUndefined();
      expect(cache.listedObjects(info, ns(), (name) => name.startsWith('flags-v'))).toBeUndefined();
      expect(
        cache.listedObjects(info, ns(), (name) => name.startsWith('settings-v'))?.map((o) => o.metadata.name),
      ).toEqual(expect.arrayContaining(written));
    } finally {
      controller.abort();
      cache.close();
      api.close();
    }
  });

  it("answers a selection by annotation value or by name from its indexes, current through the watch's adds, changes and deletes", async () => {
    const { api, discovery } = client();
    const cache = new ClusterCache(api);
    const info = await discovery.resource('v1', 'ConfigMap');
    const path = `/api/v1/namespaces/${ns()}/configmaps`;
    const key = 'artifact.spinnaker.io/name';
    const controller = new AbortController();
    const configMap = (name: string, artifact?: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, ...(artifact === undefined ? {} : { annotations: { [key]: artifact } }) },
    });
    // The selection, and what the whole list says it should be, by the server's own list.
    const selected = (values: string[]) =>
      cache
        .listedObjects(info, ns(), undefined, { annotation: key, values })
        ?.map((o) => o.metadata.name)
        .sort();
    const expected = async (values: string[]) => {
      const list = await api.request<{ items: KubeObject[] }>('GET', path, { accept: METADATA_LIST });
      return list.items
        .filter((o) => values.includes(o.metadata.annotations?.[key] ?? '\0'))
        .map((o) => o.metadata.name)
        .sort();
    };
    try {
      // 300 objects of 30 artifacts, 20 unannotated, before the watch: the index is made from the list.
      await Promise.all(
        Array.from({ length: 320 }, (_, i) =>
          api.request('POST', path, {
            body: configMap(`cm-${i}`, i < 300 ? `app-${i % 30}` : undefined),
          }),
        ),
      );
      void cache.subscribe(info, ns(), 'anything', () => {}, controller.signal, { metadataOnly: true }).done;
      // The namespace is the file's: the other tests' objects are there too.
      await expect
        .poll(
          () => cache.listedObjects(info, ns())?.filter((o) => o.metadata.name.startsWith('cm-')).length,
          {
            timeout: 20_000,
          },
        )
        .toBe(320);
      expect(selected(['app-3', 'app-7'])).toEqual(await expected(['app-3', 'app-7']));
      expect(selected(['app-3', 'app-7'])).toHaveLength(20);
      expect(selected(['nothing'])).toEqual([]);
      // By name: those held, in the order asked; a name not held is left out.
      expect(
        cache
          .listedObjects(info, ns(), undefined, { names: ['cm-5', 'absent', 'cm-1'] })
          ?.map((o) => o.metadata.name),
      ).toEqual(['cm-5', 'cm-1']);
      // Changes through the watch, with the index made: an annotation moved to another artifact, one taken off,
      // one put on, objects deleted and added.
      await api.request('PATCH', `${path}/cm-3`, {
        body: { metadata: { annotations: { [key]: 'app-7' } } },
        contentType: 'application/merge-patch+json',
      });
      await api.request('PATCH', `${path}/cm-33`, {
        body: { metadata: { annotations: { [key]: null } } },
        contentType: 'application/merge-patch+json',
      });
      await api.request('PATCH', `${path}/cm-310`, {
        body: { metadata: { annotations: { [key]: 'app-3' } } },
        contentType: 'application/merge-patch+json',
      });
      await api.request('DELETE', `${path}/cm-63`);
      await api.request('POST', path, { body: configMap('cm-new', 'app-3') });
      const want = await expected(['app-3', 'app-7']);
      expect(want).toEqual(expect.arrayContaining(['cm-3', 'cm-310', 'cm-new']));
      expect(want).not.toContain('cm-33');
      expect(want).not.toContain('cm-63');
      await expect.poll(() => selected(['app-3', 'app-7']), { timeout: 20_000 }).toEqual(want);
      expect(selected(['app-3'])).toEqual(await expected(['app-3']));
    } finally {
      controller.abort();
      cache.close();
      api.close();
    }
  });

  it('ends a wait during which the API server stopped answering as unreachable, with the last verdict and why it is stale', async () => {
    const { api, discovery } = client();
    const cache = new ClusterCache(api, { watchSeconds: 1, idleMarginSeconds: 2, maxBackoffMs: 1000 });
    let frozen: Promise<void> | undefined;
    try {
      const report = await deploy(
        {
          api,
          discovery,
          cache,
          // Once applied and waited on: the server freezes for longer than the wait has left.
          onEvent: (event) => {
            if (event.type === 'progress') frozen ??= freezeApiServer(12_000);
          },
        },
        {
          files: [
            {
              path: 'stuck.yaml',
              text: `apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}, annotations: {${BEHAVIOR}: never-ready}}
    spec: {containers: [{name: app, image: "app:1"}]}
`,
            },
          ],
          namespace: ns(),
          application: 'stuck',
          images: [],
          timeoutMs: 9_000,
          dryRun: false,
        },
      );
      // The server still hangs when the wait runs out (its warning Events are read once more, and get no answer):
      // the time-out says nothing of the commit, so the outcome is the agent's error, naming the last verdict seen.
      expect(report.outcome).toBe('error');
      expect(report.summary).toContain('API server unreachable since');
      expect(report.summary).toContain(`last seen: Deployment ${ns()}/stuck`);
      expect(report.summary).toMatch(
        /since then cannot watch Deployments in namespace .*: WATCH .* no data for/,
      );
    } finally {
      await frozen;
      cache.close();
      api.close();
    }
  });
});
