// All or nothing with a set that brings its own Namespace and CRD (as install manifests and charts with
// `--create-namespace`-less namespaces do): objects that cannot be dry-run before their Namespace or CRD exists are
// validated after those alone are written, so a refused StatefulSet leaves nothing else behind, and the exit code
// and message say exactly that.
import { randomBytes } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { throughProxy } from './fault-helpers.ts';
import { crdManifest, deployTo, kubeConfig, kubectl, manifestDir, mooring } from './helpers.ts';

describe('a set with its own Namespace and CRD', () => {
  const suffix = randomBytes(3).toString('hex');
  const ns = `own-ns-${suffix}`;
  const group = `own${suffix}.example.com`;
  afterAll(async () => {
    await kubectl('delete', 'namespace', ns, '--wait=false', '--ignore-not-found');
    await kubectl('delete', 'crd', `widgets.${group}`, '--wait=false', '--ignore-not-found');
  });

  it('writes nothing but the Namespace and CRD when the server refuses an object in them', async () => {
    const dir = await manifestDir({
      'namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${ns}}\n`,
      'crd.yaml': crdManifest(group, 'widgets', 'Widget'),
      'widget.yaml': `apiVersion: ${group}/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n`,
      'config.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, annotations: {strategy.spinnaker.io/versioned: "false"}}\ndata: {k: v}\n',
      'db.yaml': `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: -1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: db:1}]}
`,
    });
    const result = await deployTo(ns, dir);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/StatefulSet .*db.*replicas/);
    expect(result.stderr).toContain(
      `nothing was applied but Namespace ${ns}, CustomResourceDefinition widgets.${group}, created first to validate what they hold`,
    );
    // Neither the ConfigMap nor the custom resource (nor the StatefulSet) was written.
    const core = kubeConfig().makeApiClient(CoreV1Api);
    expect(
      (await core.listNamespacedConfigMap({ namespace: ns })).items.map((c) => c.metadata?.name),
    ).not.toContain('settings');
    const widgets = await kubectl('get', `widgets.${group}`, '-n', ns, '-o', 'name');
    expect(widgets.code, widgets.stderr).toBe(0);
    expect(widgets.stdout.trim()).toBe('');
    const created = result.stdout.split('\n').filter((line) => / created/.test(line));
    expect(created.map((line) => line.split(' ')[0])).toEqual([
      `namespace/${ns}`,
      `customresourcedefinition.apiextensions.k8s.io/widgets.${group}`,
    ]);
  });

  it('reads its own Namespace once per pass, not once per object in it, and deploys 300 objects there', async () => {
    const many = `${ns}-many`;
    const files: Record<string, string> = {
      'namespace.yaml': `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${many}}\n`,
    };
    for (let i = 0; i < 300; i++)
      files[`cm-${i}.yaml`] =
        `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-${i}, annotations: {strategy.spinnaker.io/versioned: "false"}}\ndata: {i: "${i}"}\n`;
    const dir = await manifestDir(files);
    const bed = await throughProxy();
    try {
      const reads = () =>
        bed.proxy.count(undefined, (r) => r.method === 'GET' && r.path === `/api/v1/namespaces/${many}`);
      const deploy = () =>
        mooring('deploy', dir, '--kubeconfig', bed.kubeconfig, '-n', many, '--timeout', '2m');
      // First deploy: the Namespace is not there before its prerequisites pass, and is after.
      const first = await deploy();
      expect(first.code, first.stderr).toBe(0);
      const core = kubeConfig().makeApiClient(CoreV1Api);
      expect(
        (await core.listNamespacedConfigMap({ namespace: many })).items.filter((c) =>
          c.metadata?.name?.startsWith('cm-'),
        ),
      ).toHaveLength(300);
      expect(reads()).toBeLessThanOrEqual(3);
      // Again, all of it there: read once more at most per pass, never per object.
      const before = reads();
      const again = await deploy();
      expect(again.code, again.stderr).toBe(0);
      expect(reads() - before).toBeLessThanOrEqual(3);
    } finally {
      await bed.proxy.close();
      bed.api.close();
      await kubectl('delete', 'namespace', many, '--wait=false', '--ignore-not-found');
    }
  });
});
