// A namespace mooring made for an environment is looked through live before it is deleted: an object mooring applied
// there that an annotation marks to be kept (helm's keep policy, Argo CD's Delete=false, ...) keeps the namespace,
// since deleting it would delete the object. Hundreds of objects of several kinds, objects of other writers marked
// alike (not mooring's to keep), and the API server failing a list with a 500, leaving it unanswered or cutting
// its answer (the namespace stays; nothing is guessed) or refusing one (a kind the identity may not list is passed
// over).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KubeApi } from '../../src/kube/api.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { Discovery } from '../../src/kube/discovery.ts';
import { createNamespace, deleteCreatedNamespace, markedToKeep } from '../../src/kube/namespace.ts';
import { proxiedServer } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
import { kubectl } from './helpers.ts';

const COUNT = 300;

describe('the look through a namespace before it is deleted', () => {
  const cleanup = useCleanups();

  it('finds what mooring applied and marked among hundreds of objects, and a failing list keeps the namespace', async () => {
    const bed = await proxiedServer(cleanup);
    const namespace = `keep-look-${randomBytes(3).toString('hex')}`;
    cleanup(async () => {
      await kubectl('delete', 'namespace', namespace, '--wait=false');
    });
    await createNamespace(bed.direct, namespace);
    const apply = (path: string, body: object, manager = 'mooring') =>
      bed.direct.request('PATCH', path, {
        query: { fieldManager: manager, force: true },
        contentType: 'application/apply-patch+yaml',
        body,
      });
    const configMaps = `/api/v1/namespaces/${namespace}/configmaps`;
    for (let i = 0; i < COUNT; i += 50)
      await Promise.all(
        Array.from({ length: Math.min(50, COUNT - i) }, (_, j) => {
          const name = `cfg-${String(i + j).padStart(3, '0')}`;
          return apply(`${configMaps}/${name}`, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name },
            data: { n: String(i + j) },
          });
        }),
      );
    await apply(`${configMaps}/claims`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'claims', annotations: { 'helm.sh/resource-policy': 'keep' } },
    });
    await apply(`/api/v1/namespaces/${namespace}/secrets/token`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'token',
        annotations: { 'argocd.argoproj.io/sync-options': 'ServerSideApply=true,Delete=false' },
      },
      stringData: { t: 'x' },
    });
    await apply(`/apis/apps/v1/namespaces/${namespace}/deployments/web`, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', annotations: { 'kustomize.toolkit.fluxcd.io/prune': 'disabled' } },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: 'registry.invalid/web:1' }] },
        },
      },
    });
    // Marked alike but written by another tool, and marked only for a sync's prune (kept: Prune=false) or not at all.
    await apply(
      `${configMaps}/theirs`,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'theirs', annotations: { 'helm.sh/resource-policy': 'keep' } },
      },
      'kubectl',
    );
    await apply(`${configMaps}/pruned-only`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'pruned-only', annotations: { 'helm.sh/resource-policy': 'delete' } },
    });

    expect(await markedToKeep(bed.api, bed.discovery, namespace, 'mooring')).toEqual([
      { object: `ConfigMap ${namespace}/claims`, reason: 'helm.sh/resource-policy: keep' },
      { object: `Deployment ${namespace}/web`, reason: 'kustomize.toolkit.fluxcd.io/prune: disabled' },
      {
        object: `Secret ${namespace}/token`,
        reason: 'argocd.argoproj.io/sync-options: Delete=false',
      },
    ]);
    // Each namespaced kind listed once, metadata only.
    const lists = bed.proxy.requests.filter(
      (r) =>
        r.method === 'GET' && (r.path.split('?')[0] ?? '').endsWith(`/namespaces/${namespace}/configmaps`),
    );
    expect(lists.length).toBe(1);

    // The Secrets' list fails: nothing is guessed, the namespace is not deleted, and the error names the list.
    bed.proxy.set(
      { kind: 'status', status: 500, body: 'etcdserver: request timed out' },
      { match: (r) => r.method === 'GET' && r.path.includes(`/namespaces/${namespace}/secrets`) },
    );
    await expect(
      deleteCreatedNamespace(bed.api, namespace, { discovery: bed.discovery, fieldManager: 'mooring' }),
    ).rejects.toThrow(`list Secrets in namespace ${namespace}`);
    expect((await kubectl('get', 'namespace', namespace)).code).toBe(0);

    // The server stops answering the list (hung), then cuts its answer: a client of short patience gives up within
    // its timeout and retries, the namespace stays, and the error names the list.
    const impatient = new KubeApi(loadKubeConfig({ kubeconfig: bed.kubeconfig }), {
      requestTimeoutMs: 2000,
      retryForMs: 3000,
    });
    cleanup(() => impatient.close());
    for (const fault of [{ kind: 'hang' }, { kind: 'reset', when: 'response' }] as const) {
      bed.proxy.set(fault, {
        match: (r) => r.method === 'GET' && r.path.includes(`/namespaces/${namespace}/secrets`),
      });
      await expect(
        deleteCreatedNamespace(impatient, namespace, {
          discovery: new Discovery(impatient),
          fieldManager: 'mooring',
        }),
        fault.kind,
      ).rejects.toThrow(`list Secrets in namespace ${namespace}`);
      expect((await kubectl('get', 'namespace', namespace)).code, fault.kind).toBe(0);
    }

    // Refused (the identity may not list Secrets): passed over; the others still keep the namespace.
    bed.proxy.set(
      {
        kind: 'status',
        status: 403,
        body: JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden' }),
      },
      { match: (r) => r.method === 'GET' && r.path.includes(`/namespaces/${namespace}/secrets`) },
    );
    const kept = await deleteCreatedNamespace(bed.api, namespace, {
      discovery: bed.discovery,
      fieldManager: 'mooring',
    });
    expect(kept).toEqual({
      done: 'kept',
      marked: [
        { object: `ConfigMap ${namespace}/claims`, reason: 'helm.sh/resource-policy: keep' },
        { object: `Deployment ${namespace}/web`, reason: 'kustomize.toolkit.fluxcd.io/prune: disabled' },
      ],
    });
    bed.proxy.set({ kind: 'pass' });

    // The marks taken off: the namespace goes.
    for (const [kind, name] of [
      ['configmap', 'claims'],
      ['secret', 'token'],
      ['deployment', 'web'],
    ] as const)
      expect((await kubectl('delete', kind, name, '-n', namespace)).code).toBe(0);
    expect(
      await deleteCreatedNamespace(bed.api, namespace, { discovery: bed.discovery, fieldManager: 'mooring' }),
    ).toEqual({ done: 'deleted' });
    const gone = await kubectl('get', 'namespace', namespace, '-o', 'jsonpath={.metadata.deletionTimestamp}');
    expect(gone.code !== 0 || gone.stdout.trim() !== '').toBe(true);
  }, 240_000);
});
