// Objects whose prerequisites arrive in the same set: a Namespace and a CustomResourceDefinition are applied
// (and the CRD waited on until Established) before what lives in them, in one deploy.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { proxiedServer, startMooring } from './fault-helpers.ts';
import { useCleanups } from './faults-support.ts';
import { crdManifest, deployTo, eventually, kubeConfig, kubectl, manifestDir, mooring } from './helpers.ts';

/** The API server's discovery of `path` answers 404 through the bed's proxy (`times` times, or always). */
function discoveryNotFound(
  bed: Awaited<ReturnType<typeof proxiedServer>>,
  path: string,
  times?: number,
): void {
  bed.proxy.set(
    {
      kind: 'status',
      status: 404,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
      }),
    },
    { match: (r) => r.method === 'GET' && r.path === path, ...(times !== undefined ? { times } : {}) },
  );
}

describe('apply order', () => {
  const suffix = Date.now().toString(36);
  const namespace = `fresh-${suffix}`;
  const group = `t${suffix}.mooring.test`;
  const lagging = `l${suffix}.mooring.test`;
  const unserved = `u${suffix}.mooring.test`;
  const cleanup = useCleanups();
  afterAll(async () => {
    await kubectl('delete', 'namespace', namespace, '--wait=false');
    await kubectl(
      'delete',
      'crd',
      `widgets.${group}`,
      `widgets.${lagging}`,
      `widgets.${unserved}`,
      '--wait=false',
      '--ignore-not-found',
    );
  });

  it('waits, after a CRD is Established, until discovery serves its kind (a busy server lags)', async () => {
    // The API server's discovery of the new group answers 404 six more times after the CRD is established, as a
    // busy kube-apiserver's may for some seconds: the custom resource is dry-run and written once it is served.
    const bed = await proxiedServer(cleanup);
    const path = `/apis/${lagging}/v1`;
    discoveryNotFound(bed, path, 6);
    const dir = await manifestDir({
      'crd.yaml': crdManifest(lagging, 'widgets', 'Widget'),
      'widget.yaml': `apiVersion: ${lagging}/v1\nkind: Widget\nmetadata: {name: late}\nspec: {size: 2}\n`,
    });
    const result = await mooring(
      'deploy',
      dir,
      '--kubeconfig',
      bed.kubeconfig,
      '-n',
      'default',
      '--timeout',
      '2m',
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`widget.${lagging}/late created`);
    const discovered = bed.proxy.requests.filter((r) => r.method === 'GET' && r.path === path);
    expect(discovered.filter((r) => r.fault === 'status')).toHaveLength(6);
    expect(discovered.at(-1)?.fault).toBe('pass');
  });

  it('stops waiting for a kind that is never served as soon as the deploy is cancelled', async () => {
    // Discovery never lists the new group: the deploy polls it after the CRD is Established. Cancelled (Ctrl-C), it
    // ends at once instead of polling on until its wait runs out, and writes no custom resource.
    const bed = await proxiedServer(cleanup);
    const path = `/apis/${unserved}/v1`;
    discoveryNotFound(bed, path);
    const dir = await manifestDir({
      'crd.yaml': crdManifest(unserved, 'widgets', 'Widget'),
      'widget.yaml': `apiVersion: ${unserved}/v1\nkind: Widget\nmetadata: {name: never}\nspec: {size: 2}\n`,
    });
    const run = startMooring([
      'deploy',
      dir,
      '--kubeconfig',
      bed.kubeconfig,
      '-n',
      'default',
      '--timeout',
      '5m',
    ]);
    const polls = () => bed.proxy.requests.filter((r) => r.method === 'GET' && r.path === path).length;
    await eventually(
      'discovery of the unserved group polled',
      async () => (polls() >= 3 ? true : undefined),
      120_000,
    );
    const cancelled = Date.now();
    run.child.kill('SIGINT');
    const code = await run.exited;
    // Without the cancel it polls for two minutes (the apply's wait); cancelled, it ends within the next look.
    expect(Date.now() - cancelled, run.output()).toBeLessThan(15_000);
    expect(code, run.output()).not.toBe(0);
    const atExit = polls();
    await new Promise((r) => setTimeout(r, 1000));
    expect(polls()).toBe(atExit);
    const widgets = await kubectl('get', `widgets.${unserved}`, '-n', 'default', '-o', 'name');
    expect(widgets.stdout.trim()).toBe('');
  });

  it('creates a namespace, a CRD and its custom resources in one deploy', async () => {
    const dir = await manifestDir({
      // Files in the "wrong" order on purpose: mooring orders by kind, not by file.
      '1-widget.yaml': `apiVersion: ${group}/v1\nkind: Widget\nmetadata: {name: first, namespace: ${namespace}}\nspec: {size: 3}\n`,
      '2-config.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ${namespace}}\ndata: {k: v}\n`,
      '3-crd.yaml': crdManifest(group, 'widgets', 'Widget'),
      '4-namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${namespace}}\n`,
    });
    // The objects name their own namespace, outside -n default: allowed explicitly, as kubectl would need.
    const result = await deployTo('default', dir, '--allow-namespace', namespace);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    const at = (text: string) => lines.findIndex((l) => l.includes(text));
    expect(at(`namespace/${namespace} created`)).toBeGreaterThan(-1);
    expect(at(`namespace/${namespace} created`)).toBeLessThan(
      at('customresourcedefinition.apiextensions.k8s.io'),
    );
    expect(at('customresourcedefinition.apiextensions.k8s.io')).toBeLessThan(
      at('configmap/settings created'),
    );
    expect(at('configmap/settings created')).toBeLessThan(at(`widget.${group}/first created`));
    const widget = (await kubeConfig()
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ group, version: 'v1', namespace, plural: 'widgets', name: 'first' })) as {
      spec: { size: number };
    };
    expect(widget.spec.size).toBe(3);
    const cm = await kubeConfig()
      .makeApiClient(CoreV1Api)
      .readNamespacedConfigMap({ name: 'settings', namespace });
    expect(cm.data).toEqual({ k: 'v' });
  });

  it('rejects a custom resource of a kind the cluster does not serve, before writing anything', async () => {
    const dir = await manifestDir({
      'a.yaml': `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lonely-${suffix}}\ndata: {k: v}\n`,
      'b.yaml': 'apiVersion: nowhere.mooring.test/v1\nkind: Gadget\nmetadata: {name: g}\n',
    });
    const result = await deployTo('default', dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('the cluster serves no kind Gadget in nowhere.mooring.test/v1');
    const list = await kubeConfig()
      .makeApiClient(CoreV1Api)
      .listNamespacedConfigMap({ namespace: 'default' });
    expect(list.items.map((c) => c.metadata?.name)).not.toContain(`lonely-${suffix}`);
  });
});
