// Each strategy annotation on the real control plane, version history, and mooring delete.
import { AppsV1Api, BatchV1Api, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import {
  deployTo,
  eventually,
  kubeConfig,
  kubectl,
  manifestDir,
  mooring,
  serviceAccountKubeconfig,
  testbed,
  useNamespace,
} from './helpers.ts';

const deployment = (name: string, annotations = '', replicas = 1, image = 'app:1') => `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
  annotations: {${annotations}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec: {containers: [{name: app, image: "${image}"}]}
`;

describe('strategy annotations', () => {
  const ns = useNamespace('strategy');

  // Argo CD's `Force=true,Replace=true` (kubectl replace --force) asks for the same.
  it.each([
    ['migrate', 'strategy.spinnaker.io/recreate: "true"'],
    ['migrate-argo', 'argocd.argoproj.io/sync-options: "Replace=true,Force=true"'],
  ])('recreate: deletes and creates a Job whose template cannot be edited (%s)', async (name, annotation) => {
    const batch = kubeConfig().makeApiClient(BatchV1Api);
    const job = (image: string) => `apiVersion: batch/v1
kind: Job
metadata:
  name: ${name}
  annotations: {${annotation}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: "${image}"}]
`;
    const first = await deployTo(ns(), await manifestDir({ 'job.yaml': job('migrate:1') }));
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const uid = (await batch.readNamespacedJob({ name, namespace: ns() })).metadata?.uid;
    const second = await deployTo(ns(), await manifestDir({ 'job.yaml': job('migrate:2') }));
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toContain(`job.batch/${name} recreated`);
    const after = await batch.readNamespacedJob({ name, namespace: ns() });
    expect(after.metadata?.uid).not.toBe(uid);
    expect(after.spec?.template.spec?.containers[0]?.image).toBe('migrate:2');
  });

  it('without recreate, an immutable change is refused with the field and the way out', async () => {
    const job = (image: string) =>
      `apiVersion: batch/v1\nkind: Job\nmetadata: {name: plain}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: "${image}"}]\n`;
    expect((await deployTo(ns(), await manifestDir({ 'job.yaml': job('a:1') }))).code).toBe(0);
    const changed = await deployTo(ns(), await manifestDir({ 'job.yaml': job('a:2') }));
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/field is immutable/);
    expect(changed.stderr).toContain('strategy.spinnaker.io/recreate: "true"');
  });

  it('replace: writes the object with PUT and drops fields that are no longer in the manifest', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const cm = (data: string) =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  annotations: {strategy.spinnaker.io/replace: "true", strategy.spinnaker.io/versioned: "false"}\ndata: {${data}}\n`;
    const first = await deployTo(ns(), await manifestDir({ 'cm.yaml': cm('a: "1", b: "2"') }));
    expect(first.stdout).toContain('configmap/big created');
    const second = await deployTo(ns(), await manifestDir({ 'cm.yaml': cm('a: "1"') }));
    expect(second.stdout).toContain('configmap/big replaced');
    expect((await core.readNamespacedConfigMap({ name: 'big', namespace: ns() })).data).toEqual({ a: '1' });
  });

  it('server-side-apply "true" fails on conflicts naming the other manager; force-conflicts takes over', async () => {
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    expect((await deployTo(ns(), await manifestDir({ 'd.yaml': deployment('owned') }))).code).toBe(0);
    // Another manager (kubectl patch) takes the replicas field.
    const scale = await kubectl(
      '-n',
      ns(),
      'patch',
      'deployment/owned',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":2}}',
    );
    expect(scale.code, scale.stderr).toBe(0);
    const strict = await deployTo(
      ns(),
      await manifestDir({
        'd.yaml': deployment('owned', 'strategy.spinnaker.io/server-side-apply: "true"', 3),
      }),
    );
    expect(strict.code).toBe(2);
    expect(strict.stderr).toMatch(/conflict/i);
    expect(strict.stderr).toContain('kubectl');
    expect(strict.stderr).toContain('force-conflicts');
    const forced = await deployTo(
      ns(),
      await manifestDir({
        'd.yaml': deployment('owned', 'strategy.spinnaker.io/server-side-apply: force-conflicts', 3),
      }),
    );
    expect(forced.code, forced.stdout + forced.stderr).toBe(0);
    expect((await apps.readNamespacedDeployment({ name: 'owned', namespace: ns() })).spec?.replicas).toBe(3);
  });

  it('use-source-capacity keeps the live replica count', async () => {
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    const manifest = deployment('sized', 'strategy.spinnaker.io/use-source-capacity: "true"', 1);
    expect((await deployTo(ns(), await manifestDir({ 'd.yaml': manifest }))).code).toBe(0);
    expect((await kubectl('-n', ns(), 'scale', 'deployment/sized', '--replicas=3')).code).toBe(0);
    const again = await deployTo(ns(), await manifestDir({ 'd.yaml': manifest.replace('app:1', 'app:2') }));
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect((await apps.readNamespacedDeployment({ name: 'sized', namespace: ns() })).spec?.replicas).toBe(3);
  });

  it('caching.spinnaker.io/ignore: applied but not waited on', async () => {
    const manifest = deployment('ignored', `caching.spinnaker.io/ignore: "true"`).replace(
      'metadata: {labels: {app: ignored}}',
      `metadata: {labels: {app: ignored}, annotations: {${BEHAVIOR}: never-ready}}`,
    );
    const result = await deployTo(ns(), await manifestDir({ 'd.yaml': manifest }), '--timeout', '20s');
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain('deployment.apps/ignored created');
    expect(result.stdout).toContain('0/0 stable');
  });
});

describe('version history and delete', () => {
  const ns = useNamespace('history');
  const app = (n: number) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  annotations: {strategy.spinnaker.io/max-version-history: "1"}
data: {N: "${n}"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: loose
  # Nothing refers to it: versioned because it says so.
  annotations: {strategy.spinnaker.io/max-version-history: "1", strategy.spinnaker.io/versioned: "true"}
data: {N: "${n}"}
---
${deployment('web').replace('spec: {containers: [{name: app, image: "app:1"}]}', 'spec: {containers: [{name: app, image: "app:1", envFrom: [{configMapRef: {name: app-config}}]}]}')}`;

  it('keeps the newest versions and those live objects still refer to', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    for (const n of [0, 1, 2]) {
      const result = await deployTo(ns(), await manifestDir({ 'app.yaml': app(n) }));
      expect(result.code, result.stdout + result.stderr).toBe(0);
      if (n === 2) {
        // The Deployment's old ReplicaSets still use v000 and v001: kept for an undo. Nothing uses old `loose`.
        // The first referrer named may be an old Pod still terminating instead of its ReplicaSet: either keeps it.
        expect(result.stdout).toMatch(
          /ConfigMap .*\/app-config-v000 kept: still referenced by (ReplicaSet|Pod)/,
        );
        expect(result.stdout).toMatch(
          /ConfigMap .*\/app-config-v001 kept: still referenced by (ReplicaSet|Pod)/,
        );
        expect(result.stdout).toContain(`ConfigMap ${ns()}/loose-v001 deleted (version history)`);
      }
    }
    // Beside the cluster's own kube-root-ca.crt, which its controller manager publishes in every namespace.
    const names = (await core.listNamespacedConfigMap({ namespace: ns() })).items
      .map((c) => c.metadata?.name)
      .filter((n) => n !== 'kube-root-ca.crt')
      .sort();
    expect(names).toEqual(['app-config-v000', 'app-config-v001', 'app-config-v002', 'loose-v002']);
    const undo = await kubectl('-n', ns(), 'rollout', 'undo', 'deployment/web', '--to-revision=1');
    expect(undo.code, undo.stderr).toBe(0);
    await eventually('undo', async () =>
      (await kubectl('-n', ns(), 'rollout', 'status', 'deployment/web', '--timeout=5s')).code === 0
        ? true
        : undefined,
    );
  });

  it('deletes every version of a versioned object, or just one', async () => {
    const env = testbed();
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const one = await mooring(
      'delete',
      'cm/app-config',
      '--version',
      'v001',
      '--kubeconfig',
      env.kube.kubeconfig,
      '-n',
      ns(),
    );
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout.trim()).toBe('configmap/app-config-v001 deleted');
    const all = await mooring(
      'delete',
      'configmap/app-config',
      '--kubeconfig',
      env.kube.kubeconfig,
      '-n',
      ns(),
    );
    expect(all.stdout.trim().split('\n')).toEqual([
      'configmap/app-config-v000 deleted',
      'configmap/app-config-v002 deleted',
    ]);
    const names = (await core.listNamespacedConfigMap({ namespace: ns() })).items
      .map((c) => c.metadata?.name)
      .filter((n) => n !== 'kube-root-ca.crt');
    expect(names).toEqual(['loose-v002']);
    const missing = await mooring(
      'delete',
      'configmap/nothing',
      '--kubeconfig',
      env.kube.kubeconfig,
      '-n',
      ns(),
    );
    // Not found: 1, as kubectl (docs/cli.md).
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not found');
    // A type no test makes: health-cel.test.ts, running beside this file, creates a CRD of Gadgets.
    const type = `nokind${Date.now().toString(36)}`;
    const unknown = await mooring('delete', `${type}/x`, '--kubeconfig', env.kube.kubeconfig, '-n', ns());
    expect(unknown.code, unknown.stderr).toBe(2);
    expect(unknown.stderr).toContain(`the server does not have a resource type "${type}"`);
  });
});

describe('mooring delete of an artifact when some of its versions may not be deleted', () => {
  const ns = useNamespace('delete-partial');

  it('deletes the others, names each one left and why, and exits 1', async () => {
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const rbac = kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    for (const n of ['000', '001', '002']) {
      await core.createNamespacedConfigMap({
        namespace: ns(),
        body: {
          metadata: { name: `part-v${n}`, annotations: { 'artifact.spinnaker.io/name': 'part' } },
          data: { n },
        },
      });
    }
    await core.createNamespacedServiceAccount({ namespace: ns(), body: { metadata: { name: 'deleter' } } });
    await rbac.createNamespacedRole({
      namespace: ns(),
      body: {
        metadata: { name: 'deleter' },
        rules: [
          { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] },
          // Not part-v001.
          {
            apiGroups: [''],
            resources: ['configmaps'],
            verbs: ['delete'],
            resourceNames: ['part-v000', 'part-v002'],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns(),
      body: {
        metadata: { name: 'deleter' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'deleter' },
        subjects: [{ kind: 'ServiceAccount', name: 'deleter', namespace: ns() }],
      },
    });
    const kubeconfig = await serviceAccountKubeconfig(ns(), 'deleter');
    const partial = await mooring('delete', 'configmap/part', '--kubeconfig', kubeconfig, '-n', ns());
    // Something was deleted: 1, not 2 (which says nothing was written).
    expect(partial.code, partial.stdout + partial.stderr).toBe(1);
    expect(partial.stdout.trim().split('\n')).toEqual([
      'configmap/part-v000 deleted',
      'configmap/part-v002 deleted',
    ]);
    expect(partial.stderr).toContain('1 of 3 not deleted');
    expect(partial.stderr).toMatch(/configmap\/part-v001: .*403/);
    const left = (await core.listNamespacedConfigMap({ namespace: ns() })).items
      .map((c) => c.metadata?.name)
      .filter((n) => n?.startsWith('part-'));
    expect(left).toEqual(['part-v001']);

    // -o json says the same.
    await core.createNamespacedConfigMap({
      namespace: ns(),
      body: { metadata: { name: 'part-v000', annotations: { 'artifact.spinnaker.io/name': 'part' } } },
    });
    const json = await mooring(
      'delete',
      'configmap/part',
      '--kubeconfig',
      kubeconfig,
      '-n',
      ns(),
      '-o',
      'json',
    );
    expect(json.code).toBe(1);
    const data = JSON.parse(json.stdout) as { deleted: string[]; failed: { name: string; error: string }[] };
    expect(data.deleted).toEqual(['part-v000']);
    expect(data.failed.map((f) => f.name)).toEqual(['part-v001']);

    // Only the one it may not delete: nothing was written, the refusal's own exit code (2).
    const refused = await mooring('delete', 'configmap/part', '--kubeconfig', kubeconfig, '-n', ns());
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/part-v001: 403/);
  });
});

describe('version history kept for what runs', () => {
  const ns = useNamespace('history-cron');

  it('keeps the version a release deploys with a history of 0, and versions a CronJob refers to', async () => {
    const batch = kubeConfig().makeApiClient(BatchV1Api);
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const cronJob = (name: string, config: string) => `apiVersion: batch/v1
kind: CronJob
metadata: {name: ${name}}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: backup, image: "backup:1", envFrom: [{configMapRef: {name: ${config}}}]}]`;
    const nightly = (value: string) => `apiVersion: v1
kind: ConfigMap
metadata:
  name: backup-config
  annotations: {strategy.spinnaker.io/max-version-history: "0"}
data: {TARGET: ${value}}
---
${cronJob('backup', 'backup-config')}`;
    const names = async () =>
      (await core.listNamespacedConfigMap({ namespace: ns() })).items
        .map((c) => c.metadata?.name ?? '')
        .filter((n) => n.startsWith('backup-config'))
        .sort();
    const deploy = async (value: string) => {
      const result = await deployTo(ns(), await manifestDir({ 'backup.yaml': nightly(value) }));
      expect(result.code, result.stdout + result.stderr).toBe(0);
      return result.stdout;
    };
    // No old version is kept, but the one the CronJob runs with is this release's (it was deleted as surplus).
    await deploy('disk');
    expect(await names()).toEqual(['backup-config-v000']);
    await deploy('bucket');
    expect(await names()).toEqual(['backup-config-v001']);
    // A CronJob made by hand still runs with v001: it stays while it is referred to (it was deleted).
    const manual = parse(cronJob('manual', 'backup-config-v001'));
    await batch.createNamespacedCronJob({ namespace: ns(), body: manual });
    const out = await deploy('tape');
    expect(out).toMatch(/ConfigMap .*\/backup-config-v001 kept: still referenced by CronJob .*\/manual/);
    expect(await names()).toEqual(['backup-config-v001', 'backup-config-v002']);
    const used = (await batch.readNamespacedCronJob({ name: 'backup', namespace: ns() })).spec?.jobTemplate
      .spec?.template.spec?.containers[0]?.envFrom?.[0]?.configMapRef?.name;
    expect(used).toBe('backup-config-v002');
  });
});
