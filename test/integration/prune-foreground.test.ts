// Prune deletes a workload in the foreground, and the next phase (the ConfigMaps its Pods mount) waits until the
// workload is gone, as kapp waits: the API server answers the delete as soon as the workload is marked, and before,
// its configuration was deleted while its Pods still ran. Here a finalizer holds the Deployment: its ConfigMap stays
// until the finalizer is removed, then goes in the same deploy.
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.ts';
import { sleep } from './faults-support.ts';
import { eventually, kubectl, manifestDir, testbed, useNamespace } from './helpers.ts';

const settings = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {mode: strict}
`;
const web = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "web:1", envFrom: [{configMapRef: {name: settings}}]}]}
`;
const keep = `apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, annotations: {strategy.spinnaker.io/versioned: "false"}}
data: {k: v}
`;

describe('prune waits for a workload to be gone before its configuration', () => {
  const ns = useNamespace('prune-fg');

  it('deletes the ConfigMap only once the Deployment is gone', async () => {
    const deploy = (dir: string, out: string[] = []) =>
      runCli(
        ['deploy', dir, '--kubeconfig', testbed().kube.kubeconfig, '-n', ns(), '--prune', '--timeout', '2m'],
        { stdout: (t) => out.push(t), stderr: (t) => out.push(t) },
      );
    expect(await deploy(await manifestDir({ 'app.yaml': `${settings}---\n${web}---\n${keep}` }))).toBe(0);
    // Something else holds the Deployment for a while (a finalizer of its own).
    await finalizers(ns(), ['example.com/hold']);
    const out: string[] = [];
    const removing = deploy(await manifestDir({ 'app.yaml': keep }), out);
    await eventually('the Deployment marked for deletion', async () => {
      const got = await kubectl(
        '-n',
        ns(),
        'get',
        'deployment',
        'web',
        '-o',
        'jsonpath={.metadata.deletionTimestamp}',
      );
      return got.stdout.trim() || undefined;
    });
    // While it is there, its configuration stays.
    await sleep(2000);
    expect((await kubectl('-n', ns(), 'get', 'configmap', 'settings')).code).toBe(0);
    await finalizers(ns(), null);
    expect(await removing, out.join('\n')).toBe(0);
    expect((await kubectl('-n', ns(), 'get', 'configmap', 'settings')).code).not.toBe(0);
    expect((await kubectl('-n', ns(), 'get', 'deployment', 'web')).code).not.toBe(0);
    expect(out.join('\n')).toContain('deployment/web pruned');
    expect(out.join('\n')).toContain('configmap/settings pruned');
  }, 120_000);
});

/** Sets the finalizers of Deployment `web` (null: none). */
async function finalizers(namespace: string, list: string[] | null): Promise<void> {
  const patch = JSON.stringify({ metadata: { finalizers: list } });
  const patched = await kubectl('-n', namespace, 'patch', 'deployment', 'web', '--type=merge', '-p', patch);
  expect(patched.code, patched.stderr).toBe(0);
}

describe('prune keeps the versions a ReplicaSet kept for an undo still uses', () => {
  const ns = useNamespace('prune-undo');

  it('keeps them while the Deployment stays, and deletes them with it', async () => {
    const config = (value: string, versioned: boolean) => `apiVersion: v1
kind: ConfigMap
metadata: {name: settings${versioned ? '' : ', annotations: {strategy.spinnaker.io/versioned: "false"}'}}
data: {mode: ${value}}
`;
    const out: string[] = [];
    const deploy = async (files: Record<string, string>) => {
      out.length = 0;
      return runCli(
        [
          'deploy',
          await manifestDir(files),
          '--kubeconfig',
          testbed().kube.kubeconfig,
          '-n',
          ns(),
          '--prune',
        ],
        { stdout: (t) => out.push(t), stderr: (t) => out.push(t) },
      );
    };
    const configMaps = async () =>
      (await kubectl('-n', ns(), 'get', 'configmaps', '-o', 'name')).stdout
        .split('\n')
        .filter((n) => n.includes('settings'))
        .sort();
    for (const value of ['one', 'two'])
      expect(await deploy({ 'app.yaml': `${config(value, true)}---\n${web}` }), out.join('\n')).toBe(0);
    expect(await configMaps()).toEqual(['configmap/settings-v000', 'configmap/settings-v001']);
    // The ConfigMap is no longer versioned: the artifact left the render, but the Deployment's old ReplicaSets still
    // use its versions (an undo goes back to them).
    expect(await deploy({ 'app.yaml': `${config('three', false)}---\n${web}` }), out.join('\n')).toBe(0);
    expect(out.join('\n')).toMatch(
      /ConfigMap .*\/settings-v001 not pruned: still referenced by (ReplicaSet|Pod) /,
    );
    expect(await configMaps()).toEqual([
      'configmap/settings',
      'configmap/settings-v000',
      'configmap/settings-v001',
    ]);
    const undo = await kubectl('-n', ns(), 'rollout', 'undo', 'deployment/web');
    expect(undo.code, undo.stderr).toBe(0);
    // The application removed whole: its ReplicaSets go with the Deployment first, then every version.
    expect(await deploy({ 'other.yaml': keep }), out.join('\n')).toBe(0);
    expect(await configMaps()).toEqual([]);
  }, 120_000);
});
