// `mooring deploy` end to end on the real control plane: seed 004's rollback story, stability verdicts that
// agree with kubectl, failures found early, all-or-nothing rejection, and version reuse.
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { BEHAVIOR } from '../testbed/kubelet.ts';
import { deployTo, eventually, kubeConfig, kubectl, manifestDir, useNamespace } from './helpers.ts';

const seed004 = (data: string) => `apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
data: {${data}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: my-app}
spec:
  replicas: 2
  selector: {matchLabels: {app: my-app}}
  template:
    metadata: {labels: {app: my-app}}
    spec:
      containers:
        - name: app
          image: my-application:1.0.0
          envFrom: [{configMapRef: {name: app-config}}]
`;

describe('mooring deploy', () => {
  const ns = useNamespace('deploy');

  it('rolls configuration back with the Deployment (seed 004)', async () => {
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    const core = kubeConfig().makeApiClient(CoreV1Api);
    const first = await deployTo(ns(), await manifestDir({ 'app.yaml': seed004('FOO: bar') }));
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toContain('configmap/app-config-v000 created (new version v000)');
    expect(first.stdout).toContain('deployment.apps/my-app created');
    expect(first.stdout).toMatch(/2\/2 stable in/);
    // mooring's verdict agrees with kubectl's.
    expect((await kubectl('-n', ns(), 'rollout', 'status', 'deployment/my-app', '--timeout=5s')).code).toBe(
      0,
    );

    const second = await deployTo(ns(), await manifestDir({ 'app.yaml': seed004('BAR: baz') }));
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(second.stdout).toContain('configmap/app-config-v001 created (new version v001)');
    expect(second.stdout).toContain('deployment.apps/my-app configured');
    expect((await kubectl('-n', ns(), 'rollout', 'status', 'deployment/my-app', '--timeout=5s')).code).toBe(
      0,
    );

    const undo = await kubectl('-n', ns(), 'rollout', 'undo', 'deployment/my-app');
    expect(undo.code, undo.stderr).toBe(0);
    const template = await eventually('rolled back', async () => {
      const d = await apps.readNamespacedDeployment({ name: 'my-app', namespace: ns() });
      const ref = d.spec?.template.spec?.containers[0]?.envFrom?.[0]?.configMapRef?.name;
      return ref === 'app-config-v000' ? d.spec?.template : undefined;
    });
    expect(template?.spec?.containers[0]?.envFrom?.[0]?.configMapRef?.name).toBe('app-config-v000');
    const old = await core.readNamespacedConfigMap({ name: 'app-config-v000', namespace: ns() });
    expect(old.data).toEqual({ FOO: 'bar' });
    await eventually('pods of the rolled back template ready', async () => {
      const pods = await core.listNamespacedPod({ namespace: ns(), labelSelector: 'app=my-app' });
      const current = pods.items.filter((p) => !p.metadata?.deletionTimestamp);
      return current.length === 2 &&
        current.every((p) => p.spec?.containers[0]?.envFrom?.[0]?.configMapRef?.name === 'app-config-v000')
        ? true
        : undefined;
    });
  });

  it('reuses a version when content returns to an earlier state, and writes nothing unchanged', async () => {
    const dir = await manifestDir({ 'app.yaml': seed004('FOO: bar').replaceAll('my-app', 'reuse') });
    const first = await deployTo(ns(), dir);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const again = await deployTo(ns(), dir);
    expect(again.code, again.stdout).toBe(0);
    expect(again.stdout).toContain('configmap/app-config-v000 unchanged (existing version v000)');
    expect(again.stdout).toContain('deployment.apps/reuse unchanged');
  });

  it('fails a never-ready Deployment at its progress deadline, well before the timeout', async () => {
    const dir = await manifestDir({
      'stuck.yaml': `apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  progressDeadlineSeconds: 5
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}, annotations: {${BEHAVIOR}: never-ready}}
    spec: {containers: [{name: app, image: app:1}]}
`,
    });
    const started = Date.now();
    const result = await deployTo(ns(), dir, '--timeout', '5m');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: deploy failed: Deployment .*\/stuck: .*ProgressDeadlineExceeded/m);
    expect(result.stdout).not.toMatch(/failed: Deployment/);
    expect(Date.now() - started).toBeLessThan(90_000);
    // kubectl agrees that this rollout did not succeed.
    expect(
      (await kubectl('-n', ns(), 'rollout', 'status', 'deployment/stuck', '--timeout=3s')).code,
    ).not.toBe(0);
  });

  it('detects a crash-looping pod', async () => {
    const dir = await manifestDir({
      'pod.yaml': `apiVersion: v1
kind: Pod
metadata:
  name: crasher
  annotations: {${BEHAVIOR}: crash-loop, strategy.spinnaker.io/versioned: "false"}
spec: {containers: [{name: app, image: app:1}]}
`,
    });
    const result = await deployTo(ns(), dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/crasher.*CrashLoopBackOff/);
  });

  it('leaves the cluster untouched when the API server rejects one object', async () => {
    const dir = await manifestDir({
      'a.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first-of-set, annotations: {strategy.spinnaker.io/versioned: "false"}}\ndata: {k: v}\n',
      'b.yaml': `apiVersion: apps/v1
kind: Deployment
metadata: {name: invalid}
spec:
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: app, image: app:1}]}
`,
    });
    const result = await deployTo(ns(), dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('nothing was applied');
    expect(result.stderr).toContain(`${join(dir, 'b.yaml')}:1:1: Deployment ${ns()}/invalid: 422`);
    expect(result.stderr).toMatch(/selector/);
    const core = kubeConfig().makeApiClient(CoreV1Api);
    await expect(
      core.readNamespacedConfigMap({ name: 'first-of-set', namespace: ns() }),
    ).rejects.toMatchObject({
      code: 404,
    });
  });

  it('validates with --dry-run and writes nothing', async () => {
    const dir = await manifestDir({ 'app.yaml': seed004('DRY: run').replaceAll('my-app', 'dry') });
    const result = await deployTo(ns(), dir, '--dry-run');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('deployment.apps/dry created');
    expect(result.stdout).toContain('dry run: 2 objects valid, nothing applied');
    const apps = kubeConfig().makeApiClient(AppsV1Api);
    await expect(apps.readNamespacedDeployment({ name: 'dry', namespace: ns() })).rejects.toMatchObject({
      code: 404,
    });
  });
});
